"""twinkle_hf's own decoder against transformers' continuous batching (``model.generate_batch``: a
paged KV cache, prefix block sharing, CUDA graphs on a GPU) on G1's prompts, head to head.

One loaded model, the very token ids twinkle ran (its chat-templated `--method box` prompts, 4 cyclic
orders), greedy, at most 48 new tokens, stopping at the same stop ids. The two alternate
``--repeats`` times and the fastest of each counts. Texts are compared after .strip(). No lm-eval
needed. It tells which of the two decoders is faster on a device; what one run found is in
docs/performance.md ("Generation: twinkle's decoder or transformers' generate_batch?").

    python scripts/bench_generate_batch.py                          # SmolLM2-135M-Instruct, CPU
    python scripts/bench_generate_batch.py --questions 16 --cb max_batch_tokens=2048 --cb max_requests_per_batch=16
    python scripts/bench_generate_batch.py --model /tmp/q7b --device cuda --dtype bfloat16 --questions 40
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]  # run from a clone without installing

from bench_workloads import (  # noqa: E402
    GGUF,
    MMLU_DIR,
    SUBJECTS,
    WORKLOADS,
    cached_model,
    display,
    workload_config,
    write_subset,
)

from twinkle_hf.settings.config import DTYPES  # noqa: E402

G1 = next(w for w in WORKLOADS if w.name == "G1")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="local directory (default: SmolLM2-135M-Instruct from ../shared)")
    p.add_argument("--mmlu-dir", type=Path, default=MMLU_DIR)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="auto", choices=DTYPES)
    p.add_argument("--questions", type=int, default=G1.questions, help="questions per subject (3 subjects)")
    p.add_argument("--gen-batch-size", default="auto",
                   help="twinkle's prompts a batch: an integer or auto (default: 16 on the CPU, as bench.py's G1; "
                        "auto elsewhere)")
    p.add_argument("--cb", action="append", default=[], metavar="KEY=VALUE",
                   help="a ContinuousBatchingConfig field for generate_batch (repeatable), e.g. max_batch_tokens=2048")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    try:
        args.cb = {k: _number(v) for k, v in (item.split("=", 1) for item in args.cb)}
    except ValueError:
        p.error("--cb takes KEY=VALUE, e.g. --cb max_batch_tokens=2048")
    if args.model is None and not GGUF.is_file():
        p.error(f"the default model {display(GGUF)} is missing (../shared beside the project holds it); "
                "or give --model")
    if not args.mmlu_dir.is_dir():
        p.error(f"the MMLU folder {display(args.mmlu_dir)} is missing (../shared beside the project holds one)")
    return args


def _number(text: str) -> Any:
    """A --cb value: an int, a float, true/false, or the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def generate_batch_texts(model: Any, tokenizer: Any, ids: list[list[int]], stop: Sequence[int], max_new_tokens: int,
                         cb: dict[str, Any]) -> list[str]:
    """transformers' continuous batching, greedy, on ``ids``: each prompt's text (stop ids dropped)."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=list(stop),
                              pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop[0])
    out = model.generate_batch(ids, generation_config=config, continuous_batching_config=ContinuousBatchingConfig(**cb),
                               warmup=model.device.type == "cuda")
    if len(out) != len(ids):
        raise SystemExit(f"generate_batch returned {len(out)} results for {len(ids)} prompts")
    by_request = {int(key.rsplit("_", 1)[-1]): value for key, value in out.items()}
    texts = []
    for i in range(len(ids)):
        tokens = [t for t in by_request[i].generated_tokens if t not in stop]
        texts.append(tokenizer.decode(tokens, skip_special_tokens=True))
    return texts


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import transformers

    from twinkle_hf.data.sources import load_datasets
    from twinkle_hf.engine.generate import stop_token_ids
    from twinkle_hf.evaluation import evaluate
    from twinkle_hf.models.loading import load_model, load_tokenizer
    from twinkle_hf.settings.config import EvalConfig

    transformers.logging.set_verbosity_error()
    model_path = args.model or str(cached_model())
    model, info = load_model(EvalConfig(model=model_path, dtype=args.dtype, device=args.device))
    tokenizer = load_tokenizer(EvalConfig(model=model_path))
    args.device_type = model.device.type
    if args.gen_batch_size == "auto" and model.device.type == "cpu":
        args.gen_batch_size = "16"
    runs: dict[str, list[float]] = {"twinkle": [], "generate_batch": []}
    with tempfile.TemporaryDirectory(prefix="twinkle-genbatch-") as tmp:
        data_dir = write_subset(args.mmlu_dir, SUBJECTS, Path(tmp) / "mmlu")
        cfg = workload_config(G1, model_path, data_dir, args.questions, args)
        data = load_datasets(cfg)
        evaluate(model, tokenizer, data, workload_config(G1, model_path, data_dir, 1, args), progress=False)  # warm-up
        stop = stop_token_ids(model, tokenizer)
        for _ in range(args.repeats):
            began = time.perf_counter()
            result = evaluate(model, tokenizer, data, cfg, progress=False)
            runs["twinkle"].append(time.perf_counter() - began)
            ids = tokenizer(list(result.predictions.prompt), add_special_tokens=False)["input_ids"]  # chat-templated
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            began = time.perf_counter()
            theirs = generate_batch_texts(model, tokenizer, ids, stop, cfg.max_new_tokens, args.cb)
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            runs["generate_batch"].append(time.perf_counter() - began)
    ours = [t.strip() for t in result.predictions.generation.output]
    same = sum(a == b.strip() for a, b in zip(ours, theirs))
    tw, gb = min(runs["twinkle"]), min(runs["generate_batch"])
    print("| prompts | twinkle s | generate_batch s | twinkle faster by | identical texts |\n|---|---|---|---|---|\n"
          f"| {len(ids)} | {tw:.1f} | {gb:.1f} | **{gb / tw:.2f}x** | {same}/{len(ids)} |")
    print(f"- {info.parameters / 1e6:.1f}M parameters, {info.dtype}, {model.device}; twinkle batch "
          f"{cfg.batch_size}; generate_batch config {args.cb or 'default'}; fastest of {args.repeats} alternating runs "
          f"(twinkle {', '.join(f'{s:.1f}' for s in runs['twinkle'])} s; generate_batch "
          f"{', '.join(f'{s:.1f}' for s in runs['generate_batch'])} s); twinkle's seconds cover its whole evaluate")
    if args.out:
        args.out.write_text(json.dumps({"prompts": len(ids), "runs": runs, "identical_texts": same,
                                        "generate_batch_config": args.cb, "twinkle_batch": cfg.batch_size,
                                        "device": str(model.device), "dtype": str(info.dtype)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
