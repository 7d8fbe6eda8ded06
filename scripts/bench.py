"""Throughput of twinkle_hf against lm-evaluation-harness's `HFLM.loglikelihood`, head to head.

    pip install lm-eval                        # once; it leaves an installed torch/transformers alone
    python scripts/bench.py                    # SmolLM2-135M from ../shared; ~8 min on 2 idle CPU cores
    python scripts/bench.py --workloads W1,W2 --questions 4   # a quick look (~2 min)
    python scripts/bench.py --full             # 12 subjects, 2-3x the questions (meant for a GPU)
    python scripts/bench.py --model HuggingFaceTB/SmolLM2-360M --device cuda --dtype bfloat16
    python scripts/bench.py --repeats 3 --out bench.json

One process, one loaded model object, one tokenizer, dtype and device for both sides. Per workload,
twinkle runs `evaluate` (with `log_prompts`), then lm-eval scores exactly those prompt strings: one
`loglikelihood` request per (prompt, " A" / " B" / ...), with its default logits cache, so it too
runs one forward pass per prompt; its prediction is the argmax of the letters' log-likelihoods.
The two alternate `--repeats` times (default 1) and the fastest run of each side counts (other
load only ever slows a run down); a CPU run starved by other processes is flagged, as its ratio is
then noise. Twinkle's seconds cover its whole `evaluate` (permute, build prompts, tokenize, score);
lm-eval's cover `loglikelihood` on the ready strings (tokenize, score).
A tiny warm-up of each side runs first. Prints a markdown table and writes `--out` (bench.json)
with every number, the machine, the versions and each workload's exact config.

Targets (../shared/DESIGN.md): W1 >= 1.3x lm-eval, W2 >= 4x, W3 >= 5x, padding <= 1.10, identical
predictions. The few-shot gain depends on how many questions share a few-shot block (one per
subject and order): the default takes 10 questions per subject in W2/W3 (a real MMLU subject has
100 or more); `--questions 2` shows the small-sharing end (W2 ~2.5x).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]  # run from a clone without installing

from bench_measure import machine, matmul_peak_flops, measure  # noqa: E402
from bench_summary import STARVED, TIE_TOL, compare_predictions, format_table, is_starved, side_summary  # noqa: E402

from twinkle_hf.config import DTYPES, EvalConfig  # noqa: E402
from twinkle_hf.errors import TwinkleError  # noqa: E402
from twinkle_hf.schema import index_to_letter  # noqa: E402

SHARED = REPO.parent / "shared"
GGUF = SHARED / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MMLU_DIR = SHARED / "data" / "mmlu" / "data"
CACHE_DIR = REPO / ".bench-cache" / "smollm2-135m"  # the GGUF dequantized once, as safetensors

# MMLU subjects (all with dev splits); 5-shot prompts of ~256 / 378 / 490 tokens with SmolLM2's
# tokenizer (MMLU's median is ~490). --full adds subjects across MMLU's range, up to ~900 tokens.
SUBJECTS = ("world_religions", "abstract_algebra", "high_school_biology")
FULL_SUBJECTS = SUBJECTS + ("management", "anatomy", "marketing", "moral_disputes", "college_physics",
                            "nutrition", "high_school_mathematics", "machine_learning", "college_computer_science")


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    num_fewshot: int
    shuffle_mode: str  # none | cyclic | random
    seeds: int
    questions: int  # per subject, default run
    full_questions: int  # per subject, --full


WORKLOADS = (
    Workload("W1", "MMLU 0-shot, original order", 0, "none", 1, 16, 100),
    Workload("W2", "MMLU 5-shot, 4 cyclic orders", 5, "cyclic", 1, 10, 30),
    Workload("W3", "MMLU 5-shot, 8 random orders", 5, "random", 8, 10, 30),
    Workload("W4", "MMLU 0-shot, 4 cyclic orders", 0, "cyclic", 1, 8, 50),
)
# lm-eval materialises [rows, seq, vocab] logits and their log-softmax: 16 rows of 490 tokens with
# SmolLM2's 49k vocabulary is ~3.8 GiB in float32. On 2 CPU cores its speed was flat from 4 to 32
# rows (measured), so 16 there, the rows twinkle's CPU token budget gives at MMLU's median 5-shot
# length; elsewhere 64, the largest its own `batch_size="auto"` search tries.
LMEVAL_BATCH = {"cpu": 16}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="local directory or hub id (default: SmolLM2-135M GGUF from ../shared)")
    p.add_argument("--mmlu-dir", type=Path, help="original MMLU: dev/ and test/ with <subject>_<split>.csv")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--dtype", default="auto", choices=DTYPES)
    p.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS),
                   help=f"comma-separated, from {', '.join(w.name for w in WORKLOADS)} (default: all)")
    p.add_argument("--questions", type=int, help="questions per subject in every workload")
    p.add_argument("--full", action="store_true", help="more subjects and questions")
    p.add_argument("--repeats", type=int, default=1, help="alternating runs per workload; the fastest counts")
    p.add_argument("--lm-eval-batch-size", help="HFLM batch_size: an integer or auto (default 16 on CPU, else 64)")
    p.add_argument("--out", type=Path, default=Path("bench.json"))
    args = p.parse_args(argv)
    if (args.questions is not None and args.questions < 1) or args.repeats < 1:
        p.error("--questions and --repeats must be at least 1")
    known = {w.name: w for w in WORKLOADS}
    names = [n.strip().upper() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        p.error(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}")
    args.workloads = [known[n] for n in dict.fromkeys(names)]
    if args.model is None and not GGUF.is_file():
        p.error(f"the default model {display(GGUF)} is absent (no ../shared next to the repo); pass --model")
    args.mmlu_dir = args.mmlu_dir or MMLU_DIR
    if not (args.mmlu_dir / "test").is_dir():
        p.error(f"no MMLU at {display(args.mmlu_dir)}; pass --mmlu-dir DIR (dev/, test/ with <subject>_<split>.csv)")
    return args


def display(path: Path) -> str:
    """Paths next to the repo as typed from its root (../shared/...), so that no absolute machine
    path ends up in output or bench.json; anything else as given."""
    inside = Path(os.path.abspath(path)).is_relative_to(REPO.parent)
    return os.path.relpath(path, REPO) if inside else str(path)


# ----------------------------------------------------------------------------------------------
# Inputs


def cached_model() -> Path:
    """The default model as safetensors, converted from the GGUF on first use."""
    if (CACHE_DIR / "config.json").is_file():
        return CACHE_DIR
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"converting {display(GGUF)} to {display(CACHE_DIR)} (once)", file=sys.stderr)
    gguf = AutoModelForCausalLM.from_pretrained(GGUF.parent, gguf_file=GGUF.name, dtype=torch.float32)
    config = copy.deepcopy(gguf.config)
    del config.quantization_config  # a GGUF-loaded model refuses save_pretrained; its weights are plain
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(gguf.state_dict(), strict=True)
    tmp = CACHE_DIR.with_name(CACHE_DIR.name + ".tmp")
    plain.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(GGUF.parent, gguf_file=GGUF.name).save_pretrained(tmp)
    tmp.rename(CACHE_DIR)
    return CACHE_DIR


def write_subset(mmlu_dir: Path, subjects: Sequence[str], out: Path) -> Path:
    """The subjects' test and dev CSVs in MMLU's own layout, so twinkle loads them as a user would."""
    for split in ("test", "dev"):
        (out / split).mkdir(parents=True)
        for subject in subjects:
            src = mmlu_dir / split / f"{subject}_{split}.csv"
            if not src.is_file():
                raise FileNotFoundError(f"{display(src)} is missing; the benchmark needs {subject}'s {split} split")
            shutil.copy(src, out / split / src.name)
    return out


def workload_config(w: Workload, model: str, data_dir: Path, questions: int, args: argparse.Namespace) -> EvalConfig:
    shuffle = w.shuffle_mode != "none"
    return EvalConfig(model=model, datasets=(str(data_dir),), num_fewshot=w.num_fewshot, shuffle=shuffle,
                      shuffle_mode=w.shuffle_mode if shuffle else "random", seeds=w.seeds, limit=questions,
                      score_original=False, log_prompts=True, dtype=args.dtype, device=args.device)


def lmeval_requests(prompts: Sequence[str], ks: Sequence[int], label_prefix: str = " ") -> list[Any]:
    """One loglikelihood request per (prompt, option label), prompt-major."""
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=(p, label_prefix + index_to_letter(j)),
                     idx=j, doc_id=i) for i, (p, k) in enumerate(zip(prompts, ks)) for j in range(k)]


# ----------------------------------------------------------------------------------------------
# Running


def load_both(args: argparse.Namespace, model_path: str) -> tuple[Any, Any, Any, Any]:
    """The model and tokenizer (twinkle's loader) and lm-eval's HFLM around the very same objects."""
    try:
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        sys.exit("bench: lm-eval is not installed; `pip install lm-eval` (a venv made with "
                 "--system-site-packages keeps the installed torch and transformers)")
    from twinkle_hf.loading import load_model, load_tokenizer

    try:
        cfg = EvalConfig(model=model_path, dtype=args.dtype, device=args.device)
        model, info = load_model(cfg)
        tokenizer = load_tokenizer(cfg)
    except (TwinkleError, FileNotFoundError) as err:
        sys.exit(f"bench: {err}")
    bs = args.lm_eval_batch_size or LMEVAL_BATCH.get(model.device.type, 64)
    # HFLM ignores its device/dtype arguments for a model object and runs it as it is. Twinkle
    # tokenizes with add_special_tokens=True, and HFLM's add_bos_token=True passes exactly that.
    # A copy of the tokenizer, because HFLM may set a pad token on the one it is given.
    lm = HFLM(pretrained=model, tokenizer=copy.deepcopy(tokenizer), add_bos_token=True,
              batch_size=int(bs) if str(bs).isdigit() else bs)
    return model, info, tokenizer, lm


def run_workload(w: Workload, cfg: EvalConfig, model: Any, tokenizer: Any, lm: Any, data: Any,
                 repeats: int) -> dict[str, Any]:
    """Twinkle, then lm-eval on twinkle's prompts, ``repeats`` times: the runs and both outputs."""
    from twinkle_hf.evaluation import evaluate

    tw_runs, lm_runs = [], []
    for _ in range(repeats):
        with measure(model, model.device) as tw:
            result = evaluate(model, tokenizer, data, cfg, progress=False)
        prompts, ks = result.predictions.prompt, [len(p) for p in result.predictions.probs]
        requests = lmeval_requests(prompts, ks)
        with measure(model, model.device) as lr:
            out = lm.loglikelihood(requests, disable_tqdm=True)
        tw_runs.append(tw)
        lm_runs.append(lr)
        print(f"{w.name}: twinkle {tw['seconds']:.1f} s, lm-eval {lr['seconds']:.1f} s", file=sys.stderr)
    ends = np.cumsum(ks)
    return {"result": result, "lm_ll": [[ll for ll, _ in out[e - k:e]] for e, k in zip(ends, ks)],
            "lm_tokens": [lm.tok_encode(p) for p in prompts], "tw_tokens": tokenizer(list(prompts))["input_ids"],
            "tw_runs": tw_runs, "lm_runs": lm_runs}


def summarize_workload(w: Workload, raw: dict[str, Any], params: int, peak: float,
                       threads: int | None) -> dict[str, Any]:
    """The reported row: the fastest run of each side, agreement, tokens. ``threads``: the torch
    threads of a CPU run (None on an accelerator), to flag a run that other processes starved."""
    result = raw["result"]
    questions = result.timing["questions"]
    tw = min(raw["tw_runs"], key=lambda r: r["seconds"])
    lm = min(raw["lm_runs"], key=lambda r: r["seconds"])
    twinkle = side_summary(tw, questions, result.timing["tokens"], params, peak)
    twinkle["own_padded_tokens"] = result.timing["padded_tokens"]  # the scorer's own count, to cross-check
    return {"workload": w.name, "title": w.title, "questions": questions, "prompts": len(result.predictions),
            "ratio": lm["seconds"] / tw["seconds"], "twinkle": twinkle,
            "lm_eval": side_summary(lm, questions, sum(map(len, raw["lm_tokens"])), params, peak),
            "starved": is_starved([tw, lm], threads),
            "token_ids_identical": raw["lm_tokens"] == raw["tw_tokens"],
            "agreement": compare_predictions(result.predictions.probs, raw["lm_ll"]),
            "all_seconds": {"twinkle": [r["seconds"] for r in raw["tw_runs"]],
                            "lm_eval": [r["seconds"] for r in raw["lm_runs"]]}}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets
    import transformers

    from twinkle_hf.evaluation import evaluate, load_datasets

    datasets.disable_progress_bar()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    started = time.perf_counter()
    model_path = args.model or str(cached_model())
    label = args.model or f"{display(GGUF)} (as {display(CACHE_DIR)})"
    subjects = FULL_SUBJECTS if args.full else SUBJECTS
    model, info, tokenizer, lm = load_both(args, model_path)
    host = machine(model.device)
    params = info.parameters - model.get_input_embeddings().weight.numel()  # a lookup is not a matmul
    peaks = [matmul_peak_flops(model.dtype, model.device)]
    raws, configs = [], {}
    with tempfile.TemporaryDirectory(prefix="twinkle-bench-") as tmp:
        data_dir = write_subset(args.mmlu_dir, subjects, Path(tmp) / "mmlu")
        tiny = workload_config(WORKLOADS[0], model_path, data_dir, 1, args)
        data = load_datasets(tiny)
        warm = evaluate(model, tokenizer, data, tiny, progress=False).predictions  # one-time costs, both sides
        lm.loglikelihood(lmeval_requests(warm.prompt, [len(p) for p in warm.probs]), disable_tqdm=True)
        for w in args.workloads:
            peaks.append(matmul_peak_flops(model.dtype, model.device))  # other load depresses some
            cfg = workload_config(w, model_path, data_dir, args.questions or (
                w.full_questions if args.full else w.questions), args)
            raws.append(run_workload(w, cfg, model, tokenizer, lm, data, args.repeats))
            configs[w.name] = {**cfg.to_dict(), "model": label, "datasets": [f"MMLU: {', '.join(subjects)}"]}
    peaks.append(matmul_peak_flops(model.dtype, model.device))
    threads = host["torch_threads"] if model.device.type == "cpu" else None
    rows = [summarize_workload(w, raw, params, max(peaks), threads) for w, raw in zip(args.workloads, raws)]
    host["load_average_at_end"] = os.getloadavg()
    adds_bos = tokenizer("x")["input_ids"] != tokenizer("x", add_special_tokens=False)["input_ids"]
    notes = [
        f"{label}: {info.parameters / 1e6:.1f}M parameters, {info.dtype}, {host['device_name']}, "
        f"{host['torch_threads']} torch threads; load average {host['load_average_at_start'][0]:.1f} at start",
        f"ratio = lm-eval seconds / twinkle seconds, fastest of {args.repeats} alternating run(s) each; "
        f"twinkle batch_size auto, lm-eval batch_size {lm.batch_size} with its logits cache",
        f"cores busy = CPU seconds / wall seconds; (starved): a side's threads were busy under {STARVED:.0%} of "
        f"the time, other processes shared the cores and the ratio is unreliable: rerun on a quiet machine",
        f"special tokens: twinkle add_special_tokens=True, lm-eval add_bos_token=True (this tokenizer adds "
        f"{'a' if adds_bos else 'no'} BOS); token ids identical on every prompt: "
        f"{'yes' if all(r['token_ids_identical'] for r in rows) else 'NO'}",
        f"MFU = 2 x {params / 1e6:.1f}M non-embedding parameters x tokens run / s / matmul peak "
        f"{max(peaks) / 1e9:.1f} GFLOP/s ({info.dtype}); peak memory above the level at the start of each run"]
    total = time.perf_counter() - started
    print(format_table(rows) + "\n\n" + "\n".join(f"- {n}" for n in notes) + f"\n- total {total:.0f} s")
    report = {"format_version": 1, "machine": host, "model": {**vars(info), "name_or_path": label},
              "dtype": info.dtype, "mfu_parameters": params, "matmul_peak_flops": peaks,
              "lm_eval": {"batch_size": lm.batch_size, "add_bos_token": True, "logits_cache": True},
              "tokenizer_adds_bos": adds_bos, "repeats": args.repeats, "repeat_policy": "fastest",
              "tie_tolerance": TIE_TOL, "subjects": list(subjects), "workloads": rows, "configs": configs,
              "total_seconds": total, "notes": notes}
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
