"""Accuracy aggregation against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinkle_hf.metrics.summarize import (
    acc_original,
    accuracy,
    letter_dist,
    summarize_groups,
)
from twinkle_hf.metrics.uncertainty import clustered_stderr, wilson_score_interval
from twinkle_hf.schema import LetterColumns, Predictions


def preds(rows: list[tuple[str, str, str, int, int, int, int]]) -> Predictions:
    """rows of (dataset, id, subject, order_index, k, answer, pred)."""
    return Predictions(
        dataset=[r[0] for r in rows], id=[r[1] for r in rows], subject=[r[2] for r in rows],
        order_index=np.array([r[3] for r in rows]), perm=[list(range(r[4])) for r in rows],
        answer=np.array([r[5] for r in rows]), pred=np.array([r[6] for r in rows]),
        letters=LetterColumns([np.full(r[4], 1 / r[4]) for r in rows], np.ones(len(rows))),
    )


def test_accuracy_per_order_mean_std_and_clustered_stderr():
    # 3 questions x 2 permutations: y = [[1,1],[1,0],[0,0]]
    q = np.array([0, 0, 1, 1, 2, 2])
    p = np.array([0, 1, 0, 1, 0, 1])
    y = np.array([1, 1, 1, 0, 0, 0], dtype=bool)
    acc = accuracy(q, p, y)
    assert acc["per_order"] == pytest.approx([2 / 3, 1 / 3])
    assert acc["value"] == pytest.approx(0.5)
    assert acc["std"] == pytest.approx(np.std([2 / 3, 1 / 3], ddof=1))
    assert (acc["min"], acc["max"]) == pytest.approx((1 / 3, 2 / 3))
    # per-question means 1, .5, 0 -> sd (ddof 1) = .5 -> stderr .5/sqrt(3)
    assert acc["stderr"] == pytest.approx(0.5 / math.sqrt(3))
    assert acc["n_questions"] == 3 and acc["n_permutations"] == 2


def test_original_rows_are_excluded_from_shuffled_accuracy_and_reported_apart():
    q = np.array([0, 0, 1, 1])
    p = np.array([-1, 0, -1, 0])
    y = np.array([1, 0, 1, 0], dtype=bool)
    assert accuracy(q, p, y)["value"] == 0.0
    assert acc_original(p, y)["value"] == 1.0
    assert acc_original(np.array([0, 0]), np.array([True, False]))["value"] == 0.5  # unshuffled run
    assert acc_original(np.array([0, 1]), np.array([True, False]))["value"] is None  # shuffled, no original


def test_stderr_edge_cases():
    assert clustered_stderr(np.array([1.0])) == 0.0
    assert clustered_stderr(np.array([1.0, 1.0, 1.0])) == 0.0


def test_letter_dist_constant_predictor_and_k_not_4():
    dist = letter_dist(np.array([0, 0, 0, 0, 0, 0]), np.array([0, 1, 2, 0, 1, 2]), np.array([3] * 6))
    assert list(dist) == ["A", "B", "C"]
    assert dist["A"] == {"pred": 1.0, "gold": pytest.approx(1 / 3)}
    assert dist["C"]["pred"] == 0.0


def test_groups_micro_macro_and_subjects():
    rows = [("d", "a1", "x", 0, 4, 0, 0), ("d", "a2", "x", 0, 4, 1, 1), ("d", "a3", "x", 0, 4, 2, 2),
            ("d", "b1", "y", 0, 4, 0, 1)]
    out = summarize_groups(preds(rows))
    block = out["datasets"]["d"]
    assert block["subjects"]["x"]["accuracy"]["value"] == 1.0
    assert block["subjects"]["y"]["accuracy"]["value"] == 0.0
    assert block["metrics"]["accuracy"]["value"] == pytest.approx(0.75)  # micro
    assert block["metrics"]["accuracy_macro"]["value"] == pytest.approx(0.5)  # macro over subjects
    assert out["overall"]["acc_original"]["value"] == pytest.approx(0.75)


def test_files_are_a_grouping_when_they_are_not_the_subjects():
    import dataclasses

    rows = [("d", "a1", "x", 0, 4, 0, 0), ("d", "a2", "y", 0, 4, 1, 1), ("d", "a3", "x", 0, 4, 2, 0),
            ("d", "b1", "y", 0, 4, 0, 1)]
    mixed = dataclasses.replace(preds(rows), file=["f1.csv", "f1.csv", "f2.csv", "f2.csv"], row=np.array([0, 1, 0, 1]))
    files = summarize_groups(mixed)["datasets"]["d"]["files"]  # each file holds both subjects
    assert {f: b["accuracy"]["value"] for f, b in files.items()} == {"f1.csv": 1.0, "f2.csv": 0.0}
    one_each = dataclasses.replace(mixed, file=["x.csv", "y.csv", "x.csv", "y.csv"])
    assert "files" not in summarize_groups(one_each)["datasets"]["d"]  # the subject table already is per file


def test_same_id_in_two_datasets_is_two_questions():
    rows = [("d1", "q", "s", 0, 2, 0, 0), ("d2", "q", "s", 0, 2, 0, 1)]
    assert summarize_groups(preds(rows))["overall"]["accuracy"]["n_questions"] == 2


def test_accuracy_interval_is_wilson_for_small_n_and_clustered_normal_otherwise():
    from twinkle_hf.metrics.summarize import accuracy_interval

    small = accuracy_interval({"value": 0.0, "stderr": 0.0, "n_questions": 10}, small_n=30)
    assert small["ci_method"] == "wilson" and small["ci95"][0] == 0.0 and small["ci95"][1] > 0.2
    big = accuracy_interval({"value": 0.5, "stderr": 0.05, "n_questions": 100}, small_n=30)  # a binomial's spread
    assert big["ci_method"] == "clustered normal"
    assert big["ci95"] == pytest.approx([0.5 - 1.959964 * 0.05, 0.5 + 1.959964 * 0.05])


def test_summary_carries_the_bias_metrics_with_reasons_when_they_do_not_apply():
    rows = [("d", "a", "x", 0, 4, 0, 0), ("d", "b", "x", 0, 4, 1, 0)]  # one permutation each
    out = summarize_groups(preds(rows))["overall"]
    assert out["all_correct"]["value"] is None and "at least 2 permutations" in out["all_correct"]["reason"]
    # predicts A, gold is A and B: B never predicted, but gold once only -- chance as much as avoidance
    assert out["ckld"]["value"] is None and "B (gold 1 time)" in out["ckld"]["reason"]


def test_micro_and_macro_accuracy_are_named_with_error_bars():
    """x: 2 of 4 right (stderr sqrt(0.25/3)/2... by hand below); y: 1 of 2 right."""
    rows = [("d", f"x{i}", "x", 0, 4, 0, g) for i, g in enumerate([0, 0, 1, 1])] + \
        [("d", "y0", "y", 0, 4, 0, 0), ("d", "y1", "y", 0, 4, 0, 1)]
    block = summarize_groups(preds(rows))["datasets"]["d"]["metrics"]
    se_x = (np.std([1, 1, 0, 0], ddof=1)) / 2  # sample sd over 4 questions / sqrt(4)
    se_y = (np.std([1, 0], ddof=1)) / np.sqrt(2)
    macro = block["accuracy_macro"]
    assert macro["value"] == pytest.approx(0.5) and macro["n_subjects"] == 2 and "subjects" in macro["over"]
    assert macro["stderr"] == pytest.approx(np.sqrt(se_x**2 + se_y**2) / 2)
    n_eff = 2**2 / (1 / 4 + 1 / 2)  # the subjects weigh alike: Kish's effective n of 4 + 2 questions
    assert macro["n_effective"] == pytest.approx(n_eff, abs=0.01) and macro["ci_method"] == "wilson"
    assert macro["ci95"] == pytest.approx(list(wilson_score_interval(0.5, n_eff)))
    micro = block["accuracy_micro"]
    assert micro["value"] == pytest.approx(0.5) and "questions" in micro["over"]
    assert micro["stderr"] == pytest.approx(np.std([1, 1, 0, 0, 1, 0], ddof=1) / np.sqrt(6))
