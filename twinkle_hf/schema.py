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


def _take(col: Any, idx: np.ndarray) -> Any:
    """A column's values at ``idx`` (an array, a list, a part of columns, or None)."""
    if col is None:
        return None
    if isinstance(col, np.ndarray):
        return col[idx]
    if dataclasses.is_dataclass(col) and not isinstance(col, type):
        return dataclasses.replace(col, **{f.name: _take(getattr(col, f.name), idx) for f in dataclasses.fields(col)})
    return [col[i] for i in idx]


def _concat(cols: Sequence[Any]) -> Any:
    """Columns of several row sets as one (None if any lacks it)."""
    if any(c is None for c in cols):
        return None
    if all(isinstance(c, np.ndarray) for c in cols):
        return np.concatenate(cols)
    return [x for c in cols for x in c]


def _concat_parts(cls: Any, parts: Sequence[Any], sizes: Sequence[int]) -> Any:
    """One formulation's columns over row sets of which some may lack them: those rows hold its
    filler (rows of another formulation in the same run)."""
    if all(p is None for p in parts):
        return None
    full = [p if p is not None else cls.filler(n) for p, n in zip(parts, sizes)]
    return cls(**{f.name: _concat([getattr(p, f.name) for p in full]) for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class LetterColumns:
    """Rows that read the option letters: per row the probabilities over its labels (displayed
    order; softmax over the labels alone) and the labels' share of the whole vocabulary's
    probability (``letter_mass``). Rows of another formulation in the same run hold none (empty
    probabilities, NaN)."""

    probs: list[np.ndarray]
    letter_mass: np.ndarray  # float64 [rows]
    pred_choices_only: np.ndarray | None = None  # int64 [rows]: --probe choices-only's letter (question removed)
    # --method logit+box|pattern|regex: the letter read from the model's own answer to the same prompt
    # (-1: none read), and that answer's text
    pred_written: np.ndarray | None = None  # int64 [rows]
    written: list[str] | None = None

    @classmethod
    def filler(cls, n: int) -> LetterColumns:
        return cls([np.empty(0)] * n, np.full(n, np.nan))


@dataclass(frozen=True)
class GenerationColumns:
    """Rows answered in writing: the text as generated, the text of its think blocks, whether it
    stopped at max_new_tokens, how many tokens it wrote, and which of ``--samples n`` it is (None:
    one sample per order)."""

    output: list[str]
    reasoning: list[str]
    truncated: np.ndarray  # bool [rows]
    new_tokens: np.ndarray  # int64 [rows]
    sample: np.ndarray | None = None  # int64 [rows]

    @classmethod
    def filler(cls, n: int) -> GenerationColumns:
        return cls([""] * n, [""] * n, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))


@dataclass(frozen=True)
class ClozeColumns:
    """Rows that scored option texts (one per question, original order): the options' summed
    log-probabilities (original order), and lm-eval's picks from them divided by the option text's
    characters (``acc_norm``) and UTF-8 bytes (``acc_bytes``); -1 where lm-eval has no normalised
    pick (partial scoring, Winogrande) and on rows of another formulation."""

    loglik: list[np.ndarray]
    pred_norm: np.ndarray  # int64 [rows]
    pred_bytes: np.ndarray  # int64 [rows]

    @classmethod
    def filler(cls, n: int) -> ClozeColumns:
        return cls([np.empty(0)] * n, np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))


PARTS = {"letters": LetterColumns, "generation": GenerationColumns, "cloze": ClozeColumns}


@dataclass(frozen=True)
class Predictions:
    """Scored rows, one per (question, permutation[, sample]), as parallel columns.

    ``answer``/``pred`` are displayed positions; ``perm[r][j]`` is the original index of the option
    shown at position j, so ``pred_original = perm[pred]``. ``order_index`` is -1 for the original
    order added to a shuffled run. ``pred`` is -1 where a written answer gave no letter. The columns
    every formulation has come first; each formulation's own are a part of their own (``letters``,
    ``generation``, ``cloze``), None where no row of the run has them.
    """

    dataset: list[str]
    id: list[str]
    subject: list[str]
    order_index: np.ndarray  # int64 [rows]
    perm: list[list[int]]
    answer: np.ndarray  # int64 [rows]
    pred: np.ndarray  # int64 [rows]
    letters: LetterColumns | None = None
    generation: GenerationColumns | None = None
    cloze: ClozeColumns | None = None
    formulation: list[str] | None = None  # per row "logit"/"box"/... or CLOZE (None: every row has one)
    prompt: list[str] | None = None
    file: list[str] | None = None  # the file each question was read from (None: not known)
    row: np.ndarray | None = None  # int64 [rows]: the question's row index in that file
    prompt_tokens: np.ndarray | None = None  # int64 [rows]: tokens of the prompt as the model saw it
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
        return self.generation is not None

    @property
    def samples(self) -> np.ndarray:
        """Each row's sample number (0 everywhere unless generation mode drew ``--samples n``)."""
        sample = None if self.generation is None else self.generation.sample
        return np.zeros(len(self), dtype=np.int64) if sample is None else sample

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
        """These rows with each row's ``formulation`` named (``formulation``, a letter method), so
        they can join cloze rows."""
        if self.formulation is not None:
            return self
        return dataclasses.replace(self, formulation=[formulation] * len(self))

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
        return Predictions(**{f.name: _take(getattr(self, f.name), idx) for f in dataclasses.fields(self)})

    def select(self, mask: np.ndarray) -> Predictions:
        """The rows where ``mask`` is true."""
        return self.take(np.flatnonzero(mask))

    @classmethod
    def concat(cls, parts: Sequence[Predictions]) -> Predictions:
        """One Predictions from several (datasets, or formulations, evaluated in turn); a column only
        if every one has it, a formulation's part where any has it."""
        sizes = [len(p) for p in parts]
        out = {f.name: (_concat_parts(PARTS[f.name], [getattr(p, f.name) for p in parts], sizes) if f.name in PARTS
                        else _concat([getattr(p, f.name) for p in parts])) for f in dataclasses.fields(cls)}
        return cls(**out)
