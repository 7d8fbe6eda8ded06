"""The only place where the stages meet: load -> permute -> prompts -> tokens -> score -> metrics."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, Union

import datasets
import numpy as np

from .config import EvalConfig
from .data import DEFAULT_DATASET, LoadedDataset, limit_per_subject, load_benchmark
from .errors import TwinkleError
from .letters import resolve_letter_ids
from .loading import ModelInfo
from .metrics import MetricOptions, summarize_groups
from .permute import expand_permutations
from .prompts import build_prompt_set, resolve_template
from .schema import Predictions
from .distributed import process_state, score_sharded
from .resume import RunLog
from .scoring import ScoreStats


@dataclass
class EvalResult:
    """What an evaluation produced: metrics, per-row predictions, and how it ran."""

    config: EvalConfig
    predictions: Predictions
    metrics: dict[str, Any]
    timing: dict[str, Any]
    model: ModelInfo | None = None
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No `datasets` progress bar per internal map/filter; restore the user's setting after."""
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            datasets.utils.logging.enable_progress_bar()


DataArg = Union[LoadedDataset, Sequence[LoadedDataset], str, None]


def _as_datasets(data: DataArg, cfg: EvalConfig) -> list[LoadedDataset]:
    if data is None:
        return load_datasets(cfg)
    if isinstance(data, str):
        return load_datasets(dataclasses.replace(cfg, datasets=(data,)))
    if isinstance(data, LoadedDataset):
        return [data]
    return list(data)


def _input_device(model: Any) -> Any:
    """Where inputs go: the input embeddings' device (also right under a device_map)."""
    return model.get_input_embeddings().weight.device


def load_datasets(cfg: EvalConfig) -> list[LoadedDataset]:
    """Every dataset the config names (the embedded MMLU sample when it names none)."""
    sources = cfg.datasets or (DEFAULT_DATASET,)
    loaded = [
        load_benchmark(s, split=cfg.split, fewshot_split=cfg.fewshot_split, column_map=cfg.columns,
                       on_bad_row=cfg.on_bad_row, offline=cfg.offline)
        for s in sources
    ]
    names = [d.name for d in loaded]
    if len(set(names)) != len(names):
        raise TwinkleError(f"two datasets share a name ({names}); give them distinct paths")
    return loaded


def _prompt_texts(cfg: EvalConfig, data: LoadedDataset, rows: datasets.Dataset,
                  tokenizer: Any) -> tuple[list[str], str, list[Any] | None]:
    """Prompt strings for the permuted rows, the text between prompt and label, and the groups of
    rows that share a prefix (one few-shot block; zero-shot: one question's orders)."""
    template = resolve_template(cfg.prompt_lang, cfg.templates)
    built = build_prompt_set(rows, template, num_fewshot=cfg.num_fewshot, pool=data.fewshot,
                             self_pool=data.rows, shuffled=cfg.permutation_mode != "none", seed=cfg.seed)
    texts = built.texts
    groups: list[Any] | None = None
    if cfg.share_prefix:
        groups = list(built.block_ids) if cfg.num_fewshot else list(zip(built.block_ids, rows["id"]))
    if not cfg.apply_chat_template:
        return texts, template.label_prefix, groups
    if not getattr(tokenizer, "chat_template", None):
        raise TwinkleError("--apply-chat-template: this tokenizer has no chat template; drop the flag")
    wrapped = [tokenizer.apply_chat_template([{"role": "user", "content": t}], tokenize=False,
                                             add_generation_prompt=True) for t in texts]
    return wrapped, "", groups  # the assistant's reply starts with the letter itself


def _letter_ids(tokenizer: Any, texts: Sequence[str], ks: Sequence[int], prefix: str, special: bool) -> list[list[int]]:
    """Label ids per row, resolved in context once per option count (and cross-checked on a
    second prompt, since every prompt ends with the same cue)."""
    by_k: dict[int, list[int]] = {}
    for k in sorted(set(ks)):
        rows = [i for i, kk in enumerate(ks) if kk == k]
        ids = resolve_letter_ids(tokenizer, texts[rows[0]], k, prefix, special)
        other = resolve_letter_ids(tokenizer, texts[rows[-1]], k, prefix, special)
        if other != ids:
            raise TwinkleError(f"option labels tokenize differently in different prompts ({ids} vs {other}); "
                               f"check the template's answer_cue")
        by_k[k] = ids
    return [by_k[k] for k in ks]


