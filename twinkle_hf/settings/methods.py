"""Scoring methods and how a combined one splits: ``--method A+B`` runs A and B on the same
questions. Kept apart from the config so that each combined method is one entry here."""

from __future__ import annotations

from ..errors import TwinkleError
from ..schema import CLOZE  # each option's text scored as a continuation (CF: no letters, no positions)

LETTER_METHODS = ("logit",)  # the label's next-token probability (MCF: letters shown with the options)
GENERATION_METHODS = ("box", "pattern", "regex")  # the model writes, the letter is extracted
COMBINED = ("logit+cloze",)  # both formulations on the same questions
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
