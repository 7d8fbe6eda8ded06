"""``choices_only_accuracy``: does the answer show from the options alone? (Balepur, Ravichander and
Rudinger, ACL 2024, "Artifacts or Abduction: How Do LLMs Answer Multiple-Choice Questions Without
the Question?"). A pure function of predictions: ``pred_choices_only`` is the letter scored on the
same prompt (same order, same few-shot examples) with every question text removed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..schema import Predictions
from .intervals import proportion_interval
from .uncertainty import clustered_stderr, question_codes, question_means

SURE = 0.01  # the report says the options give the answer away above chance at p below this
SOURCE = "Balepur, Ravichander & Rudinger, ACL 2024 (the prompt with its question removed)"


def choices_only_accuracy(preds: Predictions) -> dict[str, Any]:
    """Accuracy of the question-less prompts over the shuffled orders (or the only order), as
    ``accuracy`` is counted: per question the mean over its orders, then over questions, with a
    stderr clustered by question. Beside it ``chance`` (the mean of 1/k), ``majority`` (always
    answering the letter most often gold among these rows: Balepur et al.'s majority baseline), and
    ``p_vs_chance``, a one-sided normal test of value > chance with the clustered stderr."""
    assert preds.letters is not None and preds.letters.pred_choices_only is not None
    keep = preds.order_index >= 0
    if not keep.any():
        return {"value": None, "reason": "no permuted rows", "source": SOURCE}
    sub = preds.select(keep)
    assert sub.letters is not None and sub.letters.pred_choices_only is not None
    question = question_codes(sub)
    y = question_means(question, (sub.letters.pred_choices_only == sub.answer).astype(np.float64))
    chance = float(question_means(question, 1.0 / sub.num_choices).mean())
    majority = float(np.bincount(sub.answer).max() / len(sub.answer))
    out: dict[str, Any] = {"value": float(y.mean()), "chance": chance, "majority": majority, "n_questions": len(y),
                           "source": SOURCE}
    if len(y) < 2:
        return {**out, "stderr_reason": "one question: no error bar", **proportion_interval(out["value"], 1, None)}
    stderr = clustered_stderr(y)
    out.update(stderr=stderr, **proportion_interval(out["value"], len(y), stderr))
    z = (out["value"] - chance) / stderr if stderr > 0 else (math.inf if out["value"] > chance else -math.inf)
    out["p_vs_chance"] = 0.5 * math.erfc(z / math.sqrt(2))
    return out


def choices_only_sentence(block: dict[str, Any]) -> str:
    """The report's line: "options alone predict the answer 41% of the time (chance 25%)" when above
    chance with p < SURE, else the figure beside its baselines."""
    if block.get("value") is None:
        return f"n/a ({block.get('reason', 'not computed')})"
    value, chance, majority = (round(100 * block[k]) for k in ("value", "chance", "majority"))
    p = block.get("p_vs_chance")
    shown = "" if p is None else ("p < 0.001" if p < 0.001 else f"p = {p:.2g}")
    err = f" ± {100 * block['stderr']:.1f}" if block.get("stderr") is not None else ""
    if p is not None and p < SURE and block["value"] > block["chance"]:
        return (f"options alone predict the answer {value}% of the time (chance {chance}%; majority baseline "
                f"{majority}%; {shown}): the question is not needed for part of the answers")
    return (f"with the question removed, {100 * block['value']:.1f}%{err} right (chance {chance}%, majority "
            f"baseline {majority}%{'; ' + shown if shown else ''}): no sign the options alone give the answer away")
