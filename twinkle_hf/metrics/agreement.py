"""``letter_text_agreement``: is the letter a model scores the letter it writes? (Wang et al. 2024,
"My Answer is C: First-Token Probabilities Do Not Match Text Answers in Instruction-Tuned Language
Models", arXiv 2402.14499). A pure function of predictions of ``--method logit+box|pattern|regex``:
``pred`` is the letter with the highest next-token probability, ``pred_written`` the letter read
from the model's own answer to the same question in the same option order (-1: none read).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import LETTERS, UNPARSED, Predictions
from .accuracy import accuracy, accuracy_interval
from .intervals import proportion_interval
from .uncertainty import clustered_stderr, question_codes, question_means

SOURCE = "Wang et al. 2024, arXiv 2402.14499 (first-token probability vs the written answer)"
MOSTLY = 0.9  # the report calls agreement this high "mostly the same letter"


def letter_text_agreement(preds: Predictions, small_n: int = 30) -> dict[str, Any]:
    """How often the scored letter equals the written one, over the permuted rows.

    The share counts the rows a letter was read from: per question the mean over its orders, then
    over questions, with the stderr clustered by question. The unparsed rows are counted apart.
    Also both accuracies (``scored``: the letters' accuracy; ``written``: the written answers',
    unparsed counted wrong, as generation mode counts them) and the confusion counts
    ``confusion[scored][written]`` (written: a letter or "unparsed")."""
    preds = preds.select(preds.order_index >= 0)  # the permuted rows, as ``accuracy`` counts them
    if not len(preds):
        return {"value": None, "reason": "no permuted rows", "source": SOURCE}
    assert preds.letters is not None and preds.letters.pred_written is not None
    written, scored = preds.letters.pred_written, preds.pred
    parsed = written >= 0
    k = int(preds.num_choices.max())
    confusion = {LETTERS[i]: {**{LETTERS[j]: int(np.sum((scored == i) & (written == j))) for j in range(k)},
                              UNPARSED: int(np.sum((scored == i) & ~parsed))} for i in range(k)}
    question = question_codes(preds)
    both = {}
    for name, pred in (("scored", scored), ("written", written)):
        acc = accuracy(question, preds.order_index, pred == preds.answer)
        both[name] = {**acc, **accuracy_interval(acc, small_n)}
    out: dict[str, Any] = {"rows": len(preds), "unparsed": int(np.sum(~parsed)),
                           "unparsed_rate": float(np.mean(~parsed)),
                           "accuracy": both, "confusion": confusion, "source": SOURCE}
    if not parsed.any():
        return {"value": None, "reason": "no letter was read from any written answer: nothing to compare", **out}
    sub = preds.select(parsed)
    assert sub.letters is not None and sub.letters.pred_written is not None
    q = question_codes(sub)
    y = question_means(q, (sub.pred == sub.letters.pred_written).astype(np.float64))
    out.update(value=float(y.mean()), n_questions=len(y))
    if len(y) < 2:
        return {**out, "stderr_reason": "one question: no error bar", **proportion_interval(out["value"], 1, None)}
    stderr = clustered_stderr(y)
    return {**out, "stderr": stderr, **proportion_interval(out["value"], len(y), stderr, small_n)}


def agreement_sentence(block: dict[str, Any]) -> str:
    """The report's line, e.g. "the scored letter is the written one in 62% of answers (± 3.1;
    4% of answers had no letter): scored accuracy 41%, written 35%"."""
    if block.get("value") is None:
        return f"n/a ({block.get('reason', 'not computed')})"
    err = f" ± {100 * block['stderr']:.1f}" if block.get("stderr") is not None else ""
    accs = block["accuracy"]
    pct = lambda a: "n/a" if a.get("value") is None else f"{100 * a['value']:.1f}%"
    gist = ("mostly the same letter" if block["value"] >= MOSTLY
            else "the letter it scores is often not the one it writes")
    return (f"the scored letter is the written one in {100 * block['value']:.1f}%{err} of answers "
            f"({100 * block['unparsed_rate']:.0f}% of answers had no letter, counted apart): {gist}; accuracy "
            f"scored {pct(accs['scored'])}, written {pct(accs['written'])}")


def confusion_table(block: dict[str, Any]) -> list[str]:
    """report.md's table: one row per scored letter, one column per written letter and unparsed."""
    confusion = block.get("confusion") or {}
    if not confusion:
        return []
    columns = list(next(iter(confusion.values())))
    lines = ["| scored \\ written | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {s} | " + " | ".join(str(row[c]) for c in columns) + " |" for s, row in confusion.items()]
    return lines
