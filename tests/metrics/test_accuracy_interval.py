"""The small-sample interval of an accuracy is the interval of the accuracy shown beside it."""

from __future__ import annotations

import numpy as np
import pytest

from twinkle_hf.metrics.accuracy import accuracy, accuracy_interval, effective_questions
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
    assert effective_questions(acc) == pytest.approx(10)
    assert interval["ci_method"] == "wilson"
    assert interval["ci95"] == pytest.approx(list(wilson_interval(3, 10)))


def test_one_and_a_half_right_of_five_is_not_two_of_five():
    """The issue's case: 5 questions under 2 orders, 30.0% shown; Python rounds 1.5 to 2."""
    acc = block([[1, 1], [1, 0], [0, 0], [0, 0], [0, 0]])
    assert acc["value"] == pytest.approx(0.3) and round(acc["value"] * 5) == 2
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    assert low < 0.3 < high
    assert (low, high) != pytest.approx(wilson_interval(2, 5))  # the interval of 40%, not of 30%
    assert high < wilson_interval(2, 5)[1] and low < wilson_interval(2, 5)[0]


def test_a_shuffled_interval_follows_the_clustered_error_bar():
    """Half-width near p is 1.96 x sd_pop / sqrt(n): the clustered stderr up to sqrt((n-1)/n)."""
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(0, 2, size=4)) for _ in range(25)]
    acc = block(rows)
    p, n = acc["value"], acc["n_questions"]
    n_eff = effective_questions(acc)
    assert n <= n_eff <= 4 * n
    sd_pop = np.std([np.mean(r) for r in rows])
    assert p * (1 - p) / n_eff == pytest.approx(sd_pop**2 / n)
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    assert low < p < high
    wald_half = Z95 * acc["stderr"] * np.sqrt((n - 1) / n)
    assert (high - low) / 2 == pytest.approx(wald_half, rel=0.15)  # Wilson's shrinkage only


@pytest.mark.parametrize("rows", [
    [[1, 0, 0, 0]] * 8,  # every question right once in four orders: no spread at all
    [[1, 1, 1]] * 6, [[0, 0]] * 3, [[1]],
    [[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1]],
])
def test_the_interval_always_contains_the_accuracy_shown(rows):
    acc = block(rows)
    low, high = accuracy_interval(acc, small_n=30)["ci95"]
    assert 0.0 <= low <= acc["value"] <= high <= 1.0
    assert effective_questions(acc) <= acc["n_questions"] * acc["n_permutations"]


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
