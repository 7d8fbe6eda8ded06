"""Processes in lockstep over a model that no process holds whole.

A model sharded by its training run (FSDP, FSDP2's ``fully_shard``, DeepSpeed ZeRO-3) gathers each
layer's weights from every process in each forward pass; a tensor-parallel one exchanges
activations inside it. So a forward pass is a collective. Each process scores its own share of the
rows in its own number of passes, so the passes of two processes would pair up wrongly (gloo:
"collective mismatch"; NCCL: a hang until the watchdog fires). So, as ``generate(synced_gpus=True)``
does for each decode step, the processes of a lockstep group say before every pass whether they have
one of their own (handshake.py). A process out of rows runs a dummy pass (one token through the whole
model) for as long as any other has a real one. The same handshake carries a process's failure (the
others stop with its name instead of waiting), an out-of-memory (every process halves its passes
there and goes on), and the sizes the processes must agree on (free memory).

A process that fails inside a pass waits a bounded time for the others at the handshake: if they
come, the failure was after the pass's last collective (an out-of-memory at the logits is survived);
if not, they are inside the pass's collectives, waiting for this process, and it stops with one line
so that the launcher ends them all.

Before a part starts, the processes also compare what they are about to run (:func:`agree`): a
process that would score other rows is a clear error naming the processes, not a hang.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import torch

from ..errors import TwinkleError
from ..models.facts import accepts
from .handshake import Handshake
from .layout import PASSES, Layout

if TYPE_CHECKING:
    from ..models.facts import Model

MIN_FAILED_WAIT = 10.0  # seconds a failed process waits for the others at the handshake, at least
PASS_WAIT_FACTOR = 4  # ... or this many times the slowest pass this process has run, if longer
REAL, FAILED, OOM, VALUE = range(4)  # a handshake row


class LockstepAbort(TwinkleError):
    """Another process failed: this one stops too (raised at the next handshake)."""


class LockstepOOM(RuntimeError):
    """A process of the lockstep ran out of memory: every process halves its passes (an
    out-of-memory for batching.run_batches, which retries the pass)."""


class Lockstep:
    """While entered (one scorer or decoder call): every forward pass of ``model`` on this process
    first tells the others it has one; :meth:`drain` (on leaving) runs dummy passes until no
    process has a real one left. ``device``: where a dummy pass's input goes."""

    def __init__(self, model: Model, layout: Layout, device: torch.device, pad_id: int = 0,
                 handshake: Handshake | None = None) -> None:
        self.model, self.layout, self.device, self.pad_id = model, layout, device, pad_id
        self.real_passes = self.dummy_passes = 0
        self._dummy = False
        self._handles: list[Any] = []
        ranks = layout.step_ranks or tuple(range(layout.processes))
        self.handshake = handshake or Handshake(ranks, layout.rank)
        self._started = self._slowest = 0.0
        self._gone = False  # a handshake ran out of time: the others are not coming

    def __enter__(self) -> Lockstep:
        # prepend: before FSDP2's and DeepSpeed's own pre-forward hooks, which start the weight gathers
        self._handles = [self.model.register_forward_pre_hook(self._before, prepend=True),
                         self.model.register_forward_hook(self._after)]
        return self

    def __exit__(self, kind: Any, err: BaseException | None, tb: Any) -> None:
        try:
            if err is None:
                self.drain()
                PASSES.real += self.real_passes
                PASSES.dummy += self.dummy_passes
            elif not isinstance(err, LockstepAbort):
                self._tell_failure(err)
        finally:
            for handle in self._handles:
                handle.remove()

    def _tell_failure(self, err: BaseException) -> None:
        """This process failed (between passes, or inside one): the others learn it at their
        handshake; if they do not come, they wait inside a pass for this process, which stops. A
        failure inside a pass because another process left it (gloo: the connection closed) names
        that process."""
        if self._gone:
            return
        try:
            rows = self._exchange(failed=1, waited=True)
        except RuntimeError:  # the store went with the process that hosted it
            rows = None
        if rows is None:
            raise TwinkleError(f"process {self.layout.rank} stopped inside a forward pass of a model sharded over "
                               f"the processes ({type(err).__name__}: {_first_line(err)}); the others wait in "
                               f"that pass's collectives and stop when this process exits") from err
        me = self.layout.rank
        others = [str(r) for r, row in zip(self.handshake.ranks, rows) if (row[FAILED] or row[OOM]) and r != me]
        if others:
            raise LockstepAbort(f"process {me} stopped: process {', '.join(others)} failed inside the same pass "
                                f"(see its line); {type(err).__name__}: {_first_line(err)}") from err

    def _wait(self) -> float:
        return max(MIN_FAILED_WAIT, PASS_WAIT_FACTOR * self._slowest)

    def _exchange(self, real: int = 0, failed: int = 0, oom: int = 0, value: int = -1,
                  waited: bool = False) -> list[tuple[int, ...]] | None:
        """One handshake; the rows of every process of the group (None: ``waited`` ran out)."""
        return self.handshake.exchange((real, failed, oom, value), self._wait() if waited else None)

    def _check(self, rows: list[tuple[int, ...]]) -> bool:
        """Stop where another process failed; True where one ran out of memory (every process halves)."""
        failed = [r for r, row in zip(self.handshake.ranks, rows) if row[FAILED] and r != self.layout.rank]
        if failed:
            names = ", ".join(str(r) for r in failed)
            raise LockstepAbort(f"process {names} stopped with an error (see its messages above); the model is "
                                f"sharded over the processes, so this one cannot go on alone")
        short = {r for r, row in zip(self.handshake.ranks, rows) if row[OOM]}
        mates = set(self.layout.group_ranks)
        if short & mates and not mates <= short:
            # a tensor-parallel group's processes ran the same pass: some kept its results, some did not
            raise LockstepAbort(f"out of memory on process {', '.join(map(str, sorted(short & mates)))} only, "
                                f"of tensor-parallel group {sorted(mates)}: its processes cannot redo the pass "
                                f"apart; run again with a smaller fixed --batch-size")
        return bool(short)

    def _before(self, module: Any, args: Any) -> None:
        if self._dummy:
            return
        rows = self._exchange(real=1)
        assert rows is not None
        if self._check(rows):
            raise LockstepOOM("out of memory on another process of the lockstep: every process halves its passes")
        self.real_passes += 1
        self._started = time.perf_counter()

    def _after(self, module: Any, args: Any, output: Any) -> None:
        if self._started:
            self._slowest = max(self._slowest, time.perf_counter() - self._started)

    def out_of_memory(self, rows: int, longest: int) -> None:
        """This process ran out of memory in a pass of ``rows`` prompts up to ``longest`` tokens:
        tell the others at the handshake. They come if the pass's collectives were over (all halve,
        as this one then does); if not, this process stops with one line."""
        if self._started:
            self._slowest = max(self._slowest, time.perf_counter() - self._started)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        rows_seen = self._exchange(oom=1, waited=True)
        if rows_seen is None:
            self._gone = True
            raise TwinkleError(
                f"process {self.layout.rank}: out of memory inside a pass of {rows} prompts up to {longest} tokens "
                f"of a model sharded over the processes ({self.layout.sharding}), before the pass's last "
                f"collective, so the processes cannot retry together; run again with a fixed --batch-size "
                f"of at most {max(1, rows // 2)}")
        self._check(rows_seen)

    def drain(self) -> None:
        """Dummy passes while any other process still has real ones; returns when none has."""
        while True:
            rows = self._exchange()
            assert rows is not None
            if self._check(rows):
                continue  # another process halves and runs its pass again: handshake again
            if not any(row[REAL] for row in rows):
                return
            self._dummy_pass()

    def smallest(self, value: int | None) -> int | None:
        """The smallest of every process's ``value`` (None where any has none): sizes that shape
        passes (free memory) must agree, or a tensor-parallel group would run different shapes."""
        rows = self._exchange(value=-1 if value is None else value)
        assert rows is not None
        self._check(rows)
        least = min(row[VALUE] for row in rows)
        return None if least < 0 else least

    def _dummy_pass(self) -> None:
        """One token through the whole model: the same weight gathers as a real pass."""
        kwargs: dict[str, Any] = {"input_ids": torch.full((1, 1), self.pad_id, dtype=torch.long, device=self.device),
                                  "use_cache": False}
        if accepts(self.model, "logits_to_keep"):
            kwargs["logits_to_keep"] = 1
        self._dummy = True
        try:
            with torch.no_grad():  # a sharded model's passes (placement.grad_off), without looking again
                self.model(**kwargs)
        finally:
            self._dummy = False
        self.dummy_passes += 1


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
