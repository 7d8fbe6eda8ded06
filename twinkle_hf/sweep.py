"""Evaluate several checkpoints with the same data and the same permutations; write a trend.

`--model 'out/checkpoint-*'` (a glob) or `--model a,b,c` (a list). Permutations depend only on
(seed, question id, order index), so every checkpoint sees exactly the same prompts.
"""

from __future__ import annotations

import csv
import glob
import re
from pathlib import Path
from typing import Any

from .errors import TwinkleError
from .metrics.summarize import headline_scalars

STEP = re.compile(r"(?:checkpoint|step|ckpt)[-_]?(\d+)", re.IGNORECASE)
TREND_COLUMNS = ["checkpoint", "step", "accuracy", "accuracy_stderr", "acc_original", "debiased_accuracy",
                 "all_correct", "fluctuation", "rstd", "ckld", "position_bias", "position_bias_p",
                 "choices_only_accuracy", "letter_text_agreement", "pred_share_A"]


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


def trend_markdown(rows: list[dict[str, Any]]) -> str:
    """One line per checkpoint, in step order."""
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
    lines = ["| " + " | ".join(TREND_COLUMNS) + " |", "|" + "---|" * len(TREND_COLUMNS)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in TREND_COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_trend(rows: list[dict[str, Any]], out: Path) -> list[str]:
    """trend.md, trend.csv, trend.html and (with matplotlib) trend.png; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "trend.md").write_text(trend_markdown(rows), encoding="utf-8")
    with open(out / "trend.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=TREND_COLUMNS, extrasaction="ignore")
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
