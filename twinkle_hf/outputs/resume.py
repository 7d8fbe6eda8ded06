"""Crash-safe runs: predictions are appended per process as batches finish, and `--resume`
scores only what is missing.

``<output-dir>/.partial/`` holds ``run.json`` (the settings, weights and data that decide the
predictions) and ``scores.<rank>.jsonl`` (one line per finished row, with the fields each
formulation saves: formulations/; the keys they share are written as predictions.jsonl writes them).
A finished run writes its reports and removes the folder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import TwinkleError, read_document
from ..formulations.keys import Key, row_key
from .records import ROW_FIELDS, SCORE_KEYS, read_rows, row_line

PARTIAL = ".partial"
# settings that do not change what is predicted (a batch size or a tensor-parallel split moves a probability
# by float rounding only, as a process count does): a run may resume under others
IGNORED = ("output_dir", "overwrite", "offline", "batch_size", "twinkle_results", "pass_k", "tensor_parallel",
           "report_to")

RESUME_FORMAT = 2  # the saved rows' shape; a run saved in another cannot be continued
_ints = lambda values: [int(x) for x in values]
# A saved row holds predictions.jsonl's fields of its formulation, and what only resuming needs:
# which option of its question a cloze row scored, that option's token log-probabilities and
# whether each token was the top one, and the token ids of a written answer.
SAVED_FIELDS: dict[str, Callable[[Any], Any]] = {
    **ROW_FIELDS, "option": int, "token_logp": lambda v: [float(x) for x in v], "greedy": bool, "tokens": _ints}


def run_identity(config: dict[str, Any], model_fingerprint: str | None, model_revision: str | None = None,
                 data_fingerprint: str | None = None) -> dict[str, Any]:
    """What must match for a resumed run to continue the same evaluation: the settings, the
    weights (fingerprint.py), the hub commit they came from, and the rows of the datasets."""
    return {**{k: v for k, v in config.items() if k not in IGNORED}, "model_fingerprint": model_fingerprint,
            "model_revision": model_revision, "data_fingerprint": data_fingerprint, "resume_format": RESUME_FORMAT}


Done = dict[Key, dict[str, Any]]  # rows finished before: their saved values, as saved


class RunLog:
    """The partial results of one run in ``<output-dir>/.partial`` (one writer per process).

    ``state``: the accelerate state of a multi-process run (None: one process). The main process
    alone checks the saved settings and reads what is done, before any process scores a row, and
    hands both to the others: read by each process in turn, a later reader could already see rows
    of this very run, and the processes would share out different "still to score" lists.
    """

    complete = False  # rows missing from ``done`` are run (formulations/driver.py)

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
                settings = _read_settings(saved)
                _check_format(settings, output_dir)
                _check_same(settings, identity, saved)
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
        return saved_rows(self.folder)

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Save finished rows (records.ROW_FIELDS values, at least SCORE_KEYS) and flush: called
        after each batch, so a crash loses at most the batch in flight."""
        for values in rows:
            self._fh.write(row_line(values, SAVED_FIELDS))
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def finish(self) -> None:
        """The run is complete and its reports are written: the partial results can go."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def saved_rows(folder: Path) -> Done:
    """Rows scored before, from every process's file in ``folder`` (any process count); a torn last
    line is dropped (it will be scored again)."""
    done: Done = {}
    for path in sorted(folder.glob("scores.*.jsonl")):
        for r in read_rows(path, SCORE_KEYS, skip_bad=True):
            done[row_key(r)] = r
    return done


def _read_settings(path: Path) -> dict[str, Any]:
    return read_document(path, json.loads, f"--resume: {path} cannot be read ({{err}}); start afresh in another "
                         "--output-dir", f"--resume: {path} disappeared")


def _check_format(saved: dict[str, Any], output_dir: Path) -> None:
    """Refuse, in one line, rows saved in a shape this version does not read."""
    found = saved.get("resume_format", 1)
    if found != RESUME_FORMAT:
        raise TwinkleError(f"--resume: {output_dir} holds an unfinished run saved by another twinkle_hf version "
                           f"(resume format {found}; this version reads {RESUME_FORMAT}); start it again with "
                           f"--overwrite, or in another --output-dir")


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
