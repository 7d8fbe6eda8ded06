"""The only place where the stages meet: load -> prepare (permute, prompts, tokens) -> score
(sharded over processes, resumable) -> metrics."""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .data.fingerprint import data_fingerprint
from .data.load import LoadedDataset
from .data.sources import DataArg, as_datasets, benchmark_records, quiet_datasets
from .engine.continuation import cloze_picks
from .engine.distributed import generate_sharded, score_sharded
from .engine.generate import stop_token_ids
from .engine.plan import GenerationSettings
from .engine.scoring import Prompts, ScoreSettings
from .engine.stats import ScoreStats, timing_record
from .metrics.extract import extract
from .metrics.summarize import MetricOptions, summarize_groups
from .metrics.true_mass import true_mass_blocks
from .metrics.twinkle_extract import letter_index, twinkle_letter, twinkle_patterns
from .models.facts import data_parallel_inner, input_device, model_config
from .models.loading import ModelInfo
from .outputs.result import EvalResult
from .outputs.resume import RunLog, cloze_key, written_name
from .prompts.cloze import ClozePrompts, prepare_cloze
from .prompts.permute import choose_options, hash_ids
from .prompts.prepare import Prepared, prepare_dataset
from .runtime.layout import Layout, layout_of, parallel_record
from .runtime.memory import reset_peaks
from .runtime.processes import process_state
from .schema import CLOZE, Predictions
from .settings.config import EvalConfig
from .settings.methods import letter_method, letter_parts
from .settings.values import compile_answer_regex


def score_dataset(model: Any, tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, progress: bool = True,
                  layout: Layout | None = None, run_log: RunLog | None = None) -> tuple[Predictions, ScoreStats, int]:
    """Score one dataset (letters, option texts as continuations, or both on the same questions);
    with a ``run_log``, rows it already holds are not scored again and new ones are saved as their
    batches finish."""
    parts, stats, cut = [], [], 0
    layout = layout or Layout()
    context = getattr(model_config(model), "max_position_embeddings", None)
    if cfg.scores_letters:
        scored, *written = letter_parts(cfg, tokenizer)
        prep = prepare_dataset(tokenizer, data, scored, context)
        score = generate_dataset if cfg.generates else _score_letters
        preds, st, cut = score(model, tokenizer, data, prep, scored, progress, layout, run_log)
        stats.append(st)
        for answers in written:  # the same prompts answered in writing: the letter read beside the letter scored
            text, st, _ = generate_dataset(model, tokenizer, data, prepare_dataset(tokenizer, data, answers, context),
                                           answers, progress, layout, run_log, tag=answers.method)
            assert text.id == preds.id and np.array_equal(text.order_index, preds.order_index)
            preds = dataclasses.replace(preds, pred_written=text.pred, written=text.output)
            stats.append(st)
        parts.append(preds.tagged(letter_method(cfg.method) or "") if cfg.cloze else preds)
    if cfg.cloze:
        preds, st = cloze_dataset(model, tokenizer, data, prepare_cloze(tokenizer, data, cfg, context), cfg, progress,
                                  layout, run_log)
        parts.append(preds)
        stats.append(st)
    return Predictions.concat(parts), ScoreStats.merge(stats), cut


def _score_letters(model: Any, tokenizer: Any, data: LoadedDataset, prep: Prepared, cfg: EvalConfig, progress: bool,
                   layout: Layout, run_log: RunLog | None = None) -> tuple[Predictions, ScoreStats, int]:
    """Letter scoring: each prompt's next-token probabilities over its option labels."""
    rows = prep.rows[:]  # the columns as lists, read once (a datasets column reads row by row)
    keys = [(data.name, i, p, 0) for i, p in zip(rows["id"], rows["order_index"])]
    perms = rows["perm"]
    done = _still_valid(run_log, keys, perms)
    todo = [i for i, key in enumerate(keys) if key not in done]
    sink = None
    if run_log is not None:
        log = run_log
        sink = lambda idx, probs, mass: log.append(
            {"dataset": data.name, "id": keys[todo[j]][1], "order": keys[todo[j]][2], "perm": perms[todo[j]],
             "probs": p, "letter_mass": m} for j, p, m in zip(idx, probs, mass))
    pad_id = pad_token_id(tokenizer)
    prompts = Prompts(prep.token_ids, prep.letter_ids, prep.groups).take(todo)
    out = score_sharded(model, prompts, ScoreSettings(cfg.batch_size, pad_id, progress), layout, sink,
                        f"letters of {data.name}")
    probs: list[np.ndarray] = [done[k]["probs"] if k in done else np.empty(0) for k in keys]
    mass = np.array([done[k]["letter_mass"] if k in done else 0.0 for k in keys], dtype=np.float64)
    for j, i in enumerate(todo):
        probs[i], mass[i] = out.probs[j], out.letter_mass[j]
    order_index = np.asarray(rows["order_index"], dtype=np.int64)
    preds = Predictions(
        dataset=[data.name] * len(keys), id=rows["id"], subject=rows["subject"], order_index=order_index, perm=perms,
        answer=np.asarray(rows["answer"], dtype=np.int64),
        pred=choose_options(probs, rows["id"], order_index, cfg.seed)[0], probs=probs, letter_mass=mass,
        prompt=prep.texts if cfg.log_prompts else None,
        **_provenance(data, rows["id"], [len(t) for t in prep.token_ids]), **_meaning(rows),
    )
    if cfg.probe == "choices-only":
        preds = dataclasses.replace(preds, pred_choices_only=_choices_only(model, tokenizer, data, cfg, progress,
                                                                           layout, rows))
    return preds, out.stats, prep.fewshot_truncated


