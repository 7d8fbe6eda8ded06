"""``--dry-run``: what a run would do, from the tokenizer and the data alone (no weights loaded).

Per dataset: subjects, questions, orders, prompts, tokens in all and after prefix sharing, the
longest prompt; one full example prompt; and a time estimate from the speed a finished run of the
same model on the same device measured (``rates.json`` in the user cache), if there is one.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .engine.prefix import group_jobs
from .engine.scoring import Prompts, distinct_rows
from .prompts.cloze import ClozePrompts
from .prompts.prepare import Prepared
from .settings.config import EvalConfig
from .settings.methods import letter_parts
from .settings.shards import parse_shard

RATES = "rates.json"  # tokens/s per (model, device, dtype), written by finished runs


def cache_dir() -> Path:
    """``$TWINKLE_HF_CACHE``, else ``$XDG_CACHE_HOME/twinkle_hf``, else ``~/.cache/twinkle_hf``."""
    if os.environ.get("TWINKLE_HF_CACHE"):
        return Path(os.environ["TWINKLE_HF_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "twinkle_hf"


def rate_key(cfg: EvalConfig) -> str:
    """A local model by its absolute path (the same model from another folder is the same key)."""
    local = Path(cfg.model).expanduser()
    return f"{local.resolve() if local.exists() else cfg.model}|{cfg.device}|{cfg.dtype}|{cfg.method}"


HISTORY = 20  # runs remembered per (model, device, dtype, method); the oldest go first


def record_rate(cfg: EvalConfig, timing: dict[str, Any]) -> None:
    """Add a finished run's (tokens run, seconds) to its key's history for later dry runs; never fails a run."""
    tokens = (timing.get("computed_tokens") or 0) + (timing.get("generated_tokens") or 0)
    if not tokens or not timing.get("seconds"):
        return
    path = cache_dir() / RATES
    try:
        rates = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        runs = [*_history(rates.get(rate_key(cfg))), {"tokens": int(tokens), "seconds": float(timing["seconds"])}]
        rates[rate_key(cfg)] = {"runs": runs[-HISTORY:]}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rates, indent=1), encoding="utf-8")
    except (OSError, ValueError, TypeError, AttributeError):
        pass


def _history(entry: Any) -> list[dict[str, float]]:
    """The measured runs of one key: ``{"runs": [{tokens, seconds}, ...]}``; an entry of the first
    format (``{tokens_per_second, tokens}``, the last run only) counts as one run."""
    if not isinstance(entry, dict):
        return []
    if "runs" in entry:
        return [r for r in entry["runs"] if isinstance(r, dict) and r.get("tokens", 0) > 0 and r.get("seconds", 0) > 0]
    if entry.get("tokens_per_second", 0) > 0 and entry.get("tokens", 0) > 0:
        return [{"tokens": entry["tokens"], "seconds": entry["tokens"] / entry["tokens_per_second"]}]
    return []


def measured_runs(cfg: EvalConfig) -> list[dict[str, float]]:
    path = cache_dir() / RATES
    try:
        return _history(json.loads(path.read_text(encoding="utf-8")).get(rate_key(cfg))) if path.is_file() else []
    except (OSError, ValueError, AttributeError):
        return []


@dataclass(frozen=True)
class Estimate:
    seconds_per_token: float  # Σ seconds / Σ tokens: the mean of each run's s/token, weighted by its tokens
    spread: float  # the token-weighted sd of the runs' s/token (0 from one run)
    runs: int
    tokens: int  # tokens measured in all


def estimate_speed(runs: list[dict[str, float]]) -> Estimate | None:
    """Seconds per token from the measured history, each run weighted by the tokens it ran: a short
    run's fixed costs (loading, a first slow pass) weigh as little as its tokens do."""
    if not runs:
        return None
    tokens = np.array([r["tokens"] for r in runs], dtype=np.float64)
    per_token = np.array([r["seconds"] for r in runs], dtype=np.float64) / tokens
    mean = float(np.average(per_token, weights=tokens))
    spread = float(np.sqrt(np.average((per_token - mean) ** 2, weights=tokens))) if len(runs) > 1 else 0.0
    return Estimate(mean, spread, len(runs), int(tokens.sum()))


