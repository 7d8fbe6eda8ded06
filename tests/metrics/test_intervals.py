"""The one interval rule for every proportion (metrics/intervals.py): over a grid of question counts,
orders per question, values and spreads, and on the cases that the rule was written for."""

from __future__ import annotations

import numpy as np
import pytest

from twinkle_hf.metrics.intervals import SMALL_N, macro_interval, proportion_interval, wilson_weight
from twinkle_hf.metrics.uncertainty import Z95, clustered_stderr, wilson_interval, wilson_score_interval

ORDERS = (1, 2, 3, 4, 6, 12, 24)


def interval(scores: np.ndarray) -> tuple[float, float]:
    """The interval of per-question scores (each a share of a question's orders)."""
    stderr = clustered_stderr(scores) if len(scores) > 1 else None
    return tuple(proportion_interval(float(scores.mean()), len(scores), stderr)["ci95"])


def samples(n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Right-order counts of n questions under k orders: every value alike (no spread: 0 to k right), a
    small spread around a level, a binomial spread, and the largest (all right or all wrong)."""
    level = int(rng.integers(0, k + 1))
    out = [np.full(n, c) for c in {0, k, level}]
    out.append(np.clip(level + rng.integers(-1, 2, size=n), 0, k))
    out.append(rng.binomial(k, rng.random(), size=n))
    out.append(np.where(rng.random(n) < rng.random(), k, 0))
    return out


def grid():
    rng = np.random.default_rng(42)
    for n in range(1, 61):
        for k in ORDERS:
            for counts in samples(n, k, rng):
                yield n, k, counts, rng


def test_every_interval_contains_its_value_has_width_and_is_never_narrower_than_wilson_where_the_rule_says():
    checked = 0
    for n, k, counts, _ in grid():
        scores = counts / k
        value = float(scores.mean())
        stderr = clustered_stderr(scores) if n > 1 else None
        low, high = interval(scores)
        assert 0.0 <= low <= value <= high <= 1.0 and high - low > 0, (n, k, counts)
        if n < SMALL_N or value in (0.0, 1.0) or not stderr:
            w_low, w_high = wilson_score_interval(value, n)
            assert low <= w_low + 1e-12 and high >= w_high - 1e-12, (n, k, counts)
        checked += 1
    assert checked > 2000


def test_one_row_changed_moves_the_bounds_about_as_far_as_it_moves_wilsons():
    """Continuity: one order of one question flipped moves each bound by under 2/n (the plain
    Wilson interval itself moves up to ~1.6/n for such a change); the rule that took n_effective
    above n jumped from [0.566, 1.0] to [0.954, 0.998] here."""
    for n, k, counts, rng in grid():
        i = int(rng.integers(n))
        changed = counts.copy()
        changed[i] += 1 if changed[i] < k else -1
        before, after = interval(counts / k), interval(changed / k)
        assert max(abs(before[0] - after[0]), abs(before[1] - after[1])) < 2 / n, (n, k, counts, changed)


def test_the_weight_of_wilson_fades_with_evidence_only():
    assert wilson_weight(0.5, 29, 0.09) == 1.0  # few questions
    assert wilson_weight(0.0, 500, 0.01) == wilson_weight(1.0, 500, 0.01) == 1.0  # 0 or 1
    assert wilson_weight(0.3, 500, 0.0) == wilson_weight(0.3, 500, None) == 1.0  # no spread estimated
    assert wilson_weight(0.3, 500, np.sqrt(0.21 / 500)) == 0.0  # a binomial's spread, 150 of each kind
    middle = wilson_weight(0.3, 500, 0.1 * np.sqrt(0.21 / 500))  # 1% of a binomial's variance
    assert 0.0 < middle < 1.0


@pytest.mark.parametrize(("scores", "n_right"), [
    (np.zeros(3), 0),  # a 3-question run: all_correct 0 of 3 is not 0%
    (np.ones(3), 3),  # any_correct 3 of 3 is not 100%
    (np.ones(30), 30),  # 30 of 30 above the small-sample limit
    (np.ones(5), 5),  # 5 questions all right under 24 orders
])
def test_the_quoted_all_or_nothing_cases_get_the_plain_wilson_interval(scores, n_right):
    low, high = interval(scores)
    assert (low, high) == pytest.approx(wilson_interval(n_right, len(scores)))
    assert high - low > 0.1


def test_five_questions_each_right_12_of_24_are_five_questions_not_120():
    scores = np.full(5, 12 / 24)
    low, high = interval(scores)
    assert (low, high) == pytest.approx(wilson_score_interval(0.5, 5))
    assert high - low > 0.5  # not [0.41, 0.59] as if 120 independent questions had been asked


def test_one_wrong_row_of_120_moves_the_interval_a_little():
    all_right = interval(np.ones(5))
    one_wrong = interval(np.array([1, 1, 1, 1, 23 / 24]))
    assert one_wrong[0] == pytest.approx(all_right[0], abs=0.02) and one_wrong[1] > 0.99


def test_thirty_questions_all_at_one_quarter_are_not_a_point():
    """The README's first run: an always-A model under 4 cyclic orders scores each question 1/4."""
    low, high = interval(np.full(30, 0.25))
    assert (low, high) == pytest.approx(wilson_score_interval(0.25, 30)) and high - low > 0.25


def test_many_questions_with_a_spread_use_the_clustered_normal_interval():
    scores = np.tile([0.0, 0.25, 0.5, 0.75, 1.0], 40)
    out = proportion_interval(float(scores.mean()), len(scores), clustered_stderr(scores))
    half = Z95 * clustered_stderr(scores)
    assert out["ci_method"] == "clustered normal" and out["ci95"] == pytest.approx([0.5 - half, 0.5 + half])


def test_no_value_no_interval_and_a_value_outside_0_1_is_refused():
    assert proportion_interval(None, 10, 0.1) == {"ci95": None, "ci_method": None}
    assert proportion_interval(0.5, 0, None)["ci95"] is None
    with pytest.raises(ValueError, match="proportion_interval"):
        proportion_interval(1.5, 10, 0.1)


def test_a_macro_average_gets_an_interval_from_its_members():
    members = [{"value": 0.25, "stderr": 0.0, "n_questions": 5} for _ in range(6)]  # as in a 6-subject run
    out = macro_interval(members)
    assert out["value"] == 0.25 and out["stderr"] == 0.0 and out["n_effective"] == pytest.approx(30)
    low, high = out["ci95"]
    assert low < 0.25 < high and (low, high) == pytest.approx(wilson_score_interval(0.25, 30))
    uneven = macro_interval([{"value": 1.0, "stderr": 0.0, "n_questions": 2},
                             {"value": 0.5, "stderr": 0.1, "n_questions": 50}])
    assert uneven["n_effective"] == pytest.approx(4 / (1 / 2 + 1 / 50), abs=0.01)  # the small member weighs as much
    assert uneven["stderr"] == pytest.approx(np.sqrt(0.01) / 2)
    one_question = macro_interval([{"value": 1.0, "stderr": None, "n_questions": 1},
                                   {"value": 0.0, "stderr": 0.0, "n_questions": 3}])
    assert "stderr" not in one_question and one_question["stderr_reason"]
    assert one_question["ci95"][1] - one_question["ci95"][0] > 0
    assert macro_interval([{"value": None}])["value"] is None
