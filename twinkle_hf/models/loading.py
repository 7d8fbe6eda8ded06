"""Load a model and its tokenizer from a local directory, a hub id (cache only when offline) or
a ``.gguf`` file, on the device and in the dtype docs/design.md specifies."""

from __future__ import annotations

import dataclasses
import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError

from ..data.fingerprint import combine, file_sha256, folder_fingerprint
from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .locate import locate_model
from .parallel import device_label, tensor_parallel_kwargs

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from .facts import Model

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SAFETENSORS_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")  # as save_pretrained names them


@dataclass(frozen=True)
class ModelInfo:
    """What was evaluated, for results.json."""

    name_or_path: str
    kind: str  # "local" | "hub" | "gguf"
    revision: str | None  # hub commit hash when known
    fingerprint: str | None  # a .gguf's sha256, a local dir's (fingerprint.py); a hub model: revision
    dtype: str
    device: str
    parameters: int


def is_offline(cfg: EvalConfig) -> bool:
    return cfg.offline or os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def resolve_device(requested: str) -> torch.device:
    """``auto``: CUDA when available, else MPS, else CPU. An unavailable device is an error."""
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise TwinkleError(f"--device {requested}: CUDA is not available here; use --device cpu or auto")
    if requested == "mps" and not torch.backends.mps.is_available():
        raise TwinkleError("--device mps: MPS is not available here; use --device cpu or auto")
    return torch.device(requested)


def resolve_dtype(requested: str, checkpoint_dtype: torch.dtype | None, device: torch.device) -> torch.dtype:
    """``auto`` = the checkpoint's own dtype, except float16 on CPU becomes bfloat16 (CPU float16
    matmuls are slow and overflow-prone). A checkpoint without one (e.g. .gguf, which is
    dequantized) runs in float32 on CPU and bfloat16 on an accelerator."""
    if requested != "auto":
        return _DTYPES[requested]
    if checkpoint_dtype is None or checkpoint_dtype not in _DTYPES.values():
        return torch.float32 if device.type == "cpu" else torch.bfloat16
    if checkpoint_dtype == torch.float16 and device.type == "cpu":
        return torch.bfloat16
    return checkpoint_dtype


def _local_weights_error(model: str, err: Exception) -> TwinkleError:
    """Unreadable local weights (truncated, corrupt, or not matching config.json): one line."""
    first = (str(err).strip() or type(err).__name__).splitlines()[0]
    if model.endswith(".gguf"):
        return TwinkleError(f"--model {model}: the .gguf file cannot be read, it looks truncated or "
                            f"corrupt ({first}); download it again")
    return TwinkleError(f"--model {model}: its weights cannot be read ({type(err).__name__}: {first}); "
                        f"a file may be truncated or corrupt, or not match config.json: download or "
                        f"save the model again")


def _fingerprint(kind: str, where: str, gguf_file: str | None) -> str | None:
    """Identity of local weights (see fingerprint.py); a hub model is identified by its revision."""
    if kind == "gguf":
        return file_sha256(Path(where) / str(gguf_file))
    return folder_fingerprint(where) if kind == "local" else None


def _hub_commit(model: Any, repo: str, revision: str | None) -> str | None:
    """The commit a hub model was loaded from. Older transformers keep it on the config; newer ones
    resolve it per load and drop it, so it is read from the cache snapshot the load used."""
    commit = getattr(model.config, "_commit_hash", None)
    if commit:
        return str(commit)
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(repo, "config.json", revision=revision)
    return Path(path).parent.name if isinstance(path, str) else None


def _not_found(model: str, kind: str, offline: bool, err: Exception | None,
               unreachable: str | None = None) -> TwinkleError:
    if kind == "hub" and unreachable:
        return TwinkleError(
            f"--model {model}: not in the local Hugging Face cache and not a local directory, and the "
            f"Hub at {unreachable}; download it where there is network (hf download {model}), pass a "
            f"local path, or check your network, proxy or HF_ENDPOINT"
        )
    if kind == "hub":
        how = " (offline)" if offline else ""
        return TwinkleError(
            f"--model {model}: not in the local Hugging Face cache{how} and not a local directory; "
            f"download it first (hf download {model}) or pass a local path"
        )
    return TwinkleError(f"--model {model}: could not load it: {str(err).splitlines()[0]}")


