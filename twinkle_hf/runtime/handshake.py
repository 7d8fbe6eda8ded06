"""The lockstep handshake: every process of a lockstep group puts one row of small integers, and
each reads all of them, through the launcher's key-value store (torch.distributed's default store),
not through a collective of the model's process group.

Why not an all-reduce: a process that failed inside a forward pass (an out-of-memory between two of
the model's collectives) must find out whether the others are at a handshake or still inside the
pass, waiting for it. A collective cannot say so without pairing with the model's own collectives,
and a collective that timed out leaves a gloo process unable to exit. A store read can wait for a
bounded time and give up cleanly. Every handshake, the first before any pass included, is the same
operation on every process, failed or not: the rows only differ in what they say.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

LONG_WAIT = timedelta(minutes=30)  # a healthy handshake: as long as torch's own default timeout


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


class Handshake:
    """Rows exchanged among the processes ``ranks`` (global ranks, this one's ``rank`` among them).
    The processes of a group create their handshakes in the same order (one per Lockstep), so
    ``generation`` names the same one on all of them."""

    _generations: ClassVar[dict[tuple[int, ...], int]] = {}

    def __init__(self, ranks: tuple[int, ...], rank: int, store: Any = None, generation: int | None = None) -> None:
        self.ranks, self.rank = tuple(ranks), rank
        if generation is None:
            generation = Handshake._generations.get(self.ranks, 0)
            Handshake._generations[self.ranks] = generation + 1
        self.space = f"twinkle/lockstep/{'-'.join(map(str, self.ranks))}/{generation}"
        self.count = 0
        self.store = store if store is not None else _default_store()

    def _key(self, count: int, rank: int) -> str:
        return f"{self.space}/{count}/{rank}"

    def exchange(self, row: tuple[int, ...], wait: float | None = None) -> list[tuple[int, ...]] | None:
        """Every process's row, in ``ranks`` order; None when ``wait`` seconds passed before every
        other process had put its row (then this handshake is over for this process)."""
        count = self.count
        self.count += 1
        self.store.set(self._key(count, self.rank), ",".join(str(int(x)) for x in row))
        keys = [self._key(count, r) for r in self.ranks]
        try:
            self.store.wait(keys, timedelta(seconds=wait) if wait is not None else LONG_WAIT)
        except RuntimeError:  # DistStoreError: timed out
            if wait is None:
                raise
            return None
        rows = [tuple(int(x) for x in bytes(v).decode().split(",")) for v in self.store.multi_get(keys)]
        if count >= 2:  # every process has put its row of count - 1, so has read those of count - 2
            self.store.delete_key(self._key(count - 2, self.rank))
        return rows
