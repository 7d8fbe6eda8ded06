"""Config files: a twinkle_hf YAML (EvalConfig keys) or a Twinkle Eval config, read as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import TwinkleError, read_document
from .twinkle_config import is_twinkle_config, translate


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a config file: a mapping of EvalConfig keys (``column_map`` is accepted for ``columns``),
    or a Twinkle Eval config as it is (twinkle_config.py; :func:`read_config` also says what it
    ignored)."""
    return read_config(path)[0]


def read_config(path: str | Path) -> tuple[dict[str, Any], list[str]]:
    """:func:`read_yaml`, and the lines to tell the user about it (a Twinkle Eval config: how it
    was read and the keys it ignored, by name only)."""
    path = Path(path)
    data = read_document(path, yaml.safe_load, f"config file {path} is not valid YAML: {{err}}",
                         f"config file {path} does not exist", (yaml.YAMLError,))
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        raise TwinkleError(f"config file {path} must hold a mapping of keys, not {type(data).__name__}")
    if is_twinkle_config(data):  # Twinkle Eval's own layout, read as it is
        translated = translate(data)
        return translated.values, translated.describe(path)
    if "column_map" in data:
        data["columns"] = data.pop("column_map")
    if "dataset" in data:
        data["datasets"] = data.pop("dataset")
    return data, []
