"""Bias metrics against hand-computed values on tiny synthetic predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinkle_hf.metrics.bias import NEEDS_TWO, bias_metrics
from twinkle_hf.metrics.summarize import accuracy
from twinkle_hf.metrics.uncertainty import question_codes, wilson_interval
from twinkle_hf.schema import LetterColumns, Predictions


def _one(name: str):
    """One block of bias_metrics (no bootstrap): the metric as production computes it."""
    return lambda preds, min_per_letter=5: bias_metrics(preds, n_boot=0, min_per_letter=min_per_letter)[name]


all_correct, any_correct, order_sensitivity, fluctuation = map(
    _one, ("all_correct", "any_correct", "order_sensitivity", "fluctuation"))
letter_recall, rstd, rsd, ckld, debiased_accuracy = map(
    _one, ("letter_recall", "rstd", "rsd", "ckld", "debiased_accuracy"))


def pride(preds, fraction=0.05, seed=0):
    return bias_metrics(preds, n_boot=0, pride_fraction=fraction, seed=seed)["pride"]


def cyclic(k: int, base: list[int] | None = None) -> list[list[int]]:
    """The k rotations of ``base``: perm_s[j] = base[(j + s) % k]."""
    base = list(range(k)) if base is None else base
    return [base[s:] + base[:s] for s in range(k)]


def question(qid: str, perms: list[list[int]], gold: int, picks: list[int], *, dataset: str = "ds",
             probs: list[list[float]] | None = None, first_index: int = 0) -> list[dict]:
    """Rows of one question; ``gold`` and ``picks[r]`` are ORIGINAL option indices."""
    return [{"dataset": dataset, "id": qid, "order_index": first_index + r, "perm": list(p),
             "answer": p.index(gold), "pred": p.index(picks[r]), "probs": None if probs is None else probs[r]}
            for r, p in enumerate(perms)]


def build(rows: list[dict]) -> Predictions:
    """Predictions from row dicts; probs default to one-hot at the prediction."""
    def probs(row: dict) -> np.ndarray:
        if row["probs"] is not None:
            return np.array(row["probs"], dtype=np.float64)
        return np.eye(len(row["perm"]))[row["pred"]]

    return Predictions(
        dataset=[r["dataset"] for r in rows], id=[r["id"] for r in rows], subject=["s"] * len(rows),
        order_index=np.array([r["order_index"] for r in rows], dtype=np.int64), perm=[r["perm"] for r in rows],
        answer=np.array([r["answer"] for r in rows], dtype=np.int64),
        pred=np.array([r["pred"] for r in rows], dtype=np.int64),
        letters=LetterColumns([probs(r) for r in rows], np.ones(len(rows))),
    )


def perfect(n: int = 5, k: int = 4) -> Predictions:
    return build([row for i in range(n) for row in question(f"q{i}", cyclic(k), i % k, [i % k] * k)])


def constant_a(n: int = 5, k: int = 4) -> Predictions:
    """Always picks the displayed letter A; probs (dyadic, so sums are exact) favour A."""
    probs = [[0.625] + [0.375 / (k - 1)] * (k - 1)] * k
    return build([row for i in range(n)
                  for row in question(f"q{i}", cyclic(k), i % 2, [p[0] for p in cyclic(k)], probs=probs)])


def test_perfect_predictor():
    preds = perfect()
    assert all_correct(preds)["value"] == 1.0 and any_correct(preds)["value"] == 1.0
    assert order_sensitivity(preds)["value"] == 0.0 and fluctuation(preds)["value"] == 0.0
    assert rstd(preds)["value"] == 0.0 and rsd(preds)["value"] == 0.0
    assert ckld(preds)["value"] == pytest.approx(0.0, abs=1e-15)  # identical shares: log(1) = 0
    assert debiased_accuracy(preds)["value"] == 1.0
    assert letter_recall(preds)["value"] == {"A": 1.0, "B": 1.0, "C": 1.0, "D": 1.0}


def test_constant_predictor_always_a():
    preds = constant_a()  # 5 questions x 4 rotations: every letter is gold 5 times
    assert letter_recall(preds)["value"] == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0}
    # recalls [1, 0, 0, 0]: mean 1/4, population variance (3/4^2 + 3 * 1/4^2) / 4 = 3/16
    assert rstd(preds)["value"] == pytest.approx(100 * math.sqrt(3 / 16))
    assert rsd(preds)["value"] == pytest.approx(math.sqrt(3 / 16) / 0.25)
    # gold share 1/4 each (stays 1/4 after eps); predicted [1, 0, 0, 0] + eps, renormalised
    eps = 1e-10
    q_a, q_other = (1 + eps) / (1 + 4 * eps), eps / (1 + 4 * eps)
    assert ckld(preds)["value"] == pytest.approx(0.25 * math.log(0.25 / q_a) + 0.75 * math.log(0.25 / q_other))
    # right only when gold is shown at A (1 rotation of 4): never all, always any
    assert all_correct(preds)["value"] == 0.0 and any_correct(preds)["value"] == 1.0
    assert order_sensitivity(preds)["value"] == 1.0
    assert fluctuation(preds)["value"] == 1.0  # 4 rotations put 4 different contents at A
    # content average is 1/4 for every option (a tie) -> original option 0, gold for q0, q2, q4
    assert debiased_accuracy(preds)["value"] == pytest.approx(3 / 5)


def test_letter_never_gold_and_min_per_letter():
    # k=4, identity order only for letters A-C as gold; D is never gold; 2 perms each (same order)
    rows = []
    for i, (gold, pick) in enumerate([(0, 0), (0, 0), (1, 1), (1, 0), (2, 2), (2, 2)]):
        rows += question(f"q{i}", [[0, 1, 2, 3]] * 2, gold, [pick, pick])
    preds = build(rows)
    recall = letter_recall(preds)
    assert recall["value"] == {"A": 1.0, "B": 0.5, "C": 1.0, "D": None}
    assert recall["n_gold"] == {"A": 4, "B": 4, "C": 4, "D": 0}
    # D is left out: recalls [1, .5, 1], mean 5/6, population var ((1/6)^2 * 2 + (1/3)^2) / 3 = 1/18
    assert rstd(preds, min_per_letter=4)["value"] == pytest.approx(100 * math.sqrt(1 / 18))
    assert rstd(preds, min_per_letter=4)["letters"] == ["A", "B", "C"]
    assert rsd(preds, min_per_letter=4)["value"] == pytest.approx(math.sqrt(1 / 18) / (5 / 6))
    out = rstd(preds)  # default 5: no letter qualifies
    assert out["value"] is None and out["reason"] == "needs at least 2 letters that are gold >= 5 times (got 0)"
    with pytest.raises(ValueError, match="min_per_letter"):
        rstd(preds, min_per_letter=0)


def test_ckld_needs_enough_gold_for_a_letter_never_predicted():
    def run(per_letter: int):  # right on A-C; a question whose gold is D is answered A
        rows = []
        for i in range(4 * per_letter):
            gold = i % 4
            rows += question(f"q{i}", [[0, 1, 2, 3]], gold, [0 if gold == 3 else gold])
        return build(rows)

    few = ckld(run(2))  # D gold twice, never predicted: chance as much as avoidance
    assert few["value"] is None and "D (gold 2 times)" in few["reason"]
    enough = ckld(run(5))  # gold 5 times, never predicted: avoidance, and the divergence says so
    p, q = np.full(4, 0.25), np.array([0.5, 0.25, 0.25, 0.0])
    q = (q + 1e-10) / (q + 1e-10).sum()
    assert enough["value"] == pytest.approx(float((p * np.log(p / q)).sum()))


def test_rsd_not_applicable_when_every_recall_is_zero():
    rows = []
    for i in range(4):  # gold alternates A/B, the model picks the other one: no letter favoured, all wrong
        rows += question(f"q{i}", [[0, 1, 2]] * 2, i % 2, [1 - i % 2] * 2)
    out = rsd(build(rows), min_per_letter=2)
    assert (out["value"], out["reason"]) == (None, "per-letter recall is 0 for every letter")
    assert rstd(build(rows), min_per_letter=2)["value"] == 0.0  # C, left out, is never predicted: nothing hidden


def test_a_left_out_letter_the_model_leans_on_makes_rstd_not_applicable():
    rows = []
    for i in range(4):  # gold alternates A/B, the model always picks C, which is never gold
        rows += question(f"q{i}", [[0, 1, 2]] * 2, i % 2, [2, 2])
    out = rstd(build(rows), min_per_letter=2)  # over A and B alone: recalls 0 and 0, a spread of 0
    assert out["value"] is None and "C (gold 0, predicted 8 times)" in out["reason"]
    assert out["left_out"] == ["C"] and rsd(build(rows), min_per_letter=2)["reason"] == out["reason"]


def test_fluctuation_and_all_any_by_hand_k3():
    rows = question("q0", cyclic(3), 0, [0, 0, 1])  # right, right, wrong; pairs differ: 2 of 3
    rows += question("q1", cyclic(3)[:2], 2, [2, 2])  # right twice; no pair differs
    rows += question("q2", cyclic(3)[:2], 1, [0, 2])  # wrong twice; 1 of 1 pair differs
    preds = build(rows)
    assert fluctuation(preds)["value"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert all_correct(preds)["value"] == pytest.approx(1 / 3)
    assert any_correct(preds)["value"] == pytest.approx(2 / 3)
    assert order_sensitivity(preds)["value"] == pytest.approx(1 / 3)


def test_k5_and_mixed_k():
    five = question("q5", cyclic(5), 4, [4, 4, 4, 4, 0])  # wrong once; the last order shows 4 at A
    three = question("q3", cyclic(3), 1, [1, 1, 1])
    preds = build(five + three)
    assert all_correct(preds)["value"] == pytest.approx(0.5)
    assert fluctuation(preds)["value"] == pytest.approx((4 / 10 + 0) / 2)  # 4 of C(5,2)=10 pairs differ
    recall = letter_recall(preds)["value"]
    # q5 gold sits at E, D, C, B, A over the rotations; q3 gold at B, A, C
    assert recall == {"A": 0.5, "B": 1.0, "C": 1.0, "D": 1.0, "E": 1.0}
    assert debiased_accuracy(preds)["value"] == 1.0  # 4 votes for option 4; padding never wins


def test_debiased_accuracy_averages_probabilities_by_content():
    probs = [[0.5, 0.25, 0.25], [0.5, 0.125, 0.375]]
    # order 1 shows options [2, 0, 1]: content sums are 0.625, 0.625, 0.75 -> option 2 (gold)
    rows = question("q0", [[0, 1, 2], [2, 0, 1]], 2, [0, 2], probs=probs)
    assert debiased_accuracy(build(rows))["value"] == 1.0
    assert accuracy(np.zeros(2), np.arange(2), build(rows).correct)["value"] == 0.5


def test_single_permutation_order_metrics_do_not_apply():
    rows = question("q0", [[1, 0, 2]], 0, [0]) + question("q1", [[0, 1, 2]], 2, [1])
    preds = build(rows)
    for fn in (all_correct, any_correct, order_sensitivity, fluctuation):
        out = fn(preds)
        assert out["value"] is None and out["reason"] == f"{NEEDS_TWO} (2 of 2 questions have fewer)"
    assert debiased_accuracy(preds)["value"] == 0.5  # equals plain accuracy


def test_original_rows_are_ignored():
    rows = question("q0", cyclic(3), 0, [0, 0, 0]) + question("q0", [[0, 1, 2]], 0, [2], first_index=-1)
    preds = build(rows)
    assert all_correct(preds)["value"] == 1.0 and fluctuation(preds)["value"] == 0.0


def test_same_id_in_two_datasets_is_two_questions():
    rows = question("q1", cyclic(2), 0, [0, 0], dataset="a") + question("q1", cyclic(2), 0, [0, 1], dataset="b")
    preds = build(rows)
    assert all_correct(preds)["value"] == 0.5  # merged it would be 0.0
    assert fluctuation(preds)["value"] == 0.5
    assert question_codes(preds).tolist() == [0, 0, 1, 1]


def planted(gold_favoured: list[bool], prior: list[float], seed: int = 7) -> Predictions:
    """Cyclic rows with probs = normalise(prior[letter] * content[option]); content gives 2 to the
    favoured option (gold, or a wrong one) and 1 to the rest."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, good in enumerate(gold_favoured):
        base, gold = rng.permutation(4).tolist(), int(rng.integers(4))
        favoured = gold if good else (gold + 1) % 4
        content = np.where(np.arange(4) == favoured, 2.0, 1.0)
        perms = cyclic(4, base)
        probs = [(np.array(prior) * content[p]) / (np.array(prior) * content[p]).sum() for p in perms]
        picks = [p[int(np.argmax(pr))] for p, pr in zip(perms, probs)]
        rows += question(f"q{i:02d}", perms, gold, picks, probs=[pr.tolist() for pr in probs])
    return build(rows)


