"""What the engine did (rows, tokens run, passes, memory), counted by the scorer and the decoder
and reported in results.json's ``timing``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema import Predictions


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


def timing_record(st: ScoreStats, predictions: Predictions, seconds: float, shortened: int) -> dict[str, Any]:
    """results.json's ``timing``: speed, tokens run once prefixes are shared, padding, memory."""
    n_questions = len({(d, i) for d, i in zip(predictions.dataset, predictions.id)})
    # a cloze row is one question's k options, each its own prompt
    prompts = len(predictions) + int(np.sum((predictions.num_choices - 1)[predictions.cloze_rows]))
    letters = predictions.letters
    if letters is not None and letters.pred_written is not None:  # logit+X: every prompt was also answered in writing
        prompts += len(predictions)
    return {
        "seconds": seconds,
        "questions": n_questions,
        "prompts": prompts,
        "questions_per_second": n_questions / seconds if seconds else None,
        "prompts_per_second": prompts / seconds if seconds else None,
        "tokens": st.tokens,
        "computed_tokens": st.computed_tokens,
        "padded_tokens": st.padded_tokens,
        "generated_tokens": st.generated_tokens,
        "padding_ratio": (st.padded_tokens / (st.computed_tokens + st.generated_tokens)
                          if st.computed_tokens else None),
        "shared_prefix_saving": 1 - st.computed_tokens / st.tokens if st.tokens else None,
        "shared_prefixes": st.shared_prefixes,
        "prefix_batches": st.prefix_batches,
        "resumed_rows": prompts - st.rows,
        "repeated_rows": st.repeated_rows,  # prompts equal to another's (an order drawn twice): run once
        "fewshot_shortened_rows": shortened,  # context policy: few-shot examples dropped to fit
        "batches": st.batches,
        "oom_retries": st.oom_retries,
        "final_batch_rows": st.final_batch_rows,
        "peak_memory_bytes": st.peak_memory_bytes,
        "peak_rss_bytes": st.peak_rss_bytes,
    }