@dataclass
class Prepared:
    """One dataset's permuted rows, ready to score."""

    rows: datasets.Dataset
    texts: list[str]
    token_ids: list[list[int]]
    letter_ids: list[list[int]]
    groups: list[Any] | None
    fewshot_truncated: int = 0  # rows whose few-shot block was shortened to fit the context


def _fit_context(cfg: EvalConfig, data: LoadedDataset, prep: Prepared, tokenizer: Any, limit: int | None) -> None:
    """Policy for prompts longer than the model's context: drop few-shot examples (last first) from
    those rows until they fit, counting them; a prompt too long even with none is an error."""
    too_long = [i for i, t in enumerate(prep.token_ids) if limit and len(t) > limit]
    if not too_long:
        return
    special = not cfg.apply_chat_template
    for shots in range(cfg.num_fewshot - 1, -2, -1):
        if shots < 0:
            i = too_long[0]
            raise TwinkleError(f"dataset {data.name}: question {prep.rows[i]['id']!r} needs "
                               f"{len(prep.token_ids[i])} tokens without few-shot examples but the model "
                               f"takes at most {limit}")
        subset = prep.rows.select(too_long)
        texts, _, _ = _prompt_texts(dataclasses.replace(cfg, num_fewshot=shots), data, subset, tokenizer)
        ids = tokenizer(texts, add_special_tokens=special)["input_ids"]
        still = []
        for j, i in enumerate(too_long):
            if len(ids[j]) <= limit:
                prep.texts[i], prep.token_ids[i] = texts[j], ids[j]
                if prep.groups is not None:
                    prep.groups[i] = ("shortened", shots, prep.groups[i])
                prep.fewshot_truncated += 1
            else:
                still.append(i)
        too_long = still
        if not too_long:
            return


def prepare_dataset(tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, limit: int | None) -> Prepared:
    """Permute, prompt and tokenize one dataset (the same on every process)."""
    rows = limit_per_subject(data.rows, cfg.limit)
    if len(rows) == 0:
        raise TwinkleError(f"dataset {data.name}: split {cfg.split!r} has no rows to evaluate")
    rows = expand_permutations(rows, cfg.permutation_mode, cfg.seed, cfg.seeds, cfg.score_original)
    texts, prefix, groups = _prompt_texts(cfg, data, rows, tokenizer)
    special = not cfg.apply_chat_template  # a rendered chat template already holds its BOS
    ks = [len(c) for c in rows["choices"]]
    letter_ids = _letter_ids(tokenizer, texts, ks, prefix, special)
    token_ids = tokenizer(texts, add_special_tokens=special)["input_ids"]
    prep = Prepared(rows, texts, token_ids, letter_ids, groups)
    _fit_context(cfg, data, prep, tokenizer, limit)
    return prep


def score_dataset(model: Any, tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, progress: bool = True,
                  state: Any = None, run_log: RunLog | None = None) -> tuple[Predictions, ScoreStats, int]:
    """Score one dataset; with a ``run_log``, rows it already holds are not scored again and new
    ones are saved as their batches finish."""
    prep = prepare_dataset(tokenizer, data, cfg, getattr(model.config, "max_position_embeddings", None))
    rows = prep.rows
    keys = [(data.name, i, p) for i, p in zip(rows["id"], rows["perm_index"])]
    perms = rows["perm"]
    done = run_log.done if run_log is not None else {}
    todo = [i for i, key in enumerate(keys) if key not in done or done[key][0] != perms[i]]
    sink = None
    if run_log is not None:
        save = run_log.sink(data.name, keys, perms)
        sink = lambda idx, probs, mass: save([todo[j] for j in idx], probs, mass)  # noqa: E731
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    out = score_sharded(model, [prep.token_ids[i] for i in todo], [prep.letter_ids[i] for i in todo],
                        cfg.batch_size, pad_id, progress, state,
                        None if prep.groups is None else [prep.groups[i] for i in todo], sink)
    probs: list[np.ndarray] = [done[k][1] if k in done else np.empty(0) for k in keys]
    mass = np.array([done[k][2] if k in done else 0.0 for k in keys], dtype=np.float64)
    for j, i in enumerate(todo):
        probs[i], mass[i] = out.probs[j], out.letter_mass[j]
    preds = Predictions(
        dataset=[data.name] * len(rows), id=rows["id"], subject=rows["subject"],
        perm_index=np.asarray(rows["perm_index"], dtype=np.int64), perm=perms,
        answer=np.asarray(rows["answer"], dtype=np.int64),
        pred=np.array([int(np.argmax(p)) for p in probs], dtype=np.int64),
        probs=probs, letter_mass=mass, prompt=prep.texts if cfg.log_prompts else None,
    )
    return preds, out.stats, prep.fewshot_truncated


