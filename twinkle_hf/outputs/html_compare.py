"""comparison.html and trend.html: several runs side by side on one self-contained page.

The numbers are those of comparison.py (the paired differences against the first run), verdicts.py
(the verdicts, first on the comparison page, and the questions that flipped) and of the runs'
results.json documents; the cells are formatted by comparison.py, verdicts.py and summary.py, as in
the markdown, so the pages and the markdown agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from .cells import NA, num, pct
from .comparison import TABLE_ROWS, Comparison, compare_runs, diff_cells, metric_cell
from .html_report import accuracy_interval, page, table
from .html_svg import interval_chart, letter_chart, trend_chart
from .records import read_results
from .subjects import subject_cells
from .verdicts import VERDICT_HEADER, Scores, p_text, qualified, verdict_cells


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def runs_section(c: Comparison) -> list[str]:
    """Each run's accuracy with its 95% interval on one axis, then compare's side-by-side table."""
    chart = interval_chart([accuracy_interval(r.label, r.metrics) for r in c.runs], 0.0, 1.0,
                           title="Accuracy of each run with 95% interval")
    rows = [["questions", *(str(r.n_questions) for r in c.runs)]]
    rows += [[name, *(metric_cell(r.metrics, key, s, d) for r in c.runs)] for name, key, s, d in TABLE_ROWS]
    return ["<h2>Headline</h2>", chart, table(["metric", *(r.label for r in c.runs)], rows)]


FLIPS_SHOWN = 200  # flipped questions per table; PATH.json lists them all


def _question_text(prompt: str | None) -> str:
    """The last paragraph of a logged prompt (the question itself, after any few-shot examples), shortened."""
    if not prompt:
        return NA
    last = [part for part in prompt.strip().split("\n\n") if part.strip()][-1]
    return last if len(last) <= 300 else last[:297] + "..."


def flips_table(c: Comparison, s: Scores) -> list[str]:
    """The questions of ``s`` whose score went down or up from the baseline, with both runs' picks."""
    d = s.values - s.base
    rows = [["right → wrong" if x < 0 else "wrong → right", qualified(q), subject, _question_text(c.texts.get(q)),
             gold, f"{pick_b} ({100 * yb:.0f}%)", f"{pick_o} ({100 * yo:.0f}%)"]
            for x, q, subject, gold, pick_b, pick_o, yb, yo in
            zip(d, s.questions, s.subjects, s.gold, s.picks_base, s.picks_other, s.base, s.values) if abs(x) > 1e-12]
    title = f"<h3>{escape(s.metric)}: {escape(s.other)} vs {escape(c.runs[0].label)}</h3>"
    if not rows:
        return [title, "<p>No question changed.</p>"]
    rows.sort(key=lambda r: r[0])
    more = f"<p>... and {len(rows) - FLIPS_SHOWN} more (the JSON next to the page lists them all).</p>" \
        if len(rows) > FLIPS_SHOWN else ""
    header = ["flip", "question", "subject", "text", "gold", f"{c.runs[0].label} picked (score)",
              f"{s.other} picked (score)"]
    return [title, table(header, rows[:FLIPS_SHOWN], numeric=()), more]


def verdicts_section(c: Comparison) -> list[str]:
    """The verdicts (one sentence per run, metric, dataset and subject), then the questions that flipped."""
    if not c.verdicts:
        return []
    adjusted = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(c.adjust, c.adjust)
    out = ["<h2>Verdicts</h2>",
           f"<p>Each run against <b>{escape(c.runs[0].label)}</b> on the questions both scored: McNemar's exact "
           f"test where a question has one outcome per run, a sign-flip test on the per-question differences for "
           f"shuffled accuracy; p-values {adjusted}-adjusted over the subjects of a dataset and over the datasets; "
           f"equivalence is TOST at ±{100 * c.margin:g} points.</p>",
           table(VERDICT_HEADER, [verdict_cells(v) for v in c.verdicts], numeric=(3, 4, 5, 6, 7, 8)),
           "<h2>Flipped questions</h2>",
           "<p>Picks are letters of the options in their original order, one per order both runs scored; "
           "the score is the share of those orders answered right.</p>"]
    for s in c.scores:
        out += flips_table(c, s)
    return out


