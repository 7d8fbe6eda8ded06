"""Generation mode's forward passes: tokenized prompts decoded in batches whose rows come and go.

Rows are laid out longest first, in segments (decode.py): the rows of a segment share long token
prefixes (a question's orders and samples, a few-shot block; see prefix.py), which are prefilled
once when the segment starts. Batches are sized by the same :class:`~twinkle_hf.engine.batching.Batcher`
as the scorer's (a padded-token budget that counts every token a row may generate; out-of-memory
halves it and the unfinished rows start again). A row leaves its batch as soon as it writes a stop
token or reaches ``max_new_tokens``, and waiting rows take the free slots. Greedy by default; with
a temperature, each row samples from its own generator seeded by (seed, row key), so a row's text
does not depend on the batch it ran in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from ..errors import TwinkleError
from ..models.facts import accepts, input_device
from ..runtime.placement import grad_off
from .batching import Batcher
from .decode import Decoder
from .forward import activation_bytes_per_token
from .plan import Finish, Generated, GenerationSettings, Plan, Segment
from .prefix import plan_jobs
from .stats import ScoreStats

GenSink = Finish  # rows, their new tokens, truncated


def stop_token_ids(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """The tokenizer's end-of-sequence id and the model's generation_config eos ids (a chat model's
    end-of-turn token is usually only there)."""
    ids: list[int] = []
    config = getattr(model, "generation_config", None)
    for value in (getattr(config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        ids.extend(value if isinstance(value, (list, tuple)) else [] if value is None else [value])
    return tuple(dict.fromkeys(int(i) for i in ids))


SEGMENT_BATCHES = 4  # rows of a prefix segment: this many full batches (memory: its prefixes' keys/values)


def _planner(model: Any, token_ids: Sequence[list[int]], groups: Sequence[Hashable] | None,
             settings: GenerationSettings, batcher: Batcher) -> Plan:
    """Lay out rows not finished yet as decode segments: shared-prefix jobs (longest first) in
    segments of about SEGMENT_BATCHES batches of rows, each job whole; then the rows without one."""
    new = settings.max_new_tokens
    longest_first = lambda rows: sorted(rows, key=lambda i: (-len(token_ids[i]), i))

    def plan(done: set[int]) -> list[Segment]:
        rows = [i for i in range(len(token_ids)) if i not in done]
        jobs = plan_jobs(model, [token_ids[i] for i in rows], None if groups is None else [groups[i] for i in rows])
        jobs = [dataclasses.replace(j, rows=[rows[r] for r in j.rows]) for j in jobs]
        longest = {id(j): max(len(token_ids[i]) for i in j.rows) for j in jobs}
        shared = sorted((j for j in jobs if j.prefix_len), key=lambda j: -longest[id(j)])
        segments, start = [], 0
        while start < len(shared):
            room = SEGMENT_BATCHES * batcher.capacity(longest[id(shared[start])] + new)
            end, held = start + 1, len(shared[start].rows)
            while end < len(shared) and held + len(shared[end].rows) <= room:
                held += len(shared[end].rows)
                end += 1
            chunk = shared[start:end]
            owner = {i: n for n, j in enumerate(chunk) for i in j.rows}
            rests = {i: list(token_ids[i][j.prefix_len:]) for j in chunk for i in j.rows}
            prefixes = [list(token_ids[j.rows[0]][:j.prefix_len]) for j in chunk]
            order = sorted(owner, key=lambda i: (-len(rests[i]), i))  # what a joining batch pads is the rests
            segments.append(Segment(order, [len(token_ids[i]) + new for i in order], rests, prefixes, owner))
            start = end
        plain = longest_first([i for j in jobs if not j.prefix_len for i in j.rows])
        if plain:
            segments.append(Segment(plain, [len(token_ids[i]) + new for i in plain],
                                    {i: list(token_ids[i]) for i in plain}))
        return segments

    return plan


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
    device = input_device(model)
    out = Generated(tokens=[[] for _ in range(n)], truncated=np.zeros(n, dtype=bool),
                    stats=ScoreStats(rows=n, tokens=sum(len(t) for t in token_ids)))
    batcher = Batcher(settings.batch_size, device, out.stats, equal_lengths=not accepts(model, "position_ids"),
                      lockstep=settings.lockstep, token_bytes=activation_bytes_per_token(model))
    bar = tqdm(total=n, desc="generating", unit="prompt", disable=not settings.progress or n == 0, dynamic_ncols=True)

    def finish(rows: list[int], tokens: list[list[int]], cut: list[bool]) -> None:
        for i, t, c in zip(rows, tokens, cut):
            out.tokens[i], out.truncated[i] = t, c
        if sink is not None:
            sink(rows, tokens, cut)
        bar.update(len(rows))

    with grad_off(model):
        Decoder(model, settings, keys, batcher, out, finish).run(_planner(model, token_ids, groups, settings, batcher))
    bar.close()
    if device.type == "cuda":
        out.stats.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    return out
