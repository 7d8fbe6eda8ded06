"""The interval of an accuracy is the interval of the accuracy shown beside it (the rule itself:
test_intervals.py)."""

from __future__ import annotations

import numpy as np
import pytest

from twinkle_hf.metrics.accuracy import accuracy, accuracy_interval
from twinkle_hf.metrics.uncertainty import Z95, wilson_interval, wilson_score_interval


def block(correct_per_question: list[list[int]]) -> dict:
    """accuracy() of questions whose rows (one per order) are right (1) or wrong (0)."""
    question = np.repeat(np.arange(len(correct_per_question)), [len(r) for r in correct_per_question])
    order = np.concatenate([np.arange(len(r)) for r in correct_per_question])
    correct = np.concatenate([np.array(r) for r in correct_per_question]).astype(bool)
    return accuracy(question, order, correct)


def test_unshuffled_zero_one_scores_give_the_plain_wilson_interval():
    acc = block([[1]] * 3 + [[0]] * 7)  # 3 of 10
    interval = accuracy_interval(acc, small_n=30)
    assert acc["value"] == pytest.approx(0.3)
    assert interval["ci_method"] == "wilson" and "n_effective" not in interval
    assert interval["ci95"] == pytest.approx(list(wilson_interval(3, 10)))


def test_one_and_a_half_right_of_five_is_not_two_of_five():
    """The issue's case: 5 questions under 2 orders, 30.0% shown; Python rounds 1.5 to 2."""
    acc = block([[1, 1], [1, 0], [0, 0], [0, 0], [0, 0]])
    assert acc["value"] == pytest.approx(0.3) and round(acc["value"] * 5) == 2
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    assert low < 0.3 < high
    assert (low, high) != pytest.approx(wilson_interval(2, 5))  # the interval of 40%, not of 30%
    assert high < wilson_interval(2, 5)[1] and low < wilson_interval(2, 5)[0]


def test_a_shuffled_interval_of_few_questions_is_never_narrower_than_wilson_over_its_questions():
    """25 questions under 4 orders: each question's score varies less than a 0/1 outcome, but 25
    questions are still 25 questions (no effective n above n)."""
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(0, 2, size=4)) for _ in range(25)]
    acc = block(rows)
    p, n = acc["value"], acc["n_questions"]
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    w_low, w_high = wilson_score_interval(p, n)
    assert low <= w_low < p < w_high <= high
    assert (high - low) / 2 >= Z95 * acc["stderr"] * np.sqrt((n - 1) / n)  # and as wide as the error bar


def test_many_shuffled_questions_with_a_spread_get_the_clustered_normal_interval():
    rng = np.random.default_rng(1)
    rows = [list(rng.integers(0, 2, size=4)) for _ in range(400)]
    acc = block(rows)
    interval = accuracy_interval(acc, small_n=30)
    assert interval["ci_method"] == "clustered normal"
    assert interval["ci95"] == pytest.approx([acc["value"] - Z95 * acc["stderr"], acc["value"] + Z95 * acc["stderr"]])


@pytest.mark.parametrize("rows", [
    [[1, 0, 0, 0]] * 8,  # every question right once in four orders: no spread at all
    [[1, 1, 1]] * 6, [[0, 0]] * 3, [[1]],
    [[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1]],
])
def test_the_interval_always_contains_the_accuracy_shown(rows):
    acc = block(rows)
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    assert 0.0 <= low <= acc["value"] <= high <= 1.0 and high > low


@pytest.mark.parametrize("p", [0.0, 0.01, 0.3, 0.5, 0.99, 1.0])
@pytest.mark.parametrize("n", [1, 2.5, 7, 40])
def test_the_wilson_score_interval_contains_p(p, n):
    low, high = wilson_score_interval(p, n)
    assert 0.0 <= low <= p <= high <= 1.0


def test_the_wilson_score_interval_refuses_impossible_input():
    with pytest.raises(ValueError, match="wilson_score_interval"):
        wilson_score_interval(1.2, 10)
    with pytest.raises(ValueError, match="wilson_score_interval"):
        wilson_score_interval(0.5, 0)
