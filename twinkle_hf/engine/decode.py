"""The decode loop of generation mode: rows stream through a batch of slots (continuous batching).

Rows come longest first. A batch prefills its rows' prompts (continuing a shared prefix's cache
when the rows have one), then feeds one token per row per step. A row that writes a stop token or
reaches ``max_new_tokens`` leaves at once (its cache rows are dropped), and when enough slots are
free the next rows are prefilled and *merged into the running batch*: their caches and masks are
left-padded to a common width and stacked with the others'. Each row keeps its own position ids, so
it computes what it would alone. A decode step costs about as much for 4 rows as for 16 (reading
the weights dominates), so keeping the slots full, rather than letting a batch drain down to its
longest answer, is what makes generation fast.

Merging needs a plain KV cache (full attention in every layer) and position ids
(prefix.supports_prefix). A model without them decodes in fixed batches: a batch runs until its
last row finishes, then the next one is prefilled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..models.facts import accepts, model_config
from .batching import MAX_PADDING, Batcher, is_oom
from .forward import cache_keyword, left_pad
from .plan import Finish, Generated, GenerationSettings, Plan, Segment
from .prefix import PrefixBatch, supports_prefix

REFILL_SHARE = 2  # refill a running batch once half its slots are free (each refill is a prefill pass and a merge)


@dataclass
class _Batch:
    """The rows decoding together, row-aligned: caller's row ids, KV cache, attention mask
    [rows, width] (left-padded), the position of each row's last token, next-token logits."""

    rows: list[int]
    cache: Any
    mask: torch.Tensor
    last: torch.Tensor
    logits: torch.Tensor
    generators: list[torch.Generator]

    def keep(self, index: list[int]) -> None:
        """Keep only the batch rows at ``index`` (finished rows leave)."""
        at = torch.tensor(index, dtype=torch.long, device=self.mask.device)
        self.cache.batch_select_indices(at)
        self.rows = [self.rows[j] for j in index]
        self.mask, self.last, self.logits = self.mask[at], self.last[at], self.logits[at]
        self.generators = [self.generators[j] for j in index]


def _left(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """``t`` zero-padded on the left along ``dim`` to ``width``."""
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)


def merge(a: _Batch, b: _Batch, config: Any) -> _Batch:
    """One batch of ``a``'s rows then ``b``'s: columns no row of ``a`` attends to any more are
    dropped, then both are left-padded (masked) to one width and stacked."""
    from transformers import DynamicCache

    lead = int(a.mask.any(dim=0).to(torch.int8).argmax())  # leading columns masked in every row of a
    a_mask = a.mask[:, lead:]
    width = max(a_mask.shape[1], b.mask.shape[1])
    layers = []
    for la, lb in zip(a.cache.layers, b.cache.layers):
        layers.append(tuple(torch.cat([_left(x[:, :, lead:], width, 2), _left(y, width, 2)], dim=0)
                            for x, y in ((la.keys, lb.keys), (la.values, lb.values))))
    return _Batch(rows=a.rows + b.rows, cache=DynamicCache(ddp_cache_data=layers, config=config),
                  mask=torch.cat([_left(a_mask, width, 1), _left(b.mask, width, 1)]),
                  last=torch.cat([a.last, b.last]), logits=torch.cat([a.logits, b.logits]),
                  generators=a.generators + b.generators)


def next_tokens(logits: torch.Tensor, settings: GenerationSettings, generators: list[torch.Generator]) -> list[int]:
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


def _similar_rests(segment: Segment, start: int, count: int) -> list[list[int]]:
    """The segment's rows ``start .. start+count`` (prompt rests longest first) cut into prefill
    passes that pad at most MAX_PADDING of their tokens."""
    parts: list[list[int]] = []
    total = 0
    for i in segment.rows[start:start + count]:
        n = len(segment.rests[i])
        if parts and total + n < (1 - MAX_PADDING) * len(segment.rests[parts[-1][0]]) * (len(parts[-1]) + 1):
            parts.append([])
            total = 0
        if not parts:
            parts.append([])
        parts[-1].append(i)
        total += n
    return parts


