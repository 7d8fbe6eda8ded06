"""Recognise a table's column layout: which column holds the question, the options, the answer
(and the subject and id); normalize.py turns a row into a canonical row with it.

Layouts are detected from column names, case-insensitively (docs/design.md, "Canonical row"); anything
else is described by a column map (``--column-map`` or the ``columns:`` block of the YAML config).
This module knows nothing about files: :mod:`twinkle_hf.data.load` reads them and reports bad rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TwinkleError
from ..schema import CANONICAL_COLUMNS, LETTERS, MIN_CHOICES

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
# What the layouts look for, per field (case-insensitive), and an example map entry for each.
LOOKED_FOR = {"question": ("'question'", "question=query"),
              "options": ("'choices', 'options', 'A', 'B', ... or 'option_a', 'option_b', ...",
                          "choices=opa|opb|opc|opd"),
              "answer": ("'answer', 'answerKey' or 'answer_index'", "answer=gold")}
NA_PADDING = "N/A"
# HellaSwag (Rowan/hellaswag): question and options as lm-eval's hellaswag task preprocesses them
HELLASWAG = "HellaSwag"
HELLASWAG_COLUMNS = ("activity_label", "ctx_a", "ctx_b", "endings", "label")


class UnmappedColumn(TwinkleError):
    """A column the column map names is not in a table (``where``, with these ``columns``): for a
    named benchmark, a folder of another layout (catalog.py says which it expected)."""

    def __init__(self, message: str, where: str, columns: Sequence[str]) -> None:
        super().__init__(message)
        self.where, self.columns = where, tuple(columns)


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
            missing = _missing_fields(lookup)
            if 0 < len(missing) < len(LOOKED_FOR):  # none of them at all: the layout is simply unknown
                raise TwinkleError(
                    f"{where}: " + "; ".join(f"no {field} column: looked for {LOOKED_FOR[field][0]} (any case)"
                                             for field in missing)
                    + f"; {found}. Name {'it' if len(missing) == 1 else 'them'}, e.g. --column-map "
                    f"{','.join(LOOKED_FOR[field][1] for field in missing)} (or a 'columns:' block in the YAML config)")
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
    else:  # the option columns a layout would take, so that a map may name only what is missing
        fields["choices"] = _option_columns(lookup) or None
    for key, value in column_map.items():
        names = [name.strip() for name in value.split("|")]
        for name in names:
            if name.lower() not in lookup:
                raise UnmappedColumn(f"{where}: column {name!r} from the column map is not in the file ({found})",
                                     where, columns)
        actual = tuple(lookup[name.lower()] for name in names)
        fields[key] = actual if key == "choices" else actual[0]
    missing = [key for key in ("question", "choices", "answer") if not fields[key]]
    if missing:
        raise TwinkleError(f"{where}: the column map does not say which column holds "
                           f"{' and '.join(missing)} ({found}); e.g. --column-map {EXAMPLE_MAP}")
    kept = detected if detected is not None and not {"answer", "choices"} & set(column_map) else None
    return Layout("column map", answer_mode=kept.answer_mode if kept else "auto", **fields,
                  drop_na_padding=kept is not None and kept.drop_na_padding)


def _option_columns(lookup: Mapping[str, str]) -> tuple[str, ...]:
    """The columns a known layout would read the options from (none found: empty)."""
    for name in ("choices", "options"):
        if name in lookup:
            return (lookup[name],)
    runs = [_letter_run(lookup, prefix) for prefix in ("option_", "")]
    return next((run for run in runs if len(run) >= MIN_CHOICES), ())


def _missing_fields(lookup: Mapping[str, str]) -> list[str]:
    """The fields no column of any known layout holds (by the names in LOOKED_FOR)."""
    found = {"question": "question" in lookup, "options": bool(_option_columns(lookup)),
             "answer": any(name in lookup for name in ("answer", "answerkey", "answer_index"))}
    return [field for field, present in found.items() if not present]


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
    if set(HELLASWAG_COLUMNS) <= set(lookup):  # the question is built from three columns (normalize.py)
        return Layout(HELLASWAG, lookup["ctx_a"], (lookup["endings"],), lookup["label"], "index",
                      id=_first(lookup, ("ind", *ID_COLUMNS)))
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
