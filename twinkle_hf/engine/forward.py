"""What a forward pass needs from the model: the KV cache's keyword, the memory a token takes,
and prompts left-padded into one tensor. The model is read through its wrappers (models/facts.py)."""

from __future__ import annotations

from typing import Any

import torch

from ..models.facts import accepts, unwrap


def kv_bytes_per_token(model: Any, tensor_parallel: int = 1) -> int | None:
    """Bytes the KV cache holds per token on this process; None where the config does not say.

    Keys and values of every layer, in the model's dtype. Under ``tensor_parallel`` N each process
    holds 1/N of the key/value heads. Where it is None, nothing is sized by it."""
    config = getattr(unwrap(model), "config", None)
    config = getattr(config, "text_config", None) or config  # a multimodal model's language part
    layers, heads = getattr(config, "num_hidden_layers", None), getattr(config, "num_attention_heads", None)
    hidden = getattr(config, "hidden_size", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or (hidden // heads if hidden and heads else None)
    if not (isinstance(layers, int) and isinstance(kv_heads, int) and isinstance(head_dim, int)):
        return None
    dtype = getattr(unwrap(model), "dtype", torch.float32)
    local_heads = -(-kv_heads // max(1, tensor_parallel))
    return layers * 2 * local_heads * head_dim * (dtype.itemsize if isinstance(dtype, torch.dtype) else 4)


def activation_bytes_per_token(model: Any) -> int | None:
    """A pass's transient memory per token it runs, roughly (a layer's hidden states, attention
    projections and MLP activations, in the model's dtype); None where the config does not say."""
    config = getattr(unwrap(model), "config", None)
    config = getattr(config, "text_config", None) or config
    hidden, inner = getattr(config, "hidden_size", None), getattr(config, "intermediate_size", None)
    if not isinstance(hidden, int):
        return None
    dtype = getattr(unwrap(model), "dtype", torch.float32)
    size = dtype.itemsize if isinstance(dtype, torch.dtype) else 4
    return size * (8 * hidden + 3 * (inner if isinstance(inner, int) else 4 * hidden))


def cache_keyword(model: Any) -> str:
    """The keyword the model's forward takes a KV cache by: ``cache`` (transformers >= 5.2x) or
    ``past_key_values``."""
    return "cache" if accepts(model, "cache") else "past_key_values"


def left_pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows right-aligned in one [rows, longest] tensor, and the mask of their real tokens."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
        mask[i, width - len(r):] = 1
    return ids, mask
