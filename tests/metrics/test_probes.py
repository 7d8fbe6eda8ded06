"""choices_only_accuracy against hand-computed values; its sentence above chance and not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_bias import build, cyclic, question

from twinkle_hf.metrics.probes import choices_only_accuracy, choices_only_sentence
from twinkle_hf.metrics.summarize import summarize


def _with_probe(n: int, right: int):
    """n questions x 4 cyclic orders, gold original option 0; the question-less prompt picks the gold
    option in the first ``right`` questions and option 1 in the others."""
    rows = [r for i in range(n) for r in question(f"q{i}", cyclic(4), gold=0, picks=[0] * 4)]
    preds = build(rows)
    probe = np.array([p.index(0 if int(r["id"][1:]) < right else 1) for r, p in
                      zip(rows, (r["perm"] for r in rows))])
    assert preds.letters is not None
    return dataclasses.replace(preds, letters=dataclasses.replace(preds.letters, pred_choices_only=probe))


def test_hand_computed_value_chance_majority_and_error_bar():
    block = choices_only_accuracy(_with_probe(40, 20))
    assert block["value"] == pytest.approx(0.5) and block["chance"] == pytest.approx(0.25)
    assert block["majority"] == pytest.approx(0.25)  # cyclic orders: every letter is gold equally often
    assert block["stderr"] == pytest.approx(np.std([1] * 20 + [0] * 20, ddof=1) / np.sqrt(40))
    assert block["p_vs_chance"] < 0.01
    assert choices_only_sentence(block).startswith("options alone predict the answer 50% of the time (chance 25%")


def test_at_chance_says_no_sign():
    block = choices_only_accuracy(_with_probe(40, 10))
    assert block["value"] == pytest.approx(0.25) and block["p_vs_chance"] == pytest.approx(0.5)
    assert "no sign the options alone give the answer away" in choices_only_sentence(block)


def test_only_in_runs_with_the_probe_and_one_question_has_no_error_bar():
    assert "choices_only_accuracy" not in summarize(build(question("q", cyclic(4), 0, [0] * 4)))
    one = choices_only_accuracy(_with_probe(1, 1))
    assert one["value"] == 1.0 and "stderr" not in one and "p_vs_chance" not in one
