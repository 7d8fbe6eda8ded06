"""twinkle_hf: multiple-choice evaluation of local Hugging Face causal LMs without positional bias.

Heavy modules (torch, transformers, datasets) load on first use, so ``import twinkle_hf`` is cheap
and the CLI can switch the hub libraries offline before they are imported.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "EvalConfig": "config", "build_config": "config", "read_yaml": "config",
    "TwinkleError": "errors",
    "Predictions": "schema",
    "LoadedDataset": "data", "load_benchmark": "data",
    "load_model": "loading", "load_tokenizer": "loading", "ModelInfo": "loading",
    "EvalResult": "result", "evaluate": "evaluation", "load_datasets": "evaluation",
    "write_outputs": "report", "regenerate": "report", "report_html": "html_report",
    "read_predictions": "records", "read_results": "records",
    "TwinkleCallback": "callback",
    "compare_runs": "compare",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'twinkle_hf' has no attribute {name!r}")
