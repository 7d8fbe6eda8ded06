"""Question and option cells as Twinkle Eval 2.10 shows them (``prompt_style: twinkle``).

Why a second view of the cells: Twinkle Eval reads a CSV/TSV with pandas' default ``read_csv``
(a header row, a type inferred per column, the default NA values) and a Parquet/Arrow file through
pandas (``pd.read_parquet`` / ``to_pandas()``), then writes each option as ``f"{K}: {value}"``, i.e.
``str()`` of the pandas-typed cell. So "1.50" is shown as "1.5", "2" in a column that also holds "0.5"
as "2.0", an "NA"/"None"/empty cell as "nan", "true" as "True" (``datasets/file.py`` ``_load_data``,
``runners/evaluator.py`` ``build_question_text``). twinkle_hf reads every cell as written
(:mod:`twinkle_hf.data.readers`). The gold answer, ids, fingerprints and lm-eval prompts use those
cells; only the text a Twinkle-style prompt shows comes from this view. It lives in the data layer
because only the reader knows how a file was read; the prompt style just picks it.

JSON/JSON Lines need no second view: Twinkle's ``json.load`` gives the very values the reader keeps,
and ``str()`` of them is what :mod:`twinkle_hf.data.normalize` writes (2.0 -> "2.0", true -> "True").
A missing or empty cell (JSON null, an empty CSV cell) in the question or an option stays a bad row,
as it is for every prompt style, though Twinkle Eval would show it as "None" / "nan".
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

Typed = Mapping[str, Sequence[Any]]  # column -> Twinkle's cells (pandas-typed), per data row


def csv_cells(text: str, sep: str, columns: Sequence[str], n_rows: int) -> Typed | None:
    """A CSV/TSV with a header row as Twinkle Eval reads it (``pd.read_csv(path, sep=sep)``), by the
    reader's column names, position for position; None when pandas sees another shape of table."""
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep)
    except ValueError:  # the reader's own parse succeeded; a typed parse that fails shows nothing else
        return None
    return _by_position(frame, columns, n_rows)


def frame_cells(read: Callable[[], pd.DataFrame], columns: Sequence[str], n_rows: int) -> Typed | None:
    """A Parquet/Arrow file as Twinkle Eval reads it (``pd.read_parquet`` / ``table.to_pandas()``)."""
    try:
        frame = read()
    except (OSError, ValueError, TypeError):
        return None
    return _by_position(frame, columns, n_rows)


def _by_position(frame: pd.DataFrame, columns: Sequence[str], n_rows: int) -> Typed | None:
    if frame.shape != (n_rows, len(columns)):
        return None
    return {column: frame.iloc[:, j].tolist() for j, column in enumerate(columns)}


class CellChange(NamedTuple):
    """A column whose cells Twinkle Eval shows otherwise than written: the first such cell, how many."""

    column: str
    dtype: str  # pandas' type for the column, e.g. float64
    written: str
    shown: str
    cells: int


class TwinkleCells:
    """One file's Twinkle view of its question and option columns, and the changes it makes, for the
    notice. Options in one list column (``choices``) are left as written: each row's list reaches
    Twinkle as its own values, whose ``str()`` is the reader's (a null item makes the row bad anyway)."""

    def __init__(self, typed: Typed, question: str, options: Sequence[str]) -> None:
        self.typed = typed
        self.question = question
        self.options = list(options) if len(options) > 1 else []
        self.changes: dict[str, CellChange] = {}

    def texts(self, i: int, question: str, choices: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
        """Row ``i``'s question and options as Twinkle Eval shows them; None when they are as written."""
        if self.options and len(choices) != len(self.options):
            return None
        columns = [self.question, *self.options]
        written = [question, *(choices if self.options else [])]
        shown = [str(self.typed[c][i]) for c in columns]
        if shown == written:
            return None
        for column, w, s in zip(columns, written, shown):
            if w != s:
                old = self.changes.get(column)
                self.changes[column] = old._replace(cells=old.cells + 1) if old else \
                    CellChange(column, pd.Series(self.typed[column]).infer_objects().dtype.name, w, s, 1)
        return shown[0], tuple(shown[1:]) if self.options else tuple(choices)

    def found(self) -> tuple[CellChange, ...]:
        """The columns whose cells differ, in the file's order of question and options."""
        return tuple(self.changes[c] for c in [self.question, *self.options] if c in self.changes)


def change_notice(where: str, changes: Sequence[CellChange]) -> str:
    """The run's one notice for a file whose cells pandas types (see the module docstring)."""
    parts = [(f"column {c.column} is {c.dtype} to pandas, so Twinkle Eval shows {c.written!r} as {c.shown!r}"
              if c.shown != "nan" else f"column {c.column}: pandas reads {c.written!r} as a missing value, so "
              f"Twinkle Eval shows it as 'nan'") + (f" ({c.cells} cells differ)" if c.cells > 1 else "")
             for c in changes]
    return f"{where}: {'; '.join(parts)}; these prompts do the same"
