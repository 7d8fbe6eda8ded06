"""The one 95% interval rule for every proportion results.json reports (accuracy, acc_original, the
order metrics, debiased_accuracy, macro averages, the cloze picks, agreement, suites).

A proportion here is a mean over n questions of per-question scores in [0, 1] (a 0/1 outcome, or
a share over a question's orders), with its stderr clustered by question. Two intervals exist:

- the plain Wilson score interval of the value over its n questions, which is right for 0/1
  scores, stays inside [0, 1], has width > 0 at 0/n and n/n, and asks nothing of an estimated
  spread;
- the clustered normal interval, value ± 1.96 stderr, which is right for many questions, and is
  narrower than Wilson's when a shuffled question's score (an average over its orders) varies less
  than a 0/1 outcome would.

The rule: each bound is a weighted mean of the two intervals' bounds. It is all Wilson (weight 1)
for fewer than ``small_n`` questions, at a value of 0 or 1, and where the stderr is 0 or unknown: a
spread of 0 estimated from a sample is no evidence that the spread is 0. For more questions the
weight fades linearly to 0 (all clustered normal) as ``evidence`` grows to ``FULL_EVIDENCE``, where
``evidence`` = n min(p, 1 - p) x stderr^2 / (p (1 - p) / n). That is the questions' worth of the
rarer outcome, discounted by the design effect (the questions' variance over a binomial's, at most
1). So the bounds move continuously with the data: one row more or less right moves them about as
much as it moves Wilson's, with no jump at 0, at 1 or at a zero spread. The width is > 0 for every
sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .uncertainty import Z95, wilson_score_interval

SMALL_N = 30  # fewer questions: never narrower than the plain Wilson interval
FULL_EVIDENCE = 10.0  # the normal approximation's usual ~10 outcomes of each kind


def wilson_weight(value: float, n: float, stderr: float | None, small_n: int = SMALL_N) -> float:
    """How much of the Wilson interval the 95% interval keeps (1: all of it, 0: none), continuous
    in ``value`` and ``stderr`` at a fixed ``n``."""
    if n < small_n or stderr is None or stderr <= 0 or value <= 0.0 or value >= 1.0:
        return 1.0
    # the questions' variance over a binomial's (the design effect; scores in [0, 1] cannot vary
    # more, up to ddof): a variance, not a stderr, so one row changed moves it a little even at 0
    design_effect = min(1.0, stderr * stderr * n / (value * (1 - value)))
    evidence = n * min(value, 1 - value) * design_effect
    return max(0.0, 1.0 - evidence / FULL_EVIDENCE)


def proportion_interval(value: float | None, n: float, stderr: float | None,
                        small_n: int = SMALL_N) -> dict[str, Any]:
    """``{"ci95": [low, high], "ci_method": ...}`` of a proportion over ``n`` questions (``n`` may
    be an effective, non-integer count, as for a macro average); ``{"ci95": None, ...}`` with no
    value or no questions. ``ci_method`` is "wilson" or "clustered normal" where the interval is
    that one, else "blend": each bound ``wilson_weight`` x Wilson's + (1 - ``wilson_weight``) x the
    clustered normal one."""
    if value is None or not n or n <= 0:
        return {"ci95": None, "ci_method": None}
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"proportion_interval needs a value in [0, 1], got {value}")
    w_low, w_high = wilson_score_interval(value, n)
    half = Z95 * stderr if stderr is not None else 0.0
    n_low, n_high = max(0.0, value - half), min(1.0, value + half)
    weight = wilson_weight(value, n, stderr, small_n)
    low, high = weight * w_low + (1 - weight) * n_low, weight * w_high + (1 - weight) * n_high
    method = "wilson" if weight == 1.0 else "clustered normal" if weight == 0.0 else "blend"
    out: dict[str, Any] = {"ci95": [float(low), float(high)], "ci_method": method}
    if method == "blend":
        out["wilson_weight"] = round(float(weight), 4)
    return out


def macro_interval(members: Sequence[dict[str, Any]], small_n: int = SMALL_N) -> dict[str, Any]:
    """The unweighted mean of ``members``' proportions, with its stderr and interval.

    A member is a block with ``value``, ``stderr`` and ``n_questions``. stderr = sqrt(sum
    stderr_m^2) / M: independent means, each with its own clustered stderr. n = M^2 / sum(1 / n_m),
    Kish's effective n of questions weighted 1 / n_m. Without a member's stderr (a one-question
    member) the interval is Wilson's at that n, and ``stderr_reason`` says why there is no stderr."""
    kept = [m for m in members if m.get("value") is not None and m.get("n_questions")]
    if not kept:
        return {"value": None, "reason": "no member has a value"}
    value = float(sum(m["value"] for m in kept) / len(kept))
    n_eff = len(kept) ** 2 / sum(1 / m["n_questions"] for m in kept)
    errors: list[float] = [m["stderr"] for m in kept if m.get("stderr") is not None]
    out: dict[str, Any] = {"value": value, "n_questions": sum(m["n_questions"] for m in kept),
                           "n_effective": round(n_eff, 2)}
    stderr = None
    if len(errors) == len(kept):
        stderr = float(math.sqrt(sum(e * e for e in errors)) / len(kept))
        out["stderr"] = stderr
    else:
        out["stderr_reason"] = "a member has a single question, so no error bar of its own"
    return {**out, **proportion_interval(value, n_eff, stderr, small_n)}
