"""Bias metrics where some options cannot move ("all of the above" kept at D): a planted always-"A"
model and a content-only model (always the gold text) get the same verdicts as on data where every
option moves, because the letter statistics leave the constrained questions out."""

from __future__ import annotations

import dataclasses

import datasets
import numpy as np
import pytest

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.metrics.bias import bias_metrics
from twinkle_hf.metrics.meaning import meaning_sentence, option_meaning
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.schema import LetterColumns, Predictions


def dataset(n_plain: int, n_pinned: int, n_fixed: int = 0) -> datasets.Dataset:
    """Plain questions, questions whose D is "All of the above" (the gold in every other one), and
    questions whose text names options by letter (their order is kept)."""
    rows = []
    for i in range(n_plain):
        rows.append((f"plain {i}?", [f"p{i}a", f"p{i}b", f"p{i}c", f"p{i}d"], i % 4))
    for i in range(n_pinned):
        rows.append((f"pinned {i}?", [f"q{i}a", f"q{i}b", f"q{i}c", "All of the above"], 3 if i % 2 else i % 3))
    for i in range(n_fixed):
        rows.append((f"Which of options A and B, {i}?", [f"r{i}a", f"r{i}b", f"r{i}c", f"r{i}d"], i % 4))
    return datasets.Dataset.from_dict(
        {"id": [f"ds/s/{i}" for i in range(len(rows))], "subject": ["s"] * len(rows),
         "question": [q for q, _, _ in rows], "choices": [c for _, c, _ in rows], "answer": [a for _, _, a in rows]},
        features=CANONICAL_FEATURES)


def predictions(expanded: datasets.Dataset, pick) -> Predictions:
    """A model's predictions on ``expanded``: ``pick(row)`` is the displayed position it chooses."""
    rows = expanded[:]
    n = len(rows["id"])
    picks = [pick({k: rows[k][r] for k in rows}) for r in range(n)]
    return Predictions(
        dataset=["ds"] * n, id=rows["id"], subject=rows["subject"],
        order_index=np.asarray(rows["order_index"], dtype=np.int64), perm=rows["perm"],
        answer=np.asarray(rows["answer"], dtype=np.int64), pred=np.asarray(picks, dtype=np.int64),
        letters=LetterColumns([np.eye(len(p))[c] * 0.9 + 0.1 / len(p) for p, c in zip(rows["perm"], picks)],
                              np.ones(n)), pinned=rows["pinned"], rewritten=rows["rewritten"],
        fixed_order=np.asarray(rows["fixed_order"], dtype=bool))


ALWAYS_A = lambda row: 0
CONTENT_ONLY = lambda row: row["answer"]


@pytest.mark.parametrize("mode", ["cyclic", "random"])
def test_verdicts_match_unconstrained_data(mode):
    constrained = expand_permutations(dataset(200, 120, 20), mode, seed=2, n_random=4)
    free = expand_permutations(dataset(340, 0), mode, seed=2, n_random=4)
    for data in (constrained, free):
        biased = bias_metrics(predictions(data, ALWAYS_A), n_boot=0, mode=mode)
        content = bias_metrics(predictions(data, CONTENT_ONLY), n_boot=0, mode=mode)
        assert biased["position_bias"]["p_value"] < 0.01 and biased["position_bias"]["letter"] == "A"
        assert biased["rstd"]["value"] > 40
        if mode == "cyclic":  # each content at each of its letters once: the letters balance exactly
            assert content["position_bias"]["statistic"] == pytest.approx(0, abs=1e-9)
        else:  # random orders: no evidence (p is uniform under no preference; this seed's is not small)
            assert content["position_bias"]["p_value"] > 0.05
        assert content["rstd"]["value"] == 0.0 and content["ckld"]["value"] < 1e-6
        assert content["all_correct"]["value"] == 1.0 and content["fluctuation"]["value"] == 0.0
    scope = bias_metrics(predictions(constrained, CONTENT_ONLY), n_boot=0, mode=mode)["bias_scope"]
    assert scope == {**scope, "n_questions": 340, "letter_metrics_questions": 200, "order_metrics_questions": 320}


def test_without_the_scope_a_content_only_model_would_look_biased():
    """The reason for the scope: "All of the above" never leaves D and is gold half the time, so a
    model that reads the options picks D more often than 1 in 4, which the letter test would take for
    a preference if those questions counted."""
    expanded = expand_permutations(dataset(200, 120), "cyclic", seed=2)
    content = predictions(expanded, CONTENT_ONLY)
    blind = dataclasses.replace(content, pinned=None, fixed_order=None)
    assert bias_metrics(blind, n_boot=0, mode="cyclic")["position_bias"]["p_value"] < 0.01
    assert bias_metrics(blind, n_boot=0, mode="cyclic")["position_bias"]["letter"] == "D"
    assert bias_metrics(content, n_boot=0, mode="cyclic")["position_bias"]["statistic"] == pytest.approx(0, abs=1e-9)


def test_fixed_questions_do_not_stop_the_order_metrics():
    expanded = expand_permutations(dataset(30, 0, 5), "cyclic", seed=1)
    block = bias_metrics(predictions(expanded, CONTENT_ONLY), n_boot=0, mode="cyclic")
    assert block["all_correct"]["value"] == 1.0 and block["all_correct"]["n_questions"] == 30
    assert block["variance_components"].get("reason") is None


def test_a_group_of_constrained_questions_says_why_its_letter_metrics_are_missing():
    pinned = bias_metrics(predictions(expand_permutations(dataset(0, 4), "cyclic", seed=1), ALWAYS_A), n_boot=0)
    for name in ("rstd", "ckld", "position_bias", "pride", "letter_recall"):
        assert pinned[name]["value"] is None and "kept at its letter" in pinned[name]["reason"]
    assert pinned["all_correct"]["value"] == 0.0  # the order metrics still read its 3 orders per question
    fixed = bias_metrics(predictions(expand_permutations(dataset(0, 0, 4), "cyclic", seed=1), ALWAYS_A), n_boot=0)
    for name in ("all_correct", "fluctuation", "variance_components"):
        assert fixed[name]["value"] is None and "kept its original order" in fixed[name]["reason"]


def test_option_meaning_counts_questions():
    expanded = expand_permutations(dataset(10, 6, 2), "cyclic", seed=1)
    block = option_meaning(predictions(expanded, ALWAYS_A))
    assert (block["questions"], block["pinned"], block["fixed_order"], block["rewritten"]) == (8, 6, 2, 0)
    assert block["n_questions"] == 18 and block["share"] == pytest.approx(8 / 18)
    assert meaning_sentence(block).startswith("8 questions (44.4%) have options that name their place")
    assert option_meaning(predictions(expand_permutations(dataset(10, 0), "cyclic", seed=1), ALWAYS_A)) is None
