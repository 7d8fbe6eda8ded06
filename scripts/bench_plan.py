"""Forward passes and tokens of the letter-scoring workloads as a GPU would batch them, counted on the CPU.

On a GPU a forward pass has a fixed cost whatever its size, so how many passes a run makes matters
as much as the tokens it runs (the fit of seconds to passes and tokens: docs/performance.md).
Batching depends only on token lengths. So this script runs twinkle_hf's real scorer with its CUDA
batch plan (token budget, rows cap, pass cost) on a tiny random model with the Qwen tokenizer of the
GPU table (its vocabulary, 1 layer), and counts every forward pass and its tokens. Beside it stands
lm-eval's plan: HFLM, batch 64, its logits cache (one pass per 64 prompts, length-sorted, padded to
the longest of each). No timings: the predicted H200 seconds come from the fit.

    python scripts/bench_plan.py                 # W1-W5 at the sizes of bench.py --full
    python scripts/bench_plan.py --workloads W4,W5 --questions 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]  # run from a clone without installing

from bench_summary import GPU_PASS_S, GPU_TOKEN_S  # noqa: E402
from bench_workloads import FULL_SUBJECTS, MMLU_DIR, SHARED, WORKLOADS, workload_config, write_subset  # noqa: E402

QWEN = SHARED / "tokenizers" / "qwen3"
LMEVAL_GPU_BATCH = 64


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5", help="comma-separated letter-scoring workloads")
    p.add_argument("--questions", type=int, default=None, help="questions per subject (default: bench --full's)")
    p.add_argument("--tokenizer", type=Path, default=QWEN, help="tokenizer folder (default: ../shared's Qwen)")
    p.add_argument("--mmlu-dir", type=Path, default=MMLU_DIR)
    args = p.parse_args(argv)
    known = {w.name: w for w in WORKLOADS if not w.generates}
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    if unknown := [n for n in names if n not in known]:
        p.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    for path, what in ((args.tokenizer, "tokenizer"), (args.mmlu_dir, "MMLU")):
        if not path.exists():
            p.error(f"the {what} folder {path} is missing (../shared beside the project holds one)")
    args.workloads = [known[n] for n in names]
    return args


def plan_as_cuda() -> None:
    """twinkle_hf's batch plan on this CPU as on a CUDA device: its token budget, rows cap and pass cost."""
    from twinkle_hf.engine import batching

    for table in (batching.AUTO_TOKEN_BUDGET, batching.AUTO_MAX_ROWS, batching.PASS_TOKENS):
        table["cpu"] = table["cuda"]


def tiny_model(tokenizer: Any, folder: Path) -> Path:
    """A 1-layer random Llama with the tokenizer's vocabulary, saved where the CLI config can load it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def lmeval_plan(lengths: Sequence[int], batch: int = LMEVAL_GPU_BATCH) -> tuple[list[int], int]:
    """lm-eval's passes (tokens each, padding included) and real tokens for prompts of ``lengths``:
    its logits cache runs one row per prompt, longest first, ``batch`` rows a pass."""
    ordered = sorted(lengths, reverse=True)
    passes = [len(ordered[i:i + batch]) * ordered[i] for i in range(0, len(ordered), batch)]
    return passes, sum(lengths)


def side(passes: Sequence[int], real: int, prompts: int) -> dict[str, Any]:
    """One side's figures: passes, their tokens and the fit's H200 seconds."""
    run = sum(passes)
    return {"passes": len(passes), "per_1000": 1000 * len(passes) / prompts, "median": statistics.median(passes),
            "run_real": run / real, "h200_s": GPU_PASS_S * len(passes) + GPU_TOKEN_S * run}


def count_workload(w: Any, model_dir: Path, data_dir: Path, questions: int) -> dict[str, Any]:
    """Run ``w`` through twinkle_hf's scorer, counting every forward pass; lm-eval's plan beside it."""
    from twinkle_hf.data.sources import load_datasets
    from twinkle_hf.evaluation import evaluate
    from twinkle_hf.models.loading import load_model, load_tokenizer

    cfg = workload_config(w, str(model_dir), data_dir, questions, argparse.Namespace(dtype="float32", device="cpu"))
    model, _ = load_model(cfg)
    tokenizer = load_tokenizer(cfg)
    passes: list[int] = []
    model.register_forward_pre_hook(lambda _m, _a, kw: passes.append(kw["input_ids"].numel()), with_kwargs=True)
    result = evaluate(model, tokenizer, load_datasets(cfg), cfg, progress=False)
    lengths = [int(n) for n in result.predictions.prompt_tokens]
    lm_passes, real = lmeval_plan(lengths)
    timing = result.timing
    if len(passes) != timing["batches"] + timing["prefix_batches"]:  # the hook saw what the scorer counted
        raise SystemExit(f"bench_plan: {len(passes)} forward passes seen, the scorer counted "
                         f"{timing['batches']} + {timing['prefix_batches']}")
    return {"workload": w.name, "prompts": len(lengths), "padding": timing["padding_ratio"],
            "repeated_rows": timing["repeated_rows"], "twinkle": side(passes, real, len(lengths)),
            "lm_eval": side(lm_passes, real, len(lengths))}


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    """The markdown table of :func:`count_workload`'s rows."""
    head = ("| workload | prompts | passes (tw / lm) | per 1000 prompts (tw / lm) | median tokens per pass (tw / lm) "
            "| padding (tw) | run/real (tw / lm) | repeated rows | predicted H200 s (tw / lm) | predicted ratio |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        t, m = r["twinkle"], r["lm_eval"]
        lines.append(f"| {r['workload']} | {r['prompts']} | {t['passes']} / {m['passes']} | {t['per_1000']:.1f} / "
                     f"{m['per_1000']:.1f} | {t['median']:.0f} / {m['median']:.0f} | {r['padding']:.2f} | "
                     f"{t['run_real']:.2f} / {m['run_real']:.2f} | {r['repeated_rows']} | {t['h200_s']:.2f} / "
                     f"{m['h200_s']:.2f} | **{m['h200_s'] / t['h200_s']:.2f}x** |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets
    import transformers
    from transformers import AutoTokenizer

    datasets.disable_progress_bar()
    transformers.logging.set_verbosity_error()
    plan_as_cuda()
    rows = []
    with tempfile.TemporaryDirectory(prefix="twinkle-plan-") as tmp:
        model_dir = tiny_model(AutoTokenizer.from_pretrained(args.tokenizer), Path(tmp) / "model")
        data_dir = write_subset(args.mmlu_dir, FULL_SUBJECTS, Path(tmp) / "mmlu")
        for w in args.workloads:
            rows.append(count_workload(w, model_dir, data_dir, args.questions or w.full_questions))
            print(f"{w.name}: {rows[-1]['twinkle']['passes']} passes", file=sys.stderr)
    print(format_rows(rows))
    print(f"\n- twinkle_hf planned as on CUDA (token budget, rows cap, pass cost) on a 1-layer model with "
          f"{args.tokenizer.name}'s vocabulary; lm-eval: HFLM batch {LMEVAL_GPU_BATCH}, logits cache, one row a "
          f"prompt; predicted H200 s = {GPU_PASS_S} x passes + {GPU_TOKEN_S * 1e6:.0f} us x tokens run (issue 24's fit "
          f"of a 7B's bf16 timings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
