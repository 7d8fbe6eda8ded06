"""Accuracy blocks: the mean over questions of each question's accuracy across its orders.

Each comes with the stderr clustered by question and a 95% interval (docs/design.md, "Metrics").
Every block has the output contract's one shape (``value``, ``stderr``, ``reason`` where it does
not apply)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import original_order
from .intervals import SMALL_N, proportion_interval
from .uncertainty import clustered_stderr, question_means

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
    """Accuracy over the permuted rows (``order_index >= 0``).

    ``value`` is the mean over questions of each question's accuracy across its orders; it equals
    the mean of ``per_order`` when every question has every order. Also the clustered ``stderr``,
    and per order, their std, min and max."""
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
    out = {"value": float(y.mean()), "stderr": _stderr(y), "n_questions": len(y)}
    return with_aliases({**out, **proportion_interval(out["value"], len(y), out["stderr"])})


def accuracy_interval(acc: dict[str, Any], small_n: int = SMALL_N) -> dict[str, Any]:
    """95% interval of an accuracy block: :func:`~.intervals.proportion_interval` of its value over
    its questions with its clustered stderr (the one rule for every proportion)."""
    return proportion_interval(acc.get("value"), acc.get("n_questions", 0), acc.get("stderr"), small_n)
