"""Shared-prefix reuse: run a prefix common to many rows once and continue every row from its
KV cache, expanded along the batch (a view when a batch continues one prefix). Prefixes of similar
length are run together in one batch; letter scoring keeps them in one PrefixStore (packed, no
padding), and a batch of continuations may draw on any of them (generation: PrefixBatch).

Which rows share what is found in token space (the longest common token prefix of a group), so the
continuation computes exactly what the full prompt would; groups come from the caller (rows with
one few-shot block, or one question's orders).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..models.facts import accepts, model_config
from ..runtime.rows import group_rows
from .batching import MAX_PADDING, StoreTooLarge, is_oom
from .forward import cache_keyword

MIN_PREFIX = 16  # shorter common prefixes are not worth a separate forward pass


@dataclass(frozen=True)
class Job:
    """Rows scored together: from a shared prefix of ``prefix_len`` tokens, or (0) in full."""

    prefix_len: int
    rows: list[int]


def common_prefix(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix shared by all ``rows``, leaving each at least one token."""
    first = np.asarray(rows[0])
    length = min(len(r) for r in rows) - 1
    for r in rows[1:]:
        a, b = first[:length], np.asarray(r[:length])
        diff = np.flatnonzero(a != b)
        length = int(diff[0]) if len(diff) else length
        if length < MIN_PREFIX:
            break
    return max(length, 0)


def supports_prefix(model: Any) -> bool:
    """Prefix reuse needs a plain DynamicCache (full attention in every layer) and the kwargs."""
    try:
        from transformers import DynamicCache

        cache = DynamicCache(config=model_config(model))
    except (ImportError, TypeError, ValueError, AttributeError):  # AttributeError: a wrapper without a config
        return False
    layers = getattr(cache, "layers", None)
    plain = layers is not None and all(type(layer).__name__ == "DynamicLayer" for layer in layers)
    return plain and accepts(model, "position_ids") and (accepts(model, "cache") or accepts(model, "past_key_values"))


def plan_jobs(model: Any, token_ids: Sequence[Sequence[int]], groups: Sequence[Hashable] | None,
              tails: Sequence[int] | None = None) -> list[Job]:
    """Shared-prefix jobs for groups whose rows share >= MIN_PREFIX tokens; one plain job for the rest."""
    return group_jobs(token_ids, groups if groups is not None and supports_prefix(model) else None, tails)


def group_jobs(token_ids: Sequence[Sequence[int]], groups: Sequence[Hashable] | None,
               tails: Sequence[int] | None = None) -> list[Job]:
    """:func:`plan_jobs` for a model that can share prefixes (``groups`` None: no sharing). ``tails``:
    per row, how many of its last tokens must be run after the prefix (their logits are read: a
    continuation's positions); else one."""
    everything = list(range(len(token_ids)))
    if groups is None:
        return [Job(0, everything)] if everything else []
    jobs, plain = [], []
    for rows in group_rows(groups).values():
        length = common_prefix([token_ids[i] for i in rows]) if len(rows) > 1 else 0
        if tails is not None:
            length = min([length] + [len(token_ids[i]) - tails[i] for i in rows])
        if length >= MIN_PREFIX:
            jobs.append(Job(length, rows))
        else:
            plain.extend(rows)
    return jobs + ([Job(0, sorted(plain))] if plain else [])


def continuation_order(rows: Sequence[int], rests: dict[int, list[int]], held: dict[int, int]) -> tuple[
        list[int], list[int], list[int]]:
    """``rows`` by the length of what is run (the rest of each prompt) longest first, then by the
    cached prefix each one continues (``held``); and both lengths in that order."""
    order = sorted(rows, key=lambda i: (-len(rests[i]), -held.get(i, 0)))
    return order, [len(rests[i]) for i in order], [held.get(i, 0) for i in order]


