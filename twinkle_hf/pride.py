"""PriDe (Zheng et al., ICLR 2024): a letter prior estimated from cyclic orders and divided out.

Computed from the dense permuted rows that bias.py builds once for every bias metric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .schema import LETTERS

if TYPE_CHECKING:
    from .bias import DenseRows

NO_ROWS = "no permuted rows (order_index >= 0)"  # a metric's reason; bias.py uses it too


def _is_cyclic(order_index: np.ndarray, perms: np.ndarray, k: int) -> bool:
    """Rows are order_index 0..k-1 and their perms are the k rotations of one order."""
    if sorted(order_index.tolist()) != list(range(k)):
        return False
    base, shifts = perms[0, :k], set()
    for p in perms[:, :k]:
        shift = int(np.flatnonzero(base == p[0])[0])
        if not np.array_equal(p, np.roll(base, -shift)):
            return False
        shifts.add(shift)
    return len(shifts) == k


def pride_on_rows(r: DenseRows, fraction: float, seed: int) -> dict[str, Any]:
    """PriDe (Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice
    Selectors"): observed P(letter j | order) ∝ prior(j) * content(option at j); over the k cyclic
    rotations every option visits every letter once, so mean_rotations log P[j] = log prior(j) + c.
    The prior is estimated on a seeded subset (``fraction`` of the questions, at least 1, drawn
    with ``default_rng(seed)`` in sorted key order) and divided out of every permuted row of the
    other questions; it reports the accuracy before and after, the prior and the subset size.
    The subset is a fraction of the questions with the most common k (ties: the smaller), and
    only they take part, since a prior is over the letters of one k; ``n_other_k`` counts the rest.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"pride_fraction must be in (0, 1), got {fraction}")
    if r.n == 0:
        return {"value": None, "reason": NO_ROWS}
    k_of = np.zeros(r.n, np.int64)
    k_of[r.question] = r.k
    k = int(np.bincount(k_of).argmax())
    candidates = np.flatnonzero(k_of == k)
    size = max(1, int(fraction * len(candidates)))
    if size >= len(candidates):
        why = f"PriDe needs questions outside its prior subset ({len(candidates)} with k={k})"
        return {"value": None, "reason": why}
    subset = np.sort(np.random.default_rng(seed).choice(candidates, size=size, replace=False))
    in_subset = np.isin(r.question, subset)
    for q in subset:
        rows = np.flatnonzero(r.question == q)
        if not _is_cyclic(r.order_index[rows], r.perm[rows], k):
            return {"value": None, "reason": "PriDe needs --shuffle-mode cyclic"}
    # every subset question has exactly k rows, so the mean over rows is the mean over questions
    log_prior = np.log(np.maximum(r.probs[in_subset, :k], np.finfo(np.float64).tiny)).mean(axis=0)
    prior = np.exp(log_prior - log_prior.max())
    prior /= prior.sum()
    rows = (k_of[r.question] == k) & ~in_subset
    hit = ((r.probs[rows, :k] / prior).argmax(axis=1) == r.answer[rows]).astype(np.float64)

    def per_question_mean(y: np.ndarray) -> float:
        m = np.bincount(r.question[rows], minlength=r.n)
        return float((np.bincount(r.question[rows], weights=y, minlength=r.n)[m > 0] / m[m > 0]).mean())

    return {"value": per_question_mean(hit), "accuracy_before": per_question_mean(r.correct[rows]),
            "prior": {L: float(p) for L, p in zip(LETTERS, prior)}, "k": k, "n_prior_questions": size,
            "n_questions": int(len(candidates) - size), "n_other_k": int(r.n - len(candidates)), "seed": seed}