def cloze_dataset(model: Any, tokenizer: Any, data: LoadedDataset, prep: ClozePrompts, cfg: EvalConfig,
                  progress: bool, layout: Layout, run_log: RunLog | None = None) -> tuple[Predictions, ScoreStats]:
    """Cloze scoring: every option's text as a continuation of its question (one row per option, the
    question run once as their shared prefix), then one prediction row per question."""
    rows = prep.rows[:]
    ids, choices = rows["id"], rows["choices"]
    option = [j for c in choices for j in range(len(c))]
    keys = [cloze_key(data.name, ids[q], j) for q, j in zip(prep.question, option)]
    done = run_log.done if run_log is not None else {}
    todo = [i for i, key in enumerate(keys) if key not in done]
    sink = None
    if run_log is not None:
        log = run_log
        sink = lambda idx, probs, greedy: log.append(
            {"dataset": data.name, "id": ids[prep.question[todo[j]]], "order": 0, "perm": [],
             "formulation": CLOZE, "option": option[todo[j]], "probs": p, "letter_mass": g}
            for j, p, g in zip(idx, probs, greedy))
    prompts = Prompts(prep.token_ids, prep.targets, prep.groups, continuation=True).take(todo)
    out = score_sharded(model, prompts, ScoreSettings(cfg.batch_size, pad_token_id(tokenizer), progress), layout, sink,
                        f"option texts of {data.name}")
    token_logp = [done[k]["probs"] if k in done else np.empty(0) for k in keys]
    for j, i in enumerate(todo):
        token_logp[i] = out.probs[j]
    loglik: list[list[float]] = [[] for _ in ids]
    for q, logp in zip(prep.question, token_logp):
        loglik[q].append(float(np.sum(logp)))
    sums = [np.array(x, dtype=np.float64) for x in loglik]
    partial = data.benchmark is not None and data.benchmark.cloze_scoring == "partial"  # Winogrande: acc alone
    pred, pred_norm, pred_bytes = cloze_picks(sums, choices, partial)
    n = len(ids)
    preds = Predictions(
        dataset=[data.name] * n, id=ids, subject=rows["subject"], order_index=np.zeros(n, dtype=np.int64),
        perm=[list(range(len(c))) for c in choices], answer=np.asarray(rows["answer"], dtype=np.int64), pred=pred,
        probs=[np.empty(0)] * n, letter_mass=np.full(n, np.nan), prompt=prep.contexts if cfg.log_prompts else None,
        formulation=[CLOZE] * n, loglik=sums, pred_norm=pred_norm, pred_bytes=pred_bytes,
        **_provenance(data, ids, prep.context_tokens), pinned=[[] for _ in ids], rewritten=[[] for _ in ids],
        fixed_order=np.zeros(n, dtype=bool),
    )
    return preds, out.stats


def _choices_only(model: Any, tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, progress: bool, layout: Layout,
                  rows: dict[str, list]) -> np.ndarray:
    """--probe choices-only: every row scored again with its question text removed, and the few-shot
    examples' too (same orders, same examples; Balepur et al. 2024); the displayed letter chosen.
    Not kept by --resume: a resumed run scores the probe again in full."""
    prep = prepare_dataset(tokenizer, data, cfg, getattr(model_config(model), "max_position_embeddings", None),
                           blank_questions=True)
    assert prep.rows["id"][:] == rows["id"] and prep.rows["perm"][:] == rows["perm"]
    prompts = Prompts(prep.token_ids, prep.letter_ids, prep.groups)
    out = score_sharded(model, prompts, ScoreSettings(cfg.batch_size, pad_token_id(tokenizer), progress), layout, None,
                        f"choices-only probe of {data.name}")
    return choose_options(out.probs, rows["id"], np.asarray(rows["order_index"], dtype=np.int64), cfg.seed)[0]


