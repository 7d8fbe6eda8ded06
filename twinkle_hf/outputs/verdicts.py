"""compare's verdicts: per metric, dataset and subject, is a run better, worse, or as good as the baseline?

Each run is paired with the baseline on the questions both scored (comparison.py matches the rows).
A metric with one 0/1 outcome per question (acc_original, cloze acc / acc_norm) is tested with the
exact McNemar test; shuffled accuracy (a mean over the question's orders) with the paired sign-flip
test on the per-question differences (metrics/paired.py). Subject rows of one (run, metric, dataset)
are one family for the multiple-comparison adjustment (Holm's by default, or Benjamini-Hochberg), the
datasets of a suite another; "overall" stands alone. ``equivalent`` is TOST at ``±margin`` from the
paired difference and its clustered stderr, floored at 1/n (one question of n changing: identical
runs on few questions prove no equivalence). A verdict is one sentence from those numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metrics.paired import ADJUSTMENTS, flips, mcnemar_exact, questions_to_detect, sign_flip_p, tost_p
from ..metrics.uncertainty import Z95, clustered_stderr

MIN_PAIRED = 10  # questions a paired difference needs for a 95% interval (and a TOST verdict)
ALPHA = 0.05
Question = tuple[str, str]  # (dataset, id)


@dataclass(frozen=True)
class Scores:
    """One metric's per-question scores in the baseline and one other run, on the questions both
    scored: 0/1 (``single``: one outcome each) or the mean over the shared orders; ``picks_*`` are
    the letters each run picked (original option order, one per shared order) and ``gold`` the answer."""

    metric: str
    other: str
    questions: list[Question]
    subjects: list[str]
    base: np.ndarray
    values: np.ndarray
    single: bool
    picks_base: list[str]
    picks_other: list[str]
    gold: list[str]


def qualified(q: Question) -> str:
    """"dataset/id", or the id alone where it already starts with its dataset's name."""
    return q[1] if q[1].startswith(f"{q[0]}/") else f"{q[0]}/{q[1]}"


def letter(i: int) -> str:
    return chr(65 + i) if 0 <= i < 26 else "-"


def scores_of(metric: str, other: str, keys: Sequence[tuple], base: dict, run: dict, subjects: dict[Question, str],
              single: bool) -> Scores:
    """Scores from matched rows: ``keys`` (their first two items are the question) index ``base`` and
    ``run``, whose values are (perm, correct, pick, gold) with pick and gold original option indices."""
    grouped: dict[Question, list[tuple]] = {}
    for k in keys:
        grouped.setdefault(k[:2], []).append(k)
    qs = list(grouped)

    def mean(rows: dict) -> np.ndarray:
        return np.array([np.mean([rows[k][1] for k in grouped[q]]) for q in qs], dtype=np.float64)

    def picks(rows: dict) -> list[str]:
        return [" ".join(letter(rows[k][2]) for k in grouped[q]) for q in qs]

    return Scores(metric, other, qs, [subjects.get(q, "") for q in qs], mean(base), mean(run), single,
                  picks(base), picks(run), [letter(base[grouped[q][0]][3]) for q in qs])


@dataclass(frozen=True)
class Verdict:
    """One row of compare's verdicts (PATH.json's "pairs"); diff, stderr, ci95 and margin are proportions."""

    other: str
    dataset: str  # "overall", a dataset, or "dataset/subject"
    metric: str
    n_questions: int
    diff: float
    stderr: float
    ci95: tuple[float, float]
    p_value: float
    p_holm: float
    mcnemar_p: float | None  # None where the metric has no single 0/1 outcome per question
    right_to_wrong: tuple[str, ...]
    wrong_to_right: tuple[str, ...]
    margin: float
    tost: float
    equivalent: bool
    verdict: str


def _row(s: Scores, name: str, keep: np.ndarray, prefix_ids: bool, margin: float) -> dict[str, Any]:
    """The unadjusted numbers of the questions selected by ``keep``."""
    base, other = s.base[keep], s.values[keep]
    qs = [q for q, k in zip(s.questions, keep) if k]
    ids = [qualified(q) if prefix_ids else q[1] for q in qs]
    d = other - base
    n, diff = len(d), float(d.mean())
    stderr = clustered_stderr(d) if n > 1 else math.nan
    half = Z95 * stderr if n >= MIN_PAIRED else math.nan
    r2w, w2r = flips(ids, base, other)
    if s.single:
        mcnemar = mcnemar_exact(len(r2w), len(w2r))
        p = mcnemar
    else:
        mcnemar, p = None, sign_flip_p(d)
    tost = tost_p(diff, max(stderr, 1 / n), margin) if n >= MIN_PAIRED else math.nan
    return {"other": s.other, "dataset": name, "metric": s.metric, "n_questions": n, "diff": diff,
            "stderr": stderr, "ci95": (diff - half, diff + half), "p_value": p, "mcnemar_p": mcnemar,
            "right_to_wrong": tuple(r2w), "wrong_to_right": tuple(w2r), "margin": margin, "tost": tost,
            "equivalent": bool(tost < ALPHA), "more": questions_to_detect(d, margin)}


