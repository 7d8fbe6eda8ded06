"""The one configuration object, built once: defaults <- YAML file <- command-line flags.

Every field is validated here, so later stages can trust it. Unknown keys and wrong types are
:class:`~twinkle_hf.errors.TwinkleError`s that say which key and what is expected.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import TwinkleError, read_document
from .schema import CANONICAL_COLUMNS

SHUFFLE_MODES = ("none", "random", "cyclic", "all")
DEVICES_HELP = "auto, cpu, cuda, cuda:N or mps"
DTYPES = ("auto", "float32", "bfloat16", "float16")
PROMPT_LANGS = ("en", "zh")
BAD_ROW_POLICIES = ("error", "skip")
TEMPLATE_KEYS = ("description", "description_no_subject", "question", "option", "answer_cue",
                 "label_prefix", "fewshot_separator", "instruction_box", "instruction_pattern")
METHODS = ("logit", "box", "pattern", "regex")  # logit: the label's next-token probability; else generate
THINKING = ("auto", "on", "off")


@dataclass(frozen=True)
class EvalConfig:
    """Everything one evaluation needs. Build it with :func:`build_config` (or directly in Python)."""

    model: str = ""
    datasets: tuple[str, ...] = ()  # empty: the MMLU sample embedded in the package
    shuffle: bool = False
    shuffle_mode: str = "random"
    seeds: int = 5
    seed: int = 1234
    score_original: bool = True  # shuffled runs also score the unpermuted order (acc_original)
    split: str = "test"
    fewshot_split: str = "dev"
    num_fewshot: int = 0
    limit: int | None = None
    batch_size: int | str = "auto"
    device: str = "auto"
    dtype: str = "auto"
    output_dir: str | None = None
    offline: bool = False
    columns: Mapping[str, str] = field(default_factory=dict)
    on_bad_row: str = "error"
    prompt_lang: str = "en"
    templates: Mapping[str, str] = field(default_factory=dict)
    apply_chat_template: bool | None = None  # None: on in generation mode when the tokenizer has one
    # extra variables for the chat template; letter scoring renders with enable_thinking=False
    # unless this says otherwise (a thinking template would otherwise open <think> where the letter is read)
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    log_prompts: bool = False
    trust_remote_code: bool = False
    revision: str | None = None
    share_prefix: bool = True  # run a prefix shared by many prompts once (few-shot block, question stem)
    device_map: str | None = None  # e.g. "auto": one model split over the GPUs of one process
    bootstrap: int = 1000  # question-level bootstrap replicates for nonlinear metrics (0: none)
    pride_fraction: float = 0.05  # share of questions whose cyclic permutations estimate PriDe's prior
    # generation mode (method box | pattern | regex): the model writes, the letter is extracted
    method: str = "logit"
    answer_regex: str | tuple[str, ...] | None = None  # method regex: one group around the letter (several: in turn)
    system_prompt: str | Mapping[str, str] | None = None  # a string, or one per prompt_lang ({en: ..., zh: ...})
    thinking: str = "auto"  # enable_thinking for templates that read it; auto: the template's default
    max_new_tokens: int = 2048
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    samples: int = 1  # answers drawn per prompt (needs a temperature): mean, majority-vote and pass@k accuracy
    # Twinkle Eval's result files (results/results_<time>.json, eval_results_<time>_run<N>.jsonl) beside
    # this project's own; on by default when the config file was a Twinkle Eval one
    twinkle_results: bool = False
    pass_k: int = 1  # the k of those files' pass@k (Twinkle's evaluation.pass_k)
    # {dataset path prefix: {setting: value}}: settings for some datasets only (overrides.py)
    dataset_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def permutation_mode(self) -> str:
        """The mode actually used: `none` unless shuffling is on."""
        return self.shuffle_mode if self.shuffle else "none"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (for results.json)."""
        out = dataclasses.asdict(self)
        out["datasets"] = list(self.datasets)
        out["columns"] = dict(self.columns)
        out["templates"] = dict(self.templates)
        out["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        out["dataset_overrides"] = {k: dict(v) for k, v in self.dataset_overrides.items()}
        if isinstance(self.answer_regex, tuple):
            out["answer_regex"] = list(self.answer_regex)
        if isinstance(self.system_prompt, Mapping):
            out["system_prompt"] = dict(self.system_prompt)
        return out

    def for_dataset(self, source: str) -> EvalConfig:
        """The settings for the dataset read from ``source``: this config with the
        ``dataset_overrides`` of the longest prefix of its path, if any."""
        from .overrides import for_dataset

        return for_dataset(self, source)

    @property
    def generates(self) -> bool:
        """Generation mode: the model writes its answer and the letter is extracted."""
        return self.method != "logit"


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise TwinkleError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TwinkleError(f"{name} must be an integer >= {low}; got {value!r}")


def _validate(cfg: EvalConfig) -> None:
    if cfg.shuffle_mode == "none" and cfg.shuffle:
        raise TwinkleError("shuffle is on but shuffle_mode is 'none'; pick random, cyclic or all")
    if cfg.shuffle_mode in ("cyclic", "all") and not cfg.shuffle:
        raise TwinkleError(f"shuffle_mode is {cfg.shuffle_mode!r} but shuffle is off; set shuffle=True "
                           f"(the CLI's --shuffle-mode turns it on by itself)")
    _choice("shuffle_mode", cfg.shuffle_mode, SHUFFLE_MODES)
    _choice("dtype", cfg.dtype, DTYPES)
    _choice("prompt_lang", cfg.prompt_lang, PROMPT_LANGS)
    _choice("on_bad_row", cfg.on_bad_row, BAD_ROW_POLICIES)
    _positive("seeds", cfg.seeds)
    _positive("num_fewshot", cfg.num_fewshot, allow_zero=True)
    _positive("bootstrap", cfg.bootstrap, allow_zero=True)
    if isinstance(cfg.pride_fraction, bool) or not isinstance(cfg.pride_fraction, (int, float)) \
            or not 0 < cfg.pride_fraction < 1:
        raise TwinkleError(f"pride_fraction must be a number between 0 and 1; got {cfg.pride_fraction!r}")
    if isinstance(cfg.seed, bool) or not isinstance(cfg.seed, int) or not 0 <= cfg.seed < 2**63:
        raise TwinkleError(f"seed must be an integer in 0..2**63-1; got {cfg.seed!r}")
    if cfg.limit is not None:
        _positive("limit", cfg.limit)
    if cfg.batch_size != "auto":
        _positive("batch_size", cfg.batch_size)
    device = cfg.device
    if not (device in ("auto", "cpu", "cuda", "mps") or (device.startswith("cuda:") and device[5:].isdigit())):
        raise TwinkleError(f"device must be {DEVICES_HELP}; got {device!r}")
    for key in cfg.templates:
        if key not in TEMPLATE_KEYS:
            raise TwinkleError(f"unknown template key {key!r}; known: {', '.join(TEMPLATE_KEYS)}")
    for key in cfg.columns:
        if key not in CANONICAL_COLUMNS:
            raise TwinkleError(f"unknown columns key {key!r}; known: {', '.join(CANONICAL_COLUMNS)}")
    _validate_generation(cfg)
    if cfg.dataset_overrides:
        from .overrides import check_overrides

        check_overrides(cfg)


def _validate_generation(cfg: EvalConfig) -> None:
    _choice("method", cfg.method, METHODS)
    _choice("thinking", cfg.thinking, THINKING)
    _positive("max_new_tokens", cfg.max_new_tokens)
    _positive("samples", cfg.samples)
    _positive("pass_k", cfg.pass_k)
    if cfg.samples > 1 and not cfg.generates:
        raise TwinkleError(f"--samples {cfg.samples} needs generation mode (--method box|pattern|regex); the logit "
                           f"method reads one probability per option, there is nothing to sample")
    if cfg.samples > 1 and cfg.temperature == 0:
        raise TwinkleError(f"--samples {cfg.samples} with greedy decoding (temperature 0) draws the same answer "
                           f"{cfg.samples} times; set --temperature (e.g. 0.7)")
    if (cfg.method == "regex") != (cfg.answer_regex is not None):
        raise TwinkleError("--answer-regex goes with --method regex (and --method regex needs one)")
    if cfg.answer_regex is not None:
        from .extract import compile_answer_regex

        compile_answer_regex(cfg.answer_regex)
    for name, value, low, high in (("temperature", cfg.temperature, 0, 100), ("top_p", cfg.top_p, 1e-9, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise TwinkleError(f"{name} must be a number in [{low:g}, {high:g}]; got {value!r}")
    if isinstance(cfg.system_prompt, Mapping):
        unknown = set(cfg.system_prompt) - set(PROMPT_LANGS)
        if unknown:
            raise TwinkleError(f"system_prompt has languages {sorted(unknown)}; known: {', '.join(PROMPT_LANGS)}")


# ----------------------------------------------------------------------------------------------
# Building a config from YAML and flags


def parse_batch_size(value: Any) -> int | str:
    """``"auto"`` or a positive integer (also as text, from a flag or YAML)."""
    if value == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TwinkleError(f"batch_size must be an integer >= 1 or 'auto'; got {value!r}")
    return value


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Convert a YAML/flag value to the field's type, or raise a TwinkleError naming the key."""
    if name == "datasets":
        if isinstance(value, str):
            return (value,)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise TwinkleError(f"datasets must be a path/hub id or a list of them; got {value!r}")
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
    if name in ("limit", "seeds", "seed", "num_fewshot", "bootstrap", "pass_k"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TwinkleError(f"{name} must be an integer; got {value!r}")
        return value
    if value is not None and not isinstance(value, str):
        raise TwinkleError(f"{name} must be a string; got {value!r}")
    return value


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
    from .twinkle_config import is_twinkle_config, translate

    if is_twinkle_config(data):  # Twinkle Eval's own layout, read as it is
        translated = translate(data)
        return translated.values, translated.describe(path)
    if "column_map" in data:
        data["columns"] = data.pop("column_map")
    if "dataset" in data:
        data["datasets"] = data.pop("dataset")
    return data, []


def build_config(yaml_values: Mapping[str, Any] | None = None,
                 overrides: Mapping[str, Any] | None = None) -> EvalConfig:
    """defaults <- ``yaml_values`` <- ``overrides`` (flags the user actually gave; None = not given)."""
    fields = {f.name: f for f in dataclasses.fields(EvalConfig)}
    defaults = EvalConfig()
    merged: dict[str, Any] = {}
    for source in (yaml_values or {}), {k: v for k, v in (overrides or {}).items() if v is not None}:
        for key, value in source.items():
            if key not in fields:
                close = difflib.get_close_matches(key, list(fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TwinkleError(f"unknown config key {key!r}{hint}")
            merged[key] = _coerce(key, value, getattr(defaults, key))
    # `--shuffle` alone means mode random; a mode given without --shuffle implies shuffling.
    if merged.get("shuffle_mode") not in (None, "none") and "shuffle" not in merged:
        merged["shuffle"] = True
    if merged.get("shuffle") is False and merged.get("shuffle_mode") is None:
        merged["shuffle_mode"] = "random"
    return EvalConfig(**merged)
