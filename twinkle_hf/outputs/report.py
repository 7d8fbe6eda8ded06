"""Files and console text from an EvalResult. Called on the main process only."""

from __future__ import annotations

import csv
import dataclasses
import json
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import OneLineParser
from ..metrics.summarize import MetricOptions, summarize_groups
from ..metrics.true_mass import true_mass_blocks, true_option_sets
from ..metrics.twinkle_compare import compare_extractions
from ..schema import Predictions
from ..settings.config import EvalConfig, build_config
from . import plots
from .finished import check_output_dir, clear_run, is_finished
from .html_report import report_html
from .records import FORMAT_VERSION, read_predictions, read_results, write_predictions
from .result import EvalResult
from .suites import suite_block
from .summary import console_summary, report_markdown


def library_versions() -> dict[str, str]:
    """Versions of what produced the numbers."""
    import accelerate
    import datasets
    import numpy
    import torch
    import transformers

    from ..version import __version__

    return {"twinkle_hf": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "accelerate": accelerate.__version__, "datasets": datasets.__version__,
            "numpy": numpy.__version__, "python": platform.python_version()}


def results_document(result: EvalResult) -> dict[str, Any]:
    """The results.json contract."""
    cfg = result.config
    return {
        "format_version": FORMAT_VERSION,
        "config": cfg.to_dict(),
        "seeds": {"base_seed": cfg.seed, "mode": cfg.permutation_mode,
                  "permutations_per_question": {"none": "1", "random": str(cfg.seeds), "cyclic": "k (one per option)",
                                                "all": "k! (every order)"}[cfg.permutation_mode],
                  "original_order_scored": cfg.permutation_mode != "none" and cfg.score_original},
        "model": dataclasses.asdict(result.model) if result.model else None,
        "data_fingerprint": result.data_fingerprint,
        "versions": library_versions(),
        "timing": result.timing,
        "skipped_rows": result.skipped,
        **({"benchmarks": result.benchmarks} if result.benchmarks else {}),
        "metrics": result.metrics["overall"],
        "datasets": result.metrics["datasets"],
        **({"suites": suites} if (suites := suite_block(result.benchmarks, result.metrics["datasets"])) else {}),
        **({"true_mass": result.true_mass} if result.true_mass else {}),
        **twinkle_block(cfg, result.predictions),
    }


def twinkle_block(cfg: EvalConfig, predictions: Predictions) -> dict[str, Any]:
    """``twinkle_extraction`` (both readings of the answers) for a generation run from a Twinkle Eval
    config; nothing otherwise."""
    if not (cfg.from_twinkle and cfg.generates and predictions.generated):
        return {}
    return {"twinkle_extraction": compare_extractions(predictions, cfg.method, cfg.answer_regex)}


SUBJECT_COLUMNS = ["dataset", "subject", "questions", "accuracy", "stderr", "ci95_low", "ci95_high", "std_over_orders",
                   "acc_original", "all_correct", "any_correct", "fluctuation", "debiased_accuracy", "rstd", "ckld"]


def _csv_row(dataset: str, subject: str, m: dict[str, Any]) -> list[Any]:
    acc = m["accuracy"]
    ci = acc.get("ci95") or [None, None]
    value = lambda key: (m.get(key) or {}).get("value")
    return [dataset, subject, acc.get("n_questions", 0), acc.get("value"), acc.get("stderr"), ci[0], ci[1],
            acc.get("std"), value("acc_original"), value("all_correct"), value("any_correct"),
            value("fluctuation"), value("debiased_accuracy"), value("rstd"), value("ckld")]


def write_subject_csv(doc: dict[str, Any], path: Path) -> None:
    """subjects.csv: one row per subject, per dataset (subject "*") and overall."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(SUBJECT_COLUMNS)
        for name, block in doc["datasets"].items():
            writer.writerow(_csv_row(name, "*", block["metrics"]))
            writer.writerows(_csv_row(name, s, m) for s, m in block["subjects"].items())
        writer.writerow(_csv_row("*", "*", doc["metrics"]))


def write_reports(doc: dict[str, Any], out: Path) -> None:
    """results.json, report.md, report.html, subjects.csv and the plots, from a results document."""
    (out / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    write_subject_csv(doc, out / "subjects.csv")
    drawn = plots.draw(doc["metrics"], out)
    note = "" if plots.available() else plots.MISSING
    (out / "report.md").write_text(report_markdown(doc, drawn, note), encoding="utf-8")
    (out / "report.html").write_text(report_html(doc), encoding="utf-8")


def write_outputs(result: EvalResult, output_dir: str | Path, overwrite: bool | None = None) -> Path:
    """Write predictions.jsonl and every report into ``output_dir``. A folder that holds a finished
    run is refused (TwinkleError, nothing touched) unless ``overwrite`` (default: the config's
    ``overwrite``), which first removes that run's files."""
    out = Path(output_dir)
    overwrite = result.config.overwrite if overwrite is None else overwrite
    check_output_dir(out, overwrite, "write elsewhere, or pass overwrite=True (or EvalConfig(overwrite=True))")
    if overwrite and is_finished(out):
        clear_run(out)
    out.mkdir(parents=True, exist_ok=True)
    write_predictions(result.predictions, out / "predictions.jsonl")
    write_reports(results_document(result), out)
    return out


def regenerate(run_dir: str | Path) -> dict[str, Any]:
    """Recompute the metrics of a finished run from its files alone (no model) and rewrite its
    reports; returns the new results document."""
    out = Path(run_dir)
    doc = read_results(out / "results.json")
    known = {f.name for f in dataclasses.fields(EvalConfig)}  # runs written by other versions may differ
    cfg = build_config({k: v for k, v in doc.get("config", {}).items() if k in known}, {})
    predictions = read_predictions(out / "predictions.jsonl")
    metrics = summarize_groups(predictions, MetricOptions.from_config(cfg))
    doc.update({"format_version": FORMAT_VERSION, "metrics": metrics["overall"], "datasets": metrics["datasets"]})
    if predictions.true_options is not None:  # a run of this version wrote them: the mass is recomputed too
        doc["true_mass"] = true_mass_blocks(predictions, true_option_sets(predictions))
    suites = suite_block(doc.get("benchmarks") or {}, metrics["datasets"])
    if suites:
        doc["suites"] = suites
    doc.pop("twinkle_extraction", None)
    doc.update(twinkle_block(cfg, predictions))
    write_reports(doc, out)
    return doc


def main_report(argv: Sequence[str]) -> int:
    """`twinkle-hf report RUN_DIR [RUN_DIR ...]`: each run's reports rebuilt from its files."""
    p = OneLineParser(prog="twinkle-hf report", description="Recompute the metrics and rewrite "
                                "results.json, report.md, report.html, subjects.csv and plots of a run, from its files "
                                "alone.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    args = p.parse_args(argv)
    for run_dir in args.run_dirs:
        print(console_summary(regenerate(run_dir)))
        print(f"\nrewrote the reports in {run_dir}")
    return 0
