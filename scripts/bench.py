"""Throughput of twinkle_hf against lm-evaluation-harness's `HFLM.loglikelihood` (letter scoring)
and `HFLM.generate_until` (generation mode), head to head.

    pip install lm-eval                        # once; it leaves an installed torch/transformers alone
    python scripts/bench.py                    # SmolLM2-135M from ../shared; ~11 min on 2 idle CPU cores
    python scripts/bench.py --workloads W1,W2 --questions 4   # a quick look (~2 min)
    python scripts/bench.py --workloads G1     # generation only (~3 min)
    python scripts/bench.py --full             # 12 subjects, 2-3x the questions (meant for a GPU)
    python scripts/bench.py --model HuggingFaceTB/SmolLM2-360M --device cuda --dtype bfloat16
    python scripts/bench.py --repeats 3 --out bench.json

One process, one loaded model object, one tokenizer, dtype and device for both sides. Per workload,
twinkle runs `evaluate` (with `log_prompts`), then lm-eval runs on exactly those prompt strings.
W1-W5 (letter scoring): one `loglikelihood` request per (prompt, " A" / " B" / ...), with its
default logits cache, so it too runs one forward pass per prompt; its prediction is the argmax of
the letters' log-likelihoods. G1 (generation): twinkle's method box on the chat-templated prompt,
greedy, at most 48 new tokens, 16 prompts a batch on the CPU (on a GPU each side's own pick: lm-eval 64,
twinkle auto; `--gen-batch-size`); lm-eval's `generate_until` gets each prompt
with the same limits and `until` = twinkle's stop tokens as text (the eos ids of
the tokenizer and generation_config), and feeds the same token ids (checked, prompt by prompt).
Their texts are compared after .strip(), and twinkle's extraction reads a letter from both.
C1 (cloze, `python scripts/bench.py --workloads C1`): twinkle's `--method cloze` against lm-eval's
`loglikelihood` on the same (context, " " + option) requests, acc and acc_norm picks compared
question by question (scripts/bench_cloze.py).
The two alternate `--repeats` times (default 1) and the fastest run of each side counts (other
load only ever slows a run down); each CPU run first waits for a quiet second, and one that other
processes shared is flagged, as its ratio is then noise. Twinkle's seconds cover its whole
`evaluate` (permute, build prompts, tokenize, score or generate and extract); lm-eval's cover
`loglikelihood` / `generate_until` on the ready strings (tokenize, score or generate, decode).
A tiny warm-up of each side (and mode) runs first. Prints a markdown table per mode, and for
letter scoring a second one: forward passes, median tokens per pass, padding, host seconds per 1000
prompts outside the forward, and the seconds the issue-24 fit of an H200 running the 7B shape
predicts from the passes and tokens (0.091 s x passes + 41 us x tokens); it writes
`--out` (bench.json) with every number, the machine, the versions and each workload's exact config.

Targets (docs/design.md, "Performance"): W1 >= 1.3x lm-eval, W2 >= 4x, W3 >= 5x, padding <= 1.10, identical
predictions; G1 >= 1.5x lm-eval with >= 90% identical texts. The few-shot gain depends on how many
questions share a few-shot block (one per subject and order): the default takes 10 questions per
subject in W2/W3 (a real MMLU subject has 100 or more); `--questions 2` shows the small-sharing end
(W2 ~2.5x). On this CPU, G1's gain is mostly in prefill (a question's orders share their prompt's
start, and the chat header runs once per segment of questions) and in rows leaving as they finish;
continuous batching (waiting prompts take the free slots) saves decode steps, which matters most on
a GPU, where a step costs about the same for 4 rows as for 64.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]  # run from a clone without installing

from bench_cloze import run_cloze, summarize_cloze, warm_up_cloze  # noqa: E402
from bench_measure import machine, matmul_peak_flops, measure, wait_until_quiet  # noqa: E402
from bench_summary import (  # noqa: E402
    CONTENDED,
    STARVED,
    TIE_TOL,
    compare_letters,
    compare_predictions,
    compare_texts,
    format_generation_table,
    format_pass_table,
    format_table,
    is_contended,
    is_starved,
    side_summary,
)

from twinkle_hf.errors import TwinkleError  # noqa: E402
from twinkle_hf.schema import index_to_letter  # noqa: E402
from twinkle_hf.settings.config import DTYPES, EvalConfig  # noqa: E402

SHARED = Path(os.environ.get("TWINKLE_HF_SHARED") or REPO.parent / "shared")  # as the tests find it
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
    method: str = "logit"  # logit: letter scoring; box: generation mode, the letter read from \boxed{X}
    score_original: bool = False  # a shuffled run also scores each question's original order (the CLI default)

    @property
    def generates(self) -> bool:
        return self.method not in ("logit", "cloze")


# G1, generation mode: greedy answers of at most this many tokens, 16 prompts a batch on both sides (CPU)
GEN_NEW_TOKENS = 48
GEN_BATCH = 16
# --gen-batch-size auto off the CPU: what each side would pick on a GPU (lm-eval 64, twinkle its own auto)
GPU_GEN_BATCH = {"twinkle": "auto", "lm_eval": 64}

WORKLOADS = (
    Workload("W1", "MMLU 0-shot, original order", 0, "none", 1, 16, 100),
    Workload("W2", "MMLU 5-shot, 4 cyclic orders", 5, "cyclic", 1, 10, 30),
    Workload("W3", "MMLU 5-shot, 8 random orders", 5, "random", 8, 10, 30),
    Workload("W4", "MMLU 0-shot, 4 cyclic orders", 0, "cyclic", 1, 8, 50),
    Workload("W5", "MMLU 0-shot, 5 random orders + the original (--shuffle)", 0, "random", 5, 8, 50,
             score_original=True),
    Workload("G1", "MMLU 0-shot chat, 4 cyclic orders, generate", 0, "cyclic", 1, 16, 40, "box"),
    Workload("C1", "cloze, ARC-style: 4 option texts after 'Question: ...\\nAnswer:', 0-shot", 0, "none", 1, 16, 100,
             "cloze"),
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
                   help=f"comma-separated, from {', '.join(w.name for w in WORKLOADS)} (default: all); "
                        f"W*: letter scoring vs loglikelihood, G1: generation (method box, chat template, greedy, "
                        f"{GEN_NEW_TOKENS} new tokens) vs generate_until; C1: --method cloze vs loglikelihood on the "
                        f"option texts")
    p.add_argument("--questions", type=int, help="questions per subject in every workload")
    p.add_argument("--full", action="store_true", help="more subjects and questions")
    p.add_argument("--repeats", type=int, default=1, help="alternating runs per workload; the fastest counts")
    p.add_argument("--lm-eval-batch-size", help="HFLM batch_size for letter scoring: an integer or auto (default 16 on "
                   "CPU, else 64)")
    p.add_argument("--gen-batch-size", default="auto",
                   help=f"generation (G1): prompts a batch on both sides, or auto: {GEN_BATCH} on both on the CPU, "
                        f"else each side's own pick on a GPU (lm-eval {GPU_GEN_BATCH['lm_eval']}, twinkle auto)")
    p.add_argument("--out", type=Path, default=Path("bench.json"))
    args = p.parse_args(argv)
    if (args.questions is not None and args.questions < 1) or args.repeats < 1:
        p.error("--questions and --repeats must be at least 1")
    if args.gen_batch_size != "auto" and not (args.gen_batch_size.isdigit() and int(args.gen_batch_size) > 0):
        p.error(f"--gen-batch-size must be auto or a positive integer, got {args.gen_batch_size!r}")
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


def workload_config(w: Workload, model: str, data_dir: Path, questions: int, args: argparse.Namespace,
                    max_new_tokens: int = GEN_NEW_TOKENS) -> EvalConfig:
    """The workload's EvalConfig. Generation mode: greedy, twinkle's batch of ``gen_batches``
    (GEN_BATCH by default), and the chat template by default (``apply_chat_template`` None: on
    when the tokenizer has one)."""
    shuffle = w.shuffle_mode != "none"
    generation: dict[str, Any] = {"method": w.method, "max_new_tokens": max_new_tokens, "temperature": 0.0,
                                  "batch_size": gen_batches(args)["twinkle"]} if w.generates else {}
    if w.method == "cloze":
        generation = {"method": "cloze"}
    return EvalConfig(model=model, datasets=(str(data_dir),), num_fewshot=w.num_fewshot, shuffle=shuffle,
                      shuffle_mode=w.shuffle_mode if shuffle else "random", seeds=w.seeds, limit=questions,
                      score_original=w.score_original, log_prompts=True, dtype=args.dtype, device=args.device,
                      **generation)


def logged_prompts(predictions: Any) -> list[str]:
    """The exact prompt strings twinkle ran (``log_prompts=True`` keeps them in the predictions)."""
    if predictions.prompt is None:
        raise SystemExit("bench: twinkle's predictions hold no prompts; the workload config needs log_prompts=True")
    return list(predictions.prompt)


def lmeval_requests(prompts: Sequence[str], ks: Sequence[int], label_prefix: str = " ") -> list[Any]:
    """One loglikelihood request per (prompt, option label), prompt-major."""
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=(p, label_prefix + index_to_letter(j)),
                     idx=j, doc_id=i) for i, (p, k) in enumerate(zip(prompts, ks)) for j in range(k)]


def lmeval_generate_requests(prompts: Sequence[str], until: Sequence[str], max_new_tokens: int) -> list[Any]:
    """One greedy generate_until request per prompt, stopping at ``until`` or ``max_new_tokens``."""
    from lm_eval.api.instance import Instance

    return [Instance(request_type="generate_until", doc={}, idx=0, doc_id=i,
                     arguments=(p, {"until": list(until), "max_gen_toks": max_new_tokens, "do_sample": False}))
            for i, p in enumerate(prompts)]


def stop_strings(model: Any, tokenizer: Any) -> list[str]:
    """Twinkle's stop tokens (generation_config's and the tokenizer's eos ids) as text, for lm-eval's
    ``until``, so that both sides end an answer at the same token."""
    from twinkle_hf.engine.generate import stop_token_ids

    ids = stop_token_ids(model, tokenizer)
    if not ids:
        raise SystemExit("bench: the model and tokenizer name no eos token, so generation would never stop "
                         "early; pick a model with an eos_token_id (generation_config.json or the tokenizer)")
    return [tokenizer.decode([i], skip_special_tokens=False) for i in ids]


# ----------------------------------------------------------------------------------------------
# Running


def load_both(args: argparse.Namespace, model_path: str) -> tuple[Any, Any, Any, Any]:
    """The model and tokenizer (twinkle's loader) and lm-eval's HFLM around the very same objects."""
    try:
        import lm_eval.models.huggingface  # noqa: F401
    except ImportError:
        sys.exit("bench: lm-eval is not installed; `pip install lm-eval` (a venv made with "
                 "--system-site-packages keeps the installed torch and transformers)")
    from twinkle_hf.models.loading import load_model, load_tokenizer

    try:
        cfg = EvalConfig(model=model_path, dtype=args.dtype, device=args.device)
        model, info = load_model(cfg)
        tokenizer = load_tokenizer(cfg)
    except (TwinkleError, FileNotFoundError) as err:
        sys.exit(f"bench: {err}")
    bs = args.lm_eval_batch_size or LMEVAL_BATCH.get(model.device.type, 64)
    return model, info, tokenizer, hflm(model, tokenizer, int(bs) if str(bs).isdigit() else bs)


def hflm(model: Any, tokenizer: Any, batch_size: int | str, add_bos_token: bool = True) -> Any:
    """lm-eval's HFLM around the very same model object and a copy of the tokenizer.

    ``add_bos_token`` is passed to the tokenizer as add_special_tokens, like twinkle does: True for
    plain prompts, False for chat-templated ones (the rendered template holds its special tokens)."""
    from lm_eval.models.huggingface import HFLM

    # HFLM ignores its device/dtype arguments for a model object and runs it as it is. A copy of
    # the tokenizer, because HFLM may set a pad token on the one it is given.
    return HFLM(pretrained=model, tokenizer=copy.deepcopy(tokenizer), add_bos_token=add_bos_token,
                batch_size=batch_size)


def settle(device: Any) -> float:
    """Before a timed CPU run: wait (at most 2 minutes) until other processes leave the cores, since
    on a few cores they slow a run many times over; the seconds waited."""
    if device.type != "cpu":
        return 0.0
    waited = wait_until_quiet(CONTENDED)
    if waited > 1.5:
        print(f"bench: waited {waited:.0f} s for other processes to leave the cores", file=sys.stderr)
    return waited


def run_workload(w: Workload, cfg: EvalConfig, model: Any, tokenizer: Any, lm: Any, data: Any,
                 repeats: int) -> dict[str, Any]:
    """Twinkle, then lm-eval on twinkle's prompts, ``repeats`` times: the runs and both outputs."""
    from twinkle_hf.evaluation import evaluate

    def lm_side(result: Any) -> Callable[[], Any]:
        requests = lmeval_requests(logged_prompts(result.predictions), [len(p) for p in result.predictions.probs])
        return lambda: lm.loglikelihood(requests, disable_tqdm=True)

    result, out, tw_runs, lm_runs = alternate(w, model, repeats,
                                              lambda: evaluate(model, tokenizer, data, cfg, progress=False), lm_side)
    prompts, ks = logged_prompts(result.predictions), [len(p) for p in result.predictions.probs]
    ends = np.cumsum(ks)
    return {"result": result, "lm_ll": [[ll for ll, _ in out[e - k:e]] for e, k in zip(ends, ks)],
            "lm_tokens": [lm.tok_encode(p) for p in prompts], "tw_tokens": tokenizer(prompts)["input_ids"],
            "tw_runs": tw_runs, "lm_runs": lm_runs}


def alternate(w: Workload, model: Any, repeats: int, twinkle: Callable[[], Any],
              lm_side: Callable[[Any], Callable[[], Any]]) -> tuple[Any, Any, list[dict], list[dict]]:
    """``repeats`` alternating timed runs: twinkle's, then lm-eval's on the prompts that run logged
    (``lm_side`` builds its requests untimed and returns the timed call). Each run first waits for
    a quiet machine. Returns the last result of each side and every run's measurements."""
    tw_runs, lm_runs = [], []
    for _ in range(repeats):
        waited = settle(model.device)
        with measure(model, model.device) as tw:
            result = twinkle()
        tw["waited_for_quiet_s"] = waited
        call = lm_side(result)
        waited = settle(model.device)
        with measure(model, model.device) as lr:
            out = call()
        lr["waited_for_quiet_s"] = waited
        tw_runs.append(tw)
        lm_runs.append(lr)
        print(f"{w.name}: twinkle {tw['seconds']:.1f} s, lm-eval {lr['seconds']:.1f} s", file=sys.stderr)
    return result, out, tw_runs, lm_runs


def lmeval_prompt_ids(lm: Any, prompt: str, max_new_tokens: int) -> list[int]:
    """The token ids lm-eval's generate_until feeds for ``prompt``: its own batch encoder, with the
    left truncation it applies (room for ``max_new_tokens``), on a batch of one (so no padding)."""
    ids, _ = lm.tok_batch_encode([prompt], left_truncate_len=lm.max_length - max_new_tokens,
                                 truncation=lm.truncation)
    return ids[0].tolist()


def run_generation(w: Workload, cfg: EvalConfig, model: Any, tokenizer: Any, lm: Any, data: Any,
                   repeats: int) -> dict[str, Any]:
    """Twinkle's generation mode, then lm-eval's generate_until on twinkle's prompts, ``repeats``
    times: the runs, both sides' texts, the token ids each fed, and the letters in lm-eval's texts."""
    from twinkle_hf.evaluation import evaluate
    from twinkle_hf.metrics.extract import extract
    from twinkle_hf.prompts.prepare import use_chat_template

    until = stop_strings(model, tokenizer)

    def lm_side(result: Any) -> Callable[[], Any]:
        requests = lmeval_generate_requests(logged_prompts(result.predictions), until, cfg.max_new_tokens)
        return lambda: lm.generate_until(requests, disable_tqdm=True)

    result, texts, tw_runs, lm_runs = alternate(w, model, repeats,
                                                lambda: evaluate(model, tokenizer, data, cfg, progress=False), lm_side)
    prompts = logged_prompts(result.predictions)
    special = not use_chat_template(cfg, tokenizer)  # how twinkle tokenized these prompts
    return {"result": result, "lm_texts": texts, "until": until, "chat_template": not special,
            "lm_new_tokens": [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts],
            "lm_letters": [extract(t, len(p), cfg.method).pred for t, p in zip(texts, result.predictions.perm)],
            "lm_tokens": [lmeval_prompt_ids(lm, p, cfg.max_new_tokens) for p in prompts],
            "tw_tokens": tokenizer(prompts, add_special_tokens=special)["input_ids"],
            "tw_runs": tw_runs, "lm_runs": lm_runs, "lm_batch_size": lm.batch_size}


def summarize_generation(w: Workload, raw: dict[str, Any], params: int, peak: float,
                         threads: int | None) -> dict[str, Any]:
    """The reported row of a generation workload: the fastest run of each side, identical texts
    and letters, new tokens. Real tokens: prompt plus generated tokens (stop token excluded); lm-eval
    returns only text, so its generated tokens are its texts encoded again."""
    result, preds = raw["result"], raw["result"].predictions
    questions, prompts = result.timing["questions"], len(preds)
    tw = min(raw["tw_runs"], key=lambda r: r["seconds"])
    lm = min(raw["lm_runs"], key=lambda r: r["seconds"])
    tw_new, lm_new = np.asarray(preds.new_tokens), np.asarray(raw["lm_new_tokens"])
    twinkle = side_summary(tw, questions, sum(map(len, raw["tw_tokens"])) + int(tw_new.sum()), params, peak, prompts)
    twinkle.update({"new_tokens_mean": float(tw_new.mean()), "truncated": int(np.sum(preds.truncated)),
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
            "texts": compare_texts(preds.output, raw["lm_texts"]),
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
            "agreement": compare_predictions(result.predictions.probs, raw["lm_ll"]),
            "all_seconds": {"twinkle": [r["seconds"] for r in raw["tw_runs"]],
                            "lm_eval": [r["seconds"] for r in raw["lm_runs"]]}}


def warm_up(w: Workload, model: Any, tokenizer: Any, lm: Any, data: Any, cfg: EvalConfig) -> None:
    """One-time costs of both sides in ``w``'s mode, before anything is timed: a tiny run each
    (one question per subject, original order; generation: 4 new tokens)."""
    from twinkle_hf.evaluation import evaluate

    tiny = dataclasses.replace(cfg, shuffle=False, shuffle_mode="random", limit=1,
                               max_new_tokens=4 if w.generates else cfg.max_new_tokens)
    warm = evaluate(model, tokenizer, data, tiny, progress=False).predictions
    prompts = logged_prompts(warm)
    if w.generates:
        lm.generate_until(lmeval_generate_requests(prompts, stop_strings(model, tokenizer), 4), disable_tqdm=True)
    else:
        lm.loglikelihood(lmeval_requests(prompts, [len(p) for p in warm.probs]), disable_tqdm=True)


def gen_batches(args: argparse.Namespace) -> dict[str, int | str]:
    """Generation's prompts a batch per side: ``--gen-batch-size`` on both, or (auto) GEN_BATCH on
    both on the CPU and each side's own GPU pick elsewhere (``args.device_type``, set once the model
    is loaded; CPU before)."""
    given = getattr(args, "gen_batch_size", "auto")
    if given != "auto":
        return {"twinkle": int(given), "lm_eval": int(given)}
    if getattr(args, "device_type", "cpu") == "cpu":
        return {"twinkle": GEN_BATCH, "lm_eval": GEN_BATCH}
    return dict(GPU_GEN_BATCH)


def generation_hflm(model: Any, tokenizer: Any, cfg: EvalConfig, batch: int | str) -> Any:
    """HFLM for generate_until: ``batch`` prompts a batch, and the special tokens twinkle's
    tokenization of ``cfg``'s prompts adds (none in a chat-templated prompt)."""
    from twinkle_hf.prompts.prepare import use_chat_template

    return hflm(model, tokenizer, batch, add_bos_token=not use_chat_template(cfg, tokenizer))


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


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets
    import transformers

    from twinkle_hf.data.sources import load_datasets

    datasets.disable_progress_bar()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    started = time.perf_counter()
    model_path = args.model or str(cached_model())
    label = args.model or f"{display(GGUF)} (as {display(CACHE_DIR)})"
    subjects = FULL_SUBJECTS if args.full else SUBJECTS
    model, info, tokenizer, lm = load_both(args, model_path)
    args.device_type = model.device.type  # generation's batch per side (gen_batches) depends on it
    host = machine(model.device)
    params = info.parameters - model.get_input_embeddings().weight.numel()  # a lookup is not a matmul
    peaks = [matmul_peak_flops(model.dtype, model.device)]
    raws, configs, lm_gen, warmed = [], {}, None, set()
    with tempfile.TemporaryDirectory(prefix="twinkle-bench-") as tmp:
        data_dir = write_subset(args.mmlu_dir, subjects, Path(tmp) / "mmlu")
        data = load_datasets(workload_config(WORKLOADS[0], model_path, data_dir, 1, args))
        for w in args.workloads:
            cfg = workload_config(w, model_path, data_dir, args.questions or (
                w.full_questions if args.full else w.questions), args)
            if w.generates and lm_gen is None:
                lm_gen = generation_hflm(model, tokenizer, cfg, gen_batches(args)["lm_eval"])
            mode = "cloze" if w.method == "cloze" else w.generates
            if mode not in warmed:  # once per mode
                if mode == "cloze":
                    warm_up_cloze(model, tokenizer, lm, data, cfg)
                else:
                    warm_up(w, model, tokenizer, lm_gen if w.generates else lm, data, cfg)
                warmed.add(mode)
            peaks.append(matmul_peak_flops(model.dtype, model.device))  # other load depresses some
            if mode == "cloze":
                raws.append(run_cloze(w, cfg, model, tokenizer, lm, data, args.repeats, alternate))
                configs[w.name] = {**cfg.to_dict(), "model": label, "datasets": [f"MMLU: {', '.join(subjects)}"]}
                continue
            run = run_generation if w.generates else run_workload
            raws.append(run(w, cfg, model, tokenizer, lm_gen if w.generates else lm, data, args.repeats))
            configs[w.name] = {**cfg.to_dict(), "model": label, "datasets": [f"MMLU: {', '.join(subjects)}"]}
    peaks.append(matmul_peak_flops(model.dtype, model.device))
    threads = host["torch_threads"] if model.device.type == "cpu" else None
    rows = [(summarize_cloze if w.method == "cloze" else summarize_generation if w.generates else summarize_workload)(
        w, raw, params, max(peaks), threads) for w, raw in zip(args.workloads, raws)]
    host["load_average_at_end"] = os.getloadavg()
    adds_bos = tokenizer("x")["input_ids"] != tokenizer("x", add_special_tokens=False)["input_ids"]
    notes = make_notes(rows, host, label, info, lm, params, max(peaks), adds_bos, args.repeats)
    total = time.perf_counter() - started
    tables = [format_table([r for r in rows if r.get("kind") != "generate"]),
              format_pass_table([r for r in rows if r.get("kind") != "generate"]),
              format_generation_table([r for r in rows if r.get("kind") == "generate"])]
    print("\n\n".join(t for t in tables if t.count("\n") > 1) + "\n\n" + "\n".join(f"- {n}" for n in notes)
          + f"\n- total {total:.0f} s")
    report = {"format_version": 1, "machine": host, "model": {**vars(info), "name_or_path": label},
              "dtype": info.dtype, "mfu_parameters": params, "matmul_peak_flops": peaks,
              "lm_eval": {"batch_size": lm.batch_size, "add_bos_token": True, "logits_cache": True,
                          **({"generate_batch_size": lm_gen.batch_size, "generate_add_bos_token": lm_gen.add_bos_token}
                             if lm_gen is not None else {})},
              "tokenizer_adds_bos": adds_bos, "repeats": args.repeats, "repeat_policy": "fastest",
              "tie_tolerance": TIE_TOL, "subjects": list(subjects), "workloads": rows, "configs": configs,
              "total_seconds": total, "notes": notes}
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
