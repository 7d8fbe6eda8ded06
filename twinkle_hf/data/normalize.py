"""Turn one row of a table into a canonical row ``(id, subject, question, choices, answer)``,
given its :class:`~twinkle_hf.data.layouts.Layout`; a row that cannot be read raises :class:`BadRow`
(:mod:`twinkle_hf.data.load` adds the file and row and applies ``on_bad_row``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..schema import LETTERS, MAX_CHOICES, MIN_CHOICES, letter_to_index
from .layouts import HELLASWAG, NA_PADDING, Layout


class BadRow(Exception):
    """A row that cannot be normalised; :mod:`twinkle_hf.data.load` adds the file and row."""

    def __init__(self, column: str, value: Any, problem: str, one_based: bool = False) -> None:
        text = repr(value)
        shown = text if len(text) <= 80 else text[:77] + "..."  # one cell must not flood stderr
        super().__init__(f"column {column!r}: {problem} (value: {shown})")
        self.one_based = one_based  # an integer answer equal to the number of options


def normalize_row(
    data: Mapping[str, Sequence[Any]], i: int, layout: Layout
) -> tuple[str | None, str | None, str, list[str], int]:
    """Row ``i`` as ``(id, subject, question, choices, answer)``; raises :class:`BadRow`.

    Question and option texts are kept exactly as given (the prompt formatter strips the question).
    """
    row_id = _text(data, i, layout.id, "id") if layout.id else None
    subject = _text(data, i, layout.subject, "subject", True) if layout.subject else None
    question = _text(data, i, layout.question, "question")
    choices, labels = _choices(data, i, layout)
    if layout.kind == HELLASWAG:
        question, choices = hellaswag_texts(data, i, choices)
    _check_count(choices, layout)
    answer = _answer(data[layout.answer][i], layout, len(choices), labels)
    if layout.drop_na_padding:
        # MMLU-Pro's own loader drops "N/A" options; only trailing ones go, so indices stay valid.
        while len(choices) > answer + 1 and choices[-1] == NA_PADDING:
            choices.pop()
        _check_count(choices, layout)
    return row_id, subject, question, choices, answer


def hellaswag_preprocess(text: str) -> str:
    """lm-eval's hellaswag ``preprocess``: strip, WikiHow's " [title]" as ". ", other [brackets] dropped,
    double spaces made single (once, as lm-eval does)."""
    text = text.strip().replace(" [title]", ". ")
    return re.sub("\\[.*?\\]", "", text).replace("  ", " ")


def hellaswag_texts(data: Mapping[str, Sequence[Any]], i: int, endings: list[str]) -> tuple[str, list[str]]:
    """A HellaSwag row's question and options as lm-eval's hellaswag task builds them: ``activity_label
    + ": " + ctx_a + " " + ctx_b.capitalize()``, and each ending, preprocessed."""
    context = _text(data, i, "ctx_a", "context", True) + " " + _text(data, i, "ctx_b", "context", True).capitalize()
    question = hellaswag_preprocess(_text(data, i, "activity_label", "activity label") + ": " + context)
    return question, [hellaswag_preprocess(e) for e in endings]


def _check_count(choices: list[str], layout: Layout) -> None:
    if not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
        limit = f"at most {MAX_CHOICES} (A-Z)" if len(choices) > MAX_CHOICES else \
            f"at least {MIN_CHOICES}"
        raise BadRow("|".join(layout.choices), choices,
                     f"{len(choices)} options, but a question needs {limit}")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(
    data: Mapping[str, Sequence[Any]], i: int, column: str, what: str, empty_ok: bool = False
) -> str:
    """A cell as text: missing (None/NaN) and, unless ``empty_ok``, blank cells are bad."""
    value = data[column][i]
    if _missing(value):
        raise BadRow(column, value, f"missing {what}")
    if isinstance(value, (Mapping, list, tuple)):  # JSON: str() of it would be a silent mess
        raise BadRow(column, value, f"{what} is a {type(value).__name__}, not text")
    text = value if isinstance(value, str) else str(value)
    if not empty_ok and not text.strip():
        raise BadRow(column, value, f"empty {what}")
    return text


def _choices(
    data: Mapping[str, Sequence[Any]], i: int, layout: Layout
) -> tuple[list[str], list[str] | None]:
    """Option texts, plus the labels when the options come as ``{text, label}`` (ARC)."""
    if len(layout.choices) > 1:
        return [_text(data, i, column, "option text") for column in layout.choices], None
    column = layout.choices[0]
    raw = value = data[column][i]
    labels = None
    if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
        value = _json_or_none(value)  # a list column that went through a CSV file
    if isinstance(value, Mapping) and "text" in value and "label" in value:
        value, labels = value["text"], value["label"]
        if not isinstance(labels, (list, tuple)) or len(labels) != len(value or ()):
            raise BadRow(column, raw, "'label' must be a list as long as 'text'")
        labels = [str(label).strip() for label in labels]
    if not isinstance(value, (list, tuple)):
        raise BadRow(column, raw, "options must be a list (or a {text, label} struct)")
    texts: list[str] = []
    for item in value:
        if isinstance(item, (Mapping, list, tuple)):
            raise BadRow(column, raw, f"option {len(texts) + 1} is a {type(item).__name__}, "
                                      f"not text")
        texts.append("" if _missing(item) else item if isinstance(item, str) else str(item))
        if not texts[-1].strip():
            raise BadRow(column, raw, f"option {len(texts)} is missing or empty")
    return texts, labels


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
        return None


def _answer(value: Any, layout: Layout, n: int, labels: list[str] | None) -> int:
    """The gold option's 0-based index, checked against the number of options."""
    column, mode = layout.answer, layout.answer_mode
    if _missing(value) or (isinstance(value, str) and not value.strip()):
        raise BadRow(column, value, "missing answer")
    index: int | None = None
    if labels is not None and str(value).strip() in labels:
        index = labels.index(str(value).strip())
    elif mode == "label":
        problem = "options are not a {text, label} struct" if labels is None else "not a label"
        raise BadRow(column, value, f"answer is {problem} (labels: {labels})")
    if index is None and mode in ("index", "auto"):
        index = _as_int(value)
    if index is None and mode in ("letter", "auto") and isinstance(value, str):
        index = _letter_or_none(value)
    if index is None:
        expected = {"letter": "an option letter", "index": "a 0-based option index"}.get(
            mode, "an option letter, a 0-based index or a label")
        if mode == "letter" and _as_int(value) is not None:
            expected += (" (it is a number: to read 0-based option indices, map the column "
                         f"explicitly, e.g. --column-map answer={column})")
        raise BadRow(column, value, f"answer is not {expected}")
    if not 0 <= index < n:
        problem = f"answer is not among the {n} options A-{LETTERS[n - 1]}"
        if index == n and _as_int(value) is not None:  # 1..n instead of 0..n-1, the usual slip
            problem += (f"; answers look 1-based (found {index} = the number of options); "
                        f"answers must be 0-based indices or letters")
            raise BadRow(column, value, problem, one_based=True)
        raise BadRow(column, value, problem)
    return index


def zero_based_answers(values: Sequence[Any]) -> bool:
    """Whether an answer column holds a 0 (as an integer) anywhere: proof that it is 0-based."""
    return any(_as_int(v) == 0 for v in values)


def _letter_or_none(value: str) -> int | None:
    try:
        return letter_to_index(value)
    except ValueError:
        return None


def _as_int(value: Any) -> int | None:
    """An int from an int, an integral float or a digit string; None otherwise (bools excluded)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None
