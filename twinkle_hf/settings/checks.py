"""Checks of the config's values that belong together (methods and generation, prompt styles),
apart from config.py so that it stays one screenful of fields and the rules that tie them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import TwinkleError
from .methods import METHODS, check_probe, uses_regex

PROMPT_STYLES = ("lm-eval", "twinkle")  # lm-evaluation-harness's prompts, or Twinkle Eval 2.10's (twinkle_style.py)
EXTRACTORS = ("twinkle_hf", "twinkle")  # how a generated answer's letter is read (extract.py, twinkle_extract.py)
THINKING = ("auto", "on", "off")
PROMPT_LANGS = ("en", "zh")
# experiment trackers a CLI run can log to, by the names transformers' `report_to` uses (outputs/trackers.py)
TRACKERS = ("mlflow", "wandb", "tensorboard", "trackio")


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise TwinkleError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def positive(name: str, value: Any, allow_zero: bool = False) -> None:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TwinkleError(f"{name} must be an integer >= {low}; got {value!r}")


def _validate_style(cfg: Any) -> None:
    choice("prompt_style", cfg.prompt_style, PROMPT_STYLES)
    choice("extractor", cfg.extractor, EXTRACTORS)
    if cfg.prompt_style == "twinkle" and cfg.num_fewshot:
        raise TwinkleError(f"--num-fewshot {cfg.num_fewshot}: Twinkle Eval's prompts hold no examples; add "
                           f"--prompt-style lm-eval for few-shot prompts")
    if cfg.prompt_style == "twinkle" and cfg.templates:
        raise TwinkleError("templates: these change lm-eval-style prompts; Twinkle Eval's prompts have no "
                           "template; add --prompt-style lm-eval (YAML prompt_style: lm-eval)")


def validate_trackers(names: Any) -> None:
    """``report_to``: known tracker names only (whether each is installed is checked where a run starts)."""
    unknown = [name for name in names if name not in TRACKERS]
    if unknown:
        raise TwinkleError(f"report_to names {', '.join(map(repr, unknown))}, not a tracker; the valid names: "
                           f"{', '.join(TRACKERS)} (comma-separated)")


def validate_generation(cfg: Any) -> None:
    _validate_style(cfg)
    choice("method", cfg.method, METHODS)
    choice("thinking", cfg.thinking, THINKING)
    positive("max_new_tokens", cfg.max_new_tokens)
    positive("samples", cfg.samples)
    positive("pass_k", cfg.pass_k)
    if cfg.cloze and (cfg.prompt_style == "twinkle" or cfg.twinkle_results or cfg.apply_chat_template):
        raise TwinkleError(f"--method {cfg.method}: cloze scoring reads option texts after a plain question, which "
                           f"Twinkle Eval's prompts and result files and a chat template do not have; drop "
                           f"--prompt-style twinkle, --twinkle-results and --apply-chat-template")
    if cfg.samples > 1 and not cfg.generates:
        raise TwinkleError(f"--samples {cfg.samples} needs generation mode (--method box|pattern|regex); the logit "
                           f"method reads one probability per option, there is nothing to sample")
    if cfg.samples > 1 and cfg.temperature == 0:
        raise TwinkleError(f"--samples {cfg.samples} with greedy decoding (temperature 0) draws the same answer "
                           f"{cfg.samples} times; set --temperature (e.g. 0.7)")
    check_probe(cfg.probe, cfg.method)
    if uses_regex(cfg.method) != (cfg.answer_regex is not None):
        raise TwinkleError("--answer-regex goes with --method regex (and --method regex needs one)")
    if cfg.answer_regex is not None:
        from .values import compile_answer_regex

        compile_answer_regex(cfg.answer_regex)
    for name, value, low, high in (("temperature", cfg.temperature, 0, 100), ("top_p", cfg.top_p, 1e-9, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise TwinkleError(f"{name} must be a number in [{low:g}, {high:g}]; got {value!r}")
    if isinstance(cfg.system_prompt, Mapping):
        unknown = set(cfg.system_prompt) - set(PROMPT_LANGS)
        if unknown:
            raise TwinkleError(f"system_prompt has languages {sorted(unknown)}; known: {', '.join(PROMPT_LANGS)}")
