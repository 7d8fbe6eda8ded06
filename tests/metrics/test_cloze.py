"""Cloze metrics (acc, acc_norm, acc_bytes; letter metrics n/a) and the two formulations compared
(MCF - CF, paired and clustered by question; max(MCF, CF)), against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from twinkle_hf.metrics.cloze import LETTER_METRICS, NO_LETTERS
from twinkle_hf.metrics.summarize import summarize, summarize_groups
from twinkle_hf.schema import CLOZE, ClozeColumns, LetterColumns, Predictions


def cloze_rows(answers: list[int], pred: list[int], norm: list[int], size: list[int]) -> Predictions:
    n = len(answers)
    return Predictions(dataset=["d"] * n, id=[f"q{i}" for i in range(n)], subject=["s"] * n,
                       order_index=np.zeros(n, dtype=np.int64), perm=[[0, 1, 2, 3]] * n,
                       answer=np.array(answers), pred=np.array(pred), formulation=[CLOZE] * n,
                       cloze=ClozeColumns([np.zeros(4)] * n, np.array(norm), np.array(size)))


def letter_rows(ids: list[str], orders: list[int], correct: list[bool]) -> Predictions:
    n = len(ids)
    answer = np.zeros(n, dtype=np.int64)
    probs = [np.array([0.7, 0.1, 0.1, 0.1]) if c else np.array([0.1, 0.7, 0.1, 0.1]) for c in correct]
    return Predictions(dataset=["d"] * n, id=ids, subject=["s"] * n, order_index=np.array(orders),
                       perm=[[0, 1, 2, 3]] * n, answer=answer, pred=np.where(correct, 0, 1),
                       letters=LetterColumns(probs, np.ones(n))).tagged("logit")


def test_cloze_metrics_are_lm_evals_three_accuracies_and_no_letter_metric():
    m = summarize(cloze_rows([0, 1, 2, 3], pred=[0, 1, 0, 0], norm=[0, 1, 2, 0], size=[1, 1, 2, 3]))
    assert m["formulation"] == "cloze"
    assert m["accuracy"]["value"] == 0.5 and m["acc_norm"]["value"] == 0.75 and m["acc_bytes"]["value"] == 0.75
    assert m["accuracy"]["stderr"] == pytest.approx(np.std([1, 1, 0, 0], ddof=1) / 2)
    for name in LETTER_METRICS:
        assert m[name] == {"value": None, "reason": NO_LETTERS}, name


def test_formulations_gap_is_paired_and_clustered_by_question():
    # letters: q0 right in 2 of 2 orders, q1 in 1 of 2, q2 in 0 of 2 (the original order, -1, is left out)
    letters = letter_rows(["q0", "q0", "q1", "q1", "q2", "q2", "q0"], [0, 1, 0, 1, 0, 1, -1],
                          [True, True, True, False, False, False, False])
    cloze = cloze_rows([0, 0, 0], pred=[0, 0, 0], norm=[1, 0, 0], size=[1, 0, 0])  # CF (acc_norm): 0, 1, 1
    both = Predictions.concat([letters, cloze])
    m = summarize(both)
    f = m["formulations"]
    diff = np.array([1.0, 0.5, 0.0]) - np.array([0.0, 1.0, 1.0])
    assert f["gap"]["value"] == pytest.approx(diff.mean())
    assert f["gap"]["stderr"] == pytest.approx(np.std(diff, ddof=1) / np.sqrt(3))
    assert f["mcf"]["value"] == pytest.approx(0.5) and f["cf"]["value"] == pytest.approx(2 / 3)
    assert f["max"] == {**f["cf"], "formulation": "cloze"}
    assert f["usable"] == "either" and "Neither formulation" in f["sentence"]
    assert m["accuracy"]["value"] == pytest.approx(0.5)  # the headline stays the letters'
    assert m["cloze"]["acc_norm"]["value"] == pytest.approx(2 / 3)


def test_a_model_that_cannot_use_letters_is_told_so():
    n = 40
    ids = [f"q{i}" for i in range(n)]
    letters = letter_rows(ids, [0] * n, [i % 4 == 0 for i in range(n)])  # MCF 25%
    cloze = cloze_rows([0] * n, pred=[0] * n, norm=[0 if i % 5 else 1 for i in range(n)], size=[0] * n)  # CF 80%
    groups = summarize_groups(Predictions.concat([letters, cloze]))
    f = groups["overall"]["formulations"]
    assert f["usable"] == "cloze" and f["max"]["formulation"] == "cloze"
    assert f["sentence"].startswith("The model knows more answers than it can map to letters")
    assert groups["datasets"]["d"]["subjects"]["s"]["formulations"]["gap"]["value"] == pytest.approx(0.25 - 0.8)


def test_the_headline_scalars_carry_the_option_texts_accuracies():
    from twinkle_hf.metrics.summarize import headline_scalars

    alone = headline_scalars(summarize(cloze_rows([0, 1, 2, 3], pred=[0, 1, 0, 0], norm=[0, 1, 2, 0], size=[0] * 4)))
    assert alone["accuracy"] == 0.5 and alone["acc_norm"] == 0.75
    letters = letter_rows(["q0", "q1", "q2"], [0, 0, 0], [True, False, False])
    cloze = cloze_rows([0, 0, 0], pred=[0, 1, 1], norm=[0, 0, 1], size=[0] * 3)
    both = headline_scalars(summarize(Predictions.concat([letters, cloze])))
    assert both["accuracy"] == pytest.approx(1 / 3)  # the letters'
    assert both["cloze_accuracy"] == pytest.approx(1 / 3) and both["cloze_acc_norm"] == pytest.approx(2 / 3)
    assert "acc_norm" not in both  # the letters have none
