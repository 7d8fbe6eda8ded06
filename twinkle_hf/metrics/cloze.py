"""Cloze metrics (``--method cloze``) and the two formulations side by side (``--method logit+cloze``).

Cloze rows (one per question) hold lm-eval's three picks: ``pred`` (the largest summed
log-probability: ``acc``), ``pred_norm`` (divided by the option text's characters: ``acc_norm``)
and ``pred_bytes`` (by its UTF-8 bytes: ``acc_bytes``). Each is an accuracy block of the usual
shape. Where lm-eval reports ``acc`` alone there is no normalised pick: under partial scoring
(Winogrande) every option scores the same continuation, so dividing by the option's length only
favours the longer name (``pred_norm`` -1); TruthfulQA MC2's ``acc`` is the mass on the true answers
(metrics/true_mass.py). Cloze shows no letters and no option order, so the letter and order metrics
are not reported, each with the reason.

Both formulations on the same questions (OLMES, Gu et al. 2024): MCF is the letter accuracy (over
the shuffled orders), CF the cloze ``acc_norm`` (``acc`` where there is no normalised pick); ``gap``
= MCF - CF with a paired stderr clustered by question (sd_i(MCF_i - CF_i) / sqrt(n)), and ``max`` =
max(MCF, CF), OLMES's task score.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import Predictions
from .accuracy import accuracy, accuracy_interval
from .true_mass import first_true_block, mark_headline, mass_rows, row_scores
from .uncertainty import Z95, clustered_stderr, question_key_strings, question_means

NO_LETTERS = "cloze scoring shows no letters and no option order: nothing positional to measure"
LETTER_METRICS = ("acc_original", "all_correct", "any_correct", "order_sensitivity", "fluctuation", "letter_recall",
                  "rstd", "rsd", "ckld", "variance_components", "debiased_accuracy", "pride", "ece", "brier",
                  "position_bias")
NORMALISED = ("acc_norm", "acc_bytes")  # lm-eval's acc_norm, acc_bytes, beside acc (``accuracy``)
CF_METRIC = "acc_norm"  # the cloze number set against the letters (OLMES normalises by characters too)
NO_NORM = ("lm-eval reports acc alone here: under partial scoring (Winogrande) every option scores the same "
           "continuation, and TruthfulQA MC2's acc is the mass on the true answers")


def normalised_rows(preds: Predictions) -> np.ndarray:
    """bool [rows]: the cloze rows that have lm-eval's normalised picks (not partial scoring, not MC2)."""
    assert preds.cloze is not None  # cloze rows carry every pick
    return (preds.cloze.pred_norm >= 0) & ~mass_rows(preds)


def cf_metric(preds: Predictions) -> str:
    """The name of the cloze number set against the letters for these cloze rows."""
    normed = normalised_rows(preds)
    if normed.all():
        return CF_METRIC
    if not normed.any():
        return "acc (the mass on the true answers)" if mass_rows(preds).all() else "acc"
    return f"{CF_METRIC} (acc where lm-eval reports acc alone)"


def cf_scores(preds: Predictions) -> np.ndarray:
    """Per cloze row its CF score: the acc_norm pick where it has one, else its acc score (the mass on
    the true answers for TruthfulQA MC2)."""
    assert preds.cloze is not None
    scores = row_scores(preds)
    normed = normalised_rows(preds)
    scores[normed] = (preds.cloze.pred_norm == preds.answer)[normed]
    return scores


def cloze_summary(preds: Predictions, small_n: int = 30) -> dict[str, Any]:
    """The metrics of cloze rows: acc (as ``accuracy``; TruthfulQA MC2's mass), acc_norm and acc_bytes
    where lm-eval computes them (over those rows), the CF metric's name; the letter metrics n/a."""
    _, question = np.unique(question_key_strings(preds), return_inverse=True)
    out: dict[str, Any] = {"formulation": "cloze", "n_rows": len(preds), "n_questions": len(set(question.tolist())),
                           "letter_dist": {}}
    assert preds.cloze is not None  # cloze rows carry every pick
    block = accuracy(question, preds.order_index, row_scores(preds))
    block.update(accuracy_interval(block, small_n))
    out["accuracy"] = mark_headline(block, preds)
    normed = normalised_rows(preds)
    for name, pick in zip(NORMALISED, (preds.cloze.pred_norm, preds.cloze.pred_bytes)):
        if not normed.any():
            continue  # lm-eval reports acc alone: no other pick is shown
        block = accuracy(question[normed], preds.order_index[normed], (pick == preds.answer)[normed])
        block.update(accuracy_interval(block, small_n))
        out[name] = block if normed.all() else {**block, "note": f"over the questions that have it; {NO_NORM}"}
    out["cf_metric"] = cf_metric(preds)
    out.update(first_true_block(preds, question, small_n))
    out.update({name: {"value": None, "reason": NO_LETTERS} for name in LETTER_METRICS})
    return out


