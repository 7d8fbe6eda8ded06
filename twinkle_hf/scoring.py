"""Score tokenized prompts: one forward pass per batch, next-token logits of the last position only.

No I/O, no metrics. Rows are sorted by length (longest first, so an out-of-memory shows up on the
first batch), left-padded with explicit position ids (so a padded row computes what it would alone),
and only the last position's logits are materialised (``logits_to_keep=1``), never a
[batch, seq, vocab] tensor.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .errors import TwinkleError

# `--batch-size auto` caps a batch by padded tokens; it starts here and halves on out-of-memory.
AUTO_TOKEN_BUDGET = {"cuda": 1 << 17, "mps": 1 << 14, "cpu": 1 << 13}
AUTO_MAX_ROWS = {"cuda": 1024, "mps": 256, "cpu": 64}


@dataclass
class ScoreStats:
    """What the scorer did, for results.json."""

    rows: int = 0
    tokens: int = 0  # real prompt tokens
    padded_tokens: int = 0  # tokens actually run through the model (including padding)
    batches: int = 0
    oom_retries: int = 0
    final_batch_rows: int = 0  # the largest batch (rows) that ran after the last out-of-memory
    token_budget: int | None = None  # auto mode: final padded-token cap per batch
    peak_memory_bytes: int | None = None


@dataclass
class ScoreOutput:
    """Per row (input order): probabilities over its k labels and the labels' share of the vocab."""

    probs: list[np.ndarray]
    letter_mass: np.ndarray
    stats: ScoreStats = field(default_factory=ScoreStats)


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


def _accepts(model: Any, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _forward_last(model: Any, rows: list[list[int]], pad_id: int, device: torch.device) -> torch.Tensor:
    """Log-probabilities over the vocabulary at each row's last position: [batch, vocab] float32."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
        mask[i, width - len(r):] = 1
    ids, mask = ids.to(device), mask.to(device)
    kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": False}
    if _accepts(model, "position_ids"):
        kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
    if _accepts(model, "logits_to_keep"):
        kwargs["logits_to_keep"] = 1
    logits = model(**kwargs).logits[:, -1, :]
    return torch.log_softmax(logits.float(), dim=-1)


def _plan(lengths: list[int], start: int, order: np.ndarray, rows_cap: int, budget: int | None) -> int:
    """How many rows (from ``start`` in length order) go into the next batch."""
    longest = lengths[order[start]]
    count = min(rows_cap, len(order) - start)
    if budget is not None:
        count = min(count, max(1, budget // max(1, longest)))
    return count


def score_prompts(model: Any, token_ids: Sequence[list[int]], letter_ids: Sequence[Sequence[int]],
                  batch_size: int | str = "auto", pad_id: int = 0, progress: bool = True) -> ScoreOutput:
    """Score each prompt's next token over its option labels.

    ``letter_ids[i]`` are the k token ids of row i's labels, in displayed order. With
    ``batch_size="auto"`` batches are capped by padded tokens, and an out-of-memory halves the cap
    and retries the same batch (finished rows are kept); with a fixed size it is a clear error.
    """
    n = len(token_ids)
    device = model.get_input_embeddings().weight.device  # inputs go where the embeddings are
    lengths = [len(t) for t in token_ids]
    if n and min(lengths) == 0:
        raise TwinkleError("a prompt tokenized to zero tokens; check the template and tokenizer")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    auto = batch_size == "auto"
    rows_cap = AUTO_MAX_ROWS.get(device.type, 64) if auto else int(batch_size)
    budget = AUTO_TOKEN_BUDGET.get(device.type, 1 << 13) if auto else None
    stats = ScoreStats(rows=n, tokens=sum(lengths), token_budget=budget)
    probs: list[np.ndarray] = [np.empty(0)] * n
    mass = np.zeros(n, dtype=np.float64)
    start = 0
    bar = tqdm(total=n, desc="scoring", unit="prompt", disable=not progress or n == 0, dynamic_ncols=True)
    with torch.inference_mode():
        while start < n:
            count = _plan(lengths, start, order, rows_cap, budget)
            batch = order[start:start + count]
            try:
                logp = _forward_last(model, [list(token_ids[i]) for i in batch], pad_id, device)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                if not _is_oom(err):
                    raise
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                if not auto:
                    raise TwinkleError(
                        f"out of memory with --batch-size {batch_size} on prompts of {lengths[batch[0]]} "
                        f"tokens; use --batch-size auto (it halves the batch on out-of-memory) or a smaller size"
                    ) from None
                if count == 1:
                    raise TwinkleError(
                        f"out of memory on a single prompt of {lengths[batch[0]]} tokens; use a smaller "
                        f"model/dtype, fewer few-shot examples, or --device cpu"
                    ) from None
                stats.oom_retries += 1
                stats.final_batch_rows = 0  # report only sizes that ran after the last out-of-memory
                rows_cap = max(1, count // 2)
                budget = None if budget is None else max(1, budget // 2)
                stats.token_budget = budget
                continue
            _collect(logp, batch, letter_ids, probs, mass)
            stats.batches += 1
            stats.padded_tokens += count * lengths[batch[0]]
            stats.final_batch_rows = max(stats.final_batch_rows, count)
            start += count
            bar.update(count)
    bar.close()
    if device.type == "cuda":
        stats.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    return ScoreOutput(probs=probs, letter_mass=mass, stats=stats)


def _collect(logp: torch.Tensor, batch: np.ndarray, letter_ids: Sequence[Sequence[int]],
             probs: list[np.ndarray], mass: np.ndarray) -> None:
    """Per row: softmax over its k label log-probabilities, and their total probability."""
    logp = logp.cpu()
    for j, i in enumerate(batch.tolist()):
        lp = logp[j, list(letter_ids[i])].double()
        probs[i] = torch.softmax(lp, dim=0).numpy()
        mass[i] = float(lp.exp().sum())
