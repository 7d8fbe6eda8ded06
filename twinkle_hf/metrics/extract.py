"""The answer letter in a generated text (generation mode, ``--method box|pattern|regex``).

Pure functions of the text, the number of options k and the method. Reasoning is set aside first:
text inside complete ``<think>…</think>`` blocks (also ``<reason>``, ``<reasoning>``) is never read,
only what follows the last closing tag. Every rule then reads the *last* statement it finds (reasoning
models restate and correct themselves), and a letter beyond the question's k options is no answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ..schema import LETTERS

_TAGS = "think|reasoning|reason"
_CLOSE = re.compile(rf"</\s*(?:{_TAGS})\s*>", re.IGNORECASE)
_OPEN = re.compile(rf"<\s*(?:{_TAGS})\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    """What one generated text yields: the displayed option index (-1: none found), the text read
    for it, and the reasoning set aside."""

    pred: int
    answer_text: str
    reasoning: str

    @property
    def parsed(self) -> bool:
        return self.pred >= 0


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, answer text). After the last closing tag is the answer; before it, reasoning
    (a template that opens ``<think>`` in the prompt leaves only the closing tag in the output). An
    opening tag never closed (cut off while thinking) makes the rest reasoning."""
    closes = list(_CLOSE.finditer(text))
    if closes:
        last = closes[-1]
        reasoning = _OPEN.sub("\n", _CLOSE.sub("\n", text[:last.start()]))
        return reasoning.strip(), text[last.end():]
    opened = _OPEN.search(text)
    if opened:
        return text[opened.end():].strip(), text[:opened.start()]
    return "", text


def _letter(candidate: str, k: int) -> int:
    """The option index of a one-letter answer among the first k letters, else -1."""
    candidate = candidate.strip()
    return LETTERS.index(candidate) if len(candidate) == 1 and candidate in LETTERS[:k] else -1


# ---- box: \boxed{C}, \box{C}, \boxed{\text{C}}, \boxed{(C)}, \boxed{C. Paris} ------------------------
_BOX = re.compile(r"\\box(?:ed)?\s*\{")
_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mathit|rm|bf)\s*\{([^{}]*)\}")


def _boxes(text: str) -> list[tuple[re.Match[str], str]]:
    """Every ``\\boxed{...}`` / ``\\box{...}`` with balanced braces, in order: (its opening, contents)."""
    found = []
    for m in _BOX.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            found.append((m, text[m.end():i - 1]))
    return found


def _box_letter(content: str, k: int) -> int:
    """``C``, ``(C)``, ``\\text{C}``, ``C.``, ``C. option text``, ``C) text`` -> C."""
    for _ in range(3):
        content = _WRAPPERS.sub(r"\1", content)
    content = content.strip().strip("$*").strip()
    m = re.fullmatch(r"[(\[]?\s*([A-Z])\s*[)\]]?(?:\s*[.:)]\s*.*|\s*)", content, re.DOTALL)
    return _letter(m.group(1), k) if m else -1


def extract_box(text: str, k: int) -> int:
    """The letter in the last box that holds one (-1: none)."""
    for _, content in reversed(_boxes(text)):
        index = _box_letter(content, k)
        if index >= 0:
            return index
    return -1