def _per_question(preds: Predictions, correct: np.ndarray) -> dict[str, float]:
    """Each question's (dataset, id) mean of ``correct``."""
    keys = question_key_strings(preds)
    distinct, codes = np.unique(keys, return_inverse=True)
    return dict(zip(distinct.tolist(), question_means(codes, correct).tolist()))


def compare_formulations(letters: Predictions, cloze: Predictions) -> dict[str, Any]:
    """MCF (letters, the shuffled orders) against CF (cloze acc_norm, or acc where lm-eval reports acc
    alone; TruthfulQA MC2's mass on each side) on the questions both scored:
    each with its stderr, their paired gap, max(MCF, CF), and which formulation the model can use."""
    shuffled = letters.select(letters.order_index >= 0)
    mcf = _per_question(shuffled, row_scores(shuffled))
    cf = _per_question(cloze, cf_scores(cloze))
    metric = cf_metric(cloze)
    both = sorted(set(mcf) & set(cf))
    if not both:
        return {"value": None, "reason": "no question was scored in both formulations"}
    m = np.array([mcf[k] for k in both])
    c = np.array([cf[k] for k in both])
    stderr = lambda v: clustered_stderr(v) if len(v) > 1 else None
    diff, spread = float(np.mean(m - c)), stderr(m - c)
    gap: dict[str, Any] = {"value": diff, "stderr": spread, "n_questions": len(both), "definition":
                           f"MCF - CF ({metric}) per question, averaged; stderr paired and clustered by question"}
    if spread is not None:
        gap["ci95"] = [diff - Z95 * spread, diff + Z95 * spread]
    blocks: dict[str, dict[str, Any]] = {"letters": {"value": float(m.mean()), "stderr": stderr(m)},
                                         "cloze": {"value": float(c.mean()), "stderr": stderr(c), "metric": metric}}
    best = "letters" if m.mean() >= c.mean() else "cloze"
    usable = _usable(gap)
    return {"value": diff, "mcf": blocks["letters"], "cf": blocks["cloze"], "gap": gap,
            "max": {**blocks[best], "formulation": best}, "usable": usable,
            "sentence": formulation_sentence(float(m.mean()), float(c.mean()), gap, usable, metric)}


def _usable(gap: dict[str, Any]) -> str:
    """``letters`` or ``cloze`` where the gap's 95% interval leaves out 0 that way, else ``either``."""
    if gap.get("stderr") is None or abs(gap["value"]) <= Z95 * gap["stderr"]:
        return "either"
    return "letters" if gap["value"] > 0 else "cloze"


def formulation_sentence(mcf: float, cf: float, gap: dict[str, Any], usable: str, metric: str = CF_METRIC) -> str:
    """One line on which formulation this model can use."""
    pts = lambda v: f"{100 * v:+.1f}"
    err = f" ± {100 * gap['stderr']:.1f}" if gap.get("stderr") is not None else ""
    numbers = (f"letters (MCF) {100 * mcf:.1f}%, cloze (CF, {metric}) {100 * cf:.1f}%, gap "
               f"{pts(gap['value'])}{err} points")
    if usable == "letters":
        return f"The model can use the letters: {numbers}; report MCF."
    if usable == "cloze":
        return (f"The model knows more answers than it can map to letters: {numbers}; report CF "
                f"(max(MCF, CF) = {100 * cf:.1f}%).")
    return f"Neither formulation is clearly better for this model: {numbers}, within the noise."
