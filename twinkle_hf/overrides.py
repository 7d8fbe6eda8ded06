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
from typing import TYPE_CHECKING, Any

from .errors import TwinkleError

if TYPE_CHECKING:
    from .config import EvalConfig

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


def apply_overrides(cfg: EvalConfig, values: Mapping[str, Any]) -> EvalConfig:
    """``cfg`` with ``values`` in place of its own settings (validated as a whole config)."""
    from .config import build_config

    values = dict(values)
    if values.get("shuffle") is False and "shuffle_mode" not in values:
        values["shuffle_mode"] = "random"  # off: whatever mode the run used
    if values.get("shuffle_mode") not in (None, "none") and "shuffle" not in values:
        values["shuffle"] = True  # a mode implies shuffling, as on the command line
    if "method" in values and values["method"] != "regex":
        values.setdefault("answer_regex", None)  # the run's regex belongs to its own method
    base = {k: v for k, v in cfg.to_dict().items() if k != "dataset_overrides"}
    return build_config({**base, **values, "dataset_overrides": {}})  # as a file's values: None is a value


def check_overrides(cfg: EvalConfig) -> None:
    """Every override names known, overridable settings with valid values, and keeps the run's
    kind of scoring (logit or generation)."""
    for prefix, values in cfg.dataset_overrides.items():
        if not isinstance(prefix, str) or not isinstance(values, Mapping):
            raise TwinkleError(f"dataset_overrides must map a dataset path prefix to a mapping of settings; got "
                               f"{prefix!r}: {values!r}")
        other = [k for k in values if k not in OVERRIDABLE]
        if other:
            raise TwinkleError(f"dataset_overrides[{prefix!r}]: {', '.join(map(repr, other))} cannot differ between "
                               f"datasets of one run; these can: {', '.join(OVERRIDABLE)}")
        try:
            local = apply_overrides(cfg, values)
        except TwinkleError as err:
            raise TwinkleError(f"dataset_overrides[{prefix!r}]: {err}") from None
        if local.generates != cfg.generates:
            raise TwinkleError(f"dataset_overrides[{prefix!r}]: method {local.method!r} with a run whose method is "
                               f"{cfg.method!r}: logit scoring and generation cannot share a run; evaluate these "
                               f"datasets in a run of their own")


def for_dataset(cfg: EvalConfig, source: str) -> EvalConfig:
    """The settings for the dataset read from ``source``."""
    prefix = matching_prefix(cfg.dataset_overrides, source) if cfg.dataset_overrides else None
    return cfg if prefix is None else apply_overrides(cfg, cfg.dataset_overrides[prefix])
