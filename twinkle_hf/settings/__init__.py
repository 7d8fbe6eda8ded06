"""Stage 1, settings: the one configuration object, built once (defaults <- YAML <- flags).

Read first: :class:`~twinkle_hf.settings.config.EvalConfig` and :func:`~twinkle_hf.settings.config.build_config`
(config.py); values from YAML and flags are converted in values.py, config files read in files.py (a
Twinkle Eval config is translated by twinkle_config.py), per-dataset settings matched in overrides.py.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "DTYPES": "config", "EvalConfig": "config", "METHODS": "config", "PROMPT_LANGS": "config",
    "SHUFFLE_MODES": "config", "THINKING": "config", "build_config": "config", "read_config": "files",
    "read_yaml": "files", "compile_answer_regex": "values", "parse_batch_size": "values",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
