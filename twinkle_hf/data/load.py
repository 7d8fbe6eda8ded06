"""Load a multiple-choice benchmark into canonical rows (``features.CANONICAL_FEATURES``).

A source is a file (.csv/.tsv/.json/.jsonl/.parquet/.arrow), a directory of them (recursive), a
``save_to_disk`` folder, or a Hub id ``owner/name[:config]``. Tables are read as raw cells (CSV as
text), :mod:`twinkle_hf.data.layouts` recognises their columns, and each split is built into one
``datasets.Dataset``. A bad row is an error naming file, row and column, or is skipped and counted.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

from ..errors import TwinkleError
from .features import CANONICAL_FEATURES
from .fingerprint import dataset_fingerprint
from .hub import load_hub_dataset
from .layouts import check_column_map, detect_layout, parse_column_map
from .normalize import BadRow, normalize_row, zero_based_answers
from .readers import Table, dir_name, portable_where, read_arrow, read_csv, read_json, read_parquet, row_name
from .twinkle_cells import CellChange, TwinkleCells

__all__ = ["DEFAULT_DATASET", "LoadedDataset", "limit_per_subject", "load_benchmark", "parse_column_map"]

DEFAULT_DATASET = str(Path(__file__).resolve().parents[1] / "resources" / "mmlu_sample")
EXTENSIONS = (".csv", ".tsv", ".json", ".jsonl", ".parquet", ".arrow")
SPLITS = ("test", "dev", "val", "validation", "train")
SPLIT_SUFFIX = re.compile(r"_(test|dev|val|validation|train)$", re.IGNORECASE)
# a Hub parquet snapshot's shard, e.g. test-00000-of-00001.parquet (its folder is the config)
SHARD = re.compile(r"^(test|dev|val|validation|train)-\d+-of-\d+$", re.IGNORECASE)
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w.() -]+)?$")  # configs may hold spaces (ArabicMMLU)
DISK_MARKERS = ("dataset_dict.json", "dataset_info.json", "state.json")
MAX_REASONS = 20
TRUE_OPTIONS = "true_options"  # an adapter's optional column: every true option's index (TruthfulQA MC2)
FIX_HINT = "Fix the file, or skip such rows with on_bad_row='skip' (CLI: --on-bad-row skip; YAML: on_bad_row: skip)"


@dataclass(frozen=True)
class LoadedDataset:
    """A benchmark after normalisation: the evaluated split and the few-shot pool."""

    name: str  # display name: file stem, directory name, or hub id
    source: str  # what the user passed
    rows: datasets.Dataset  # canonical rows of the evaluated split
    fewshot: datasets.Dataset | None  # canonical rows of the few-shot split; None if absent
    skipped: int = 0  # bad rows skipped under on_bad_row="skip" (both splits)
    skipped_reasons: tuple[str, ...] = ()  # the first 20 skip messages, for the report
    # where each evaluated row came from: id -> (file, row index in that file); Twinkle Eval scores
    # every file as its own unit, and its result files name questions by their row in the file
    origins: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    # per file of the evaluated split: (its option columns, the columns no prompt shows), for Twinkle's notice
    unshown: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # with twinkle_cells: id -> (question, options in their original order) as Twinkle Eval shows them,
    # for the rows where that differs from ``rows``; and per file, the columns where it does (twinkle_cells.py)
    shown: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    retyped: Mapping[str, tuple[CellChange, ...]] = field(default_factory=dict)
    benchmark: Any = None  # the registry entry (data.registry.Benchmark) of a benchmark named by --benchmark
    # id -> the indices (original order) of every true option, where a question has several (TruthfulQA
    # MC2: metrics/true_mass.py); empty for every other dataset, whose one true option is ``answer``
    true_options: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @functools.cached_property
    def fingerprint(self) -> str:
        """sha256 of the name and canonical rows (fingerprint.py), computed once: the CLI's resume
        identity, results.json and every evaluation of a training callback share it."""
        return dataset_fingerprint(self.name, self.rows, self.fewshot)


Reader = Callable[[Mapping[str, str] | None], Table]  # reads one table, given the column map
Opened = tuple[str, dict[str, list[Reader]]]  # a source's display name and its readers per split
# a named benchmark's Hub columns -> canonical columns (data/adapters.py), given the table's name for messages
Adapter = Callable[[dict[str, list[Any]], str], dict[str, list[Any]]]


def load_benchmark(source: str, *, split: str = "test", fewshot_split: str | tuple[str, ...] | None = "dev",
                   column_map: Mapping[str, str] | None = None, on_bad_row: str = "error",
                   offline: bool = False, keep_ids: bool = True, twinkle_cells: bool = False,
                   adapt: Adapter | None = None, opened: Opened | None = None) -> LoadedDataset:
    """Load ``split`` (evaluated) and ``fewshot_split`` (few-shot pool; None when absent; of several
    names, the first the source holds); with ``twinkle_cells``, also the evaluated texts as Twinkle
    Eval shows them (``shown``, ``retyped``).

    Split names are taken literally, except that ``val`` and ``validation`` stand in for each
    other. A directory whose file names and folders carry no split is all ``test``; a single
    file is the evaluated split whatever its name, and has no few-shot pool. ``keep_ids=False``
    ignores an id column (one that restarts in every file) and names rows by subject and index.
    ``adapt`` turns each table's columns into canonical ones first (a named benchmark's Hub schema);
    ``opened`` is a source already open as (name, readers per split): a repository snapshot (snapshot.py).
    """
    if on_bad_row not in ("error", "skip"):
        raise TwinkleError(f"on_bad_row must be 'error' or 'skip', got {on_bad_row!r}")
    cmap = check_column_map(column_map) if column_map else None
    name, splits = opened or _open(str(source), offline, split)
    chosen = _pick_split(split, splits)
    if chosen is None:
        raise TwinkleError(f"{source}: there is no split {split!r}; splits found: "
                           f"{', '.join(sorted(splits))}. Choose one with --split")
    skips: list[str] = []
    origins: dict[str, tuple[str, int]] = {}
    unshown: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    shown: dict[str, tuple[str, tuple[str, ...]]] | None = {} if twinkle_cells else None
    retyped: dict[str, tuple[CellChange, ...]] = {}
    true_options: dict[str, tuple[int, ...]] = {}
    rows = _build(name, splits[chosen], cmap, on_bad_row, skips, origins, unshown, keep_ids, (shown, retyped), adapt,
                  true_options)
    wanted = (fewshot_split,) if isinstance(fewshot_split, str) else fewshot_split or ()
    few = next((found for found in (_pick_split(w, splits) for w in wanted) if found), None)
    fewshot = rows if few == chosen else None if few is None else _build(
        name, splits[few], cmap, on_bad_row, skips, keep_ids=keep_ids, adapt=adapt)
    return LoadedDataset(name, str(source), rows, fewshot, len(skips), tuple(skips[:MAX_REASONS]),
                         {key: (portable_where(where, str(source)), i) for key, (where, i) in origins.items()},
                         unshown, shown or {}, retyped, true_options=true_options)


def limit_per_subject(rows: datasets.Dataset, limit: int | None) -> datasets.Dataset:
    """The first ``limit`` rows of each subject, in their original order (for smoke runs)."""
    if limit is None:
        return rows
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise TwinkleError(f"--limit must be a positive integer, got {limit!r}")
    seen: Counter[str] = Counter()
    keep = []
    for i, subject in enumerate(rows["subject"]):
        seen[subject] += 1
        if seen[subject] <= limit:
            keep.append(i)
    return rows if len(keep) == len(rows) else rows.select(keep)


def _pick_split(wanted: str, splits: Mapping[str, Any]) -> str | None:
    """``wanted`` if present, else its val/validation alias, else None."""
    alias = {"val": "validation", "validation": "val"}.get(wanted)
    return wanted if wanted in splits else alias if alias in splits else None


def _open(source: str, offline: bool, split: str) -> tuple[str, dict[str, list[Reader]]]:
    """Display name and, per split, readers of its tables (only the splits used get read)."""
    path = Path(source).expanduser()
    if path.is_file():
        if path.suffix.lower() not in EXTENSIONS:
            raise TwinkleError(f"{path}: unsupported file type; use {', '.join(EXTENSIONS)}")
        return path.stem, {split: [_file_reader(path, alone=True)]}
    if path.is_dir():
        if any((path / marker).is_file() for marker in DISK_MARKERS):
            return path.resolve().name, _dataset_readers(_load_from_disk(path), str(path))
        return dir_name(path, SPLITS), _dir_readers(path)
    if HUB_ID.match(source) and not source.lower().endswith(EXTENSIONS):
        return source, _dataset_readers(load_hub_dataset(source, offline), source)
    raise FileNotFoundError(f"dataset {source!r} not found: it is not an existing file or "
                            f"directory, nor a Hugging Face Hub id like owner/name")


def _split_of(stem: str) -> str | None:
    return (m.group(1).lower() if (m := SPLIT_SUFFIX.search(stem) or SHARD.match(stem)) else None)


def _dir_readers(root: Path) -> dict[str, list[Reader]]:
    """Files by split (a split folder on the path, else a ``_<split>`` suffix), sorted by path.

    Hidden files and folders (``.ipynb_checkpoints``, ``.cache``) are not data and are ignored.
    """
    found: dict[Path, str | None] = {}
    for path in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
        parts = path.relative_to(root).parts
        if path.suffix.lower() in EXTENSIONS and not any(p.startswith(".") for p in parts) \
                and path.is_file():
            folder = next((p.lower() for p in parts[:-1] if p.lower() in SPLITS), None)
            found[path] = folder or _split_of(path.stem)
    if not found:
        raise TwinkleError(f"{root}: no {'/'.join(EXTENSIONS)} files in this directory")
    loose = [str(p.relative_to(root)) for p, split in found.items() if split is None]
    if loose and len(loose) < len(found):
        raise TwinkleError(f"{root}: some files belong to a split (test/dev/val/validation/train) "
                           f"and some do not ({', '.join(loose[:5])}); move or rename them")
    splits: dict[str, list[Reader]] = {}
    for path, split in found.items():
        splits.setdefault(split or "test", []).append(_file_reader(path))
    return splits


def _file_reader(path: Path, alone: bool = False) -> Reader:
    def read(cmap: Mapping[str, str] | None) -> Table:
        # where no column says: the name without its split suffix (anatomy_test.csv); none for a lone unsplit file
        subject = "" if alone and not SPLIT_SUFFIX.search(path.stem) else SPLIT_SUFFIX.sub("", path.stem)
        suffix = path.suffix.lower()
        if SHARD.match(path.stem):  # a Hub snapshot's shard: its folder is the config (a subject)
            subject = path.parent.name
        if suffix in (".csv", ".tsv"):
            return read_csv(path, "\t" if suffix == ".tsv" else ",", subject, cmap)
        if suffix == ".arrow":
            return read_arrow(path, subject)
        return read_parquet(path, subject) if suffix == ".parquet" else read_json(path, subject)

    return read


def _dataset_readers(loaded: Any, where: str) -> dict[str, list[Reader]]:
    """Readers for a Dataset (all ``test``) or each split of a DatasetDict; no subject fallback."""
    named = loaded if isinstance(loaded, Mapping) else {"test": loaded}

    def reader(split: str, ds: datasets.Dataset) -> Reader:
        return lambda _cmap: Table(f"{where} [{split}]", list(ds.column_names), ds.to_dict(),
                                    len(ds), "", row_name)

    return {split: [reader(split, ds)] for split, ds in named.items()}


def _load_from_disk(path: Path) -> Any:
    try:
        return datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        raise TwinkleError(f"{path}: not a readable save_to_disk folder: {exc}") from None


def _build(name: str, readers: list[Reader], cmap: Mapping[str, str] | None, on_bad_row: str,
           skips: list[str], origins: dict[str, tuple[str, int]] | None = None,
           unshown: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None,
           keep_ids: bool = True,
           twinkle: tuple[dict[str, Any] | None, dict[str, Any]] = (None, {}),
           adapt: Adapter | None = None, true_options: dict[str, tuple[int, ...]] | None = None) -> datasets.Dataset:
    """One split's canonical rows, built once from Python lists (no per-row Dataset ops).

    Each row's file and index in it go into ``origins``, and a file's option and unshown columns
    into ``unshown``. Where a row's texts as Twinkle Eval shows them differ, they go into
    ``twinkle`` (shown, retyped). An adapted table's ``true_options`` (TRUE_OPTIONS) go into
    ``true_options`` by row id."""
    out: dict[str, list[Any]] = {key: [] for key in CANONICAL_FEATURES}
    seen: dict[str, tuple[Table, int]] = {}
    rows_before: Counter[str] = Counter()  # rows of earlier files holding the subject
    for read in readers:
        table = read(cmap)
        if adapt is not None and table.n_rows:
            table = dataclasses.replace(table, data=(data := adapt(table.data, table.where)), columns=list(data),
                                        typed=None)
        if table.n_rows == 0:
            raise TwinkleError(f"{table.where}: holds no rows")
        layout = detect_layout(table.columns, cmap, table.where)
        if unshown is not None:
            shown = {layout.question, layout.answer, *layout.choices}
            unshown[table.where] = (layout.choices, tuple(c for c in table.columns if c not in shown))
        layout = layout if keep_ids else dataclasses.replace(layout, id=None)
        typed = table.typed() if twinkle[0] is not None and table.typed else None
        cells = TwinkleCells(typed, layout.question, layout.choices) if typed else None
        subjects: set[str] = set()
        zero_based: bool | None = None  # whether the answer column holds a 0; looked up once, if needed
        for i in range(table.n_rows):
            try:
                row_id, subject, question, choices, answer = normalize_row(table.data, i, layout)
            except BadRow as bad:
                if on_bad_row == "error":
                    raise TwinkleError(f"{table.where}: {table.locate(i)}, {bad}. {FIX_HINT}") \
                        from None
                if bad.one_based and zero_based is None:
                    zero_based = zero_based_answers(table.data[layout.answer])
                if bad.one_based and not zero_based:
                    # Skipping only the rows whose answer is k would score every other row against
                    # the option after the right one.
                    raise TwinkleError(
                        f"{table.where}: {table.locate(i)}, {bad}; no answer in the column is 0, so the "
                        f"whole column looks 1-based and is not skipped row by row. Subtract 1 from "
                        f"every answer, or write letters") from None
                skips.append(f"{table.where}: {table.locate(i)}, {bad}")
                continue
            subject = table.subject if subject is None else subject
            subjects.add(subject)
            if row_id is None:  # the row in its file, or in the subject's files in path order
                row_id = f"{name}/{subject}/{rows_before[subject] + i}"
            if row_id in seen:
                first, j = seen[row_id]
                raise TwinkleError(f"duplicate id {row_id!r}: {first.where} {first.locate(j)} "
                                   f"and {table.where} {table.locate(i)}; ids must be unique")
            seen[row_id] = (table, i)
            if origins is not None:
                origins[row_id] = (table.where, i)
            if true_options is not None and TRUE_OPTIONS in table.data:
                true_options[row_id] = tuple(int(j) for j in table.data[TRUE_OPTIONS][i])
            texts = cells.texts(i, question, choices) if cells else None
            if texts and twinkle[0] is not None:
                twinkle[0][row_id] = texts
            row = {"id": row_id, "subject": subject, "question": question, "choices": choices,
                   "answer": answer}
            for key, column in out.items():
                column.append(row[key])
        for subject in subjects:
            rows_before[subject] += table.n_rows
        if cells and cells.changes:
            twinkle[1][table.where] = cells.found()
    if not out["id"]:
        raise TwinkleError(f"{name}: every row is bad, nothing is left; last problem: {skips[-1]}")
    return datasets.Dataset.from_dict(out, features=CANONICAL_FEATURES)
