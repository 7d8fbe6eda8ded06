"""The files of a run, read back without the model stack: one JSON line per scored row
(predictions.jsonl, and resume.py's ``scores.<rank>.jsonl``, which holds a subset of the same keys
written the same way), and results.json (older format versions upgraded on reading).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TwinkleError, read_document
from ..schema import CLOZE, ClozeColumns, GenerationColumns, LetterColumns, Predictions

# results.json's format version; "Output format versions" in the README says what each changed.
FORMAT_VERSION = 2
_floats = lambda values: [float(x) for x in values]  # full precision: `report` recomputes from these
# Every key a row line may hold, in the order it is written, with its JSON encoding. "seed" is the
# order index under the name the output contract (docs/design.md) gives it (an alias of "order").
ROW_FIELDS: dict[str, Callable[[Any], Any]] = {
    "dataset": str, "id": str, "subject": str, "order": int, "seed": int, "sample": int,
    "perm": lambda p: [int(x) for x in p], "answer": int, "pred": int, "correct": bool, "probs": _floats,
    "answer_original": int, "pred_original": int,
    "letter_mass": float, "prompt": str, "output": str, "reasoning": str, "parsed": bool, "truncated": bool,
    "new_tokens": int, "file": str, "row": int, "prompt_tokens": int, "pred_choices_only": int,
    "pred_written": int, "written": str,  # logit+X: the letter read from the written answer, and its text
    # cloze rows
    "formulation": str, "loglik": _floats, "pred_norm": int, "pred_bytes": int,
    # what the shuffle kept of the question's meaning (only on the rows of such questions)
    "pinned": lambda p: [int(x) for x in p], "rewritten": lambda p: [int(x) for x in p], "fixed_order": bool,
    "true_options": lambda t: [int(x) for x in t],  # TruthfulQA MC2: every true option (original index)
}
SCORE_KEYS = ("dataset", "id", "order", "perm")  # what every saved row of a resumable run holds


def row_line(values: Mapping[str, Any], fields: Mapping[str, Callable[[Any], Any]] = ROW_FIELDS) -> str:
    """One JSON line from a row's values (any subset of ``fields``, written in that order)."""
    unknown = set(values) - set(fields)
    if unknown:
        raise ValueError(f"not row fields: {sorted(unknown)}")
    return _line({k: enc(values[k]) for k, enc in fields.items() if k in values})


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def read_rows(path: Path, keys: tuple[str, ...], skip_bad: bool = False) -> Iterator[dict[str, Any]]:
    """The rows of a JSON-lines file that hold every one of ``keys`` (a file of format 1 names the
    order "seed" only). A line that is not such a row is an error, or with ``skip_bad`` (a torn
    last line of an interrupted run) passed over."""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                record = json.loads(line)
                if "order" not in record and "seed" in record:
                    record["order"] = record["seed"]
                missing = [k for k in keys if k not in record]
                if missing:
                    raise KeyError(", ".join(missing))
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                if skip_bad:
                    continue
                raise TwinkleError(f"{path}: line {number} is not a prediction record ({err!r})") from None
            yield record


def prediction_records(p: Predictions) -> Iterator[dict[str, Any]]:
    """One dict per (question, order[, sample]): the predictions.jsonl contract (values as :func:`row_line`
    writes them)."""
    answer_original, pred_original, samples = p.answer_original, p.pred_original, p.samples
    letters, generation, cloze = p.letters, p.generation, p.cloze
    for r in range(len(p)):
        order = int(p.order_index[r])
        values = {
            "dataset": p.dataset[r], "id": p.id[r], "subject": p.subject[r], "order": order, "seed": order,
            "perm": p.perm[r], "answer": p.answer[r], "pred": p.pred[r], "correct": p.answer[r] == p.pred[r],
            "answer_original": answer_original[r], "pred_original": pred_original[r],
        }
        is_cloze = p.formulation is not None and p.formulation[r] == CLOZE
        if letters is not None and not is_cloze:
            values.update(probs=letters.probs[r], letter_mass=letters.letter_mass[r])
        if generation is not None:  # no option probabilities: the text, what was read from it, and how it ended
            values.update(output=generation.output[r], reasoning=generation.reasoning[r], parsed=p.pred[r] >= 0,
                          truncated=generation.truncated[r], new_tokens=generation.new_tokens[r], sample=samples[r])
        if p.formulation is not None:  # a run that scores option texts: each row says which formulation it is
            values["formulation"] = p.formulation[r]
            if is_cloze and cloze is not None:  # no letters: the options' log-likelihoods and lm-eval's picks
                values.update(loglik=cloze.loglik[r], pred_norm=cloze.pred_norm[r], pred_bytes=cloze.pred_bytes[r])
        if p.prompt is not None:
            values["prompt"] = p.prompt[r]
        if p.file is not None and p.row is not None:
            values.update(file=p.file[r], row=p.row[r])
        if p.prompt_tokens is not None:
            values["prompt_tokens"] = p.prompt_tokens[r]
        if letters is not None and letters.pred_choices_only is not None:
            values["pred_choices_only"] = letters.pred_choices_only[r]
        if letters is not None and letters.pred_written is not None and letters.written is not None:
            values.update(pred_written=letters.pred_written[r], written=letters.written[r])
        values.update(_meaning(p, r))
        if p.true_options is not None and p.true_options[r]:
            values["true_options"] = p.true_options[r]
        yield {k: enc(values[k]) for k, enc in ROW_FIELDS.items() if k in values}


