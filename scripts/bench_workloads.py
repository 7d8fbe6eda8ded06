"""The workloads of scripts/bench.py and their inputs: the model and MMLU files, each workload's
EvalConfig, and lm-eval's requests built from the prompts twinkle ran.

Both sides get the same prompt strings, so a workload is defined once, here, and the runs
(bench_runs.py) and the report (bench_report.py) only read it.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from twinkle_hf.schema import index_to_letter
from twinkle_hf.settings.config import EvalConfig

REPO = Path(__file__).resolve().parents[1]
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


def display(path: Path) -> str:
    """Paths next to the repo as typed from its root (../shared/...), so that no absolute machine
    path ends up in output or bench.json; anything else as given."""
    inside = Path(os.path.abspath(path)).is_relative_to(REPO.parent)
    return os.path.relpath(path, REPO) if inside else str(path)



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


