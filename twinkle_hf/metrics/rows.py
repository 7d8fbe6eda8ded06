"""The permuted rows of a run as dense arrays (:class:`DenseRows`), built once and read by every
bias metric (bias.py) and by PriDe (pride.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..schema import Predictions
from .uncertainty import question_keys

NO_ROWS = "no permuted rows (order_index >= 0)"  # a metric's reason


@dataclass(frozen=True)
class DenseRows:
    """Permuted rows as dense arrays; mixed k is padded (probs with 0, perm with the position)."""

    question: np.ndarray  # [rows] code 0..n-1, sorted (dataset, id) order
    order_index: np.ndarray  # [rows]
    k: np.ndarray  # [rows]
    perm: np.ndarray  # [rows, width]
    probs: np.ndarray  # [rows, width]
    answer: np.ndarray  # [rows] displayed
    pred: np.ndarray  # [rows] displayed
    sample: np.ndarray  # [rows] which of --samples n (0 for one sample per order)
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # code -> "dataset\x00id"

    @property
    def n(self) -> int:
        return int(self.question.max()) + 1 if len(self.question) else 0

    @property
    def n_samples(self) -> int:
        return int(self.sample.max()) + 1 if len(self.sample) else 1

    @property
    def runs(self) -> np.ndarray:
        """[rows] code of (question, sample): one pass over a question's orders. The order metrics
        compare orders within a run (sampling noise is not order sensitivity), then average a
        question's runs."""
        return self.question * self.n_samples + self.sample

    def per_question(self, per_run: np.ndarray) -> np.ndarray:
        """[n] the mean of a per-run value over each question's samples."""
        return per_run.reshape(self.n, self.n_samples).mean(axis=1)

    @property
    def width(self) -> int:
        return self.perm.shape[1]

    @property
    def correct(self) -> np.ndarray:
        return (self.pred == self.answer).astype(np.float64)

    def content_choice(self) -> np.ndarray:
        """[n] per question, the original option whose probability summed over its orders is
        highest (ties: the lower original index; a smaller k's padding never wins)."""
        n, w = self.n, self.width
        content = np.zeros_like(self.probs)
        np.put_along_axis(content, self.perm, self.probs, axis=1)  # content[r, perm[r, j]] = probs[r, j]
        total = np.stack([np.bincount(self.question, weights=content[:, c], minlength=n) for c in range(w)], axis=1)
        k = np.zeros(n, np.int64)
        k[self.question] = self.k
        total[np.arange(w)[None, :] >= k[:, None]] = -np.inf
        return total.argmax(axis=1)

    def gold_original(self) -> np.ndarray:
        """[n] per question, the original index of its gold option."""
        gold = np.zeros(self.n, np.int64)
        gold[self.question] = self.original(self.answer)
        return gold

    def original(self, displayed: np.ndarray) -> np.ndarray:
        """Original option index per row; -1 stays -1 (generation mode: nothing extracted)."""
        picked = self.perm[np.arange(len(displayed)), np.maximum(displayed, 0)]
        return np.where(displayed >= 0, picked, -1)


def dense_rows(preds: Predictions) -> DenseRows:
    """The permuted rows of ``preds``, stacked once so every metric is a few array operations."""
    sub = preds.select(preds.order_index >= 0)
    k = sub.num_choices
    width = int(k.max()) if len(k) else 0
    letters = sub.letters
    if len(k) and (k == width).all() and letters is not None:
        perm, probs = np.asarray(sub.perm, np.int64), np.asarray(letters.probs, np.float64)
    else:  # generation mode has no probabilities: they stay 0
        perm, probs = np.tile(np.arange(width), (len(k), 1)), np.zeros((len(k), width))
        for r, p in enumerate(sub.perm):
            perm[r, : len(p)] = p
            if letters is not None:
                probs[r, : len(letters.probs[r])] = letters.probs[r]
    keys, codes = question_keys(sub)
    return DenseRows(codes, sub.order_index, k, perm, probs, sub.answer, sub.pred, sub.samples, keys)
