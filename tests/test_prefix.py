"""Shared-prefix KV reuse computes what the plain path computes, on real tokenizers too."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from helpers import TOKENIZER_DIRS, make_model
from twinkle_hf.config import EvalConfig
from twinkle_hf.evaluate import evaluate, load_datasets
from twinkle_hf.prefix import MIN_PREFIX, common_prefix, plan_jobs


def test_common_prefix_leaves_a_token_for_every_row():
    assert common_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 4, 9]]) == 3
    assert common_prefix([[7, 8], [7, 8]]) == 1
    assert common_prefix([[1], [2]]) == 0


def test_plan_jobs_shares_only_long_prefixes(tiny_tokenizer):
    model = make_model(tiny_tokenizer)
    shared = list(range(100, 100 + MIN_PREFIX))
    rows = [shared + [1, 2], shared + [3], [5] * 20, shared[:4] + [9], shared[:4] + [8]]
    jobs = plan_jobs(model, rows, ["a", "a", "b", "c", "c"])
    assert [(j.prefix_len, j.rows) for j in jobs] == [(MIN_PREFIX, [0, 1]), (0, [2, 3, 4])]
    assert [(j.prefix_len, j.rows) for j in plan_jobs(model, rows, None)] == [(0, [0, 1, 2, 3, 4])]


def _pair(model, tokenizer, dataset, **settings):
    results = []
    for share in (True, False):
        cfg = EvalConfig(model="unused", datasets=(str(dataset),), share_prefix=share, **settings)
        results.append(evaluate(model, tokenizer, load_datasets(cfg), cfg, progress=False))
    return results


def _assert_same(shared, plain):
    assert shared.predictions.pred.tolist() == plain.predictions.pred.tolist()
    for a, b in zip(shared.predictions.probs, plain.predictions.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert shared.timing["computed_tokens"] < plain.timing["computed_tokens"] == plain.timing["tokens"]
    assert shared.timing["shared_prefixes"] > 0 and plain.timing["shared_prefixes"] == 0


@pytest.mark.parametrize("settings", [
    {"num_fewshot": 2, "shuffle": True, "shuffle_mode": "cyclic"},
    {"num_fewshot": 0, "shuffle": True, "seeds": 3},
    {"num_fewshot": 1, "shuffle": True, "seeds": 2, "batch_size": 3},
])
def test_shared_prefix_equals_plain_on_the_tiny_model(tiny_tokenizer, mmlu_dir, settings):
    _assert_same(*_pair(make_model(tiny_tokenizer, seed=4), tiny_tokenizer, mmlu_dir, limit=4, **settings))


def test_fewshot_from_the_evaluated_data_still_shares(tiny_tokenizer, all_a_dir):
    shared, plain = _pair(make_model(tiny_tokenizer, seed=5), tiny_tokenizer, all_a_dir, num_fewshot=2,
                          shuffle=True, seeds=2)
    _assert_same(shared, plain)


@functools.cache
def _tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@pytest.mark.skipif(not TOKENIZER_DIRS, reason="real tokenizers not found in ../shared/tokenizers")
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
def test_shared_prefix_equals_plain_with_real_tokenizers(path, mmlu_dir):
    tok = _tokenizer(path)
    model = make_model(tok, seed=6, layers=1)
    _assert_same(*_pair(model, tok, mmlu_dir, limit=3, num_fewshot=1, shuffle=True, seeds=2))
