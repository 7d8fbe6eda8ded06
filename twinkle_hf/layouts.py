"""Recognise a table's column layout and turn one of its rows into a canonical row.

Layouts are detected from column names, case-insensitively (DESIGN.md, "Canonical row"); anything
else is described by a column map (``--column-map`` or the ``columns:`` block of the YAML config).
This module knows nothing about files: :mod:`twinkle_hf.data` reads them and reports bad rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TwinkleError
from .schema import CANONICAL_COLUMNS, LETTERS, MAX_CHOICES, MIN_CHOICES, letter_to_index

ID_COLUMNS = ("id", "sample_id", "question_id")
SUBJECT_COLUMNS = ("subject", "category")
# First-row cells that mark a CSV header. Single letters are left out on purpose: MMLU's
# header-less files hold answer letters ("A") and options that may read "A".."D".
HEADER_NAMES = frozenset(
    {"question", "answer", "answerkey", "answer_index", "choices", "options", "option_a"}
    | set(ID_COLUMNS) | set(SUBJECT_COLUMNS)
)
MMLU_COLUMNS = ("question", "A", "B", "C", "D", "answer")
EXAMPLE_MAP = "question=query,choices=opa|opb|opc|opd,answer=gold,subject=category"
NA_PADDING = "N/A"


@dataclass(frozen=True)
class Layout:
    """Which of a table's (actual) column names holds each canonical field."""

    kind: str
    question: str
    choices: tuple[str, ...]  # one column holding a list or {text, label}, or one per option
    answer: str
    answer_mode: str  # "letter" | "index" | "label" | "auto" (any of the three)
    subject: str | None = None
    id: str | None = None
    drop_na_padding: bool = False  # MMLU-Pro pads short option lists with "N/A"


class BadRow(Exception):
    """A row that cannot be normalised; :mod:`twinkle_hf.data` adds the file and row."""

    def __init__(self, column: str, value: Any, problem: str, one_based: bool = False) -> None:
        text = repr(value)
        shown = text if len(text) <= 80 else text[:77] + "..."  # one cell must not flood stderr
        super().__init__(f"column {column!r}: {problem} (value: {shown})")
        self.one_based = one_based  # an integer answer equal to the number of options


def parse_column_map(text: str) -> dict[str, str]:
    """``"question=query,choices=opa|opb,answer=gold"`` -> ``{"question": "query", ...}``."""
    if not text or not text.strip():
        raise TwinkleError(f"--column-map is empty; give key=column pairs, e.g. {EXAMPLE_MAP}")
    mapping: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or not key or not value:
            raise TwinkleError(f"--column-map entry {part.strip()!r} is not key=column; "
                               f"e.g. {EXAMPLE_MAP}")
        if key in mapping:
            raise TwinkleError(f"--column-map gives {key!r} twice; give each key once")
        mapping[key] = value
    return check_column_map(mapping)


def check_column_map(mapping: Mapping[str, Any]) -> dict[str, str]:
    """Validate a column map from the CLI or YAML (where ``choices`` may also be a list)."""
    out: dict[str, str] = {}
    for key, value in mapping.items():
        if key not in CANONICAL_COLUMNS:
            raise TwinkleError(f"unknown column-map key {key!r}; allowed: {', '.join(CANONICAL_COLUMNS)}")
        if key == "choices" and isinstance(value, (list, tuple)):
            value = "|".join(str(v) for v in value)
        names = [v.strip() for v in value.split("|")] if isinstance(value, str) else [""]
        if not all(names) or (key != "choices" and len(names) > 1):
            raise TwinkleError(
                f"column-map value {value!r} for {key!r} is not a column name; only 'choices' "
                f"may list several columns joined by '|' (e.g. choices=opa|opb|opc|opd)"
            )
        out[key] = "|".join(names)
    return out


def headerless_mmlu(cells: Sequence[str], column_map: Mapping[str, str] | None) -> bool:
    """Whether a CSV's first row is original MMLU data (no header): 6 cells, the last a letter,
    none of them a known column name."""
    mapped = {name for value in (column_map or {}).values() for name in value.split("|")}
    known = HEADER_NAMES | {name.lower() for name in mapped}
    if len(cells) != len(MMLU_COLUMNS) or any(c.strip().lower() in known for c in cells):
        return False
    return len(cells[-1].strip()) == 1 and cells[-1].strip().upper() in LETTERS


