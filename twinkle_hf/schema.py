"""Declared shapes of scored data: option letters and :class:`Predictions`.

Light on purpose (numpy only), so that reading a finished run needs no model stack; the Arrow
schemas of the rows before scoring are in :mod:`twinkle_hf.data.features`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_CHOICES = 2
MAX_CHOICES = 26
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ORIGINAL = -1  # order_index of the unpermuted order scored alongside the shuffled ones
CANONICAL_COLUMNS = ("id", "subject", "question", "choices", "answer")  # every row's fields (features.py)
CLOZE = "cloze"  # the formulation of rows that score option texts as continuations (no letters)
UNPARSED = "unparsed"  # letter_dist's column for generated answers no letter was extracted from


def plural(count: int | None, noun: str) -> str:
    """A count with its noun in the right number, as the reports print it: "1 question", "3 questions"
    (a count a document lacks: "? questions")."""
    return f"{'?' if count is None else count} {noun if count == 1 else noun + 's'}"


def original_order(order_indices: Collection[int]) -> int | None:
    """The order index that holds the original option order: ORIGINAL in a shuffled run, 0 in a
    run without shuffling (its only order), None when the original order was not scored."""
    present = set(order_indices)
    return ORIGINAL if ORIGINAL in present else 0 if present == {0} else None

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


@dataclass(frozen=True)
class Predictions:
    """Scored rows, one per (question, permutation[, sample]), as parallel columns.

    ``answer``/``pred`` are displayed positions; ``perm[r][j]`` is the original index of the option
    shown at position j, so ``pred_original = perm[pred]``. ``order_index`` is -1 for the original
    order added to a shuffled run. Generation mode (``output`` set) has no option probabilities
    (``probs`` empty, ``letter_mass`` NaN), and ``pred`` is -1 where no letter was extracted.
    """

    dataset: list[str]
    id: list[str]
    subject: list[str]
    order_index: np.ndarray  # int64 [rows]
    perm: list[list[int]]
    answer: np.ndarray  # int64 [rows]
    pred: np.ndarray  # int64 [rows]
    probs: list[np.ndarray]  # k floats per row, displayed order
    letter_mass: np.ndarray  # float64 [rows]
    prompt: list[str] | None = None
    output: list[str] | None = None  # generation mode: the generated text, as generated
    reasoning: list[str] | None = None  # ... the text of its think blocks
    truncated: np.ndarray | None = None  # bool [rows]: stopped by max_new_tokens
    new_tokens: np.ndarray | None = None  # int64 [rows]: tokens generated
    sample: np.ndarray | None = None  # int64 [rows]: which of --samples n (None: one sample per order)
    file: list[str] | None = None  # the file each question was read from (None: not known)
    row: np.ndarray | None = None  # int64 [rows]: the question's row index in that file
    prompt_tokens: np.ndarray | None = None  # int64 [rows]: tokens of the prompt as the model saw it
    # Cloze rows (``formulation`` "cloze", one per question, original order): no letters, ``pred`` is the
    # argmax of the options' summed log-probabilities (lm-eval's acc), ``pred_norm`` of them divided by the
    # option text's characters (acc_norm), ``pred_bytes`` by its UTF-8 bytes (acc_bytes); -1 on letter rows
    # and where lm-eval has no normalised pick (partial scoring, Winogrande: the options score one continuation).
    formulation: list[str] | None = None  # per row "logit"/"box"/... or CLOZE (None: every row reads letters)
    loglik: list[np.ndarray] | None = None  # cloze rows: k summed log-probabilities, original order (else empty)
    pred_norm: np.ndarray | None = None  # int64 [rows]
    pred_bytes: np.ndarray | None = None  # int64 [rows]
    pred_choices_only: np.ndarray | None = None  # int64 [rows]: --probe choices-only's letter (question removed)
    # --method logit+box|pattern|regex: the letter read from the model's own answer to the same prompt
    # question in the same order (-1: none read), and that answer's text
    pred_written: np.ndarray | None = None  # int64 [rows]
    written: list[str] | None = None
    # What a shuffle kept of each question's meaning (prompts/anchors.py): the original indices of the
    # options pinned at their letter, of the letter references rewritten in this row, and whether the
    # question kept its original order in every order (None: not known, as in older runs' files)
    pinned: list[list[int]] | None = None
    rewritten: list[list[int]] | None = None
    fixed_order: np.ndarray | None = None  # bool [rows]
    # per row: every true option's original index where its question has several (TruthfulQA MC2), ()
    # elsewhere; None: no question of the run has them. Its metric is the probability mass on them.
    true_options: list[tuple[int, ...]] | None = None

    def __len__(self) -> int:
        return len(self.id)

    @property
    def correct(self) -> np.ndarray:
        return self.pred == self.answer

    @property
    def generated(self) -> bool:
        """Generation mode: letters extracted from text, no option probabilities."""
        return self.output is not None

    @property
    def samples(self) -> np.ndarray:
        """Each row's sample number (0 everywhere unless generation mode drew ``--samples n``)."""
        return np.zeros(len(self), dtype=np.int64) if self.sample is None else self.sample

    @property
    def n_samples(self) -> int:
        return int(self.samples.max()) + 1 if len(self) else 1

    @property
    def parsed(self) -> np.ndarray:
        return self.pred >= 0

    @property
    def num_choices(self) -> np.ndarray:
        return np.array([len(p) for p in self.perm], dtype=np.int64)

    @property
    def answer_original(self) -> np.ndarray:
        return np.array([p[a] for p, a in zip(self.perm, self.answer.tolist())], dtype=np.int64)

    @property
    def pred_original(self) -> np.ndarray:
        """perm[pred]; -1 where nothing was extracted."""
        return np.array([p[a] if a >= 0 else -1 for p, a in zip(self.perm, self.pred.tolist())], dtype=np.int64)

    @property
    def order_fixed(self) -> np.ndarray:
        """bool [rows]: rows of questions that kept their original order in every order."""
        return np.zeros(len(self), dtype=bool) if self.fixed_order is None else np.asarray(self.fixed_order, bool)

    @property
    def anchored(self) -> np.ndarray:
        """bool [rows]: rows of questions whose options could not all move: one pinned, or the order fixed.
        Letter-bias statistics leave them out, since their options do not visit every letter."""
        pinned = np.zeros(len(self), dtype=bool) if self.pinned is None else np.array([bool(p) for p in self.pinned],
                                                                                        dtype=bool)
        return pinned | self.order_fixed

    @property
    def cloze_rows(self) -> np.ndarray:
        """bool [rows]: the rows that scored option texts (cloze), not letters."""
        if self.formulation is None:
            return np.zeros(len(self), dtype=bool)
        return np.array([f == CLOZE for f in self.formulation], dtype=bool)

    def tagged(self, formulation: str) -> Predictions:
        """These rows with the cloze columns filled as for rows of ``formulation`` (a letter method:
        no log-likelihoods, -1 predictions), so they can be concatenated with cloze rows."""
        if self.formulation is not None:
            return self
        n = len(self)
        return dataclasses.replace(self, formulation=[formulation] * n, loglik=[np.empty(0)] * n,
                                   pred_norm=np.full(n, -1, dtype=np.int64), pred_bytes=np.full(n, -1, dtype=np.int64))

    def with_true_options(self, sets: Mapping[str, Mapping[str, Collection[int]]]) -> Predictions:
        """These rows with ``true_options`` from each dataset's question id -> true options, where any
        dataset has them (unchanged otherwise)."""
        if not any(sets.values()):
            return self
        found = [tuple(sorted(sets.get(d, {}).get(i, ()))) for d, i in zip(self.dataset, self.id)]
        return dataclasses.replace(self, true_options=found)

    def take(self, rows: Sequence[int] | np.ndarray) -> Predictions:
        """The rows at ``rows``, in that order (repeats allowed), column by column."""
        idx = np.asarray(rows, dtype=np.int64)
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            col = getattr(self, f.name)
            out[f.name] = None if col is None else col[idx] if isinstance(col, np.ndarray) else [col[i] for i in idx]
        return Predictions(**out)

    def select(self, mask: np.ndarray) -> Predictions:
        """The rows where ``mask`` is true."""
        return self.take(np.flatnonzero(mask))

    @classmethod
    def concat(cls, parts: Sequence[Predictions]) -> Predictions:
        """One Predictions from several (datasets evaluated in turn); ``prompt`` only if all have it."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            cols = [getattr(p, f.name) for p in parts]
            if any(c is None for c in cols):
                out[f.name] = None
            elif all(isinstance(c, np.ndarray) for c in cols):
                out[f.name] = np.concatenate(cols)
            else:
                out[f.name] = [x for c in cols for x in c]
        return cls(**out)
