"""Crash-safe runs: predictions are appended per process as batches finish, and `--resume`
scores only what is missing.

``<output-dir>/.partial/`` holds ``run.json`` (the settings, weights and data that decide the
predictions) and ``scores.<rank>.jsonl`` (one line per finished row, written as predictions.jsonl
writes it: records.SCORE_KEYS, then the option probabilities, or in generation mode the text).
A finished run writes its reports and removes the folder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TwinkleError, read_document
from ..schema import CLOZE
from .records import SCORE_KEYS, read_rows, row_line

PARTIAL = ".partial"
# settings that do not change what is predicted (a batch size or a tensor-parallel split moves a probability
# by float rounding only, as a process count does): a run may resume under others
IGNORED = ("output_dir", "overwrite", "offline", "batch_size", "twinkle_results", "pass_k", "tensor_parallel")

Key = tuple[str, str, int, int]  # (dataset, id, order index, sample)


def run_identity(config: dict[str, Any], model_fingerprint: str | None, model_revision: str | None = None,
                 data_fingerprint: str | None = None) -> dict[str, Any]:
    """What must match for a resumed run to continue the same evaluation: the settings, the
    weights (fingerprint.py), the hub commit they came from, and the rows of the datasets."""
    return {**{k: v for k, v in config.items() if k not in IGNORED}, "model_fingerprint": model_fingerprint,
            "model_revision": model_revision, "data_fingerprint": data_fingerprint}


Done = dict[Key, dict[str, Any]]  # rows finished before: their saved values (probs as an array)


def cloze_key(dataset: str, qid: str, option: int) -> Key:
    """The key of one option of a cloze question (``formulation`` cloze): apart from every letter
    row's, which a run of ``--method logit+cloze`` saves in the same file."""
    return (f"{dataset}\x00{CLOZE}", qid, option, 0)


def written_name(dataset: str, tag: str | None) -> str:
    """The dataset part of the keys of a logit+X run's written answers (``formulation`` X): apart from
    its scored rows, which have the same (id, order)."""
    return dataset if tag is None else f"{dataset}\x00{tag}"


def row_key(record: Mapping[str, Any]) -> Key:
    """The key of a saved row: (dataset, id, order, sample), or a cloze option's :func:`cloze_key`."""
    formulation = record.get("formulation")
    if formulation == CLOZE:
        return cloze_key(record["dataset"], record["id"], int(record["option"]))
    return (written_name(record["dataset"], formulation), record["id"], int(record["order"]),
            int(record.get("sample", 0)))


class RunLog:
    """The partial results of one run in ``<output-dir>/.partial`` (one writer per process).

    ``state``: the accelerate state of a multi-process run (None: one process). The main process
    alone checks the saved settings and reads what is done, before any process scores a row, and
    hands both to the others: read by each process in turn, a later reader could already see rows
    of this very run, and the processes would share out different "still to score" lists.
    """

    def __init__(self, output_dir: str | Path, identity: dict[str, Any], resume: bool, state: Any = None) -> None:
        from ..runtime.processes import broadcast, is_main

        self.folder = Path(output_dir) / PARTIAL
        self.rank = state.process_index if state is not None else 0
        decided = self._start(identity, resume) if is_main(state) else None
        error, self.done = broadcast(state, decided)
        if error:
            raise TwinkleError(error)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.folder / f"scores.{self.rank}.jsonl", "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def _start(self, identity: dict[str, Any], resume: bool) -> tuple[str | None, Done]:
        """(why the run cannot go on, or None; the rows already scored). Main process only."""
        saved = self.folder / "run.json"
        output_dir = self.folder.parent
        try:
            if saved.is_file():
                if not resume:
                    raise TwinkleError(f"{output_dir} holds an unfinished run; add --resume to continue "
                                       f"it, or choose another --output-dir")
                _check_same(_read_settings(saved), identity, saved)
            elif resume:
                raise TwinkleError(f"--resume: {output_dir} holds no unfinished run "
                                   f"(no {PARTIAL}/run.json); drop --resume to start it")
            else:
                self.folder.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps(identity, indent=1, default=str), encoding="utf-8")
        except TwinkleError as err:
            return str(err), {}
        return None, self._read() if resume else {}

    def _read(self) -> Done:
        """Rows scored before, from every process's file (any process count); a torn last line is
        dropped (it will be scored again)."""
        done: Done = {}
        for path in sorted(self.folder.glob("scores.*.jsonl")):
            for r in read_rows(path, SCORE_KEYS, skip_bad=True):
                if "probs" in r:
                    r["probs"] = np.asarray(r["probs"], dtype=np.float64)
                done[row_key(r)] = r
        return done

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Save finished rows (records.ROW_FIELDS values, at least SCORE_KEYS) and flush: called
        after each batch, so a crash loses at most the batch in flight."""
        for values in rows:
            self._fh.write(row_line(values))
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def finish(self) -> None:
        """The run is complete and its reports are written: the partial results can go."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _read_settings(path: Path) -> dict[str, Any]:
    return read_document(path, json.loads, f"--resume: {path} cannot be read ({{err}}); start afresh in another "
                         "--output-dir", f"--resume: {path} disappeared")


def _check_same(saved: dict[str, Any], identity: dict[str, Any], path: Path) -> None:
    """Refuse to mix two evaluations: name every setting that changed (changed values first)."""
    now = json.loads(json.dumps(identity, default=str))
    differ = [k for k in sorted(set(saved) | set(now)) if saved.get(k) != now.get(k)]
    if differ:
        differ.sort(key=lambda k: (k not in saved or k not in now, k))
        shown = "; ".join(f"{k}: was {saved.get(k)!r}, now {now.get(k)!r}" for k in differ[:8])
        more = f" (and {len(differ) - 8} more)" if len(differ) > 8 else ""
        raise TwinkleError(f"--resume: {len(differ)} setting(s) differ from the interrupted run: {shown}{more}; "
                           f"rerun with the same settings, or start afresh in another --output-dir "
                           f"(saved settings: {path})")