def filled_cache(layers: Sequence[tuple[torch.Tensor, torch.Tensor]], config: Any) -> Any:
    """A DynamicCache holding ``layers`` as they are. ``DynamicCache(ddp_cache_data=...)`` would
    copy each one (its ``update`` concatenates onto an empty tensor), and the forward's own update
    copies again: an expanded prefix view would be materialised twice, a gathered one three times."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    plain: list[Any] = list(cache.layers)  # DynamicLayer each (supports_prefix)
    for layer, (keys, values) in zip(plain, layers):
        layer.keys, layer.values, layer.device, layer.is_initialized = keys, values, keys.device, True
    return cache


def _right(t: torch.Tensor, width: int) -> torch.Tensor:
    """[batch, heads, length, dim] zero-padded on the right of its length to ``width``."""
    return torch.nn.functional.pad(t, (0, 0, 0, width - t.shape[2])) if t.shape[2] < width else t


@dataclass(frozen=True)
class PrefixBatch:
    """The keys/values of several prefixes, computed in one right-padded forward pass: per layer
    [prefixes, heads, longest, head_dim], with each prefix's real length."""

    lengths: tuple[int, ...]
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]
    config: Any
    keyword: str  # "cache" (transformers >= 5.2x) or "past_key_values"

    computed: int = 0  # real tokens the build ran (a part all prefixes share counts once)
    padded: int = 0  # tokens the build ran, padding included

    @classmethod
    def build(cls, model: Any, prefixes: Sequence[Sequence[int]], pad_id: int, device: torch.device,
              share_common: bool = False) -> PrefixBatch:
        """Run ``prefixes`` together. Right padding keeps every real position where it would be
        alone (positions 0..n-1) and gives no row an all-masked query; padded keys stay masked.

        With ``share_common`` (generation's segments, whose prefixes differ in length), a start all
        of them share (>= MIN_PREFIX tokens: a chat header, a system prompt) runs once, and the
        rest run in passes of similar lengths (padding <= MAX_PADDING), stacked after."""
        if not share_common or len(prefixes) < 2:
            return cls._run(model, prefixes, pad_id, device)
        common = common_prefix(prefixes)
        base = cls._run(model, [prefixes[0][:common]], pad_id, device) if common >= MIN_PREFIX else None
        start = common if base is not None else 0
        order = sorted(range(len(prefixes)), key=lambda i: -len(prefixes[i]))
        runs: list[list[int]] = []
        for i in order:  # a new pass where this prefix would pad the pass's longest by too much
            if not runs or len(prefixes[i]) - start < (1 - MAX_PADDING) * (len(prefixes[runs[-1][0]]) - start):
                runs.append([])
            runs[-1].append(i)
        parts = [cls._run(model, [prefixes[i] for i in run], pad_id, device, base, start) for run in runs]
        return cls._stack(parts, [i for run in runs for i in run], base)

    @classmethod
    def _run(cls, model: Any, prefixes: Sequence[Sequence[int]], pad_id: int, device: torch.device,
             base: PrefixBatch | None = None, start: int = 0) -> PrefixBatch:
        """One right-padded forward pass over ``prefixes`` (continuing ``base``'s one prefix, the
        first ``start`` tokens of each, when given)."""
        from transformers import DynamicCache

        keyword = cache_keyword(model)
        rests = [list(p[start:]) for p in prefixes]
        ids = torch.full((len(prefixes), max(len(r) for r in rests)), pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rests):
            ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, :len(r)] = 1
        kwargs: dict[str, Any] = {"input_ids": ids.to(device), "use_cache": True,
                                  "position_ids": start + torch.arange(ids.shape[1], device=device).expand_as(ids)}
        if base is not None:  # continue the shared start, a view along the batch
            cached, before = base.arguments([0] * len(prefixes))
            kwargs.update(cached)
            mask = torch.cat([before, mask], dim=1)
        else:
            kwargs[keyword] = DynamicCache(config=model_config(model))
        kwargs["attention_mask"] = None if bool(mask.all()) else mask.to(device)  # no padding: no mask
        if accepts(model, "logits_to_keep"):
            kwargs["logits_to_keep"] = 1
        out = model(**kwargs)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)  # the old name warns
        assert cache is not None, "the model returned no cache although use_cache=True"
        layers = tuple((layer.keys, layer.values) for layer in cache.layers)
        return cls(tuple(len(p) for p in prefixes), layers, model_config(model), keyword,
                   sum(len(r) for r in rests), ids.numel())

    @classmethod
    def _stack(cls, parts: Sequence[PrefixBatch], rows: Sequence[int], base: PrefixBatch | None) -> PrefixBatch:
        """One PrefixBatch from passes over the prefixes at ``rows`` (in that order), back in the
        original order: each right-padded to the longest, stacked along the batch."""
        width = max(max(p.lengths) for p in parts)
        where = [0] * len(rows)
        for position, i in enumerate(rows):
            where[i] = position
        layers = []
        for pieces in zip(*(p.layers for p in parts)):
            stacked = []
            for n in (0, 1):  # keys, values
                x = torch.cat([_right(piece[n], width) for piece in pieces], dim=0)
                stacked.append(x.index_select(0, torch.tensor(where, dtype=torch.long, device=x.device)))
            layers.append((stacked[0], stacked[1]))
        lengths = [length for p in parts for length in p.lengths]
        first = parts[0]
        extra = (base.computed, base.padded) if base is not None else (0, 0)
        return cls(tuple(lengths[w] for w in where), tuple(layers), first.config, first.keyword,
                   sum(p.computed for p in parts) + extra[0], sum(p.padded for p in parts) + extra[1])

    def arguments(self, owners: Sequence[int]) -> tuple[dict[str, Any], torch.Tensor]:
        """Model kwargs that continue one row from each of ``owners`` (indices of prefixes; a fresh
        cache per call), and the attention mask of the cached part: [rows, longest owner]."""
        width = max(self.lengths[o] for o in owners)
        if len(set(owners)) == 1:  # one prefix: a view along the batch, no copy
            o = owners[0]
            cached = [(k[o:o + 1, :, :width].expand(len(owners), -1, -1, -1),
                       v[o:o + 1, :, :width].expand(len(owners), -1, -1, -1)) for k, v in self.layers]
        else:
            # Under a device_map the layers live on several devices: one index per device.
            host = torch.tensor(list(owners), dtype=torch.long)
            index: dict[torch.device, torch.Tensor] = {}
            cached = []
            for k, v in self.layers:
                at = index.setdefault(k.device, host.to(k.device))
                cached.append((k[:, :, :width].index_select(0, at), v[:, :, :width].index_select(0, at)))
        lengths = torch.tensor([self.lengths[o] for o in owners], dtype=torch.long)
        mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
        return {self.keyword: filled_cache(cached, self.config), "use_cache": True}, mask


