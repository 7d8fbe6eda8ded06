"""Scoring methods and how a combined one splits: ``--method A+B`` runs A and B on the same
questions. Kept apart from the config so that each combined method is one entry here."""

from __future__ import annotations

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