def describe_estimate(est: Estimate | None, run: int, new: int) -> str:
    """The dry run's time line: the estimate, its basis, and how far the measured runs' speeds spread."""
    if est is None:
        return ("No time estimate: no finished run of this model, device and dtype has been measured yet "
                "(every finished run records its speed).")
    span = _duration(run * est.seconds_per_token)
    if new:
        span += f" plus up to {_duration(new * est.seconds_per_token)} of generation"
    speed = f"{1 / est.seconds_per_token:,.0f} tokens/s"
    if est.runs == 1:
        return (f"Estimated time: {span} (at {speed}, measured by one earlier run of this model on this device, "
                f"{est.tokens:,} tokens; one run shows no spread, so its uncertainty is unknown)")
    rel = est.spread / est.seconds_per_token
    total = (run + new) * est.seconds_per_token
    return (f"Estimated time: {span} (at {speed}, the token-weighted mean of {est.runs} earlier runs of this model "
            f"on this device, {est.tokens:,} tokens; their speeds spread by ±{100 * rel:.0f}%: "
            f"{_duration(total * max(0.0, 1 - rel))} to {_duration(total * (1 + rel))} in all)")


@dataclass(frozen=True)
class DatasetPlan:
    name: str
    subjects: int
    questions: int
    orders: int
    prompts: int
    tokens: int
    tokens_shared: int  # after prefix sharing (a shared prefix counts once)
    longest: int
    longest_id: str
    generates: bool = False  # the prompts are answered in writing (up to max_new_tokens each)


def _run_tokens(ids: list[list[int]], groups: Any, tails: list[int] | None = None) -> int:
    """Tokens run once shared prefixes run once (as the scorer groups them)."""
    jobs = group_jobs(ids, groups, tails)
    return sum(j.prefix_len + sum(len(ids[i]) - j.prefix_len for i in j.rows) for j in jobs)


def plan_dataset(name: str, prep: Prepared, cfg: EvalConfig) -> DatasetPlan:
    """The counts of one prepared dataset; prompts and tokens count every sample."""
    ids, questions = prep.token_ids, prep.rows["id"][:]  # [:]: a list, not a column read row by row
    # a scored prompt equal to an earlier one (its labels too) is run once, as the scorer runs it
    once = list(range(len(ids))) if cfg.generates else distinct_rows(Prompts(ids, prep.letter_ids))[0]
    groups = [prep.groups[i] for i in once] if cfg.share_prefix and prep.groups is not None else None
    shared = _run_tokens([ids[i] for i in once], groups)
    longest = max(range(len(ids)), key=lambda i: len(ids[i]))
    return DatasetPlan(name, len(set(prep.rows["subject"][:])), len(set(questions)),
                       len(set(prep.rows["order_index"][:])), len(ids) * cfg.samples, sum(map(len, ids)) * cfg.samples,
                       shared * cfg.samples, len(ids[longest]), questions[longest], cfg.generates)


def plan_cloze(name: str, prep: ClozePrompts, cfg: EvalConfig) -> DatasetPlan:
    """The counts of one dataset's cloze requests: one prompt per option, its question run once as
    the shared prefix of the question's options (never into the scored continuation)."""
    ids, questions = prep.token_ids, prep.rows["id"][:]
    shared = _run_tokens(ids, prep.groups if cfg.share_prefix else None, [len(t) for t in prep.targets])
    longest = max(range(len(ids)), key=lambda i: len(ids[i]))
    return DatasetPlan(name, len(set(prep.rows["subject"][:])), len(questions), 1, len(ids), sum(map(len, ids)),
                       shared, len(ids[longest]), questions[prep.question[longest]])


