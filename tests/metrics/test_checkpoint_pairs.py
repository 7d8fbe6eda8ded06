"""Each checkpoint against the first and the previous one (metrics/checkpoint_pairs.py), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from twinkle_hf.metrics.checkpoint_pairs import Outcomes, mark, paired_scalars, question_outcomes, sweep_pairs
from twinkle_hf.schema import Predictions


def _predictions(rows: list[tuple[str, int, list[int], int, int]]) -> Predictions:
    """(id, order index, perm, answer, pred) rows of dataset "d"."""
    return Predictions(dataset=["d"] * len(rows), id=[r[0] for r in rows], subject=["s"] * len(rows),
                       order_index=np.array([r[1] for r in rows], dtype=np.int64), perm=[r[2] for r in rows],
                       answer=np.array([r[3] for r in rows], dtype=np.int64),
                       pred=np.array([r[4] for r in rows], dtype=np.int64))


def test_question_outcomes_are_the_mean_over_orders_and_the_original_order():
    p = _predictions([("q1", 0, [0, 1], 0, 0), ("q1", 1, [1, 0], 1, 0), ("q1", -1, [0, 1], 0, 0),
                      ("q2", 0, [0, 1], 1, 1), ("q2", 1, [1, 0], 0, 0), ("q2", -1, [0, 1], 1, 0)])
    out = question_outcomes(p)
    assert out.accuracy == {("d", "q1"): 0.5, ("d", "q2"): 1.0}
    assert out.acc_original == {("d", "q1"): 1.0, ("d", "q2"): 0.0}
    assert out.orders[("d", "q1")] == out.orders[("d", "q2")]  # the same two orders
    other = question_outcomes(_predictions([("q1", 0, [1, 0], 0, 0), ("q1", 1, [0, 1], 1, 0)]))
    assert other.orders[("d", "q1")] != out.orders[("d", "q1")]


def test_an_unshuffled_run_has_its_one_order_as_both_metrics():
    out = question_outcomes(_predictions([("q1", 0, [0, 1, 2], 2, 2), ("q2", 0, [0, 1, 2], 0, 1)]))
    assert out.accuracy == out.acc_original == {("d", "q1"): 1.0, ("d", "q2"): 0.0}


def test_option_texts_alone_pair_their_accuracy_and_have_no_acc_original():
    import dataclasses

    rows = _predictions([("q1", 0, [0, 1, 2], 2, 2), ("q2", 0, [0, 1, 2], 0, 1)])
    cloze = question_outcomes(dataclasses.replace(rows, formulation=["cloze", "cloze"]))
    assert cloze.accuracy == {("d", "q1"): 1.0, ("d", "q2"): 0.0}
    assert cloze.acc_original == {}
    assert not any(k.startswith("acc_original") for k in paired_scalars(cloze, cloze, "vs_first"))
    assert "p_vs_first" in paired_scalars(cloze, cloze, "vs_first")


def _outcomes(accuracy: list[float], original: list[float], orders: list[int] | None = None) -> Outcomes:
    qs = [("d", f"q{i}") for i in range(len(accuracy))]
    return Outcomes(dict(zip(qs, accuracy)), dict(zip(qs, orders or [0] * len(qs))), dict(zip(qs, original)))


def test_paired_scalars_by_hand():
    base = _outcomes([0.5, 1.0, 0.0], [1, 1, 0])
    other = _outcomes([1.0, 0.5, 1.0], [0, 1, 1])
    got = paired_scalars(base, other, "vs_first")
    # d = (0.5, -0.5, 1): of the 8 sign flips, |sum| >= 1 for (+,+,+) 2, (+,-,+) 1, (-,+,+) 1 and their mirrors: 6/8
    assert got["delta_vs_first"] == pytest.approx(1 / 3) and got["p_vs_first"] == pytest.approx(0.75)
    assert (got["flips_right_to_wrong_vs_first"], got["flips_wrong_to_right_vs_first"]) == (1, 2)
    # original order: one right -> wrong, one wrong -> right: McNemar 1, difference 0
    assert got["acc_original_delta_vs_first"] == 0.0 and got["acc_original_p_vs_first"] == 1.0


def test_questions_shown_in_other_orders_do_not_pair():
    base = _outcomes([0.5, 1.0, 0.0], [1, 1, 0], orders=[7, 7, 7])
    other = _outcomes([1.0, 0.5, 1.0], [0, 1, 1], orders=[7, 7, 8])
    got = paired_scalars(base, other, "vs_previous")
    assert got["delta_vs_previous"] == 0.0 and got["p_vs_previous"] == 1.0  # d = (0.5, -0.5)
    assert (got["flips_right_to_wrong_vs_previous"], got["flips_wrong_to_right_vs_previous"]) == (1, 1)


def test_nothing_in_common_leaves_the_keys_out():
    assert paired_scalars(_outcomes([1.0], [1.0]), Outcomes({}, {}, {}), "vs_first") == {}


def test_a_sweep_marks_what_holm_finds_better_or_worse_than_the_first():
    n = 12
    wrong, right = _outcomes([0.0] * n, [0.0] * n), _outcomes([1.0] * n, [1.0] * n)
    rows = sweep_pairs([wrong, right, wrong, right])
    assert rows[0] == {}
    # vs first: 12 questions gained (p = 2 / 2^12), nothing (p = 1), 12 gained again
    p = 2 / 2**n
    assert [r["p_vs_first"] for r in rows[1:]] == pytest.approx([p, 1.0, p])
    # Holm over 3: the smallest times 3, the next times 2 but never below the one before (3p), the last 1
    assert [r["p_holm_vs_first"] for r in rows[1:]] == pytest.approx([3 * p, 1.0, 3 * p])
    assert [r["vs_first"] for r in rows[1:]] == ["better", "", "better"]
    assert [r["delta_vs_previous"] for r in rows[1:]] == [1.0, -1.0, 1.0]
    assert rows[2]["flips_right_to_wrong_vs_previous"] == n and rows[2]["flips_wrong_to_right_vs_previous"] == 0
    assert [r["vs_first"] for r in sweep_pairs([right, wrong])[1:]] == ["worse"]


def test_holm_can_leave_a_raw_p_below_005_unmarked():
    n = 6  # 6 questions gained: p = 2 / 64 = 0.031 alone, 0.0625 adjusted over two checkpoints
    wrong, right = _outcomes([0.0] * n, [0.0] * n), _outcomes([1.0] * n, [1.0] * n)
    rows = sweep_pairs([wrong, right, right])
    assert rows[1]["p_vs_first"] == pytest.approx(2 / 64) and rows[1]["p_holm_vs_first"] == pytest.approx(4 / 64)
    assert [r["vs_first"] for r in rows[1:]] == ["", ""]
    assert [r["vs_first"] for r in sweep_pairs([wrong, right])[1:]] == ["better"]


def test_mark():
    assert mark(0.1, 0.01) == "better" and mark(-0.1, 0.01) == "worse"
    assert mark(0.1, 0.05) == mark(0.0, 0.0) == mark(None, 0.01) == mark(0.1, float("nan")) == ""
