"""Batch sizing: hand-computed plans for the token budget, the padding cap and held prefixes."""

from __future__ import annotations

import torch

from twinkle_hf.engine.batching import HELD_FACTOR, PASS_TOKENS, STORE_FACTOR, Batcher
from twinkle_hf.engine.stats import ScoreStats


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


def test_shrink_halves_budget_and_store():
    batcher = _batcher(budget=1000)
    batcher.shrink(8, 100)
    assert (batcher.budget, batcher.rows_cap, batcher.store_tokens()) == (500, 4, STORE_FACTOR * 500)
