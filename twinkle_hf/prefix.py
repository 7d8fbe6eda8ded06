"""Shared-prefix reuse: run a prefix common to many rows once and continue every row from its
KV cache, expanded along the batch (a view, not a copy).

Which rows share what is found in token space (the longest common token prefix of a group), so the
continuation computes exactly what the full prompt would; groups come from the caller (rows with
one few-shot block, or one question's orders).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Hashable, Sequence

import numpy as np
import torch

MIN_PREFIX = 16  # shorter common prefixes are not worth a separate forward pass


def accepts(model: Any, name: str) -> bool:
    """Whether ``model.forward`` takes the keyword ``name``."""
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


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

        cache = DynamicCache(config=model.config)
    except (ImportError, TypeError, ValueError):
        return False
    layers = getattr(cache, "layers", None)
    plain = layers is not None and all(type(layer).__name__ == "DynamicLayer" for layer in layers)
    return plain and accepts(model, "position_ids") and (accepts(model, "cache") or accepts(model, "past_key_values"))


def plan_jobs(model: Any, token_ids: Sequence[Sequence[int]], groups: Sequence[Hashable] | None) -> list[Job]:
    """Shared-prefix jobs for groups whose rows share >= MIN_PREFIX tokens; one plain job for the rest."""
    everything = list(range(len(token_ids)))
    if groups is None or not supports_prefix(model):
        return [Job(0, everything)] if everything else []
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    jobs, plain = [], []
    for rows in members.values():
        length = common_prefix([token_ids[i] for i in rows]) if len(rows) > 1 else 0
        if length >= MIN_PREFIX:
            jobs.append(Job(length, rows))
        else:
            plain.extend(rows)
    return jobs + ([Job(0, sorted(plain))] if plain else [])


@dataclass(frozen=True)
class PrefixCache:
    """The keys/values of one prefix, per layer, with batch size 1."""

    length: int
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]
    config: Any
    keyword: str  # "cache" (transformers >= 5.2x) or "past_key_values"

    @classmethod
    def build(cls, model: Any, prefix: Sequence[int], device: torch.device) -> "PrefixCache":
        from transformers import DynamicCache

        keyword = "cache" if accepts(model, "cache") else "past_key_values"
        ids = torch.tensor([list(prefix)], dtype=torch.long, device=device)
        kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": True, keyword: DynamicCache(config=model.config)}
        if accepts(model, "logits_to_keep"):
            kwargs["logits_to_keep"] = 1
        out = model(**kwargs)
        cache = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
        layers = tuple((layer.keys, layer.values) for layer in cache.layers)
        return cls(len(prefix), layers, model.config, keyword)

    def arguments(self, batch: int) -> dict[str, Any]:
        """Model kwargs that continue ``batch`` rows from this prefix (a fresh cache per call)."""
        from transformers import DynamicCache

        expanded = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in self.layers]
        return {self.keyword: DynamicCache(ddp_cache_data=expanded, config=self.config), "use_cache": True}