# ---- pattern: what models write when asked for "Answer: X" / "答案：X" ------------------------------
# After NFKC: full-width letters, colons and brackets are ASCII. L is one capital letter standing
# alone (so "Answer" is not read as A, nor "The answer is Therefore" as T).
_L = r"[(\[【]?\s*\**\s*([A-Z])\s*\**\s*[)\]】]?(?![A-Za-z0-9])"
_STATEMENTS = [re.compile(p, re.IGNORECASE if flags else 0) for p, flags in (
    # "Answer: C", "Final answer: (C)", "The answer is C", "the correct answer is **C**", "answer = C"
    (r"answer\s*(?:is|would\s+be|should\s+be|will\s+be|:|=|-)?\s*(?:is\s*)?(?:option|choice)?\s*:?\s*" + _L, 1),
    # "The correct option is C", "the best choice is (B)", "I choose C", "I'd go with B", "I will pick D"
    (r"(?:correct|right|best|final)\s+(?:option|choice)\s*(?:is|:)?\s*" + _L, 1),
    (r"\bi(?:\s+would|\s+will|'d|'ll)?\s+(?:choose|pick|select|go\s+with)\s*(?:option|choice)?\s*" + _L, 1),
    # "Option C is correct", "(C) is the correct answer", "C is correct"
    (r"(?:option|choice)?\s*" + r"[(\[]?([A-Z])[)\]]?" + r"\s+is\s+(?:the\s+)?(?:correct|right|best)", 0),
    # 答案：C, 答案是 C, 答案為（C）, 正確答案是C, 答案应该是 B, 答案選 C
    (r"答案\s*(?:應該|应该|应|應)?\s*(?:是|為|为|選|选|:)?\s*(?:選項|选项)?\s*:?\s*" + _L, 0),
    # 故選 C, 所以选B, 我選C, 應選 D, 選擇 B
    (r"(?:故|所以|因此|應|应|我|請|请)?(?:選擇|选择|選|选)\s*" + _L, 0),
    # 選項C / 选项 C as a verdict: at the end, or followed by 正確/正确 (not "選項A錯誤")
    (r"(?:選項|选项)\s*" + _L + r"(?=\s*(?:是|為|为)?\s*(?:正確|正确|$|[。.!！]))", 0),
    # "Option C." / "Choice (B)" ending the text
    (r"(?:option|choice)\s*" + _L + r"(?=\s*[.!]?\s*$)", 1),
)]
_BOLD = re.compile(r"\*\*\s*[(\[]?([A-Z])(?![A-Za-z0-9])[)\]]?\s*[.:)]?\s*(?:\*\*|[^*\n]{0,200}\*\*)")
_LINE_START = re.compile(r"^\s*[(\[]?([A-Z])(?:[)\].:、]|\s*$)", re.MULTILINE)


def _last_statement(text: str, k: int) -> int:
    """The letter of the statement that ends last in ``text`` (any rule, a ``\\boxed{C}`` too),
    -1 if none."""
    found = [(m.end(1), _letter(m.group(1), k)) for pattern in _STATEMENTS for m in pattern.finditer(text)]
    found += [(m.end(), _box_letter(content, k)) for m, content in _boxes(text)]
    found = [(end, index) for end, index in found if index >= 0]
    return max(found)[1] if found else -1


def extract_pattern(text: str, k: int) -> int:
    """The letter a free-form answer names, or -1.

    In turn: an explicit statement ("Answer: C", "答案是 C", ...; the last one), the last bold
    letter (``**C**``), a letter opening lines ("C. <option text>") when only one letter does, a
    bare letter. -1 when none of them names one of the k options."""
    text = unicodedata.normalize("NFKC", text)
    index = _last_statement(text, k)
    if index >= 0:
        return index
    bold = [_letter(m.group(1), k) for m in _BOLD.finditer(text)]
    bold = [b for b in bold if b >= 0]
    if bold:
        return bold[-1]
    starts = {_letter(m.group(1), k) for m in _LINE_START.finditer(text)} - {-1}
    return starts.pop() if len(starts) == 1 else -1


def extract_regex(text: str, k: int, patterns: Sequence[re.Pattern[str]]) -> int:
    """The first pattern (in the order given) with a match naming one of the k letters decides; of
    its matches, the last (-1: no pattern names a letter)."""
    for pattern in patterns:
        for m in reversed(list(pattern.finditer(text))):
            index = _letter(m.group(1) or "", k)
            if index >= 0:
                return index
    return -1


def extract(text: str, k: int, method: str, answer_regex: Sequence[re.Pattern[str]] | None = None) -> Extraction:
    """The displayed option a generated ``text`` names under ``method``, reasoning set aside."""
    reasoning, answer_text = split_reasoning(text)
    if method == "box":
        pred = extract_box(answer_text, k)
    elif method == "pattern":
        pred = extract_pattern(answer_text, k)
    elif method == "regex":
        if answer_regex is None:
            raise ValueError("method 'regex' needs answer_regex")
        pred = extract_regex(answer_text, k, answer_regex)
    else:
        raise ValueError(f"unknown extraction method {method!r}; choose from box, pattern, regex")
    return Extraction(pred, answer_text, reasoning)
