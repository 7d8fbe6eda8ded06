"""Paired tests (metrics/paired.py) against hand-computed values, and against scipy where installed."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from twinkle_hf.metrics import paired
from twinkle_hf.metrics.paired import benjamini_hochberg, flips, holm, mcnemar_exact, sign_flip_p, tost_p

HAS_SCIPY = importlib.util.find_spec("scipy") is not None
HAS_STATSMODELS = importlib.util.find_spec("statsmodels") is not None


def test_mcnemar_by_hand():
    # b=1, c=5: n=6, P(X<=1) = (1 + 6) / 64, two-sided 14/64
    assert mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert mcnemar_exact(5, 1) == pytest.approx(14 / 64)
    # b=0, c=3: 2 * 1/8
    assert mcnemar_exact(0, 3) == pytest.approx(0.25)
    # ties: b == c gives 1 (the tail holds more than half the mass, clipped)
    assert mcnemar_exact(4, 4) == 1.0
    # no discordant pairs: no evidence at all
    assert mcnemar_exact(0, 0) == 1.0
    # large counts stay finite and small
    assert 0 < mcnemar_exact(100, 300) < 1e-20


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)


@pytest.mark.skipif(not HAS_SCIPY, reason="scipy not installed: the hand-computed cases above stand alone")
@pytest.mark.parametrize(("b", "c"), [(1, 5), (7, 2), (10, 10), (37, 61), (0, 12), (120, 95)])
def test_mcnemar_equals_scipy_binomtest(b, c):
    from scipy.stats import binomtest

    assert mcnemar_exact(b, c) == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9)


@pytest.mark.skipif(not HAS_STATSMODELS, reason="statsmodels not installed")
def test_mcnemar_equals_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    assert mcnemar_exact(9, 21) == pytest.approx(mcnemar([[40, 9], [21, 30]], exact=True).pvalue)


def test_sign_flip_on_01_differences_is_mcnemar():
    # with one 0/1 outcome per question the sign-flip test is the exact binomial test on the discordant ones
    d = [1] * 5 + [-1] * 1 + [0] * 10
    assert sign_flip_p(d) == pytest.approx(mcnemar_exact(1, 5))


def test_sign_flip_exact_by_hand():
    # d = (.5, .5, -.25): sums over the 8 flips: ±.5±.5±.25 -> |s| in {1.25, .75, .25, .25, .25, .25, .75, 1.25}
    # observed |.75| is reached by 4 of 8
    assert sign_flip_p([0.5, 0.5, -0.25, 0.0]) == pytest.approx(0.5)
    assert sign_flip_p([0.5, 0.5, 0.25]) == pytest.approx(2 / 8)
    assert sign_flip_p([0, 0, 0]) == 1.0  # all-equal runs
    assert sign_flip_p([]) == 1.0


@pytest.mark.skipif(not HAS_SCIPY, reason="scipy not installed")
def test_sign_flip_exact_matches_scipy_permutation_test():
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    d = rng.choice([-1, -0.5, 0.25, 0.5, 0.75, 1], size=12)
    want = permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf).pvalue
    assert sign_flip_p(d) == pytest.approx(want)


def test_sign_flip_monte_carlo_is_seeded_and_close_to_the_exact_binomial():
    # 30 nonzero 0/1 differences (beyond exact enumeration): the exact answer is McNemar's
    d = np.array([1] * 20 + [-1] * 10 + [0] * 5, dtype=float)
    p = sign_flip_p(d)
    assert p == sign_flip_p(d)  # seeded
    assert abs(p - mcnemar_exact(10, 20)) < 4 * 0.5 / math.sqrt(paired.DRAWS)
    assert p > 0 and sign_flip_p(np.ones(40)) == pytest.approx(1 / (paired.DRAWS + 1))  # the +1 correction


def test_holm_and_bh_against_a_hand_example():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted .005 .01 .03 .04 -> Holm x4 x3 x2 x1 = .02 .03 .06 .04 -> running max .02 .03 .06 .06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: m p / rank = .02 .02 .04 .04 -> running min from the top: .02 .02 .04 .04
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_adjustments_clip_at_one_keep_nan_and_handle_one_test():
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert benjamini_hochberg([0.6, 0.7]) == pytest.approx([0.7, 0.7])
    out = holm([0.01, math.nan, 0.04])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert math.isnan(benjamini_hochberg([math.nan])[0])
    assert holm([0.2]) == [0.2] and benjamini_hochberg([0.2]) == [0.2]  # one subject: unchanged
    assert holm([]) == [] and benjamini_hochberg([]) == []


@pytest.mark.skipif(not HAS_STATSMODELS, reason="statsmodels not installed")
def test_adjustments_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(1).uniform(0, 0.2, size=9)
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    assert benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1])


def test_tost_by_hand_and_at_the_boundary():
    # diff 0, stderr .004, margin .01: each one-sided p is P(Z >= 2.5) = .00621
    assert tost_p(0.0, 0.004, 0.01) == pytest.approx(0.5 * math.erfc(2.5 / math.sqrt(2)))
    # the 90% interval touches the margin exactly: p = .05
    se = 0.01 / 1.6448536269514722
    assert tost_p(0.0, se, 0.01) == pytest.approx(0.05, abs=1e-12)
    # diff .005, se .004: max(P(Z >= 3.75), P(Z <= -1.25)) = P(Z <= -1.25)
    assert tost_p(0.005, 0.004, 0.01) == pytest.approx(0.5 * math.erfc(1.25 / math.sqrt(2)))
    assert tost_p(0.02, 0.004, 0.01) > 0.5  # outside the margin
    assert tost_p(0.0, 0.0, 0.01) == 0.0 and tost_p(0.02, 0.0, 0.01) == 1.0
    assert math.isnan(tost_p(0.0, math.nan, 0.01))


def test_flips_and_power():
    r2w, w2r = flips(["a", "b", "c", "d"], [1, 0.5, 0, 1], [0, 0.75, 0, 1])
    assert (r2w, w2r) == (["a"], ["b"])
    # 100 questions, 20 discordant balanced: var(d) = 20/99; n = (1.96 + .8416)^2 * var / .01^2
    d = np.array([1] * 10 + [-1] * 10 + [0] * 80, dtype=float)
    needed = (1.959964 + 0.8416212335729143) ** 2 * d.var(ddof=1) / 0.01**2
    assert paired.questions_to_detect(d, 0.01) == math.ceil(needed) - 100
    assert paired.questions_to_detect(np.zeros(50), 0.01) is None  # nothing changed: nothing to size from
    assert paired.questions_to_detect(d, 0.5) == 0