class PrefixStore:
    """The keys/values of many prefixes, packed without padding along one sequence per layer
    ([heads, total, head_dim]), filled pass by pass (:meth:`add`). A batch of continuations may
    draw on any of them: :meth:`arguments` gathers each row's prefix (a view when the batch
    continues one prefix)."""

    def __init__(self, lengths: Sequence[int], config: Any, keyword: str):
        self.lengths = tuple(lengths)
        self.offsets = tuple(int(x) for x in np.cumsum([0, *self.lengths[:-1]]))
        self.config, self.keyword = config, keyword
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []

    def _allocate(self, part: PrefixBatch) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The store's tensors, once, where each layer of ``part`` lives (a device_map spreads them)."""
        total = sum(self.lengths)
        return [(k.new_empty(k.shape[1], total, k.shape[3]), v.new_empty(v.shape[1], total, v.shape[3]))
                for k, v in part.layers]

    def add(self, first: int, part: PrefixBatch) -> None:
        """Keep the real positions of ``part``'s prefixes, which are prefixes ``first``, ``first + 1``, ..."""
        if not self.layers:
            try:
                self.layers = self._allocate(part)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                if not is_oom(err):
                    raise
                raise StoreTooLarge(f"out of memory allocating a store of {sum(self.lengths)} prefix tokens") from err
        start = self.offsets[first]
        end = start + sum(part.lengths)  # the part's prefixes lie side by side in the store
        lengths = torch.tensor(part.lengths, dtype=torch.long)
        real: dict[torch.device, torch.Tensor] = {}
        for (keys, values), (k, v) in zip(self.layers, part.layers):
            if k.device not in real:  # [prefixes, width]: the positions each prefix really has
                real[k.device] = (torch.arange(k.shape[2]).unsqueeze(0) < lengths.unsqueeze(1)).to(k.device)
            keys[:, start:end] = k.transpose(0, 1)[:, real[k.device]]
            values[:, start:end] = v.transpose(0, 1)[:, real[k.device]]

    def arguments(self, owners: Sequence[int]) -> tuple[dict[str, Any], torch.Tensor]:
        """Model kwargs that continue one row from each of ``owners`` (a fresh cache per call), and
        the attention mask of the cached part: [rows, longest owner], each prefix on the left."""
        rows, width = len(owners), max(self.lengths[o] for o in owners)
        lengths = torch.tensor([self.lengths[o] for o in owners], dtype=torch.long)
        mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
        if len(set(owners)) == 1:  # one prefix: a view along the batch, no copy
            at = self.offsets[owners[0]]
            cached = [(k[:, at:at + width].unsqueeze(0).expand(rows, -1, -1, -1),
                       v[:, at:at + width].unsqueeze(0).expand(rows, -1, -1, -1)) for k, v in self.layers]
            return {self.keyword: filled_cache(cached, self.config), "use_cache": True}, mask
        # Each row's positions in the store; past its own length it repeats its last one (masked).
        starts = torch.tensor([self.offsets[o] for o in owners], dtype=torch.long)
        where = (starts.unsqueeze(1) + torch.minimum(torch.arange(width).unsqueeze(0), lengths.unsqueeze(1) - 1))
        index: dict[torch.device, torch.Tensor] = {}
        cached = []
        for k, v in self.layers:  # under a device_map, one index per device
            flat = index.setdefault(k.device, where.flatten().to(k.device))
            k, v = (x.index_select(1, flat).view(x.shape[0], rows, width, x.shape[2]).transpose(0, 1) for x in (k, v))
            cached.append((k, v))
        return {self.keyword: filled_cache(cached, self.config), "use_cache": True}, mask
