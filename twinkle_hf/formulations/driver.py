"""The one resumable driver: keys -> done -> to do -> sink -> sharded run -> merge -> predictions.

Every formulation runs through :func:`drive`, so resuming, saving as batches finish and sharding
over processes are written once. A formulation says what it asks and how its rows are kept; the
driver decides which rows still need the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..engine.stats import ScoreStats
from ..runtime.layout import Layout
from ..schema import Predictions
from .keys import Key

if TYPE_CHECKING:
    from ..models.facts import Model

R = TypeVar("R")
Sink = Callable[[list[int], list[Any]], None]  # rows (among those run), their results


class RunLog(Protocol):
    """What the driver needs of a resumable run's log (outputs/resume.py)."""

    done: Mapping[Key, Mapping[str, Any]]

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None: ...


class Formulation(Protocol[R]):
    """How one dataset's questions are asked and scored.

    Rows are what the model runs (a prompt, an option's continuation, a prompt's sample); ``R`` is
    the typed result of one row (engine/results.py).
    """

    @property
    def part(self) -> str:
        """What is run, as the progress bar and the processes' agreement name it."""
        ...

    def keys(self) -> list[Key]:
        """Per row, its resume key (keys.py)."""
        ...

    def reuse(self, row: int, saved: Mapping[str, Any]) -> R | None:
        """The result a resumed run saved for ``row``, or None when it no longer answers the row."""
        ...

    def record(self, row: int, result: R) -> dict[str, Any]:
        """The line a resumable run saves for ``row`` (keys.row_key reads its key back)."""
        ...

    def run(self, model: Model, rows: list[int], layout: Layout, sink: Sink | None) -> tuple[list[R], ScoreStats]:
        """The results of ``rows``, in that order, across the processes of ``layout``; ``sink``
        receives each finished batch (indices into ``rows``)."""
        ...

    def predictions(self, results: Sequence[R]) -> Predictions:
        """Every row's result turned into prediction rows."""
        ...


def drive(form: Formulation[R], model: Model, layout: Layout, log: RunLog | None = None
          ) -> tuple[Predictions, ScoreStats]:
    """Run a formulation: rows ``log`` holds are not run again, and new ones are saved to it as
    their batches finish."""
    keys = form.keys()
    done: dict[int, R] = {}
    if log is not None:
        for i, key in enumerate(keys):
            saved = log.done.get(key)
            kept = None if saved is None else form.reuse(i, saved)
            if kept is not None:
                done[i] = kept
    todo = [i for i in range(len(keys)) if i not in done]
    sink: Sink | None = None
    if log is not None:
        run_log = log
        sink = lambda idx, results: run_log.append(form.record(todo[j], r) for j, r in zip(idx, results))
    new, stats = form.run(model, todo, layout, sink)
    results: list[R | None] = [done.get(i) for i in range(len(keys))]
    for j, i in enumerate(todo):
        results[i] = new[j]
    return form.predictions(results), stats  # type: ignore[arg-type]  # every row filled
