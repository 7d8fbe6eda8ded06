"""How many prompts go into one forward pass: a fixed number of rows, or (``--batch-size auto``)
a padded-token budget per device that halves on out-of-memory and stays halved for the rest of the
run; a fixed size that runs out of memory is a clear error instead."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import TwinkleError
from .stats import ScoreStats

# `--batch-size auto` caps a batch by padded tokens; it starts here and halves on out-of-memory.
AUTO_TOKEN_BUDGET = {"cuda": 1 << 17, "mps": 1 << 14, "cpu": 1 << 13}
AUTO_MAX_ROWS = {"cuda": 1024, "mps": 256, "cpu": 64}
MAX_PADDING = 0.05  # auto batches end early rather than pad more than this share of their tokens
# What a forward pass costs beside its tokens, in tokens: an H200 runs a 7B's pass in ~90 ms whatever
# its size, as long as ~2200 tokens (issue 24's fit). An auto batch may pad this many tokens anyway.
PASS_TOKENS = {"cuda": 2048}
# Continuations of cached prefixes: a pass holds each row's prefix keys/values besides the tokens it
# runs, at most this many times the token budget in all; and the prefixes kept at once for such
# passes (one store of them) hold at most this many times the token budget.
HELD_FACTOR = 4
STORE_FACTOR = 4


def is_oom(err: BaseException) -> bool:
    """An out-of-memory error of any device (CUDA's has its own type; others say so in the text)."""
    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


@dataclass
class Batcher:
    """Batch sizing shared by all jobs, so a halving after out-of-memory sticks."""

    batch_size: int | str
    device: torch.device
    stats: ScoreStats
    equal_lengths: bool = False  # batch only prompts of one length (no padding): see score_prompts

    def __post_init__(self) -> None:
        self.auto = self.batch_size == "auto"
        self.rows_cap = AUTO_MAX_ROWS.get(self.device.type, 64) if self.auto else int(self.batch_size)
        self.budget = AUTO_TOKEN_BUDGET.get(self.device.type, 1 << 13) if self.auto else None
        self.stats.token_budget = self.budget

    def plan(self, lengths: list[int], start: int, held: Sequence[int] | None = None) -> int:
        """How many rows (``lengths`` sorted longest first) go into the batch starting at ``start``.
        ``held``: per row, the cached tokens it continues (their keys/values are held for the pass,
        padded to the batch's longest)."""
        longest = lengths[start]
        count = min(self.rows_cap, len(lengths) - start)
        if self.equal_lengths:
            count = int(np.sum(np.asarray(lengths[start:start + count]) == longest))
        if self.budget is not None:
            count = min(count, max(1, self.budget // max(1, longest)))
            if held is not None:
                width = np.maximum.accumulate(np.asarray(held[start:start + count])) + longest
                count = max(1, int(np.sum(width * np.arange(1, count + 1) <= HELD_FACTOR * self.budget)))
            total = np.cumsum(lengths[start:start + count])
            padded = longest * np.arange(1, count + 1)
            waste = np.maximum(MAX_PADDING * padded, PASS_TOKENS.get(self.device.type, 0))
            fits = np.flatnonzero(padded - total <= waste)
            count = int(fits[-1]) + 1 if len(fits) else 1
        return count

    def store_tokens(self) -> int:
        """How many prefix tokens a store may hold at once (it halves with the budget)."""
        return STORE_FACTOR * (self.budget or AUTO_TOKEN_BUDGET.get(self.device.type, 1 << 13))

    def capacity(self, longest: int) -> int:
        """Rows a batch may hold when its longest row comes to ``longest`` tokens (no padding cap:
        for a batch whose rows come and go, see decode.py)."""
        return self.rows_cap if self.budget is None else max(1, min(self.rows_cap, self.budget // max(1, longest)))

    def shrink(self, count: int, longest: int) -> None:
        """After an out-of-memory: halve (auto) or explain (fixed size)."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        if not self.auto:
            raise TwinkleError(
                f"out of memory with --batch-size {self.batch_size} on prompts of {longest} tokens; use "
                f"--batch-size auto (it halves the batch on out-of-memory) or a smaller size")
        if count == 1:
            raise TwinkleError(f"out of memory on a single prompt of {longest} tokens; use a smaller "
                               f"model/dtype, fewer few-shot examples, or --device cpu")
        self.stats.oom_retries += 1
        self.stats.final_batch_rows = 0  # report only sizes that ran after the last out-of-memory
        self.rows_cap = max(1, count // 2)
        self.budget = None if self.budget is None else max(1, self.budget // 2)
        self.stats.token_budget = self.budget


def run_batches(batcher: Batcher, order: Sequence[int], lengths: list[int], work: Callable[[list[int]], None],
                held: Sequence[int] | None = None, counted: bool = True) -> None:
    """Call ``work`` on consecutive batches of ``order`` (rows sorted longest first, ``lengths``
    theirs, ``held`` the cached tokens each continues) as the batcher sizes them; an out-of-memory
    shrinks the batch and retries it, so ``work`` must keep nothing of a batch that raised.
    ``counted``: the batches count in ``stats.batches`` (prefix passes count on their own)."""
    start = 0
    while start < len(order):
        count = batcher.plan(lengths, start, held)
        try:
            work(list(order[start:start + count]))
        except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
            if not is_oom(err):
                raise
            batcher.shrink(count, lengths[start])
            continue
        if counted:
            batcher.stats.batches += 1
            batcher.stats.final_batch_rows = max(batcher.stats.final_batch_rows, count)
        start += count
