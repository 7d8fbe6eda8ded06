"""What a merge of shards passes where a model goes: the model's config and generation config,
read from its folder without a weight. Every row comes from the shards' files, so it never runs."""

from __future__ import annotations

from typing import Any

import torch

from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .loading import adapter_base
from .locate import locate_model


class RowsOnly(torch.nn.Module):
    """A model without weights: its ``config`` (context length, for the prompts) and
    ``generation_config`` (stop tokens), and an embedding on the meta device (no memory)."""

    def __init__(self, config: Any, generation_config: Any = None) -> None:
        super().__init__()
        self.config = config
        self.generation_config = generation_config
        self.embed = torch.nn.Embedding(1, 1, device="meta")

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.embed

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TwinkleError("a merge of shards holds no model weights: every row must come from the shards' files")


def rows_only_model(cfg: EvalConfig) -> RowsOnly:
    """The stand-in for ``cfg.model`` (an adapter: its base model's config), read offline."""
    from transformers import AutoConfig, GenerationConfig

    _kind, where, gguf = locate_model(adapter_base(cfg) or cfg.model)
    kwargs: dict[str, Any] = {"trust_remote_code": cfg.trust_remote_code, "local_files_only": True,
                              **({"revision": cfg.revision} if cfg.revision else {}),
                              **({"gguf_file": gguf} if gguf else {})}
    try:
        config = AutoConfig.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as err:
        raise TwinkleError(f"merge: the config of {cfg.model} cannot be read offline ({str(err).splitlines()[0]}); "
                           f"merge needs the model's config and tokenizer (not its weights) where the shards "
                           f"found them") from None
    try:
        generation = GenerationConfig.from_pretrained(where, **kwargs)
    except (OSError, ValueError):  # no generation_config.json: the tokenizer's end-of-sequence alone
        generation = None
    return RowsOnly(config, generation)
