"""TruthfulQA MC2's metric, the probability mass on the true answers, against hand-computed values:
from the option texts' log-likelihoods (lm-eval's truthfulqa_mc2 acc) and from the letters'
probabilities (mapped back through each order's permutation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinkle_hf.metrics.true_mass import loglik_mass, true_letter_share, true_mass, true_mass_blocks
from twinkle_hf.schema import CLOZE, ClozeColumns, GenerationColumns, LetterColumns, Predictions


def test_loglik_mass_is_the_true_options_share_of_the_probability():
    # probabilities 0.5, 0.25, 0.125, 0.125: the true options 0 and 2 hold 0.625 of 1
    ll = [math.log(0.5), math.log(0.25), math.log(0.125), math.log(0.125)]
    assert loglik_mass(ll, {0, 2}) == pytest.approx(0.625)
    # unnormalised (the option texts' probabilities need not sum to 1): 0.2 / (0.2 + 0.1 + 0.1) = 0.5
    assert loglik_mass([math.log(0.2), math.log(0.1), math.log(0.1)], [0]) == pytest.approx(0.5)
    # long continuations: exp(-1000) underflows to 0, yet the share is still 1 / (1 + e^-2)
    assert loglik_mass([-1000.0, -1002.0], [0]) == pytest.approx(1 / (1 + math.exp(-2)))
    assert loglik_mass([-3.0, -1.0], [0, 1]) == 1.0


@pytest.mark.parametrize("true", [set(), {4}, {-1}])
def test_loglik_mass_refuses_true_options_that_are_not_among_the_options(true):
    with pytest.raises(ValueError, match="not a non-empty subset"):
        loglik_mass([-1.0, -2.0, -3.0, -4.0], true)


def test_letter_mass_follows_the_options_through_their_order():
    # shown order: original options 2, 0, 3, 1; true are originals 0 and 1 -> shown positions 1 and 3
    assert true_letter_share([0.4, 0.3, 0.2, 0.1], [2, 0, 3, 1], {0, 1}) == pytest.approx(0.4)
    assert true_letter_share([0.4, 0.3, 0.2, 0.1], [0, 1, 2, 3], {0, 1}) == pytest.approx(0.7)


def rows(ids: list[str], orders: list[int], perms: list[list[int]], probs: list[list[float]]) -> Predictions:
    n = len(ids)
    return Predictions(dataset=["tqa"] * n, id=ids, subject=["s"] * n, order_index=np.array(orders),
                       perm=perms, answer=np.zeros(n, dtype=np.int64), pred=np.zeros(n, dtype=np.int64),
                       letters=LetterColumns([np.array(p) for p in probs], np.ones(n)))


def test_letters_average_a_questions_shuffled_orders_then_the_questions():
    # q0 (true: 0, 1): order 0 shows 0,1,2 -> 0.5 + 0.3 = 0.8; order 1 shows 2,1,0 -> 0.2 + 0.3 = 0.5;
    # the original order (-1) is left out of a shuffled run -> q0 = 0.65. q1 (true: 2): 0.6 in its one order.
    preds = rows(["q0", "q0", "q0", "q1"], [0, 1, -1, 0], [[0, 1, 2], [2, 1, 0], [0, 1, 2], [0, 1, 2]],
                 [[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [1.0, 0.0, 0.0], [0.1, 0.3, 0.6]])
    block = true_mass(preds, {"q0": (0, 1), "q1": (2,)})["letters"]
    assert block["value"] == pytest.approx((0.65 + 0.6) / 2) and block["n_questions"] == 2
    assert block["stderr"] == pytest.approx(np.std([0.65, 0.6], ddof=1) / math.sqrt(2))


def test_cloze_rows_give_lm_evals_mean_and_questions_without_true_options_are_left_out():
    n = 3
    loglik = [np.log([0.5, 0.25, 0.25]), np.log([0.1, 0.1, 0.8]), np.log([0.9, 0.05, 0.05])]
    preds = Predictions(dataset=["tqa"] * n, id=["q0", "q1", "q2"], subject=["s"] * n,
                        order_index=np.zeros(n, dtype=np.int64), perm=[[0, 1, 2]] * n,
                        answer=np.zeros(n, dtype=np.int64), pred=np.zeros(n, dtype=np.int64),
                        formulation=[CLOZE] * n,
                        cloze=ClozeColumns(loglik, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)))
    blocks = true_mass_blocks(preds, {"tqa": {"q0": (0, 1), "q1": (0,)}, "other": {}})
    assert list(blocks) == ["tqa"] and list(blocks["tqa"]) == ["cloze"]
    assert blocks["tqa"]["cloze"]["value"] == pytest.approx((0.75 + 0.1) / 2)
    assert blocks["tqa"]["cloze"]["n_questions"] == 2


def test_generated_letters_have_no_mass_and_say_why():
    preds = rows(["q0"], [0], [[0, 1]], [[]])
    preds = Predictions(**{**preds.__dict__, "letters": None,
                           "generation": GenerationColumns(["A"], [""], np.zeros(1, bool), np.ones(1, np.int64))})
    block = true_mass(preds, {"q0": (0,)})["letters"]
    assert block["value"] is None and "no option probabilities" in block["reason"]
