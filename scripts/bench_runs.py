"""The timed runs of scripts/bench.py: both sides loaded around one model object, warmed up, then
run in turns on the same prompts.

Twinkle's seconds cover its whole ``evaluate``; lm-eval's cover its call on the ready requests.
Each CPU run first waits for a quiet machine, since other load only ever slows a run down.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_measure import measure, wait_until_quiet
from bench_summary import CONTENDED
from bench_workloads import (
    Workload,
    lmeval_generate_requests,
    lmeval_requests,
    logged_prompts,
    stop_strings,
)

from twinkle_hf.errors import TwinkleError
from twinkle_hf.settings.config import EvalConfig

# lm-eval's batch for letter scoring. It materialises [rows, seq, vocab] logits and their
# log-softmax, so a large batch costs memory and, on a CPU, no speed (docs/performance.md). On the
# CPU: 16, the rows twinkle's CPU token budget gives at MMLU's median 5-shot length. Elsewhere: 64,
# the largest its own `batch_size="auto"` search tries.
LMEVAL_BATCH = {"cpu": 16}


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
        ks = [len(p) for p in result.predictions.letters.probs]
        requests = lmeval_requests(logged_prompts(result.predictions), ks)
        return lambda: lm.loglikelihood(requests, disable_tqdm=True)

    result, out, tw_runs, lm_runs = alternate(w, model, repeats,
                                              lambda: evaluate(model, tokenizer, data, cfg, progress=False), lm_side)
    prompts, ks = logged_prompts(result.predictions), [len(p) for p in result.predictions.letters.probs]
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
        lm.loglikelihood(lmeval_requests(prompts, [len(p) for p in warm.letters.probs]), disable_tqdm=True)


def generation_hflm(model: Any, tokenizer: Any, cfg: EvalConfig, batch: int | str) -> Any:
    """HFLM for generate_until: ``batch`` prompts a batch, and the special tokens twinkle's
    tokenization of ``cfg``'s prompts adds (none in a chat-templated prompt)."""
    from twinkle_hf.prompts.prepare import use_chat_template

    return hflm(model, tokenizer, batch, add_bos_token=not use_chat_template(cfg, tokenizer))
