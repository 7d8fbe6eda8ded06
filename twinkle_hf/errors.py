"""The one exception type that means "the user must fix something".

The CLI turns a :class:`TwinkleError` (and ``FileNotFoundError``) into one line on stderr and exit
code 2; anything else is a bug and keeps its traceback (exit 1).
"""

from __future__ import annotations


class TwinkleError(ValueError):
    """Bad usage or bad data. The message names the file/row/column/flag and says what to do."""
