"""The datasets a run evaluates, from what the config or a caller names: loaded ones, a path or
hub id, or nothing (the config's own list, else the MMLU sample embedded in the package)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import datasets

from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .catalog import load_named, pick_subjects
from .load import DEFAULT_DATASET, LoadedDataset, load_benchmark
from .suites import expand_suites


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """No `datasets` progress bar per internal map/filter; restore the user's setting after."""
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            datasets.utils.logging.enable_progress_bar()


DataArg = LoadedDataset | Sequence[LoadedDataset] | str | None


def as_datasets(data: DataArg, cfg: EvalConfig) -> list[LoadedDataset]:
    """Loaded datasets from what `evaluate` accepts: loaded ones, a path/hub id, or None (the config's)."""
    if data is None:
        return load_datasets(cfg)
    if isinstance(data, str):
        return load_datasets(dataclasses.replace(cfg, datasets=(data,)))
    if isinstance(data, LoadedDataset):
        return [data]
    return list(data)


def in_suite(data: LoadedDataset, suite: str) -> LoadedDataset:
    """A suite's member knows its suite (results.json's ``benchmarks`` says it, the report adds a macro row)."""
    return dataclasses.replace(data, benchmark=dataclasses.replace(data.benchmark, suite=suite)) if suite else data


def load_datasets(cfg: EvalConfig) -> list[LoadedDataset]:
    """Every dataset and benchmark the config names (the embedded MMLU sample when it names none);
    ``subjects`` keeps only those subjects of each."""
    sources = cfg.datasets or (() if cfg.benchmarks else (DEFAULT_DATASET,))
    loaded = [
        pick_subjects(load_benchmark(s, split=cfg.split, fewshot_split=cfg.fewshot_split, column_map=cfg.columns,
                                     on_bad_row=cfg.on_bad_row, offline=cfg.offline,
                                     twinkle_cells=cfg.prompt_style == "twinkle"),  # cells as pandas types them
                      cfg.subjects, "subject")
        for s in sources
    ] + [in_suite(load_named(b, subjects=cfg.subjects, on_bad_row=cfg.on_bad_row, offline=cfg.offline), suite)
         for b, suite in expand_suites(cfg.benchmarks)]
    names = [d.name for d in loaded]
    if len(set(names)) != len(names):
        raise TwinkleError(f"two datasets share a name ({names}); give them distinct paths")
    return loaded


def benchmark_records(items: Sequence[LoadedDataset], cfg: EvalConfig) -> dict[str, dict[str, Any]]:
    """results.json's ``benchmarks``: what each dataset named by --benchmark resolved to.

    Its registry entry's Hub id, splits, few-shot scope, aggregate and lm-eval's task; k; the
    subjects; and ``hash``, a sha256 of all that decides its prompts: equal hashes, equally asked
    questions."""
    out = {}
    for item in items:
        if item.benchmark is not None:
            k = cfg.for_dataset(item.source).num_fewshot
            subjects = tuple(sorted(set(item.rows["subject"])))
            out[item.name] = {**item.benchmark.summary(), "num_fewshot": k, "subjects": len(subjects),
                              "hash": item.benchmark.resolved_hash(k, subjects)}
    return out


def fixed_order_notices(items: Sequence[LoadedDataset], cfg: EvalConfig) -> list[str]:
    """A warning per benchmark whose release lists the gold option in one fixed place, when it is
    asked by letters in the released order.

    TruthfulQA puts it first, SciQ last: there a model that always gives that letter scores 100%."""
    if not cfg.scores_letters or cfg.permutation_mode != "none":
        return []
    out = []
    for item in items:
        place = getattr(item.benchmark, "gold_position", "")
        if not place or len(item.rows) == 0:
            continue
        letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[item.rows[0]["answer"]]
        out.append(f"warning: {item.name} lists the correct option {place} ({letter}) in every question, so letters "
                   f"asked in the released order measure where a model puts its answer, not what it knows (one that "
                   f"always answers {letter} scores 100%); add --shuffle to ask each question in seeded orders, or "
                   f"--method cloze to score the option texts")
    return out
