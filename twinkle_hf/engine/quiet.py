"""``--quiet``: no progress bar from the libraries the tool calls either (transformers' "Loading
weights", its GGUF "de-quantizing" bar, datasets' map bars, huggingface_hub's downloads); each
library's own setting is restored afterwards, so an in-process caller keeps its bars."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
from collections.abc import Iterator
from typing import Any

# modules that call tqdm.auto.tqdm directly, past transformers' own switch, and the package without
# which they never run (not imported for nothing)
DIRECT_TQDM = (("transformers.modeling_gguf_pytorch_utils", "gguf"),)


@contextlib.contextmanager
def quiet_libraries(enabled: bool = True) -> Iterator[None]:
    """Progress bars of transformers, datasets and huggingface_hub off for the duration (``enabled``)."""
    if not enabled:
        yield
        return
    import datasets
    import huggingface_hub.utils as hub
    import transformers.utils.logging as tf

    restore: list[Any] = []
    if tf.is_progress_bar_enabled():
        tf.disable_progress_bar()
        restore.append(tf.enable_progress_bar)
    if datasets.is_progress_bar_enabled():
        datasets.disable_progress_bars()
        restore.append(datasets.enable_progress_bars)
    if not hub.are_progress_bars_disabled():
        hub.disable_progress_bars()
        restore.append(hub.enable_progress_bars)
    for name, needs in DIRECT_TQDM:
        if importlib.util.find_spec(needs) is None:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        bar = getattr(module, "tqdm", None)
        if bar is not None:
            module.tqdm = functools.partial(bar, disable=True)  # type: ignore[attr-defined]
            restore.append(functools.partial(setattr, module, "tqdm", bar))
    try:
        yield
    finally:
        for undo in reversed(restore):
            undo()
