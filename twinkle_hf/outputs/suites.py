"""A suite's rows: each member's accuracy and its unweighted mean (the macro row), in results.json
(``suites``) and report.md."""

from __future__ import annotations

from typing import Any

from ..metrics.intervals import macro_interval


def suite_block(benchmarks: dict[str, dict[str, Any]], datasets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``{suite: {"members": {name: {accuracy, questions}}, "macro": mean accuracy, "n_members",
    "macro_interval": the macro's stderr and 95% interval from the members' (metrics/intervals.py)}}``."""
    out: dict[str, Any] = {}
    for name, record in benchmarks.items():
        suite = record.get("suite")
        if not suite or name not in datasets:
            continue
        metrics = datasets[name].get("metrics", {})
        value = (metrics.get("accuracy") or {}).get("value")
        members = out.setdefault(suite, {"members": {}})["members"]
        members[name] = {"accuracy": value, "questions": metrics.get("n_questions")}
    for block in out.values():
        values = [m["accuracy"] for m in block["members"].values() if m["accuracy"] is not None]
        block["macro"] = sum(values) / len(values) if values else None
        block["n_members"] = len(values)
        block["macro_interval"] = macro_interval([(datasets[name].get("metrics") or {}).get("accuracy") or {}
                                                  for name in block["members"]])
    return out


def suite_markdown(doc: dict[str, Any]) -> list[str]:
    """report.md's "Suites" section: a row per member and the macro row ([] without a suite)."""
    suites = doc.get("suites") or {}
    if not suites:
        return []
    pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
    lines = ["## Suites", "", "| suite | benchmark | accuracy | questions |", "|---|---|---|---|"]
    for suite, block in suites.items():
        for name, member in block["members"].items():
            lines.append(f"| {suite} | {name} | {pct(member['accuracy'])} | {member['questions'] or ''} |")
        lines.append(f"| **{suite}** | **macro (mean of {block['n_members']})** | **{pct(block['macro'])}** | |")
    return lines + [""]
