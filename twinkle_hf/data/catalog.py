"""Benchmarks by name: ``--benchmark NAME``, ``NAME:VARIANT`` or ``NAME=PATH`` -> a loaded dataset.

Without a path the registry's Hub id is read from the local cache (never downloaded when offline);
with one, the folder may be the benchmark's own release layout (``RELEASE_LAYOUTS``), a Hub
``save_to_disk`` folder, a Hub parquet snapshot (``<config>/<split>-00000-of-00001.parquet``), or
Twinkle Eval's download (``<config>.parquet``, each file a subject). Which files a layout needs
is checked before anything is read, so a wrong folder is one line that says what was expected.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
from pathlib import Path

import datasets

from ..errors import TwinkleError
from .adapters import adapt_columns
from .benchmark import Benchmark
from .features import CANONICAL_FEATURES
from .layouts import UnmappedColumn, headerless_mmlu
from .load import DISK_MARKERS, SHARD, Adapter, LoadedDataset, load_benchmark
from .registry import ALIASES, BENCHMARKS, subject_descriptions
from .snapshot import DESCRIBED, is_snapshot, snapshot_readers

RELEASE_LAYOUTS = {
    "mmlu": "MMLU's release: data/{dev,test}/<subject>_<split>.csv, no header",
    "cmmlu": "CMMLU's release: {dev,test}/<subject>.csv with a header (,Question,A,B,C,D,Answer)",
    "ceval": "C-Eval's release: {dev,val,test}/<subject>_<split>.csv with a header (id,question,A,B,C,D,answer)",
    "tmmluplus": "TMMLU+'s files: data/<subject>_{dev,val,test}.csv with a header (question,A,B,C,D,answer)",
    "gpqa": "GPQA's release: gpqa_{main,diamond,extended}.csv",
    "hub": "the Hub dataset's files",
}
ALSO = ("a save_to_disk folder, a Hub parquet snapshot (<config>/<split>-*.parquet), <subject>.parquet files or "
        + DESCRIBED)


def split_argument(text: str) -> tuple[str, str | None]:
    """``"mmlu=data/mmlu"`` -> ``("mmlu", "data/mmlu")``; ``"mmlu"`` -> ``("mmlu", None)``."""
    name, sep, path = text.partition("=")
    if sep and not path.strip():
        raise TwinkleError(f"--benchmark {text!r}: nothing after '='; give NAME=PATH (a local copy) or NAME")
    return name.strip(), (path.strip() if sep else None)


def find_benchmark(text: str) -> Benchmark:
    """The registry entry for ``name`` or ``name:variant`` (its first variant by default)."""
    name, _, variant = text.strip().partition(":")
    key = ALIASES.get(name.lower(), name.lower())
    if key not in BENCHMARKS:
        known = sorted(BENCHMARKS) + sorted(ALIASES)
        near = difflib.get_close_matches(name.lower(), known, n=6, cutoff=0.5)
        near = list(dict.fromkeys(ALIASES.get(n, n) for n in near))[:3]  # an alias and its entry are one name
        hint = f"did you mean {', '.join(near)}? " if near else ""
        raise TwinkleError(f"unknown benchmark {name!r}; {hint}known: {', '.join(sorted(BENCHMARKS))} "
                           f"(twinkle-hf benchmarks lists them)")
    entry = BENCHMARKS[key]
    if variant and variant not in entry.variants:
        if not entry.variants:
            raise TwinkleError(f"benchmark {entry.name} has no variants; drop ':{variant}'")
        raise TwinkleError(f"benchmark {entry.name} has no variant {variant!r}; choose one of "
                           f"{', '.join(entry.variants)} (e.g. {entry.name}:{entry.variants[-1]})")
    return dataclasses.replace(entry, variant=variant or (entry.variants[0] if entry.variants else ""))


def _listing(root: Path) -> str:
    """What a folder holds, in a few names (for a wrong-layout message)."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir() if not p.name.startswith("."))
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return shown or "nothing"


def _release_root(entry: Benchmark, root: Path) -> Path | None:
    """The folder to read when ``root`` holds the benchmark's release layout, else None."""
    if entry.layout == "gpqa":
        return root if any(root.rglob("gpqa_*.csv")) else None
    bases = [root / "data", root]
    split = entry.eval_split
    for base in bases:
        folder = base / split
        if entry.layout == "mmlu" and any(folder.glob(f"*_{split}.csv")):
            return base
        if entry.layout == "cmmlu" and folder.is_dir() and any(folder.glob("*.csv")):
            return base
        if entry.layout == "ceval" and any(folder.glob(f"*_{split}.csv")):
            return base
        if entry.layout == "tmmluplus" and any(base.glob(f"*_{split}.csv")):
            return base
    return None


def _other_layout(entry: Benchmark, root: Path) -> Path | None:
    """A save_to_disk folder, a parquet snapshot (its config's folder) or Twinkle Eval's files."""
    if any((root / marker).is_file() for marker in DISK_MARKERS):
        return root
    for base in ([root / entry.config] if entry.config else []) + [root / "data", root]:
        if base.is_dir() and any(SHARD.match(p.stem) for p in base.glob("*.parquet")):
            return base
    if any(SHARD.match(p.stem) for p in root.glob("*/*.parquet")):  # a config (subject) per folder
        return root
    return root if any(root.glob("*.parquet")) else None  # Twinkle Eval's download: <subject>.parquet


