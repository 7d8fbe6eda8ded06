"""Paired tests for two runs on the same questions (compare's verdicts; outputs/verdicts.py).

Pure functions of per-question outcomes, numpy and math only (no scipy at run time):

- :func:`mcnemar_exact`: one 0/1 outcome per question and run; b questions went right -> wrong,
  c wrong -> right; under "no difference" each of the n = b + c discordant questions is a fair
  coin, so p = min(1, 2 P(X <= min(b, c))) with X ~ Binomial(n, 1/2), and 1 when n = 0.
- :func:`sign_flip_p`: per-question mean differences d_i (shuffled accuracy: the mean over the
  question's orders); under "no difference" each d_i is as likely to be -d_i, so the two-sided
  p-value is the share of the 2^m sign flips of the m nonzero d_i whose |sum| reaches the observed
  |sum|: enumerated exactly up to ``EXACT_MAX`` nonzero differences, else ``DRAWS`` seeded random
  flips with p = (hits + 1) / (DRAWS + 1) (a Monte Carlo p-value's stderr is at most
  0.5 / sqrt(DRAWS) < 1e-3).
- :func:`holm` and :func:`benjamini_hochberg`: adjusted p-values of one family (NaN stays NaN and
  does not count in the family's size).
- :func:`tost_p`: two one-sided normal tests of "the difference lies outside ±margin".
- :func:`flips`, :func:`questions_to_detect`: which questions changed, and a power estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .uncertainty import Z95

EXACT_MAX = 20  # nonzero differences up to which the sign-flip test enumerates all 2^m flips
DRAWS = 2**18  # Monte Carlo flips beyond that (262,144: p stable to 1e-3)
SEED = 20240521  # the Monte Carlo flips' seed: the same data give the same p-value
Z80 = 0.8416212335729143  # one-sided normal quantile of 80% power
ALPHA = 0.05


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def mcnemar_exact(right_to_wrong: int, wrong_to_right: int) -> float:
    """Exact two-sided McNemar p-value from the two discordant counts (1.0 when there are none)."""
    b, c = int(right_to_wrong), int(wrong_to_right)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b} and {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)  # exact integers: no underflow for thousands of questions


def sign_flip_p(differences: Sequence[float] | np.ndarray, draws: int = DRAWS, seed: int = SEED) -> float:
    """Two-sided paired sign-flip (permutation) p-value of per-question differences; 1.0 when all are 0."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.abs(d) > 1e-12]
    if d.size == 0:
        return 1.0
    observed = abs(float(d.sum())) - 1e-9  # sums equal up to rounding count as reaching it
    if d.size <= EXACT_MAX:
        sums = np.zeros(1)
        for x in d:
            sums = np.concatenate([sums + x, sums - x])
        return float(np.mean(np.abs(sums) >= observed))
    rng = np.random.default_rng(seed)
    hits, batch, done = 0, max(1, min(draws, 2**22 // d.size)), 0
    while done < draws:
        k = min(batch, draws - done)
        signs = rng.integers(0, 2, size=(k, d.size), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed))
        done += k
    return (hits + 1) / (draws + 1)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) p_(j))."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled) if m else scaled
    return out.tolist()


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg: the i-th smallest of m p-values becomes min over j >= i of min(1, m p_(j) / j)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    out[order] = np.minimum.accumulate(scaled[::-1])[::-1] if m else scaled
    return out.tolist()


ADJUSTMENTS = {"holm": holm, "bh": benjamini_hochberg}


def tost_p(diff: float, stderr: float, margin: float) -> float:
    """TOST p-value of "|true difference| >= margin" from a normal paired difference: the larger of
    P(Z >= (diff + margin) / stderr) and P(Z <= (diff - margin) / stderr). Below 0.05 exactly when the
    90% interval diff ± 1.645 stderr lies inside ±margin. NaN when stderr is not finite; with
    stderr 0, 0.0 inside the margin and 1.0 outside it."""
    if not (math.isfinite(diff) and math.isfinite(stderr)) or stderr < 0 or margin <= 0:
        return math.nan
    if stderr == 0:
        return 0.0 if abs(diff) < margin else 1.0
    lower = 1.0 - _normal_cdf((diff + margin) / stderr)  # H0: difference <= -margin
    upper = _normal_cdf((diff - margin) / stderr)  # H0: difference >= +margin
    return max(lower, upper)


def flips(ids: Sequence[str], base: Sequence[float] | np.ndarray,
          other: Sequence[float] | np.ndarray) -> tuple[list[str], list[str]]:
    """(right_to_wrong, wrong_to_right) question ids: per-question scores (0/1, or the mean over orders)
    that went down / up from ``base`` to ``other``."""
    d = np.asarray(other, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    return ([str(i) for i, x in zip(ids, d) if x < -1e-12], [str(i) for i, x in zip(ids, d) if x > 1e-12])


def questions_to_detect(differences: Sequence[float] | np.ndarray, margin: float) -> int | None:
    """About how many more questions would detect a true difference of ``margin`` (two-sided 5% test,
    80% power): n_needed = (z_0.975 + z_0.80)^2 s^2 / margin^2, where s^2 is the variance of the
    per-question differences observed (for 0/1 outcomes about the share of discordant questions);
    returns max(0, ceil(n_needed) - n). None where the differences do not vary (nothing to size from)."""
    d = np.asarray(differences, dtype=np.float64)
    if d.size < 2 or margin <= 0:
        return None
    var = float(d.var(ddof=1))
    if var <= 0:
        return None
    needed = (Z95 + Z80) ** 2 * var / margin**2
    return max(0, math.ceil(needed) - d.size)
