"""Throughput of twinkle_hf against lm-evaluation-harness's `HFLM.loglikelihood`, head to head.

    pip install lm-eval                        # once; it leaves an installed torch/transformers alone
    python scripts/bench.py                    # SmolLM2-135M from ../shared; ~8 min on 2 CPU cores
    python scripts/bench.py --full             # 12 subjects, many more questions (meant for a GPU)
    python scripts/bench.py --model HuggingFaceTB/SmolLM2-360M --device cuda --dtype bfloat16
    python scripts/bench.py --questions 4 --repeats 3 --out bench.json

One process, one loaded model object, tokenizer, dtype and device for both sides. Per workload,
twinkle runs `evaluate` (with `log_prompts`), then lm-eval scores exactly those prompt strings: one
`loglikelihood` request per (prompt, " A" / " B" / ...), with its default logits cache, so it too
runs one forward pass per prompt; its prediction is the argmax of the letters' log-likelihoods.
The two alternate `--repeats` times and the fastest repeat of each side is reported (other load on
the machine only ever slows a run down). Twinkle's seconds cover its whole `evaluate` (permute,
build prompts, tokenize, score); lm-eval's cover `loglikelihood` on ready strings (tokenize, score).
One tiny warm-up of each side runs first. Prints a markdown table and writes `--out` (bench.json)
with every number, the machine, the versions and each workload's exact config.

Targets (../shared/DESIGN.md): W1 >= 1.3x lm-eval, W2 >= 4x, W3 >= 5x, padding <= 1.10, identical
predictions. The default run is small: few questions per subject leave little few-shot prefix to
share, so `--full` is the run to quote.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone without installing

from twinkle_hf.config import DTYPES, EvalConfig  # noqa: E402
from twinkle_hf.errors import TwinkleError  # noqa: E402
from twinkle_hf.schema import index_to_letter  # noqa: E402

SHARED = REPO.parent / "shared"
GGUF = SHARED / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MMLU_DIR = SHARED / "data" / "mmlu" / "data"
CACHE_DIR = REPO / ".bench-cache" / "smollm2-135m"  # the GGUF dequantized once to safetensors

# Subjects with dev splits; 5-shot prompts of 256 / 378 / 490 tokens with SmolLM2's tokenizer.
SUBJECTS = ("world_religions", "abstract_algebra", "high_school_biology")
# --full: those plus others across MMLU's range of lengths (5-shot: ~280 to ~900 tokens).
FULL_SUBJECTS = SUBJECTS + ("management", "anatomy", "marketing", "moral_disputes", "college_physics",
                            "nutrition", "high_school_mathematics", "machine_learning", "college_computer_science")


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    num_fewshot: int
    shuffle_mode: str  # none | cyclic | random
    seeds: int
    questions: int  # per subject in the default run
    full_questions: int  # per subject with --full


WORKLOADS = (
    Workload("W1", "MMLU 0-shot, original order", 0, "none", 1, 16, 100),
    Workload("W2", "MMLU 5-shot, 4 cyclic orders", 5, "cyclic", 1, 2, 20),
    Workload("W3", "MMLU 5-shot, 8 random orders", 5, "random", 8, 2, 20),
)
# lm-eval keeps [batch, seq, vocab] logits plus their log-softmax: 16 rows of 490 tokens with a
# 49k vocabulary is ~3 GiB in float32. On 2 CPU cores its throughput is flat from 8 rows up
# (measured), so 16 there; on a GPU 64, the cap its own `batch_size="auto"` search starts from.
LMEVAL_BATCH = {"cpu": 16, "cuda": 64}
TIE_TOL = 1e-6  # letters whose log-likelihoods differ by at most this are an exact tie
MIB = 1 << 20


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="local directory or hub id (default: SmolLM2-135M GGUF from ../shared)")
    p.add_argument("--mmlu-dir", type=Path, help="original MMLU layout: dev/ and test/ with <subject>_<split>.csv")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--dtype", default="auto", choices=DTYPES)
    p.add_argument("--questions", type=int, help="questions per subject in every workload (overrides the defaults)")
    p.add_argument("--full", action="store_true", help="more subjects and questions")
    p.add_argument("--repeats", type=int, default=1, help="alternating runs per workload; the fastest counts")
    p.add_argument("--lm-eval-batch-size", help="HFLM batch_size (an integer or auto); default 16 on CPU, else 64")
    p.add_argument("--out", type=Path, default=Path("bench.json"))
    args = p.parse_args(argv)
    if args.questions is not None and args.questions < 1 or args.repeats < 1:
        p.error("--questions and --repeats must be at least 1")
    if args.model is None and not GGUF.is_file():
        p.error(f"the default model {display(GGUF)} is absent (no ../shared next to the repo); pass --model DIR_OR_HUB_ID")
    args.mmlu_dir = args.mmlu_dir or MMLU_DIR
    if not (args.mmlu_dir / "test").is_dir():
        p.error(f"no MMLU at {display(args.mmlu_dir)}; pass --mmlu-dir DIR (dev/ and test/ with <subject>_<split>.csv)")
    return args


def display(path: Path) -> str:
    """A path as the user would type it from the repo root (never an absolute machine path)."""
    return os.path.relpath(path, REPO)


# ----------------------------------------------------------------------------------------------
# Inputs


def cached_model() -> Path:
    """The default model as safetensors, converted from the GGUF on first use."""
    if (CACHE_DIR / "config.json").is_file():
        return CACHE_DIR
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"converting {display(GGUF)} to {display(CACHE_DIR)} (once)", file=sys.stderr)
    gguf = AutoModelForCausalLM.from_pretrained(GGUF.parent, gguf_file=GGUF.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(GGUF.parent, gguf_file=GGUF.name)
    config = copy.deepcopy(gguf.config)
    del config.quantization_config  # a GGUF-loaded model refuses save_pretrained; its weights are plain
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(gguf.state_dict(), strict=True)
    tmp = CACHE_DIR.with_name(CACHE_DIR.name + ".tmp")
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
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
    return EvalConfig(model=model, datasets=(str(data_dir),), num_fewshot=w.num_fewshot,
                      shuffle=w.shuffle_mode != "none", shuffle_mode="random" if w.shuffle_mode == "none" else w.shuffle_mode,
                      seeds=w.seeds, limit=questions, score_original=False, log_prompts=True,
                      dtype=args.dtype, device=args.device)


def lmeval_requests(prompts: Sequence[str], ks: Sequence[int], label_prefix: str = " ") -> list[Any]:
    """One loglikelihood request per (prompt, option label), prompt-major."""
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=(p, label_prefix + index_to_letter(j)), idx=j, doc_id=i)
            for i, (p, k) in enumerate(zip(prompts, ks)) for j in range(k)]


# ----------------------------------------------------------------------------------------------
# Measuring


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def _memory_reset(device: torch.device) -> int | None:
    """Zero the peak counter; return the baseline in bytes (None where peaks can't be reset)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        return torch.cuda.memory_allocated(device)
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: resets VmHWM to the current RSS
        return _status_kib("VmRSS") * 1024
    except OSError:
        return None


def _memory_peak(device: torch.device, base: int | None) -> int | None:
    if base is None:
        return None
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) - base
    return _status_kib("VmHWM") * 1024 - base


