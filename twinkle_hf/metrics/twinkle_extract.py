"""Letters read exactly as Twinkle Eval 2.10 reads them (``--extractor twinkle``), to reproduce its numbers.

Twinkle Eval's ``pattern``, ``box`` and ``custom_regex`` extractors try a list of regular expressions in
order and take group 1 of the *first* match of the first pattern that matches anywhere; the scorer then
strips it and upper-cases it. Before that its evaluator keeps only what follows the last closing tag of
a complete ``<think>``/``<reason>``/``<reasoning>`` pair (the first pair kind present), and an empty or
blank text yields nothing. Its last-resort patterns read any capital followed by a character, so "The
answer is B" gives "T" and "Answer: C" gives "A": twinkle_hf's own rules (``extract.py``) are stricter,
and the default. The pattern lists below are copied from Twinkle Eval 2.10.0 (MIT licence,
``metrics/extractors/pattern.py`` and ``box.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..schema import LETTERS

PATTERNS = (
    r"correct answer is:\n\n\n([A-Z]).",
    r"correct answer is:\n\n([A-Z]).",
    r"correct answer is:\n([A-Z]).",
    r"正確的答案應該是:.*?\b([A-Z])\b",
    r"正确的答案应该是:.*?\b([A-Z])\b",
    r"正確的選項應為:.*?\b([A-Z])\b",
    r"正确的选项应为:.*?\b([A-Z])\b",
    r"正確的答案是（([A-Z])）",
    r"正确的答案是（([A-Z])）",
    r"答案應該是:\s?選?項?\s?([A-Z])",
    r"答案应该是:\s?选?项?\s?([A-Z])",
    r"答案是:\s?選?項?\s?([A-Z])",
    r"答案是:\s?选?项?\s?([A-Z])",
    r"答案應為:\s?選?項?\s?([A-Z])",
    r"答案应为:\s?选?项?\s?([A-Z])",
    r"答案為:\s?([A-Z])",
    r"答案应为：\s?([A-Z])",
    r"答案為：\s?([A-Z])",
    r"答案應該是:\s?([A-Z])",
    r"正確答案為 \*\*([A-Z])",
    r"正確答案為\(([A-Z])\)",
    r"答案應為:\s?([A-Z])",
    r"答案应为:\s?([A-Z])",
    r"答案是 \*\*([A-Z])",
    r"答案 ([A-Z]) 正確",
    r"選項 ([A-Z]) 正確",
    r"所以答案為([A-Z])",
    r"答案：\(([A-Z])\)",
    r"答案:\s?([A-Z])",
    r"答案：\s?([A-Z])",
    r"答案: ([A-Z]) ",
    r"答案([A-Z]) ",
    r"^選項([A-Z])",
    r"^选项([A-Z])",
    r"^選([A-Z])",
    r"^选([A-Z])",
    r"([A-Z]). ",
    r"([A-Z]).",
)
BOX_PATTERNS = (r"\\{1,2}box{([A-Z])}", r"\\{1,2}boxed{([A-Z])}")
_THINK_PAIRS = (("<think>", "</think>"), ("<reason>", "</reason>"), ("<reasoning>", "</reasoning>"))


def strip_think_blocks(text: str) -> str:
    """What Twinkle Eval reads of a reply: after the last closing tag of the first tag pair (any case)
    whose opening and closing tags both occur, stripped; the text as it is when none does."""
    lower = text.lower()
    for start, end in _THINK_PAIRS:
        if start in lower and end in lower:
            return text[lower.rfind(end) + len(end):].strip()
    return text


def twinkle_patterns(method: str, answer_regex: str | Sequence[str] | None = None) -> list[re.Pattern[str]]:
    """The expressions Twinkle Eval tries for ``method`` (box, pattern, regex = its custom_regex, whose
    ``strategy_config.patterns`` are ``answer_regex``), compiled as it compiles them (no flags)."""
    if method == "regex":
        if answer_regex is None:
            raise ValueError("method 'regex' needs answer_regex")
        return [re.compile(p) for p in ([answer_regex] if isinstance(answer_regex, str) else answer_regex)]
    if method not in ("box", "pattern"):
        raise ValueError(f"Twinkle Eval reads letters for box, pattern and regex, not {method!r}")
    return [re.compile(p) for p in (BOX_PATTERNS if method == "box" else PATTERNS)]


def twinkle_letter(text: str | None, patterns: Sequence[re.Pattern[str]]) -> str | None:
    """The answer Twinkle Eval reads from a reply.

    Group 1 of the first match of the first pattern that matches, stripped and upper-cased: any
    capital, even one no option has, or several letters from a custom pattern. None when the reply
    is empty or nothing matches."""
    if text:
        text = strip_think_blocks(text)
    if not isinstance(text, str) or not text.strip():
        return None
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            group = match.group(1)
            return None if group is None else group.strip().upper()
    return None


def letter_index(letter: str | None, k: int) -> int:
    """A letter as twinkle_hf's ``pred``: its option index among the first k, else -1 (no answer; a
    letter no option has, such as Twinkle's "T", is wrong either way)."""
    return LETTERS.index(letter) if letter and len(letter) == 1 and letter in LETTERS[:k] else -1
