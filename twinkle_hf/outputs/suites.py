"""A suite's rows: each member's score under the formulation OLMES reports for it and their unweighted
mean (the macro row), in results.json (``suites``) and report.md.

OLMES scores a task both ways and reports the better: where a member ran both formulations
(``--method logit+cloze``) its score is max(letters, cloze) (``formulations.max``); where it ran one,
that one: the letter accuracy, or the cloze CF number (acc_norm, or acc where lm-eval reports acc
alone: Winogrande; TruthfulQA MC2's mass). Each member says which it is.
"""

from __future__ import annotations

from typing import Any

from ..metrics.intervals import macro_interval


def member_score(metrics: dict[str, Any]) -> dict[str, Any]:
    """One member's ``accuracy`` (and ``stderr``) under the formulation OLMES reports, and which it is."""
    best = (metrics.get("formulations") or {}).get("max") or {}
    if best.get("value") is not None:
        both = metrics["formulations"]
        return {"accuracy": best["value"], "stderr": best.get("stderr"), "formulation": best["formulation"],
                "metric": f"max(letters {100 * both['mcf']['value']:.1f}%, cloze {both['cf'].get('metric')} "
                          f"{100 * both['cf']['value']:.1f}%)"}
    if metrics.get("formulation") == "cloze":
        key = "acc_norm" if metrics.get("cf_metric") == "acc_norm" and metrics.get("acc_norm") else "accuracy"
        block = metrics.get(key) or {}
        return {"accuracy": block.get("value"), "stderr": block.get("stderr"), "formulation": "cloze",
                "metric": "acc_norm" if key == "acc_norm" else metrics.get("cf_metric") or "acc"}
    block = metrics.get("accuracy") or {}
    return {"accuracy": block.get("value"), "stderr": block.get("stderr"), "formulation": "letters",
            "metric": "accuracy"}


def suite_block(benchmarks: dict[str, dict[str, Any]], datasets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``{suite: {"members": {name: {accuracy, stderr, formulation, metric, questions}}, "macro": mean
    accuracy, "n_members", "formulations": {letters: n, cloze: n}, "macro_interval": the macro's stderr
    and 95% interval from the members' (metrics/intervals.py)}}``."""
    out: dict[str, Any] = {}
    for name, record in benchmarks.items():
        suite = record.get("suite")
        if not suite or name not in datasets:
            continue
        metrics = datasets[name].get("metrics", {})
        members = out.setdefault(suite, {"members": {}})["members"]
        questions = metrics.get("n_questions") or (metrics.get("accuracy") or {}).get("n_questions")
        members[name] = {**member_score(metrics), "questions": questions}
    for block in out.values():
        scored = [m for m in block["members"].values() if m["accuracy"] is not None]
        block["macro"] = sum(m["accuracy"] for m in scored) / len(scored) if scored else None
        block["n_members"] = len(scored)
        block["formulations"] = {f: sum(m["formulation"] == f for m in scored) for f in ("letters", "cloze")}
        block["definition"] = ("unweighted mean over the members, each under the formulation OLMES reports: the "
                               "better of letters (MCF) and cloze (CF) where both ran, else the one that ran")
        block["macro_interval"] = macro_interval([{"value": m["accuracy"], "stderr": m.get("stderr"),
                                                   "n_questions": m.get("questions")} for m in scored])
    return out


def suite_markdown(doc: dict[str, Any]) -> list[str]:
    """report.md's "Suites" section: a row per member and the macro row ([] without a suite)."""
    suites = doc.get("suites") or {}
    if not suites:
        return []
    pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
    lines = ["## Suites", "", "| suite | benchmark | accuracy | formulation | questions |", "|---|---|---|---|---|"]
    for suite, block in suites.items():
        for name, member in block["members"].items():
            how = f"{member.get('formulation', 'letters')}: {member.get('metric', 'accuracy')}"
            lines.append(f"| {suite} | {name} | {pct(member['accuracy'])} | {how} | {member['questions'] or ''} |")
        mix = ", ".join(f"{n} {f}" for f, n in (block.get("formulations") or {}).items() if n)
        macro = f"**macro (mean of {block['n_members']})**"
        lines.append(f"| **{suite}** | {macro} | **{pct(block['macro'])}** | {mix} | |")
    return lines + ["", "Each member under the formulation OLMES reports: the better of letters (MCF) and cloze (CF) "
                        "where both ran (--method logit+cloze), else the one that ran.", ""]
