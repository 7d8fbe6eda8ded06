"""Orders that keep each question's meaning: pinned options at their letter in every order, letter
references naming where their options stand, the gold following its content, cyclic orders a Latin
square over each run of free slots, and every other question's orders exactly as without the rule."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.prompts.anchors import letter_list
from twinkle_hf.prompts.permute import example_options, expand_permutations
from twinkle_hf.prompts.templates import EN_TEMPLATE, build_prompt_set
from twinkle_hf.schema import LETTERS, ORIGINAL

QUESTIONS = [  # (question, options, gold); real MMLU shapes
    ("Plain?", ["red", "green", "blue", "grey"], 2),
    ("Which are examples of jus?", ["jus in bello.", "jus ad bellum.", "moral nihilism.", "all of the above"], 3),
    ("Two pinned?", ["Supervised learning", "Unsupervised learning", "Both of these", "Neither of these"], 0),
    ("Pinned in the middle?", ["mean", "median", "both of the above.", "the mode"], 3),
    ("Security goals?", ["Integrity", "Privacy", "Nonrepudiation", "Both A & C"], 3),
    ("A reference and a pin?", ["Inaccurate.", "Unreliable.", "both A and B.", "none of the above."], 2),
    ("Five options?", ["one", "two", "three", "b and c", "None of the above"], 3),
    ("Which of options A and C is right?", ["p", "q", "r", "s"], 1),  # the text names options: fixed
    ("Pinned at A?", ["以上都不对", "甲", "乙", "丙"], 1),  # CMMLU: already at A in the release
]


def rows_of(questions) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {"id": [f"ds/s/{i}" for i in range(len(questions))], "subject": ["s"] * len(questions),
         "question": [q for q, _, _ in questions], "choices": [c for _, c, _ in questions],
         "answer": [a for _, _, a in questions]}, features=CANONICAL_FEATURES)


def check_meaning(row: dict, original: list[str]) -> None:
    """Every invariant of one permuted row against its question's original options."""
    perm, shown = row["perm"], row["choices"]
    assert sorted(perm) == list(range(len(original)))
    assert perm[row["answer"]] == row["answer_original"]  # the gold follows its content
    for i in row["pinned"]:
        assert perm[i] == i and shown[i] == original[i]  # at its own letter, unchanged
    position_of = {o: j for j, o in enumerate(perm)}
    for j, o in enumerate(perm):
        slots = letter_list(original[o])
        if o in row["rewritten"]:  # the letters name where the named options now stand, sorted
            before = slots.letters
            named = sorted(LETTERS[position_of[LETTERS.index(L)]] for L in before)
            assert letter_list(shown[j]).letters == tuple(named)
            assert shown[j].replace(" ", "") != original[o].replace(" ", "") or perm == sorted(perm)
        elif slots is None or row["fixed_order"]:
            assert shown[j] == original[o]  # content moves unchanged


@pytest.mark.parametrize("mode", ["random", "cyclic", "all"])
def test_every_order_keeps_the_question(mode):
    qs = QUESTIONS
    out = expand_permutations(rows_of(qs), mode, seed=5, n_random=6)
    for row in out:
        check_meaning(row, qs[int(row["id"].rsplit("/", 1)[1])][1])


def test_pinned_options_stay_and_the_rest_move_within_their_run():
    out = expand_permutations(rows_of(QUESTIONS), "cyclic", seed=5, score_original=False)
    by_q: dict[str, list[list[int]]] = {}
    for row in out:
        by_q.setdefault(row["id"], []).append(row["perm"])
    # one pinned option at D: a Latin square over A-C (k - 1 orders, each free option at each free slot once)
    jus = np.array(by_q["ds/s/1"])
    assert jus.shape == (3, 4) and (jus[:, 3] == 3).all()
    assert all(sorted(jus[:, j]) == [0, 1, 2] for j in range(3))
    assert (np.array(by_q["ds/s/2"])[:, 2:] == [2, 3]).all() and len(by_q["ds/s/2"]) == 2
    # "both of the above" at C: A and B stay above it, the content at D stays below
    mid = np.array(by_q["ds/s/3"])
    assert (mid[:, 2:] == [2, 3]).all() and {tuple(p[:2]) for p in mid} == {(0, 1), (1, 0)}
    # a pin at A (CMMLU's release): B-D move among themselves
    first = np.array(by_q["ds/s/8"])
    assert (first[:, 0] == 0).all() and all(sorted(first[:, j]) == [1, 2, 3] for j in range(1, 4))
    assert by_q["ds/s/7"] == [[0, 1, 2, 3]]  # the text names options: its original order only
    assert len(by_q["ds/s/4"]) == 4  # a reference alone moves like any option: k cyclic orders


