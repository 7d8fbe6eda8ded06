"""What the engine reads of a model, seen through the wrappers people evaluate.

The scorer passes ``position_ids``, ``logits_to_keep=1`` and a KV cache where the model takes them.
Wrappers hide that: a PEFT model's forward is ``forward(*args, **kwargs)``, and so are DDP's and
torch.compile's. Probing the wrapper would say "no" and silently drop the keywords, which moves
the probabilities of absolute-position models (GPT-2, OPT). So the probe looks at the innermost
model, and the call still goes through the wrapper (LoRA applies).
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel

    Model = PreTrainedModel | torch.nn.Module  # what evaluation takes: a transformers model or a wrapper of one

_WRAPPER_NAMES = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DeepSpeedEngine")
_DATA_PARALLEL = ("DistributedDataParallel", "DataParallel", "DeepSpeedEngine")


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


def data_parallel_inner(model: Model) -> Model:
    """The model a data-parallel wrapper (DDP, DataParallel, accelerate's ``prepare``, DeepSpeed's
    engine, and torch.compile around one of them) holds. Evaluation runs that, never the wrapper's
    forward: DDP's broadcasts its buffers on the first pass after a training step, so a process
    without rows would leave the others waiting. FSDP's wrappers are kept: their forward gathers."""
    held: Any = model
    while True:
        inner = getattr(held, "_orig_mod", None)
        if inner is not None and type(inner).__name__ in _DATA_PARALLEL:
            held = inner
        elif type(held).__name__ in _DATA_PARALLEL and getattr(held, "module", None) is not None:
            held = held.module
        else:
            return held


def model_config(model: Model) -> PretrainedConfig:
    """The transformers config of the (unwrapped) model."""
    return unwrap(model).config


def input_device(model: Model) -> torch.device:
    """Where inputs go: the input embeddings' device (also right under a device_map)."""
    held: Any = model  # a wrapper that passes get_input_embeddings on (PEFT) is asked as it is
    return held.get_input_embeddings().weight.device
