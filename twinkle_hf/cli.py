"""`twinkle-hf` / `python scripts/eval.py`: parse flags, build the config, run, report.

Exit codes: 0 success; 2 bad usage or bad data (one line on stderr, no traceback); 1 anything else.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cli_flags import build_parser, conflicting_flags, name_the_setting, typed_flags
from .errors import TwinkleError
from .settings.config import EvalConfig, build_config
from .settings.files import read_config

EXIT_USAGE = 2


def default_output_dir(model: str) -> Path:
    """results/<model name>/<UTC timestamp>/ (the folder is not created: see claim_folder)"""
    from .outputs.finished import timestamp
    from .sweep import run_name

    name = Path(run_name(model)).stem if os.path.exists(model) else model.replace("/", "__")
    return Path("results") / (name or "model") / timestamp()


def _output_root(cfg: EvalConfig, models: list[str], state: Any, resume: bool) -> tuple[Path, list[str]]:
    """The run's folder, decided by the main process for all, and the lines that say what --overwrite replaced.

    Either --output-dir, refused where it holds a finished run unless --overwrite (which empties
    it), or a new results/<model>/<timestamp>/, claimed so that no other run shares it."""
    from .outputs.finished import claim_folder, guard_output_dirs
    from .runtime.processes import broadcast, is_main
    from .sweep import run_name

    decided: tuple[str | None, Path | None, list[str]] | None = None
    if is_main(state):
        try:
            if cfg.output_dir:
                root = Path(cfg.output_dir)
                outs = [root, *(root / run_name(m) for m in models)] if len(models) > 1 else [root]
                decided = None, root, guard_output_dirs(outs, cfg.overwrite, resume)
            else:
                decided = None, claim_folder(default_output_dir(cfg.model if len(models) == 1 else "sweep")), []
        except TwinkleError as err:
            decided = str(err), None, []
    error, root, told = broadcast(state, decided)  # the others' clocks may have passed a second
    if error:
        raise TwinkleError(error)
    return root, told


def hub_offline_env() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it (1, ON, YES, TRUE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _main_first(state: object) -> contextlib.AbstractContextManager:
    """The main process runs the block first (downloads, files), then the others; one process: as is."""
    return state.main_process_first() if state is not None else contextlib.nullcontext()  # type: ignore[attr-defined]


def _config(args: argparse.Namespace, typed: dict[str, str] | None = None) -> tuple[EvalConfig, list[str]]:
    """defaults <- --config YAML <- the flags the user typed; and what to tell the user about the
    config file (printed here once, and kept for run.log)."""
    from .data.load import parse_column_map

    flags = {k: v for k, v in vars(args).items() if k not in ("config", "column_map", "quiet", "resume", "dry_run")}
    if args.column_map:
        flags["columns"] = parse_column_map(args.column_map)
    if hub_offline_env():  # honoured by the hub libraries and the loaders: recorded as such in results.json
        flags["offline"] = True
    values, notices = read_config(args.config) if args.config else (None, [])
    notices = [f"twinkle-hf: {line}" for line in notices]
    if notices and int(os.environ.get("RANK", "0")) == 0:  # once, not once per process
        print("\n".join(notices), file=sys.stderr)
    try:
        cfg = build_config(values, flags)
    except TwinkleError as err:  # name the setting as the user wrote it: the flag, or the key in the file
        raise TwinkleError(name_the_setting(str(err), typed or {}, values or {}, args.config)) from None
    if not cfg.model:
        raise TwinkleError("--model is required (a local directory, hub id or .gguf file)")
    return cfg, notices


def _load(cfg: EvalConfig, state: Any) -> tuple[Any, Any, Any]:
    """The tokenizer, the model and what results.json says of it, loaded as the processes must."""
    from .models.loading import load_model, load_tokenizer
    from .settings.methods import check_chat_template

    with _main_first(state):
        tokenizer = load_tokenizer(cfg)
        check_chat_template(cfg, tokenizer)
    # a tensor-parallel load is itself collective: every process at once, not the main one first
    with _main_first(state) if cfg.tensor_parallel == 1 else contextlib.nullcontext():
        model, info = load_model(cfg, device=state.device if state is not None else None)
    return tokenizer, model, info


def _evaluate_one(cfg: EvalConfig, data: list, data_id: str, out: Path, state: Any, args: argparse.Namespace) -> Any:
    """Load one model, evaluate it (resumable), and on the main process write its reports (a
    ``--shard``: its rows and manifest only, shard_run.py; returns None)."""
    from .dry_run import record_rate
    from .evaluation import evaluate
    from .outputs import plots
    from .outputs.console_log import LOG_NAME
    from .outputs.report import results_document, write_outputs
    from .outputs.resume import RunLog, run_identity
    from .outputs.summary import console_summary
    from .runtime.processes import is_main

    tokenizer, model, info = _load(cfg, state)
    identity = run_identity(cfg.to_dict(), info.fingerprint, info.revision, data_id)
    log = RunLog(out, identity, args.resume, state)  # decided by the main process, for all
    if cfg.shard:
        from .shard_run import score_shard

        return score_shard(model, tokenizer, data, cfg, out, log, info, identity, state, progress=not args.quiet)
    result = evaluate(model, tokenizer, data, cfg, state=state, model_info=info,
                      progress=not args.quiet, run_log=log)
    del model
    log.close()
    if is_main(state):
        record_rate(cfg, result.timing)  # for the time estimate of later --dry-run
        write_outputs(result, out)
        written = ["results.json", "predictions.jsonl", "report.md", "report.html", "subjects.csv"]
        if cfg.twinkle_results:
            from .outputs.twinkle_results import write_twinkle_results

            twinkle = write_twinkle_results(result, data, out)
            written.append(f"{twinkle[0].relative_to(out)} and {len(twinkle) - 1} eval_results_*.jsonl "
                           f"(Twinkle Eval's)")
        log.finish()
        doc = results_document(result)
        print(console_summary(doc))  # run.log holds the console from here on, if not before
        written += [name for name in (*plots.FILES, LOG_NAME) if (out / name).is_file()]  # run.log: not per checkpoint
        print(f"\nwrote {out}/: {', '.join(written)}")
        if cfg.report_to:
            from .outputs.trackers import eval_run, report_to
            from .sweep import run_name

            for line in report_to(cfg.report_to, eval_run(doc, out, run_name(cfg.model))):
                print(f"twinkle-hf: {line}", file=sys.stderr)
    return result


def run_eval(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    conflicting_flags(parser, argv)
    if args.offline:  # before transformers/datasets are imported: they read these once
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    cfg, notices = _config(args, typed_flags(parser, argv))
    if cfg.report_to:  # a tracker that is not installed: said now, not after the evaluation
        from .outputs.trackers import check_trackers

        check_trackers(cfg.report_to)
    if cfg.shard == "auto":  # the job array's index, said once (and kept for run.log)
        from .settings.shards import shard_from_env

        found, used = shard_from_env(os.environ)
        cfg = dataclasses.replace(cfg, shard=found)
        notices = [*notices, f"twinkle-hf: --shard auto: {used}"]
        if int(os.environ.get("RANK", "0")) == 0:
            print(notices[-1], file=sys.stderr)
    from .engine.quiet import quiet_libraries

    with quiet_libraries(args.quiet):  # no library's progress bar either
        return _run(cfg, args, argv, notices)


def _run(cfg: EvalConfig, args: argparse.Namespace, argv: Sequence[str], notices: list[str]) -> int:
    """A dry run, or the evaluation of each model (a sweep: then the trend)."""
    if args.dry_run:
        from .dry_run import dry_run
        from .sweep import expand_models

        print(dry_run(dataclasses.replace(cfg, model=expand_models(cfg.model)[0]), progress=not args.quiet))
        return 0
    from .data.fingerprint import data_fingerprint
    from .data.sources import fixed_order_notices, load_datasets
    from .metrics.checkpoint_pairs import question_outcomes
    from .models.loading import resolve_device
    from .models.parallel import check_tensor_parallel, launched_processes
    from .outputs.console_log import LOG_NAME, console_log
    from .outputs.finished import dropped_if_unused
    from .runtime.processes import is_main, process_state
    from .sweep import expand_models, run_name, trend_markdown, trend_row, with_pairs, write_trend

    check_tensor_parallel(cfg, launched_processes())
    state = process_state(None, cpu=resolve_device(cfg.device).type == "cpu")
    if state is not None and state.num_processes > 1 and cfg.device_map:
        raise TwinkleError("--device-map splits one model over the GPUs of one process; launch one process "
                           "(python scripts/eval.py) or drop --device-map to run data parallel")
    models = expand_models(cfg.model)
    if len({run_name(m) for m in models}) < len(models):
        raise TwinkleError(f"two checkpoints share a folder name ({', '.join(models)}); their results would "
                           f"overwrite each other, so evaluate them in separate runs")
    if cfg.shard and len(models) > 1:
        raise TwinkleError(f"--shard with {len(models)} checkpoints: shard one checkpoint's run at a time (each "
                           f"shard's rows are joined by twinkle-hf merge)")
    if cfg.shard and not cfg.output_dir:
        raise TwinkleError("--shard needs --output-dir: each shard's own folder, which twinkle-hf merge reads")
    if args.resume and not cfg.output_dir:
        raise TwinkleError("--resume needs the --output-dir of the interrupted run")
    if args.resume and cfg.overwrite:
        raise TwinkleError("--resume continues the run in --output-dir and --overwrite replaces it: give one of them")
    root, told = _output_root(cfg, models, state, args.resume)
    for line in told if is_main(state) else []:
        print(f"twinkle-hf: {line}", file=sys.stderr)
    with dropped_if_unused(root, is_main(state) and not cfg.output_dir), \
            console_log(root, list(argv), enabled=is_main(state), preface=notices + [f"twinkle-hf: {t}" for t in told]):
        with _main_first(state):
            data = load_datasets(cfg)
        for line in fixed_order_notices(data, cfg) if is_main(state) else []:
            print(f"twinkle-hf: {line}", file=sys.stderr)
        if cfg.prompt_style == "twinkle" and is_main(state):
            from .prompts.twinkle_style import left_out_notices

            for line in left_out_notices(data):
                print(f"twinkle-hf: {line}", file=sys.stderr)
        data_id = data_fingerprint(data)
        trend, outcomes = [], []  # outcomes: per question, to pair each checkpoint with the first and the previous
        for model_path in models:
            out = root if len(models) == 1 else root / run_name(model_path)
            result = _evaluate_one(dataclasses.replace(cfg, model=model_path), data, data_id, out, state, args)
            if len(models) > 1:
                trend.append(trend_row(model_path, result.metrics["overall"]))
                outcomes.append(question_outcomes(result.predictions))
        if len(models) > 1 and is_main(state):
            trend = with_pairs(trend, outcomes)
            written = write_trend(trend, root) + [LOG_NAME]
            print("\n" + trend_markdown(trend) + f"\nwrote {root}/: {', '.join(written)}")
    return 0


def run_report(argv: Sequence[str]) -> int:
    from .outputs.report import main_report

    return main_report(argv)


def run_compare(argv: Sequence[str]) -> int:
    from .compare import main_compare

    return main_compare(argv)


def run_merge(argv: Sequence[str]) -> int:
    from .merge import main_merge

    return main_merge(argv)


def run_benchmarks(argv: Sequence[str]) -> int:
    from .outputs.benchmark_list import main_benchmarks

    return main_benchmarks(argv)


COMMANDS = {"eval": run_eval, "report": run_report, "compare": run_compare,  # each one listed in DESCRIPTION
            "benchmarks": run_benchmarks, "merge": run_merge}


def main(argv: Sequence[str] | None = None) -> int:
    """`twinkle-hf [eval] FLAGS`, `twinkle-hf report RUN_DIR`, `twinkle-hf compare RUN_DIR RUN_DIR ...`,
    `twinkle-hf merge SHARD_DIR ... --output-dir OUT`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = run_eval
    if argv and argv[0] in COMMANDS:
        command, argv = COMMANDS[argv[0]], argv[1:]
    try:
        return command(argv)
    except (TwinkleError, FileNotFoundError) as err:
        print(f"twinkle-hf: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("twinkle-hf: interrupted", file=sys.stderr)
        return 130
    finally:
        from .runtime.processes import end_processes

        end_processes()
