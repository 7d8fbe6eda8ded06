"""Error bars and calibration against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import bootstrap_predictions, cluster_bootstrap, take_rows
from test_bias import build, cyclic, question

from twinkle_hf.metrics.bias import bias_metrics
from twinkle_hf.metrics.uncertainty import (
    bootstrap_mean,
    bootstrap_stats,
    brier,
    ece,
    variance_components,
    wilson_interval,
)

Z = 1.959964


def test_wilson_zero_of_ten():
    # p = 0: centre = half = (z^2/20) / (1 + z^2/10), so the interval is [0, z^2 / (10 + z^2)]
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(Z**2 / (10 + Z**2))
    assert high == pytest.approx(0.2775, abs=1e-4)  # the textbook value


def test_wilson_five_of_ten_is_symmetric():
    half = Z / (1 + Z**2 / 10) * math.sqrt(0.25 / 10 + Z**2 / 400)
    assert wilson_interval(5, 10) == pytest.approx((0.5 - half, 0.5 + half))
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert (low, high) == pytest.approx((1 - Z**2 / (10 + Z**2), 1.0))


@pytest.mark.parametrize("successes, n", [(0, 0), (3, 2), (-1, 5)])
def test_wilson_rejects_impossible_counts(successes: int, n: int):
    with pytest.raises(ValueError, match="wilson_interval"):
        wilson_interval(successes, n)


def test_variance_components_by_hand():
    # y = [[1, 1], [1, 0], [0, 0]]: question means 1, .5, 0; within variances 0, 1/4, 0
    q, y = np.array([0, 0, 1, 1, 2, 2]), np.array([1, 1, 1, 0, 0, 0], dtype=bool)
    out = variance_components(q, y)
    assert out["within_question"] == pytest.approx(1 / 12)
    assert out["between_question"] == pytest.approx(1 / 6)  # ((1/2)^2 + 0 + (1/2)^2) / 3
    assert out["within_question"] + out["between_question"] == pytest.approx(np.var(y))  # 1/4


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_variance_components_identity_for_balanced_designs(n: int, k: int, data: st.DataObject):
    y = np.array(data.draw(st.lists(st.booleans(), min_size=n * k, max_size=n * k)))
    out = variance_components(np.repeat(np.arange(n), k), y)
    assert out["within_question"] + out["between_question"] == pytest.approx(np.var(y), abs=1e-12)


def test_bootstrap_mean_is_deterministic_per_seed_and_seeds_differ():
    values = np.arange(20) % 3 == 0
    first, again = bootstrap_mean(values, 200, seed=5), bootstrap_mean(values, 200, seed=5)
    assert first == again and first["n_boot"] == 200
    assert bootstrap_mean(values, 200, seed=6)["stderr"] != first["stderr"]
    low, high = first["ci95"]
    assert low <= values.mean() <= high


def test_bootstrap_mean_of_two_values_matches_the_exact_distribution():
    # replicate means of [0, 1] are 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4: sd = sqrt(1/8);
    # with B = 20000 the estimate's own sd is about sqrt(1/8) / sqrt(2B) = 0.0018, so 0.01 is safe
    out = bootstrap_mean(np.array([0.0, 1.0]), 20000, seed=0)
    assert out["stderr"] == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    assert out["ci95"] == (0.0, 1.0)


def test_constant_values_have_zero_stderr():
    assert bootstrap_mean(np.full(7, 0.25), 50)["stderr"] == 0.0
    assert bootstrap_mean(np.full(7, 0.25), 0) == {"stderr": None, "ci95": None, "n_boot": 0, "n_invalid": 0}


def test_bootstrap_stats_drops_replicates_where_the_metric_does_not_apply():
    out = bootstrap_stats(lambda sums: np.full(len(sums), np.nan), np.ones((4, 2)), 30)
    assert out == {"stderr": None, "ci95": None, "n_boot": 30, "n_invalid": 30}


def test_generic_bootstrap_equals_fast_path_and_copies_stay_distinct():
    rows = []
    for i, right in enumerate([[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]]):
        rows += question(f"q{i}", cyclic(3), 0, [0 if ok else 1 for ok in right])
    preds = build(rows)
    slow = bootstrap_predictions(lambda p: bias_metrics(p, n_boot=0)["all_correct"]["value"], preds, 100, seed=4)
    fast = bootstrap_mean(np.array([1.0, 0, 0, 1, 0]), 100, seed=4)  # per-question all-correct
    assert slow == fast  # the same seed draws the same questions; both means are k/5 exactly
    # every replicate holds 5 distinct questions of 3 rows, even when one is drawn twice
    sizes = cluster_bootstrap(lambda r, c: len(r) + 100 * len(set(c.tolist())), np.repeat(np.arange(5), 3), 20)
    assert sizes["stderr"] == 0.0 and sizes["ci95"] == (515.0, 515.0)


def test_take_rows_renames_copies():
    preds = build(question("q0", cyclic(2), 0, [0, 0]))
    copy = take_rows(preds, np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]))
    assert copy.id == ["q0#0", "q0#0", "q0#1", "q0#1"] and copy.order_index.tolist() == [0, 1, 0, 1]


def test_ece_and_brier_by_hand():
    probs = np.array([[0.75, 0.25], [0.75, 0.25], [0.5, 0.5]])
    answer, pred = np.array([0, 1, 0]), np.array([0, 0, 0])
    # confidence .75 -> bin (0.733, 0.8]: acc 1/2, conf .75; confidence .5 -> bin (0.467, 0.533]: acc 1
    assert ece(probs, pred == answer) == pytest.approx(2 / 3 * 0.25 + 1 / 3 * 0.5)
    # (1/16 + 1/16), (9/16 + 9/16), (1/4 + 1/4) -> mean of 1/8, 9/8, 1/2
    assert brier(probs, answer) == pytest.approx((1 / 8 + 9 / 8 + 1 / 2) / 3)
    assert ece(np.eye(3), np.ones(3, bool)) == 0.0 and brier(np.eye(3), np.arange(3)) == 0.0
