"""The inline SVG charts: nothing clipped at an edge, no two labels printed over each other, and
labels that still tell runs and metrics apart when they must be shortened."""

from __future__ import annotations

import re
import shutil
from html import unescape

import pytest

from twinkle_hf.cli import main
from twinkle_hf.outputs.comparison import compare_runs
from twinkle_hf.outputs.html_compare import comparison_html
from twinkle_hf.outputs.html_svg import (
    SIZE,
    SMALL,
    interval_chart,
    letter_chart,
    order_chart,
    short_labels,
    text_width,
    trend_chart,
)
from twinkle_hf.outputs.records import read_results

TEXT = re.compile(r'<text x="([\d.-]+)" y="([\d.-]+)" text-anchor="(\w+)"( class="(\w+)")?>(.*?)</text>')


def texts(svg: str) -> list[tuple[float, float, float, str]]:
    """Every text of one chart as (left, right, baseline, text), its extent estimated by text_width."""
    out = []
    for x, y, anchor, _, cls, text in TEXT.findall(svg):
        w = text_width(unescape(text), SMALL if cls == "small" else SIZE)
        left = float(x) - {"start": 0, "middle": w / 2, "end": w}[anchor]
        out.append((left, left + w, float(y), unescape(text)))
    return out


def assert_drawn_whole(svg: str) -> None:
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    found = texts(svg)
    assert found
    for left, right, baseline, text in found:
        assert left >= 0 and right <= width, (text, left, right, width)
        assert 0 < baseline <= height, (text, baseline, height)
    for i, (l1, r1, y1, t1) in enumerate(found):  # no two texts on one spot
        for l2, r2, y2, t2 in found[i + 1:]:
            assert not (abs(y1 - y2) < SMALL and l1 < r2 and l2 < r1), (t1, t2)


def test_close_mean_and_original_lines_get_labels_apart_and_inside():
    """The report's case: "original order 25.0%" printed over "mean 24.5%", cut at the right edge."""
    svg = order_chart([0.25, 0.23, 0.26, 0.24], mean=0.245, original=0.25)
    assert "original order 25.0%" in svg and "mean 24.5%" in svg
    assert_drawn_whole(svg)


@pytest.mark.parametrize("mean", [0.0, 0.5, 0.999, 1.0])
def test_order_chart_labels_fit_for_any_values(mean):
    assert_drawn_whole(order_chart([mean] * 30, mean=mean, original=mean))


def test_interval_text_is_not_cut_at_the_right_edge():
    svg = interval_chart([("accuracy", 0.245, 0.208, 0.282)], 0.0, 1.0)
    assert "24.5% [20.8, 28.2]" in svg
    assert_drawn_whole(svg)
    assert_drawn_whole(interval_chart([("accuracy: a-long-checkpoint-name-1000", -0.5, -1.0, 0.2)], -1.0, 1.0,
                                      zero=0.0, signed=True))


def test_letter_and_trend_charts_fit_their_text():
    assert_drawn_whole(letter_chart({"A": {"pred": 1.0, "gold": 0.25}, "B": {"pred": 0.0, "gold": 0.75}}))
    assert_drawn_whole(trend_chart(["100", "200"], [("accuracy ± stderr", [0.25, 1.0], ""),
                                                    ("original order", [0.999, None], "6 3")]))


def test_shortened_labels_stay_distinct():
    same_start = ["SmolLM2-135M-Instruct.Q4_1 (results-2024-first)", "SmolLM2-135M-Instruct.Q4_1 (results-2024-second)"]
    short = short_labels(same_start)
    assert len(set(short)) == 2 and all(len(s) <= 28 for s in short)
    assert all("…" in s for s in short)
    assert short_labels(["abc", "abd"]) == ["abc", "abd"]


def test_compare_page_tells_two_runs_of_one_model_apart_and_names_metrics(biased_model_dir, all_a_dir, tmp_path):
    run = tmp_path / "results-of-a-long-folder-name-first"
    assert main(["--model", str(biased_model_dir), "--dataset", str(all_a_dir), "--output-dir", str(run), "--quiet",
                 "--device", "cpu", "--shuffle-mode", "cyclic", "--limit", "3"]) == 0
    other = shutil.copytree(run, tmp_path / "results-of-a-long-folder-name-second")
    c = compare_runs([run, other])
    page = comparison_html(c, [read_results(run / "results.json"), read_results(other / "results.json")])
    charts = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    headline = next(svg for svg in charts if "Accuracy of each run" in svg)
    shown = [t for _, _, _, t in texts(headline) if not t.endswith("%") and "[" not in t]
    assert len(set(shown)) == len(shown) == 2, shown  # two runs, two different names
    diffs = next(svg for svg in charts if "<title>Paired differences" in svg)
    labels = {t for _, _, _, t in texts(diffs) if t[0] not in "+-−0123456789"}
    assert {d.metric for d in c.diffs} <= labels  # each row says its metric (one other run: the metric alone)
    for svg in charts:
        assert_drawn_whole(svg)
