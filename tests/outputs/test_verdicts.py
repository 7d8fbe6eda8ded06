"""The position-bias verdict and the choices-only line where a reader meets them: report.md, report.html,
the console, compare's table and a sweep's trend row; n/a with its reason where the test cannot work."""

from __future__ import annotations

from html import escape

import numpy as np

from twinkle_hf.metrics.summarize import summarize_groups
from twinkle_hf.outputs.comparison import metric_cell
from twinkle_hf.outputs.html_report import report_html
from twinkle_hf.outputs.summary import console_summary, report_markdown
from twinkle_hf.schema import LetterColumns, Predictions
from twinkle_hf.sweep import trend_markdown, trend_row


def question(qid: str, perms: list[list[int]], gold: int, picks: list[int]) -> list[dict]:
    """Rows of one question; ``gold`` and ``picks[r]`` are original option indices."""
    return [{"id": qid, "order": r, "perm": p, "answer": p.index(gold), "pred": p.index(picks[r])}
            for r, p in enumerate(perms)]


def cyclic(k: int, base: list[int]) -> list[list[int]]:
    return [base[s:] + base[:s] for s in range(k)]


def build(rows: list[dict]) -> Predictions:
    n = len(rows)
    return Predictions(dataset=["ds"] * n, id=[r["id"] for r in rows], subject=["s"] * n,
                       order_index=np.array([r["order"] for r in rows]), perm=[r["perm"] for r in rows],
                       answer=np.array([r["answer"] for r in rows]), pred=np.array([r["pred"] for r in rows]),
                       letters=LetterColumns([np.eye(len(r["perm"]))[r["pred"]] for r in rows], np.ones(n)))


def _doc(rows: list[dict]) -> dict:
    metrics = summarize_groups(build(rows))
    return {"metrics": metrics["overall"], "datasets": metrics["datasets"], "config": {}, "seeds": {}}


def _always_a(n: int = 12) -> list[dict]:
    return [r for i in range(n) for p in [cyclic(4, [(i + j) % 4 for j in range(4)])]
            for r in question(f"q{i}", p, gold=0, picks=[x[0] for x in p])]


def test_the_verdict_in_every_report_and_the_compare_and_trend_cells():
    doc = _doc(_always_a())
    line = "Position bias: strong evidence of a preference for A (p < 0.001): A is chosen 75.0 points"
    assert line in report_markdown(doc) and line in console_summary(doc) and escape(line) in report_html(doc)
    assert metric_cell(doc["metrics"], "position_bias", 100, 1) == "A +75.0 (p < 0.001)"
    row = trend_row("out/checkpoint-10", doc["metrics"])
    assert row["position_bias"] == 0.75 and 0 < row["position_bias_p"] < 0.001
    assert "0.750" in trend_markdown([row])


def test_without_shuffling_the_reports_say_n_a_and_why():
    doc = _doc([r for i in range(6) for r in question(f"q{i}", [[0, 1, 2, 3]], gold=i % 4, picks=[0])])
    assert "Position bias: n/a (the options were shown in their original order only" in report_markdown(doc)
    assert metric_cell(doc["metrics"], "position_bias", 100, 1) == "n/a"
    assert "position_bias" not in trend_row("m", doc["metrics"])  # a trend shows n/a, never a 0


def test_a_run_without_the_probe_has_no_choices_only_line_and_old_runs_have_no_verdict():
    doc = _doc(_always_a())
    assert "Choices only" not in report_markdown(doc)
    del doc["metrics"]["position_bias"]
    assert "Position bias" not in report_markdown(doc) and metric_cell(doc["metrics"], "position_bias", 1, 1) == "n/a"
    assert np.isfinite(doc["metrics"]["accuracy"]["value"])
