"""Metrics of ``--samples n`` (generation mode with a temperature): pure functions of Predictions.

Every sample is a row, so the headline accuracy is already the *mean* accuracy over samples. Per
permuted row (a question under one order) the n samples give c correct answers, and:

- ``majority_vote``: the letter extracted most often among the n is the answer (a tie goes to the
  letter drawn first, as ``collections.Counter.most_common`` does; no letter extracted from any
  sample: wrong);
- ``pass_at_k``: the unbiased estimator 1 - C(n-c, k) / C(n, k) of "at least one of k samples is
  right" (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"), for k = 1, 2, 4, ...
  and n; pass@1 equals the mean accuracy.

Each is averaged over a question's orders, then over questions, with the standard error clustered
by question (summarize.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..schema import Predictions
from .intervals import proportion_interval
from .uncertainty import clustered_stderr, question_codes, question_means


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): the chance that k of the n samples, drawn without replacement,
    hold at least one of the c correct ones (computed as a product, stable for large n)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def ks_for(n: int) -> list[int]:
    """The k reported for n samples: the powers of 2 below n, and n."""
    return [k for k in (2 ** i for i in range(n.bit_length())) if k < n] + [n]


def majority_vote(letters: list[int]) -> int:
    """The most frequent extracted letter (-1: none); a tie goes to the one that came first."""
    counts = Counter(x for x in letters if x >= 0)
    return counts.most_common(1)[0][0] if counts else -1


def _block(question: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    per_question = question_means(question, values)
    value, stderr = float(per_question.mean()), clustered_stderr(per_question)
    return {"value": value, "stderr": stderr, "n_questions": len(per_question),
            **proportion_interval(value, len(per_question), stderr)}


def sampling_metrics(preds: Predictions) -> dict[str, Any]:
    """Over the permuted rows: n, mean accuracy, majority-vote accuracy and pass@k, each averaged
    per question (its orders) then over questions."""
    keep = np.flatnonzero(preds.order_index >= 0)
    if len(keep) == 0:
        return {"value": None, "reason": "no permuted rows"}
    question = question_codes(preds)[keep]
    groups: dict[tuple[int, int], list[int]] = {}
    for row, q, order in zip(keep.tolist(), question.tolist(), preds.order_index[keep].tolist()):
        groups.setdefault((q, order), []).append(row)
    samples = preds.samples
    sizes = {len(rows) for rows in groups.values()}
    if len(sizes) != 1:
        raise ValueError(f"every order needs the same number of samples; got {sorted(sizes)}")
    n = sizes.pop()
    group_question = np.array([q for q, _ in groups], dtype=np.int64)
    votes, hits = [], []
    for rows in groups.values():
        rows = sorted(rows, key=lambda r: samples[r])  # "drawn first" is the lower sample number
        votes.append(majority_vote(preds.pred[rows].tolist()) == preds.answer[rows[0]])
        hits.append(int(preds.correct[rows].sum()))
    correct = np.asarray(hits)
    return {
        "n_samples": n,
        "mean": _block(group_question, correct / n),
        "majority_vote": _block(group_question, np.asarray(votes, dtype=np.float64)),
        "pass_at_k": {str(k): _block(group_question, np.array([pass_at_k(n, c, k) for c in hits]))
                      for k in ks_for(n)},
    }
