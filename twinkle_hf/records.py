"""predictions.jsonl: one record per (question, permutation), written and read back.

Kept apart from the reports so that reading a finished run (`report`, `compare`) needs no model
stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .errors import TwinkleError
from .schema import Predictions


def prediction_records(p: Predictions) -> Iterator[dict[str, Any]]:
    """One JSON-ready dict per (question, permutation): the predictions.jsonl contract."""
    answer_original, pred_original = p.answer_original, p.pred_original
    for r in range(len(p)):
        record = {
            "dataset": p.dataset[r], "id": p.id[r], "subject": p.subject[r], "seed": int(p.perm_index[r]),
            "perm": list(p.perm[r]), "answer": int(p.answer[r]), "pred": int(p.pred[r]),
            "correct": bool(p.answer[r] == p.pred[r]),
            "probs": [float(x) for x in p.probs[r]],  # full precision: `report` recomputes from these
            "answer_original": int(answer_original[r]), "pred_original": int(pred_original[r]),
            "letter_mass": float(p.letter_mass[r]),
        }
        if p.prompt is not None:
            record["prompt"] = p.prompt[r]
        yield record


def read_predictions(path: str | Path) -> Predictions:
    """Predictions back from a predictions.jsonl (the inverse of :func:`prediction_records`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; is this a twinkle_hf run directory?")
    cols: dict[str, list] = {k: [] for k in ("dataset", "id", "subject", "seed", "perm", "answer", "pred",
                                             "probs", "letter_mass")}
    prompts: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                record = json.loads(line)
                for key, values in cols.items():
                    values.append(record[key])
            except (json.JSONDecodeError, KeyError) as err:
                raise TwinkleError(f"{path}: line {number} is not a prediction record ({err})") from None
            if "prompt" in record:
                prompts.append(record["prompt"])
    return Predictions(
        dataset=cols["dataset"], id=cols["id"], subject=cols["subject"],
        perm_index=np.asarray(cols["seed"], dtype=np.int64), perm=cols["perm"],
        answer=np.asarray(cols["answer"], dtype=np.int64), pred=np.asarray(cols["pred"], dtype=np.int64),
        probs=[np.asarray(p, dtype=np.float64) for p in cols["probs"]],
        letter_mass=np.asarray(cols["letter_mass"], dtype=np.float64),
        prompt=prompts if prompts and len(prompts) == len(cols["id"]) else None,
    )
