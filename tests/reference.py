"""Slow, obviously-correct reference implementations that the package's fast paths are tested
against (they are not used by the package itself)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from twinkle_hf.metrics.uncertainty import _draw_blocks, question_codes, summarize_replicates
from twinkle_hf.schema import Predictions


def cluster_bootstrap(metric_fn: Callable[[np.ndarray, np.ndarray], float], question: np.ndarray,
                      n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """General cluster bootstrap: ``metric_fn(rows, codes)`` on each replicate.

    ``rows`` indexes the original rows (a question drawn twice appears twice); ``codes`` gives
    each replicate row its question, numbered by draw, so two copies are two questions.
    Questions are drawn in the order of their sorted codes, as in :func:`bootstrap_mean`.
    """
    _, inverse = np.unique(question, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    sizes = np.bincount(inverse)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    values = []
    for draws in _draw_blocks(len(sizes), n_boot, seed):
        for drawn in draws:
            lengths = sizes[drawn]
            first = np.repeat(starts[drawn] - np.cumsum(lengths) + lengths, lengths)
            rows = order[first + np.arange(lengths.sum())]
            values.append(metric_fn(rows, np.repeat(np.arange(len(drawn)), lengths)))
    return summarize_replicates(np.array(values, dtype=np.float64))


def take_rows(preds: Predictions, rows: np.ndarray, codes: np.ndarray | None = None) -> Predictions:
    """``preds`` at ``rows`` (repeats allowed); with ``codes``, ids become ``id#code`` so that
    copies of one question stay distinct questions."""
    idx = rows.tolist()
    pick = lambda col: [col[i] for i in idx]
    ids = pick(preds.id) if codes is None else [f"{preds.id[i]}#{c}" for i, c in zip(idx, codes.tolist())]
    return replace(preds, dataset=pick(preds.dataset), id=ids, subject=pick(preds.subject),
                   order_index=preds.order_index[rows], perm=pick(preds.perm), answer=preds.answer[rows],
                   pred=preds.pred[rows], prompt=None if preds.prompt is None else pick(preds.prompt),
                   letters=None if preds.letters is None else replace(
                       preds.letters, probs=pick(preds.letters.probs), letter_mass=preds.letters.letter_mass[rows]))


def bootstrap_predictions(metric_fn: Callable[[Predictions], float], preds: Predictions,
                          n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Cluster bootstrap of any ``metric_fn(preds) -> float`` (NaN or None: does not apply).

    Slow path (rebuilds a Predictions per replicate); prefer :func:`bootstrap_stats` when the
    metric is a function of per-question sums.
    """
    def on_rows(rows: np.ndarray, codes: np.ndarray) -> float:
        value = metric_fn(take_rows(preds, rows, codes))
        return math.nan if value is None else float(value)

    return cluster_bootstrap(on_rows, question_codes(preds), n_boot, seed)