@contextlib.contextmanager
def measure(model: torch.nn.Module, device: torch.device) -> Iterator[dict[str, Any]]:
    """Wall seconds, forward passes, input tokens run through ``model`` (padding included) and
    peak memory above the starting point, for whatever runs inside the block."""
    stats: dict[str, Any] = {"forwards": 0, "forward_tokens": 0}

    def count(_module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        stats["forwards"] += 1
        stats["forward_tokens"] += int(ids.numel())

    handle = model.register_forward_pre_hook(count, with_kwargs=True)
    base = _memory_reset(device)
    start = time.perf_counter()
    try:
        yield stats
    finally:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        stats["seconds"] = time.perf_counter() - start
        stats["peak_memory_bytes"] = _memory_peak(device, base)
        handle.remove()


def matmul_peak_flops(dtype: torch.dtype, device: torch.device) -> float:
    """Best-of-5 FLOP/s of square matmuls in the model's dtype: the denominator of MFU."""
    n, reps = (2048, 1) if device.type == "cpu" else (8192, 10)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    best = float("inf")
    for i in range(7):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(reps):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i >= 2:  # the first two warm up
            best = min(best, time.perf_counter() - start)
    return 2 * n**3 * reps / best


# ----------------------------------------------------------------------------------------------
# Pure summaries (tested in tests/test_bench.py)


def compare_predictions(twinkle_probs: Sequence[Sequence[float]], lmeval_ll: Sequence[Sequence[float]],
                        tol: float = TIE_TOL) -> dict[str, Any]:
    """Per prompt, twinkle's argmax vs lm-eval's. A differing pair is a tie when either side puts
    the other's choice within ``tol`` (log-likelihood) of its own; anything else is a disagreement."""
    if len(twinkle_probs) != len(lmeval_ll):
        raise ValueError(f"{len(twinkle_probs)} twinkle rows but {len(lmeval_ll)} lm-eval rows")
    same, ties, disagree, max_dp = 0, [], [], 0.0
    for row, (p, ll) in enumerate(zip(twinkle_probs, lmeval_ll)):
        p, ll = np.asarray(p, dtype=np.float64), np.asarray(ll, dtype=np.float64)
        q = np.exp(ll - ll.max())
        max_dp = max(max_dp, float(np.abs(p - q / q.sum()).max()))
        a, b = int(np.argmax(p)), int(np.argmax(ll))
        if a == b:
            same += 1
            continue
        with np.errstate(divide="ignore"):
            gap_twinkle = float(np.log(p[a]) - np.log(p[b]))
        item = {"row": row, "twinkle": index_to_letter(a), "lm_eval": index_to_letter(b),
                "gap_twinkle": gap_twinkle, "gap_lm_eval": float(ll[b] - ll[a])}
        (ties if min(gap_twinkle, item["gap_lm_eval"]) <= tol else disagree).append(item)
    n = len(twinkle_probs)
    return {"rows": n, "identical": same, "fraction_identical": same / n if n else None, "ties": ties,
            "disagreements": disagree, "agree_up_to_ties": not disagree, "max_abs_prob_diff": max_dp}


def side_summary(run: dict[str, Any], questions: int, tokens: int, params: int, peak_flops: float) -> dict[str, Any]:
    """One side's numbers for one workload. MFU counts the tokens run through the model (padding
    included: it is compute spent); the padding ratio shows how much of that was waste."""
    s = run["seconds"]
    return {**run, "questions_per_second": questions / s, "tokens": tokens,
            "padding_ratio": run["forward_tokens"] / tokens if tokens else None,
            "mfu": 2 * params * run["forward_tokens"] / s / peak_flops}


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _mib(x: int | None) -> str:
    return "n/a" if x is None else f"{x / MIB:.0f}"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one line per workload, twinkle / lm-eval side by side."""
    lines = ["| workload | questions (prompts) | twinkle q/s | lm-eval q/s | ratio | identical preds | "
             "real tokens | run/real (tw / lm) | peak MiB (tw / lm) | MFU (tw / lm) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t, l, a = r["twinkle"], r["lm_eval"], r["agreement"]
        agree = f"{a['identical']}/{a['rows']}" + (f" (+{len(a['ties'])} ties)" if a["ties"] else "")
        if a["disagreements"]:
            agree += f" **{len(a['disagreements'])} differ**"
        lines.append(
            f"| {r['workload']} {r['title']} | {r['questions']} ({r['prompts']}) | {t['questions_per_second']:.3f} | "
            f"{l['questions_per_second']:.3f} | **{r['ratio']:.2f}x** | {agree} | {t['tokens']} | "
            f"{_ratio(t['padding_ratio'])} / {_ratio(l['padding_ratio'])} | "
            f"{_mib(t['peak_memory_bytes'])} / {_mib(l['peak_memory_bytes'])} | {t['mfu']:.1%} / {l['mfu']:.1%} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------


def machine(device: torch.device) -> dict[str, Any]:
    cpu = platform.processor()
    with contextlib.suppress(OSError):
        cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), cpu)
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "device": str(device), "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu,
            "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "python": platform.python_version(),
            "versions": {m: importlib.metadata.version(m) for m in ("torch", "transformers", "datasets", "lm_eval")}}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        sys.exit("bench: lm-eval is not installed; `pip install lm-eval` (in a virtualenv made with "
                 "--system-site-packages it keeps the installed torch and transformers)")
    import datasets
    import transformers

    from twinkle_hf.evaluate import evaluate, load_datasets
    from twinkle_hf.loading import load_model, load_tokenizer

    datasets.disable_progress_bar()
    transformers.logging.set_verbosity_error()
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    started = time.perf_counter()
    model_path = args.model or str(cached_model())
    model_label = args.model or f"{display(GGUF)} (as {display(CACHE_DIR)})"
    subjects = FULL_SUBJECTS if args.full else SUBJECTS
    try:
        base_cfg = EvalConfig(model=model_path, dtype=args.dtype, device=args.device)
        model, info = load_model(base_cfg)
        tokenizer = load_tokenizer(base_cfg)
    except TwinkleError as err:
        sys.exit(f"bench: {err}")
    device = next(model.parameters()).device
    lm_bs = args.lm_eval_batch_size or LMEVAL_BATCH.get(device.type, 64)
    lm_bs = int(lm_bs) if str(lm_bs).isdigit() else lm_bs
    # Twinkle tokenizes with add_special_tokens=True; HFLM's add_bos_token=True passes exactly that.
    # A copy, because HFLM may set a pad token on the tokenizer it is given.
    lm = HFLM(pretrained=model, tokenizer=copy.deepcopy(tokenizer), batch_size=lm_bs, add_bos_token=True)
    adds_bos = tokenizer("x")["input_ids"] != tokenizer("x", add_special_tokens=False)["input_ids"]
    peak = matmul_peak_flops(model.dtype, device)
    print(f"model {model_label}: {info.parameters / 1e6:.1f}M parameters, {info.dtype} on {device}; "
          f"matmul peak {peak / 1e9:.1f} GFLOP/s", file=sys.stderr)
    rows, configs = [], {}
    with tempfile.TemporaryDirectory(prefix="twinkle-bench-") as tmp:
        data_dir = write_subset(args.mmlu_dir, subjects, Path(tmp) / "mmlu")
        data = load_datasets(workload_config(WORKLOADS[0], model_path, data_dir, 1, args))
        warm = evaluate(model, tokenizer, data, workload_config(WORKLOADS[0], model_path, data_dir, 1, args), progress=False)
        lm.loglikelihood(lmeval_requests(warm.predictions.prompt[:2], [4, 4]), disable_tqdm=True)
        for w in WORKLOADS:
            n = args.questions or (w.full_questions if args.full else w.questions)
            cfg = workload_config(w, model_path, data_dir, n, args)
            tw_runs, lm_runs = [], []
            for _ in range(args.repeats):
                with measure(model, device) as tw:
                    result = evaluate(model, tokenizer, data, cfg, progress=False)
                prompts = result.predictions.prompt
                ks = [len(p) for p in result.predictions.probs]
                requests = lmeval_requests(prompts, ks)
                with measure(model, device) as lr:
                    out = lm.loglikelihood(requests, disable_tqdm=True)
                tw_runs.append(tw)
                lm_runs.append(lr)
                print(f"{w.name}: twinkle {tw['seconds']:.1f} s, lm-eval {lr['seconds']:.1f} s", file=sys.stderr)
            offsets = np.cumsum([0] + ks)
            lls = [[ll for ll, _ in out[offsets[i]:offsets[i + 1]]] for i in range(len(ks))]
            lm_tokens = [lm.tok_encode(p) for p in prompts]
            tw_tokens = tokenizer(list(prompts))["input_ids"]
            questions = result.timing["questions"]
            tw_best = min(tw_runs, key=lambda r: r["seconds"])
            lm_best = min(lm_runs, key=lambda r: r["seconds"])
            twinkle = side_summary(tw_best, questions, result.timing["tokens"], info.parameters, peak)
            twinkle["own_padded_tokens"] = result.timing["padded_tokens"]  # the scorer's own count
            lm_eval = side_summary(lm_best, questions, sum(map(len, lm_tokens)), info.parameters, peak)
            rows.append({"workload": w.name, "title": w.title, "questions": questions, "prompts": len(prompts),
                         "ratio": lm_best["seconds"] / tw_best["seconds"], "twinkle": twinkle, "lm_eval": lm_eval,
                         "token_ids_identical": lm_tokens == tw_tokens,
                         "agreement": compare_predictions(result.predictions.probs, lls),
                         "all_seconds": {"twinkle": [r["seconds"] for r in tw_runs], "lm_eval": [r["seconds"] for r in lm_runs]}})
            configs[w.name] = {**cfg.to_dict(), "model": model_label, "datasets": [f"MMLU {'/'.join(subjects)}"]}
    table = format_table(rows)
    identical = all(r["token_ids_identical"] for r in rows)
    notes = [f"model {model_label}: {info.parameters / 1e6:.1f}M parameters, {info.dtype}, {device} "
             f"({machine(device)['device_name']}, {torch.get_num_threads()} torch threads)",
             f"ratio = lm-eval seconds / twinkle seconds, fastest of {args.repeats} alternating run(s) each; "
             f"twinkle batch_size auto, lm-eval batch_size {lm_bs} (logits cache on)",
             f"special tokens: twinkle add_special_tokens=True, lm-eval add_bos_token=True (this tokenizer "
             f"{'adds' if adds_bos else 'adds no'} BOS); token ids identical on every prompt: {'yes' if identical else 'NO'}",
             f"MFU = 2 x params x tokens run / s / matmul peak ({peak / 1e9:.1f} GFLOP/s, {info.dtype}); "
             f"peak memory = above the level at the start of each run"]
    total = time.perf_counter() - started
    print(table + "\n\n" + "\n".join(f"- {n}" for n in notes) + f"\n- total {total:.0f} s")
    report = {"format_version": 1, "machine": machine(device), "model": {**vars(info), "name_or_path": model_label},
              "dtype": info.dtype, "matmul_peak_flops": peak, "lm_eval_batch_size": lm_bs, "repeats": args.repeats,
              "repeat_policy": "fastest", "lm_eval_add_bos_token": True, "tokenizer_adds_bos": adds_bos,
              "tie_tolerance": TIE_TOL, "subjects": list(subjects), "workloads": rows, "configs": configs,
              "total_seconds": total, "notes": notes,
              "mfu_definition": "2 * parameters * input tokens run through the model (padding included) / seconds / matmul peak"}
    report["machine"]["load_average_at_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
