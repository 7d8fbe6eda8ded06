"""`twinkle-hf merge SHARD_DIR... --output-dir OUT`: the N folders of one ``--shard K/N`` split
joined into the run they split, written as a one-process run writes it.

The shards are checked first (outputs/shards.py: one run, 0..N-1 each once, each finished), then the
run is evaluated as a resumed run whose every row is already saved: the same prompts, the same
predictions, the same metrics code. It needs the data, the tokenizer and the model's config, read
offline; never the weights (models/rows_only.py). Anything wrong: one line, exit 2, nothing written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .engine.stats import ScoreStats, timing_record
from .errors import OneLineParser, TwinkleError
from .formulations.keys import Key
from .outputs.result import EvalResult
from .outputs.shards import Shard, check_shards, read_shard, shard_rows
from .settings.config import EvalConfig, build_config


class ShardRows:
    """Every shard's rows, as the driver reads a resumed run's log: all rows are done, none is run."""

    complete = True

    def __init__(self, done: Mapping[Key, Mapping[str, Any]]) -> None:
        self.done = done

    def append(self, rows: Any) -> None:
        raise AssertionError("a merge runs no row")  # internal invariant: the driver refuses first


def shard_folders(patterns: Sequence[str]) -> list[Path]:
    """The folders named, a glob (``'out/shard-*'``) expanded in sorted order to the folders it matches
    (a job's log files beside them, ``shard-3.out``, are not shards)."""
    folders: list[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            found = sorted(f for f in glob.glob(pattern) if Path(f).is_dir())
            if not found:
                raise TwinkleError(f"merge: {pattern!r} matches no folder; pass the --output-dir of each shard")
            folders += [Path(f) for f in found]
        else:
            folders.append(Path(pattern))
    return folders


def merged_config(shard: Shard, out: Path, overwrite: bool) -> EvalConfig:
    """The run the shards split: their config without the shard, written to ``out``."""
    known = {f.name for f in dataclasses.fields(EvalConfig)}
    cfg = build_config({k: v for k, v in shard.config.items() if k in known}, {})
    return dataclasses.replace(cfg, shard=None, output_dir=str(out), overwrite=overwrite)


def merged_timing(shards: list[Shard], result: EvalResult) -> dict[str, Any]:
    """results.json ``timing``: the shards' counts and seconds summed (compute time, not wall time:
    shards run side by side), each shard's listed, and how each was spread over its processes."""
    each = [s.timing or {} for s in sorted(shards, key=lambda s: s.index)]
    counts = {f.name for f in dataclasses.fields(ScoreStats)}
    stats = ScoreStats.merge([ScoreStats(**{k: v for k, v in t.items() if k in counts}) for t in each])
    timing = timing_record(stats, result.predictions, sum(float(t.get("seconds") or 0) for t in each),
                           int(result.timing.get("fewshot_shortened_rows") or 0))
    timing["parallel"] = {"mode": "shards", "shards": len(shards),
                          "per_shard": [t.get("parallel") for t in each]}
    timing["shards"] = [{"shard": f"{s.index}/{s.count}", "folder": str(s.folder), "rows_written": s.rows_written,
                         **{k: v for k, v in t.items() if k != "parallel"}}
                        for s, t in zip(sorted(shards, key=lambda s: s.index), each)]
    return timing


def merge_shards(shards: list[Shard], out: Path, overwrite: bool = False) -> tuple[EvalResult, list]:
    """The run of ``shards`` (read_shard), checked and evaluated from their rows (nothing written);
    also the datasets, for Twinkle Eval's files."""
    from .data.fingerprint import data_fingerprint
    from .data.sources import load_datasets, quiet_datasets
    from .evaluation import evaluate
    from .models.loading import ModelInfo, load_tokenizer
    from .models.rows_only import rows_only_model
    from .outputs.finished import check_output_dir

    if out.resolve() in {s.folder.resolve() for s in shards}:
        raise TwinkleError(f"merge: --output-dir {out} is one of the shards' folders; write the run elsewhere")
    check_shards(shards)
    check_output_dir(out, overwrite)  # a finished run (a finished merge too) is refused before any work
    cfg = merged_config(shards[0], out, overwrite)
    with quiet_datasets():
        data = load_datasets(cfg)
    found = data_fingerprint(data)
    if found != shards[0].identity.get("data_fingerprint"):
        scored = shards[0].identity.get("data_fingerprint")
        raise TwinkleError(f"merge: the data read now (fingerprint {found}) are not what the shards scored "
                           f"({scored}); merge where the shards' data are unchanged")
    tokenizer = load_tokenizer(cfg)
    info = ModelInfo(**shards[0].model) if shards[0].model else None
    result = evaluate(rows_only_model(cfg), tokenizer, data, cfg, model_info=info, progress=False,
                      run_log=ShardRows(shard_rows(shards)))
    return dataclasses.replace(result, timing=merged_timing(shards, result)), data


def main_merge(argv: Sequence[str]) -> int:
    """`twinkle-hf merge SHARD_DIR... --output-dir OUT`."""
    p = OneLineParser(prog="twinkle-hf merge", description="Join the folders of the --shard 0/N .. N-1/N runs of "
                      "one evaluation into the run they split: results.json, predictions.jsonl and the reports, as "
                      "one process would have written them. Needs the data, the tokenizer and the model's config "
                      "(offline), not its weights.")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR", help="each shard's --output-dir, or a glob")
    p.add_argument("--output-dir", required=True, help="where the merged run is written (a folder holding a "
                   "finished run is refused unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace a finished run in --output-dir")
    args = p.parse_args(argv)
    with _offline():  # merge reads what the shards read, from local files
        return _merge(args)


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """The hub libraries told to stay offline while merge reads, then as they were (merge may run in a
    caller's process, which keeps its own settings)."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(names, "1"))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _merge(args: Any) -> int:
    from .outputs.finished import clear_run
    from .outputs.report import results_document, write_outputs
    from .outputs.summary import console_summary

    out = Path(args.output_dir)
    folders = shard_folders(args.shard_dirs)
    shards = [read_shard(f) for f in folders]
    trackers = _trackers(shards)
    result, data = merge_shards(shards, out, args.overwrite)
    told = clear_run(out) if args.overwrite else ""
    if told:
        print(f"twinkle-hf: {told}")
    write_outputs(result, out)
    written = ["results.json", "predictions.jsonl", "report.md", "report.html", "subjects.csv"]
    if result.config.twinkle_results:
        from .outputs.twinkle_results import write_twinkle_results

        twinkle = write_twinkle_results(result, data, out)
        written.append(f"{twinkle[0].relative_to(out)} and {len(twinkle) - 1} eval_results_*.jsonl (Twinkle Eval's)")
    doc = results_document(result)
    print(console_summary(doc))
    print(f"\nmerged {len(result.timing['shards'])} shards; wrote {out}/: {', '.join(written)}")
    if trackers:  # the shards' --report-to: a shard has no numbers to log, the merged run has
        from .outputs.trackers import eval_run, report_to
        from .sweep import run_name

        for line in report_to(trackers, eval_run(doc, out, run_name(result.config.model))):
            print(f"twinkle-hf: {line}", file=sys.stderr)
    return 0


def _trackers(shards: list[Shard]) -> tuple[str, ...]:
    """The trackers the shards' runs named (``--report-to``), checked installed before any work."""
    from .outputs.trackers import check_trackers

    asked = [shard.config.get("report_to") or [] for shard in shards]
    names = tuple(dict.fromkeys(name for names in asked for name in names))
    check_trackers(names)
    return names
