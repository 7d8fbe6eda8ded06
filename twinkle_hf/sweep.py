"""Evaluate several checkpoints with the same data and the same permutations; write a trend.

`--model 'out/checkpoint-*'` (a glob) or `--model a,b,c` (a list). Permutations depend only on
(seed, question id, order index), so every checkpoint sees exactly the same prompts, and each is
paired with the first and the previous checkpoint as compare pairs two runs
(metrics/checkpoint_pairs.py): the trend marks the checkpoints significantly better or worse than the first.
"""

from __future__ import annotations

import csv
import glob
import re
from pathlib import Path
from typing import Any

from .errors import TwinkleError
from .metrics.checkpoint_pairs import Outcomes, sweep_pairs
from .metrics.summarize import headline_scalars
from .outputs.verdicts import p_text

STEP = re.compile(r"(?:checkpoint|step|ckpt)[-_]?(\d+)", re.IGNORECASE)
TREND_COLUMNS = ["checkpoint", "step", "accuracy", "accuracy_stderr", "acc_norm", "acc_original", "debiased_accuracy",
                 "all_correct", "fluctuation", "rstd", "ckld", "position_bias", "position_bias_p",
                 "choices_only_accuracy", "letter_text_agreement", "pred_share_A"]
# each checkpoint against the first and the previous one (metrics/checkpoint_pairs.py); the callback's keys
PAIRED_COLUMNS = ["vs_first", "delta_vs_first", "p_vs_first", "p_holm_vs_first", "flips_right_to_wrong_vs_first",
                  "flips_wrong_to_right_vs_first", "acc_original_delta_vs_first", "acc_original_p_vs_first",
                  "delta_vs_previous", "p_vs_previous", "flips_right_to_wrong_vs_previous",
                  "flips_wrong_to_right_vs_previous", "acc_original_delta_vs_previous", "acc_original_p_vs_previous"]
CSV_COLUMNS = TREND_COLUMNS + PAIRED_COLUMNS
# trend.md (and the console) shows the headline of the pairing; trend.csv has it all
MARKDOWN_COLUMNS = TREND_COLUMNS + ["vs_first", "delta_vs_first", "p_holm_vs_first", "flips_right_to_wrong_vs_first",
                                    "flips_wrong_to_right_vs_first", "delta_vs_previous", "p_vs_previous"]


def checkpoint_step(path: str) -> int | None:
    """The training step in a checkpoint's name (`checkpoint-500` -> 500), else None."""
    found = STEP.findall(Path(path.rstrip("/")).name)
    return int(found[-1]) if found else None


def expand_models(spec: str) -> list[str]:
    """One model, a comma-separated list, or a glob; checkpoints ordered by step (numerically)."""
    if any(ch in spec for ch in "*?["):
        models = [p for p in glob.glob(spec) if Path(p).is_dir() or p.endswith(".gguf")]
        if not models:
            raise TwinkleError(f"--model {spec}: the pattern matches no model directory")
    else:
        models = [m.strip() for m in spec.split(",") if m.strip()]
    if len(models) > 1:
        models.sort(key=lambda m: (checkpoint_step(m) is None, checkpoint_step(m) or 0, m))
    return models


def run_name(model: str) -> str:
    """A folder name for one checkpoint's results: one path component, never '.' or '..' (a path
    such as `out/..` is named after the folder it points to), so results stay in --output-dir."""
    path = Path(model.rstrip("/\\"))
    if path.name in ("", ".", "..") and path.exists():
        path = path.resolve()
    name = re.sub(r"[/\\:]+", "__", path.name or model)
    return "model" if not name.strip(".") else name


def trend_row(model: str, overall: dict[str, Any]) -> dict[str, Any]:
    return {"checkpoint": run_name(model), "step": checkpoint_step(model), **headline_scalars(overall)}


def with_pairs(rows: list[dict[str, Any]], outcomes: list[Outcomes]) -> list[dict[str, Any]]:
    """The trend rows (trend_row, in sweep order) with each checkpoint's PAIRED_COLUMNS."""
    return [{**row, **pairs} for row, pairs in zip(rows, sweep_pairs(outcomes), strict=True)]


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "n/a"
    if column.startswith(("p_", "acc_original_p_")):
        return p_text(value)
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def trend_markdown(rows: list[dict[str, Any]]) -> str:
    """One line per checkpoint, in step order."""
    lines = ["| " + " | ".join(MARKDOWN_COLUMNS) + " |", "|" + "---|" * len(MARKDOWN_COLUMNS)]
    lines += ["| " + " | ".join(_cell(c, r.get(c)) for c in MARKDOWN_COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_trend(rows: list[dict[str, Any]], out: Path) -> list[str]:
    """trend.md, trend.csv, trend.html and (with matplotlib) trend.png; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "trend.md").write_text(trend_markdown(rows), encoding="utf-8")
    with open(out / "trend.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    from .outputs import plots
    from .outputs.html_compare import write_trend_html

    write_trend_html(rows, out)
    written = ["trend.md", "trend.csv", "trend.html"]

    if plots.available() and rows:
        plots.trend_plot(rows, out / "trend.png")
        written.append("trend.png")
    return written