def test_pride_recovers_a_planted_prior():
    prior = [0.7, 0.1, 0.1, 0.1]
    out = pride(planted([True] * 40, prior), fraction=0.25, seed=0)
    # averaging log-probs over the 4 rotations cancels the content term exactly, so the prior comes
    # back up to the published 1e-10 inside the logarithm, and dividing it out leaves argmax content
    # = gold everywhere
    assert out["prior"] == pytest.approx(dict(zip("ABCD", prior)), abs=1e-9)
    assert out["n_prior_questions"] == 10 and out["n_questions"] == 30  # int(0.25 * 40) = 10
    assert out["accuracy_before"] == 0.25  # 0.7 * 1 beats 0.1 * 2: always A, right 1 time in 4
    assert out["value"] == 1.0


def test_pride_accuracy_matches_content_argmax_accuracy():
    out = pride(planted([True] * 30 + [False] * 10, [0.7, 0.1, 0.1, 0.1]), fraction=0.25, seed=3)
    # content argmax is right on the 30 gold-favoured questions (q00..q29) outside the 10 prior
    # questions drawn at random, and wrong on the others
    s = sum(int(q["id"][1:]) < 30 for q in out["prior_questions"])
    assert out["accuracy_before"] == 0.25
    assert round(out["value"] * 30, 9) == 30 - s


