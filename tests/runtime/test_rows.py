"""Rows over processes without processes: grouping by key, dealing to shares, and an immutable
Layout built by keywords."""

from __future__ import annotations

import dataclasses

import pytest

from twinkle_hf.runtime.layout import Layout
from twinkle_hf.runtime.rows import deal_rows, group_rows


def test_rows_are_grouped_by_key_in_the_order_keys_first_appear():
    assert group_rows(["b", "a", "b", "c", "a"]) == {"b": [0, 2], "a": [1, 4], "c": [3]}
    assert list(group_rows(["b", "a", "b"])) == ["b", "a"]
    assert group_rows([]) == {}


@pytest.mark.parametrize("shares", [1, 2, 3, 7])
def test_every_row_is_dealt_to_exactly_one_share(shares):
    token_ids = [[1] * n for n in (5, 1, 9, 3, 3, 8, 2)]
    dealt = [deal_rows(token_ids, None, s, shares) for s in range(shares)]
    assert sorted(i for rows in dealt for i in rows) == list(range(len(token_ids)))
    assert dealt[0][0] == 2  # the longest row goes first, to the first share


def test_a_prefix_group_stays_whole_and_the_largest_groups_are_dealt_first():
    token_ids = [[1] * n for n in (4, 4, 1, 9, 2, 2)]
    groups = ["q1", "q1", "q2", "q3", "q4", "q4"]
    first, second = deal_rows(token_ids, groups, 0, 2), deal_rows(token_ids, groups, 1, 2)
    assert first == [3, 4, 5] and second == [0, 1, 2]  # sizes q3 9, q1 8, q4 4, q2 1: dealt in turn
    for rows in (first, second):
        assert rows == sorted(rows)
        for key in set(groups):
            members = {i for i, g in enumerate(groups) if g == key}
            assert members <= set(rows) or not members & set(rows)


def test_a_layout_is_built_by_keywords_and_never_changes():
    layout = Layout(processes=2, rank=1, share=1, shares=2, sharding="fsdp2", step_ranks=(0, 1))
    assert layout.lockstep and layout.mode == "lockstep over a sharded model"
    with pytest.raises(TypeError):
        Layout(2, 1)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.rank = 0  # type: ignore[misc]
