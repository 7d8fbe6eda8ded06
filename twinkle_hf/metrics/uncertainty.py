"""Error bars: Wilson intervals, question-level cluster bootstrap, variance components.

Permutations of one question are not independent samples, so every resampling here draws whole
questions (the cluster) with replacement: all rows of a drawn question come along, and a question
drawn twice counts twice. All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..schema import Predictions

_BLOCK = 128  # replicates drawn per block: bounds memory at _BLOCK x n_questions
Z95 = 1.959964  # two-sided 95% quantile of the standard normal


def clustered_stderr(per_question: np.ndarray) -> float:
    """sd_i(mean_k y_ik) / sqrt(n), with the sample sd (ddof=1); 0 for fewer than 2 questions."""
    n = len(per_question)
    return float(np.std(per_question, ddof=1) / math.sqrt(n)) if n > 1 else 0.0


def question_means(question: np.ndarray, values: np.ndarray) -> np.ndarray:
    """mean_k of ``values`` per question code (codes need not be contiguous)."""
    _, inverse = np.unique(question, return_inverse=True)
    sums = np.bincount(inverse, weights=values.astype(np.float64))
    return sums / np.bincount(inverse)


def question_key_strings(preds: Predictions) -> np.ndarray:
    """Each row's question key (dataset, id) as one string, ``"dataset\x00id"`` (object array).

    The same id in two datasets is two questions. ``\x00`` sorts first, so sorting the joined
    strings sorts the (dataset, id) pairs.
    """
    return np.array([f"{d}\x00{i}" for d, i in zip(preds.dataset, preds.id)], dtype=object)


def question_keys(preds: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct question keys (:func:`question_key_strings`) and each row's code into them."""
    joined = question_key_strings(preds)
    if not len(joined):
        return joined, np.zeros(0, np.int64)
    keys, codes = np.unique(joined, return_inverse=True)
    return keys, codes.astype(np.int64)


def question_codes(preds: Predictions) -> np.ndarray:
    """Integer code per row for its question key (dataset, id), numbered in sorted key order."""
    return question_keys(preds)[1]


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not degenerate at 0/n or n/n,
    which is why it is used for small subjects.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n and n > 0, got {successes}/{n}")
    return wilson_score_interval(successes / n, n, z)


def wilson_score_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval at an observed proportion ``p`` from ``n`` (possibly effective,
    non-integer) trials: the p0 with |p - p0| <= z sqrt(p0 (1 - p0) / n). It always contains ``p``."""
    if not n > 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"wilson_score_interval needs 0 <= p <= 1 and n > 0, got p={p}, n={n}")
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def variance_components(question: np.ndarray, correct: np.ndarray) -> dict[str, float]:
    """Split the variance of y_ik into within-question (mean_i var_k y_ik) and between-question
    (var_i mean_k y_ik) parts, both population variances (ddof=0).

    Within is the noise that permuting options adds; between is the spread of question difficulty.
    For a balanced design (same K for every question) within + between = var(y) over all rows.
    """
    _, inverse = np.unique(question, return_inverse=True)
    y = correct.astype(np.float64)
    count = np.bincount(inverse)
    mean = np.bincount(inverse, weights=y) / count
    within = np.bincount(inverse, weights=(y - mean[inverse]) ** 2) / count
    return {"within_question": float(within.mean()), "between_question": float(mean.var()),
            "n_questions": len(count)}


def _draw_blocks(n_questions: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of resampled question positions, shape [block, n_questions]; the one source of draws,
    so every bootstrap with the same (n_questions, n_boot, seed) resamples the same questions."""
    if n_questions == 0:
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, _BLOCK):
        yield rng.integers(0, n_questions, size=(min(_BLOCK, n_boot - start), n_questions))


def summarize_replicates(values: np.ndarray) -> dict[str, Any]:
    """stderr (sd, ddof=1) and percentile 95% interval of the finite replicate values.

    Replicates where the metric does not apply (NaN, e.g. a letter drawn too rarely) are dropped
    and counted in ``n_invalid``.
    """
    finite = values[np.isfinite(values)]
    if len(finite) < 2:
        return {"stderr": None, "ci95": None, "n_boot": len(values), "n_invalid": int(len(values) - len(finite))}
    low, high = np.percentile(finite, [2.5, 97.5])
    return {"stderr": float(np.std(finite, ddof=1)), "ci95": (float(low), float(high)),
            "n_boot": len(values), "n_invalid": int(len(values) - len(finite))}


def bootstrap_stats(stat_fn: Callable[[np.ndarray], np.ndarray], per_question: np.ndarray,
                    n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Fast path for metrics that are a function of per-question sums.

    ``per_question`` is [n, d] additive statistics (e.g. gold and hit counts per letter);
    ``stat_fn`` maps summed statistics [B, d] to B metric values (NaN where it does not apply).
    A replicate's sums are (how often each question was drawn) @ per_question: one matrix product
    per block instead of rebuilding rows.
    """
    n = len(per_question)
    stats = per_question.reshape(n, -1).astype(np.float64)
    values = []
    for draws in _draw_blocks(n, n_boot, seed):
        b = len(draws)
        offsets = (draws + n * np.arange(b)[:, None]).ravel()
        counts = np.bincount(offsets, minlength=b * n).reshape(b, n).astype(np.float64)
        values.append(np.asarray(stat_fn(counts @ stats), dtype=np.float64))
    return summarize_replicates(np.concatenate(values) if values else np.zeros(0))


def bootstrap_mean(per_question_values: np.ndarray, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Cluster bootstrap of a mean of per-question values (all_correct, fluctuation, ...)."""
    n = len(per_question_values)
    return bootstrap_stats(lambda sums: sums[:, 0] / n, np.asarray(per_question_values)[:, None], n_boot, seed)


def ece(probs: np.ndarray, correct: np.ndarray, n_bins: int = 15) -> float:
    """Expected calibration error (Naeini et al. 2015; Guo et al. 2017): confidence = max prob,
    ``n_bins`` equal-width bins (lo, hi], sum_b (n_b / N) |acc_b - conf_b|.

    ``probs`` is [rows, width] (pad smaller k with 0); ``correct`` is pred == answer per row.
    """
    if len(probs) == 0:
        raise ValueError("ece needs at least one row")
    conf = probs.max(axis=1)
    bins = np.clip(np.ceil(conf * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    hits = np.bincount(bins, weights=correct.astype(np.float64), minlength=n_bins)
    gap = hits - np.bincount(bins, weights=conf, minlength=n_bins)  # n_b (acc_b - conf_b)
    return float(np.abs(gap).sum() / len(conf))


def brier(probs: np.ndarray, answer: np.ndarray) -> float:
    """Multi-class Brier score (Brier 1950): mean over rows of sum_j (p_j - onehot(answer)_j)^2.

    ``probs`` is [rows, width]; zero padding of a smaller k adds nothing.
    """
    if len(probs) == 0:
        raise ValueError("brier needs at least one row")
    onehot = np.zeros_like(probs, dtype=np.float64)
    onehot[np.arange(len(answer)), answer] = 1.0
    return float(((probs - onehot) ** 2).sum(axis=1).mean())
