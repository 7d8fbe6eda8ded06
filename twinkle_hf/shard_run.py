"""One ``--shard K/N`` run: its share of the rows scored (evaluation.evaluate_share) into its own
folder, with its manifest (outputs/shards.py). ``twinkle-hf merge`` joins the N folders."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .dry_run import record_rate
from .evaluation import evaluate_share
from .models.loading import ModelInfo
from .outputs.console_log import LOG_NAME
from .outputs.resume import RunLog
from .outputs.shards import ROWS_FILE, SHARD_FILE, save_rows, write_manifest
from .runtime.processes import is_main
from .settings.config import EvalConfig
from .settings.shards import parse_shard


def score_shard(model: Any, tokenizer: Any, data: list, cfg: EvalConfig, out: Path, log: RunLog, info: ModelInfo,
                identity: dict[str, Any], state: Any, progress: bool = True) -> None:
    """Score the shard's rows into ``log`` (resumable), then, on the main process, save them as
    ``rows.jsonl`` and mark ``shard.json`` finished. No metrics: the shard holds part of a run."""
    shard = parse_shard(str(cfg.shard))
    model_record = dataclasses.asdict(info)
    if is_main(state):  # unfinished until the end: a merge refuses it, naming it
        write_manifest(out, shard, identity, cfg.to_dict(), model_record)
    share = evaluate_share(model, tokenizer, data, cfg, log, state=state, progress=progress)
    del model
    log.close()
    if not is_main(state):
        return None
    written = save_rows(out)
    write_manifest(out, shard, identity, cfg.to_dict(), model_record, rows_expected=share.rows,
                   rows_written=written, timing=share.timing)
    record_rate(cfg, share.timing)  # for the time estimate of later --dry-run
    log.finish()
    files = [SHARD_FILE, ROWS_FILE, *([LOG_NAME] if (out / LOG_NAME).is_file() else [])]
    print(f"shard {shard[0]}/{shard[1]}: {written} rows of {share.rows} in {share.timing['seconds']:.1f} s "
          f"(no metrics: a shard holds part of the run; join the {shard[1]} shards with "
          f"twinkle-hf merge SHARD_DIR... --output-dir OUT)")
    print(f"\nwrote {out}/: {', '.join(files)}")
    return None
