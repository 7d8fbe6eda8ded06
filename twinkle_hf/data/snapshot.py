"""A downloaded dataset repository (``hf download REPO --repo-type dataset --local-dir PATH``).

It holds the repository's own files, which for many repos are CSV or JSON/JSONL rather than the
Hub's auto-converted parquet. The configs are declared in the dataset card's YAML header
(``configs:`` with ``data_files``), or the data files are named by split (``data/test.csv``,
``dev/x.jsonl``).

``datasets``' packaged builders read such a folder offline (``load_dataset(PATH, name=config)``: csv,
json and parquet, and the card's configs). Each config's splits become readers of raw tables for
:func:`twinkle_hf.data.load.load_benchmark`, so the entry's own row adapter runs as for the parquet copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import datasets

from ..errors import TwinkleError
from .benchmark import Benchmark
from .hub import hub_offline
from .load import Reader
from .readers import Table, row_name

DATA_FILES = (".csv", ".json", ".jsonl", ".parquet", ".tsv")
DESCRIBED = ("the repository's own files (hf download REPO --repo-type dataset --local-dir PATH): a README.md "
             "whose YAML declares configs, or csv/json/jsonl data files named by split")


def card_configs(root: Path) -> tuple[str, ...]:
    """The config names the dataset card (README.md's YAML header) declares; () for none."""
    import yaml

    card = root / "README.md"
    if not card.is_file():
        return ()
    text = card.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return ()
    header = text[3:].split("\n---", 1)[0]
    try:
        meta = yaml.safe_load(header) or {}
    except yaml.YAMLError as exc:
        raise TwinkleError(f"{card}: the YAML header does not parse ({str(exc).splitlines()[0]})") from None
    configs = meta.get("configs") if isinstance(meta, Mapping) else None
    return tuple(str(c["config_name"]) for c in configs or () if isinstance(c, Mapping) and "config_name" in c)


def is_snapshot(root: Path) -> bool:
    """Whether ``root`` looks like a repository's own files: a card declaring configs, or data files."""
    if card_configs(root):
        return True
    return any(p.suffix.lower() in DATA_FILES and p.is_file() and not any(part.startswith(".") for part in
               p.relative_to(root).parts) for p in root.rglob("*"))


def snapshot_configs(entry: Benchmark, root: Path, subjects: tuple[str, ...]) -> list[tuple[str | None, str]]:
    """(config to read, subject of its rows) pairs: the entry's config (its variant's), each subject's
    config where the entry has a config per subject, else the default config (rows named "default")."""
    declared = card_configs(root)
    if entry.subject_configs:
        wanted = subjects or tuple(c for c in declared if c.lower() not in ("all", "default"))
        missing = [s for s in wanted if s not in declared]
        if missing or not wanted:
            raise TwinkleError(f"{root}: {entry.name} reads a config per subject, but the card (README.md) "
                               f"declares {', '.join(declared) or 'no configs'}"
                               + (f"; missing: {', '.join(missing[:5])}" if missing else ""))
        return [(config, config) for config in wanted]
    config = entry.config
    if config and declared and config not in declared:
        raise TwinkleError(f"{root}: the card (README.md) declares no config {config!r} for {entry.display}; "
                           f"it declares {', '.join(declared[:12])}{' ...' if len(declared) > 12 else ''}")
    return [(config, config or "default") if declared else (None, "default")]  # named as the Hub's parquet folders are


def snapshot_readers(entry: Benchmark, root: Path, subjects: tuple[str, ...] = ()) -> dict[str, list[Reader]]:
    """Per split, a reader of each config's table, read offline with ``datasets`` from ``root``."""
    splits: dict[str, list[Reader]] = {}
    for config, subject in snapshot_configs(entry, root, subjects):
        loaded = _load(root, config)
        for split, table in loaded.items():
            splits.setdefault(split, []).append(_reader(table, f"{root} [{config or 'default'}/{split}]", subject))
    return splits


def _load(root: Path, config: str | None) -> Mapping[str, Any]:
    try:
        with hub_offline(True):
            return datasets.load_dataset(str(root), name=config)
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetGenerationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TwinkleError(f"{root}: datasets cannot read config {config or 'default'} of this folder "
                           f"({first}); expected {DESCRIBED}") from None


def _reader(table: datasets.Dataset, where: str, subject: str) -> Reader:
    return lambda _cmap: Table(where, list(table.column_names), table.to_dict(), len(table), subject, row_name)
