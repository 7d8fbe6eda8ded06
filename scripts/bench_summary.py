"""The pure parts of scripts/bench.py: prediction and text agreement, one side's figures, the
tables. Tested in tests/test_bench.py on hand-made inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from twinkle_hf.schema import index_to_letter

# A CPU run whose threads were busy less than this share of its wall time was starved by other
# processes: torch's threads then wait on each other at every op, and small forwards suffer most.
STARVED = 0.75
# Other processes that ran more than this many cores' worth (on average over a run, from /proc/stat)
# took cores the run wanted: measured directly, where a run's own busy share (STARVED) only hints.
CONTENDED = 0.25
TIE_TOL = 1e-6  # log-likelihoods this close are an exact tie: either argmax is right
MIB = 1 << 20
# Seconds of a 7B-shaped bf16 run on an H200 = GPU_PASS_S x forward passes + GPU_TOKEN_S x tokens
# run: a fit of GPU timings of this project's code and lm-eval's (docs/performance.md says how close).
GPU_PASS_S = 0.091
GPU_TOKEN_S = 41e-6


def compare_predictions(twinkle_probs: Sequence[Sequence[float]], lmeval_ll: Sequence[Sequence[float]],
                        tol: float = TIE_TOL) -> dict[str, Any]:
    """Twinkle's argmax vs lm-eval's, per prompt. A differing pair is a tie when either side has
    the other's pick within ``tol`` (in log-likelihood) of its own; anything else disagrees."""
    if len(twinkle_probs) != len(lmeval_ll):
        raise ValueError(f"{len(twinkle_probs)} twinkle rows but {len(lmeval_ll)} lm-eval rows")
    same, max_dp = 0, 0.0
    ties: list[dict[str, Any]] = []
    differ: list[dict[str, Any]] = []
    for row, (tw_row, lm_row) in enumerate(zip(twinkle_probs, lmeval_ll)):
        p, ll = np.asarray(tw_row, dtype=np.float64), np.asarray(lm_row, dtype=np.float64)
        q = np.exp(ll - ll.max())
        max_dp = max(max_dp, float(np.abs(p - q / q.sum()).max()))
        a, b = int(np.argmax(p)), int(np.argmax(ll))
        if a == b:
            same += 1
            continue
        with np.errstate(divide="ignore"):
            gap = float(np.log(p[a]) - np.log(p[b]))
        item = {"row": row, "twinkle": index_to_letter(a), "lm_eval": index_to_letter(b),
                "gap_twinkle": gap, "gap_lm_eval": float(ll[b] - ll[a])}
        (ties if min(gap, float(ll[b] - ll[a])) <= tol else differ).append(item)
    n = len(twinkle_probs)
    return {"rows": n, "identical": same, "fraction_identical": same / n if n else None, "ties": ties,
            "disagreements": differ, "agree_up_to_ties": not differ, "max_abs_prob_diff": max_dp}


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def compare_texts(twinkle: Sequence[str], lmeval: Sequence[str]) -> dict[str, Any]:
    """Generated texts, row by row, each stripped of surrounding whitespace: how many are identical,
    and for every other row both texts and how many leading characters they share."""
    if len(twinkle) != len(lmeval):
        raise ValueError(f"{len(twinkle)} twinkle texts but {len(lmeval)} lm-eval texts")
    differ = [{"row": row, "common_prefix_chars": _common_prefix(a, b), "twinkle": a, "lm_eval": b}
              for row, (a, b) in enumerate(zip((t.strip() for t in twinkle), (t.strip() for t in lmeval))) if a != b]
    n = len(twinkle)
    return {"rows": n, "identical": n - len(differ), "fraction_identical": (n - len(differ)) / n if n else None,
            "differ": differ}


def compare_letters(twinkle: Sequence[int], lmeval: Sequence[int]) -> dict[str, Any]:
    """The letters extracted from both sides' texts (-1: none): how many rows agree."""
    if len(twinkle) != len(lmeval):
        raise ValueError(f"{len(twinkle)} twinkle letters but {len(lmeval)} lm-eval letters")
    same = sum(int(a) == int(b) for a, b in zip(twinkle, lmeval))
    n = len(twinkle)
    return {"rows": n, "identical": same, "fraction_identical": same / n if n else None}


def side_summary(run: dict[str, Any], questions: int, tokens: int, params: int, peak: float,
                 prompts: int | None = None) -> dict[str, Any]:
    """One side of one workload. MFU counts the tokens run through the model, padding included
    (compute spent all the same); the padding ratio says how much of it was waste."""
    s = run["seconds"]
    return {**run, "questions_per_second": questions / s, "tokens": tokens, "cores_busy": run["cpu_seconds"] / s,
            **({"prompts_per_second": prompts / s} if prompts is not None else {}),
            "padding_ratio": run["forward_tokens"] / tokens if tokens else None,
            "mfu": 2 * params * run["forward_tokens"] / s / peak, **pass_figures(run, prompts)}


def pass_figures(run: dict[str, Any], prompts: int | None) -> dict[str, Any]:
    """Forward passes and their sizes: the median tokens per pass, host seconds per 1000 prompts
    outside the forward (``prompts`` given), and the seconds the H200 fit predicts for the 7B shape."""
    sizes = run.get("pass_tokens") or []
    host = run["seconds"] - run.get("forward_seconds", 0.0)
    return {"median_tokens_per_pass": float(np.median(sizes)) if sizes else None,
            "host_seconds_per_1000": 1000 * host / prompts if prompts else None,
            "predicted_gpu_seconds": GPU_PASS_S * run["forwards"] + GPU_TOKEN_S * run["forward_tokens"]}


