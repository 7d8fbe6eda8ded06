"""Metrics: pure functions from predictions to numbers (definitions in DESIGN.md).

Notation: n questions, K permutations each; y_ik = 1 when permutation k of question i is right.
The error bar of an accuracy is the standard error *clustered by question*,
sd_i(mean_k y_ik) / sqrt(n): permutations of one question are not independent samples, so the
std of per-seed accuracies is reported as `std` but never used as the error bar.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .schema import LETTERS, ORIGINAL, Predictions


def _question_keys(preds: Predictions) -> np.ndarray:
    """Integer code per row for its question (dataset + id)."""
    keys = [f"{d}\x00{i}" for d, i in zip(preds.dataset, preds.id)]
    return np.unique(np.array(keys, dtype=object), return_inverse=True)[1]


def question_means(question: np.ndarray, values: np.ndarray) -> np.ndarray:
    """mean_k of ``values`` per question code (codes need not be contiguous)."""
    _, inverse = np.unique(question, return_inverse=True)
    sums = np.bincount(inverse, weights=values.astype(np.float64))
    return sums / np.bincount(inverse)


def clustered_stderr(per_question: np.ndarray) -> float:
    """sd_i(mean_k y_ik) / sqrt(n), with the sample sd (ddof=1); 0 for fewer than 2 questions."""
    n = len(per_question)
    return float(np.std(per_question, ddof=1) / math.sqrt(n)) if n > 1 else 0.0


def accuracy(question: np.ndarray, perm_index: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """Accuracy over the permuted rows (``perm_index >= 0``): per seed, mean, std, min, max, stderr.

    ``mean`` is the mean over questions of each question's accuracy across its permutations, which
    equals the mean of ``per_seed`` when every question has every permutation.
    """
    keep = perm_index >= 0
    question, perm_index, correct = question[keep], perm_index[keep], correct[keep].astype(np.float64)
    if len(correct) == 0:
        return {"mean": None, "n_questions": 0}
    seeds = np.unique(perm_index)
    per_seed = [float(correct[perm_index == s].mean()) for s in seeds]
    per_question = question_means(question, correct)
    return {
        "mean": float(per_question.mean()),
        "stderr": clustered_stderr(per_question),
        "std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else 0.0,
        "min": float(min(per_seed)),
        "max": float(max(per_seed)),
        "per_seed": per_seed,
        "n_questions": int(len(per_question)),
        "n_permutations": int(len(seeds)),
    }


def acc_original(perm_index: np.ndarray, correct: np.ndarray) -> dict[str, Any] | None:
    """Accuracy on the unpermuted order: the ORIGINAL rows of a shuffled run, else (no shuffling)
    the only permutation. Comparable with published (unshuffled) numbers."""
    rows = perm_index == ORIGINAL
    if not rows.any() and len(perm_index) and (perm_index == 0).all():
        rows = perm_index == 0  # a run without shuffling: its only order is the original
    if not rows.any():
        return None
    y = correct[rows].astype(np.float64)
    stderr = float(np.std(y, ddof=1) / math.sqrt(len(y))) if len(y) > 1 else 0.0
    return {"mean": float(y.mean()), "stderr": stderr, "n_questions": int(len(y))}


def letter_dist(pred: np.ndarray, answer: np.ndarray, num_choices: np.ndarray) -> dict[str, dict[str, float]]:
    """Share of predictions and of gold answers per displayed letter (over the rows given)."""
    top = int(num_choices.max()) if len(num_choices) else 0
    n = max(1, len(pred))
    predicted = np.bincount(pred, minlength=top)[:top] / n
    gold = np.bincount(answer, minlength=top)[:top] / n
    return {LETTERS[i]: {"pred": float(predicted[i]), "gold": float(gold[i])} for i in range(top)}


def summarize(preds: Predictions) -> dict[str, Any]:
    """The metrics of one group of predictions (a subject, a dataset, or everything)."""
    question = _question_keys(preds)
    correct = preds.correct
    shuffled = preds.perm_index >= 0
    return {
        "accuracy": accuracy(question, preds.perm_index, correct),
        "acc_original": acc_original(preds.perm_index, correct),
        "letter_dist": letter_dist(preds.pred[shuffled], preds.answer[shuffled], preds.num_choices[shuffled]),
        "n_rows": int(len(preds)),
    }


def summarize_groups(preds: Predictions) -> dict[str, Any]:
    """Overall (micro), per dataset with per subject, and the macro average over subjects."""
    out: dict[str, Any] = {"overall": summarize(preds), "datasets": {}}
    subject_means: list[float] = []
    dataset = np.array(preds.dataset, dtype=object)
    subject = np.array(preds.subject, dtype=object)
    for name in dict.fromkeys(preds.dataset):
        part = preds.select(dataset == name)
        subjects = {s: summarize(preds.select((dataset == name) & (subject == s)))
                    for s in sorted(set(part.subject))}
        block = summarize(part)
        means = [m["accuracy"]["mean"] for m in subjects.values() if m["accuracy"]["mean"] is not None]
        block["accuracy_macro"] = float(np.mean(means)) if means else None
        out["datasets"][name] = {"metrics": block, "subjects": subjects}
        subject_means.extend(means)
    out["overall"]["accuracy_macro"] = float(np.mean(subject_means)) if subject_means else None
    return out