def repo_files(entry: Benchmark, root: Path) -> bool:
    """Whether ``root`` is a Hub entry's repository snapshot in no other layout (snapshot.py reads it)."""
    return (entry.layout == "hub" and root.is_dir() and _other_layout(entry, root) is None
            and is_snapshot(root))


def local_source(entry: Benchmark, path: str) -> Path:
    """The file or folder to read for ``--benchmark name=path``; a wrong layout is an error that
    says what was expected and what was found."""
    root = Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"--benchmark {entry.name}={path}: no such file or folder")
    if root.is_file():
        return root
    found = _release_root(entry, root) or _other_layout(entry, root) or (root if repo_files(entry, root) else None)
    if found is None:
        raise TwinkleError(
            f"--benchmark {entry.name}={path}: not a layout this benchmark is read from; expected "
            f"{RELEASE_LAYOUTS[entry.layout]}, or {ALSO}; found: {_listing(root)}")
    return found


def wrong_columns(entry: Benchmark, path: str, err: UnmappedColumn) -> str:
    """A file of ``--benchmark NAME=PATH`` lacks the columns the entry reads: the layout expected,
    and what was found (an MMLU-style CSV has no header: its first row is a question)."""
    found = ("a CSV without a header, its first row a question (MMLU's release layout: --benchmark mmlu=PATH "
             "or --dataset PATH reads it)" if headerless_mmlu(err.columns, None) else
             f"the columns {', '.join(map(repr, err.columns))}")
    return (f"--benchmark {entry.name}={path}: {err.where} is not in a layout this benchmark is read from; expected "
            f"{RELEASE_LAYOUTS[entry.layout]}, or {ALSO}; found {found}")


def hub_source(entry: Benchmark, offline: bool) -> str:
    """``hub_id[:config]`` when the local cache holds it (or the network may be used)."""
    from .hub import hub_cached

    source = entry.hub_id + (f":{entry.config}" if entry.config else "")
    offline = offline or bool(datasets.config.HF_HUB_OFFLINE)
    hub_id = entry.hub_id.format(subject=subject_names(entry)[0]) if "{subject}" in entry.hub_id else entry.hub_id
    if entry.gated and not hub_cached(hub_id, "dataset"):
        raise TwinkleError(f"{entry.name}: the Hub dataset {entry.hub_id} is gated (accept its terms on the Hub) "
                           f"and not in the local cache; pass a local copy: --benchmark {entry.display}=PATH")
    if offline and not hub_cached(hub_id, "dataset"):
        raise TwinkleError(f"{entry.name}: the Hub dataset {entry.hub_id} is not in the local cache and offline "
                           f"mode is on; pass a local copy: --benchmark {entry.display}=PATH "
                           f"({RELEASE_LAYOUTS[entry.layout]}, or {ALSO})")
    return source


def _seeded_order(question: str, k: int) -> list[int]:
    """One fixed order of k options for a question (GPQA lists the gold answer first)."""
    keys = [hashlib.sha256(f"{question}\x00{i}".encode()).digest() for i in range(k)]
    return sorted(range(k), key=lambda i: keys[i])


def pick_subjects(data: LoadedDataset, subjects: tuple[str, ...], scope: str) -> LoadedDataset:
    """Only ``subjects`` (all when empty); the few-shot pool too when it is drawn per subject."""
    if not subjects:
        return data
    have = sorted(set(data.rows["subject"]))
    missing = [s for s in subjects if s not in have]
    if missing:
        near = difflib.get_close_matches(missing[0], have, n=3, cutoff=0.5)
        raise TwinkleError(f"--subjects: {data.name} has no subject {missing[0]!r}"
                           + (f" (did you mean {', '.join(near)}?)" if near else "")
                           + f"; its subjects: {', '.join(have[:12])}{' ...' if len(have) > 12 else ''}")
    wanted = set(subjects)

    def keep(table: datasets.Dataset) -> datasets.Dataset:
        return table.select([i for i, s in enumerate(table["subject"][:]) if s in wanted])

    fewshot = data.fewshot
    if fewshot is not None and scope == "subject":
        fewshot = data.rows if fewshot is data.rows else keep(fewshot)
    rows = keep(data.rows)
    return dataclasses.replace(data, rows=rows, fewshot=rows if data.fewshot is data.rows else fewshot)


