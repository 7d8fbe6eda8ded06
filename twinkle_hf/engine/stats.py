"""What the engine did (rows, tokens run, passes, memory), counted by the scorer and the decoder
and reported in results.json's ``timing``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class ScoreStats:
    """What the scorer did, for results.json."""

    rows: int = 0
    repeated_rows: int = 0  # rows whose prompt equals an earlier row's: run once, the result copied
    tokens: int = 0  # real prompt tokens (what scoring every prompt in full would compute)
    computed_tokens: int = 0  # real tokens actually run: shared prefixes once, plus the rest
    padded_tokens: int = 0  # tokens run through the model, padding included (generated ones too)
    generated_tokens: int = 0  # generation mode: new tokens written (each ran through the model once)
    batches: int = 0
    shared_prefixes: int = 0  # prefixes computed once and reused
    prefix_batches: int = 0  # forward passes that computed them
    oom_retries: int = 0
    final_batch_rows: int = 0  # the largest batch (rows) that ran after the last out-of-memory
    token_budget: int | None = None  # auto mode: final padded-token cap per batch
    peak_memory_bytes: int | None = None  # CUDA: most memory allocated on the device
    peak_rss_bytes: int | None = None  # the process's peak resident memory (model loading included)

    @classmethod
    def merge(cls, parts: Sequence[ScoreStats]) -> ScoreStats:
        """The stats of several scorer runs (processes, or datasets in turn) as one: counts add up,
        the batch size that held everywhere is the smallest, peaks are the largest."""
        counts = ("rows", "repeated_rows", "tokens", "computed_tokens", "padded_tokens", "generated_tokens", "batches",
                  "shared_prefixes", "prefix_batches", "oom_retries")
        peak = lambda name: max((getattr(p, name) or 0 for p in parts), default=0) or None
        return cls(**{name: sum(getattr(p, name) for p in parts) for name in counts},
                   final_batch_rows=min((p.final_batch_rows for p in parts), default=0),
                   token_budget=parts[0].token_budget if parts else None,
                   peak_memory_bytes=peak("peak_memory_bytes"), peak_rss_bytes=peak("peak_rss_bytes"))
