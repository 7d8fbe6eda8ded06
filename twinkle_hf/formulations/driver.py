"""The one resumable driver: keys -> done -> to do -> sink -> sharded run -> merge -> predictions.

Every formulation runs through :func:`drive`, so resuming, saving as batches finish and sharding
over processes are written once. A formulation says what it asks and how its rows are kept; the
driver decides which rows still need the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..engine.stats import ScoreStats
from ..errors import TwinkleError
from ..runtime.layout import Layout
from ..runtime.rows import deal_rows
from ..schema import Predictions
from .keys import Key

if TYPE_CHECKING:
    from ..models.facts import Model

R = TypeVar("R")
Sink = Callable[[list[int], list[Any]], None]  # rows (among those run), their results


class RunLog(Protocol):
    """What the driver needs of a resumable run's log (outputs/resume.py). A log whose ``complete``
    is true (a merge of shards) holds every row: a row still to run is then an error, not a pass."""

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

    def dealt_by(self) -> tuple[Sequence[list[int]], Sequence[Any] | None]:
        """Every row's token ids and prefix group (None: no groups): what ``run`` deals its rows
        over processes by (runtime/rows.py), and so what a ``--shard`` deals them by."""
        ...

    def run(self, model: Model, rows: list[int], layout: Layout, sink: Sink | None) -> tuple[list[R], ScoreStats]:
        """The results of ``rows``, in that order, across the processes of ``layout``; ``sink``
        receives each finished batch (indices into ``rows``)."""
        ...

    def predictions(self, results: Sequence[R]) -> Predictions:
        """Every row's result turned into prediction rows."""
        ...


def _saved(form: Formulation[R], keys: list[Key], log: RunLog | None) -> dict[int, R]:
    """The rows ``log`` holds a usable result for."""
    done: dict[int, R] = {}
    if log is not None:
        for i, key in enumerate(keys):
            saved = log.done.get(key)
            kept = None if saved is None else form.reuse(i, saved)
            if kept is not None:
                done[i] = kept
    return done


def _run(form: Formulation[R], model: Model, todo: list[int], layout: Layout, log: RunLog | None
         ) -> tuple[list[R], ScoreStats]:
    """``todo`` run (new rows saved to ``log`` as their batches finish). Nothing to run runs
    nothing: every process of a run has the same ``todo``, so all of them skip alike."""
    if not todo:
        return [], ScoreStats()
    if getattr(log, "complete", False):
        raise TwinkleError(f"{form.part}: the shards hold no score for {len(todo)} row(s); merge the shards of "
                           f"one run, each finished")
    sink: Sink | None = None
    if log is not None:
        run_log = log
        sink = lambda idx, results: run_log.append(form.record(todo[j], r) for j, r in zip(idx, results))
    return form.run(model, todo, layout, sink)


def drive(form: Formulation[R], model: Model, layout: Layout, log: RunLog | None = None
          ) -> tuple[Predictions, ScoreStats]:
    """Run a formulation: rows ``log`` holds are not run again, and new ones are saved to it as
    their batches finish."""
    keys = form.keys()
    done = _saved(form, keys, log)
    todo = [i for i in range(len(keys)) if i not in done]
    new, stats = _run(form, model, todo, layout, log)
    results: list[R | None] = [done.get(i) for i in range(len(keys))]
    for j, i in enumerate(todo):
        results[i] = new[j]
    return form.predictions(results), stats  # type: ignore[arg-type]  # every row filled


def drive_share(form: Formulation[R], model: Model, layout: Layout, log: RunLog, shard: tuple[int, int]
                ) -> tuple[int, ScoreStats]:
    """``--shard K/N``: run the rows that N data-parallel processes would deal to share K (whole
    prefix groups), those ``log`` does not hold yet, saving each to it; within the shard the
    processes of ``layout`` split them further. No predictions: the merge builds them from every
    shard's rows. Returns how many rows the share has, and what the engine did."""
    mine = deal_rows(*form.dealt_by(), *shard)
    done = _saved(form, form.keys(), log)
    _, stats = _run(form, model, [i for i in mine if i not in done], layout, log)
    return len(mine), stats
