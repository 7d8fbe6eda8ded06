"""The per-subject table of report.md and report.html: one row per dataset, per subject and overall,
and the notes that say why a cell is n/a."""

from __future__ import annotations

from typing import Any

from .cells import NA, markdown_rows, metric_value, num, pct

SUBJECT_HEADER = ["dataset / subject", "questions", "accuracy % ± stderr", "95% interval", "acc_original %",
                  "all_correct %", "debiased %", "RStd"]


# A cloze run (--method cloze): lm-eval's three accuracies; a run of both formulations adds the cloze
# CF number (acc_norm, or acc where lm-eval reports acc alone) and the gap to the letter table.
CLOZE_HEADER = ["dataset / subject", "questions", "acc % ± stderr (cloze)", "95% interval", "acc_norm % ± stderr",
                "acc_bytes %"]
BOTH_COLUMNS = ["cloze CF %", "MCF − CF points ± stderr"]  # CF: acc_norm, or acc where lm-eval reports acc alone


def _formulation(doc: dict[str, Any]) -> str:
    """``cloze`` (cloze rows only), ``both`` (letters and cloze) or ``letters``: the run's table shape."""
    metrics = doc.get("metrics") or {}
    return "cloze" if metrics.get("formulation") == "cloze" else "both" if "cloze" in metrics else "letters"


def subject_cells(m: dict[str, Any], shape: str = "letters") -> list[str]:
    """The cells after the name of one subject_table row, formatted."""
    acc = m.get("accuracy") or {}
    ci = acc.get("ci95")
    ci_text = f"{pct(ci[0])}–{pct(ci[1])} ({acc.get('ci_method', '')})" if ci else "-"
    value = lambda key, fmt: NA if metric_value(m, key)[0] is None else fmt(metric_value(m, key)[0])
    head = [str(acc.get("n_questions", 0)), f"{pct(acc.get('value'))} ± {pct(acc.get('stderr'))}", ci_text]
    if shape == "acc":
        return head
    if shape == "cloze":
        norm = m.get("acc_norm") or {}  # none where lm-eval reports acc alone (Winogrande, TruthfulQA MC2)
        return head + [f"{pct(norm.get('value'))} ± {pct(norm.get('stderr'))}" if norm else NA, value("acc_bytes", pct)]
    cells = head + [*(value(key, pct) for key in ("acc_original", "all_correct", "debiased_accuracy")),
                    value("rstd", lambda v: num(v, 1))]
    if shape == "both":
        gap = (m.get("formulations") or {}).get("gap") or {}
        gap_text = NA if gap.get("value") is None else f"{100 * gap['value']:+.1f} ± {pct(gap.get('stderr'))}"
        cells += [pct(((m.get("formulations") or {}).get("cf") or {}).get("value")), gap_text]
    return cells


SUBJECT_METRICS = {"acc_original": "acc_original", "all_correct": "all_correct", "debiased_accuracy": "debiased",
                   "rstd": "RStd"}  # the subject table's columns that can be n/a


def na_notes(doc: dict[str, Any], most: int = 4) -> list[str]:
    """Why the subject table says n/a: per column and reason, the rows it concerns (the first few)."""
    notes: list[str] = []
    if _formulation(doc) == "cloze":  # the cloze table shows no letter metric
        return notes
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
    """(kind, name, metrics) per row: kind "dataset", "subject" or "overall". A run of one dataset
    has no dataset row, and a dataset without subjects (one, unnamed) no subject row: either would
    repeat the row above it."""
    rows = []
    several = len(doc["datasets"]) > 1
    for name, block in doc["datasets"].items():
        rows += [("dataset", name, block["metrics"])] if several else []
        if list(block["subjects"]) != [""]:
            rows.extend(("subject", s, m) for s, m in block["subjects"].items())
    return rows + [("overall", "overall", doc.get("metrics") or {})]


def subject_header(doc: dict[str, Any]) -> tuple[list[str], str]:
    """The per-subject table's header and shape (``letters``, ``cloze``, ``acc``: cloze with acc alone,
    ``both``) for this run."""
    shape = _formulation(doc)
    if shape == "cloze" and not any("acc_norm" in m for _, _, m in subject_rows(doc)):
        return CLOZE_HEADER[:4], "acc"  # lm-eval reports acc alone (Winogrande, TruthfulQA MC2): no other column
    return (CLOZE_HEADER if shape == "cloze" else SUBJECT_HEADER + (BOTH_COLUMNS if shape == "both" else [])), shape


def subject_table(doc: dict[str, Any]) -> list[str]:
    """One row per dataset, per subject, and overall."""
    shown = {"dataset": "**{}**", "subject": "  {}", "overall": "**{}**"}
    header, shape = subject_header(doc)
    return markdown_rows(header, [[shown[kind].format(name), *subject_cells(m, shape)]
                                  for kind, name, m in subject_rows(doc)])