def diff_label(metric: str, other: str, runs: int) -> str:
    """A paired-difference row is a metric: against one other run, the metric alone; else the metric
    first (a shortened label keeps both ends), then the run."""
    return metric if runs == 2 else f"{metric}: {other}"


def diffs_section(c: Comparison) -> list[str]:
    """The paired differences against the first run: a chart around zero and compare's table."""
    out = ["<h2>Paired differences</h2>",
           f"<p>Run − <b>{escape(c.runs[0].label)}</b> on the questions and orders both scored, in percentage "
           "points; stderr clustered by question. An interval that does not cross the dashed zero line is a "
           "difference the shared questions resolve.</p>"]
    if not c.diffs:
        return [*out, "<p>(none: no run shares rows with the baseline)</p>"]
    intervals = [(diff_label(d.metric, d.other, len(c.runs)), _finite(d.diff), _finite(d.ci95[0]),
                  _finite(d.ci95[1])) for d in c.diffs]
    reach = max([abs(v) for _, *vs in intervals for v in vs if v is not None] + [0.01])
    chart = interval_chart(intervals, -reach, reach, zero=0.0, signed=True, title="Paired differences",
                           tooltips=[f"{d.other}: {d.metric}" for d in c.diffs])
    header = ["metric", "run", "questions", "diff", "stderr", "95% CI"]
    return [*out, chart, table(header, [diff_cells(d) for d in c.diffs], numeric=(2, 3, 4, 5))]


def letters_section(labels: Sequence[str], blocks: Sequence[dict[str, Any]]) -> list[str]:
    """One small letter-distribution chart per run, in a row."""
    cards = [f'<div class="card"><h3>{escape(label)}</h3>'
             f'{letter_chart(m.get("letter_dist") or {}, f"Letter distribution: {label}") or NA}</div>'
             for label, m in zip(labels, blocks)]
    return ["<h2>Letters</h2>", '<div class="row">' + "".join(cards) + "</div>"]


def subjects_section(labels: Sequence[str], docs: Sequence[dict[str, Any]]) -> list[str]:
    """Accuracy ± stderr per dataset and subject (rows, in first-seen order), one column per run."""
    keys: dict[tuple[str, str], None] = {}
    for doc in docs:
        for name, block in (doc.get("datasets") or {}).items():
            keys[(name, "*")] = None
            keys.update({(name, s): None for s in block.get("subjects") or {}})
    if not keys:
        return ["<h2>Per subject</h2>", f"<p>{NA} (the runs' results.json hold no per-subject metrics)</p>"]

    def cell(doc: dict[str, Any], name: str, subject: str) -> str:
        block = (doc.get("datasets") or {}).get(name) or {}
        m = block.get("metrics") if subject == "*" else (block.get("subjects") or {}).get(subject)
        return subject_cells(m)[1] if m else NA

    rows = [[name if subject == "*" else f"\u2003{subject}", *(cell(d, name, subject) for d in docs)]
            for name, subject in keys]
    rows.append(["overall", *(subject_cells(d.get("metrics") or {})[1] for d in docs)])
    groups = [subject == "*" for _, subject in keys] + [True]
    return ["<h2>Per subject</h2>", "<p>accuracy % ± stderr</p>",
            table(["dataset / subject", *labels], rows, group_rows=groups)]


def side_by_side(c: Comparison, docs: Sequence[dict[str, Any]]) -> list[str]:
    """Paired differences, letters, per subject, then which run is which and the notes."""
    labels = [r.label for r in c.runs]
    runs = "".join(f"<li><b>{escape(r.label)}</b>: {escape(r.model)} ({escape(r.path)})</li>" for r in c.runs)
    notes = "".join(f"<li>{escape(n)}</li>" for n in c.notes)
    return [*diffs_section(c), *letters_section(labels, [r.metrics for r in c.runs]),
            *subjects_section(labels, docs), f"<h2>Runs</h2><ul>{runs}</ul>",
            f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""]


