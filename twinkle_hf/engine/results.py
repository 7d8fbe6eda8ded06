"""What the engine is asked and what it gives back, one typed shape per kind of request.

Letters: one position per prompt, read over the option labels. Continuations: every token of a
continuation, each read at the position that predicts it. The per-row results are what a
formulation keeps, saves for resuming and turns into predictions; the column forms are what the
scorer fills as batches finish.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .stats import ScoreStats


@dataclass(frozen=True)
class Prompts:
    """Tokenized prompts whose next token is read over their option labels, row-aligned."""

    token_ids: Sequence[list[int]]
    letter_ids: Sequence[Sequence[int]]  # per row, the token ids of its k labels in displayed order
    groups: Sequence[Hashable] | None = None  # rows with one key may share a prefix (None: no sharing)

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def targets(self) -> Sequence[Sequence[int]]:
        """The token ids a row reads: its labels, all at its last position."""
        return self.letter_ids

    def take(self, rows: Sequence[int]) -> Prompts:
        """The prompts at ``rows``, in that order."""
        groups = None if self.groups is None else [self.groups[i] for i in rows]
        return Prompts([self.token_ids[i] for i in rows], [self.letter_ids[i] for i in rows], groups)


@dataclass(frozen=True)
class Continuations:
    """Contexts each followed by a continuation whose every token is scored (cloze), row-aligned.

    ``token_ids`` is the context and the continuation without its last token; the logits of the
    last ``len(targets[i])`` positions predict the continuation's tokens.
    """

    token_ids: Sequence[list[int]]
    targets: Sequence[Sequence[int]]  # per row, the continuation's tokens
    groups: Sequence[Hashable] | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    def take(self, rows: Sequence[int]) -> Continuations:
        groups = None if self.groups is None else [self.groups[i] for i in rows]
        return Continuations([self.token_ids[i] for i in rows], [self.targets[i] for i in rows], groups)


Requests = Prompts | Continuations


@dataclass(frozen=True)
class LetterScore:
    """One prompt's probabilities over its k labels (softmax over the labels alone), and the
    labels' share of the whole vocabulary's probability at that position."""

    probs: np.ndarray
    label_mass: float


@dataclass(frozen=True)
class ContinuationScore:
    """One continuation's per-token log-probabilities, and whether every token was the model's top
    choice (lm-eval's ``is_greedy``)."""

    token_logp: np.ndarray
    greedy: bool


@dataclass(frozen=True)
class Generation:
    """One written answer: its new token ids (stop token excluded), their text, and whether it
    reached ``max_new_tokens`` without a stop token."""

    tokens: list[int]
    text: str
    truncated: bool


@dataclass
class LetterScores:
    """Per row (input order), the columns of :class:`LetterScore`, filled as batches finish."""

    probs: list[np.ndarray]
    label_mass: np.ndarray
    stats: ScoreStats = field(default_factory=ScoreStats)

    @classmethod
    def empty(cls, n: int, stats: ScoreStats) -> LetterScores:
        return cls([np.empty(0)] * n, np.zeros(n, dtype=np.float64), stats)

    @classmethod
    def of(cls, rows: Sequence[LetterScore], stats: ScoreStats) -> LetterScores:
        return cls([r.probs for r in rows], np.array([r.label_mass for r in rows], dtype=np.float64), stats)

    def take(self, where: np.ndarray, stats: ScoreStats) -> LetterScores:
        """The rows at ``where`` (repeats allowed), with ``stats``."""
        return LetterScores([self.probs[r] for r in where], self.label_mass[where], stats)

    def row(self, i: int) -> LetterScore:
        return LetterScore(self.probs[i], float(self.label_mass[i]))

    def rows(self) -> list[LetterScore]:
        return [self.row(i) for i in range(len(self.probs))]


@dataclass
class ContinuationScores:
    """Per row (input order), the columns of :class:`ContinuationScore`, filled as batches finish."""

    token_logp: list[np.ndarray]
    greedy: np.ndarray  # bool
    stats: ScoreStats = field(default_factory=ScoreStats)

    @classmethod
    def empty(cls, n: int, stats: ScoreStats) -> ContinuationScores:
        return cls([np.empty(0)] * n, np.zeros(n, dtype=bool), stats)

    @classmethod
    def of(cls, rows: Sequence[ContinuationScore], stats: ScoreStats) -> ContinuationScores:
        return cls([r.token_logp for r in rows], np.array([r.greedy for r in rows], dtype=bool), stats)

    def take(self, where: np.ndarray, stats: ScoreStats) -> ContinuationScores:
        """The rows at ``where`` (repeats allowed), with ``stats``."""
        return ContinuationScores([self.token_logp[r] for r in where], self.greedy[where], stats)

    def row(self, i: int) -> ContinuationScore:
        return ContinuationScore(self.token_logp[i], bool(self.greedy[i]))

    def rows(self) -> list[ContinuationScore]:
        return [self.row(i) for i in range(len(self.token_logp))]


Scores = LetterScores | ContinuationScores