def test_pride_needs_cyclic_rotations_and_enough_questions():
    rows = []
    for i in range(4):  # four orders that are not rotations of one another
        rows += question(f"q{i}", [[0, 1, 2], [1, 0, 2], [0, 2, 1], [2, 1, 0]], 0, [0, 0, 0, 0])
    assert pride(build(rows), fraction=0.25)["reason"] == "PriDe needs --shuffle-mode cyclic"
    missing = build([r for i in range(4) for r in question(f"q{i}", cyclic(3)[:2], 0, [0, 0])])
    assert pride(missing, fraction=0.25)["reason"] == "PriDe needs --shuffle-mode cyclic"
    one = build(question("q0", cyclic(3), 0, [0, 0, 0]))
    assert pride(one)["reason"].startswith("PriDe needs questions outside its prior subset")


@pytest.mark.parametrize(("questions", "fraction", "applies"), [(40, 0.05, False), (40, 0.24, False),
                                                                (40, 0.25, True), (200, 0.05, True)])
def test_pride_is_na_when_its_prior_comes_from_too_few_questions(questions, fraction, applies):
    from twinkle_hf.metrics.pride import MIN_PRIOR_QUESTIONS

    out = pride(planted([True] * questions, [0.7, 0.1, 0.1, 0.1]), fraction=fraction)
    size = max(1, int(fraction * questions))
    assert (out["value"] is not None) == applies == (size >= MIN_PRIOR_QUESTIONS)
    if not applies:
        assert f"from {size} of {questions} questions" in out["reason"]
        assert f"at least {MIN_PRIOR_QUESTIONS}" in out["reason"]


