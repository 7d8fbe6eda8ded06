"""Twinkle Eval config files, read as they are (its v2.8.0 layout), translated into EvalConfig keys.

Twinkle Eval evaluates models behind an API; twinkle_hf runs them locally. A Twinkle config has the
sections ``llm_api``, ``model``, ``evaluation``, ``distributed``, ``environment``, ``logging`` and
``google_services``; :func:`translate` maps what has a meaning here and lists the rest as ignored
(never an error). API settings mean nothing for local inference, and ``api_key`` is never copied,
printed or written anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TwinkleError
from .checks import PROMPT_LANGS
from .overrides import matching_prefix

SECTIONS = ("llm_api", "model", "evaluation", "distributed", "environment", "logging", "google_services")
METHODS = {"logit": "logit", "box": "box", "pattern": "pattern", "custom_regex": "regex"}
TWINKLE_DEFAULT_LANG = "zh"  # Twinkle Eval's prompt language for datasets its map does not name
# evaluation keys translated below; every other key of the file is reported as ignored
_EVALUATION = ("dataset_paths", "evaluation_method", "system_prompt", "datasets_prompt_map", "system_prompt_enabled",
               "repeat_runs", "shuffle_options", "samples_per_question", "pass_k", "strategy_config",
               "dataset_overrides")
# what a dataset_overrides entry may set (Twinkle's evaluation keys, and the model's sampling ones)
# (a system_prompt there is not: Twinkle Eval reads it from the evaluation section only)
_OVERRIDE = ("evaluation_method", "method", "strategy_config", "shuffle_options", "repeat_runs", "samples_per_question",
             "pass_k", "system_prompt_enabled", "temperature", "top_p", "max_tokens")
_MODEL = ("name", "temperature", "top_p", "max_tokens", "extra_body")


def is_twinkle_config(data: Any) -> bool:
    """A Twinkle Eval config: a mapping with an ``evaluation`` section and an ``llm_api`` or
    ``model`` section (twinkle_hf's own configs are flat and have neither)."""
    return (isinstance(data, Mapping) and isinstance(data.get("evaluation"), Mapping)
            and (isinstance(data.get("llm_api"), Mapping) or isinstance(data.get("model"), Mapping)))


@dataclass
class Translated:
    """EvalConfig keys from a Twinkle config, the dotted keys it ignored, and notes on choices made."""

    values: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def describe(self, path: Any) -> list[str]:
        """What a user should be told once: that the file was read as a Twinkle config, what it
        ignored (names only: no value, so no api_key), and the choices made."""
        lines = [f"{path}: a Twinkle Eval config; read as {', '.join(f'{k}={v!r}' for k, v in self.values.items())} "
                 f"(flags on the command line override these)"]
        if self.ignored:
            lines.append(f"ignored (no meaning for local inference, or not supported): {', '.join(self.ignored)}")
        return lines + self.notes


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, Mapping):
        raise TwinkleError(f"Twinkle config: section {name!r} must be a mapping; got {type(value).__name__}")
    return value


def _paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TwinkleError(f"Twinkle config: evaluation.dataset_paths must be a folder or a list of folders; got {value!r}")


def _languages(paths: tuple[str, ...], prompt_map: Mapping[str, Any]) -> dict[str, str]:
    """Each evaluated path's prompt language (Twinkle's default: zh)."""
    return {p: str(prompt_map.get(p, prompt_map.get(p.rstrip("/"), TWINKLE_DEFAULT_LANG))) for p in paths}


def resolve_system_prompt(ev: Mapping[str, Any], lang: str, enabled: bool) -> str | None:
    """The system message Twinkle Eval sends for a dataset of language ``lang`` (its ``core/prompts.py``).

    None when disabled or unset; a string as it is. Per language: that language's, else zh's, else
    the only one set; a language set to null or blank means none (no fallback). Always stripped,
    and blank means none."""
    value = ev.get("system_prompt")
    if not enabled or value is None:
        return None
    if isinstance(value, Mapping):
        missing = object()
        value = value.get(lang, value.get("zh", missing))
        if value is missing:
            defined = [v for v in ev["system_prompt"].values() if v is not None and str(v).strip()]
            value = defined[0] if len(defined) == 1 else None
        if value is None:
            return None
    return str(value).strip() or None


