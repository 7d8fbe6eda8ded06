"""Rows over processes: grouped by key, dealt out to the shares, and gathered back in row order.

Every process builds the same rows (cheap and deterministic), scores its share, and every process
gets all results back in row order, so metrics are the same whatever the number of processes and
no row is lost or counted twice.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    from .layout import Layout

K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound="Mergeable")


class Mergeable(Protocol):
    """Counts of one share that add up to the whole run's (the engine's ScoreStats)."""

    @classmethod
    def merge(cls: type[S], parts: Sequence[S]) -> S: ...


def group_rows(keys: Sequence[K]) -> dict[K, list[int]]:
    """The rows of each key, in the order the keys first appear."""
    members: dict[K, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    return members


def deal_rows(token_ids: Sequence[list[int]], groups: Sequence[Any] | None, share: int, shares: int) -> list[int]:
    """The rows of ``share`` (of ``shares``): rows, or whole prefix groups, in descending size,
    dealt out in turn. Every share gets long and short prompts alike, and a shared prefix is
    computed by one share only."""
    if groups is None:
        order = np.argsort(-np.array([len(t) for t in token_ids]), kind="stable")
        return order[share::shares].tolist()
    ranked = sorted(group_rows(groups).values(), key=lambda rows: -sum(len(token_ids[i]) for i in rows))
    return sorted(i for rows in ranked[share::shares] for i in rows)


def gather_rows(n: int, mine: list[int], columns: list[list[Any]], stats: S,
                layout: Layout) -> tuple[list[list[Any]], S]:
    """Every share's values of each column, reassembled in row order on every process, and the
    shares' stats merged. A tensor-parallel group's rows come from its first process: the others
    hold the same."""
    from accelerate.utils import gather_object

    parts = gather_object([(mine, columns, stats) if layout.leader else ([], [[] for _ in columns], None)])
    out: list[list[Any]] = [[None] * n for _ in columns]
    seen = 0
    for rows, cols, _ in parts:
        for c, col in enumerate(cols):
            for i, value in zip(rows, col):
                out[c][i] = value
        seen += len(rows)
    assert seen == n, f"gathered {seen} rows for {n}"  # internal invariant: a row lost or doubled
    return out, type(stats).merge([p[2] for p in parts if p[2] is not None])
