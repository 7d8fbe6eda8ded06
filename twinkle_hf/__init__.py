"""twinkle_hf: multiple-choice evaluation of local Hugging Face causal LMs without positional bias.

The package is a folder per stage of the one-way flow (settings -> data -> prompts -> models ->
runtime -> engine -> metrics -> outputs), each importing only the stages before it; the entry points (evaluation, cli,
callback, compare, sweep, dry_run) sit on top. Heavy modules (torch, transformers, datasets) load
on first use, so ``import twinkle_hf`` is cheap and the CLI can switch the hub libraries offline
before they are imported.
"""

from __future__ import annotations

from .lazy import lazy_attributes
from .version import __version__

_EXPORTS = {
    "EvalConfig": "settings.config", "build_config": "settings.config", "read_yaml": "settings.files",
    "TwinkleError": "errors",
    "Predictions": "schema",
    "LoadedDataset": "data.load", "load_benchmark": "data.load", "load_datasets": "data.sources",
    "load_model": "models.loading", "load_tokenizer": "models.loading", "ModelInfo": "models.loading",
    "EvalResult": "outputs.result", "evaluate": "evaluation",
    "write_outputs": "outputs.report", "regenerate": "outputs.report", "report_html": "outputs.html_report",
    "read_predictions": "outputs.records", "read_results": "outputs.records",
    "TwinkleCallback": "callback",
    "compare_runs": "outputs.comparison",
}
__all__ = [*sorted(_EXPORTS), "__version__"]
__getattr__ = lazy_attributes(__name__, _EXPORTS)
