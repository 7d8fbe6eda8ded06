"""The README's picture of a report: the headline chart and the letter chart of a run's report.html,
drawn from its results.json into one standalone SVG (the charts report.html shows, no browser needed).

    python scripts/report_picture.py results/<model>/<time> docs/assets/report.svg
"""

from __future__ import annotations

import argparse
import re
import sys
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from twinkle_hf.outputs.html_report import accuracy_interval
from twinkle_hf.outputs.html_svg import interval_chart, letter_chart
from twinkle_hf.outputs.records import read_results
from twinkle_hf.outputs.summary import plain_language

STYLE = ("<style>text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px;fill:#222}"
         "text.small{font-size:10.5px}text.strong{font-weight:bold}text.head{font-size:15px;font-weight:bold}</style>")


def _size(svg: str) -> tuple[float, float]:
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    return float(width), float(height)


def picture(run: Path) -> str:
    """One SVG: the run's model, the accuracy with its 95% interval, the plain-language line, the letters."""
    doc = read_results(run / "results.json")
    metrics = doc["metrics"]
    charts = [interval_chart([accuracy_interval("accuracy", metrics)], 0.0, 1.0, title="Accuracy with 95% interval"),
              letter_chart(metrics.get("letter_dist") or {}, "Letters: predicted (filled) and gold (outlined)")]
    model = Path(str((doc.get("model") or {}).get("name_or_path", "model"))).name
    lines = [f"report.html of {model}", plain_language(metrics)]
    width = max([_size(c)[0] for c in charts] + [7.5 * max(len(line) for line in lines)]) + 20
    body, y = [f'<text x="10" y="22" class="head">{escape(lines[0])}</text>'], 34.0
    for i, chart in enumerate(charts):
        h = _size(chart)[1]
        body.append(chart.replace("<svg ", f'<svg x="10" y="{y:.0f}" ', 1))
        y += h + 10
        if i == 0:
            body.append(f'<text x="10" y="{y + 6:.0f}" class="strong">{escape(lines[1])}</text>')
            y += 20
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}"><rect width="100%" height="100%" fill="white"/>{STYLE}'
            + "".join(body) + "</svg>\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run's --output-dir")
    parser.add_argument("out", type=Path, help="the SVG to write")
    args = parser.parse_args()
    args.out.write_text(picture(args.run), encoding="utf-8")


if __name__ == "__main__":
    main()
