"""The report of scripts/bench.py: each workload's row from its raw runs, and the notes under the
tables.

A row keeps the fastest run of each side, since other load only ever slows a run down. The pure
comparisons and the table formats it uses live in bench_summary.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from bench_summary import (
    CONTENDED,
    STARVED,
    compare_letters,
    compare_predictions,
    compare_texts,
    is_contended,
    is_starved,
    side_summary,
)
from bench_workloads import Workload


def summarize_generation(w: Workload, raw: dict[str, Any], params: int, peak: float,
                         threads: int | None) -> dict[str, Any]:
    """The reported row of a generation workload: the fastest run of each side, identical texts
    and letters, new tokens. Real tokens: prompt plus generated tokens (stop token excluded); lm-eval
    returns only text, so its generated tokens are its texts encoded again."""
    result, preds = raw["result"], raw["result"].predictions
    questions, prompts = result.timing["questions"], len(preds)
    tw = min(raw["tw_runs"], key=lambda r: r["seconds"])
    lm = min(raw["lm_runs"], key=lambda r: r["seconds"])
    tw_new, lm_new = np.asarray(preds.generation.new_tokens), np.asarray(raw["lm_new_tokens"])
    twinkle = side_summary(tw, questions, sum(map(len, raw["tw_tokens"])) + int(tw_new.sum()), params, peak, prompts)
    twinkle.update({"new_tokens_mean": float(tw_new.mean()), "truncated": int(np.sum(preds.generation.truncated)),
                    "unparsed": int(np.sum(preds.pred < 0)), "batches": result.timing["batches"],
                    # the generator's own counts, to cross-check: prompt + new tokens, and tokens run
                    "own_computed_tokens": result.timing["computed_tokens"],
                    "own_padded_tokens": result.timing["padded_tokens"],
                    "own_padding_ratio": result.timing["padding_ratio"]})
    lm_eval = side_summary(lm, questions, sum(map(len, raw["lm_tokens"])) + int(lm_new.sum()), params, peak, prompts)
    lm_eval.update({"new_tokens_mean": float(lm_new.mean()),
                    "unparsed": sum(p < 0 for p in raw["lm_letters"])})
    mismatched = [i for i, (a, b) in enumerate(zip(raw["lm_tokens"], raw["tw_tokens"])) if a != b]
    return {"workload": w.name, "title": w.title, "kind": "generate", "questions": questions, "prompts": prompts,
            "ratio": lm["seconds"] / tw["seconds"], "twinkle": twinkle, "lm_eval": lm_eval,
            "starved": is_starved([tw, lm], threads) or (threads is not None and is_contended([tw, lm])),
            "token_ids_identical": not mismatched, "token_id_mismatched_rows": mismatched,
            "method": result.config.method, "chat_template": raw["chat_template"], "stop_strings": raw["until"],
            "max_new_tokens": result.config.max_new_tokens,
            "batch_size": {"twinkle": result.config.batch_size, "lm_eval": raw["lm_batch_size"]},
            "texts": compare_texts(preds.generation.output, raw["lm_texts"]),
            "letters": compare_letters(preds.pred, raw["lm_letters"]),
            "all_seconds": {"twinkle": [r["seconds"] for r in raw["tw_runs"]],
                            "lm_eval": [r["seconds"] for r in raw["lm_runs"]]}}


def summarize_workload(w: Workload, raw: dict[str, Any], params: int, peak: float,
                       threads: int | None) -> dict[str, Any]:
    """The reported row: the fastest run of each side, agreement, tokens. ``threads``: the torch
    threads of a CPU run (None on an accelerator), to flag a run that other processes starved."""
    result = raw["result"]
    questions = result.timing["questions"]
    tw = min(raw["tw_runs"], key=lambda r: r["seconds"])
    lm = min(raw["lm_runs"], key=lambda r: r["seconds"])
    prompts = len(result.predictions)
    twinkle = side_summary(tw, questions, result.timing["tokens"], params, peak, prompts)
    twinkle["own_padded_tokens"] = result.timing["padded_tokens"]  # the scorer's own count, to cross-check
    return {"workload": w.name, "title": w.title, "kind": "score", "questions": questions,
            "prompts": prompts,
            "ratio": lm["seconds"] / tw["seconds"], "twinkle": twinkle,
            "lm_eval": side_summary(lm, questions, sum(map(len, raw["lm_tokens"])), params, peak, prompts),
            "starved": is_starved([tw, lm], threads) or (threads is not None and is_contended([tw, lm])),
            "token_ids_identical": raw["lm_tokens"] == raw["tw_tokens"],
            "agreement": compare_predictions(result.predictions.letters.probs, raw["lm_ll"]),
            "all_seconds": {"twinkle": [r["seconds"] for r in raw["tw_runs"]],
                            "lm_eval": [r["seconds"] for r in raw["lm_runs"]]}}



def make_notes(rows: Sequence[dict[str, Any]], host: dict[str, Any], label: str, info: Any, lm: Any, params: int,
               peak: float, adds_bos: bool, repeats: int) -> list[str]:
    """The lines under the tables: model and machine, what the columns mean, tokenization checks."""
    scoring = [r for r in rows if r.get("kind") != "generate"]
    generating = [r for r in rows if r.get("kind") == "generate"]
    notes = [
        f"{label}: {info.parameters / 1e6:.1f}M parameters, {info.dtype}, {host['device_name']}, "
        f"{host['torch_threads']} torch threads; load average {host['load_average_at_start'][0]:.1f} at start",
        f"ratio = lm-eval seconds / twinkle seconds, fastest of {repeats} alternating run(s) each; letter scoring: "
        f"twinkle batch_size auto, lm-eval batch_size {lm.batch_size} with its logits cache",
        f"cores busy = CPU seconds / wall seconds; (starved): other processes ran over {CONTENDED} cores on "
        f"average during a run, or a side's threads were busy under {STARVED:.0%} of the time: they shared the "
        f"cores and the ratio is unreliable: rerun on a quiet machine (each CPU run first waits, at most 2 min, "
        f"for a quiet second)"]
    if scoring:
        notes.append(f"special tokens: twinkle add_special_tokens=True, lm-eval add_bos_token=True (this tokenizer "
                     f"adds {'a' if adds_bos else 'no'} BOS); token ids identical on every prompt: "
                     f"{'yes' if all(r['token_ids_identical'] for r in scoring) else 'NO'}")
    notes.append(f"MFU = 2 x {params / 1e6:.1f}M non-embedding parameters x tokens run / s / matmul peak "
                 f"{peak / 1e9:.1f} GFLOP/s ({info.dtype}); peak memory above the level at the start of each run")
    for r in generating:
        bad = r["token_id_mismatched_rows"]
        notes.append(
            f"{r['workload']}: twinkle evaluate (method {r['method']}, chat template "
            f"{'on' if r['chat_template'] else 'off'}, greedy) vs lm-eval generate_until on its prompt strings; "
            f"batch twinkle {r['batch_size']['twinkle']} / lm-eval {r['batch_size']['lm_eval']}, "
            f"at most {r['max_new_tokens']} new tokens, stop at "
            f"{', '.join(map(repr, r['stop_strings']))}; prompt token ids identical: "
            f"{'yes, all' if not bad else f'NO, {len(bad)} of'} {r['prompts']} prompts; identical texts after "
            f".strip(); same letters: twinkle's extraction on both texts; real tokens = prompt + new tokens "
            f"(lm-eval's new tokens: its texts encoded again); run/real counts every row of a batch fed per step")
    return notes