def is_starved(runs: Sequence[dict[str, Any]], threads: int | None) -> bool:
    """Whether any CPU run kept its ``threads`` busy less than STARVED of its wall time."""
    return threads is not None and any(r["cpu_seconds"] < STARVED * threads * r["seconds"] for r in runs)


def is_contended(runs: Sequence[dict[str, Any]]) -> bool:
    """Whether other processes ran more than CONTENDED cores on average during any of ``runs``
    (runs without that measure, ``others_cpu_seconds`` None or absent, count as quiet)."""
    return any((r.get("others_cpu_seconds") or 0.0) > CONTENDED * r["seconds"] for r in runs)


def _pair(x: Any, y: Any, fmt: str) -> str:
    return " / ".join("n/a" if v is None else format(v, fmt) for v in (x, y))


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown, one line per workload, twinkle / lm-eval side by side."""
    lines = ["| workload | questions (prompts) | twinkle q/s | lm-eval q/s | ratio | identical preds | real tokens"
             " | run/real (tw / lm) | peak MiB (tw / lm) | MFU (tw / lm) | cores busy (tw / lm) |", "|---" * 11 + "|"]
    for r in rows:
        tw, lm, a = r["twinkle"], r["lm_eval"], r["agreement"]
        agree = f"{a['identical']}/{a['rows']}" + (f" (+{len(a['ties'])} ties)" if a["ties"] else "")
        agree += f" **{len(a['disagreements'])} differ**" if a["disagreements"] else ""
        if "agreement_acc_norm" in r:  # cloze: acc's picks, then acc_norm's
            n = r["agreement_acc_norm"]
            agree = f"acc {agree}, acc_norm {n['identical']}/{n['rows']}" + (
                f" **{len(n['disagreements'])} differ**" if n["disagreements"] else "")
        mib = [None if x["peak_memory_bytes"] is None else x["peak_memory_bytes"] / MIB for x in (tw, lm)]
        lines.append(f"| {r['workload']} {r['title']} | {r['questions']} ({r['prompts']}) | "
                     f"{tw['questions_per_second']:.3f} | {lm['questions_per_second']:.3f} | **{r['ratio']:.2f}x**"
                     f"{' (starved)' if r['starved'] else ''} | {agree} | {tw['tokens']} | "
                     f"{_pair(tw['padding_ratio'], lm['padding_ratio'], '.2f')} | {_pair(mib[0], mib[1], '.0f')} | "
                     f"{_pair(tw['mfu'], lm['mfu'], '.1%')} | {_pair(tw['cores_busy'], lm['cores_busy'], '.1f')} |")
    return "\n".join(lines)


def format_pass_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown, one line per workload: the forward passes each side ran, their median size,
    padding, host seconds per 1000 prompts outside the forward, and the H200 fit's prediction."""
    lines = ["| workload | prompts | passes (tw / lm) | passes per 1000 prompts (tw / lm) | median tokens per pass"
             " (tw / lm) | run/real (tw / lm) | host s per 1000 prompts (tw / lm) | measured s (tw / lm) |"
             " predicted H200 s (tw / lm) | predicted ratio |", "|---" * 10 + "|"]
    for r in rows:
        tw, lm, n = r["twinkle"], r["lm_eval"], r["prompts"]
        per = [1000 * x["forwards"] / n if n else None for x in (tw, lm)]
        pred = (tw["predicted_gpu_seconds"], lm["predicted_gpu_seconds"])
        lines.append(f"| {r['workload']} | {n} | {tw['forwards']} / {lm['forwards']} | "
                     f"{_pair(per[0], per[1], '.1f')} | "
                     f"{_pair(tw['median_tokens_per_pass'], lm['median_tokens_per_pass'], '.0f')} | "
                     f"{_pair(tw['padding_ratio'], lm['padding_ratio'], '.2f')} | "
                     f"{_pair(tw['host_seconds_per_1000'], lm['host_seconds_per_1000'], '.2f')} | "
                     f"{_pair(tw['seconds'], lm['seconds'], '.1f')} | {_pair(pred[0], pred[1], '.2f')} | "
                     f"**{pred[1] / pred[0]:.2f}x** |")
    return "\n".join(lines)


def format_generation_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown, one line per generation workload: speed in prompts/s and whole-run seconds,
    identical texts (stripped) and letters, mean generated tokens, twinkle / lm-eval side by side."""
    lines = ["| workload | questions (prompts) | seconds (tw / lm) | twinkle prompts/s | lm-eval prompts/s | ratio"
             " | identical texts | same letters | new tokens/prompt (tw / lm) | real tokens | run/real (tw / lm)"
             " | peak MiB (tw / lm) | cores busy (tw / lm) |", "|---" * 13 + "|"]
    for r in rows:
        tw, lm, t, a = r["twinkle"], r["lm_eval"], r["texts"], r["letters"]
        mib = [None if x["peak_memory_bytes"] is None else x["peak_memory_bytes"] / MIB for x in (tw, lm)]
        lines.append(f"| {r['workload']} {r['title']} | {r['questions']} ({r['prompts']}) | "
                     f"{_pair(tw['seconds'], lm['seconds'], '.1f')} | {tw['prompts_per_second']:.3f} | "
                     f"{lm['prompts_per_second']:.3f} | **{r['ratio']:.2f}x**{' (starved)' if r['starved'] else ''} | "
                     f"{t['identical']}/{t['rows']} ({t['fraction_identical']:.0%}) | "
                     f"{a['identical']}/{a['rows']} | {_pair(tw['new_tokens_mean'], lm['new_tokens_mean'], '.1f')} | "
                     f"{tw['tokens']} | {_pair(tw['padding_ratio'], lm['padding_ratio'], '.2f')} | "
                     f"{_pair(mib[0], mib[1], '.0f')} | {_pair(tw['cores_busy'], lm['cores_busy'], '.1f')} |")
    return "\n".join(lines)