def test_pride_uses_the_most_common_k():
    preds = planted([True] * 40, [0.7, 0.1, 0.1, 0.1])
    extra = build(question("odd", cyclic(3), 0, [0, 0, 0]))
    both = Predictions.concat([preds, extra])
    out = pride(both, fraction=0.25)
    assert (out["k"], out["n_other_k"], out["n_prior_questions"], out["n_questions"]) == (4, 1, 10, 30)
    assert out["value"] == 1.0


def test_bias_metrics_with_and_without_bootstrap():
    preds = constant_a()
    quick = bias_metrics(preds, n_boot=0)
    assert "n_boot" not in quick["rstd"] and quick["rstd"]["value"] == pytest.approx(100 * math.sqrt(3 / 16))
    assert quick["pride"]["reason"] and quick["n_questions"] == 5  # a prior from 1 question: n/a
    full = bias_metrics(preds, n_boot=50, seed=1)
    for name in ("rstd", "ckld"):  # nonlinear: bootstrapped
        assert full[name]["n_boot"] == 50 and "ci95" in full[name]
    for name in ("all_correct", "any_correct", "order_sensitivity", "fluctuation", "debiased_accuracy"):
        assert "n_boot" not in full[name] and full[name] == quick[name]  # means: clustered stderr, no bootstrap
    # the constant predictor keeps all_correct 0 and fluctuation 1 on every question: a spread of 0,
    # so the interval is the plain Wilson interval of 0 of 5 and 5 of 5, not a point
    assert full["all_correct"]["stderr"] == 0.0 and full["all_correct"]["ci95"] == pytest.approx(wilson_interval(0, 5))
    assert full["fluctuation"]["ci95"] == pytest.approx(wilson_interval(5, 5))
    assert bias_metrics(preds, n_boot=50, seed=1) == full


def test_bias_metrics_on_a_single_permutation_and_on_no_rows():
    out = bias_metrics(build(question("q0", [[0, 1]], 0, [0]) + question("q1", [[0, 1]], 1, [1])), n_boot=10)
    assert out["all_correct"]["value"] is None and out["fluctuation"]["reason"].startswith(NEEDS_TWO)
    assert out["debiased_accuracy"]["value"] == 1.0 and out["brier"]["value"] == 0.0
    empty = bias_metrics(build(question("q0", [[0, 1]], 0, [0], first_index=-1)))
    assert all(empty[m]["value"] is None for m in ("all_correct", "rstd", "ckld", "pride", "ece", "brier"))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=1, max_size=8),
       st.sampled_from([3, 4]))
def test_all_correct_le_accuracy_le_any_correct(outcomes: list[list[bool]], k: int):
    rows = []
    for i, right in enumerate(outcomes):
        rows += question(f"q{i}", cyclic(k)[:3], 0, [0 if ok else 1 for ok in right])
    preds = build(rows)
    acc = accuracy(question_codes(preds), preds.order_index, preds.correct)["value"]
    low, high = all_correct(preds)["value"], any_correct(preds)["value"]
    assert low <= acc + 1e-12 and acc <= high + 1e-12
    assert 0.0 <= fluctuation(preds)["value"] <= 1.0
