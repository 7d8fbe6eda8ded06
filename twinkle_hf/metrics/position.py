"""Is there a position preference, or only noise? A randomisation test with a p-value, an effect
size in points and a one-line verdict (``position_bias`` in every metric block).

H0: the option *content* a model chooses does not depend on where the options are shown. The run's
orders were drawn at random (a cyclic base order per question, or independent random orders). So
under H0 the displayed letter of a chosen content is where the random order happened to put it.

The test re-draws that randomness. Per question it draws one uniformly random relabelling rho of the
option contents, the same for all the question's rows. For cyclic orders this is exactly a fresh
base order; for random orders, a fresh draw from the same distribution; for ``all``, the set of
orders is unchanged and only re-paired. Each row's letter becomes the position of rho(chosen
content) in its own order. Because a question's rows move together, the null distribution keeps
their correlation, so the test is valid under clustering with no design-effect formula (a
conditional randomisation test; Candes et al. 2018's CRT, with the design's own randomness).

Statistic: T = sum over letters of (observed - expected)^2 / expected, expected = the count each
letter gets when position does not matter (sum over rows of 1/k). The p-value comes from B re-draws
with a randomised tie rule: p = (#{T* > T} + U (1 + #{T* = T})) / (1 + B), U ~ Uniform(0, 1). So a
design that leaves T unchanged gives a uniform p, not p = 1 (a content-only chooser under cyclic
orders balances the letters exactly, and every T* equals T). Under H0, p stays uniform on [0, 1];
tests/metrics/test_position.py checks the false alarms by simulation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema import LETTERS, plural
from .rows import NO_ROWS, DenseRows

PERMUTATIONS = 999  # re-draws: the smallest p the test can show is 1 / (1 + B) = 0.001
EFFECT = 0.05  # the preference the "would be detected" sentence sizes the run for: 5 points on one letter
POWER, ALPHA = 0.95, 0.05
TEST = ("randomisation test: per question, one random relabelling of the option contents (the run's own "
        "order distribution re-drawn), all its rows together, so it is valid however a question's orders "
        "correlate; statistic sum (observed - expected)^2 / expected over letters")
NO_SHUFFLE = ("the options were shown in their original order only, so where an option is shown and what it "
              "says cannot be told apart; shuffle the options (--shuffle or --shuffle-mode cyclic)")
_BLOCK = 64  # re-draws computed together: bounds memory at _BLOCK x rows


@dataclass(frozen=True)
class PositionTest:
    """The test on one group's parsed rows: letter counts observed and expected under H0, T, p."""

    observed: np.ndarray  # [width] predicted letter counts
    expected: np.ndarray  # [width] sum over rows of 1/k for each position < k
    statistic: float
    p_value: float
    exceed: int  # re-draws with T* >= T (for "p < 1 / (1 + B)")
    null_mean: float  # mean of T*: the design effect's numerator
    n_permutations: int


def _chi2(counts: np.ndarray, expected: np.ndarray) -> np.ndarray:
    keep = expected > 0
    return (((counts[..., keep] - expected[keep]) ** 2) / expected[keep]).sum(axis=-1)


def position_test(question: np.ndarray, k: np.ndarray, perm: np.ndarray, pred: np.ndarray, seed: int,
                  n_permutations: int = PERMUTATIONS) -> PositionTest:
    """The randomisation test on parsed rows: ``question`` codes 0..n-1, ``k`` options, ``perm``
    [rows, width] (displayed position -> original option; padded with the position), ``pred`` the
    displayed letter chosen (>= 0). Pure and seeded: the same inputs give the same p."""
    rows, width = perm.shape
    n = int(question.max()) + 1 if rows else 0
    content = perm[np.arange(rows), pred]
    inverse = np.argsort(perm, axis=1)  # inverse[r, c] = where row r shows original option c
    expected = ((np.arange(width)[None, :] < k[:, None]) / k[:, None]).sum(axis=0)
    observed = np.bincount(pred, minlength=width).astype(np.float64)
    statistic = float(_chi2(observed, expected))
    k_question = np.zeros(n, np.int64)
    k_question[question] = k
    padding = np.arange(width)[None, :] >= k_question[:, None]
    rng = np.random.default_rng([seed, 0x706F73])  # its own stream, apart from the bootstrap's
    null = np.empty(0)
    for start in range(0, n_permutations, _BLOCK):
        size = min(_BLOCK, n_permutations - start)
        keys = rng.random((size, n, width))
        keys[:, padding] = np.inf  # a question's padding positions stay last: rho maps 0..k-1 onto itself
        rho = np.argsort(keys, axis=2)  # [size, n, width]: a uniform random bijection per question
        letters = inverse[np.arange(rows), rho[:, question, content]]  # [size, rows]
        flat = (np.arange(size)[:, None] * width + letters).ravel()
        counts = np.bincount(flat, minlength=size * width).reshape(size, width).astype(np.float64)
        null = np.concatenate([null, _chi2(counts, expected)])
    tol = 1e-9 * max(1.0, statistic)
    above, ties = int(np.sum(null > statistic + tol)), int(np.sum(np.abs(null - statistic) <= tol))
    p = (above + rng.random() * (1 + ties)) / (1 + n_permutations)
    return PositionTest(observed, expected, statistic, float(p), above + ties,
                        float(null.mean()) if len(null) else math.nan, n_permutations)