def _system_prompts(ev: Mapping[str, Any], langs: Mapping[str, str], method: str, out: Translated) -> dict[str, Any]:
    """Each dataset path's system message, resolved as Twinkle Eval does (its ``dataset_overrides``
    may switch it off); its letter scoring sends none. The run's goes into ``out``, the others' are
    returned as per-dataset settings."""
    if method == "logit":
        if ev.get("system_prompt") and ev.get("system_prompt_enabled", True):
            out.notes.append("evaluation.system_prompt: Twinkle Eval's logit method sends no system prompt; "
                             "neither does this run")
        return {}
    overrides = ev.get("dataset_overrides") or {}
    enabled = {p: ev.get("system_prompt_enabled", True) for p in langs}
    for prefix, values in overrides.items():  # in order: the last that matches wins, as in Twinkle
        for p in langs:
            if isinstance(values, Mapping) and "system_prompt_enabled" in values and _under(p, str(prefix)):
                enabled[p] = bool(values["system_prompt_enabled"])
    prompts = {p: resolve_system_prompt(ev, lang, enabled[p]) for p, lang in langs.items()}
    first = next(iter(prompts.values()), None)
    if first is not None:
        out.values["system_prompt"] = first
    return {p: {"system_prompt": v} for p, v in prompts.items() if v != first}


def _under(path: str, prefix: str) -> bool:
    """Twinkle's override match: the dataset path starts with the prefix (both made absolute)."""
    norm = lambda x: os.path.normpath(os.path.abspath(x))
    return norm(path).startswith(norm(prefix))


def _regex(strategy: Mapping[str, Any]) -> str | tuple[str, ...]:
    """custom_regex's ``patterns``: one, or several tried in turn (each with one group around the letter)."""
    patterns = strategy.get("patterns")
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise TwinkleError("Twinkle config: evaluation_method custom_regex needs evaluation.strategy_config.patterns "
                           "(regular expressions with one group around the letter)")
    return patterns[0] if len(patterns) == 1 else tuple(patterns)