def comparison_html(c: Comparison, docs: Sequence[dict[str, Any]] = ()) -> str:
    """comparison.html: ``c`` (compare_runs) and the runs' results documents, in the same order."""
    title = "twinkle_hf comparison: " + " vs ".join(r.label for r in c.runs)
    return page(title, [f"<h1>{escape(title)}</h1>", *verdicts_section(c), *runs_section(c),
                        *side_by_side(c, docs)])


PAIRED_HEADER = ["vs first", "Δ vs first (points)", "p vs first (Holm)", "right→wrong vs first",
                 "wrong→right vs first", "Δ vs previous (points)", "p vs previous"]


def paired_cells(r: dict[str, Any]) -> list[str]:
    """A trend row's pairing with the first and the previous checkpoint (sweep.PAIRED_COLUMNS);
    n/a in the first checkpoint's row."""
    if "delta_vs_first" not in r:
        return [NA] * len(PAIRED_HEADER)
    p = lambda key: p_text(r[key]) if r.get(key) is not None else NA
    count = lambda key: str(r[key]) if r.get(key) is not None else NA
    points = lambda key: f"{100 * r[key]:+.1f}" if r.get(key) is not None else NA
    return [str(r.get("vs_first", "")), points("delta_vs_first"), p("p_holm_vs_first"),
            count("flips_right_to_wrong_vs_first"), count("flips_wrong_to_right_vs_first"),
            points("delta_vs_previous"), p("p_vs_previous")]


def trend_html(rows: Sequence[dict[str, Any]], c: Comparison | None = None,
               docs: Sequence[dict[str, Any]] = ()) -> str:
    """trend.html of a sweep: ``rows`` (sweep.trend_row, in step order) as a chart and a table, then,
    with the checkpoints' comparison, everything comparison.html shows but the headline."""
    labels = [str(r["step"]) if r.get("step") is not None else str(r.get("checkpoint")) for r in rows]
    series = [("accuracy ± stderr", [r.get("accuracy") for r in rows], ""),
              ("original order", [r.get("acc_original") for r in rows], "6 3"),
              ("debiased", [r.get("debiased_accuracy") for r in rows], "2 2")]
    chart = trend_chart(labels, series, [r.get("accuracy_stderr") for r in rows], [r.get("vs_first", "") for r in rows])
    header = ["checkpoint", "step", "accuracy % ± stderr", "acc_original %", "debiased %", "all_correct %",
              "fluctuation %", "RStd", "CKLD", *PAIRED_HEADER]
    cells = [[str(r.get("checkpoint")), str(r.get("step") if r.get("step") is not None else "-"),
              f"{pct(r.get('accuracy'))} ± {pct(r.get('accuracy_stderr'))}",
              *(pct(r.get(k)) for k in ("acc_original", "debiased_accuracy", "all_correct", "fluctuation")),
              num(r.get("rstd"), 2), num(r.get("ckld"), 4), *paired_cells(r)] for r in rows]
    body = ["<h1>twinkle_hf checkpoint trend</h1>", "<h2>Trend</h2>", chart or f"<p>{NA}</p>", table(header, cells)]
    if c is not None:
        body += side_by_side(c, docs)
    return page("twinkle_hf checkpoint trend", body)


def write_comparison_html(c: Comparison, path: Path) -> None:
    """comparison_html of ``c`` into ``path``, reading each run's results.json again."""
    docs = [read_results(Path(r.path) / "results.json") for r in c.runs]
    path.write_text(comparison_html(c, docs), encoding="utf-8")


def write_trend_html(rows: Sequence[dict[str, Any]], out: Path) -> None:
    """trend.html in a sweep's folder, whose checkpoint runs lie in ``out / row["checkpoint"]``;
    the side-by-side sections need at least two of them on disk."""
    dirs = [out / str(r.get("checkpoint")) for r in rows]
    complete = len(dirs) > 1 and all((d / "results.json").is_file() and (d / "predictions.jsonl").is_file()
                                     for d in dirs)
    c = compare_runs(dirs, [str(r["checkpoint"]) for r in rows]) if complete else None
    docs = [read_results(d / "results.json") for d in dirs] if complete else []
    (out / "trend.html").write_text(trend_html(rows, c, docs), encoding="utf-8")
