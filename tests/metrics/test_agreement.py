"""letter_text_agreement: the scored letter against the written one, as a pure function of predictions
(hand-counted cases), its clustered error bar, unparsed rows apart, and n/a where nothing compares."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twinkle_hf.metrics.agreement import agreement_sentence, confusion_table, letter_text_agreement
from twinkle_hf.metrics.summarize import headline_scalars, summarize
from twinkle_hf.metrics.uncertainty import clustered_stderr
from twinkle_hf.schema import LetterColumns, Predictions


def _preds(rows: list[tuple[str, int, int, int, int]]) -> Predictions:
    """rows of (question id, order, gold, scored letter, written letter or -1), 4 options each."""
    ids, orders, gold, scored, written = (list(c) for c in zip(*rows))
    n = len(rows)
    return Predictions(dataset=["d"] * n, id=ids, subject=["s"] * n, order_index=np.array(orders),
                       perm=[[0, 1, 2, 3]] * n, answer=np.array(gold), pred=np.array(scored),
                       letters=LetterColumns([np.full(4, 0.25)] * n, np.ones(n), pred_written=np.array(written),
                                             written=["..."] * n))


def test_agreement_is_the_share_of_parsed_rows_per_question_then_over_questions():
    preds = _preds([("q1", 0, 0, 0, 0), ("q1", 1, 1, 0, 1),  # q1: 1 of 2 agree
                    ("q2", 0, 2, 2, 2), ("q2", 1, 2, 2, -1),  # q2: 1 of 1 parsed agrees; 1 unparsed
                    ("q3", 0, 3, 1, 2), ("q3", 1, 3, 1, 2),  # q3: none agree
                    ("q3", -1, 3, 3, 3)])  # the original order: not counted, as accuracy counts
    block = letter_text_agreement(preds)
    per_question = np.array([0.5, 1.0, 0.0])
    assert block["value"] == pytest.approx(per_question.mean())
    assert block["stderr"] == pytest.approx(clustered_stderr(per_question))
    assert (block["rows"], block["unparsed"], block["unparsed_rate"], block["n_questions"]) == (6, 1, 1 / 6, 3)
    assert block["accuracy"]["scored"]["value"] == pytest.approx(np.mean([0.5, 1.0, 0.0]))
    assert block["accuracy"]["written"]["value"] == pytest.approx(np.mean([1.0, 0.5, 0.0]))  # unparsed: wrong
    confusion = block["confusion"]
    assert confusion["A"] == {"A": 1, "B": 1, "C": 0, "D": 0, "unparsed": 0}
    assert confusion["B"]["C"] == 2 and confusion["C"] == {"A": 0, "B": 0, "C": 1, "D": 0, "unparsed": 1}
    assert sum(sum(row.values()) for row in confusion.values()) == 6
    assert "2402.14499" in block["source"]


def test_no_letter_read_anywhere_is_n_a_with_the_reason_and_the_counts_kept():
    block = letter_text_agreement(_preds([("q1", 0, 0, 0, -1), ("q2", 0, 1, 1, -1)]))
    assert block["value"] is None and "no letter was read" in block["reason"]
    assert block["unparsed_rate"] == 1.0 and block["accuracy"]["written"]["value"] == 0.0
    assert agreement_sentence(block).startswith("n/a (no letter was read")


def test_one_question_has_no_error_bar():
    block = letter_text_agreement(_preds([("q1", 0, 0, 0, 0), ("q1", 1, 0, 0, 1)]))
    assert block["value"] == 0.5 and "stderr" not in block and "one question" in block["stderr_reason"]


def test_the_block_sits_in_every_summary_of_a_run_that_wrote_its_answers_and_nowhere_else():
    preds = _preds([("q1", 0, 0, 0, 0), ("q2", 0, 1, 1, 2), ("q3", 0, 2, 3, 3)])
    metrics = summarize(preds)
    assert metrics["letter_text_agreement"]["value"] == pytest.approx(2 / 3)
    assert headline_scalars(metrics)["letter_text_agreement"] == pytest.approx(2 / 3)
    assert preds.letters is not None
    plain = dataclasses.replace(preds, letters=dataclasses.replace(preds.letters, pred_written=None, written=None))
    assert "letter_text_agreement" not in summarize(plain)


def test_the_sentence_and_the_table_say_what_the_block_holds():
    block = letter_text_agreement(_preds([("q1", 0, 0, 0, 0), ("q2", 0, 1, 0, 1), ("q3", 0, 2, 0, -1)]))
    sentence = agreement_sentence(block)
    assert "the scored letter is the written one in 50.0%" in sentence and "33% of answers had no letter" in sentence
    assert "often not the one it writes" in sentence
    table = confusion_table(block)
    assert table[0] == "| scored \\ written | A | B | C | D | unparsed |" and table[2] == "| A | 1 | 1 | 0 | 0 | 1 |"