class Decoder:
    """Decodes the rows of one :func:`generate.generate_texts` call: the model, the settings,
    per-row sampling keys, the batcher (shared, so an out-of-memory halving sticks), and where
    finished rows go."""

    def __init__(self, model: Any, settings: GenerationSettings, keys: list[int], batcher: Batcher,
                 out: Generated, finish: Finish) -> None:
        self.model, self.settings, self.keys, self.batcher, self.out, self.finish = (
            model, settings, keys, batcher, out, finish)
        self.continuous = supports_prefix(model)
        self.keyword = cache_keyword(model)
        self.calls: dict[str, Any] = {"use_cache": True}
        if accepts(model, "logits_to_keep"):
            self.calls["logits_to_keep"] = 1
        self.positions = accepts(model, "position_ids")
        self.live = 0  # rows in the forward pass under way (what an out-of-memory shrinks from)

    def run(self, plan: Plan) -> None:
        """Decode every row ``plan`` lays out; an out-of-memory shrinks the batcher, and the rows not
        finished yet are planned and started again (finished ones are kept)."""
        done: set[int] = set()
        while True:
            segments = plan(done)
            try:
                self._decode(segments, done)
                return
            except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                if not is_oom(err):
                    raise
                self.batcher.after_oom(err, max(1, self.live), max(s.longest_from[0] for s in segments))

    def _prefixes(self, segment: Segment) -> PrefixBatch | None:
        """The segment's shared prefixes, prefilled (None: it has none); see PrefixBatch.build."""
        if not segment.prefixes:
            return None
        self.live = len(segment.prefixes)
        built = PrefixBatch.build(self.model, segment.prefixes, self.settings.pad_id, self.batcher.device,
                                  share_common=True)
        stats = self.out.stats
        stats.shared_prefixes += len(segment.prefixes)
        stats.prefix_batches += 1
        stats.computed_tokens += built.computed
        stats.padded_tokens += built.padded
        return built

    def _prefill(self, segment: Segment, prefixes: PrefixBatch | None, batch: list[int]) -> _Batch:
        """Run the prompts (the rest after each row's shared prefix) of ``batch``."""
        from transformers import DynamicCache

        self.live = len(batch)
        cached = prefixes.arguments([segment.owner[i] for i in batch]) if prefixes else None
        ids, mask = left_pad([segment.rests[i] for i in batch], self.settings.pad_id)
        before = cached[1].shape[1] if cached else 0
        if cached:
            mask = torch.cat([cached[1], mask], dim=1)
        device = self.batcher.device
        ids, mask = ids.to(device), mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, before:]  # each row from its own prefix length
        cache = cached[0][self.keyword] if cached else DynamicCache(config=model_config(self.model))
        out = self.model(input_ids=ids, attention_mask=mask, **({"position_ids": positions} if self.positions else {}),
                         **{self.keyword: cache}, **self.calls)
        stats = self.out.stats
        stats.batches += 1
        stats.padded_tokens += ids.numel()
        stats.computed_tokens += sum(len(segment.rests[i]) for i in batch)
        seed = self.settings.seed * 1_000_003
        return _Batch(rows=list(batch), cache=cache, mask=mask, last=positions[:, -1], logits=out.logits[:, -1, :],
                      generators=[torch.Generator().manual_seed((seed + self.keys[i]) % (1 << 63)) for i in batch])

    def _admit(self, segment: Segment, start: int, running: _Batch | None, longest: int) -> int:
        """How many of the segment's rows from ``start`` join now (0: none); ``longest``: the most
        tokens a running row may come to hold."""
        left = len(segment.rows) - start
        if running is None:  # a fresh batch: as the batcher plans it (padding cap, equal lengths)
            return self.batcher.plan(segment.lengths, start) if not self.continuous else (
                min(self.batcher.capacity(segment.longest_from[start]), left))
        if not self.continuous:
            return 0
        capacity = self.batcher.capacity(max(longest, segment.longest_from[start]))
        free = capacity - len(running.rows)
        return min(free, left) if free >= max(1, capacity // REFILL_SHARE) or 0 < left <= free else 0

    def _decode(self, segments: list[Segment], done: set[int]) -> None:
        """The loop: refill free slots, pick each row's next token, let finished rows leave, step."""
        settings, stop = self.settings, set(self.settings.stop_ids)
        new: dict[int, list[int]] = {}
        size: dict[int, int] = {}
        running: _Batch | None = None
        prefixes: PrefixBatch | None = None
        s = start = 0
        while s < len(segments) or running is not None:
            segment = segments[s] if s < len(segments) else None
            longest = max((size[i] for i in running.rows), default=0) if running is not None else 0
            count = self._admit(segment, start, running, longest) if segment is not None else 0
            if segment is not None and count:
                if start == 0:
                    prefixes = self._prefixes(segment)
                joining: _Batch | None = None
                for part in _similar_rests(segment, start, count):  # prefill passes that barely pad
                    done_part = self._prefill(segment, prefixes, part)
                    joining = done_part if joining is None else merge(joining, done_part, model_config(self.model))
                assert joining is not None
                new.update({i: [] for i in joining.rows})
                size.update(zip(joining.rows, segment.lengths[start:start + count]))
                running = joining if running is None else merge(running, joining, model_config(self.model))
                start += count
                if start == len(segment.rows):  # every row of the segment joined: its prefixes can go
                    s, start, prefixes = s + 1, 0, None
            assert running is not None
            self.live = len(running.rows)
            self.out.stats.final_batch_rows = max(self.out.stats.final_batch_rows, self.live)
            chosen = next_tokens(running.logits, settings, running.generators)
            keep, ended, cut = [], [], []
            for j, (i, token) in enumerate(zip(running.rows, chosen)):
                if token not in stop:
                    new[i].append(token)
                if token in stop or len(new[i]) >= settings.max_new_tokens:
                    ended.append(i)
                    cut.append(token not in stop)
                else:
                    keep.append(j)
            if ended:
                self.finish(ended, [new[i] for i in ended], cut)
                self.out.stats.generated_tokens += sum(len(new[i]) for i in ended)
                done.update(ended)
            if not keep:
                running = None
                continue
            if len(keep) < len(running.rows):
                running.keep(keep)
            self._step(running, [new[i][-1] for i in running.rows])

    def _step(self, b: _Batch, tokens: list[int]) -> None:
        """Feed each row its chosen token."""
        device = b.mask.device
        b.mask = torch.cat([b.mask, torch.ones((len(tokens), 1), dtype=b.mask.dtype, device=device)], dim=1)
        b.last = b.last + 1
        step = torch.tensor([[t] for t in tokens], dtype=torch.long, device=device)
        out = self.model(input_ids=step, attention_mask=b.mask,
                         **({"position_ids": b.last[:, None]} if self.positions else {}),
                         **{self.keyword: b.cache}, **self.calls)
        b.logits = out.logits[:, -1, :]
        self.out.stats.padded_tokens += len(tokens)
