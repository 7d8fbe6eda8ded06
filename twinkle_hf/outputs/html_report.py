"""report.html: one self-contained page per run (inline CSS and SVG, nothing loaded from anywhere).

Pure string building from the results document, like report.md (summary.py), whose formatted
cells it reuses, so both show the same numbers. Every string from the run (model, dataset and
subject names, reasons) is escaped; a metric that is missing or does not apply reads "n/a".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from ..schema import plural
from .cells import NA, pct
from .html_svg import Interval, interval_chart, letter_chart, order_chart
from .subjects import na_notes, subject_cells, subject_header, subject_rows
from .summary import (
    HEADLINE_HEADER,
    INTERVAL,
    cautions,
    headline_rows,
    letter_note,
    letter_rows,
    plain_language,
    reading_notes,
    run_lines,
    run_title,
    verdict_lines,
)
from .twinkle_block import HEADER, TITLE, twinkle_parts

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:1.5em auto;
padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.4em;margin-bottom:.2em;word-break:break-all}h2{font-size:1.15em;margin-top:1.6em;
border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.group td{font-weight:bold;background:#fafafa}
.headline{font-size:2.2em;font-weight:bold;margin:.2em 0}.headline small{font-size:.45em;font-weight:normal}
.plain{font-size:1.1em;font-weight:bold}.caution{background:#fff4d6;border-left:4px solid #d9a400;padding:.5em}
.meta{color:#444;font-size:.9em}.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.card h3{font-size:1em;margin:.3em 0}svg text{font-size:12px;fill:#222}svg text.small{font-size:10.5px}
svg text.strong{font-weight:bold}code{background:#f2f2f2;padding:0 3px}
@media print{body{max-width:none}}
"""


def na(text: str) -> str:
    """A formatted cell, or "n/a" where it holds no number ("-", "- ± -": the metric is missing)."""
    return NA if text.strip() and not set(text) - set("-±% ") else text