def _still_valid(run_log: RunLog | None, keys: Sequence[tuple[str, str, int, int]],
                 perms: Sequence[list[int]]) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """The rows a resumed run finished before, kept only where the row still shows the same option
    order (and holds what this mode needs)."""
    if run_log is None:
        return {}
    return {k: run_log.done[k] for k, perm in zip(keys, perms) if k in run_log.done and run_log.done[k]["perm"] == perm}


def generate_dataset(model: Any, tokenizer: Any, data: LoadedDataset, prep: Prepared, cfg: EvalConfig,
                     progress: bool, layout: Layout, run_log: RunLog | None = None,
                     tag: str | None = None) -> tuple[Predictions, ScoreStats, int]:
    """Generation mode: every prompt decoded ``cfg.samples`` times, its letter extracted (``pred``
    -1: none); with a ``run_log``, answers it holds are not generated again (``tag``: the written half
    of logit+X, saved apart from the scored rows of the same prompts)."""
    base = np.repeat(np.arange(len(prep.rows)), cfg.samples)  # rows: (question, order, sample)
    sample = np.tile(np.arange(cfg.samples, dtype=np.int64), len(prep.rows))
    rows = prep.rows.select(base)[:]  # the columns as lists, read once
    token_ids = [prep.token_ids[i] for i in base]
    groups = None if prep.groups is None else [prep.groups[i] for i in base]
    settings = GenerationSettings(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                                  seed=cfg.seed, stop_ids=stop_token_ids(model, tokenizer), batch_size=cfg.batch_size,
                                  pad_id=pad_token_id(tokenizer), progress=progress)
    ids, orders, perms = rows["id"], rows["order_index"], rows["perm"]
    keys = [(written_name(data.name, tag), i, o, int(s)) for i, o, s in zip(ids, orders, sample)]
    done = {k: v for k, v in _still_valid(run_log, keys, perms).items() if "output" in v}
    todo = [i for i, key in enumerate(keys) if key not in done]
    # A row's sampling seed: sample 0 is the row of a one-sample run, so --samples n extends it.
    seeds = [int(h) for h in hash_ids([f"{data.name}\x00{i}\x00{o}" + (f"\x00{s}" if s else "")
                                       for i, o, s in zip(ids, orders, sample)])]
    decoded: dict[int, str] = {}  # this process's answers, decoded once (for the resume file and after)
    decode = lambda j, tokens: decoded.setdefault(j, tokenizer.decode(tokens, skip_special_tokens=True))
    sink = None
    if run_log is not None:
        log = run_log
        sink = lambda idx, tokens, cut: log.append(
            {"dataset": data.name, "id": ids[todo[j]], "order": orders[todo[j]], "sample": sample[todo[j]],
             "perm": perms[todo[j]], "output": decode(j, t), "truncated": c, "new_tokens": len(t),
             **({"formulation": tag} if tag else {})}
            for j, t, c in zip(idx, tokens, cut))
    out = generate_sharded(model, [token_ids[i] for i in todo], settings, layout, [seeds[i] for i in todo], sink,
                           None if groups is None else [groups[i] for i in todo],
                           f"answers of {written_name(data.name, tag)}")
    texts = [done[k]["output"] if k in done else "" for k in keys]
    truncated = np.array([bool(done[k]["truncated"]) if k in done else False for k in keys])
    new_tokens = np.array([int(done[k]["new_tokens"]) if k in done else 0 for k in keys], dtype=np.int64)
    for j, i in enumerate(todo):
        texts[i] = decoded[j] if j in decoded else decode(j, out.tokens[j])
        truncated[i], new_tokens[i] = out.truncated[j], len(out.tokens[j])
    regex = compile_answer_regex(cfg.answer_regex) if cfg.answer_regex else None
    found = [extract(text, len(c), cfg.method, regex) for text, c in zip(texts, rows["choices"])]
    pred = [f.pred for f in found]
    if cfg.extractor == "twinkle":  # Twinkle Eval's reading of the same texts (reasoning is still set aside)
        patterns = twinkle_patterns(cfg.method, cfg.answer_regex)
        pred = [letter_index(twinkle_letter(text, patterns), len(c)) for text, c in zip(texts, rows["choices"])]
    n = len(keys)
    preds = Predictions(
        dataset=[data.name] * n, id=ids, subject=rows["subject"], order_index=np.asarray(orders, dtype=np.int64),
        perm=perms, answer=np.asarray(rows["answer"], dtype=np.int64),
        pred=np.array(pred, dtype=np.int64), probs=[np.empty(0)] * n, letter_mass=np.full(n, np.nan),
        prompt=[prep.texts[i] for i in base] if cfg.log_prompts else None, output=texts,
        reasoning=[f.reasoning for f in found], truncated=truncated, new_tokens=new_tokens,
        sample=sample if cfg.samples > 1 else None, **_provenance(data, ids, [len(t) for t in token_ids]),
        **_meaning(rows),
    )
    return preds, out.stats, prep.fewshot_truncated


