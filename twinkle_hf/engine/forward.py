"""What a model's ``forward`` accepts, seen through the wrappers people evaluate.

The scorer passes ``position_ids`` (so a left-padded row computes what it would alone),
``logits_to_keep=1`` (last-position logits only) and a KV cache (shared prefixes) when the model
takes them. Wrappers hide that: a PEFT model's forward is ``forward(*args, **kwargs)``, and so are
DDP's and torch.compile's. Probing the wrapper would say "no" and silently drop the keywords,
which moves the probabilities of absolute-position models (GPT-2, OPT) by up to 0.1. So the
probe looks at the innermost model, and the call still goes through the wrapper (LoRA applies).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

_WRAPPER_NAMES = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DeepSpeedEngine")


def unwrap(model: Any) -> Any:
    """The model inside PEFT (``get_base_model``), torch.compile (``_orig_mod``) and DDP/FSDP
    (``module``) wrappers, however deeply nested; the model itself when it is not wrapped."""
    seen: set[int] = set()
    while id(model) not in seen:
        seen.add(id(model))
        if callable(getattr(model, "get_base_model", None)):
            inner = model.get_base_model()
        elif getattr(model, "_orig_mod", None) is not None:
            inner = model._orig_mod
        elif type(model).__name__ in _WRAPPER_NAMES and getattr(model, "module", None) is not None:
            inner = model.module
        else:
            break
        model = inner
    return model


@functools.lru_cache(maxsize=64)
def _parameters(forward: Any) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        return frozenset()


def accepts(model: Any, name: str) -> bool:
    """Whether the (unwrapped) model's ``forward`` takes the keyword ``name``."""
    forward = getattr(type(unwrap(model)), "forward", None)
    return forward is not None and name in _parameters(forward)


_DATA_PARALLEL = ("DistributedDataParallel", "DataParallel", "DeepSpeedEngine")


def data_parallel_inner(model: Any) -> Any:
    """The model inside a data-parallel wrapper (DDP, DataParallel, accelerate's ``prepare``,
    DeepSpeed's engine, and torch.compile around one of them).

    Evaluation runs that model, never the wrapper's forward: DDP's broadcasts its buffers on the
    first pass after a training step, so a process without rows would leave the others waiting.
    FSDP's wrappers are kept: their forward gathers."""
    while True:
        inner = getattr(model, "_orig_mod", None)
        if inner is not None and type(inner).__name__ in _DATA_PARALLEL:
            model = inner
        elif type(model).__name__ in _DATA_PARALLEL and getattr(model, "module", None) is not None:
            model = model.module
        else:
            return model


def model_config(model: Any) -> Any:
    """The transformers config of the (unwrapped) model."""
    return unwrap(model).config


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