def inline(text: str) -> str:
    """Escaped text, with report.md's `code` and **bold** marks kept as HTML."""
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def page(title: str, body: Iterable[str]) -> str:
    """A whole HTML document: ``title`` is escaped, ``body`` is markup."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] | None = None,
          group_rows: Sequence[bool] = ()) -> str:
    """An HTML table of plain-text cells (escaped here; missing ones read n/a); the ``numeric``
    columns (default: all but the first) are right-aligned; rows flagged in ``group_rows`` are bold."""
    right = set(range(1, len(header)) if numeric is None else numeric)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = []
    for i, row in enumerate(rows):
        cells = "".join(f'<td{" class=num" if j in right else ""}>{escape(na(str(c)))}</td>'
                        for j, c in enumerate(row))
        group = ' class="group"' if i < len(group_rows) and group_rows[i] else ""
        lines.append(f"<tr{group}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def accuracy_interval(label: str, metrics: dict[str, Any]) -> Interval:
    """(label, accuracy, 95% low, 95% high) of a metrics block, for interval_chart."""
    acc = metrics.get("accuracy") or {}
    ci = acc.get("ci95") or [None, None]
    return label, acc.get("value"), ci[0], ci[1]


def headline_html(metrics: dict[str, Any]) -> list[str]:
    """The accuracy with its error bar and 95% interval, large, then the plain-language line and cautions."""
    _, shown, err, _ = headline_rows(metrics)[0]
    cells = subject_cells(metrics)
    if na(shown) == NA:
        big = f'{NA} <small>({escape(err or "not computed")})</small>'
    else:
        stderr = err.split(f"({INTERVAL}")[0].strip()  # the interval comes from the subject cells below
        parts = [f"± {stderr} (stderr)"] if stderr else []
        parts += [f"95% interval {na(cells[2])}", plural(int(cells[0]), "question")]
        big = f"{escape(shown)} <small>{escape(' · '.join(parts))}</small>"
    chart = interval_chart([accuracy_interval("accuracy", metrics)], 0.0, 1.0, title="Accuracy with 95% interval")
    plain = plain_language(metrics)
    return ["<h2>Headline</h2>", f'<p class="headline" id="headline">accuracy {big}</p>', chart,
            f'<p class="plain">{inline(plain)}</p>' if plain else "",
            *[f'<p class="verdict">{escape(line)}</p>' for line in verdict_lines(metrics)],
            *[f'<p class="caution">{inline(line)}</p>' for line in cautions(metrics)]]


def orders_html(metrics: dict[str, Any]) -> list[str]:
    """Accuracy per order (chart and a one-line summary), or why there is none."""
    acc = metrics.get("accuracy") or {}
    per = [v for v in acc.get("per_order") or [] if v is not None]
    original = (metrics.get("acc_original") or {}).get("value")
    if not per:
        return [f"<p>Accuracy per order: {NA} ({escape(acc.get('reason') or 'no permuted rows')}).</p>"]
    original_text = f"; original order {pct(original)}%" if original is not None else ""
    if len(per) == 1:
        return [f"<p>One order per question (no shuffling): accuracy {pct(per[0])}%, spread over orders "
                f"{NA}{escape(original_text)}.</p>"]
    spread = (f"{len(per)} orders: lowest {pct(min(per))}%, highest {pct(max(per))}%, std {pct(acc.get('std'))} "
              f"points (a spread, not an error bar)")
    return [order_chart(per, acc.get("value"), original), f"<p>{escape(spread + original_text)}.</p>"]


def subjects_html(doc: dict[str, Any]) -> str:
    """summary.subject_table as HTML: datasets and overall in bold, subjects indented."""
    rows = subject_rows(doc)
    header, shape = subject_header(doc)
    cells = [[name if kind != "subject" else f"\u2003{name}", *subject_cells(m, shape)] for kind, name, m in rows]
    notes = "".join(f"<li>{escape(note[2:])}</li>" for note in na_notes(doc, most=50))  # why a cell is n/a
    return table(header, cells, group_rows=[kind != "subject" for kind, _, _ in rows]) + (
        f'<ul class="notes">{notes}</ul>' if notes else "")


def about_html(doc: dict[str, Any]) -> str:
    """The model and the dataset(s), one line each, for under the title."""
    model, cfg = doc.get("model") or {}, doc.get("config") or {}
    about = [str(model["kind"])] if model.get("kind") else []
    about += [f"{model['parameters']:,} parameters"] if isinstance(model.get("parameters"), int) else []
    names, paths = list(doc.get("datasets") or {}), [str(p) for p in cfg.get("datasets") or []]
    facts = [f"model: {run_title(doc)}" + (f" ({', '.join(about)})" if about else ""),
             f"dataset(s): {', '.join(names) or NA}" + (f" from {', '.join(paths)}" if paths else "")]
    return '<p class="meta">' + "<br>".join(escape(f) for f in facts) + "</p>"


def settings_html(doc: dict[str, Any]) -> str:
    """What ran (summary.run_lines), the scoring method and the versions."""
    facts = [line.removeprefix("- ") for line in run_lines(doc)]
    facts.append(f"method: {(doc.get('config') or {}).get('method', 'logit')}")
    version = (doc.get("versions") or {}).get("twinkle_hf")
    if version:
        facts.append(f"twinkle_hf {version}, results format {doc.get('format_version', '?')}")
    return '<ul class="meta">' + "".join(f"<li>{escape(f)}</li>" for f in facts) + "</ul>"


def twinkle_html(doc: dict[str, Any]) -> list[str]:
    """The "coming from Twinkle Eval" block (twinkle_block.py), where the run has one."""
    parts = twinkle_parts(doc)
    if parts is None:
        return []
    paragraphs, rows = parts
    return ([f"<h2>{TITLE}</h2>"] + [f"<p>{escape(p)}</p>" for p in paragraphs]
            + ([table(HEADER, rows, numeric=())] if rows else []))


def report_html(doc: dict[str, Any]) -> str:
    """report.html of one run: headline, letters, orders, per subject, how to read it, what ran."""
    metrics = doc.get("metrics") or {}
    title = run_title(doc)
    letters = letter_chart(metrics.get("letter_dist") or {})
    body = [f"<h1>twinkle_hf report: {escape(title)}</h1>", about_html(doc), *headline_html(metrics),
            "<h2>Letters</h2>",
            '<div class="row">' + (letters or f"<p>Letter distribution: {NA}</p>")
            + table(["letter", "predicted % (n)", "gold % (n)", "recall %"], letter_rows(metrics)) + "</div>",
            *([f'<p class="meta">{escape(letter_note(metrics))}</p>'] if letter_note(metrics) else []),
            "<h2>Accuracy per order</h2>", *orders_html(metrics),
            "<h2>Per subject</h2>", subjects_html(doc) if doc.get("datasets") else f"<p>{NA}</p>",
            "<h2>All headline metrics</h2>",
            table(HEADLINE_HEADER, headline_rows(metrics), numeric=(1,)),
            *[f"<p>{inline(note)}</p>" for note in reading_notes(metrics)], *twinkle_html(doc),
            "<h2>What ran</h2>", settings_html(doc)]
    return page(f"twinkle_hf report: {title}", body)
