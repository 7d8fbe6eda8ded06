"""How many prompts go into one forward pass.

Either a fixed number of rows, or (``--batch-size auto``) a padded-token budget per device. The
budget halves on out-of-memory and stays halved for the rest of the run; a fixed size that runs out
of memory is a clear error instead. Under lockstep (a sharded model) the processes agree on the
budget, and it halves on every process together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import TwinkleError
from .stats import ScoreStats

if TYPE_CHECKING:
    from ..runtime.lockstep import Lockstep

# `--batch-size auto` caps a batch by padded tokens; it starts here and halves on out-of-memory.
AUTO_TOKEN_BUDGET = {"cuda": 1 << 17, "mps": 1 << 14, "cpu": 1 << 13}
AUTO_MAX_ROWS = {"cuda": 1024, "mps": 256, "cpu": 64}
MAX_PADDING = 0.05  # auto batches end early rather than pad more than this share of their tokens
# What a forward pass costs beside its tokens, in tokens. On a GPU a pass has a fixed cost about that
# of 2000 tokens (the fit in docs/performance.md), so an auto batch may pad this many tokens anyway.
PASS_TOKENS = {"cuda": 2048}
# Cloze runs (their question prefixes and the options' continuations) may pad this many tokens a pass
# on every device. A continuation runs 1-20 tokens, where 5% is under a token a row and would end a
# pass every few rows; docs/performance.md compares the caps on the cloze workload. Letter runs keep
# the 5% (their rows are long).
CONTINUATION_PASS_TOKENS = 64
# Continuations of cached prefixes. A pass holds each row's prefix keys/values besides the tokens it
# runs: at most HELD_FACTOR times the token budget in all. The prefixes kept at once for such passes
# (one store of them) hold at most STORE_FACTOR times the token budget.
HELD_FACTOR = 4
STORE_FACTOR = 4
# On a device that says how much memory is free, the prefix keys/values a store holds, and those a
# continuation pass gathers, each stay within this share of what was free when scoring started. The
# factors alone are not enough: a 7B's keys/values take ~57 KB a token, so 4x CUDA's budget would be
# 30 GB, more than a 24 GB card has.
KV_MEMORY_SHARE = 0.25
# Under lockstep the token budget is agreed too: a pass's activations stay within this share of the
# least memory any process had free when scoring started (and halve, in step, on out-of-memory).
PASS_MEMORY_SHARE = 0.25


class StoreTooLarge(Exception):
    """Out of memory while allocating a prefix store: the store, not a pass, has to shrink (not a
    RuntimeError, so that the per-pass retry of :func:`run_batches` leaves it to the caller)."""


def free_memory(device: torch.device) -> int | None:
    """Bytes free on ``device`` now (CUDA); None where the device does not say."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return None


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
    kv_bytes: int | None = None  # the model's KV cache bytes per token (None: unknown)
    continuation: bool = False  # a cloze run: passes may pad CONTINUATION_PASS_TOKENS
    lockstep: Lockstep | None = None  # a sharded model's: sizes agreed, out-of-memory halved in step
    token_bytes: int | None = None  # a pass's transient bytes per token (forward.activation_bytes_per_token)

    def __post_init__(self) -> None:
        self.auto = self.batch_size == "auto"
        self.rows_cap = AUTO_MAX_ROWS.get(self.device.type, 64) if self.auto else int(self.batch_size)
        self.budget = AUTO_TOKEN_BUDGET.get(self.device.type, 1 << 13) if self.auto else None
        free = free_memory(self.device) if self.kv_bytes or self.lockstep is not None else None
        if self.lockstep is not None:  # one plan for all: a tensor-parallel group runs one shape
            free = self.lockstep.smallest(free)  # every process asks, whatever it knows: the same handshake
            if self.budget is not None and free is not None and self.token_bytes:
                self.budget = max(1, min(self.budget, int(PASS_MEMORY_SHARE * free) // self.token_bytes))
        self.stats.token_budget = self.budget
        # Cached tokens a store (or a pass's gathered prefixes) may hold by memory; halves on out-of-memory.
        self.kv_tokens = int(KV_MEMORY_SHARE * free) // self.kv_bytes if free is not None and self.kv_bytes else None

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
                count = max(1, int(np.sum(width * np.arange(1, count + 1) <= self.held_tokens())))
            total = np.cumsum(lengths[start:start + count])
            padded = longest * np.arange(1, count + 1)
            waste = np.maximum(MAX_PADDING * padded, self.pass_tokens())
            fits = np.flatnonzero(padded - total <= waste)
            count = int(fits[-1]) + 1 if len(fits) else 1
        return count

    def pass_tokens(self) -> int:
        """Tokens any pass may pad, whatever its size: what a pass costs beside its tokens."""
        tokens = PASS_TOKENS.get(self.device.type, 0)
        return max(tokens, CONTINUATION_PASS_TOKENS) if self.continuation else tokens

    def _cached_tokens(self, factor: int) -> int:
        """``factor`` token budgets of cached keys/values, within the memory share (both halve on
        out-of-memory)."""
        tokens = factor * (self.budget or AUTO_TOKEN_BUDGET.get(self.device.type, 1 << 13))
        return tokens if self.kv_tokens is None else max(1, min(tokens, self.kv_tokens))

    def store_tokens(self) -> int:
        """How many prefix tokens a store may hold at once."""
        return self._cached_tokens(STORE_FACTOR)

    def held_tokens(self) -> int:
        """How many cached tokens (prefixes gathered, padded to each batch's widest) one pass may hold."""
        return self._cached_tokens(HELD_FACTOR)

    def _lockstep_oom(self, what: str) -> None:
        """Out of memory under lockstep allocating a store: the processes' stores would differ, so it
        is the end, said clearly (the others stop at their next handshake)."""
        if self.lockstep is not None:
            raise TwinkleError(f"out of memory {what} of a model sharded over the processes "
                               f"({self.lockstep.layout.sharding}): the processes cannot retry apart; run again "
                               f"with a smaller fixed --batch-size (this run's cap: {self.budget or self.rows_cap})")

    def after_oom(self, err: BaseException, count: int, longest: int) -> None:
        """An out-of-memory in a pass of ``count`` rows up to ``longest`` tokens: halve (or explain).
        Under lockstep this process first tells the others at the handshake (lockstep.out_of_memory),
        and every process halves there in step; one that learns of another's (LockstepOOM) halves."""
        from ..runtime.lockstep import LockstepOOM

        if isinstance(err, LockstepOOM):  # another process's: halve with it, whatever this one's size
            self._halve(count)
            return
        self._explain(count, longest)
        if self.lockstep is not None:
            self.lockstep.out_of_memory(count, longest)
        self._halve(count)

    def shrink_store(self, tokens: int, prefixes: int) -> None:
        """After an out-of-memory allocating a store of ``prefixes`` holding ``tokens``: later stores
        hold at most half as many tokens; a single prefix that does not fit is a clear error."""
        self._lockstep_oom("allocating shared prefixes")
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        if prefixes <= 1:
            raise TwinkleError("out of memory allocating the keys/values of a single shared prefix; use a "
                               "smaller model/dtype, fewer few-shot examples, or --no-share-prefix")
        self.stats.oom_retries += 1
        self.kv_tokens = max(1, tokens // 2)

    def capacity(self, longest: int) -> int:
        """Rows a batch may hold when its longest row comes to ``longest`` tokens (no padding cap:
        for a batch whose rows come and go, see decode.py)."""
        return self.rows_cap if self.budget is None else max(1, min(self.rows_cap, self.budget // max(1, longest)))

    def shrink(self, count: int, longest: int) -> None:
        """After an out-of-memory: halve (auto) or explain (fixed size)."""
        self._explain(count, longest)
        self._halve(count)

    def _explain(self, count: int, longest: int) -> None:
        """Where halving cannot help (a fixed size, a single prompt): a clear error."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        if not self.auto:
            raise TwinkleError(
                f"out of memory with --batch-size {self.batch_size} on prompts of {longest} tokens; use "
                f"--batch-size auto (it halves the batch on out-of-memory) or a smaller size")
        if count == 1:
            raise TwinkleError(f"out of memory on a single prompt of {longest} tokens; use a smaller "
                               f"model/dtype, fewer few-shot examples, or --device cpu")

    def _halve(self, count: int) -> None:
        self.stats.oom_retries += 1
        self.stats.final_batch_rows = 0  # report only sizes that ran after the last out-of-memory
        self.rows_cap = max(1, count // 2)
        self.budget = None if self.budget is None else max(1, self.budget // 2)
        self.kv_tokens = None if self.kv_tokens is None else max(1, self.kv_tokens // 2)
        self.stats.token_budget = self.budget


def run_batches(batcher: Batcher, order: Sequence[int], lengths: list[int], work: Callable[[list[int]], None],
                held: Sequence[int] | None = None, counted: bool = True) -> None:
    """Call ``work`` on consecutive batches of ``order`` as the batcher sizes them.

    ``order``: rows sorted longest first; ``lengths``: theirs; ``held``: the cached tokens each
    continues. An out-of-memory shrinks the batch and retries it, so ``work`` must keep nothing of a
    batch that raised. ``counted``: the batches count in ``stats.batches`` (prefix passes count on
    their own)."""
    start = 0
    while start < len(order):
        count = batcher.plan(lengths, start, held)
        try:
            work(list(order[start:start + count]))
        except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
            if not is_oom(err):
                raise
            batcher.after_oom(err, count, lengths[start])
            continue
        if counted:
            batcher.stats.batches += 1
            batcher.stats.final_batch_rows = max(batcher.stats.final_batch_rows, count)
        start += count