def describe(plans: list[DatasetPlan], example: str, cfg: EvalConfig) -> str:
    """The dry run's report (markdown-ish plain text)."""
    lines = [f"Dry run: {cfg.model} ({cfg.method}, orders: {cfg.permutation_mode}"
             f"{f', {cfg.samples} samples' if cfg.samples > 1 else ''}): tokenizer and data only, no weights "
             f"loaded, nothing written.", "",
             "| dataset | subjects | questions | orders | prompts | tokens | after prefix sharing* | longest prompt |",
             "|---|---|---|---|---|---|---|---|"]
    for p in plans:
        lines.append(f"| {p.name} | {p.subjects} | {p.questions} | {p.orders} | {p.prompts:,} | {p.tokens:,} | "
                     f"{p.tokens_shared:,} | {p.longest:,} ({p.longest_id}) |")
    lines.append("\n*a shared few-shot block or question stem counts once (generation also runs a chat header once "
                 "per segment of questions: a little less)")
    if len({p.name.split(" (")[0] for p in plans}) < len(plans):
        lines.append(f"\n--method {cfg.method} runs each dataset in parts: (letters) the letter prompts, (written) "
                     f"the same prompts answered in writing, (cloze) one prompt per option text.")
    run = sum(p.tokens_shared for p in plans)
    new = sum(p.prompts for p in plans if p.generates) * cfg.max_new_tokens
    if new:
        lines.append(f"\nGeneration adds at most {new:,} new tokens ({cfg.max_new_tokens} per prompt).")
    est = estimate_speed(measured_runs(cfg))
    line = describe_estimate(est, run, new)
    if est is not None and len(plans) > 1:  # a suite's members, or a run's parts
        line += "; per dataset: " + ", ".join(f"{p.name} {_duration(p.tokens_shared * est.seconds_per_token)}"
                                              for p in plans)
    if cfg.shard:  # the shards are dealt whole prefix groups, so each runs about 1/N of the tokens
        n = parse_shard(cfg.shard)[1]
        each = f" (about {_duration((run + new) * est.seconds_per_token / n)})" if est is not None else ""
        line += (f"\n--shard {cfg.shard}: this shard runs about 1/{n} of the rows{each}; whole prefix groups are "
                 f"dealt, so shards differ a little")
    lines.append("\n" + line)
    lines += ["", "Example prompt (the first row):", "", example]
    return "\n".join(lines)


def context_length(cfg: EvalConfig) -> int | None:
    """The model's context length from its config alone (None where it cannot be read: then the
    dry run does not shorten few-shot blocks that would not fit, as a real run would)."""
    from transformers import AutoConfig

    from .models.locate import locate_model

    try:
        _kind, where, gguf = locate_model(cfg.model)
        config = AutoConfig.from_pretrained(where, revision=cfg.revision, trust_remote_code=cfg.trust_remote_code,
                                            **({"gguf_file": gguf} if gguf else {}))
    except Exception:  # an estimate only: any failure means "unknown"
        return None
    return getattr(config, "max_position_embeddings", None)


def dry_run(cfg: EvalConfig, progress: bool = True) -> str:
    """Load the tokenizer and the data, prepare every dataset as a run would, and describe it;
    ``progress``: say each step on stderr (tokenizing all of MMLU 5-shot takes minutes on 2 cores)."""
    from .data.sources import load_datasets, quiet_datasets
    from .models.loading import load_tokenizer
    from .prompts.cloze import prepare_cloze
    from .prompts.prepare import prepare_dataset

    say = (lambda text: print(f"dry run: {text}", file=sys.stderr, flush=True)) if progress else (lambda text: None)
    say(f"loading the tokenizer of {cfg.model}")
    tokenizer = load_tokenizer(cfg)
    max_tokens = context_length(cfg)
    plans, example = [], ""
    with quiet_datasets():
        say("reading the data")
        for data in load_datasets(cfg):
            local = cfg.for_dataset(data.source)
            say(f"{data.name}: {len(data.rows):,} questions read; building and tokenizing every prompt")
            parts = letter_parts(local, tokenizer) if local.scores_letters else []
            named = len(parts) > 1 or (parts and local.cloze)
            for part, label in zip(parts, ("letters", "written")):
                prep = prepare_dataset(tokenizer, data, part, max_tokens, progress=progress)
                plans.append(plan_dataset(f"{data.name} ({label})" if named else data.name, prep, part))
                example = example or prep.texts[0]
            if local.cloze:
                cloze = prepare_cloze(tokenizer, data, local, max_tokens)
                plans.append(plan_cloze(f"{data.name} (cloze)" if named else data.name, cloze, local))
                example = example or str(tokenizer.decode(cloze.token_ids[0] + cloze.targets[0][-1:]))
    return describe(plans, example, cfg)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"