def _require_reachable(model: str, kind: str, offline: bool) -> None:
    """An uncached hub id when the Hub cannot be reached: the clear error now, not after the hub
    libraries' retries (hub.py). Local paths and cached ids are never probed."""
    if kind != "hub" or offline:
        return
    from ..data.hub import why_not_loadable

    why = why_not_loadable(model)
    if why:
        raise _not_found(model, kind, offline, None, unreachable=why)


def adapter_base(cfg: EvalConfig) -> str | None:
    """The base model named by a PEFT/LoRA adapter folder (``adapter_config.json``), else None."""
    path = Path(cfg.model) / "adapter_config.json"
    if not path.is_file():
        return None
    import json

    base = json.loads(path.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise TwinkleError(f"{path} names no base_model_name_or_path; add it so the base model can be loaded")
    return str(base)


def load_tokenizer(cfg: EvalConfig) -> PreTrainedTokenizerBase:
    """The tokenizer that belongs to ``cfg.model`` (an adapter's own, else its base model's)."""
    from transformers import AutoTokenizer

    base = adapter_base(cfg)
    if base and not any(Path(cfg.model).glob("tokenizer*")):
        return load_tokenizer(dataclasses.replace(cfg, model=base))
    kind, where, gguf_file = locate_model(cfg.model)
    offline = is_offline(cfg)
    _require_reachable(cfg.model, kind, offline)
    kwargs: dict[str, Any] = {"trust_remote_code": cfg.trust_remote_code,
                              "local_files_only": offline or kind != "hub"}  # a path is never a hub id
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if cfg.revision:
        kwargs["revision"] = cfg.revision
    try:
        return AutoTokenizer.from_pretrained(where, **kwargs)
    except ImportError as err:  # a .gguf needs the gguf package
        raise TwinkleError(f"--model {cfg.model}: {str(err).splitlines()[0]}") from None
    except struct.error as err:  # a .gguf cut short (an interrupted download)
        raise _local_weights_error(cfg.model, err) from None
    except (OSError, ValueError) as err:
        if kind == "local" and not any(Path(where).glob("tokenizer*")):
            raise TwinkleError(
                f"--model {cfg.model}: the directory has no tokenizer files (tokenizer.json / "
                f"tokenizer_config.json); save the tokenizer next to the weights"
            ) from None
        raise _not_found(cfg.model, kind, offline, err) from None


def _plain_copy(model: Any) -> Any:
    """A .gguf loads as dequantized weights still flagged "quantized", which blocks training and
    saving; the same weights in an ordinary model of the same config have neither problem."""
    from transformers import AutoModelForCausalLM

    settings = {k: v for k, v in model.config.to_dict().items() if k != "quantization_config"}
    plain = AutoModelForCausalLM.from_config(model.config.__class__.from_dict(settings), dtype=model.dtype)
    plain.load_state_dict(model.state_dict(), strict=True)
    return plain.eval()


def _load_adapter(cfg: EvalConfig, base: str, device: torch.device | None) -> tuple[Model, ModelInfo]:
    """A PEFT adapter on top of its base model (needs ``pip install peft``)."""
    try:
        from peft import PeftModel
    except ImportError:
        raise TwinkleError(f"--model {cfg.model} is a PEFT adapter; install peft (pip install peft) "
                           f"to load it") from None
    model, info = load_model(dataclasses.replace(cfg, model=base), device)
    model = PeftModel.from_pretrained(model, cfg.model).eval()
    # The adapter's own files and the base model it was applied to: either changing changes the result.
    fingerprint = combine(folder_fingerprint(cfg.model), info.fingerprint, info.revision)
    return model, dataclasses.replace(info, name_or_path=cfg.model, kind=f"peft adapter on {base}",
                                      fingerprint=fingerprint)


def _checkpoint_dtype(where: str, kwargs: dict[str, Any]) -> torch.dtype | None:
    """The dtype the checkpoint's config.json declares (None when it declares none we run)."""
    from transformers import AutoConfig

    hf_config = AutoConfig.from_pretrained(where, **kwargs)
    declared = getattr(hf_config, "dtype", None) or getattr(hf_config, "torch_dtype", None)
    return _DTYPES.get(declared) if isinstance(declared, str) else declared


def _load_kwargs(cfg: EvalConfig, kind: str, where: str, offline: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """from_pretrained's keyword arguments: for the config and the weights (``use_safetensors``)."""
    kwargs: dict[str, Any] = {"trust_remote_code": cfg.trust_remote_code,
                              "local_files_only": offline or kind != "hub"}  # a path is never a hub id
    if cfg.revision:
        kwargs["revision"] = cfg.revision
    weights: dict[str, Any] = {}
    if kind == "local":
        if not (Path(where) / "config.json").is_file():
            raise TwinkleError(f"--model {cfg.model}: the directory has no config.json; pass a folder "
                               f"written by save_pretrained (config.json + weights + tokenizer)")
        if any((Path(where) / name).is_file() for name in SAFETENSORS_WEIGHTS):
            weights["use_safetensors"] = True  # never unpickle a .bin lying next to safetensors
    return kwargs, weights


def load_model(cfg: EvalConfig, device: torch.device | None = None) -> tuple[Model, ModelInfo]:
    """The model in eval mode on its device, plus what results.json says about it."""
    from transformers import AutoModelForCausalLM

    base = adapter_base(cfg)
    if base:
        return _load_adapter(cfg, base, device)
    kind, where, gguf_file = locate_model(cfg.model)
    offline = is_offline(cfg)
    _require_reachable(cfg.model, kind, offline)
    device = device or resolve_device(cfg.device)
    kwargs, weights = _load_kwargs(cfg, kind, where, offline)
    try:
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        dtype = resolve_dtype(cfg.dtype, None if gguf_file else _checkpoint_dtype(where, kwargs), device)
        if cfg.device_map:
            kwargs["device_map"] = cfg.device_map
        if cfg.tensor_parallel > 1:  # checked (one line) before any weight loads
            kwargs.update(tensor_parallel_kwargs(cfg, where, kwargs))
        model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **kwargs, **weights)
    except TwinkleError:  # a size check (--tensor-parallel on heads that do not split): says what it is itself
        raise
    except ImportError as err:  # a .gguf needs the gguf package
        raise TwinkleError(f"--model {cfg.model}: {str(err).splitlines()[0]}") from None
    except (OSError, ValueError) as err:
        raise _not_found(cfg.model, kind, offline, err) from None
    except (SafetensorError, pickle.UnpicklingError, EOFError, struct.error) as err:
        raise _local_weights_error(cfg.model, err) from None
    except RuntimeError as err:  # torch's zip reader, or a tensor shape that contradicts the config
        if kind == "hub" or isinstance(err, torch.OutOfMemoryError):
            raise
        raise _local_weights_error(cfg.model, err) from None
    if gguf_file:
        model = _plain_copy(model)
    if not cfg.device_map and cfg.tensor_parallel == 1:  # a tensor-parallel model is where transformers put it
        model.to(device)  # type: ignore[arg-type]  # transformers' stub types .to's argument as a model
    model.eval()
    info = ModelInfo(
        name_or_path=cfg.model,
        kind=kind,
        revision=_hub_commit(model, where, cfg.revision) if kind == "hub" else None,
        fingerprint=_fingerprint(kind, where, gguf_file),
        dtype=str(dtype).replace("torch.", ""),
        device=device_label(cfg, device),
        parameters=sum(p.numel() for p in model.parameters()),
    )
    return model, info
