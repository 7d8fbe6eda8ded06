"""``--tensor-parallel N``: a model no single device holds, split N ways by transformers' tensor
parallelism (each layer's heads and MLP columns over the N processes of a group, activations
exchanged inside every pass). Under W processes there are W/N groups, each a whole copy of the
model: the groups split the rows, and a group's processes score the same rows together.

Everything that can be wrong is said here in one line before a weight loads: the process count, a
``--device-map`` beside it, a ``.gguf``, an architecture without a tensor-parallel plan, heads
that do not split N ways.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import TwinkleError
from ..settings.config import EvalConfig

if TYPE_CHECKING:
    import torch


def launched_processes() -> int:
    """How many processes the launcher started (1 under plain `python`)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_tensor_parallel(cfg: EvalConfig, processes: int) -> None:
    """What the flags alone can tell: the processes split into groups of N, nothing else splits the model."""
    n = cfg.tensor_parallel
    if n == 1:
        return
    if cfg.device_map:
        raise TwinkleError(f"--tensor-parallel {n} and --device-map {cfg.device_map} both split the model; use "
                           f"--tensor-parallel (all GPUs busy in every pass) or --device-map (one process, layers on "
                           f"the GPUs in turn), not both")
    if cfg.model.endswith(".gguf"):
        raise TwinkleError(f"--tensor-parallel {n}: a .gguf loads whole into each process; save it once as a "
                           f"transformers folder (AutoModelForCausalLM.from_pretrained(dir, gguf_file=name)"
                           f".save_pretrained(out), and the tokenizer) and pass that folder")
    if processes % n:
        raise TwinkleError(f"--tensor-parallel {n} needs a multiple of {n} processes (torchrun --nproc_per_node "
                           f"{n}, or accelerate launch --num_processes {n}); this run has {processes}")


def tensor_parallel_kwargs(cfg: EvalConfig, where: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """from_pretrained's keyword arguments that load ``cfg.model`` (from ``where``, with the
    config's ``kwargs``) as W/N groups of an N-way tensor-parallel copy, after checking that it splits."""
    from transformers import AutoConfig

    n, processes = cfg.tensor_parallel, launched_processes()
    check_tensor_parallel(cfg, processes)
    config = AutoConfig.from_pretrained(where, **kwargs)
    kind = getattr(config, "model_type", type(config).__name__)
    text = getattr(config, "text_config", None) or config
    if not getattr(text, "base_model_tp_plan", None):
        raise TwinkleError(f"--tensor-parallel {n}: transformers has no tensor-parallel plan for model type "
                           f"{kind!r}; use --device-map auto (one process, the layers spread over its GPUs)")
    heads = getattr(text, "num_attention_heads", None)
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    for name, value in (("attention heads", heads), ("key/value heads", kv_heads)):
        if isinstance(value, int) and value % n:
            raise TwinkleError(f"--tensor-parallel {n}: the model ({kind}) has {value} {name}, which do not split "
                               f"{n} ways; pick a tensor-parallel size that divides {value}")
    try:
        from transformers.distributed.configuration_utils import DistributedConfig
    except ImportError:
        DistributedConfig = None  # type: ignore[assignment,misc]
    if DistributedConfig is None or "dp_replicate_size" not in getattr(DistributedConfig, "__dataclass_fields__", {}):
        import transformers

        raise TwinkleError(f"--tensor-parallel {n} needs a transformers with DistributedConfig(tp_size, "
                           f"dp_replicate_size) (this is {transformers.__version__}); upgrade transformers")
    # dp_replicate_size: the W/N groups each hold a whole copy (transformers' mesh: dp_replicate x tp)
    return {"distributed_config": DistributedConfig(tp_size=n, dp_replicate_size=processes // n)}


def device_label(cfg: EvalConfig, device: torch.device) -> str:
    """results.json's ``model.device``: where the weights are, and how they are split."""
    if cfg.device_map:
        return f"device_map={cfg.device_map}"
    return f"{device} x tensor parallel {cfg.tensor_parallel}" if cfg.tensor_parallel > 1 else str(device)