def concat_predictions(parts: Sequence[Predictions]) -> Predictions:
    """One Predictions from several (datasets evaluated in turn)."""
    join = lambda name: [x for p in parts for x in getattr(p, name)]  # noqa: E731
    prompts = None if any(p.prompt is None for p in parts) else join("prompt")
    return Predictions(
        dataset=join("dataset"), id=join("id"), subject=join("subject"),
        perm_index=np.concatenate([p.perm_index for p in parts]), perm=join("perm"),
        answer=np.concatenate([p.answer for p in parts]), pred=np.concatenate([p.pred for p in parts]),
        probs=join("probs"), letter_mass=np.concatenate([p.letter_mass for p in parts]), prompt=prompts,
    )


def metric_options(cfg: EvalConfig) -> MetricOptions:
    """The metric knobs of a config (the bootstrap and PriDe subset use the base seed)."""
    return MetricOptions(n_boot=cfg.bootstrap, seed=cfg.seed, pride_fraction=cfg.pride_fraction)


def evaluate(model: Any, tokenizer: Any, data: DataArg, cfg: EvalConfig, *, accelerator: Any = None,
             model_info: ModelInfo | None = None, progress: bool = True, run_log: RunLog | None = None) -> EvalResult:
    """Evaluate an already-loaded model and tokenizer; returns metrics and per-row predictions.

    ``data``: loaded datasets, one, a path/hub id, or None for ``cfg.datasets``. Under several
    processes (an ``accelerator``, or a launcher's process group) each scores a share and every
    process gets the full result. Writes nothing; the model's train/eval mode is restored.
    """
    items = _as_datasets(data, cfg)
    state = process_state(accelerator, cpu=_input_device(model).type == "cpu")
    was_training = model.training
    model.eval()
    start = time.perf_counter()
    parts, stats, shortened = [], [], 0
    try:
        with _quiet_datasets():
            for item in items:
                preds, st, cut = score_dataset(model, tokenizer, item, cfg, progress, state, run_log)
                parts.append(preds)
                stats.append(st)
                shortened += cut
    finally:
        model.train(was_training)
    seconds = time.perf_counter() - start
    predictions = concat_predictions(parts)
    n_questions = len({(d, i) for d, i in zip(predictions.dataset, predictions.id)})
    tokens = sum(s.tokens for s in stats)
    computed = sum(s.computed_tokens for s in stats)
    padded = sum(s.padded_tokens for s in stats)
    timing = {
        "seconds": seconds,
        "questions": n_questions,
        "prompts": len(predictions),
        "questions_per_second": n_questions / seconds if seconds else None,
        "prompts_per_second": len(predictions) / seconds if seconds else None,
        "tokens": tokens,
        "computed_tokens": computed,
        "padded_tokens": padded,
        "padding_ratio": padded / computed if computed else None,
        "shared_prefix_saving": 1 - computed / tokens if tokens else None,
        "shared_prefixes": sum(s.shared_prefixes for s in stats),
        "resumed_rows": len(predictions) - sum(s.rows for s in stats),
        "fewshot_shortened_rows": shortened,  # context policy: few-shot examples dropped to fit
        "batches": sum(s.batches for s in stats),
        "oom_retries": sum(s.oom_retries for s in stats),
        "final_batch_rows": min((s.final_batch_rows for s in stats), default=0),
        "peak_memory_bytes": max((s.peak_memory_bytes or 0 for s in stats), default=0) or None,
    }
    skipped = {d.name: {"rows": d.skipped, "reasons": list(d.skipped_reasons)} for d in items if d.skipped}
    return EvalResult(config=cfg, predictions=predictions, metrics=summarize_groups(predictions, metric_options(cfg)),
                      timing=timing, model=model_info, skipped=skipped)
