"""Accuracy blocks: the mean over questions of each question's accuracy across its orders, with the
stderr clustered by question and a 95% interval (docs/design.md, "Metrics"); every block in the
output contract's one shape (``value``, ``stderr``, ``reason`` where it does not apply)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import original_order
from .uncertainty import Z95, clustered_stderr, question_means, wilson_score_interval

# Keys the output contract (docs/design.md) names besides the one shape: alias -> canonical key.
CONTRACT_ALIASES = {"mean": "value", "per_seed": "per_order"}


def with_aliases(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` plus the contract's alias keys (``mean`` = ``value``, ``per_seed`` = ``per_order``),
    for readers of results.json; twinkle_hf itself reads only the canonical keys."""
    return {**block, **{alias: block[key] for alias, key in CONTRACT_ALIASES.items() if key in block}}


def _stderr(per_question: np.ndarray) -> float | None:
    """The clustered stderr; None from one question (no spread to estimate it from: not 0)."""
    return clustered_stderr(per_question) if len(per_question) > 1 else None


def accuracy(question: np.ndarray, order_index: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """Accuracy over the permuted rows (``order_index >= 0``): ``value`` (the mean over questions of
    each question's accuracy across its orders, which equals the mean of ``per_order`` when every
    question has every order), the clustered ``stderr``, and per order, their std, min and max."""
    keep = order_index >= 0
    question, order_index, correct = question[keep], order_index[keep], correct[keep].astype(np.float64)
    if len(correct) == 0:
        return with_aliases({"value": None, "reason": "no permuted rows", "n_questions": 0})
    orders = np.unique(order_index)
    per_order = [float(correct[order_index == s].mean()) for s in orders]
    per_question = question_means(question, correct)
    return with_aliases({
        "value": float(per_question.mean()),
        "stderr": _stderr(per_question),
        "std": float(np.std(per_order, ddof=1)) if len(per_order) > 1 else None,  # a spread needs 2 orders
        "min": float(min(per_order)),
        "max": float(max(per_order)),
        "per_order": per_order,
        "n_questions": len(per_question),
        "n_permutations": len(orders),
    })


def acc_original(order_index: np.ndarray, correct: np.ndarray, question: np.ndarray | None = None) -> dict[str, Any]:
    """Accuracy on the unpermuted order: the ORIGINAL rows of a shuffled run, else (no shuffling)
    the only order. Comparable with published (unshuffled) numbers. ``question`` (the row's
    question code) matters with several samples per order: they are averaged per question first."""
    index = original_order(order_index.tolist())
    if index is None:
        return {"value": None, "reason": "the original order was not scored (score_original: false)"}
    keep = order_index == index
    y = correct[keep].astype(np.float64)
    if question is not None:
        y = question_means(question[keep], y)
    return with_aliases({"value": float(y.mean()), "stderr": _stderr(y), "n_questions": len(y)})


def effective_questions(acc: dict[str, Any]) -> float:
    """The number of independent right/wrong questions that would give the accuracy block's mean
    its observed variance: n_eff = p(1 - p) / (sd_pop^2 / n), sd_pop the population sd of the
    per-question scores, recovered from the clustered stderr (sd_sample / sqrt(n)) as
    stderr^2 (n - 1). It is Kish's effective sample size of a clustered mean.

    For unshuffled 0/1 scores sd_pop^2 = p(1 - p), so n_eff = n exactly. A shuffled question's score
    is an average over its orders, which varies less than a 0/1 outcome (for scores in [0, 1],
    sd_pop^2 <= p(1 - p)), so n_eff >= n; it is capped at the rows scored (n x orders), the most
    0/1 outcomes the run holds, which also bounds it where every question scored alike (sd 0).
    """
    n, p, stderr = acc["n_questions"], acc["value"], acc.get("stderr")
    rows = n * max(1, acc.get("n_permutations") or 1)
    if n < 2 or stderr is None or p in (0.0, 1.0):
        return float(n)  # nothing to estimate a spread from, or a plain 0/n or n/n
    variance = stderr * stderr * (n - 1)  # population variance of the per-question scores
    return float(min(rows, max(n, p * (1 - p) / variance * n))) if variance > 0 else float(rows)


def accuracy_interval(acc: dict[str, Any], small_n: int) -> dict[str, Any]:
    """95% interval of an accuracy. For fewer than ``small_n`` questions the Wilson score interval
    (the normal interval misbehaves near 0 and 1 there) evaluated at the accuracy shown, p = the
    mean over questions, with n = :func:`effective_questions`: so it always contains p, it equals
    the plain Wilson interval of k/n for unshuffled 0/1 scores, and for a shuffled run it is as
    wide as the clustered error bar says (its half-width near p is 1.96 sqrt(p(1-p)/n_eff) =
    1.96 sd_pop / sqrt(n), the stderr up to the factor sqrt((n-1)/n)). Never Wilson of a rounded
    count: 1.5 right of 5 is not 2 of 5. Else mean ± 1.96 x the clustered stderr."""
    n, mean = acc.get("n_questions", 0), acc.get("value")
    if not n or mean is None:
        return {"ci95": None, "ci_method": None}
    if n < small_n:
        n_eff = effective_questions(acc)
        return {"ci95": list(wilson_score_interval(mean, n_eff)), "ci_method": "wilson",
                "n_effective": round(n_eff, 2)}
    half = Z95 * acc["stderr"]
    return {"ci95": [max(0.0, mean - half), min(1.0, mean + half)], "ci_method": "clustered normal"}