def _runs(ev: Mapping[str, Any], out: Translated) -> None:
    """repeat_runs with shuffle_options: that many seeded random orders; samples_per_question:
    answers drawn per prompt."""
    repeats, shuffle = ev.get("repeat_runs", 1), ev.get("shuffle_options", False)
    samples = ev.get("samples_per_question", 1)
    for name, value in (("repeat_runs", repeats), ("samples_per_question", samples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TwinkleError(f"Twinkle config: evaluation.{name} must be an integer >= 1; got {value!r}")
    if not isinstance(shuffle, bool):
        raise TwinkleError(f"Twinkle config: evaluation.shuffle_options must be true or false; got {shuffle!r}")
    if shuffle:
        out.values.update(shuffle=True, shuffle_mode="random", seeds=repeats)
    elif repeats > 1:
        out.notes.append(f"repeat_runs: {repeats} without shuffle_options repeats identical prompts; twinkle_hf "
                         f"draws them as --samples {repeats} (needs a temperature), or once when greedy")
        samples = samples * repeats
    if samples > 1:
        out.values["samples"] = samples
    pass_k = ev.get("pass_k", 1)
    if isinstance(pass_k, bool) or not isinstance(pass_k, int) or pass_k < 1:
        raise TwinkleError(f"Twinkle config: evaluation.pass_k must be an integer >= 1; got {pass_k!r}")
    out.values["pass_k"] = pass_k


def _override(prefix: str, values: Any, ev: Mapping[str, Any], model: Mapping[str, Any],
              out: Translated) -> dict[str, Any]:
    """One ``dataset_overrides`` entry as EvalConfig keys (only what it sets); the rest as ignored."""
    if not isinstance(values, Mapping):
        raise TwinkleError(f"Twinkle config: evaluation.dataset_overrides[{prefix!r}] must be a mapping of settings")
    where, o = f"evaluation.dataset_overrides[{prefix!r}]", dict[str, Any]()
    method = values.get("evaluation_method", values.get("method"))
    if method is not None:
        if method not in METHODS:
            raise TwinkleError(f"Twinkle config: {where}: evaluation_method {method!r} has no local equivalent; "
                               f"twinkle_hf evaluates with {', '.join(METHODS)}")
        o["method"] = METHODS[method]
        if method == "custom_regex":
            o["answer_regex"] = _regex(_section(values, "strategy_config") or _section(ev, "strategy_config"))
    merged = {**ev, **values}  # repeats and samples read together with the run's own
    shuffle, repeats = merged.get("shuffle_options", False), merged.get("repeat_runs", 1)
    if "shuffle_options" in values:
        o.update(shuffle=bool(shuffle), **({"shuffle_mode": "random"} if shuffle else {}))
    if shuffle and ("repeat_runs" in values or "shuffle_options" in values):
        o["seeds"] = repeats
    samples = merged.get("samples_per_question", 1) * (1 if shuffle else repeats)
    if {"samples_per_question", "repeat_runs", "shuffle_options"} & set(values):  # one greedy answer, else n
        o["samples"] = samples if merged.get("temperature", model.get("temperature", 0)) else 1
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("max_new_tokens", "max_tokens"),
                         ("pass_k", "pass_k")):
        if theirs in values:
            o[ours] = values[theirs]
    out.ignored += [f"{where}.{k}" for k in values if k not in _OVERRIDE]
    return o


def _method(ev: Mapping[str, Any], out: Translated) -> str:
    """The run's evaluation_method (Twinkle's name), translated into ``out``."""
    method = ev.get("evaluation_method", "box")
    if method not in METHODS:
        raise TwinkleError(f"Twinkle config: evaluation_method {method!r} has no local equivalent; twinkle_hf "
                           f"evaluates with {', '.join(METHODS)}")
    out.values["method"] = METHODS[method]
    if method == "custom_regex":
        out.values["answer_regex"] = _regex(_section(ev, "strategy_config"))
    elif method in ("pattern", "box") and _section(ev, "strategy_config").get("patterns"):
        out.notes.append(f"evaluation.strategy_config.patterns: Twinkle Eval's {method} reads with these instead of "
                         f"its own list; here neither reading uses them (evaluation_method custom_regex does)")
    return str(method)


def translate(data: Mapping[str, Any]) -> Translated:
    """The EvalConfig keys a Twinkle Eval config means here; see the README, "Coming from Twinkle Eval"."""
    out = Translated()
    model, ev = _section(data, "model"), _section(data, "evaluation")
    if model.get("name"):
        out.values["model"] = str(model["name"])
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("max_new_tokens", "max_tokens")):
        if model.get(theirs) is not None:
            out.values[ours] = model[theirs]
    extra = model.get("extra_body") or {}
    if isinstance(extra, Mapping) and isinstance(extra.get("chat_template_kwargs"), Mapping):
        out.values["chat_template_kwargs"] = dict(extra["chat_template_kwargs"])
        out.ignored += [f"model.extra_body.{k}" for k in extra if k != "chat_template_kwargs"]
    elif extra:
        out.ignored.append("model.extra_body")
    overrides: dict[str, dict[str, Any]] = {}
    method = _method(ev, out)
    if "dataset_paths" in ev:
        paths = _paths(ev["dataset_paths"])
        out.values["datasets"] = paths
        langs = _languages(paths, ev.get("datasets_prompt_map") or {})
        templates = {p: lang if lang in PROMPT_LANGS else "en" for p, lang in langs.items()}  # lm-eval style's
        out.notes += [f"datasets_prompt_map: {lang!r} for {p} picks its system prompt; lm-eval-style prompts "
                      f"(--prompt-style lm-eval) have templates for {' and '.join(PROMPT_LANGS)} only, so English"
                      for p, lang in langs.items() if lang not in PROMPT_LANGS]
        out.values["prompt_lang"] = templates[paths[0]]
        overrides.update({p: {"prompt_lang": t} for p, t in templates.items() if t != templates[paths[0]]})
        for p, values in _system_prompts(ev, langs, method, out).items():
            overrides.setdefault(p, {}).update(values)
    _runs(ev, out)
    if out.values.get("samples", 1) > 1 and not out.values.get("temperature"):
        out.notes.append("several samples per question with temperature 0 would repeat one greedy answer: "
                         "drawing one")
        out.values.pop("samples")
    for prefix, values in _section(ev, "dataset_overrides").items():
        overrides.setdefault(str(prefix), {}).update(_override(str(prefix), values, ev, model, out))
    for path, values in overrides.items():  # the longest prefix wins here: it holds what shorter ones set
        for prefix in sorted(overrides, key=len, reverse=True):
            if prefix != path and matching_prefix({prefix: None}, path) == prefix:
                for key, value in overrides[prefix].items():
                    values.setdefault(key, value)
    if overrides:
        out.values["dataset_overrides"] = overrides
    # its users' scripts read these files; its prompts, so that numbers compare with its history
    out.values.update(twinkle_results=True, prompt_style="twinkle", from_twinkle=True)
    out.ignored += [f"model.{k}" for k in model if k not in _MODEL]
    out.ignored += [f"evaluation.{k}" for k in ev if k not in _EVALUATION]
    for name in SECTIONS:
        if name not in ("model", "evaluation") and name in data:
            section = data[name]
            out.ignored += ([f"{name}.{k}" for k in section] if isinstance(section, Mapping) else [name])
    out.ignored += [k for k in data if k not in SECTIONS]
    return out
