"""Permutation invariants: a true permutation, gold remapped by index, independent of batching."""

from __future__ import annotations

import math

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.errors import TwinkleError
from twinkle_hf.prompts.permute import expand_permutations, permutations_for
from twinkle_hf.schema import ORIGINAL


def make_rows(n: int, k_of=lambda i: 4, dup: bool = False) -> datasets.Dataset:
    choices = [[("same" if dup and j < 2 else f"q{i}o{j}") for j in range(k_of(i))] for i in range(n)]
    return datasets.Dataset.from_dict(
        {"id": [f"ds/s/{i}" for i in range(n)], "subject": ["s"] * n, "question": [f"q{i}" for i in range(n)],
         "choices": choices, "answer": [i % k_of(i) for i in range(n)]},
        features=CANONICAL_FEATURES,
    )


def by_key(ds: datasets.Dataset) -> dict[tuple[str, int], list[int]]:
    return {(i, p): perm for i, p, perm in zip(ds["id"], ds["order_index"], ds["perm"])}


@pytest.mark.parametrize("mode", ["random", "cyclic", "all"])
def test_each_row_is_a_true_permutation_with_gold_remapped(mode):
    rows = make_rows(13, k_of=lambda i: 2 + i % 4)
    out = expand_permutations(rows, mode, seed=7, n_random=3)
    source = {r["id"]: r for r in rows}
    for r in out:
        src = source[r["id"]]
        k = len(src["choices"])
        assert sorted(r["perm"]) == list(range(k))
        assert r["choices"] == [src["choices"][p] for p in r["perm"]]
        assert r["perm"][r["answer"]] == src["answer"] == r["answer_original"]


def test_counts_per_mode_and_original_added():
    rows = make_rows(5, k_of=lambda i: 3 + (i % 2))  # 3 and 4 options
    assert len(expand_permutations(rows, "none", 1)) == 5
    assert len(expand_permutations(rows, "random", 1, n_random=4)) == 5 * (4 + 1)
    assert len(expand_permutations(rows, "random", 1, n_random=4, score_original=False)) == 20
    ks = [3, 4, 3, 4, 3]
    assert len(expand_permutations(rows, "cyclic", 1, score_original=False)) == sum(ks)
    assert len(expand_permutations(rows, "all", 1, score_original=False)) == sum(math.factorial(k) for k in ks)
    original = expand_permutations(rows, "random", 1, n_random=2).filter(lambda p: p == ORIGINAL,
                                                                      input_columns="order_index")
    assert all(p == list(range(len(p))) for p in original["perm"])


def test_duplicate_option_texts_keep_the_right_gold_index():
    rows = make_rows(20, dup=True)  # options 0 and 1 have the same text
    out = expand_permutations(rows, "random", seed=3, n_random=6, score_original=False)
    for r, gold in zip(out, out["answer_original"]):
        assert r["perm"][r["answer"]] == gold  # by index, not by the (ambiguous) text


def test_cyclic_puts_every_option_in_every_position_once():
    rows = make_rows(30, k_of=lambda i: 2 + i % 5)
    out = expand_permutations(rows, "cyclic", seed=11, score_original=False)
    perms: dict[str, list[list[int]]] = {}
    for i, p in zip(out["id"], out["perm"]):
        perms.setdefault(i, []).append(p)
    for ps in perms.values():
        table = np.array(ps)  # [rotation, position] -> original option
        k = table.shape[1]
        assert table.shape[0] == k
        for pos in range(k):
            assert sorted(table[:, pos]) == list(range(k))
    four = [a for a, p in zip(out["answer"], out["perm"]) if len(p) == 4]
    assert np.bincount(four).tolist() == [len(four) // 4] * 4  # gold letters exactly balanced


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), batch=st.integers(1, 17), limit=st.integers(1, 23),
       order_seed=st.integers(0, 1000), mode=st.sampled_from(["random", "cyclic"]))
def test_independent_of_batch_size_limit_and_order(seed, batch, limit, order_seed, mode):
    rows = make_rows(23, k_of=lambda i: 2 + i % 6)
    full = by_key(expand_permutations(rows, mode, seed, n_random=3))
    order = np.random.default_rng(order_seed).permutation(23)[:limit]
    subset = rows.select(order.tolist())
    ids = subset["id"]
    # expand in chunks of `batch` rows, as a different batch size or shard would
    for start in range(0, len(ids), batch):
        chunk = subset.select(range(start, min(start + batch, len(ids))))
        part = by_key(expand_permutations(chunk, mode, seed, n_random=3))
        for key, perm in part.items():
            assert full[key] == perm


def test_seed_changes_permutations_and_is_reproducible():
    ids = [f"x/{i}" for i in range(200)]
    a = permutations_for("random", 1, 2, ids, 4)[1]
    b = permutations_for("random", 1, 2, ids, 4)[1]
    c = permutations_for("random", 2, 2, ids, 4)[1]
    assert (a == b).all()
    assert (a != c).any(axis=-1).mean() > 0.8


def test_random_permutations_are_close_to_uniform():
    ids = [f"u/{i}" for i in range(6000)]
    perms = permutations_for("random", 99, 1, ids, 4)[1][:, 0, :]
    position_of_0 = np.argmax(perms == 0, axis=1)
    shares = np.bincount(position_of_0, minlength=4) / len(ids)
    assert np.all(np.abs(shares - 0.25) < 0.025)  # ~5 sigma for n=6000


def test_all_mode_refuses_more_than_six_options():
    with pytest.raises(TwinkleError, match="at most 6"):
        expand_permutations(make_rows(1, k_of=lambda i: 7), "all", 1)
