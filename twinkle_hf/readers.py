"""Read one table file (CSV/TSV, JSON/JSON Lines, Parquet) into raw cells.

Cells stay as given (CSV as text: "None" and "NA" are answers, not gaps), and each table knows how
to name a row in an error message, counting records that span several lines.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import TwinkleError
from .layouts import MMLU_COLUMNS, headerless_mmlu


@dataclass(frozen=True)
class Table:
    """One file (or hub split) as columns of raw cells, and how to name a row in messages."""

    where: str
    columns: list[str]
    data: dict[str, list[Any]]
    n_rows: int
    subject: str  # the subject when the table has no subject column
    locate: Callable[[int], str]  # 0-based data row -> "row 5 (header not counted; line 6)"


def decode(path: Path) -> str:
    """The file's text: UTF-8, with or without a byte-order mark."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TwinkleError(f"{path}: the file is not UTF-8 text (byte {exc.start}: {exc.reason});"
                           f" convert it to UTF-8, e.g. iconv -f <encoding> -t UTF-8") from None
    if not text.strip():
        raise TwinkleError(f"{path}: the file is empty")
    return text


def read_csv(path: Path, sep: str, subject: str, cmap: Mapping[str, str] | None) -> Table:
    """Every cell as text (no NA parsing: "None" and "NA" are answers, not gaps)."""
    text = decode(path)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, header=None, dtype=str,
                            keep_default_na=False, na_filter=False)
    except ValueError as exc:  # pandas' ParserError and EmptyDataError are ValueErrors
        kind = path.suffix[1:].upper()
        raise TwinkleError(f"{path}: cannot be parsed as {kind}: {exc}") from None
    first = [str(cell) for cell in frame.iloc[0]]
    header = not headerless_mmlu(first, cmap)
    columns = first if header else list(MMLU_COLUMNS)
    if len(set(columns)) < len(columns):
        raise TwinkleError(f"{path}: the header repeats a column name ({', '.join(columns)})")
    body = frame.iloc[1:] if header else frame
    data = {column: body.iloc[:, j].tolist() for j, column in enumerate(columns)}
    starts = functools.cache(lambda: record_lines(text, sep))  # only needed for messages
    skip, note = (1, "header not counted; ") if header else (0, "")
    return Table(str(path), columns, data, len(body), subject,
                  lambda i: f"row {i + 1} ({note}starts on line {starts()[i + skip]})")


def record_lines(text: str, sep: str) -> list[int]:
    """The line each CSV record starts on (records may span lines; blank lines are skipped)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    starts, line = [], 1
    for record in reader:
        if record:
            starts.append(line)
        line = reader.line_num + 1
    return starts


def read_json(path: Path, subject: str) -> Table:
    """JSON Lines, a JSON array of objects, or an object of columns; nested values kept."""
    text = decode(path)
    records = json_document(path, text) if path.suffix.lower() == ".json" else None
    records, lines = (records, None) if records is not None else json_lines(path, text)
    if not records:
        raise TwinkleError(f"{path}: the file holds no rows")
    columns = list(dict.fromkeys(key for record in records for key in record))
    data = {column: [record.get(column) for record in records] for column in columns}
    return Table(str(path), columns, data, len(records), subject,
                  lambda i: f"row {i + 1}" + (f" (line {lines[i]})" if lines else ""))


def json_document(path: Path, text: str) -> list[dict[str, Any]] | None:
    """Records of a whole-file JSON document; None when the text is not one (JSON Lines?)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    columns = list(value.values()) if isinstance(value, dict) else []
    if columns and all(isinstance(v, list) and len(v) == len(columns[0]) for v in columns):
        value = [dict(zip(value, row, strict=True)) for row in zip(*columns, strict=True)]
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TwinkleError(f"{path}: expected a JSON array of objects, one per question")
    return value


def json_lines(path: Path, text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Records of a JSON Lines text and the line of each (blank lines skipped)."""
    records, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TwinkleError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise TwinkleError(f"{path}: line {number} is not a JSON object")
            records.append(record)
            lines.append(number)
    return records, lines


def read_parquet(path: Path, subject: str) -> Table:
    import pyarrow.parquet as pq

    try:
        data = pq.read_table(path).to_pydict()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TwinkleError(f"{path}: cannot be read as Parquet: {exc}") from None
    n_rows = len(next(iter(data.values()), []))
    return Table(str(path), list(data), data, n_rows, subject,
                  lambda i: f"row {i + 1} (index {i})")
