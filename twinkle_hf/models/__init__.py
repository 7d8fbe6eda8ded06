"""The models stage: what ``--model`` names, loaded with its tokenizer, whole or split by tensor parallelism.

Read first: :func:`~twinkle_hf.models.loading.load_model` (loading.py). locate.py tells a local
folder from a hub id or a ``.gguf``; parallel.py checks and builds ``--tensor-parallel``; facts.py
reads a model through the wrappers people evaluate (PEFT, DDP, torch.compile).
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "input_device": "facts", "model_config": "facts", "ModelInfo": "loading", "load_model": "loading",
    "load_tokenizer": "loading", "resolve_device": "loading", "locate_model": "locate",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
