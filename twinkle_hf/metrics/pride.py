"""PriDe (Zheng et al., ICLR 2024): a letter prior estimated from cyclic orders and divided out.

Computed from the dense permuted rows (rows.py) that bias.py builds once for every bias metric. The prior is
the published one (the authors' reference code, LLM-MCQ-Bias): per estimation question, the softmax
over displayed positions of the mean, across its k cyclic orders, of log(p + 1e-10) of the
option-normalised probabilities; the prior is the plain mean of those per-question priors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import LETTERS
from .rows import NO_ROWS, DenseRows

LOG_EPS = 1e-10  # inside the logarithms, as published
PRIOR_METHOD = "mean over the estimation questions of softmax(mean over cyclic orders of log(p + 1e-10))"
# The fewest estimation questions PriDe's prior is read from. With fewer, the "prior" is mostly their
# own contents: one question's cyclic orders cancel its option contents only as far as the model
# scores content and position apart. So what one question says about the letters is noise as much
# as preference. With 10, the mean of per-question priors has its noise cut by sqrt(10) ~ 3 (at the
# default 5%: 200 questions with the run's most common k).
MIN_PRIOR_QUESTIONS = 10


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


def question_prior(probs: np.ndarray) -> np.ndarray:
    """One question's prior from its k cyclic orders ([orders, positions] option-normalised
    probabilities): softmax over positions of the mean log-probability. Every option visits every
    position once, so the option contents cancel and what is left is the position preference."""
    mean_log = np.log(probs + LOG_EPS).mean(axis=0)
    e = np.exp(mean_log - mean_log.max())
    return e / e.sum()


def _paper_protocol(r: DenseRows, subset: np.ndarray, others: np.ndarray, prior: np.ndarray, k: int,
                    original: tuple[np.ndarray, np.ndarray] | None) -> dict[str, Any]:
    """The paper's table protocol: an estimation question counts by its order-averaged prediction,
    every other question by its original order with the prior divided out."""
    if original is None:
        return {"value": None, "reason": "needs the original order of every question (score_original)"}
    probs, gold = original
    if np.isnan(probs[others, 0]).any():
        return {"value": None, "reason": "needs the original order of every question (score_original)"}
    averaged = (r.content_choice() == r.gold_original())[subset]  # the order-averaged answer, by content
    debiased = np.log(probs[others, :k] + LOG_EPS) - np.log(prior + LOG_EPS)
    hits = np.concatenate([averaged, debiased.argmax(axis=1) == gold[others]])
    return {"value": float(hits.mean()), "n_questions": len(hits)}


def pride_on_rows(r: DenseRows, fraction: float, seed: int, original: tuple[np.ndarray, np.ndarray] | None = None,
                  min_prior: int = MIN_PRIOR_QUESTIONS) -> dict[str, Any]:
    """PriDe (Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice
    Selectors"): observed P(letter j | order) ∝ prior(j) * content(option at j).

    The prior is estimated on a seeded subset: ``fraction`` of the questions, at least 1, drawn
    with ``default_rng(seed)`` in sorted key order and named in ``prior_questions``. It is divided
    out of every permuted row of the other questions. Reports the accuracy before and after, and
    ``paper_protocol``, the accuracy as the paper's tables count it (``original``: per question
    code, the original order's probabilities, NaN where not scored, and the gold index).
    Only the questions with the most common k take part (ties: the smaller k), since a prior is over
    the letters of one k; ``n_other_k`` counts the rest. n/a (with the reason) where the subset is
    smaller than ``min_prior`` questions.
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
    priors = []
    for q in subset:
        rows = np.flatnonzero(r.question == q)
        if not _is_cyclic(r.order_index[rows], r.perm[rows], k):
            return {"value": None, "reason": "PriDe needs --shuffle-mode cyclic"}
        priors.append(question_prior(r.probs[rows, :k]))
    if size < min_prior:
        why = (f"the prior would come from {size} of {len(candidates)} questions with k={k} "
               f"(pride_fraction {fraction:g}); it needs at least {min_prior}: fewer estimate their own "
               f"contents as much as a letter preference")
        return {"value": None, "reason": why, "n_prior_questions": size, "min_prior_questions": min_prior}
    prior = np.mean(priors, axis=0)
    rows = (k_of[r.question] == k) & ~np.isin(r.question, subset)
    hit = ((r.probs[rows, :k] / prior).argmax(axis=1) == r.answer[rows]).astype(np.float64)

    def per_question_mean(y: np.ndarray) -> float:
        m = np.bincount(r.question[rows], minlength=r.n)
        return float((np.bincount(r.question[rows], weights=y, minlength=r.n)[m > 0] / m[m > 0]).mean())

    others = np.setdiff1d(candidates, subset)
    named = [dict(zip(("dataset", "id"), str(r.keys[q]).split("\x00", 1))) for q in subset] if len(r.keys) else []
    return {"value": per_question_mean(hit), "accuracy_before": per_question_mean(r.correct[rows]),
            "prior": {L: float(p) for L, p in zip(LETTERS, prior)}, "prior_method": PRIOR_METHOD, "k": k,
            "n_prior_questions": size, "prior_questions": named, "n_questions": len(others),
            "n_other_k": int(r.n - len(candidates)), "seed": seed,
            "paper_protocol": _paper_protocol(r, subset, others, prior, k, original)}
