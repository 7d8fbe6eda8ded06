"""Setting values as they come from YAML or a flag: converted to each field's type, or a
:class:`~twinkle_hf.errors.TwinkleError` that names the key and what it expects."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import TwinkleError


def parse_batch_size(value: Any) -> int | str:
    """``"auto"`` or a positive integer (also as text, from a flag or YAML)."""
    if value == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TwinkleError(f"batch_size must be an integer >= 1 or 'auto'; got {value!r}")
    return value


def coerce_value(name: str, value: Any, default: Any) -> Any:
    """Convert a YAML/flag value to the field's type, or raise a TwinkleError naming the key."""
    if name == "datasets":
        if isinstance(value, str):
            return (value,)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise TwinkleError(f"datasets must be a path/hub id or a list of them; got {value!r}")
    if name in ("benchmarks", "subjects"):
        if isinstance(value, str):  # subjects: "a,b" as on the command line
            value = [v for v in value.split(",")] if name == "subjects" else [value]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v.strip() for v in value):
            return tuple(v.strip() for v in value)
        example = "[mmlu, cmmlu=data/cmmlu]" if name == "benchmarks" else "[anatomy, astronomy]"
        raise TwinkleError(f"{name} must be a name or a list of names, e.g. {example}; got {value!r}")
    if name == "report_to":  # "mlflow,wandb" as on the command line, or a list; "none" (transformers' word): none
        if isinstance(value, str):
            value = [] if value.strip().lower() == "none" else value.split(",")
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v.strip() for v in value):
            return tuple(dict.fromkeys(v.strip().lower() for v in value))
        raise TwinkleError(f"report_to must be tracker names, comma-separated or a list, e.g. [mlflow, tensorboard]; "
                           f"got {value!r}")
    if name in ("columns", "templates"):
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise TwinkleError(f"{name} must be a mapping of names to strings; got {value!r}")
        return dict(value)
    if name == "dataset_overrides":
        if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
            raise TwinkleError(f"dataset_overrides must map dataset path prefixes to mappings of settings, e.g. "
                               f"{{'data/math/': {{'method': 'box'}}}}; got {value!r}")
        return {str(k): dict(v) for k, v in value.items()}
    if name == "chat_template_kwargs":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise TwinkleError(f"chat_template_kwargs must be a mapping of variable names to values, e.g. "
                               f'{{"enable_thinking": false}}; got {value!r}')
        return dict(value)
    if value is None and default is None:  # optional settings may be left empty in YAML
        return None
    if name == "system_prompt":
        if isinstance(value, str) or (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
            return value if isinstance(value, str) else dict(value)
        raise TwinkleError(f"system_prompt must be a string or a mapping of languages to strings; got {value!r}")
    if name == "answer_regex" and isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise TwinkleError(f"answer_regex must be a pattern or a list of patterns; got {value!r}")
        return tuple(value)
    if name == "apply_chat_template":
        if not isinstance(value, bool):
            raise TwinkleError(f"{name} must be true or false; got {value!r}")
        return value
    if name in ("temperature", "top_p"):
        return value  # checked with the config
    if name in ("max_new_tokens", "samples"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TwinkleError(f"{name} must be an integer; got {value!r}")
        return value
    if name == "batch_size":
        return parse_batch_size(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TwinkleError(f"{name} must be true or false; got {value!r}")
        return value
    if name == "pride_fraction":
        return value
    if name in ("limit", "seeds", "seed", "num_fewshot", "bootstrap", "pass_k", "tensor_parallel"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TwinkleError(f"{name} must be an integer; got {value!r}")
        return value
    if value is not None and not isinstance(value, str):
        raise TwinkleError(f"{name} must be a string; got {value!r}")
    return value



def compile_answer_regex(pattern: str | Sequence[str]) -> list[re.Pattern[str]]:
    """``--answer-regex``: a pattern, or several tried in turn (a YAML list; Twinkle Eval's
    ``strategy_config.patterns``); each must compile and hold exactly one capturing group (the letter)."""
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    if not patterns:
        raise TwinkleError("answer_regex is an empty list; give at least one pattern")
    compiled = []
    for one in patterns:
        try:
            compiled.append(re.compile(one))
        except (re.error, TypeError) as err:
            raise TwinkleError(f"--answer-regex {one!r} is not a regular expression: {err}") from None
        if compiled[-1].groups != 1:
            raise TwinkleError(f"--answer-regex {one!r} has {compiled[-1].groups} capturing groups; it needs "
                               f"exactly one, around the letter, e.g. 'Answer:\\s*([A-Z])' (use (?:...) for the "
                               f"others)")
    return compiled
