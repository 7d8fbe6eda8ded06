"""Declared shapes of the data that crosses module boundaries.

Canonical rows (after :mod:`twinkle_hf.data`) are a ``datasets.Dataset`` with exactly
``CANONICAL_FEATURES``. Permuted rows (after :mod:`twinkle_hf.permute`) add ``perm_index``
(the permutation's index, -1 for the original order) and ``perm`` (displayed position ->
original option index), and hold ``choices``/``answer`` in displayed order.
"""

from __future__ import annotations

import datasets

MIN_CHOICES = 2
MAX_CHOICES = 26
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

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
        "perm_index": datasets.Value("int64"),
        "perm": datasets.Sequence(datasets.Value("int64")),
    }
)


def index_to_letter(index: int) -> str:
    """0 -> "A" ... 25 -> "Z"; raises ValueError outside that range."""
    if not 0 <= index < MAX_CHOICES:
        raise ValueError(f"option index {index} is outside 0..{MAX_CHOICES - 1}")
    return LETTERS[index]


def letter_to_index(letter: str) -> int:
    """"A"/"a"/" A " -> 0 ... "Z" -> 25; raises ValueError for anything else."""
    text = letter.strip().upper()
    if len(text) != 1 or text not in LETTERS:
        raise ValueError(f"{letter!r} is not an option letter A-Z")
    return LETTERS.index(text)
