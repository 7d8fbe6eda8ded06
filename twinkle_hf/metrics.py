"""Metrics: pure functions from predictions to numbers (definitions in DESIGN.md).

Notation: n questions, K permutations each; y_ik = 1 when permutation k of question i is right.
The error bar of an accuracy is the standard error *clustered by question*,
sd_i(mean_k y_ik) / sqrt(n): permutations of one question are not independent samples, so the
std of per-seed accuracies is reported as `std` but never used as the error bar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .bias import bias_metrics
from .schema import LETTERS, Predictions, original_order
from .uncertainty import Z95, question_codes, question_means, wilson_interval

if TYPE_CHECKING:
    from .config import EvalConfig


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
        "n_questions": len(per_question),
        "n_permutations": len(seeds),
    }


def acc_original(perm_index: np.ndarray, correct: np.ndarray) -> dict[str, Any] | None:
    """Accuracy on the unpermuted order: the ORIGINAL rows of a shuffled run, else (no shuffling)
    the only permutation. Comparable with published (unshuffled) numbers."""
    index = original_order(perm_index.tolist())
    if index is None:
        return None
    rows = perm_index == index
    y = correct[rows].astype(np.float64)
    stderr = float(np.std(y, ddof=1) / math.sqrt(len(y))) if len(y) > 1 else 0.0
    return {"mean": float(y.mean()), "stderr": stderr, "n_questions": len(y)}


def letter_dist(pred: np.ndarray, answer: np.ndarray, num_choices: np.ndarray) -> dict[str, dict[str, float]]:
    """Share of predictions and of gold answers per displayed letter (over the rows given)."""
    top = int(num_choices.max()) if len(num_choices) else 0
    n = max(1, len(pred))
    predicted = np.bincount(pred, minlength=top)[:top] / n
    gold = np.bincount(answer, minlength=top)[:top] / n
    return {LETTERS[i]: {"pred": float(predicted[i]), "gold": float(gold[i])} for i in range(top)}


@dataclass(frozen=True)
class MetricOptions:
    """Knobs of the uncertainty and bias computations (from EvalConfig; written into results)."""

    n_boot: int = 1000  # question-level bootstrap replicates for nonlinear metrics (0: none)
    seed: int = 0  # bootstrap draws and the PriDe subset
    pride_fraction: float = 0.05
    min_per_letter: int = 5  # rstd/rsd use letters that are gold at least this often
    small_n: int = 30  # below this many questions, accuracy's ci95 is a Wilson interval

    @classmethod
    def from_config(cls, cfg: EvalConfig) -> MetricOptions:
        """The metric knobs of a config (the bootstrap and PriDe subset use the base seed)."""
        return cls(n_boot=cfg.bootstrap, seed=cfg.seed, pride_fraction=cfg.pride_fraction)


def accuracy_interval(acc: dict[str, Any], small_n: int) -> dict[str, Any]:
    """95% interval of an accuracy: Wilson on (mean x n, n) for small n (the normal interval
    misbehaves near 0 and 1 there), else mean ± 1.96 x the clustered stderr."""
    n, mean = acc.get("n_questions", 0), acc.get("mean")
    if not n or mean is None:
        return {"ci95": None, "ci_method": None}
    if n < small_n:
        return {"ci95": list(wilson_interval(round(mean * n), n)), "ci_method": "wilson"}
    half = Z95 * acc["stderr"]
    return {"ci95": [max(0.0, mean - half), min(1.0, mean + half)], "ci_method": "clustered normal"}


LOW_LETTER_MASS = 0.5  # below this mean, the model mostly wanted a token that is no option label


def letter_mass(mass: np.ndarray) -> dict[str, Any]:
    """Probability the model put on the k option labels (among the whole vocabulary), per row:
    its mean, and the share of rows under LOW_LETTER_MASS. A low mean means the scored position is
    not where the model answers (a chat or thinking template, a missing answer cue): the letter
    probabilities are then read from a distribution that is mostly elsewhere."""
    if len(mass) == 0:
        return {"value": None, "reason": "no rows"}
    return {"value": float(np.mean(mass)), "min": float(np.min(mass)),
            "share_low": float(np.mean(mass < LOW_LETTER_MASS)), "low": bool(np.mean(mass) < LOW_LETTER_MASS)}


def exact_ties(probs: list[np.ndarray]) -> dict[str, Any]:
    """Rows whose top probability is shared by two or more options (broken by a seeded order, see
    permute.choose_options)."""
    rows = sum(int(np.sum(p == p.max()) > 1) for p in probs if len(p))
    return {"value": rows / len(probs) if probs else None, "rows": int(rows)}


def summarize(preds: Predictions, options: MetricOptions = MetricOptions()) -> dict[str, Any]:
    """The metrics of one group of predictions (a subject, a dataset, or everything)."""
    question = question_codes(preds)
    correct = preds.correct
    shuffled = preds.perm_index >= 0
    acc = accuracy(question, preds.perm_index, correct)
    acc.update(accuracy_interval(acc, options.small_n))
    return {
        "accuracy": acc,
        "acc_original": acc_original(preds.perm_index, correct),
        "letter_dist": letter_dist(preds.pred[shuffled], preds.answer[shuffled], preds.num_choices[shuffled]),
        "n_rows": len(preds),
        "letter_mass": letter_mass(preds.letter_mass),
        "ties": exact_ties(preds.probs),
        **bias_metrics(preds, pride_fraction=options.pride_fraction, seed=options.seed, n_boot=options.n_boot,
                       min_per_letter=options.min_per_letter),
    }


def summarize_groups(preds: Predictions, options: MetricOptions = MetricOptions()) -> dict[str, Any]:
    """Overall (micro), per dataset with per subject, and the macro average over subjects."""
    out: dict[str, Any] = {"overall": summarize(preds, options), "datasets": {}}
    subject_means: list[float] = []
    dataset = np.array(preds.dataset, dtype=object)
    subject = np.array(preds.subject, dtype=object)
    for name in dict.fromkeys(preds.dataset):
        part = preds.select(dataset == name)
        subjects = {s: summarize(preds.select((dataset == name) & (subject == s)), options)
                    for s in sorted(set(part.subject))}
        block = summarize(part, options)
        means = [m["accuracy"]["mean"] for m in subjects.values() if m["accuracy"]["mean"] is not None]
        block["accuracy_macro"] = float(np.mean(means)) if means else None
        out["datasets"][name] = {"metrics": block, "subjects": subjects}
        subject_means.extend(means)
    out["overall"]["accuracy_macro"] = float(np.mean(subject_means)) if subject_means else None
    return out


def headline_scalars(block: dict[str, Any]) -> dict[str, float]:
    """The numbers worth a line on a training dashboard or a trend table, flat and named."""
    out: dict[str, float] = {}
    acc = block.get("accuracy") or {}
    if acc.get("mean") is not None:
        out["accuracy"], out["accuracy_stderr"] = acc["mean"], acc["stderr"]
    if block.get("acc_original"):
        out["acc_original"] = block["acc_original"]["mean"]
    for key in ("debiased_accuracy", "all_correct", "fluctuation", "rstd", "ckld"):
        value = (block.get(key) or {}).get("value")
        if value is not None:
            out[key] = value
    for letter, share in (block.get("letter_dist") or {}).items():
        out[f"pred_share_{letter}"] = share["pred"]
    return out
