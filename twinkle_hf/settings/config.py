"""The one configuration object, built once: defaults <- YAML file <- command-line flags.

Every field is validated here, so later stages can trust it. Unknown keys and wrong types are
:class:`~twinkle_hf.errors.TwinkleError`s that say which key and what is expected.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TwinkleError
from ..schema import CANONICAL_COLUMNS
from .checks import PROMPT_LANGS, validate_generation, validate_trackers
from .checks import choice as _choice
from .checks import positive as _positive
from .methods import GENERATION_METHODS, answer_method, letter_method, scores_cloze, uses_regex
from .overrides import OVERRIDABLE, matching_prefix
from .shards import check_shard
from .values import coerce_value

SHUFFLE_MODES = ("none", "random", "cyclic", "all")
DEVICES_HELP = "auto, cpu, cuda, cuda:N or mps"
DTYPES = ("auto", "float32", "bfloat16", "float16")
BAD_ROW_POLICIES = ("error", "skip")
TEMPLATE_KEYS = ("description", "description_no_subject", "question", "option", "answer_cue",
                 "label_prefix", "fewshot_separator", "instruction_box", "instruction_pattern", "cloze_description",
                 "cloze_question", "cloze_delimiter")


@dataclass(frozen=True)
class EvalConfig:
    """Everything one evaluation needs. Build it with :func:`build_config` (or directly in Python)."""

    model: str = ""
    datasets: tuple[str, ...] = ()  # empty (and no benchmarks): the MMLU sample embedded in the package
    benchmarks: tuple[str, ...] = ()  # registry names: NAME, NAME:VARIANT or NAME=PATH (data/registry.py)
    subjects: tuple[str, ...] = ()  # only these subjects (empty: all)
    shuffle: bool = False
    shuffle_mode: str = "random"
    seeds: int = 5
    seed: int = 1234
    score_original: bool = True  # shuffled runs also score the unpermuted order (acc_original)
    # "all of the above" keeps its letter, "Both A and C" follows its options (prompts/anchors.py);
    # off: every option is shuffled as written, as tools that shuffle everything do
    keep_option_meaning: bool = True
    split: str = "test"
    fewshot_split: str = "dev"
    num_fewshot: int = 0
    limit: int | None = None
    batch_size: int | str = "auto"
    device: str = "auto"
    dtype: str = "auto"
    output_dir: str | None = None
    overwrite: bool = False  # replace a finished run in output_dir (outputs/finished.py); else it is refused
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
    tensor_parallel: int = 1  # N > 1: the model split N ways over each group of N processes (models/parallel.py)
    bootstrap: int = 1000  # question-level bootstrap replicates for nonlinear metrics (0: none)
    pride_fraction: float = 0.05  # share of questions whose cyclic permutations estimate PriDe's prior
    # generation mode (method box | pattern | regex): the model writes, the letter is extracted
    method: str = "logit"
    probe: str | None = None  # "choices-only": every prompt scored again with the question text removed
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
    # Twinkle Eval users: its prompts (the default for its configs) and its letter reading, to reproduce old numbers
    prompt_style: str = "lm-eval"
    extractor: str = "twinkle_hf"
    from_twinkle: bool = False  # the config file was a Twinkle Eval one: the report compares both extractions
    # experiment trackers the CLI logs a finished run to (mlflow, wandb, tensorboard, trackio: outputs/trackers.py)
    report_to: tuple[str, ...] = ()
    # "K/N": score share K of an N-way split of the rows only (settings/shards.py); "auto": from the job array
    shard: str | None = None

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
        out["benchmarks"] = list(self.benchmarks)
        out["subjects"] = list(self.subjects)
        out["report_to"] = list(self.report_to)
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
        from .config import for_dataset

        return for_dataset(self, source)

    @property
    def generates(self) -> bool:
        """Generation mode: the model writes its answer and the letter is extracted."""
        return letter_method(self.method) in GENERATION_METHODS

    @property
    def scores_letters(self) -> bool:
        """The run reads option letters (logit or generation); ``cloze`` alone shows none."""
        return letter_method(self.method) is not None

    @property
    def cloze(self) -> bool:
        """The run scores each option's text as a continuation of the question (``cloze``, ``logit+cloze``)."""
        return scores_cloze(self.method)


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
    _positive("tensor_parallel", cfg.tensor_parallel)
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
    validate_generation(cfg)
    validate_trackers(cfg.report_to)
    check_shard(cfg.shard)
    if cfg.dataset_overrides:
        from .config import check_overrides

        check_overrides(cfg)


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
            merged[key] = coerce_value(key, value, getattr(defaults, key))
    # `--shuffle` alone means mode random; a mode given without --shuffle implies shuffling.
    if merged.get("shuffle_mode") not in (None, "none") and "shuffle" not in merged:
        merged["shuffle"] = True
    if merged.get("shuffle") is False and merged.get("shuffle_mode") is None:
        merged["shuffle_mode"] = "random"
    return EvalConfig(**merged)


# ----------------------------------------------------------------------------------------------
# Per-dataset settings (overrides.py says which and how a dataset finds its own)


def apply_overrides(cfg: EvalConfig, values: Mapping[str, Any]) -> EvalConfig:
    """``cfg`` with ``values`` in place of its own settings (validated as a whole config)."""
    values = dict(values)
    if values.get("shuffle") is False and "shuffle_mode" not in values:
        values["shuffle_mode"] = "random"  # off: whatever mode the run used
    if values.get("shuffle_mode") not in (None, "none") and "shuffle" not in values:
        values["shuffle"] = True  # a mode implies shuffling, as on the command line
    if "method" in values and not uses_regex(values["method"]):
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
        kinds = "logit scoring and generation cannot share a run" if local.generates != cfg.generates else \
            "cloze scoring and letters alone cannot share a run" if local.cloze != cfg.cloze else \
            "written letters and scored ones alone cannot share a run" if answer_method(local.method) != \
            answer_method(cfg.method) else ""
        if kinds:
            raise TwinkleError(f"dataset_overrides[{prefix!r}]: method {local.method!r} with a run whose method is "
                               f"{cfg.method!r}: {kinds}; evaluate these datasets in a run of their own")


def for_dataset(cfg: EvalConfig, source: str) -> EvalConfig:
    """The settings for the dataset read from ``source``."""
    prefix = matching_prefix(cfg.dataset_overrides, source) if cfg.dataset_overrides else None
    return cfg if prefix is None else apply_overrides(cfg, cfg.dataset_overrides[prefix])
