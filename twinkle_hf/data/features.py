"""Arrow schemas of the rows before scoring.

Canonical rows (after :mod:`twinkle_hf.data.load`) are a ``datasets.Dataset`` with exactly
``CANONICAL_FEATURES``. Permuted rows (after :mod:`twinkle_hf.prompts.permute`) add ``answer_original``,
``order_index`` (the permutation's index, -1 for the original order), ``perm`` (displayed
position -> original option index) and what the shuffle kept of the question's meaning
(``pinned``, ``rewritten``, ``fixed_order``: prompts/anchors.py), and hold ``choices``/``answer`` in
displayed order (a letter reference's text as rewritten for that order).
"""

from __future__ import annotations

import datasets

CANONICAL_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "question": datasets.Value("string"),
        "choices": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("int64"),
    }
)

PERMUTED_FEATURES = datasets.Features(
    {
        **CANONICAL_FEATURES,
        "answer_original": datasets.Value("int64"),
        "order_index": datasets.Value("int64"),
        "perm": datasets.Sequence(datasets.Value("int64")),
        "pinned": datasets.Sequence(datasets.Value("int64")),  # original indices kept at their letter
        "rewritten": datasets.Sequence(datasets.Value("int64")),  # letter references rewritten in this row
        "fixed_order": datasets.Value("bool"),  # the question keeps its original order in every order
    }
)
