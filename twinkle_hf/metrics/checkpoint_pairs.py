"""Each checkpoint of a sweep, or each evaluation of TwinkleCallback, against the first and the previous one.

The paired numbers are compare's (outputs/verdicts.py), from the tests of paired.py. Shuffled accuracy
pairs each question's mean correctness over its orders: ``delta`` is the mean of the per-question
differences and ``p`` the sign-flip test on them. acc_original pairs the 0/1 outcomes of the original
order: exact McNemar. A question pairs where both runs scored it, in the same orders. Flips count the
questions whose score went down (right_to_wrong) or up (wrong_to_right). A sweep marks a checkpoint
"better" or "worse" than the first where its p-value, Holm-adjusted over the sweep's checkpoints, is
below 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..schema import Predictions, original_order
from .paired import ALPHA, flips, holm, mcnemar_exact, sign_flip_p

Question = tuple[str, str]  # (dataset, id)
FIRST, PREVIOUS = "vs_first", "vs_previous"


@dataclass(frozen=True)
class Outcomes:
    """What one evaluation keeps to be paired later, per question (dataset, id): the mean correctness
    over its shuffled orders (``accuracy``), a signature of those orders (``orders``: only questions
    shown in the same orders pair), and the 0/1 outcome in the original order (``acc_original``)."""

    accuracy: dict[Question, float]
    orders: dict[Question, int]
    acc_original: dict[Question, float]


def question_outcomes(p: Predictions) -> Outcomes:
    """The per-question outcomes of a run's predictions (the letter rows where a run also has cloze
    rows, as compare reads it); an unshuffled run's one order is both accuracy and acc_original. Option
    texts alone have no acc_original (their order is never shown, n/a as in results.json)."""
    letters = ~p.cloze_rows
    by_letters = bool(letters.any())  # option texts alone have no original order that matters (n/a there)
    if by_letters:
        p = p.select(letters)
    order = p.order_index.tolist()
    original = original_order(order)
    scores: dict[Question, list[float]] = {}
    shown: dict[Question, list[tuple[int, tuple[int, ...]]]] = {}
    acc_original: dict[Question, float] = {}
    for q, o, perm, right in zip(zip(p.dataset, p.id), order, p.perm, p.correct.tolist()):
        if o == original and by_letters:
            acc_original[q] = float(right)
        if o >= 0:
            scores.setdefault(q, []).append(float(right))
            shown.setdefault(q, []).append((o, tuple(perm)))
    # a hash of ints and tuples of ints is the same in every process (only str hashes are salted)
    return Outcomes({q: float(np.mean(v)) for q, v in scores.items()},
                    {q: hash(tuple(sorted(set(v)))) for q, v in shown.items()}, acc_original)


@dataclass(frozen=True)
class Change:
    """One run against another on the questions both scored alike; ``p_value`` is the sign-flip test
    (means over orders) or McNemar (one 0/1 outcome per question)."""

    n_questions: int
    delta: float
    p_value: float
    right_to_wrong: int
    wrong_to_right: int


def paired_change(base: Mapping[Question, float], other: Mapping[Question, float], questions: Sequence[Question],
                  single: bool) -> Change | None:
    """``other`` minus ``base`` on ``questions`` (None where there are none)."""
    if not questions:
        return None
    b = np.array([base[q] for q in questions], dtype=np.float64)
    o = np.array([other[q] for q in questions], dtype=np.float64)
    down, up = flips([f"{d}/{i}" for d, i in questions], b, o)
    p = mcnemar_exact(len(down), len(up)) if single else sign_flip_p(o - b)
    return Change(len(questions), float((o - b).mean()), p, len(down), len(up))


def paired_scalars(base: Outcomes, other: Outcomes, suffix: str) -> dict[str, float]:
    """Flat, named as the trend columns and the callback's keys (``suffix`` vs_first or vs_previous):
    delta_, p_, flips_right_to_wrong_, flips_wrong_to_right_ (shuffled accuracy), acc_original_delta_ and
    acc_original_p_ (McNemar); a metric with no question in common is left out."""
    out: dict[str, float] = {}
    same = [q for q in other.accuracy if q in base.accuracy and base.orders[q] == other.orders[q]]
    if (acc := paired_change(base.accuracy, other.accuracy, same, single=False)) is not None:
        out |= {f"delta_{suffix}": acc.delta, f"p_{suffix}": acc.p_value,
                f"flips_right_to_wrong_{suffix}": acc.right_to_wrong,
                f"flips_wrong_to_right_{suffix}": acc.wrong_to_right}
    shared = [q for q in other.acc_original if q in base.acc_original]
    if (orig := paired_change(base.acc_original, other.acc_original, shared, single=True)) is not None:
        out |= {f"acc_original_delta_{suffix}": orig.delta, f"acc_original_p_{suffix}": orig.p_value}
    return out


def mark(delta: float | None, p_adjusted: float) -> str:
    """"better" or "worse" where the adjusted p-value is below 0.05 and the difference not 0, else ""."""
    if delta is None or not math.isfinite(p_adjusted) or p_adjusted >= ALPHA or delta == 0:
        return ""
    return "better" if delta > 0 else "worse"


def sweep_pairs(runs: Sequence[Outcomes]) -> list[dict[str, float | str]]:
    """Per run, in sweep order: paired_scalars against the first and the previous run,
    ``p_holm_vs_first`` (Holm over the runs after the first) and ``vs_first`` (mark); the first run's
    entry is empty (nothing to pair it with)."""
    rows: list[dict[str, float | str]] = [{} for _ in runs]
    for i in range(1, len(runs)):
        rows[i] = {**paired_scalars(runs[0], runs[i], FIRST), **paired_scalars(runs[i - 1], runs[i], PREVIOUS)}
    p_first = [float(r.get(f"p_{FIRST}", math.nan)) for r in rows[1:]]
    for row, p in zip(rows[1:], holm(p_first)):
        if math.isfinite(p):
            row[f"p_holm_{FIRST}"] = p
        delta = row.get(f"delta_{FIRST}")
        row[FIRST] = mark(None if delta is None else float(delta), p)
    return rows
