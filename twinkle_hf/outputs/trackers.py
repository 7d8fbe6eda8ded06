"""Experiment trackers from the command line: ``--report-to mlflow,wandb,tensorboard,trackio``.

A finished run (or a comparison) becomes one :class:`TrackedRun`: the config as flat params, the
headline numbers under the names results.json uses, per-dataset and per-subject accuracy, the files
worth keeping, a markdown text and (compare) a table of verdicts. Each tracker logs that one shape
(tracker_clients.py), offline where the tracker is told so (MLFLOW_TRACKING_URI, WANDB_MODE=offline,
TENSORBOARD_LOGGING_DIR, TRACKIO_DIR). Every tracker is an optional dependency: :func:`check_trackers`
runs before any weights load, so a missing one is one line that names the pip command.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import TwinkleError
from ..metrics.summarize import headline_scalars
from .tracker_clients import CLIENTS, TrackedRun

# tracker -> (the module it needs, the setup.cfg extra, the package to pip install without a clone)
PACKAGES = {"mlflow": ("mlflow", "mlflow", "mlflow-skinny"), "wandb": ("wandb", "wandb", "wandb"),
            "tensorboard": ("tensorboard", "tensorboard", "tensorboard"),  # written by torch.utils.tensorboard
            "trackio": ("trackio", "trackio", "trackio")}
PARAM_CHARS = 6000  # mlflow's limit on a param's value (the others take more)


def check_trackers(names: Iterable[str]) -> None:
    """Each tracker asked for is importable; else a TwinkleError naming the pip command (exit 2)."""
    for name in names:
        module, extra, package = PACKAGES[name]
        try:
            importlib.import_module(module)
        except ImportError:
            raise TwinkleError(f"--report-to {name}: {module} is not installed; "
                               f'pip install -e ".[{extra}]" (or pip install {package})') from None


def metric_name(*parts: str) -> str:
    """``subject/mmlu/high_school_biology/accuracy``: characters every tracker takes (mlflow takes the
    fewest: letters, digits, ``_ - . / `` and space); anything else becomes ``_``."""
    return "/".join(re.sub(r"[^\w\-. ]", "_", part) for part in parts)


def flat_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A nested config as flat ``key: text`` params (``columns.question``); lists and None as JSON."""
    out: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            out.update(flat_params(value, f"{prefix}{key}."))
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out[prefix + key] = text[:PARAM_CHARS]
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value == value else None  # NaN: left out


def run_metrics(doc: Mapping[str, Any]) -> dict[str, float]:
    """results.json's headline numbers by their own names, then ``dataset/<dataset>/accuracy`` and
    ``subject/<dataset>/<subject>/accuracy``."""
    out = dict(headline_scalars(doc["metrics"]))
    for dataset, block in doc.get("datasets", {}).items():
        groups: list[tuple[tuple[str, ...], Any]] = [(("dataset", dataset), block["metrics"])]
        groups += [(("subject", dataset, subject), m) for subject, m in block.get("subjects", {}).items()]
        for parts, metrics in groups:
            value = _number((metrics.get("accuracy") or {}).get("value"))
            if value is not None:
                out[metric_name(*parts, "accuracy")] = value
    return {k: v for k, v in out.items() if _number(v) is not None}


def eval_run(doc: Mapping[str, Any], out: Path, name: str) -> TrackedRun:
    """A finished run in ``out`` (its results document ``doc``) as a tracker run."""
    files = tuple(out / f for f in ("results.json", "report.html", "report.md") if (out / f).is_file())
    text = (out / "report.md").read_text(encoding="utf-8") if (out / "report.md").is_file() else ""
    return TrackedRun(name=name, folder=out, params=flat_params(doc["config"]), metrics=run_metrics(doc),
                      files=files, text=text)


def verdict_row(pair: Mapping[str, Any]) -> dict[str, Any]:
    """One pair of compare's JSON as a flat table row."""
    ci = pair.get("ci95") or [None, None]
    return {"other": pair["other"], "dataset": pair["dataset"], "metric": pair["metric"],
            "n_questions": pair["n_questions"], "diff": pair["diff"], "stderr": pair["stderr"],
            "ci95_low": ci[0], "ci95_high": ci[1], "p_value": pair["p_value"], "p_holm": pair["p_holm"],
            "mcnemar_p": pair["mcnemar_p"], "right_to_wrong": pair["flips"]["right_to_wrong"],
            "wrong_to_right": pair["flips"]["wrong_to_right"], "tost_p": pair["equivalence"]["p"],
            "equivalent": pair["equivalence"]["equivalent"], "verdict": pair["verdict"]}


VERDICT_NUMBERS = ("diff", "p_value", "p_holm", "mcnemar_p", "right_to_wrong", "wrong_to_right", "tost_p")


def compare_run(document: Mapping[str, Any], markdown: str, files: Sequence[Path], folder: Path,
                settings: Mapping[str, Any]) -> TrackedRun:
    """``twinkle-hf compare``'s verdicts (its JSON ``document``) as a tracker run: each pair's numbers
    as ``verdict/<run>/<metric>/<dataset>/<number>``, the pairs as a table, the files as artifacts."""
    rows = tuple(verdict_row(pair) for pair in document["pairs"])
    metrics = {metric_name("verdict", row["other"], row["metric"], *row["dataset"].split("/"), key): float(value)
               for row in rows for key in VERDICT_NUMBERS if (value := _number(row[key])) is not None}
    params = flat_params({"baseline": document["baseline"], "runs": [r["label"] for r in document["runs"]],
                          **settings})
    return TrackedRun(name="compare", folder=folder, params=params, metrics=metrics, files=tuple(files),
                      text=markdown, table=rows)


def report_to(names: Sequence[str], run: TrackedRun) -> list[str]:
    """Log ``run`` to each tracker in ``names`` (main process only); returns one line per tracker
    saying where it went, or why it could not (a server out of reach, a store it cannot write): the
    run's files are written by then, so a tracker's failure is told, not raised, and the others
    still log. The trackers' own chatter goes to stderr, so stdout stays the report."""
    told = []
    for name in names:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                told.append(f"logged to {name}: {CLIENTS[name](run)}")
        except Exception as err:  # any tracker's own error, said in one line
            why = (str(err).splitlines() or [""])[0][:300]
            told.append(f"warning: could not log to {name} ({type(err).__name__}: {why}); the files are in "
                        f"{run.folder}")
    return told
