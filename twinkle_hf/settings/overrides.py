"""Settings for some datasets only: ``dataset_overrides: {path prefix: {setting: value}}``.

Twinkle Eval configs carry these (its ``evaluation.dataset_overrides``), and a twinkle_hf config
may too. A dataset takes the overrides of the longest prefix of its path (compared folder by
folder, so ``data/math`` does not match ``data/mathematics``); everything else comes from the run's
config. Only settings that change how a dataset's questions are asked and read can differ; the
model, the device and the data loading are the run's. Logit scoring and generation cannot be mixed
in one run (their predictions hold different things): run such datasets separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

OVERRIDABLE = ("shuffle", "shuffle_mode", "seeds", "num_fewshot", "prompt_lang", "templates", "apply_chat_template",
               "chat_template_kwargs", "method", "answer_regex", "system_prompt", "thinking", "max_new_tokens",
               "temperature", "top_p", "samples", "pass_k")


def _parts(path: str) -> tuple[str, ...]:
    return PurePosixPath(path.replace("\\", "/")).parts


def matching_prefix(overrides: Mapping[str, Any], source: str) -> str | None:
    """The longest prefix in ``overrides`` that ``source`` lies under (whole folder names), if any."""
    parts = _parts(source)
    hits = [p for p in overrides if parts[:len(_parts(p))] == _parts(p)]
    return max(hits, key=lambda p: len(_parts(p)), default=None)
