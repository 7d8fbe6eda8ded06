"""`twinkle-hf compare RUN_DIR RUN_DIR ...`: two or more runs side by side, with paired differences
against the first run (the numbers: outputs/comparison.py; the page: outputs/html_compare.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .errors import OneLineParser
from .outputs.comparison import compare_runs, comparison_markdown
from .outputs.html_compare import write_comparison_html

__all__ = ["compare_runs", "main_compare"]


def main_compare(argv: Sequence[str]) -> int:
    """`twinkle-hf compare RUN_DIR RUN_DIR ... [--labels a,b] [--output FILE.md]`."""
    parser = OneLineParser(prog="twinkle-hf compare", description="Compare two or more runs side by "
                                     "side, with paired differences against the first run.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="--output-dir of an eval run")
    parser.add_argument("--labels", help="comma-separated column names, one per run (default: model names)")
    parser.add_argument("--output", help="also write the markdown to this file, and a self-contained HTML page "
                        "next to it (FILE.html; an --output ending in .html gets the page only)")
    args = parser.parse_args(argv)
    labels = [s.strip() for s in args.labels.split(",")] if args.labels else None
    comparison = compare_runs(args.run_dirs, labels)
    text = comparison_markdown(comparison)
    print(text, end="")
    if args.output:
        output = Path(args.output)
        if output.suffix != ".html":
            output.write_text(text, encoding="utf-8")
        write_comparison_html(comparison, output.with_suffix(".html"))
    return 0
