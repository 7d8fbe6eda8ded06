"""Read one table file (CSV/TSV, JSON/JSON Lines, Parquet) into raw cells.

Cells stay as given (CSV as text: "None" and "NA" are answers, not gaps), and each table knows how
to name a row in an error message, counting records that span several lines. A CSV/TSV, Parquet or
Arrow table can also give its cells as Twinkle Eval reads them, typed by pandas (``typed``; see
:mod:`twinkle_hf.data.twinkle_cells`), for the texts of Twinkle-style prompts only.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import TwinkleError
from .layouts import MMLU_COLUMNS, headerless_mmlu
from .twinkle_cells import Typed, csv_cells, frame_cells


@dataclass(frozen=True)
class Table:
    """One file (or hub split) as columns of raw cells, and how to name a row in messages."""

    where: str
    columns: list[str]
    data: dict[str, list[Any]]
    n_rows: int
    subject: str  # the subject when the table has no subject column
    locate: Callable[[int], str]  # data row -> its name in messages (row_name)
    typed: Callable[[], Typed | None] | None = None  # the cells as Twinkle Eval reads them (pandas-typed)


def row_name(i: int, where: str = "") -> str:
    """Data row ``i`` as messages name it: counted from 0 without the header, as ``row`` in
    predictions.jsonl, with where it is in the file (``where``, e.g. its line) when known."""
    return f"row {i} (counted from 0, as `row` in predictions.jsonl{'; ' + where if where else ''})"


# Byte-order marks of the encodings a table is most often saved in by mistake (Excel's
# "Unicode text" is UTF-16). UTF-32 LE starts with UTF-16 LE's mark, so it is tested first.
BOMS = ((b"\xff\xfe\x00\x00", "UTF-32LE"), (b"\x00\x00\xfe\xff", "UTF-32BE"),
        (b"\xff\xfe", "UTF-16LE"), (b"\xfe\xff", "UTF-16BE"))
CONVERT = "convert it to UTF-8, e.g. iconv -f {} -t UTF-8 {} > fixed{}"


def decode(path: Path) -> str:
    """The file's text: UTF-8, with or without a byte-order mark. Anything else is an error that
    names the encoding when it can tell (a UTF-16/32 mark, or NUL bytes) and the line."""
    raw = path.read_bytes()
    for bom, encoding in BOMS:
        if raw.startswith(bom):
            raise TwinkleError(f"{path}: the file is {encoding} text, not UTF-8; "
                               + CONVERT.format(encoding[:6], path.name, path.suffix))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise TwinkleError(
            f"{path}: the file is not UTF-8 text (line {line}, byte {exc.start}: {exc.reason}); "
            + CONVERT.format("<its encoding, e.g. cp1252 or big5>", path.name, path.suffix)
        ) from None
    if "\x00" in text:  # UTF-16 without a mark decodes as "UTF-8" with a NUL after each ASCII byte
        line = text[:text.index("\x00")].count("\n") + 1
        raise TwinkleError(f"{path}: line {line} holds a NUL byte, so this is not a UTF-8 text "
                           f"table (UTF-16 without a byte-order mark?); "
                           + CONVERT.format("UTF-16LE", path.name, path.suffix))
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
        raise TwinkleError(f"{path}: cannot be parsed as {path.suffix[1:].upper()}: "
                           f"{parse_problem(text, sep, exc)}") from None
    first = [str(cell) for cell in frame.iloc[0]]
    header = not headerless_mmlu(first, cmap)
    columns = first if header else list(MMLU_COLUMNS)
    if len(set(columns)) < len(columns):
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        raise TwinkleError(f"{path}: the header repeats a column name ({', '.join(map(repr, repeated))}"
                           f" in {', '.join(map(repr, columns))}); give each column its own name")
    body = frame.iloc[1:] if header else frame
    data = {column: body.iloc[:, j].tolist() for j, column in enumerate(columns)}
    starts = functools.cache(lambda: record_lines(text, sep))  # only needed for messages
    skip, note = (1, "header not counted; ") if header else (0, "")

    def locate(i: int) -> str:
        lines = starts()
        where = f"starts on line {lines[i + skip]}" if i + skip < len(lines) else "line unknown"
        return row_name(i, note + where)

    # Twinkle Eval reads a header-less file's first row as its header, so it has no view of one
    typed = (lambda: csv_cells(text, sep, columns, len(body))) if header else None
    return Table(str(path), columns, data, len(body), subject, locate, typed)


def parse_problem(text: str, sep: str, exc: ValueError) -> str:
    """Why pandas could not parse ``text``, by line (pandas' own numbering skips some lines)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    records: list[tuple[int, int]] = []  # (first line, cells) per record
    line = 1
    with contextlib.suppress(csv.Error):
        for record in reader:
            if record:
                records.append((line, len(record)))
            line = reader.line_num + 1
    if "EOF inside string" in str(exc) and records:
        return f"a quote (\") opened in the record starting on line {records[-1][0]} is never closed"
    wide = next(((at, n) for at, n in records[1:] if records and n > records[0][1]), None)
    if wide:
        return (f"the record starting on line {wide[0]} has {wide[1]} cells but the first has "
                f"{records[0][1]}; quote cells that hold {sep!r}, '\"' or a line break")
    return " ".join(str(exc).split())


def record_lines(text: str, sep: str) -> list[int]:
    """The line each CSV record starts on (records may span lines; blank lines are skipped).

    Only used to word messages, so a file the csv module reads differently from pandas gives a
    shorter list (``locate`` then says the line is unknown) rather than an error of its own.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    starts, line = [], 1
    try:
        for record in reader:
            if record:
                starts.append(line)
            line = reader.line_num + 1
    except csv.Error:
        pass
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
                  lambda i: row_name(i, f"line {lines[i]}" if lines else ""))


def json_document(path: Path, text: str) -> list[dict[str, Any]] | None:
    """Records of a whole-file JSON document; None when the text is not one (JSON Lines?)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    except RecursionError:
        raise TwinkleError(f"{path}: the JSON is nested too deeply to be a table of questions") \
            from None
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
            except RecursionError:
                raise TwinkleError(f"{path}: line {number} is nested too deeply to be a question "
                                   f"record") from None
            if not isinstance(record, dict):
                raise TwinkleError(f"{path}: line {number} is not a JSON object")
            records.append(record)
            lines.append(number)
    return records, lines


def read_parquet(path: Path, subject: str) -> Table:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TwinkleError(f"{path}: cannot be read as Parquet: {exc}") from None
    data = table.to_pydict()
    return Table(str(path), list(data), data, table.num_rows, subject, row_name,
                 lambda: frame_cells(lambda: pd.read_parquet(path), list(data), table.num_rows))


def read_arrow(path: Path, subject: str) -> Table:
    """An Arrow IPC file: the random-access file format, or the stream format that `datasets`
    writes its cache and save_to_disk files in."""
    import pyarrow as pa

    try:
        try:
            table = pa.ipc.open_file(path).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_stream(path).read_all()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TwinkleError(f"{path}: cannot be read as an Arrow file (IPC file or stream): {exc}") from None
    data = table.to_pydict()
    return Table(str(path), list(data), data, table.num_rows, subject, row_name,
                 lambda: frame_cells(table.to_pandas, list(data), table.num_rows))


def portable_where(where: str, source: str) -> str:
    """A row's file as predictions.jsonl stores it.

    Relative to the dataset's root (the folder passed, or a file passed by itself: its name), so no
    home or machine path leaks into a shared result, and the file is the same wherever the data
    lies. An absolute path elsewhere: its name. Anything else (a hub id) is kept as it is."""
    root = Path(source)
    head, sep, tail = where.partition(" [")  # a saved dataset's "<folder> [split]"
    path = Path(head)
    if path == root:
        return root.name + sep + tail
    try:
        return path.relative_to(root).as_posix() + sep + tail
    except ValueError:
        return path.name + sep + tail if path.is_absolute() else where


def dir_name(path: Path, splits: tuple[str, ...]) -> str:
    """A directory's name; for a split folder (``mmlu/test``) or a ``data`` folder its parent's."""
    path = path.resolve()
    generic = path.name.lower() in splits or path.name.lower() == "data"  # mmlu/data -> "mmlu"
    return path.parent.name if generic and path.parent.name else path.name
