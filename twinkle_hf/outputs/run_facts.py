"""What ran, as the reports' first lines say it: orders, few-shot, dtype, size and speed, what the
scorer computed, context policy, resume; every count of prompts said one way."""

from __future__ import annotations

from typing import Any

from ..schema import plural


def _compute_lines(timing: dict[str, Any]) -> list[str]:
    """What the scorer ran and held: tokens after prefix sharing, padding, peak memory."""
    lines = []
    if timing.get("tokens") and timing.get("computed_tokens") is not None:
        lines.append(f"- compute: {timing['computed_tokens']:,} of {timing['tokens']:,} prompt tokens run "
                     f"({timing.get('shared_prefixes', 0)} shared prefixes), padding ratio "
                     f"{timing.get('padding_ratio') or 0:.3f}")
    peaks = [f"{label} {timing[key] / 2**20:,.0f} MiB" for key, label in
             (("peak_memory_bytes", "GPU"), ("peak_rss_bytes", "process resident")) if timing.get(key)]
    return lines + ([f"- peak memory: {', '.join(peaks)}"] if peaks else [])


def run_title(doc: dict[str, Any]) -> str:
    """The model a run evaluated, as the reports name it."""
    return str((doc.get("model") or {}).get("name_or_path", (doc.get("config") or {}).get("model", "?")))


def _repeated(timing: dict[str, Any]) -> str:
    """What the prompt count holds beyond the prompts the model ran (the progress bar's count)."""
    repeated = timing.get("repeated_rows") or 0
    if not repeated:
        return ""
    return (f"; {plural(repeated, 'prompt')} repeated another one token for token (a question's original order "
            f"that is also one of its shuffled orders, or an order drawn twice) and took its scores, so the "
            f"model ran {(timing.get('prompts') or 0) - repeated - (timing.get('resumed_rows') or 0)}")


def run_lines(doc: dict[str, Any]) -> list[str]:
    """What ran, as markdown list items: orders, few-shot and dtype, size and speed, compute, context
    policy, resume (a line whose numbers the document lacks is left out)."""
    cfg, model, seeds = doc.get("config") or {}, doc.get("model") or {}, doc.get("seeds") or {}
    timing = doc.get("timing") or {}
    lines = [f"- orders: {seeds.get('mode', '?')}, {seeds.get('permutations_per_question', '?')} per question"
             f"{' plus the original order' if seeds.get('original_order_scored') else ''} "
             f"(base seed {cfg.get('seed', '?')})",
             f"- few-shot: {cfg.get('num_fewshot', '?')}; dtype {model.get('dtype', '?')} on "
             f"{model.get('device', '?')}"]
    if timing.get("seconds") is not None:
        lines.append(f"- {plural(timing.get('questions'), 'question')}, {plural(timing.get('prompts'), 'prompt')} in "
                     f"{timing['seconds']:.1f} s ({timing.get('questions_per_second') or 0:.2f} questions/s, "
                     f"{timing.get('prompts_per_second') or 0:.2f} prompts/s){_repeated(timing)}")
    lines += _compute_lines(timing)
    if timing.get("fewshot_shortened_rows"):
        lines.append(f"- context policy: {plural(timing['fewshot_shortened_rows'], 'prompt')} had few-shot examples "
                     f"dropped to fit the model's context")
    if timing.get("resumed_rows"):
        lines.append(f"- resumed: {plural(timing['resumed_rows'], 'row')} came from the interrupted run")
    return lines
