"""The order of the stages: datasets -> formulations (prompts, scoring sharded over processes,
resumable; formulations/) -> metrics -> one result."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .data.fingerprint import data_fingerprint
from .data.sources import DataArg, as_datasets, benchmark_records, quiet_datasets
from .engine.stats import ScoreStats, timing_record
from .errors import TwinkleError
from .formulations.driver import RunLog
from .formulations.plan import Session, score_dataset, score_share
from .metrics.summarize import MetricOptions, summarize_groups
from .metrics.true_mass import true_mass_blocks
from .models.facts import data_parallel_inner, input_device
from .models.loading import ModelInfo
from .outputs.result import EvalResult
from .runtime.layout import Layout, layout_of, parallel_record
from .runtime.memory import reset_peaks
from .runtime.processes import process_state
from .schema import Predictions
from .settings.config import EvalConfig
from .settings.shards import parse_shard


def evaluate(model: Any, tokenizer: Any, data: DataArg, cfg: EvalConfig, *, state: Any = None,
             model_info: ModelInfo | None = None, progress: bool = True, run_log: RunLog | None = None,
             accelerator: Any = None) -> EvalResult:
    """Evaluate an already-loaded model and tokenizer; returns metrics and per-row predictions.

    ``data``: loaded datasets, one, a path/hub id, or None for ``cfg.datasets``. Under several
    processes each scores a share and every process gets the full result; ``state`` is the
    ``accelerate.Accelerator`` or ``PartialState`` to shard with (None: the launcher's process
    group if there is one; ``accelerator=`` is its old name). Writes nothing; the model's
    train/eval mode is restored.
    """
    if accelerator is not None:
        warnings.warn("evaluate(accelerator=...) is now evaluate(state=...)", DeprecationWarning, stacklevel=2)
        state = state if state is not None else accelerator
    if cfg.shard:
        raise TwinkleError(f"shard {cfg.shard!r}: evaluate() scores every row; one shard's rows are scored by "
                           f"evaluate_share (twinkle-hf eval --shard), and joined by twinkle-hf merge")
    items = as_datasets(data, cfg)
    parts, stats, shortened = [], [], 0
    with _scoring(model, state) as (model, layout):
        start = time.perf_counter()
        session = Session(model, tokenizer, layout, run_log, progress)
        with quiet_datasets():
            for item in items:
                preds, st, cut = score_dataset(session, item, cfg.for_dataset(item.source))
                parts.append(preds)
                stats.append(st)
                shortened += cut
    seconds = time.perf_counter() - start
    predictions = Predictions.concat(parts).with_true_options({d.name: d.true_options for d in items})
    timing = timing_record(ScoreStats.merge(stats), predictions, seconds, shortened)
    timing["parallel"] = parallel_record(layout, input_device(model))
    skipped = {d.name: {"rows": d.skipped, "reasons": list(d.skipped_reasons)} for d in items if d.skipped}
    metrics = summarize_groups(predictions, MetricOptions.from_config(cfg))
    return EvalResult(config=cfg, predictions=predictions, metrics=metrics, timing=timing, model=model_info,
                      skipped=skipped, data_fingerprint=data_fingerprint(items),
                      benchmarks=benchmark_records(items, cfg),
                      true_mass=true_mass_blocks(predictions, {d.name: d.true_options for d in items}))


@contextlib.contextmanager
def _scoring(model: Any, state: Any) -> Iterator[tuple[Any, Layout]]:
    """The model to run (inside a DDP-like wrapper) and its layout over the processes of ``state``;
    eval mode inside the block, the model's train/eval mode restored after it."""
    held, model = model, data_parallel_inner(model)  # DDP & co: the module inside, never the wrapper's forward
    state = process_state(state, cpu=input_device(model).type == "cpu")
    layout = layout_of(model, state)
    was_training = held.training
    held.eval()
    reset_peaks(input_device(model))
    try:
        yield model, layout
    finally:
        held.train(was_training)


@dataclass(frozen=True)
class ShareRun:
    """What one ``--shard K/N`` run did: the rows of its share (every formulation's) and its timing
    (the engine's counts, seconds, and how it was spread over its processes)."""

    rows: int
    timing: dict[str, Any]


def evaluate_share(model: Any, tokenizer: Any, data: DataArg, cfg: EvalConfig, run_log: RunLog, *,
                   state: Any = None, progress: bool = True) -> ShareRun:
    """Score share K of N of the rows (``cfg.shard``, "K/N") into ``run_log``, and nothing else: no
    predictions, no metrics (they belong to the whole run: ``twinkle-hf merge`` computes them)."""
    assert cfg.shard and cfg.shard != "auto", "resolve --shard auto first (settings/shards.py)"
    shard = parse_shard(cfg.shard)
    rows, stats = 0, []
    with _scoring(model, state) as (model, layout):
        start = time.perf_counter()
        session = Session(model, tokenizer, layout, run_log, progress)
        with quiet_datasets():
            for item in as_datasets(data, cfg):
                n, st = score_share(session, item, cfg.for_dataset(item.source), shard)
                rows += n
                stats.append(st)
        seconds = time.perf_counter() - start
        timing = {"seconds": seconds, **dataclasses.asdict(ScoreStats.merge(stats)),
                  "parallel": parallel_record(layout, input_device(model))}
    return ShareRun(rows=rows, timing=timing)
