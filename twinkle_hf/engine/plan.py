"""The shapes of generation mode's plan, shared by the planner (generate.py) and the decode loop
(decode.py): how to decode, the segments rows run in, and what comes back."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .stats import ScoreStats

if TYPE_CHECKING:
    from ..runtime.lockstep import Lockstep


@dataclass(frozen=True)
class GenerationSettings:
    """How to decode: ``temperature`` 0 is greedy; ``top_p`` < 1 keeps the smallest set of tokens
    holding that probability; ``stop_ids`` end a row (not part of its text)."""

    max_new_tokens: int = 2048
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop_ids: tuple[int, ...] = ()
    batch_size: int | str = "auto"
    pad_id: int = 0
    progress: bool = True
    lockstep: Lockstep | None = None  # while the processes run a sharded model's passes together


@dataclass
class Generated:
    """Per row (input order): the new token ids (stop token excluded) and whether the row reached
    ``max_new_tokens`` without a stop token."""

    tokens: list[list[int]]
    truncated: np.ndarray
    stats: ScoreStats = field(default_factory=ScoreStats)


Finish = Callable[[list[int], list[list[int]], list[bool]], None]  # rows, their new tokens, truncated


@dataclass
class Segment:
    """Rows (longest first) that continue one set of shared prefixes (or none): the prefixes are
    prefilled when the segment's first row joins the batch, and dropped once its last row has
    joined (a joined row's keys/values are in the batch's own cache)."""

    rows: list[int]  # in the order they join: similar prompt rests together (they pad each other)
    lengths: list[int]  # per row: the tokens it may come to hold (prefix, rest of the prompt, new tokens)
    rests: dict[int, list[int]]  # the prompt after the shared prefix
    prefixes: list[list[int]] = field(default_factory=list)  # token ids of the shared prefixes
    owner: dict[int, int] = field(default_factory=dict)  # row -> its prefix

    def __post_init__(self) -> None:
        self.longest_from = list(itertools.accumulate(reversed(self.lengths), max))[::-1]  # most a row from i holds


Plan = Callable[[set[int]], list[Segment]]  # the segments of the rows not finished yet