def _meaning(p: Predictions, r: int) -> dict[str, Any]:
    """A row's pinned options, rewritten references and fixed order, where it has any (most rows: none)."""
    out: dict[str, Any] = {}
    if p.pinned is not None and p.pinned[r]:
        out["pinned"] = p.pinned[r]
    if p.rewritten is not None and p.rewritten[r]:
        out["rewritten"] = p.rewritten[r]
    if p.fixed_order is not None and p.fixed_order[r]:
        out["fixed_order"] = True
    return out


def write_predictions(p: Predictions, path: Path) -> None:
    """predictions.jsonl: one line per (question, order)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(_line(record) for record in prediction_records(p))


def read_predictions(path: str | Path) -> Predictions:
    """Predictions back from a predictions.jsonl (the inverse of :func:`prediction_records`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; is this a twinkle_hf run directory?")
    common = ("dataset", "id", "subject", "order", "perm", "answer", "pred")
    rows = list(read_rows(path, common))
    generated = bool(rows) and "output" in rows[0]
    for number, record in enumerate(rows, start=1):
        cloze = record.get("formulation") == CLOZE
        needs = ("loglik", "pred_norm", "pred_bytes") if cloze else \
            ("output", "reasoning", "truncated", "new_tokens") if generated else ("probs", "letter_mass")
        missing = [k for k in needs if k not in record]
        if missing:
            mode = "cloze" if cloze else "generation" if generated else "logit"
            raise TwinkleError(f"{path}: line {number} has no {', '.join(missing)} (every {mode} row has them)")
    prompts = [r["prompt"] for r in rows if "prompt" in r]
    n = len(rows)
    every = lambda key: bool(rows) and all(key in r for r in rows)  # optional fields: kept when no row lacks them
    return Predictions(
        dataset=[r["dataset"] for r in rows], id=[r["id"] for r in rows], subject=[r["subject"] for r in rows],
        order_index=np.asarray([r["order"] for r in rows], dtype=np.int64), perm=[r["perm"] for r in rows],
        answer=np.asarray([r["answer"] for r in rows], dtype=np.int64),
        pred=np.asarray([r["pred"] for r in rows], dtype=np.int64),
        letters=_letter_columns(rows, every) if not generated and any("probs" in r for r in rows) else None,
        generation=GenerationColumns(
            [r["output"] for r in rows], [r["reasoning"] for r in rows],
            np.asarray([r["truncated"] for r in rows], dtype=bool), np.asarray([r["new_tokens"] for r in rows],
                                                                             dtype=np.int64),
            np.asarray([r.get("sample", 0) for r in rows], dtype=np.int64)) if generated else None,
        cloze=ClozeColumns([np.asarray(r.get("loglik", []), dtype=np.float64) for r in rows],
                           np.asarray([r.get("pred_norm", -1) for r in rows], dtype=np.int64),
                           np.asarray([r.get("pred_bytes", -1) for r in rows], dtype=np.int64))
        if any(r.get("formulation") == CLOZE for r in rows) else None,
        formulation=[r["formulation"] for r in rows] if every("formulation") else None,
        prompt=prompts if prompts and len(prompts) == n else None,
        file=[r["file"] for r in rows] if every("file") else None,
        row=np.asarray([r["row"] for r in rows], dtype=np.int64) if every("file") else None,
        prompt_tokens=np.asarray([r["prompt_tokens"] for r in rows], dtype=np.int64) if every("prompt_tokens")
        else None,
        pinned=[list(r.get("pinned", [])) for r in rows], rewritten=[list(r.get("rewritten", [])) for r in rows],
        fixed_order=np.asarray([bool(r.get("fixed_order", False)) for r in rows], dtype=bool),
        true_options=[tuple(r.get("true_options", ())) for r in rows] if any("true_options" in r for r in rows)
        else None,
    )


def _letter_columns(rows: list[dict[str, Any]], every: Callable[[str], bool]) -> LetterColumns:
    """The letter columns of a run's rows (cloze rows of the same run: none, NaN)."""
    return LetterColumns(
        [np.asarray(r.get("probs", []), dtype=np.float64) for r in rows],
        np.asarray([r.get("letter_mass", float("nan")) for r in rows], dtype=np.float64),
        pred_choices_only=np.asarray([r["pred_choices_only"] for r in rows], dtype=np.int64)
        if every("pred_choices_only") else None,
        pred_written=np.asarray([r["pred_written"] for r in rows], dtype=np.int64) if every("pred_written") else None,
        written=[r["written"] for r in rows] if every("pred_written") else None)


def _upgrade_block(m: dict[str, Any]) -> None:
    """A format-1 metrics block in today's shape: accuracy blocks under ``value``/``per_order``,
    a missing acc_original as a block with its reason, accuracy_macro as a block."""
    for key in ("accuracy", "acc_original"):
        block = m.get(key)
        if block is None and key == "acc_original":
            m[key] = {"value": None, "reason": "the original order was not scored"}
        elif isinstance(block, dict) and "value" not in block:
            block["value"] = block.get("mean")
            if "per_seed" in block:
                block["per_order"] = block["per_seed"]
    macro = m.get("accuracy_macro")
    if not isinstance(macro, dict) and "accuracy_macro" in m:
        m["accuracy_macro"] = {"value": macro}


def read_results(path: str | Path) -> dict[str, Any]:
    """A results.json, its metric blocks in the current shape whatever format version wrote it."""
    path = Path(path)
    doc = read_document(path, json.loads, f"{path} is not a results document ({{err}})",
                        f"{path} does not exist; pass a twinkle_hf run directory")
    if doc.get("format_version", 1) < FORMAT_VERSION:
        _upgrade_block(doc.get("metrics") or {})
        for entry in (doc.get("datasets") or {}).values():
            _upgrade_block(entry.get("metrics") or {})
            for subject in (entry.get("subjects") or {}).values():
                _upgrade_block(subject)
    return doc
