"""Scoring methods and how a combined one splits: ``--method A+B`` runs A and B on the same
questions. Kept apart from the config so that each combined method is one entry here."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import TwinkleError
from ..schema import CLOZE  # each option's text scored as a continuation (CF: no letters, no positions)

LETTER_METHODS = ("logit",)  # the label's next-token probability (MCF: letters shown with the options)
GENERATION_METHODS = ("box", "pattern", "regex")  # the model writes, the letter is extracted
# both formulations on the same questions; the letter scored and the letter written, for the same prompts
COMBINED = ("logit+cloze",) + tuple(f"logit+{m}" for m in GENERATION_METHODS)
PROBES = ("choices-only",)  # --probe: each prompt scored again without its question (Balepur et al. 2024)
METHODS = LETTER_METHODS + GENERATION_METHODS + (CLOZE,) + COMBINED


def split_method(method: str) -> tuple[str, str | None]:
    """``"logit+cloze"`` -> ``("logit", "cloze")``; a single method -> ``(method, None)``. The first
    part decides how letters are scored (or, for ``cloze`` alone, that none are)."""
    if method not in METHODS:
        raise TwinkleError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    first, _, second = method.partition("+")
    return first, second or None


def letter_method(method: str) -> str | None:
    """How the letters are scored (``logit``, ``box``, ...); None for ``cloze`` alone."""
    first = split_method(method)[0]
    return None if first == CLOZE else first


def scores_cloze(method: str) -> bool:
    """Whether the run scores the option texts as continuations (``cloze`` or ``X+cloze``)."""
    return CLOZE in split_method(method)


def answer_method(method: str) -> str | None:
    """The generation half of ``logit+box|pattern|regex`` (the model also writes its answer); else None."""
    second = split_method(method)[1]
    return second if second in GENERATION_METHODS else None


def uses_regex(method: str) -> bool:
    """Whether the letter is read with --answer-regex (``regex`` or ``logit+regex``)."""
    return "regex" in split_method(method)


def check_probe(probe: str | None, method: str) -> None:
    """--probe runs with the letter probabilities of --method logit alone."""
    if probe is None:
        return
    if probe not in PROBES:
        raise TwinkleError(f"probe must be one of {', '.join(PROBES)}; got {probe!r}")
    if method != "logit":
        raise TwinkleError(f"--probe {probe} compares the letter probabilities of --method logit alone; run the "
                           f"probe with --method logit (the default), apart from --method {method}")


def check_chat_template(cfg: Any, tokenizer: Any) -> None:
    """``--method logit+box|pattern|regex`` asks through the chat template unless --no-chat-template:
    a tokenizer without one is refused (the CLI checks it before any weights are loaded)."""
    written = answer_method(cfg.method)
    if written and cfg.apply_chat_template is not False and not getattr(tokenizer, "chat_template", None):
        raise TwinkleError(f"--method {cfg.method} compares the letter an instruct model scores with the one it "
                           f"writes, asked through its chat template, and this tokenizer has none: use a chat model, "
                           f"or run --method logit and --method {written} apart, or add --no-chat-template to "
                           f"compare both on plain prompts")


def letter_parts(cfg: Any, tokenizer: Any) -> list[Any]:
    """The configs the letter prompts are prepared with (``cfg``: an EvalConfig).

    One, the run's own; for ``logit+box|pattern|regex``, two: the scored half (``--method logit``)
    and the written half (``--method X``). Both run under the chat template, the way an instruct
    model is used, unless --no-chat-template."""
    written = answer_method(cfg.method)
    if written is None:
        return [cfg]
    check_chat_template(cfg, tokenizer)
    chat = cfg.apply_chat_template is not False
    return [dataclasses.replace(cfg, method="logit", answer_regex=None, apply_chat_template=chat),
            dataclasses.replace(cfg, method=written, apply_chat_template=chat)]
