"""Generation mode's forward passes: batched decoding of tokenized prompts, rows leaving the batch
as they finish.

Rows are sorted by length (longest first) and left-padded with explicit position ids, like the
scorer's, and sized by the same :class:`~twinkle_hf.batching.Batcher` (a padded-token budget that
counts every token a row may generate; out-of-memory halves it and retries). Each batch prefills its
prompts once, then feeds one token per live row per step; a row that emits a stop token or reaches
``max_new_tokens`` leaves the batch (its keys/values are dropped from the cache), so long answers do
not hold short ones. Rows that share a long token prefix (a question's orders and samples, see
prefix.py) prefill that prefix once and continue from its KV cache. Greedy by default; with a
temperature, each row samples from its own generator seeded by (seed, row key), so a row's text does
not depend on the batch it ran in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .batching import Batcher, is_oom, run_batches
from .errors import TwinkleError
from .forward import accepts, cache_keyword, left_pad, model_config
from .prefix import PrefixBatch, continuation_order, plan_jobs
from .scoring import ScoreStats


@dataclass(frozen=True)
class GenerationSettings:
    """How to decode: ``temperature`` 0 is greedy; ``top_p`` < 1 keeps the smallest set of tokens
    holding that probability; ``stop_ids`` end a row (not part of its text)."""

    max_new_tokens: int = 2048
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop_ids: tuple[int, ...] = ()
    batch_size: int | str = "auto"
    pad_id: int = 0
    progress: bool = True


@dataclass
class Generated:
    """Per row (input order): the new token ids (stop token excluded) and whether the row reached
    ``max_new_tokens`` without a stop token."""

    tokens: list[list[int]]
    truncated: np.ndarray
    stats: ScoreStats = field(default_factory=ScoreStats)


GenSink = Callable[[list[int], list[list[int]], list[bool]], None]  # rows, their tokens, truncated


def stop_token_ids(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """The tokenizer's end-of-sequence id and the model's generation_config eos ids (a chat model's
    end-of-turn token is usually only there)."""
    ids: list[int] = []
    config = getattr(model, "generation_config", None)
    for value in (getattr(config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        ids.extend(value if isinstance(value, (list, tuple)) else [] if value is None else [value])
    return tuple(dict.fromkeys(int(i) for i in ids))


def _next_tokens(logits: torch.Tensor, settings: GenerationSettings, generators: list[torch.Generator]) -> list[int]:
    """Greedy argmax, or a sample per row from its own generator (temperature, then top-p)."""
    if settings.temperature <= 0:
        return logits.argmax(dim=-1).tolist()
    probs = torch.softmax(logits.float().cpu() / settings.temperature, dim=-1)
    if settings.top_p < 1:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        drop = sorted_p.cumsum(dim=-1) - sorted_p >= settings.top_p  # keep the tokens until top_p is reached
        sorted_p[drop] = 0
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return [int(torch.multinomial(p, 1, generator=g)) for p, g in zip(probs, generators)]


Cached = tuple[dict[str, Any], torch.Tensor]  # a shared prefix's cache kwargs and its attention mask


def _decode_batch(model: Any, rows: list[list[int]], keys: list[int], settings: GenerationSettings,
                  device: torch.device, cached: Cached | None = None) -> tuple[list[list[int]], list[bool], int]:
    """Decode one batch: (new tokens per row, truncated per row, tokens run through the model).
    With ``cached``, each row continues its shared prefix (``rows`` hold the rest of the prompt)."""
    from transformers import DynamicCache

    ids, mask = left_pad(rows, settings.pad_id)
    before = cached[1].shape[1] if cached else 0
    if cached:
        mask = torch.cat([cached[1], mask], dim=1)
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, before:]  # each row from its own prefix length
    keyword = cache_keyword(model)
    cache = cached[0][keyword] if cached else DynamicCache(config=model_config(model))
    common: dict[str, Any] = {keyword: cache, "use_cache": True}  # every call of the batch
    if accepts(model, "logits_to_keep"):
        common["logits_to_keep"] = 1
    with_positions = accepts(model, "position_ids")
    generators = [torch.Generator().manual_seed((settings.seed * 1_000_003 + key) % (1 << 63)) for key in keys]
    out = model(input_ids=ids, attention_mask=mask, **({"position_ids": positions} if with_positions else {}),
                **common)
    alive = list(range(len(rows)))
    new: list[list[int]] = [[] for _ in rows]
    truncated = [False] * len(rows)
    last = positions[:, -1]
    run = ids.numel()
    stop = set(settings.stop_ids)
    for _ in range(settings.max_new_tokens):
        chosen = _next_tokens(out.logits[:, -1, :], settings, [generators[i] for i in alive])
        keep = []
        for j, (i, token) in enumerate(zip(alive, chosen)):
            if token in stop:
                continue
            new[i].append(token)
            if len(new[i]) >= settings.max_new_tokens:
                truncated[i] = True
            else:
                keep.append(j)
        if not keep:
            break
        if len(keep) < len(alive):  # finished rows leave the batch
            index = torch.tensor(keep, dtype=torch.long, device=device)
            cache.batch_select_indices(index)
            mask, last = mask[index], last[index]
            alive = [alive[j] for j in keep]
        step = torch.tensor([[new[i][-1]] for i in alive], dtype=torch.long, device=device)
        mask = torch.cat([mask, torch.ones((len(alive), 1), dtype=mask.dtype, device=device)], dim=1)
        last = last + 1
        out = model(input_ids=step, attention_mask=mask, **({"position_ids": last[:, None]} if with_positions else {}),
                    **common)
        run += len(alive)
    return new, truncated, run


@dataclass(frozen=True)
class _Run:
    """What every batch of one :func:`generate_texts` call needs."""

    model: Any
    keys: list[int]
    settings: GenerationSettings
    batcher: Batcher
    out: Generated
    bar: Any
    sink: GenSink | None


def _generate_rows(run: _Run, rows: list[int], rests: dict[int, list[int]], prefixes: PrefixBatch | None = None,
                   owner: dict[int, int] | None = None) -> None:
    """``rows`` in length-sorted batches; with ``prefixes``, each continues prefix ``owner[row]``.
    A row's length counts its cached prefix and every token it may generate."""
    out, owner = run.out, owner or {}
    order, lengths = continuation_order(rows, rests, prefixes, owner, run.settings.max_new_tokens)

    def decode(batch: list[int]) -> None:
        cached = prefixes.arguments([owner[i] for i in batch]) if prefixes else None
        new, truncated, ran = _decode_batch(run.model, [rests[i] for i in batch], [run.keys[i] for i in batch],
                                            run.settings, run.batcher.device, cached)
        for i, tokens, cut in zip(batch, new, truncated):
            out.tokens[i], out.truncated[i] = tokens, cut
        if run.sink is not None:
            run.sink(batch, new, truncated)
        out.stats.computed_tokens += sum(len(rests[i]) + len(t) for i, t in zip(batch, new))
        out.stats.padded_tokens += ran
        run.bar.update(len(batch))

    run_batches(run.batcher, order, lengths, decode)


