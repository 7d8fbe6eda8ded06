"""What a tracker run holds (:class:`TrackedRun`) and one small function per tracker that logs it and
says where it went. Each tracker package is imported here only, when asked for
(trackers.check_trackers has already named any that is missing); each keeps its own offline
setting and folder variables."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = "twinkle-hf"  # the experiment / project name unless the tracker's own variable names one


@dataclass(frozen=True)
class TrackedRun:
    """What one tracker run holds; every tracker logs the same."""

    name: str  # the run's name (the model's folder name; compare: "compare")
    folder: Path  # where tensorboard's event files go unless TENSORBOARD_LOGGING_DIR says elsewhere
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    files: tuple[Path, ...] = ()  # artifacts: results.json, report.html, report.md; compare's X.json, X.html
    text: str = ""  # markdown: report.md, or the comparison (tensorboard's text; a file where none is given)
    table: tuple[Mapping[str, Any], ...] = ()  # compare's verdicts, one mapping per pair
    table_name: str = "verdicts"


def _columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}


def _markdown_table(params: Mapping[str, str]) -> str:
    cell = lambda text: text.replace("|", "\\|").replace("\n", " ")
    return "\n".join(["| setting | value |", "|---|---|", *(f"| {k} | {cell(v)} |" for k, v in params.items())])


def log_mlflow(run: TrackedRun) -> str:
    """MLFLOW_TRACKING_URI (a sqlite file, a server; unset: mlflow's own default), experiment
    MLFLOW_EXPERIMENT_NAME or "twinkle-hf"; params, metrics, the files as artifacts, the table as a table."""
    import mlflow

    if not (os.environ.get("MLFLOW_EXPERIMENT_NAME") or os.environ.get("MLFLOW_EXPERIMENT_ID")):
        mlflow.set_experiment(PROJECT)
    with mlflow.start_run(run_name=run.name) as active:
        mlflow.log_params(dict(run.params))
        mlflow.log_metrics(dict(run.metrics))
        for path in run.files:
            mlflow.log_artifact(str(path))
        if run.table:
            mlflow.log_table(_columns(run.table), artifact_file=f"{run.table_name}_table.json")
        run_id = active.info.run_id
    return f"run {run_id} in {mlflow.get_tracking_uri()}"


def log_wandb(run: TrackedRun) -> str:
    """wandb as its variables say (WANDB_MODE=offline: a run folder under WANDB_DIR, to `wandb sync`
    later), project WANDB_PROJECT or "twinkle-hf"; the config, metrics (also the run's summary),
    the files as one artifact, the table as a wandb.Table."""
    import wandb

    active = wandb.init(project=os.environ.get("WANDB_PROJECT") or PROJECT, name=run.name, config=dict(run.params),
                        job_type="eval")
    try:
        active.log(dict(run.metrics))
        if run.files:
            artifact = wandb.Artifact(re.sub(r"[^\w\-.]", "_", f"{run.name}-files"), type="evaluation")
            for path in run.files:
                artifact.add_file(str(path))
            active.log_artifact(artifact)
        if run.table:
            columns: list[str | int] = list(run.table[0])
            active.log({run.table_name: wandb.Table(columns=columns,
                                                    data=[list(row.values()) for row in run.table])})
    finally:
        active.finish()
    return f"run {active.id} in {Path(active.dir).parent}"


def log_tensorboard(run: TrackedRun) -> str:
    """Event files in ``<output-dir>/tensorboard`` (TENSORBOARD_LOGGING_DIR set: ``$TENSORBOARD_LOGGING_DIR/<run
    name>``): each metric a scalar at step 0 (in double precision), the settings and the markdown report as text."""
    from torch.utils.tensorboard import SummaryWriter

    env = os.environ.get("TENSORBOARD_LOGGING_DIR")
    folder = Path(env) / run.name if env else run.folder / "tensorboard"
    writer = SummaryWriter(log_dir=str(folder))
    try:
        for key, value in run.metrics.items():
            writer.add_scalar(key, value, 0, new_style=True, double_precision=True)  # the number, not a float32
        writer.add_text("config", _markdown_table(run.params), 0)
        if run.text:
            writer.add_text("report", run.text, 0)
    finally:
        writer.close()
    return str(folder)


def log_trackio(run: TrackedRun) -> str:
    """trackio's local store (TRACKIO_DIR, else its folder in the Hugging Face cache), project
    TRACKIO_PROJECT or "twinkle-hf"; the config, metrics, the report as Markdown, the table as a
    trackio.Table, the files as artifacts. No system-metric thread."""
    import trackio

    project = os.environ.get("TRACKIO_PROJECT") or PROJECT
    active = trackio.init(project=project, name=run.name, config=dict(run.params), auto_log_cpu=False,
                          auto_log_gpu=False)
    try:
        trackio.log(dict(run.metrics))
        if run.table:
            trackio.log({run.table_name: trackio.Table(columns=list(run.table[0]),
                                                       data=[list(row.values()) for row in run.table])})
        if run.text:
            trackio.log({"report": trackio.Markdown(run.text)})
        for path in run.files:
            trackio.log_artifact(path, type="evaluation")
    finally:
        trackio.finish()
    return f"project {project}, run {active.name} in {trackio.TRACKIO_DIR}"


CLIENTS: dict[str, Callable[[TrackedRun], str]] = {"mlflow": log_mlflow, "wandb": log_wandb,
                                                   "tensorboard": log_tensorboard, "trackio": log_trackio}
