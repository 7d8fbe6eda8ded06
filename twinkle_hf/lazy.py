"""Package faces that import on first use: ``import twinkle_hf`` (or a stage folder) stays cheap,
and code that only reads finished runs never imports torch, transformers or datasets."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` comes from the module ``exports[name]``
    (relative to ``package``), imported when the name is first asked for."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(f".{exports[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