@functools.cache
def _noncentrality(df: int) -> float:
    """lambda at which a noncentral chi-square with ``df`` exceeds the chi-square's (1 - ALPHA)
    quantile with probability POWER: from a fixed seeded sample (common random numbers, so the
    bisection is monotone and the answer deterministic)."""
    rng = np.random.default_rng(20240527)
    z, rest = rng.standard_normal(40_000), rng.chisquare(df - 1, 40_000) if df > 1 else np.zeros(40_000)
    critical = float(np.quantile(z**2 + rest, 1 - ALPHA))
    low, high = 0.0, 200.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if np.mean((z + math.sqrt(mid)) ** 2 + rest > critical) < POWER else (low, mid)
    return high


def detectable_from(test: PositionTest, n_questions: int, rows_per_question: float) -> int | None:
    """About how many questions a run like this one needs to detect a preference of EFFECT points
    for one letter (taken evenly from the others) with probability POWER at ALPHA.

    An approximation: T / d is taken as a noncentral chi-square with k - 1 degrees of freedom and
    noncentrality rows x k x sum(delta^2) / d. Here d is the design effect of this run's null (mean
    T* over k - 1: how much a question's rows vary together). d is floored at the noise the
    preference itself adds (a row leans with probability pi = EFFECT k / (k - 1)), which a null
    without noise cannot show.
    tests/metrics/test_position.py checks the sentence by simulating runs of that size."""
    letters = int(np.sum(test.expected > 0))
    if letters < 2 or n_questions < 1 or rows_per_question <= 0:
        return None
    lean = EFFECT * letters / (letters - 1)
    floor = lean * (1 - lean) * letters**2 / (letters - 1)
    design = max(test.null_mean / (letters - 1), floor)
    per_row = letters * EFFECT**2 * (1 + 1 / (letters - 1))
    return max(1, math.ceil(_noncentrality(letters - 1) * design / (rows_per_question * per_row)))


def p_text(p: float, n_permutations: int, exceed: int) -> str:
    """"p < 0.001" (no re-draw reached T: the smallest p the test can show), else two significant digits."""
    smallest = 1 / (1 + n_permutations)
    if exceed == 0 or p < smallest:
        return f"p < {smallest:.2g}"
    return f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"


def verdict(block: dict[str, Any]) -> str:
    """The one-line verdict of a position_bias block (n/a with its reason where it does not apply)."""
    if block.get("value") is None:
        return f"n/a ({block.get('reason', 'not computed')})"
    letter, p = block["letter"], block["p_value"]
    shown = p_text(p, block["n_permutations"], block["exceed"])
    share = block["letters"][letter]
    effect = (f"{letter} is chosen {100 * block['value']:.1f} points more often than its content deserves "
              f"({100 * share['predicted']:.1f}% of answers, {100 * share['expected']:.1f}% if position did not "
              f"matter)")
    if p < 0.01:
        return f"strong evidence of a preference for {letter} ({shown}): {effect}"
    if p < ALPHA:
        return f"evidence of a preference for {letter} ({shown}): {effect}"
    n = block.get("detectable_from")
    size = (f"; 95% of models with a {100 * EFFECT:.0f}-point preference would be detected from about "
            f"{plural(n, 'question')}" if n else "")
    return f"no evidence of a position preference at this sample size ({shown}{size})"


def position_bias(r: DenseRows, seed: int, mode: str | None = None,
                  n_permutations: int = PERMUTATIONS) -> dict[str, Any]:
    """``position_bias``: the test, its p-value, the letter chosen most beyond what its content
    deserves (``value``: that excess as a share, ``letter``; ``letters``: every letter's predicted
    and expected share), the questions a 5-point preference needs, and the ``verdict`` sentence.
    Unparsed rows (generation mode) are left out and counted. ``mode`` "none" (no shuffling): n/a."""
    if r.n == 0:
        return {"value": None, "reason": NO_ROWS}
    identity = bool((r.perm == np.arange(r.width)[None, :]).all())
    if mode == "none" or (mode is None and identity):
        return {"value": None, "reason": NO_SHUFFLE}
    parsed = r.pred >= 0
    if not parsed.any():
        return {"value": None, "reason": "no answer had an extracted letter", "unparsed_rows": len(parsed)}
    _, question = np.unique(r.question[parsed], return_inverse=True)
    test = position_test(question, r.k[parsed], r.perm[parsed], r.pred[parsed], seed, n_permutations)
    rows = int(parsed.sum())
    shares = {LETTERS[j]: {"predicted": float(o / rows), "expected": float(e / rows), "excess": float((o - e) / rows)}
              for j, (o, e) in enumerate(zip(test.observed, test.expected)) if e > 0}
    letter = max(shares, key=lambda L: shares[L]["excess"])
    n = int(question.max()) + 1
    block: dict[str, Any] = {
        "value": shares[letter]["excess"], "letter": letter, "p_value": test.p_value, "statistic": test.statistic,
        "exceed": test.exceed, "n_permutations": test.n_permutations, "test": TEST, "letters": shares,
        "design_effect": test.null_mean / max(1, len(shares) - 1), "n_questions": n, "n_rows": rows,
        "unparsed_rows": int((~parsed).sum()), "detectable_from": detectable_from(test, n, rows / n),
        "seed": seed,
    }
    if len(np.unique(r.order_index[parsed])) == 1 and r.n_samples == 1:
        block["note"] = ("one order per question: the test sees a preference across questions only, not how one "
                         "question's answer moves with its order")
    block["verdict"] = verdict(block)
    return block