def detect_layout(
    columns: Sequence[str], column_map: Mapping[str, str] | None, where: str
) -> Layout:
    """The layout of a table with these columns; a column map overrides the fields it names."""
    lookup: dict[str, str] = {}
    for column in columns:
        lookup.setdefault(str(column).strip().lower(), column)
    detected = _detect(lookup)
    found = f"columns found: {', '.join(map(repr, columns))}"
    if not column_map:
        if detected is None:
            raise TwinkleError(
                f"{where}: cannot tell which columns hold the question, options and answer "
                f"({found}). Map them explicitly, e.g. --column-map {EXAMPLE_MAP} "
                f"(or a 'columns:' block in the YAML config)"
            )
        return detected
    fields: dict[str, Any] = {
        "question": lookup.get("question"), "choices": None, "answer": None,
        "subject": _first(lookup, SUBJECT_COLUMNS), "id": _first(lookup, ID_COLUMNS),
    }
    if detected is not None:
        fields.update(question=detected.question, choices=detected.choices, answer=detected.answer)
    for key, value in column_map.items():
        names = [name.strip() for name in value.split("|")]
        for name in names:
            if name.lower() not in lookup:
                raise TwinkleError(f"{where}: column {name!r} from the column map is not in "
                                   f"the file ({found})")
        actual = tuple(lookup[name.lower()] for name in names)
        fields[key] = actual if key == "choices" else actual[0]
    missing = [key for key in ("question", "choices", "answer") if not fields[key]]
    if missing:
        raise TwinkleError(f"{where}: the column map does not say which column holds "
                           f"{' and '.join(missing)} ({found}); e.g. --column-map {EXAMPLE_MAP}")
    kept = detected if detected is not None and not {"answer", "choices"} & set(column_map) else None
    return Layout("column map", answer_mode=kept.answer_mode if kept else "auto", **fields,
                  drop_na_padding=kept is not None and kept.drop_na_padding)


def _first(lookup: Mapping[str, str], names: Sequence[str]) -> str | None:
    return next((lookup[name] for name in names if name in lookup), None)


def _letter_run(lookup: Mapping[str, str], prefix: str) -> tuple[str, ...]:
    """Columns ``<prefix>a, <prefix>b, ...`` present without a gap, starting at A."""
    run: list[str] = []
    for letter in LETTERS.lower():
        if prefix + letter not in lookup:
            break
        run.append(lookup[prefix + letter])
    return tuple(run)


def _detect(lookup: Mapping[str, str]) -> Layout | None:
    """Match the documented layouts; None when nothing fits."""
    question = lookup.get("question")
    if question is None:
        return None
    extra: dict[str, Any] = {"subject": _first(lookup, SUBJECT_COLUMNS), "id": _first(lookup, ID_COLUMNS)}
    if "choices" in lookup and "answerkey" in lookup:
        return Layout("ARC", question, (lookup["choices"],), lookup["answerkey"], "label", **extra)
    if "choices" in lookup and "answer" in lookup:
        return Layout("HF MMLU", question, (lookup["choices"],), lookup["answer"], "auto", **extra)
    if "options" in lookup and ("answer_index" in lookup or "answer" in lookup):
        index = "answer_index" in lookup
        answer = lookup["answer_index" if index else "answer"]
        return Layout("MMLU-Pro", question, (lookup["options"],), answer,
                      "index" if index else "letter", **extra, drop_na_padding=True)
    for kind, prefix in (("Global-MMLU", "option_"), ("Twinkle/TMMLU+", "")):
        run = _letter_run(lookup, prefix)
        if len(run) >= MIN_CHOICES and "answer" in lookup:
            return Layout(kind, question, run, lookup["answer"], "letter", **extra)
    return None


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
    _check_count(choices, layout)
    answer = _answer(data[layout.answer][i], layout, len(choices), labels)
    if layout.drop_na_padding:
        # MMLU-Pro's own loader drops "N/A" options; only trailing ones go, so indices stay valid.
        while len(choices) > answer + 1 and choices[-1] == NA_PADDING:
            choices.pop()
        _check_count(choices, layout)
    return row_id, subject, question, choices, answer


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
