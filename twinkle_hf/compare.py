"""`twinkle-hf compare RUN_DIR RUN_DIR ...`: two or more runs side by side, with paired differences and
verdicts against the baseline (the numbers: outputs/comparison.py and outputs/verdicts.py, the tests:
metrics/paired.py; the page: outputs/html_compare.py)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import OneLineParser, TwinkleError
from .outputs.comparison import Comparison, compare_runs, comparison_markdown
from .outputs.html_compare import write_comparison_html
from .outputs.verdicts import verdict_record

__all__ = ["compare_runs", "comparison_json", "main_compare"]


def comparison_json(comparison: Comparison) -> dict:
    """PATH.json: the baseline, the runs, and one entry per (run, dataset or subject, metric) verdict."""
    return {"baseline": comparison.runs[0].label,
            "runs": [{"label": r.label, "model": r.model, "path": r.path} for r in comparison.runs],
            "pairs": [verdict_record(v) for v in comparison.verdicts]}


def tracker_names(text: str | None) -> tuple[str, ...]:
    """``--report-to``: known tracker names, each installed (else one line naming the pip command)."""
    from .outputs.trackers import check_trackers
    from .settings.checks import validate_trackers
    from .settings.values import coerce_value

    if not text:
        return ()
    try:
        names = coerce_value("report_to", text, ())
        validate_trackers(names)
    except TwinkleError as err:
        raise TwinkleError(str(err).replace("report_to", "--report-to", 1)) from None
    check_trackers(names)
    return names


def log_verdicts(names: Sequence[str], comparison: Comparison, markdown: str, output: Path | None,
                 settings: dict[str, Any]) -> list[str]:
    """The verdicts to each tracker: every pair's numbers, the pairs as a table, the files written as
    artifacts (without --output: the markdown and JSON, written for the trackers alone)."""
    from .outputs.trackers import compare_run, report_to

    document = comparison_json(comparison)
    with tempfile.TemporaryDirectory() as tmp:
        own = Path(tmp) / "compare"  # what --output did not write: the JSON, and without --output the markdown
        written = [] if output is None else [output.with_suffix(".html")] if output.suffix == ".html" else \
            [output, output.with_suffix(".json"), output.with_suffix(".html")]
        extra = {own.with_suffix(".json"): json.dumps(document, indent=1) + "\n", own.with_suffix(".md"): markdown}
        files = written + [path for path in extra if not any(f.suffix == path.suffix for f in written)]
        for path in files:
            if path in extra:
                path.write_text(extra[path], encoding="utf-8")
        folder = output.parent if output else Path(".")
        return report_to(names, compare_run(document, markdown, files, folder, settings))


def main_compare(argv: Sequence[str]) -> int:
    """`twinkle-hf compare RUN_DIR RUN_DIR ... [--labels a,b] [--baseline a] [--margin 1] [--adjust holm]
    [--output FILE.md]`."""
    parser = OneLineParser(prog="twinkle-hf compare", description="Compare two or more runs side by "
                                     "side, with paired differences and verdicts against the baseline.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="--output-dir of an eval run")
    parser.add_argument("--labels", help="comma-separated column names, one per run (default: model names)")
    parser.add_argument("--baseline", metavar="LABEL", help="the run the others are compared with (a label; "
                        "default: the first run)")
    parser.add_argument("--margin", type=float, default=1.0, metavar="POINTS",
                        help="equivalence margin in percentage points: TOST says 'equivalent' when the "
                        "difference lies within ±POINTS (default 1)")
    parser.add_argument("--adjust", choices=("holm", "bh"), default="holm",
                        help="multiple-comparison adjustment over a dataset's subjects and a suite's datasets: "
                        "Holm (default) or Benjamini-Hochberg")
    parser.add_argument("--output", help="also write the markdown to this file, with a self-contained HTML page "
                        "and the verdicts as JSON next to it (FILE.html, FILE.json; an --output ending in .html "
                        "gets the page only)")
    parser.add_argument("--report-to", metavar="TRACKERS", help="also log the verdicts to experiment trackers, "
                        "comma-separated: mlflow, wandb, tensorboard, trackio (as `twinkle-hf eval --report-to`)")
    args = parser.parse_args(argv)
    if not args.margin > 0:
        parser.error(f"--margin must be > 0 percentage points, got {args.margin}")
    trackers = tracker_names(args.report_to)
    labels = [s.strip() for s in args.labels.split(",")] if args.labels else None
    comparison = compare_runs(args.run_dirs, labels, args.baseline, args.margin / 100, args.adjust)
    text = comparison_markdown(comparison)
    print(text, end="")
    if args.output:
        output = Path(args.output)
        if output.suffix != ".html":
            output.write_text(text, encoding="utf-8")
            output.with_suffix(".json").write_text(json.dumps(comparison_json(comparison), indent=1) + "\n",
                                                   encoding="utf-8")
        write_comparison_html(comparison, output.with_suffix(".html"))
    if trackers:
        settings = {"margin": args.margin / 100, "adjust": args.adjust}
        for line in log_verdicts(trackers, comparison, text, Path(args.output) if args.output else None, settings):
            print(f"twinkle-hf: {line}", file=sys.stderr)
    return 0