def _rows_of(s: Scores, margin: float, adjust: str) -> list[dict[str, Any]]:
    """overall, then per dataset (where there are several), each followed by its subjects (where it has several)."""
    datasets = list(dict.fromkeys(d for d, _ in s.questions))
    ds = np.array([d for d, _ in s.questions], dtype=object)
    subj = np.array(s.subjects, dtype=object)
    rows = [_row(s, "overall", np.ones(len(ds), dtype=bool), len(datasets) > 1, margin)]
    rows[0]["p_holm"] = rows[0]["p_value"]
    dataset_rows = []
    for name in datasets:
        in_ds = ds == name
        if len(datasets) > 1:
            dataset_rows.append(_row(s, name, in_ds, False, margin))
            rows.append(dataset_rows[-1])
        subjects = list(dict.fromkeys(subj[in_ds]))
        if len(subjects) > 1:
            family = [_row(s, f"{name}/{sub}", in_ds & (subj == sub), False, margin) for sub in subjects]
            for row, p in zip(family, ADJUSTMENTS[adjust]([r["p_value"] for r in family])):
                row["p_holm"] = p
            rows += family
    for row, p in zip(dataset_rows, ADJUSTMENTS[adjust]([r["p_value"] for r in dataset_rows])):
        row["p_holm"] = p
    return rows


def p_text(p: float) -> str:
    return "n/a" if not math.isfinite(p) else f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _points(x: float) -> str:
    value = f"{100 * x:g}"
    return f"{value} point" + ("" if value == "1" else "s")


def verdict_text(row: dict[str, Any], baseline: str) -> str:
    """The sentence: better/worse (adjusted p < 0.05), else equivalent (TOST p < 0.05), else how many
    more questions would detect a difference of the margin."""
    test = "McNemar" if row["mcnemar_p"] is not None else "sign-flip"
    p, p_adj, m = row["p_value"], row["p_holm"], row["margin"]
    gained, lost = len(row["wrong_to_right"]), len(row["right_to_wrong"])
    if p_adj < ALPHA and row["diff"] != 0:
        lo, hi = row["ci95"]
        interval = f" [{100 * lo:.1f}, {100 * hi:.1f}]" if math.isfinite(lo) else ""
        adjusted = f", adjusted {p_text(p_adj)}" if p_adj != p else ""
        return (f"{row['other']} is {'better' if row['diff'] > 0 else 'worse'} than {baseline} by "
                f"{100 * abs(row['diff']):.1f} points{interval} ({test} p = {p_text(p)}{adjusted}, "
                f"{gained} questions gained, {lost} lost)")
    if row["equivalent"]:
        return f"equivalent within ±{_points(m)} (TOST p = {p_text(row['tost'])})"
    if row["more"] is None:
        return f"no difference detectable: no question changed ({row['n_questions']} questions)"
    if row["more"] > 0:
        return f"no difference detectable: about {row['more']} more questions would detect {_points(m)}"
    return (f"no difference detectable: these questions would detect {_points(m)}, yet not shown within "
            f"±{_points(m)} (TOST p = {p_text(row['tost'])})")


def build_verdicts(baseline: str, scores: Sequence[Scores], margin: float = 0.01,
                   adjust: str = "holm") -> list[Verdict]:
    """Every (run, metric) of ``scores`` against ``baseline``: overall, per dataset, per subject."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {sorted(ADJUSTMENTS)}, got {adjust!r}")
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    out = []
    for s in scores:
        for row in _rows_of(s, margin, adjust):
            row["verdict"] = verdict_text(row, baseline)
            row.pop("more")
            out.append(Verdict(**row))
    return out


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def verdict_record(v: Verdict) -> dict[str, Any]:
    """One entry of PATH.json's "pairs" (NaN as null)."""
    return {"other": v.other, "dataset": v.dataset, "metric": v.metric, "n_questions": v.n_questions,
            "diff": _num(v.diff), "stderr": _num(v.stderr), "ci95": [_num(v.ci95[0]), _num(v.ci95[1])],
            "p_value": _num(v.p_value), "p_holm": _num(v.p_holm), "mcnemar_p": _num(v.mcnemar_p),
            "flips": {"right_to_wrong": len(v.right_to_wrong), "wrong_to_right": len(v.wrong_to_right),
                      "ids": {"right_to_wrong": list(v.right_to_wrong), "wrong_to_right": list(v.wrong_to_right)}},
            "equivalence": {"margin": v.margin, "p": _num(v.tost), "equivalent": v.equivalent},
            "verdict": v.verdict}


def verdict_cells(v: Verdict) -> list[str]:
    """run, metric, dataset, questions, lost, gained, p, adjusted p, TOST p and the verdict."""
    return [v.other, v.metric, v.dataset, str(v.n_questions), str(len(v.right_to_wrong)), str(len(v.wrong_to_right)),
            p_text(v.p_value), p_text(v.p_holm), p_text(v.tost), v.verdict]


VERDICT_HEADER = ["run", "metric", "dataset", "questions", "right→wrong", "wrong→right", "p", "adjusted p",
                  "TOST p", "verdict"]


def verdicts_markdown(verdicts: Sequence[Verdict], baseline: str, margin: float, adjust: str) -> list[str]:
    """The verdict table's markdown lines (empty without verdicts)."""
    if not verdicts:
        return []
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[adjust]
    lines = [f"Verdicts against `{baseline}`: McNemar (one outcome per question) or sign-flip (shuffled "
             f"accuracy) p-values, {name}-adjusted over the subjects of a dataset and over the datasets; "
             f"equivalence is TOST at ±{_points(margin)}.", "",
             "| " + " | ".join(VERDICT_HEADER) + " |", "|---" * len(VERDICT_HEADER) + "|"]
    return lines + ["| " + " | ".join(verdict_cells(v)) + " |" for v in verdicts]
