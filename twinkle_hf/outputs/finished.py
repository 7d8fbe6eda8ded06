"""A finished run is never overwritten: an output folder that holds one is refused unless the user
says ``--overwrite`` (``overwrite: true``), and the default folder is claimed, never shared.

A run is *finished* when its folder holds ``results.json`` (a ``--shard`` run: a ``shard.json`` that
says finished) and no ``.partial/run.json`` (resume.py removes ``.partial`` once the reports are
written); a folder with ``.partial/run.json`` holds an unfinished run, which resume.py guards.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import TwinkleError
from .console_log import LOG_NAME
from .plots import FILES as PLOT_FILES
from .resume import PARTIAL
from .shards import ROWS_FILE, SHARD_FILE

# what a run (or a sweep's trend) writes into its folder: what --overwrite removes, and nothing else
RUN_FILES = ("results.json", "predictions.jsonl", "report.md", "report.html", "subjects.csv", *PLOT_FILES, LOG_NAME,
             "trend.md", "trend.csv", "trend.html", "trend.png", SHARD_FILE, ROWS_FILE)
TWINKLE_FILES = ("results/results_*.json", "results/eval_results_*_run*.jsonl")  # twinkle_results.py


def _finished_shard(folder: Path) -> dict | None:
    """The manifest of a finished shard in ``folder`` (None: none, or not finished)."""
    try:
        doc = json.loads((folder / SHARD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("finished") is True else None


def is_finished(folder: Path) -> bool:
    done = (folder / "results.json").is_file() or _finished_shard(folder) is not None
    return done and not (folder / PARTIAL / "run.json").is_file()


def is_unfinished(folder: Path) -> bool:
    return (folder / PARTIAL / "run.json").is_file()


def describe(folder: Path) -> str:
    """``the finished run of MODEL (N questions, written DATE UTC)`` from its results.json, as far as it reads."""
    shard = _finished_shard(folder) if not (folder / "results.json").is_file() else None
    if shard is not None:
        stamp = datetime.datetime.fromtimestamp((folder / SHARD_FILE).stat().st_mtime, datetime.timezone.utc)
        part = shard.get("shard") or {}
        model = (shard.get("config") or {}).get("model") or "?"
        return (f"the finished shard {part.get('index')}/{part.get('count')} of {model} "
                f"({shard.get('rows_written')} rows, written {stamp:%Y-%m-%d %H:%M} UTC)")
    path = folder / "results.json"
    when = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        model = (doc.get("config") or {}).get("model") or "?"
        questions = ((doc.get("metrics") or {}).get("accuracy") or {}).get("n_questions")
        about = f"of {model}, {questions} questions, " if questions is not None else f"of {model}, "
    except (ValueError, UnicodeDecodeError, AttributeError):
        about = ""
    return f"the finished run {about}written {when} UTC"


def check_output_dir(folder: Path, overwrite: bool,
                     how: str = "choose another --output-dir, or add --overwrite") -> None:
    """Refuse a folder that holds a finished run, unless ``overwrite``."""
    if not overwrite and is_finished(folder):
        raise TwinkleError(f"{folder} holds {describe(folder)}; {how} to replace it")


def guard_output_dirs(folders: Iterable[Path], overwrite: bool, resume: bool) -> list[str]:
    """Before anything is written: refuse a folder holding a finished run (nothing touched), or with
    ``overwrite`` remove what the earlier run wrote there; returns what to tell the user (one line
    per folder replaced). Main process only."""
    folders = list(folders)
    if resume:
        for folder in folders:
            if is_finished(folder):
                raise TwinkleError(f"--resume: {folder} holds {describe(folder)}: nothing to resume; drop --resume "
                                   f"and add --overwrite to run it again there, or choose another --output-dir")
        return []
    for folder in folders:
        check_output_dir(folder, overwrite)
    return [line for folder in folders if overwrite and (line := clear_run(folder))]


def clear_run(folder: Path) -> str:
    """Remove the files a run wrote into ``folder`` (a finished or an unfinished one); returns the
    line that says what was replaced ('' where there was none). Other files are left alone."""
    if not (is_finished(folder) or is_unfinished(folder)):
        return ""
    what = describe(folder) if is_finished(folder) else f"the unfinished run (its {PARTIAL}/ scores)"
    removed = [name for name in RUN_FILES if (folder / name).is_file()]
    removed += sorted(str(p.relative_to(folder)) for pattern in TWINKLE_FILES for p in folder.glob(pattern))
    for name in removed:
        (folder / name).unlink()
    with contextlib.suppress(OSError):  # Twinkle's folder, if nothing else is in it
        (folder / "results").rmdir()
    if (folder / PARTIAL).is_dir():
        shutil.rmtree(folder / PARTIAL)
        removed.append(f"{PARTIAL}/")
    return f"--overwrite: replacing {what} in {folder} (removed {', '.join(removed)})"


def claim_folder(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``, ... : the first that this call creates itself, so two runs
    started in the same second never share a folder (mkdir is atomic)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise TwinkleError(f"no free output folder next to {base}; pass --output-dir")


def timestamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


@contextlib.contextmanager
def dropped_if_unused(folder: Path, enabled: bool) -> Iterator[None]:
    """A claimed folder that a failed run left with nothing but its run.log is removed again (a run
    that fails before it writes anything leaves no folder behind)."""
    try:
        yield
    except BaseException:
        if enabled and folder.is_dir() and {p.name for p in folder.iterdir()} <= {LOG_NAME}:
            shutil.rmtree(folder, ignore_errors=True)
            for parent in folder.parents[:2]:  # results/<model>/, results/: where claim_folder made them
                with contextlib.suppress(OSError):
                    parent.rmdir()  # only if empty
        raise
