"""The one exception type that means "the user must fix something".

The CLI turns a :class:`TwinkleError` (and ``FileNotFoundError``) into one line on stderr and exit
code 2; anything else is a bug and keeps its traceback (exit 1).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any


class TwinkleError(ValueError):
    """Bad usage or bad data. The message names the file/row/column/flag and says what to do."""


def read_document(path: Path, parse: Callable[[str], Any], invalid: str, missing: str,
                  parse_errors: tuple[type[Exception], ...] = (ValueError,)) -> Any:
    """``parse`` of a UTF-8 text file (json.loads raises ValueErrors; yaml passes its YAMLError).
    A missing file is FileNotFoundError(``missing``); one that does not decode or parse is
    TwinkleError(``invalid`` with ``{err}`` filled in)."""
    if not path.is_file():
        raise FileNotFoundError(missing)
    caught: tuple[type[Exception], ...] = (UnicodeDecodeError, RecursionError, *parse_errors)
    try:
        return parse(path.read_text(encoding="utf-8"))
    except caught as err:
        raise TwinkleError(invalid.format(err=err)) from None


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one TwinkleError line, not the usage block.

    A bad value, an unknown or a missing flag: the line names the flag and what it accepts. The CLI
    prints it and exits 2 like any other usage error."""

    def error(self, message: str) -> Any:  # argparse: must not return
        raise TwinkleError(f"{message} (`{self.prog} --help` lists the flags)")
