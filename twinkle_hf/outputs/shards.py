"""The folder of one ``--shard K/N`` run, and the checks that N such folders are one run.

A shard writes ``shard.json`` (its manifest: K, N, the run's identity as resume.py reads it, the
model, rows expected and written, finished or not, its timing) and ``rows.jsonl`` (its rows, as a
resumable run saves them: predictions.jsonl's fields of each formulation's row, plus what rebuilding
a prediction needs). No results.json: metrics belong to the whole run, which ``merge`` computes.
While it runs, its rows are in ``.partial/`` as any run's, so ``--resume`` works per shard.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TwinkleError, read_document
from ..formulations.keys import row_key
from .records import SCORE_KEYS, read_rows, row_line
from .resume import PARTIAL, SAVED_FIELDS, Done, saved_rows

SHARD_FILE = "shard.json"
ROWS_FILE = "rows.jsonl"
SHARD_FORMAT = 1
FIRST_NAMED = ("model_fingerprint", "model_revision", "data_fingerprint", "model")  # the differences said first


@dataclass(frozen=True)
class Shard:
    """One shard's manifest, as read from its folder."""

    folder: Path
    index: int
    count: int
    finished: bool
    rows_expected: int | None
    rows_written: int
    identity: dict[str, Any]  # resume.run_identity without the shard: equal across the shards of one run
    config: dict[str, Any]
    model: dict[str, Any] | None
    timing: dict[str, Any] | None

    @property
    def name(self) -> str:
        return f"shard {self.index}/{self.count} ({self.folder})"


def write_manifest(out: Path, shard: tuple[int, int], identity: dict[str, Any], config: dict[str, Any],
                   model: dict[str, Any] | None, *, rows_expected: int | None = None, rows_written: int = 0,
                   timing: dict[str, Any] | None = None) -> None:
    """``shard.json``: unfinished while ``timing`` is None (written when the shard starts), finished
    with it. Written whole to a temporary file and renamed, so a reader never sees half of it."""
    doc = {"shard_format": SHARD_FORMAT, "shard": {"index": shard[0], "count": shard[1]},
           "finished": timing is not None, "rows_expected": rows_expected, "rows_written": rows_written,
           "identity": {k: v for k, v in identity.items() if k != "shard"}, "config": config, "model": model,
           "timing": timing}
    tmp = out / f"{SHARD_FILE}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out / SHARD_FILE)


def save_rows(out: Path) -> int:
    """``rows.jsonl`` from the rows the shard's processes saved in ``.partial/`` (a resumed shard's
    too, each row once); returns how many."""
    done = saved_rows(out / PARTIAL)
    tmp = out / f"{ROWS_FILE}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(row_line(values, SAVED_FIELDS) for values in done.values())
    os.replace(tmp, out / ROWS_FILE)
    return len(done)


def read_shard(folder: Path) -> Shard:
    """The manifest of the shard in ``folder``; a folder that holds none is one line saying what it holds."""
    path = folder / SHARD_FILE
    if not folder.is_dir():
        raise TwinkleError(f"merge: {folder} is not a folder; pass the --output-dir of each --shard run")
    if not path.is_file():
        what = "a finished run made without --shard" if (folder / "results.json").is_file() else "no shard.json"
        raise TwinkleError(f"merge: {folder} holds {what}: not the folder of a --shard K/N run")
    doc = read_document(path, json.loads, f"merge: {path} cannot be read ({{err}}); run the shard again",
                        f"merge: {path} disappeared")
    try:
        return Shard(folder=folder, index=int(doc["shard"]["index"]), count=int(doc["shard"]["count"]),
                     finished=bool(doc["finished"]) and not (folder / PARTIAL / "run.json").is_file(),
                     rows_expected=doc["rows_expected"], rows_written=int(doc["rows_written"]),
                     identity=dict(doc["identity"]), config=dict(doc["config"]), model=doc["model"],
                     timing=doc["timing"])
    except (KeyError, TypeError, ValueError) as err:
        raise TwinkleError(f"merge: {path} is not a shard manifest (missing or bad {err}); run the shard "
                           f"again") from None


def check_shards(shards: list[Shard]) -> None:
    """The shards are one run, each finished, 0..N-1 each once: else one line naming the shard and
    what differs."""
    for s in shards:
        if not s.finished or s.rows_written != s.rows_expected:
            raise TwinkleError(f"merge: {s.name} is not finished ({s.rows_written} of {s.rows_expected or '?'} rows "
                               f"written); finish it (the same command with --resume) and merge again")
    first = shards[0]
    for s in shards[1:]:
        if s.count != first.count:
            raise TwinkleError(f"merge: {s.name} splits the run {s.count} ways but {first.name} {first.count} ways; "
                               f"merge the shards of one split")
    seen: dict[int, Shard] = {}
    for s in shards:
        if s.index in seen:
            raise TwinkleError(f"merge: shard {s.index}/{s.count} is given twice: {seen[s.index].folder} and "
                               f"{s.folder}; pass each shard once")
        seen[s.index] = s
    missing = [f"{k}/{first.count}" for k in range(first.count) if k not in seen]
    if missing:
        raise TwinkleError(f"merge: shard {', '.join(missing)} missing (given {len(shards)} of {first.count}: "
                           f"{', '.join(str(k) for k in sorted(seen))}); run it, or pass its folder")
    for s in shards[1:]:
        keys = sorted(set(s.identity) | set(first.identity))
        differ = [k for k in keys if s.identity.get(k) != first.identity.get(k)]
        if differ:
            differ.sort(key=lambda k: (k not in FIRST_NAMED, k))
            shown = "; ".join(f"{k} {s.identity.get(k)!r} vs {first.identity.get(k)!r}" for k in differ[:4])
            raise TwinkleError(f"merge: {s.name} is not the same run as {first.name}: {shown}; merge the shards "
                               f"of one run (same settings, data and model)")


def shard_rows(shards: list[Shard]) -> Done:
    """Every shard's rows by resume key (formulations/keys.py); a rows file that disagrees with its
    manifest is refused."""
    done: Done = {}
    for s in shards:
        path = s.folder / ROWS_FILE
        if not path.is_file():
            raise TwinkleError(f"merge: {s.name} has no {ROWS_FILE}; run the shard again")
        rows = {row_key(r): r for r in read_rows(path, SCORE_KEYS)}
        if len(rows) != s.rows_written:
            raise TwinkleError(f"merge: {path} holds {len(rows)} rows but its {SHARD_FILE} says {s.rows_written}; "
                               f"run the shard again")
        done.update(rows)
    return done