def test_questions_without_such_options_keep_todays_orders():
    for mode in ("random", "cyclic", "all"):
        kept = expand_permutations(rows_of(QUESTIONS), mode, seed=9, n_random=4)
        plain = expand_permutations(rows_of(QUESTIONS), mode, seed=9, n_random=4, keep_meaning=False)
        perms = lambda ds, qid: [(o, p) for i, o, p in zip(ds["id"], ds["order_index"], ds["perm"]) if i == qid]
        for qid in ("ds/s/0", "ds/s/4"):  # plain; a reference only (moves freely, text rewritten)
            assert perms(kept, qid) == perms(plain, qid)
        assert perms(kept, "ds/s/1") != perms(plain, "ds/s/1")
        assert not any(plain["pinned"]) and not any(plain["rewritten"]) and not any(plain["fixed_order"])
        # off: every option shuffled as written (no rewrite)
        for row in plain:
            original = QUESTIONS[int(row["id"].rsplit("/", 1)[1])][1]
            assert row["choices"] == [original[p] for p in row["perm"]]


def test_orders_are_a_function_of_seed_id_and_index_only():
    rows = rows_of(QUESTIONS)
    a = expand_permutations(rows, "random", seed=3, n_random=5)
    b = expand_permutations(rows.select(range(len(rows) - 1, -1, -1)), "random", seed=3, n_random=5)  # reversed
    key = lambda ds: sorted((i, o, tuple(p), tuple(c)) for i, o, p, c in
                            zip(ds["id"], ds["order_index"], ds["perm"], ds["choices"]))
    assert key(a) == key(b)
    assert key(a) != key(expand_permutations(rows, "random", seed=4, n_random=5))
    for row in a:
        if row["order_index"] == ORIGINAL:
            assert row["perm"] == list(range(len(row["perm"]))) and row["rewritten"] == []


def test_random_orders_of_a_pinned_question_vary():
    out = expand_permutations(rows_of(QUESTIONS[1:2]), "random", seed=1, n_random=60, score_original=False)
    assert len({tuple(p) for p in out["perm"]}) == 6  # all 3! orders of A-C turn up
    assert all(p[3] == 3 for p in out["perm"])  # D never moves


def test_few_shot_examples_keep_their_meaning_too():
    pool = rows_of(QUESTIONS[4:6] + QUESTIONS[1:2])
    for order_index in range(6):
        for row in pool:
            shown, answer = example_options(row, 7, order_index, True, True)
            gold = row["choices"][row["answer"]]
            if letter_list(gold) is None:
                assert shown[answer] == gold  # the gold follows its content
            else:
                assert letter_list(shown[answer]) is not None and letter_list(gold).letters != ()
            if row["question"].startswith("Which are"):
                assert shown[3] == "all of the above"
            if row["question"].startswith("A reference"):
                assert shown[3] == "none of the above."
                ref = next(s for s in shown if letter_list(s))
                named = sorted(LETTERS[shown.index(t)] for t in ("Inaccurate.", "Unreliable."))
                assert letter_list(ref).letters == tuple(named)
    test = rows_of(QUESTIONS[:1])
    expanded = expand_permutations(test, "random", seed=7, n_random=4)
    texts = build_prompt_set(expanded, EN_TEMPLATE, num_fewshot=3, pool=pool, shuffled=True, seed=7).texts
    for text in texts:  # the example whose gold is "all of the above" shows it at D, and D as its answer
        assert "D. all of the above\nAnswer: D\n\n" in text