def _run_jobs(run: _Run, token_ids: Sequence[list[int]], groups: Sequence[Hashable] | None) -> None:
    """Shared-prefix jobs in chunks, then the rows without a shared prefix.

    A chunk is as many whole jobs as one decode batch holds (jobs taken longest first): their
    prefixes are prefilled together, every row of the chunk decodes from them, and the chunk's cache
    is dropped after. Sizing chunks by decode rows, not by how evenly the prefixes pad, keeps decode
    batches as full as without sharing: a decode step costs nearly as much for 5 rows as for 40.
    """
    batcher, stats = run.batcher, run.out.stats
    jobs = plan_jobs(run.model, token_ids, groups)
    longest = {id(j): max(len(token_ids[i]) for i in j.rows) for j in jobs}
    shared = sorted((j for j in jobs if j.prefix_len), key=lambda j: -longest[id(j)])
    flat = [len(token_ids[i]) + run.settings.max_new_tokens for j in shared  # longest first within a job too
            for i in sorted(j.rows, key=lambda i: -len(token_ids[i]))]
    first_row = np.cumsum([0] + [len(j.rows) for j in shared])  # each job's first row in ``flat``
    start = 0
    while start < len(shared):
        room = batcher.plan(flat, int(first_row[start]))  # rows one decode batch holds from here
        end = start + 1
        while end < len(shared) and first_row[end + 1] - first_row[start] <= room:
            end += 1
        chunk = shared[start:end]
        lengths = [j.prefix_len for j in chunk]
        try:
            prefixes = PrefixBatch.build(run.model, [token_ids[j.rows[0]][:j.prefix_len] for j in chunk],
                                         run.settings.pad_id, batcher.device)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
            if not is_oom(err):
                raise
            batcher.shrink(len(chunk), max(lengths))
            continue
        stats.shared_prefixes += len(chunk)
        stats.prefix_batches += 1
        stats.computed_tokens += sum(lengths)
        stats.padded_tokens += len(chunk) * max(lengths)
        owner = {i: n for n, j in enumerate(chunk) for i in j.rows}
        rests = {i: list(token_ids[i][j.prefix_len:]) for j in chunk for i in j.rows}
        _generate_rows(run, list(owner), rests, prefixes, owner)
        del prefixes
        start = end
    plain = [i for j in jobs if not j.prefix_len for i in j.rows]
    if plain:
        _generate_rows(run, plain, {i: list(token_ids[i]) for i in plain})


def generate_texts(model: Any, token_ids: Sequence[list[int]], settings: GenerationSettings,
                   keys: Sequence[int] | None = None, sink: GenSink | None = None,
                   groups: Sequence[Hashable] | None = None) -> Generated:
    """Decode every prompt. ``keys`` (default: the row numbers) seed each row's sampling generator,
    so the same row samples the same text in any batch and any process. Rows with one ``groups``
    key are candidates for prefix sharing (None: none)."""
    n = len(token_ids)
    if n and min(len(t) for t in token_ids) == 0:
        raise TwinkleError("a prompt tokenized to zero tokens; check the template and tokenizer")
    if settings.max_new_tokens < 1:
        raise TwinkleError(f"--max-new-tokens must be at least 1, got {settings.max_new_tokens}")
    keys = list(range(n)) if keys is None else list(keys)
    device = model.get_input_embeddings().weight.device
    out = Generated(tokens=[[] for _ in range(n)], truncated=np.zeros(n, dtype=bool),
                    stats=ScoreStats(rows=n, tokens=sum(len(t) for t in token_ids)))
    batcher = Batcher(settings.batch_size, device, out.stats, equal_lengths=not accepts(model, "position_ids"))
    bar = tqdm(total=n, desc="generating", unit="prompt", disable=not settings.progress or n == 0, dynamic_ncols=True)
    with torch.inference_mode():
        _run_jobs(_Run(model, keys, settings, batcher, out, bar, sink), token_ids, groups)
    bar.close()
    if device.type == "cuda":
        out.stats.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    return out
