"""The order of the stages: datasets -> formulations (prompts, scoring sharded over processes,
resumable; formulations/) -> metrics -> one result."""

from __future__ import annotations

import time
import warnings
from typing import Any

from .data.fingerprint import data_fingerprint
from .data.sources import DataArg, as_datasets, benchmark_records, quiet_datasets
from .engine.stats import ScoreStats, timing_record
from .formulations.plan import Session, score_dataset
from .metrics.summarize import MetricOptions, summarize_groups
from .metrics.true_mass import true_mass_blocks
from .models.facts import data_parallel_inner, input_device
from .models.loading import ModelInfo
from .outputs.result import EvalResult
from .outputs.resume import RunLog
from .runtime.layout import layout_of, parallel_record
from .runtime.memory import reset_peaks
from .runtime.processes import process_state
from .schema import Predictions
from .settings.config import EvalConfig


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
    items = as_datasets(data, cfg)
    held, model = model, data_parallel_inner(model)  # DDP & co: the module inside, never the wrapper's forward
    state = process_state(state, cpu=input_device(model).type == "cpu")
    layout = layout_of(model, state)
    was_training = held.training
    held.eval()
    reset_peaks(input_device(model))
    start = time.perf_counter()
    session = Session(model, tokenizer, layout, run_log, progress)
    parts, stats, shortened = [], [], 0
    try:
        with quiet_datasets():
            for item in items:
                preds, st, cut = score_dataset(session, item, cfg.for_dataset(item.source))
                parts.append(preds)
                stats.append(st)
                shortened += cut
    finally:
        held.train(was_training)
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
