"""Score tokenized prompts over their labels, or continuations token by token.

No I/O, no metrics. Rows run longest first, so an out-of-memory shows up on the first batch. They
are left-padded with explicit position ids, so a padded row computes what it would alone. Only the
positions read are materialised (``logits_to_keep``), never a [batch, seq, vocab] tensor, and only
the label columns leave the device. Rows that share a long token prefix (a few-shot block, a
question stem across its orders) run it once: a run's prefixes go into one store of keys/values
(prefix.py), and the rows continue from it in passes sorted and padding-capped by the length they
run. A pass without padding sends no attention mask.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm.auto import tqdm

from ..errors import TwinkleError
from ..models.facts import accepts, input_device, model_config
from ..runtime.memory import peak_rss
from ..runtime.placement import grad_off
from .batching import Batcher, StoreTooLarge, run_batches
from .continuation import collect_continuations
from .forward import activation_bytes_per_token, cache_keyword, kv_bytes_per_token, left_pad
from .prefix import Job, PrefixBatch, PrefixStore, continuation_order, plan_jobs
from .results import (
    Continuations,
    ContinuationScores,
    LetterScores,
    Prompts,
    Requests,
    Scores,
)
from .stats import ScoreStats

__all__ = ["Continuations", "Prompts", "ScoreSettings", "distinct_rows", "score_prompts"]

if TYPE_CHECKING:
    from ..runtime.lockstep import Lockstep


@dataclass(frozen=True)
class ScoreSettings:
    """How to score: rows per batch (or "auto": a padded-token budget), the padding token id, and
    whether to show a progress bar."""

    batch_size: int | str = "auto"
    pad_id: int = 0
    progress: bool = True
    lockstep: Lockstep | None = None  # while the processes run a sharded model's passes together


def _forward_last(model: Any, rows: list[list[int]], pad_id: int, device: torch.device,
                  cached: tuple[dict[str, Any], torch.Tensor] | None = None, keep: int = 1) -> torch.Tensor:
    """Next-token logits of each row's last ``keep`` positions: [batch, keep, vocab], on the device
    (rows are left-padded, so a row's last positions are its own). With ``cached`` (cache
    kwargs and the cached part's mask), rows continue cached prefixes. A pass without padding
    sends no mask: the model's own causal one is all it needs (and SDPA keeps GQA and its fast
    kernels, which a 4D boolean mask turns off)."""
    ids, mask = left_pad(rows, pad_id)
    before = cached[1].shape[1] if cached else 0
    if cached:
        mask = torch.cat([cached[1], mask], dim=1)
    ids, mask = ids.to(device), mask.to(device)
    padded = not bool(mask.all())
    kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask if padded else None}
    if accepts(model, "position_ids"):  # continue each row from its own prefix length
        kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)[:, before:]
    if accepts(model, "logits_to_keep"):
        kwargs["logits_to_keep"] = keep
    if cached:
        kwargs.update(cached[0])
    else:
        kwargs["use_cache"] = False
    return model(**kwargs).logits[:, -keep:, :]


Sink = Callable[[list[int], list[Any]], None]  # rows, their LetterScore or ContinuationScore


@dataclass(frozen=True)
class _Run:
    """What every batch of one :func:`score_prompts` call needs."""

    model: Any
    targets: Sequence[Sequence[int]]  # per row: its labels (letters) or its continuation's tokens
    pad_id: int
    batcher: Batcher
    out: Scores
    bar: Any
    sink: Sink | None


def _score_rows(run: _Run, rows: list[int], rests: dict[int, list[int]], store: PrefixStore | None = None,
                owner: dict[int, int] | None = None) -> None:
    """``rows`` in batches by the length of what they run; with ``store``, each continues prefix
    ``owner[row]``, and a batch may mix prefixes (their keys/values count against the budget too)."""
    out, stats, owner = run.out, run.out.stats, owner or {}
    held = {i: store.lengths[owner[i]] for i in rows} if store else {}
    order, lengths, widths = continuation_order(rows, rests, held)

    def score(batch: list[int]) -> None:
        cached = store.arguments([owner[i] for i in batch]) if store else None
        rows = [rests[i] for i in batch]
        if isinstance(out, ContinuationScores):
            keep = max(len(run.targets[i]) for i in batch)
            logits = _forward_last(run.model, rows, run.pad_id, run.batcher.device, cached, keep)
            collect_continuations(logits, batch, run.targets, out)
        else:
            logits = _forward_last(run.model, rows, run.pad_id, run.batcher.device, cached)[:, -1, :]
            _collect(logits, batch, run.targets, out)
        if run.sink is not None:
            run.sink(batch, [out.row(i) for i in batch])
        stats.computed_tokens += sum(len(rests[i]) for i in batch)
        stats.padded_tokens += len(batch) * max(len(rests[i]) for i in batch)
        run.bar.update(len(batch))

    run_batches(run.batcher, order, lengths, score, widths if store else None)


def _run_jobs(run: _Run, jobs: list[Job], token_ids: Sequence[list[int]]) -> None:
    """Shared-prefix jobs in stores (as many prefixes as the batcher lets one hold, longest
    first): the store's prefixes run in passes of similar lengths, then every row of the store
    continues from them, in passes across prefixes; the store is dropped after. Then the rows
    without a shared prefix."""
    batcher = run.batcher
    shared = sorted((j for j in jobs if j.prefix_len), key=lambda j: -j.prefix_len)
    start = 0
    while start < len(shared):
        cap, end = batcher.store_tokens(), start + 1
        total = shared[start].prefix_len
        while end < len(shared) and total + shared[end].prefix_len <= cap:
            total += shared[end].prefix_len
            end += 1
        group = shared[start:end]
        try:
            store = _build_store(run, [token_ids[j.rows[0]][:j.prefix_len] for j in group])
        except StoreTooLarge:  # no row of the group is scored yet: a smaller store, the same rows
            batcher.shrink_store(total, len(group))
            continue
        owner = {i: n for n, j in enumerate(group) for i in j.rows}
        rests = {i: list(token_ids[i][j.prefix_len:]) for j in group for i in j.rows}
        _score_rows(run, list(owner), rests, store, owner)
        del store
        start = end
    plain = [i for j in jobs if not j.prefix_len for i in j.rows]
    if plain:
        _score_rows(run, plain, {i: list(token_ids[i]) for i in plain})


def _build_store(run: _Run, prefixes: list[list[int]]) -> PrefixStore:
    """``prefixes`` (longest first) run in right-padded passes of similar lengths, kept in one store."""
    model, batcher, stats = run.model, run.batcher, run.out.stats
    store = PrefixStore([len(p) for p in prefixes], model_config(model), cache_keyword(model))

    def build(batch: list[int]) -> None:
        part = PrefixBatch.build(model, [prefixes[n] for n in batch], run.pad_id, batcher.device)
        store.add(batch[0], part)
        stats.shared_prefixes += len(batch)
        stats.prefix_batches += 1
        stats.computed_tokens += part.computed
        stats.padded_tokens += part.padded

    run_batches(batcher, list(range(len(prefixes))), list(store.lengths), build, counted=False)
    return store


def score_prompts(model: Any, prompts: Requests, settings: ScoreSettings = ScoreSettings(),
                  sink: Sink | None = None) -> Scores:
    """Score each prompt's next token over its option labels (:class:`Prompts`), or each
    continuation's tokens (:class:`Continuations`).

    Rows with the same ``prompts.groups`` key are candidates for prefix sharing. A row whose tokens
    and labels equal an earlier row's (a random order that drew the original one, or another
    seed's) is run once and its result copied. With ``batch_size="auto"`` batches are capped by
    padded tokens, and an out-of-memory halves the cap and retries the same batch (finished rows
    are kept); with a fixed size it is a clear error. ``sink`` (if given) receives each finished
    batch, e.g. to save it as it comes.
    """
    first, copies = distinct_rows(prompts)
    if len(first) == len(prompts):
        return _score_distinct(model, prompts, settings, sink)
    fan_out = None if sink is None else (lambda rows, results: sink(
        [i for r in rows for i in copies[r]], [x for r, x in zip(rows, results) for _ in copies[r]]))
    once = _score_distinct(model, prompts.take(first), settings, fan_out)
    where = np.empty(len(prompts), dtype=np.int64)
    for r, rows in enumerate(copies):
        where[rows] = r
    stats = dataclasses.replace(once.stats, rows=len(prompts), repeated_rows=len(prompts) - len(first),
                                tokens=sum(len(t) for t in prompts.token_ids))
    return once.take(where, stats)


def distinct_rows(prompts: Requests) -> tuple[list[int], list[list[int]]]:
    """The first row of each distinct prompt (tokens and targets), and per distinct prompt all its rows."""
    index: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    first: list[int] = []
    copies: list[list[int]] = []
    for i, (ids, labels) in enumerate(zip(prompts.token_ids, prompts.targets)):
        r = index.setdefault((tuple(ids), tuple(labels)), len(first))
        if r == len(first):
            first.append(i)
            copies.append([])
        copies[r].append(i)
    return first, copies


def _score_distinct(model: Any, prompts: Requests, settings: ScoreSettings, sink: Sink | None) -> Scores:
    """:func:`score_prompts` on rows that are all different."""
    token_ids, n = prompts.token_ids, len(prompts)
    device = input_device(model)
    lengths = [len(t) for t in token_ids]
    if n and min(lengths) == 0:
        raise TwinkleError("a prompt tokenized to zero tokens; check the template and tokenizer")
    continuation = isinstance(prompts, Continuations)
    stats = ScoreStats(rows=n, tokens=sum(lengths))
    out: Scores = ContinuationScores.empty(n, stats) if continuation else LetterScores.empty(n, stats)
    tensor_parallel = settings.lockstep.layout.tensor_parallel if settings.lockstep is not None else 1
    batcher = Batcher(settings.batch_size, device, out.stats, equal_lengths=not accepts(model, "position_ids"),
                      kv_bytes=kv_bytes_per_token(model, tensor_parallel), continuation=continuation,
                      lockstep=settings.lockstep, token_bytes=activation_bytes_per_token(model))
    if batcher.equal_lengths:
        warnings.warn(f"{type(model).__name__}.forward takes no position_ids, so a left-padded prompt would "
                      f"be scored at shifted positions; batching only prompts of equal length instead "
                      f"(correct, but slower)", stacklevel=2)
    tails = [len(t) for t in prompts.targets] if continuation else None  # scored positions: never shared
    jobs = plan_jobs(model, token_ids, prompts.groups, tails)
    bar = tqdm(total=n, desc="scoring", unit="prompt", disable=not settings.progress or n == 0, dynamic_ncols=True)
    with grad_off(model):
        _run_jobs(_Run(model, prompts.targets, settings.pad_id, batcher, out, bar, sink), jobs,
                  token_ids)
    bar.close()
    if device.type == "cuda":
        out.stats.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    out.stats.peak_rss_bytes = peak_rss()
    return out


def _collect(logits: torch.Tensor, batch: list[int], letter_ids: Sequence[Sequence[int]], out: LetterScores) -> None:
    """Per row: softmax over its k label log-probabilities, and their total probability. Only the
    label columns' log-softmax leaves the device, in one copy of [rows, most labels]."""
    ks = [len(letter_ids[i]) for i in batch]
    columns = torch.tensor([list(letter_ids[i]) + [letter_ids[i][0]] * (max(ks) - k) for i, k in zip(batch, ks)],
                           dtype=torch.long, device=logits.device)
    logits = logits.float()
    logp = (logits.gather(1, columns) - torch.logsumexp(logits, dim=-1, keepdim=True)).cpu().double()
    logp[torch.arange(max(ks)).unsqueeze(0) >= torch.tensor(ks).unsqueeze(1)] = -torch.inf  # beyond a row's k
    shares, masses = torch.softmax(logp, dim=1).numpy(), logp.exp().sum(dim=1).numpy()
    for j, (i, k) in enumerate(zip(batch, ks)):
        out.probs[i], out.label_mass[i] = shares[j, :k].copy(), masses[j]
