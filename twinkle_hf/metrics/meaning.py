"""What the shuffle kept of each question's meaning (prompts/anchors.py), counted per group.

The groups: the questions with an option kept at its letter ("all of the above"), those with letter
references rewritten ("Both A and C"), and those with their original order kept in every order. A
pure function of predictions."""

from __future__ import annotations

from typing import Any

from ..schema import Predictions, plural
from .uncertainty import question_key_strings

RULE = ("options that name their place keep their letter (the others move within their run of free slots); "
        "letter references name where their options now stand; a question whose text names options by letter "
        "keeps its order")
WHERE = "predictions.jsonl: the rows of these questions carry pinned, rewritten or fixed_order"


def option_meaning(preds: Predictions) -> dict[str, Any] | None:
    """The counts of a group's affected questions (None when no question is affected)."""
    if preds.pinned is None or not len(preds):
        return None
    keys = question_key_strings(preds)
    has = lambda column: {k for k, v in zip(keys, column) if v}
    pinned = has(preds.pinned)
    rewritten = has(preds.rewritten or [])
    fixed = has(preds.order_fixed)
    affected = pinned | rewritten | fixed
    if not affected:
        return None
    n = len(set(keys))
    return {"questions": len(affected), "share": len(affected) / n, "n_questions": n, "pinned": len(pinned),
            "rewritten": len(rewritten), "fixed_order": len(fixed), "rule": RULE, "where": WHERE}


def meaning_sentence(block: dict[str, Any]) -> str:
    """The report's line, e.g. "37 questions (4.1%) have options that name their place or other
    options: 30 kept at their letter, 9 with letters rewritten (see docs/orders.md)"."""
    parts = [f"{block['pinned']} with an option kept at its letter" if block.get("pinned") else "",
             f"{block['rewritten']} with letter references rewritten" if block.get("rewritten") else "",
             f"{block['fixed_order']} kept in their original order" if block.get("fixed_order") else ""]
    share = 100 * float(block.get("share") or 0)
    verb = "has" if block["questions"] == 1 else "have"
    return (f"{plural(block['questions'], 'question')} ({share:.1f}%) {verb} options that name their place or "
            f"other options: {', '.join(p for p in parts if p)}, so that a shuffle does not change the question "
            f"(docs/orders.md; `--keep-option-meaning off` shuffles every option as written)")



def meaning_lines(metrics: dict[str, Any]) -> list[str]:
    """The reports' "Options:" line for a metrics block (none when no question was affected), with the
    scope of the letter statistics where they left questions out."""
    meaning = metrics.get("option_meaning")
    if not meaning:
        return []
    scope = (metrics.get("bias_scope") or {}).get("left_out")
    return [f"Options: {meaning_sentence(meaning)}{'; ' + scope if scope else ''}."]
