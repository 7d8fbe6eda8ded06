"""Batch sizing: hand-computed plans for the token budget, the padding cap and held prefixes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import make_model

from twinkle_hf.engine import batching
from twinkle_hf.engine.batching import (
    CONTINUATION_PASS_TOKENS,
    HELD_FACTOR,
    KV_MEMORY_SHARE,
    PASS_TOKENS,
    STORE_FACTOR,
    Batcher,
)
from twinkle_hf.engine.forward import kv_bytes_per_token
from twinkle_hf.engine.stats import ScoreStats
from twinkle_hf.errors import TwinkleError


def _batcher(device: str = "cpu", budget: int = 1000, rows: int = 64) -> Batcher:
    batcher = Batcher("auto", torch.device(device) if device == "cpu" else torch.device("meta"), ScoreStats())
    batcher.budget, batcher.rows_cap = budget, rows
    return batcher


def test_plan_caps_rows_by_tokens_and_padding():
    batcher = _batcher(budget=100)
    assert batcher.plan([10] * 30, 0) == 10  # 10 rows of 10 tokens fill the budget
    assert batcher.plan([20, 19, 10, 10], 0) == 2  # a third row would pad 10 of 40 tokens
    assert batcher.plan([20, 19, 10, 10], 2) == 2


def test_plan_counts_the_prefix_each_row_holds():
    batcher = _batcher(budget=1000)
    lengths, held = [10] * 64, [90] * 64
    assert batcher.plan(lengths, 0) == 64
    # each row holds 90 cached tokens and runs 10: HELD_FACTOR x budget / 100 rows
    assert batcher.plan(lengths, 0, held) == HELD_FACTOR * 1000 // 100
    # the widest prefix so far is what every row of the batch holds
    assert batcher.plan(lengths, 0, [390] + [0] * 63) == HELD_FACTOR * 1000 // 400
    assert batcher.store_tokens() == STORE_FACTOR * 1000


def test_plan_on_a_gpu_pads_up_to_what_a_pass_costs():
    """Where a pass costs as much as PASS_TOKENS tokens, a batch may pad that many rather than end."""
    batcher = _batcher(budget=1 << 20, rows=1024)
    batcher.device = torch.device("cuda")
    lengths = [100] * 10 + [60] * 30  # 30 rows padded by 40: 1200 tokens of padding
    assert PASS_TOKENS["cuda"] >= 1200 and batcher.plan(lengths, 0) == 40
    batcher.device = torch.device("cpu")
    assert batcher.plan(lengths, 0) == 11  # elsewhere 5%: the 11th row pads 40 of 1100 tokens, a 12th 80 of 1200


def _passes(batcher: Batcher, lengths: list[int]) -> list[int]:
    """The rows of every pass the batcher plans for ``lengths`` (longest first)."""
    sizes: list[int] = []
    while sum(sizes) < len(lengths):
        sizes.append(batcher.plan(lengths, sum(sizes)))
    return sizes


def test_plan_lets_a_continuation_pass_pad_what_a_pass_costs():
    """A cloze run's rows are a few tokens each, where 5% is under a token a row: its passes may pad
    CONTINUATION_PASS_TOKENS instead; a letter run's passes keep the 5%."""
    lengths = [8] * 8 + [4] * 56
    cloze = _batcher()
    cloze.continuation = True
    assert _batcher().plan(lengths, 0) == 8  # a 9th row would pad 4 of 36 tokens
    assert CONTINUATION_PASS_TOKENS == 64 and cloze.plan(lengths, 0) == 8 + 64 // 4  # 16 rows padded by 4
    cloze.device = torch.device("cuda")  # where a pass costs more, that stays
    assert cloze.plan(lengths, 0) == 64


@pytest.mark.parametrize("n", [40, 192, 1000])
def test_short_continuations_fit_few_passes_of_bounded_padding(n):
    """N continuations of 1-8 tokens: at most one pass more than the rows cap needs, none padding
    more than CONTINUATION_PASS_TOKENS; the letter rule would end a pass at every length."""
    lengths = sorted(((i * 7) % 8 + 1 for i in range(n)), reverse=True)
    cloze = _batcher(budget=8192)
    cloze.continuation = True
    sizes = _passes(cloze, lengths)
    starts = np.cumsum([0] + sizes[:-1])
    pads = [k * lengths[s] - sum(lengths[s:s + k]) for s, k in zip(starts, sizes)]
    assert len(sizes) <= -(-n // 64) + 1 and max(pads) <= CONTINUATION_PASS_TOKENS
    assert len(sizes) <= len(_passes(_batcher(budget=8192), lengths))
    if n <= 192:
        assert len(_passes(_batcher(budget=8192), lengths)) == 8  # one pass per length


def test_shrink_halves_budget_and_store():
    batcher = _batcher(budget=1000)
    batcher.shrink(8, 100)
    assert (batcher.budget, batcher.rows_cap, batcher.store_tokens()) == (500, 4, STORE_FACTOR * 500)


def test_the_memory_share_caps_store_and_held_tokens(monkeypatch):
    """Where the device says what is free, a store and a pass's gathered prefixes stay within
    KV_MEMORY_SHARE of it (a 7B's keys/values at 4x CUDA's budget would not fit a 24 GB card)."""
    monkeypatch.setattr(batching, "free_memory", lambda device: 1_000_000)
    batcher = Batcher("auto", torch.device("cpu"), ScoreStats(), kv_bytes=100)
    share = int(KV_MEMORY_SHARE * 1_000_000) // 100
    assert share < STORE_FACTOR * batcher.budget and batcher.store_tokens() == batcher.held_tokens() == share
    batcher.shrink(8, 100)  # a pass ran out of memory: both halve with the budget
    assert batcher.store_tokens() == share // 2
    batcher.shrink_store(batcher.store_tokens(), prefixes=3)
    assert batcher.store_tokens() == share // 4 and batcher.stats.oom_retries == 2
    with pytest.raises(TwinkleError, match="--no-share-prefix"):
        batcher.shrink_store(500, prefixes=1)
    unknown = Batcher("auto", torch.device("cpu"), ScoreStats(), kv_bytes=None)  # no KV size: factors only
    assert unknown.store_tokens() == STORE_FACTOR * unknown.budget


def test_kv_bytes_per_token_is_what_a_cache_holds(tiny_tokenizer):
    model = make_model(tiny_tokenizer)
    with torch.no_grad():
        cache = model(torch.tensor([[5, 6, 7, 8, 9]]), use_cache=True).past_key_values
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert kv_bytes_per_token(model) == held // 5
    assert kv_bytes_per_token(model.to(torch.bfloat16)) == held // 10