def _provenance(data: LoadedDataset, ids: Sequence[str], prompt_tokens: Sequence[int]) -> dict[str, Any]:
    """Predictions' ``file``/``row`` (each question's file and row in it, when the loader knows
    them) and ``prompt_tokens``."""
    out: dict[str, Any] = {"prompt_tokens": np.array(prompt_tokens, dtype=np.int64)}
    if data.origins and all(i in data.origins for i in ids):
        out["file"] = [data.origins[i][0] for i in ids]
        out["row"] = np.array([data.origins[i][1] for i in ids], dtype=np.int64)
    return out


def _meaning(rows: dict[str, list]) -> dict[str, Any]:
    """Predictions' ``pinned``, ``rewritten`` and ``fixed_order`` from the permuted rows' columns."""
    return {"pinned": rows["pinned"], "rewritten": rows["rewritten"],
            "fixed_order": np.asarray(rows["fixed_order"], dtype=bool)}


def pad_token_id(tokenizer: Any) -> int:
    """The tokenizer's padding id, else its end-of-sequence id, else 0 (padding is masked anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)


def evaluate(model: Any, tokenizer: Any, data: DataArg, cfg: EvalConfig, *, state: Any = None,
             model_info: ModelInfo | None = None, progress: bool = True, run_log: RunLog | None = None,
             accelerator: Any = None) -> EvalResult:
    """Evaluate an already-loaded model and tokenizer; returns metrics and per-row predictions.

    ``data``: loaded datasets, one, a path/hub id, or None for ``cfg.datasets``. Under several
    processes each scores a share and every process gets the full result; ``state`` is the
    ``accelerate.Accelerator`` or ``PartialState`` to shard with (None: the launcher's process
    group if there is one; ``accelerator=`` is its old name). Writes nothing; the model's
    train/eval mode is restored.
    """
    if accelerator is not None:
        warnings.warn("evaluate(accelerator=...) is now evaluate(state=...)", DeprecationWarning, stacklevel=2)
        state = state if state is not None else accelerator
    items = as_datasets(data, cfg)
    held, model = model, data_parallel_inner(model)  # DDP & co: the module inside, never the wrapper's forward
    state = process_state(state, cpu=input_device(model).type == "cpu")
    layout = layout_of(model, state)
    was_training = held.training
    held.eval()
    reset_peaks(input_device(model))
    start = time.perf_counter()
    parts, stats, shortened = [], [], 0
    try:
        with quiet_datasets():
            for item in items:
                preds, st, cut = score_dataset(model, tokenizer, item, cfg.for_dataset(item.source), progress, layout,
                                               run_log)
                parts.append(preds)
                stats.append(st)
                shortened += cut
    finally:
        held.train(was_training)
    seconds = time.perf_counter() - start
    predictions = Predictions.concat(parts).with_true_options({d.name: d.true_options for d in items})
    timing = timing_record(ScoreStats.merge(stats), predictions, seconds, shortened)
    timing["parallel"] = parallel_record(layout, input_device(model))
    skipped = {d.name: {"rows": d.skipped, "reasons": list(d.skipped_reasons)} for d in items if d.skipped}
    metrics = summarize_groups(predictions, MetricOptions.from_config(cfg))
    return EvalResult(config=cfg, predictions=predictions, metrics=metrics, timing=timing, model=model_info,
                      skipped=skipped, data_fingerprint=data_fingerprint(items),
                      benchmarks=benchmark_records(items, cfg),
                      true_mass=true_mass_blocks(predictions, {d.name: d.true_options for d in items}))
