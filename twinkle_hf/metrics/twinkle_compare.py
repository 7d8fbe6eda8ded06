"""The same generated answers read twice: by twinkle_hf's extraction and by Twinkle Eval's.

A user coming from Twinkle Eval sees a different number; this says how much of the difference is the
reading of the answers (the "coming from Twinkle Eval" block of the reports). A pure function of the
predictions, so ``twinkle-hf report RUN_DIR`` rebuilds it from predictions.jsonl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..schema import LETTERS, Predictions
from ..settings.values import compile_answer_regex
from .extract import extract
from .twinkle_extract import twinkle_letter, twinkle_patterns

MOST_EXAMPLES = 10
TAIL = 160  # characters of an answer's end shown in an example


def compare_extractions(p: Predictions, method: str, answer_regex: str | Sequence[str] | None = None,
                        most: int = MOST_EXAMPLES) -> dict[str, Any]:
    """Accuracy under each reading, over the answers Twinkle Eval would score.

    Those are every order but the original one a shuffled run adds. Also how many answers the two
    read as different letters, and the first ``most`` of those (the answer's end, both letters,
    the gold one)."""
    if p.generation is None:
        raise ValueError("comparing extractions needs generated answers (generation mode)")
    output = p.generation.output
    rows = np.flatnonzero(p.order_index >= 0)
    regex = compile_answer_regex(answer_regex) if answer_regex else None
    patterns = twinkle_patterns(method, answer_regex)
    ours, theirs, gold = [], [], []
    for r in rows.tolist():
        index = extract(output[r], len(p.perm[r]), method, regex).pred
        ours.append(LETTERS[index] if index >= 0 else None)
        theirs.append(twinkle_letter(output[r], patterns))
        gold.append(LETTERS[int(p.answer[r])])
    differ = [j for j in range(len(rows)) if ours[j] != theirs[j]]
    n = len(rows)
    return {
        "answers": n,
        "accuracy_twinkle_hf": sum(o == g for o, g in zip(ours, gold)) / n if n else None,
        "accuracy_twinkle": sum(t == g for t, g in zip(theirs, gold)) / n if n else None,
        "unparsed_twinkle_hf": sum(o is None for o in ours),
        "unparsed_twinkle": sum(t is None for t in theirs),
        "different_letters": len(differ),
        "examples": [{"dataset": p.dataset[rows[j]], "id": p.id[rows[j]], "order": int(p.order_index[rows[j]]),
                      "output_end": output[rows[j]][-TAIL:], "twinkle_hf": ours[j], "twinkle": theirs[j],
                      "gold": gold[j]} for j in differ[:most]],
    }
