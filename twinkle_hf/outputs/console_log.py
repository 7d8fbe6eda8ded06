"""``run.log`` in a run's output folder: what the console showed, plus warnings, as plain lines.

The log is written once the output folder exists (a run that fails before writing anything leaves
no folder behind, as before); until then its lines wait in memory.

Standard output and standard error are copied line by line; a progress bar's in-place updates
(carriage returns) keep only the state its line ends in, so the log holds one line per bar, not
thousands. Python warnings and the warnings of ``transformers``/``datasets``/``accelerate`` loggers
(which write to the stream they saw at import) reach it too. A resumed run appends to the log.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

LOG_NAME = "run.log"
LIBRARY_LOGGERS = ("transformers", "datasets", "accelerate", "huggingface_hub")


class _LazyFile:
    """``folder/run.log``, opened for appending once the folder exists (a run that fails before it
    writes anything leaves no folder behind); until then, lines wait in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.waiting: list[str] = []
        self.fh: IO[str] | None = None

    def write(self, text: str) -> int:
        if self.fh is None and self.path.parent.is_dir():
            self.fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self.fh.writelines(self.waiting)
            self.waiting = []
        if self.fh is None:
            self.waiting.append(text)
        else:
            self.fh.write(text)
        return len(text)

    def flush(self) -> None:
        if self.fh is not None:
            self.fh.flush()

    def close(self) -> None:
        self.write("")  # the folder may have appeared since the last line
        if self.fh is not None:
            self.fh.close()


class _Tee:
    """A text stream that writes through to ``stream`` and sends finished lines to ``log``."""

    def __init__(self, stream: TextIO, log: _LazyFile) -> None:
        self.stream, self.log, self.line = stream, log, ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        for piece in text.splitlines(keepends=True):
            if piece.endswith("\n"):
                self.log.write(self._settled(self.line + piece[:-1]) + "\n")
                self.line = ""
            else:
                self.line += piece
        self.log.flush()
        return len(text)

    @staticmethod
    def _settled(line: str) -> str:
        """What a line with carriage returns finally shows: the text after the last non-empty one."""
        parts = [p for p in line.split("\r") if p]
        return parts[-1] if parts else ""

    def flush(self) -> None:
        self.stream.flush()
        self.log.flush()

    def close_line(self) -> None:
        if self.line.strip("\r"):
            self.log.write(self._settled(self.line) + "\n")
        self.line = ""

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno, ... of the real stream
        return getattr(self.stream, name)


@contextlib.contextmanager
def console_log(folder: Path, command: list[str], enabled: bool = True,
                preface: Sequence[str] = ()) -> Iterator[None]:
    """Copy the console into ``folder/run.log`` for the duration (``enabled``: the main process);
    ``preface``: lines the console showed before (how a config file was read)."""
    if not enabled:
        yield
        return
    with contextlib.closing(_LazyFile(folder / LOG_NAME)) as log:
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        log.write(f"== {started}: twinkle-hf {' '.join(command)}\n")
        log.write("".join(f"{line}\n" for line in preface))
        out, err = _Tee(sys.stdout, log), _Tee(sys.stderr, log)
        handler = logging.StreamHandler(log)  # the libraries' own handlers already print to the console
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
        loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
        saved, shown = (sys.stdout, sys.stderr), warnings.showwarning

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            log.write(warnings.formatwarning(message, category, filename, lineno, line))
            shown(message, category, filename, lineno, file if file is not None else err.stream, line)

        sys.stdout, sys.stderr = out, err
        warnings.showwarning = show
        for logger in loggers:
            logger.addHandler(handler)
        try:
            yield
        except BaseException as exc:
            if not isinstance(exc, (SystemExit, KeyboardInterrupt)):
                log.write(f"error: {exc}\n")
            elif isinstance(exc, KeyboardInterrupt):
                log.write("interrupted\n")
            raise
        finally:
            for logger in loggers:
                logger.removeHandler(handler)
            sys.stdout, sys.stderr = saved
            warnings.showwarning = shown
            out.close_line()
            err.close_line()
