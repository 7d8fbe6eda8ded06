"""An independent recomputation of compare's verdict numbers from two runs' predictions.jsonl.

Written from the definitions (docs/results.md, "Comparing runs") with the standard library only, not
from twinkle_hf's code: the tests set it against PATH.json. Runs are assumed to share their orders.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

NORMAL = statistics.NormalDist()


def read_rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def per_question(run: Path | list[dict], metric: str) -> dict[tuple[str, str], tuple[str, float]]:
    """(dataset, id) -> (subject, score): acc_original the original-order row (order -1), accuracy the
    mean correctness over the shuffled orders (order >= 0); ``run`` a run directory or its rows."""
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    subject = {}
    for r in read_rows(run) if isinstance(run, Path) else run:
        order = r.get("order", r.get("seed"))
        if (metric == "acc_original") == (order == -1):
            scores[(r["dataset"], r["id"])].append(1.0 if r["pred"] == r["answer"] else 0.0)
            subject[(r["dataset"], r["id"])] = r["subject"]
    return {q: (subject[q], sum(v) / len(v)) for q, v in scores.items()}


def mcnemar(b: int, c: int) -> float:
    n = b + c
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n)


def holm(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def sign_flip_exact(d: list[float]) -> float:
    nonzero = [x for x in d if abs(x) > 1e-12]
    observed = abs(sum(nonzero)) - 1e-9
    flips = list(itertools.product((1, -1), repeat=len(nonzero)))
    return sum(abs(sum(s * x for s, x in zip(signs, nonzero))) >= observed for signs in flips) / len(flips)


def group(base: dict, other: dict, keep, margin: float) -> dict:
    """The numbers of one row: the questions in both runs for which ``keep(question, subject)`` holds."""
    qs = [q for q in base if q in other and keep(q, base[q][0])]
    d = [other[q][1] - base[q][1] for q in qs]
    n = len(d)
    diff = sum(d) / n
    stderr = statistics.stdev(d) / math.sqrt(n) if n > 1 else math.nan
    tost = math.nan
    if n >= 10:
        se = max(stderr, 1 / n)
        tost = max(1 - NORMAL.cdf((diff + margin) / se), NORMAL.cdf((diff - margin) / se))
    return {"n": n, "diff": diff, "stderr": stderr, "d": d, "tost": tost,
            "right_to_wrong": sorted(q[1] for q, x in zip(qs, d) if x < 0),
            "wrong_to_right": sorted(q[1] for q, x in zip(qs, d) if x > 0)}


def change(base: Path | list[dict], other: Path | list[dict], metric: str) -> dict:
    """``other`` against ``base`` (run directories or their rows) on the questions both scored: delta, p
    (McNemar for acc_original, the exact sign-flip test for accuracy) and the flips (down, up)."""
    b, o = per_question(base, metric), per_question(other, metric)
    d = [o[q][1] - b[q][1] for q in b if q in o]
    down, up = sum(x < 0 for x in d), sum(x > 0 for x in d)
    p = mcnemar(down, up) if metric == "acc_original" else sign_flip_exact(d)
    return {"delta": sum(d) / len(d), "p": p, "down": down, "up": up}


def pairs(out: Path) -> list[dict]:
    return json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["pairs"]


def find(rows: list[dict], dataset: str, metric: str = "acc_original") -> dict:
    (row,) = [r for r in rows if r["dataset"] == dataset and r["metric"] == metric]
    return row


def check_against_predictions(runs: list[Path], out: Path, margin: float) -> list[dict]:
    """PATH.json's acc_original and accuracy rows against paired_check's recomputation from predictions.jsonl."""
    got = pairs(out)
    for metric in ("acc_original", "accuracy"):
        base, other = (per_question(r, metric) for r in runs)
        subjects = sorted({s for s, _ in base.values()})
        rows = {"overall": group(base, other, lambda q, s: True, margin)}
        rows |= {f"mmlu/{s}": group(base, other, lambda q, subj, s=s: subj == s, margin) for s in subjects}
        tests = {name: mcnemar(len(r["right_to_wrong"]), len(r["wrong_to_right"])) if metric == "acc_original"
                 else sign_flip_exact(r["d"]) if sum(x != 0 for x in r["d"]) <= 16 else None
                 for name, r in rows.items()}
        names = [f"mmlu/{s}" for s in subjects]
        adjusted = dict(zip(names, holm([tests[n] for n in names]))) if None not in tests.values() else {}
        for name, want in rows.items():
            row = find(got, name, metric)
            assert row["n_questions"] == want["n"] and row["diff"] == pytest.approx(want["diff"])
            assert row["stderr"] == pytest.approx(want["stderr"])
            ids = row["flips"]["ids"]
            assert (sorted(ids["right_to_wrong"]), sorted(ids["wrong_to_right"])) == \
                (want["right_to_wrong"], want["wrong_to_right"])
            if math.isnan(want["tost"]):  # fewer than 10 questions: no TOST
                assert row["equivalence"]["p"] is None
            else:
                assert row["equivalence"]["p"] == pytest.approx(want["tost"])
            assert row["equivalence"]["equivalent"] == (want["tost"] < 0.05)
            if tests[name] is not None:
                assert row["p_value"] == pytest.approx(tests[name])
            if metric == "acc_original":
                assert row["mcnemar_p"] == row["p_value"]
            if name in adjusted:
                assert row["p_holm"] == pytest.approx(adjusted[name])
    return got
