"""report.md's section on the probability mass on the true answers (TruthfulQA MC2's metric,
results.json's ``true_mass``; :mod:`twinkle_hf.metrics.true_mass` computes it)."""

from __future__ import annotations

from typing import Any

FORMULATIONS = {"cloze": "cloze (option texts; lm-eval's truthfulqa_mc2 acc)",
                "letters": "letters (letter probability on the true options)"}


def true_mass_markdown(doc: dict[str, Any]) -> list[str]:
    """A row per dataset and formulation: the mean p_true, its stderr and questions ([] without one)."""
    blocks = doc.get("true_mass") or {}
    if not blocks:
        return []
    lines = ["## Probability mass on the true answers (TruthfulQA MC2)", "",
             "| dataset | formulation | p_true | stderr | questions |", "|---|---|---|---|---|"]
    for name, block in blocks.items():
        for formulation, m in block.items():
            if m.get("value") is None:
                lines.append(f"| {name} | {FORMULATIONS[formulation]} | n/a: {m.get('reason', '')} | | |")
                continue
            stderr = f"{100 * m['stderr']:.1f}" if m.get("stderr") is not None else ""
            lines.append(f"| {name} | {FORMULATIONS[formulation]} | {100 * m['value']:.1f}% | {stderr} | "
                         f"{m['n_questions']} |")
    return lines + ["", "p_true is, per question, the share of the options' probability on the true answers, "
                        "averaged over questions; stderr in points, clustered by question.", ""]