def load_named(argument: str, *, subjects: tuple[str, ...] = (), on_bad_row: str = "error",
               offline: bool = False) -> LoadedDataset:
    """The benchmark ``argument`` names (``NAME``, ``NAME:VARIANT``, ``NAME=PATH``), loaded."""
    name, path = split_argument(argument)
    entry = find_benchmark(name)
    if entry.fixed_order and not path:
        raise TwinkleError(f"{entry.name} is read from a local copy of its release (the Hub's is gated); pass "
                           f"--benchmark {entry.display}=PATH ({RELEASE_LAYOUTS[entry.layout]})")
    source = str(local_source(entry, path)) if path else hub_source(entry, offline)
    if entry.fixed_order:
        data = _load_fixed(entry, source)
    elif entry.subject_configs and not path:
        data = _load_subject_configs(entry, subjects, on_bad_row, offline)
    else:
        opened = (Path(source).resolve().name, snapshot_readers(entry, Path(source), subjects)) \
            if path and repo_files(entry, Path(source)) else None
        try:
            data = load_benchmark(source, split=entry.eval_split, fewshot_split=entry.fewshot_splits or None,
                                  column_map=dict(entry.columns) or None, on_bad_row=on_bad_row, offline=offline,
                                  keep_ids=entry.keep_ids, adapt=adapter(entry), opened=opened)
        except UnmappedColumn as err:
            if not path:
                raise
            raise TwinkleError(wrong_columns(entry, path, err)) from None
    data = pick_subjects(dataclasses.replace(data, name=entry.display, benchmark=entry), subjects,
                         entry.fewshot_scope)
    return data


def adapter(entry: Benchmark) -> Adapter | None:
    """How the entry's Hub columns become canonical ones (adapters.py), None: detected from the names."""
    return functools.partial(adapt_columns, entry) if entry.adapter else None


def subject_names(entry: Benchmark) -> tuple[str, ...]:
    """The entry's subjects (its Hub configs, or datasets), in lm-eval's order; () from the data."""
    return entry.subjects or tuple(subject_descriptions(entry.subject_table))


def _load_subject_configs(entry: Benchmark, subjects: tuple[str, ...], on_bad_row: str,
                          offline: bool) -> LoadedDataset:
    """A Hub dataset with a config per subject (CMMLU, C-Eval, TMMLU+, MMLU-Redux): each subject's
    config from the cache, its rows named by the config (those configs have no subject column)."""
    names = subjects or subject_names(entry)
    where = (lambda name: entry.hub_id.format(subject=name)) if "{subject}" in entry.hub_id else \
        (lambda name: f"{entry.hub_id}:{name}")  # a dataset per subject (AGIEval), else a config per subject
    parts = [(name, load_benchmark(where(name), split=entry.eval_split,
                                   fewshot_split=entry.fewshot_splits or None, column_map=dict(entry.columns) or None,
                                   on_bad_row=on_bad_row, offline=offline, keep_ids=entry.keep_ids,
                                   adapt=adapter(entry)))
             for name in names]

    def merged(tables: list[tuple[str, datasets.Dataset]]) -> datasets.Dataset:
        out: dict[str, list] = {key: [] for key in CANONICAL_FEATURES}
        for name, table in tables:
            columns = table[:]
            for key in out:
                out[key] += [name] * len(table) if key == "subject" else columns[key]
        return datasets.Dataset.from_dict(out, features=CANONICAL_FEATURES)

    rows = merged([(name, part.rows) for name, part in parts])
    pools = [(name, part.fewshot) for name, part in parts if part.fewshot is not None]
    fewshot = merged(pools) if len(pools) == len(parts) else None
    origins = {key: value for _, part in parts for key, value in part.origins.items()}
    return LoadedDataset(entry.display, entry.hub_id, rows, fewshot, sum(p.skipped for _, p in parts),
                         tuple(r for _, p in parts for r in p.skipped_reasons)[:20], origins,
                         {key: value for _, part in parts for key, value in part.unshown.items()})


def _load_fixed(entry: Benchmark, source: str) -> LoadedDataset:
    """GPQA: the variant's CSV, gold answer first among the option columns, each question given one
    seeded order (``_seeded_order``)."""
    import pandas as pd

    path = Path(source)
    if path.is_dir():
        files = sorted(path.rglob(f"gpqa_{entry.variant}.csv"))
        if not files:
            raise TwinkleError(f"{entry.display}: no gpqa_{entry.variant}.csv in {path}; expected "
                               f"{RELEASE_LAYOUTS[entry.layout]}; found: {_listing(path)}")
        path = files[0]
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    fields = dict(entry.columns)
    wanted = [fields["question"], *fields["choices"].split("|")]
    if any(column not in frame.columns for column in wanted):
        raise TwinkleError(f"{path}: expected GPQA's columns {', '.join(wanted)}; found {', '.join(frame.columns)}")
    out: dict[str, list] = {"id": [], "subject": [], "question": [], "choices": [], "answer": []}
    for i, row in frame.iterrows():
        options = [str(row[c]).strip() for c in wanted[1:]]
        order = _seeded_order(str(row[wanted[0]]), len(options))
        out["id"].append(str(row.get("Record ID") or f"{entry.display}/{i}"))
        out["subject"].append(str(row.get("High-level domain") or entry.variant))
        out["question"].append(str(row[wanted[0]]))
        out["choices"].append([options[j] for j in order])
        out["answer"].append(order.index(0))
    rows = datasets.Dataset.from_dict(out, features=CANONICAL_FEATURES)
    return LoadedDataset(entry.display, str(path), rows, None)
