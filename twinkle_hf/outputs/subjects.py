"""The per-subject table of report.md and report.html: one row per dataset, per subject and overall,
and the notes that say why a cell is n/a."""

from __future__ import annotations

from typing import Any

from .cells import NA, markdown_rows, metric_value, num, pct

SUBJECT_HEADER = ["dataset / subject", "questions", "accuracy % ± stderr", "95% interval", "acc_original %",
                  "all_correct %", "debiased %", "RStd"]


def subject_cells(m: dict[str, Any]) -> list[str]:
    """The cells after the name of one subject_table row, formatted."""
    acc = m.get("accuracy") or {}
    ci = acc.get("ci95")
    ci_text = f"{pct(ci[0])}–{pct(ci[1])} ({acc.get('ci_method', '')})" if ci else "-"
    value = lambda key, fmt: NA if metric_value(m, key)[0] is None else fmt(metric_value(m, key)[0])
    return [str(acc.get("n_questions", 0)), f"{pct(acc.get('value'))} ± {pct(acc.get('stderr'))}", ci_text,
            *(value(key, pct) for key in ("acc_original", "all_correct", "debiased_accuracy")),
            value("rstd", lambda v: num(v, 1))]


SUBJECT_METRICS = {"acc_original": "acc_original", "all_correct": "all_correct", "debiased_accuracy": "debiased",
                   "rstd": "RStd"}  # the subject table's columns that can be n/a


def na_notes(doc: dict[str, Any], most: int = 4) -> list[str]:
    """Why the subject table says n/a: per column and reason, the rows it concerns (the first few)."""
    notes = []
    for key, label in SUBJECT_METRICS.items():
        by_reason: dict[str, list[str]] = {}
        for _kind, name, m in subject_rows(doc):
            value, _, reason = metric_value(m, key)
            if value is None and name not in by_reason.setdefault(reason, []):
                by_reason[reason].append(name)
        for reason, names in list(by_reason.items())[:most]:
            if names:
                notes.append(f"- {label} {NA} for {', '.join(names)}: {reason}")
        if len([r for r, n in by_reason.items() if n]) > most:
            notes.append(f"- {label} {NA} for more rows, for other reasons: each one is in results.json")
    return notes


def subject_rows(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, name, metrics) per row: kind "dataset", "subject" or "overall"."""
    rows = []
    for name, block in doc["datasets"].items():
        rows.append(("dataset", name, block["metrics"]))
        rows.extend(("subject", s, m) for s, m in block["subjects"].items())
    return rows + [("overall", "overall", doc.get("metrics") or {})]


def subject_table(doc: dict[str, Any]) -> list[str]:
    """One row per dataset, per subject, and overall."""
    shown = {"dataset": "**{}**", "subject": "  {}", "overall": "**{}**"}
    return markdown_rows(SUBJECT_HEADER, [[shown[kind].format(name), *subject_cells(m)]
                                          for kind, name, m in subject_rows(doc)])
