"""Generation mode's forward passes: batched decoding of tokenized prompts, rows leaving the batch
as they finish.

Rows are sorted by length (longest first) and left-padded with explicit position ids, like the
scorer's, and sized by the same :class:`~twinkle_hf.batching.Batcher` (a padded-token budget that
counts every token a row may generate; out-of-memory halves it and retries). Each batch prefills its
prompts once, then feeds one token per live row per step; a row that emits a stop token or reaches
``max_new_tokens`` leaves the batch (its keys/values are dropped from the cache), so long answers do
not hold short ones. Greedy by default; with a temperature, each row samples from its own generator
seeded by (seed, row key), so a row's text does not depend on the batch it ran in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .batching import Batcher, is_oom
from .errors import TwinkleError
from .forward import accepts, cache_keyword, left_pad, model_config
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


def _decode_batch(model: Any, rows: list[list[int]], keys: list[int], settings: GenerationSettings,
                  device: torch.device) -> tuple[list[list[int]], list[bool], int]:
    """Decode one batch: (new tokens per row, truncated per row, tokens run through the model)."""
    from transformers import DynamicCache

    ids, mask = left_pad(rows, settings.pad_id)
    ids, mask = ids.to(device), mask.to(device)
    width = ids.shape[1]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model_config(model))
    common: dict[str, Any] = {cache_keyword(model): cache, "use_cache": True}  # every call of the batch
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
    run = len(rows) * width
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


def generate_texts(model: Any, token_ids: Sequence[list[int]], settings: GenerationSettings,
                   keys: Sequence[int] | None = None, sink: GenSink | None = None) -> Generated:
    """Decode every prompt. ``keys`` (default: the row numbers) seed each row's sampling generator,
    so the same row samples the same text in any batch and any process."""
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
    order = sorted(range(n), key=lambda i: -len(token_ids[i]))
    lengths = [len(token_ids[i]) + settings.max_new_tokens for i in order]  # what a row may come to hold
    bar = tqdm(total=n, desc="generating", unit="prompt", disable=not settings.progress or n == 0, dynamic_ncols=True)
    start = 0
    with torch.inference_mode():
        while start < n:
            count = batcher.plan(lengths, start)
            batch = order[start:start + count]
            try:
                new, truncated, run = _decode_batch(model, [list(token_ids[i]) for i in batch],
                                                    [keys[i] for i in batch], settings, device)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                if not is_oom(err):
                    raise
                batcher.shrink(count, lengths[start])
                continue
            for i, tokens, cut in zip(batch, new, truncated):
                out.tokens[i], out.truncated[i] = tokens, cut
            if sink is not None:
                sink(batch, new, truncated)
            out.stats.batches += 1
            out.stats.computed_tokens += sum(len(token_ids[i]) + len(t) for i, t in zip(batch, new))
            out.stats.padded_tokens += run
            out.stats.final_batch_rows = max(out.stats.final_batch_rows, count)
            start += count
            bar.update(count)
    bar.close()
    return out
