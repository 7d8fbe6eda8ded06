"""Positional-bias metrics: pure functions from Predictions to numbers (docs/design.md, "Metrics").

Only permuted rows (``order_index >= 0``) count; the ORIGINAL order is :func:`summarize.acc_original`.
A question is its (dataset, id) key. A metric that does not apply returns
``{"value": None, "reason": ...}`` instead of a number, so reports can say why it is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import LETTERS, ORIGINAL, Predictions, plural
from .intervals import proportion_interval
from .position import PERMUTATIONS, position_bias
from .pride import pride_on_rows
from .rows import NO_ROWS, DenseRows, dense_rows
from .uncertainty import bootstrap_stats, brier, clustered_stderr, ece, question_key_strings, variance_components

EPS = 1e-10  # smoothing of the letter distributions in ckld
ECE_BINS = 15
ECE_MIN_ROWS = 10 * ECE_BINS  # fewer: most bins hold a handful of rows, and |acc - conf| is mostly noise
NEEDS_TWO = "needs at least 2 permutations per question"
PROBABILITY_METRICS = ("debiased_accuracy", "pride", "ece", "brier")
NO_PROBABILITIES = "generation mode: the model wrote a letter, so there are no option probabilities"


def _original_order(preds: Predictions, r: DenseRows) -> tuple[np.ndarray, np.ndarray] | None:
    """Per question code of ``r``: the original order's option probabilities (NaN where it was not
    scored) and its gold index; None without original-order rows."""
    sub = preds.select(preds.order_index == ORIGINAL)
    if len(sub) == 0 or sub.letters is None or r.n == 0:
        return None
    letters = sub.letters
    probs, gold = np.full((r.n, r.width), np.nan), np.full(r.n, -1, np.int64)
    joined = question_key_strings(sub)
    codes = np.minimum(np.searchsorted(r.keys, joined), r.n - 1)
    for row, (code, key) in enumerate(zip(codes, joined)):
        if r.keys[code] == key:  # the identity order: displayed positions are the original options
            probs[code, : len(letters.probs[row])], gold[code] = letters.probs[row], sub.answer[row]
    return probs, gold


def _result(value: Any, reason: str, **extra: Any) -> dict[str, Any]:
    """{"value": float, **extra}, or {"value": None, "reason": reason} for None/NaN."""
    if value is None or not np.isfinite(value):
        return {"value": None, "reason": reason}
    return {"value": float(value), **extra}


def _too_few_permutations(r: DenseRows) -> str | None:
    if r.n == 0:
        return NO_ROWS
    short = int((np.bincount(r.runs, minlength=r.n * r.n_samples) < 2).reshape(r.n, -1).any(axis=1).sum())
    if not short:
        return None
    return f"{NEEDS_TWO} ({short} of {plural(r.n, 'question')} {'has' if short == 1 else 'have'} fewer)"


def _all_any(r: DenseRows) -> tuple[np.ndarray, np.ndarray]:
    """Per question: 1 if right under all (any) of its permutations (with samples: the share of
    its samples for which that holds)."""
    runs = r.n * r.n_samples
    m = np.bincount(r.runs, minlength=runs)
    hits = np.bincount(r.runs, weights=r.correct, minlength=runs)
    return r.per_question((hits == m).astype(np.float64)), r.per_question((hits > 0).astype(np.float64))


def _fluctuation(r: DenseRows) -> np.ndarray:
    """Per question: share of unordered pairs of permutations whose predicted contents differ (an
    unextracted answer counts as one more content); with samples, averaged over them."""
    runs, w = r.n * r.n_samples, r.width + 1
    m = np.bincount(r.runs, minlength=runs).astype(np.float64)
    content = r.original(r.pred)
    content = np.where(content >= 0, content, w - 1)
    same = np.bincount(r.runs * w + content, minlength=runs * w).reshape(runs, w)
    agree = (same * (same - 1) / 2).sum(axis=1)
    return r.per_question(1 - agree / (m * (m - 1) / 2))


def _order_metrics(r: DenseRows) -> dict[str, dict[str, Any]]:
    """all_correct / any_correct (CircularEval "perf", Liu et al. 2023, MMBench; min/max of
    Pezeshkpour & Hruschka 2023), their gap ``order_sensitivity``, and ``fluctuation``."""
    reason = _too_few_permutations(r)
    names = ("all_correct", "any_correct", "order_sensitivity", "fluctuation")
    if reason:
        return {name: {"value": None, "reason": reason} for name in names}
    all_v, any_v = _all_any(r)
    out: dict[str, dict[str, Any]] = {}
    for name, v in zip(names, (all_v, any_v, any_v - all_v, _fluctuation(r))):
        out[name] = _share(v)
    return out


def _share(per_question: np.ndarray) -> dict[str, Any]:
    """A mean over questions of per-question values in [0, 1] (a linear metric: no bootstrap), with
    its stderr clustered by question and the proportion interval (intervals.py)."""
    value = float(per_question.mean())
    stderr = clustered_stderr(per_question) if len(per_question) > 1 else None
    return {"value": value, "n_questions": len(per_question), "stderr": stderr,
            **proportion_interval(value, len(per_question), stderr)}


def _letter_counts(r: DenseRows) -> np.ndarray:
    """[n, 3, width]: per question and displayed letter, the gold, hit and predicted counts."""
    n, w = r.n, r.width
    gold = np.bincount(r.question * w + r.answer, minlength=n * w)
    hit = np.bincount(r.question * w + r.answer, weights=r.correct, minlength=n * w)
    parsed = r.pred >= 0  # an unextracted answer is no letter's prediction
    predicted = np.bincount(r.question * w + np.maximum(r.pred, 0), weights=parsed, minlength=n * w)
    return np.stack([gold, hit, predicted], axis=1).reshape(n, w, 3).transpose(0, 2, 1).astype(np.float64)


def _rstd_rsd(sums: np.ndarray, min_per_letter: int) -> tuple[np.ndarray, np.ndarray]:
    """rstd and rsd from summed letter counts [..., 3, width]; NaN where they do not apply.

    The spread is over the letters that are gold at least ``min_per_letter`` times (a recall from
    fewer is mostly noise). A letter left out must not hide a lean: if the model predicted one of
    them more often than it was gold, the recalls of the letters kept cannot show that preference
    (a model that always says "C" has recall 0 on every other letter: spread 0), so nothing is
    reported.
    """
    gold, hit, predicted = sums[..., 0, :], sums[..., 1, :], sums[..., 2, :]
    ok = gold >= min_per_letter
    hidden = (~ok & (predicted > gold)).any(axis=-1)
    n_ok = ok.sum(axis=-1)
    recall = np.where(ok, hit / np.maximum(gold, 1), 0.0)
    mean = recall.sum(axis=-1) / np.maximum(n_ok, 1)
    std = np.sqrt((ok * (recall - mean[..., None]) ** 2).sum(axis=-1) / np.maximum(n_ok, 1))
    applies = (n_ok >= 2) & ~hidden
    rstd = np.where(applies, 100 * std, np.nan)
    rsd = np.where(applies & (mean > 0), std / np.where(mean > 0, mean, 1), np.nan)
    return rstd, rsd


def _rstd_reason(gold: np.ndarray, predicted: np.ndarray, min_per_letter: int) -> str:
    """Why rstd/rsd are not reported: too few letters with enough gold answers, or a letter left
    out that the model leans on (named with its counts)."""
    letters, kept = LETTERS[: len(gold)], int((gold >= min_per_letter).sum())
    hidden = [f"{L} (gold {int(g)}, predicted {plural(int(p), 'time')})" for L, g, p in zip(letters, gold, predicted)
              if g < min_per_letter and p > g]
    if hidden and kept >= 2:
        return (f"letters gold fewer than {plural(min_per_letter, 'time')} are left out of the spread, and the model "
                f"leans on {', '.join(hidden)}: over the other letters the spread would hide that")
    return f"needs at least 2 letters that are gold >= {plural(min_per_letter, 'time')} (got {kept})"


def _ckld(sums: np.ndarray, min_per_letter: int) -> np.ndarray:
    """KL(gold letter share || predicted letter share) in nats from summed counts [..., 3, width].

    A gold letter never predicted puts the smoothing constant EPS inside the logarithm, so the value
    is large whatever the evidence. It is reported only where such a letter is gold at least
    ``min_per_letter`` times, the expected count of the chi-square rule: with fewer, never seeing it
    predicted is chance as much as avoidance. NaN where it does not apply.
    """
    def share(counts: np.ndarray) -> np.ndarray:  # NaN where nothing was counted (no letter extracted)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = counts / counts.sum(axis=-1, keepdims=True) + EPS
        return p / p.sum(axis=-1, keepdims=True)

    gold, predicted = sums[..., 0, :], sums[..., 2, :]
    unsure = ((predicted == 0) & (gold > 0) & (gold < min_per_letter)).any(axis=-1)
    p, q = share(gold), share(predicted)
    return np.where(unsure, np.nan, (p * np.log(p / q)).sum(axis=-1))


def _ckld_reason(gold: np.ndarray, predicted: np.ndarray, min_per_letter: int) -> str:
    rare = [f"{L} (gold {plural(int(g), 'time')})" for L, g, p in zip(LETTERS, gold, predicted)
            if p == 0 and 0 < g < min_per_letter]
    if not rare:
        return "no answer had an extracted letter"
    return (f"never predicted, and gold fewer than {plural(min_per_letter, 'time')}: {', '.join(rare)}; too few to "
            f"tell avoidance from chance, and the divergence would be set by its smoothing constant")


def _letter_metrics(r: DenseRows, min_per_letter: int, n_boot: int, seed: int) -> dict[str, dict[str, Any]]:
    """Per-letter recall, rstd (Zheng et al., ICLR 2024), rsd and ckld (Choi et al. 2024)."""
    if min_per_letter < 1:
        raise ValueError(f"min_per_letter must be >= 1, got {min_per_letter}")
    if r.n == 0:
        return {name: {"value": None, "reason": NO_ROWS} for name in ("letter_recall", "rstd", "rsd", "ckld")}
    counts = _letter_counts(r)
    gold, hit, predicted = counts.sum(axis=0)
    letters = LETTERS[: r.width]
    recall = {L: float(h / g) if g else None for L, g, h in zip(letters, gold, hit)}
    used = [L for L, g in zip(letters, gold) if g >= min_per_letter]
    rstd, rsd = _rstd_rsd(counts.sum(axis=0), min_per_letter)
    why = _rstd_reason(gold, predicted, min_per_letter)
    n_gold, n_predicted = ({L: int(c) for L, c in zip(letters, column)} for column in (gold, predicted))
    shown: dict[str, Any] = {"letters": used, "left_out": [L for L in letters if L not in used]}
    if np.isnan(rstd):  # not applicable: the counts say why, whatever the reason
        shown.update(n_gold=n_gold, n_predicted=n_predicted)
    out = {
        "letter_recall": {"value": recall, "n_gold": n_gold, "n_predicted": n_predicted},
        "rstd": {**_result(rstd, why), **shown},
        "rsd": {**_result(rsd, why if np.isnan(rstd) else "per-letter recall is 0 for every letter"), **shown},
        "ckld": _result(_ckld(counts.sum(axis=0), min_per_letter), _ckld_reason(gold, predicted, min_per_letter)),
    }
    if n_boot:
        flat = counts.reshape(r.n, -1)
        unflat = lambda s: s.reshape(len(s), 3, r.width)
        for name, fn in (("rstd", lambda s: _rstd_rsd(unflat(s), min_per_letter)[0]),
                         ("ckld", lambda s: _ckld(unflat(s), min_per_letter))):
            if out[name]["value"] is not None:
                out[name].update(bootstrap_stats(fn, flat, n_boot, seed))
    return out


def _debiased_accuracy(r: DenseRows) -> dict[str, Any]:
    """Per question, average the probabilities over permutations by content (original option),
    take the argmax (ties: the lower original index) and compare with gold; mean over questions.
    Needs one permutation only (then it is plain accuracy up to ties)."""
    if r.n == 0:
        return {"value": None, "reason": NO_ROWS}
    return _share((r.content_choice() == r.gold_original()).astype(np.float64))


def bias_scope(n: int, ordered: int, free: int) -> dict[str, Any]:
    """Which questions the bias metrics read, where some options could not move (prompts/anchors.py).

    The letter statistics (position_bias, rstd, ckld, letter_recall, PriDe) need every option to
    visit every letter, so they leave out questions with a pinned option or a fixed order. The order
    metrics (all_correct, any_correct, fluctuation, order_sensitivity) need two orders of a
    question, so they leave out only the fixed ones."""
    return {"n_questions": n, "letter_metrics_questions": free, "order_metrics_questions": ordered,
            "left_out": f"{plural(n - free, 'question')} with an option kept at its letter or a fixed order "
                        f"{'is' if n - free == 1 else 'are'} left "
                        f"out of the letter statistics ({plural(n - ordered, 'question')} with a fixed order out of "
                        f"the order metrics): their options cannot visit every letter"}


def bias_metrics(preds: Predictions, *, pride_fraction: float = 0.05, seed: int = 0, n_boot: int = 1000,
                 min_per_letter: int = 5, mode: str | None = None,
                 permutations: int = PERMUTATIONS) -> dict[str, Any]:
    """Every bias metric of one group (a subject, a dataset, or everything).

    The order metrics and debiased_accuracy are means over questions: a clustered stderr and the
    proportion interval (intervals.py). Question-level bootstrap stderr/ci95 (``n_boot`` replicates,
    ``n_boot=0`` skips them) on the nonlinear rstd and ckld; one ``seed`` drives the bootstrap draws (the
    same resampled questions for every metric) and the PriDe subset; ``mode`` is the run's shuffle mode
    (None: told from the orders) and ``permutations`` the re-draws of position_bias's test.
    """
    r = dense_rows(preds)
    fixed, anchored = preds.order_fixed, preds.anchored
    ordered = r if not fixed.any() else dense_rows(preds.select(~fixed))
    free = r if not anchored.any() else dense_rows(preds.select(~anchored))
    out: dict[str, Any] = {"n_questions": r.n, "seed": seed, "n_boot": n_boot}
    if free.n != r.n:
        out["bias_scope"] = bias_scope(r.n, ordered.n, free.n)
    out.update(_order_metrics(ordered))
    out.update(_letter_metrics(free, min_per_letter, n_boot, seed))
    out["position_bias"] = position_bias(free, seed, mode, permutations)
    empty = lambda reason=NO_ROWS: {"value": None, "reason": reason}
    few = _too_few_permutations(ordered)  # within-question variance needs two orders of a question (else it reads 0)
    out["variance_components"] = empty(few) if few else variance_components(ordered.question, ordered.correct)
    if preds.generated:
        for name in PROBABILITY_METRICS:
            out[name] = empty(NO_PROBABILITIES)
        return _scoped_reasons(out, r.n, ordered.n, free.n)
    out["debiased_accuracy"] = _debiased_accuracy(r)
    out["pride"] = pride_on_rows(free, pride_fraction, seed, _original_order(preds, free))
    rows = len(r.probs)
    out["ece"] = ({"value": ece(r.probs, r.correct, ECE_BINS), "n_bins": ECE_BINS, "n_rows": rows}
                  if rows >= ECE_MIN_ROWS else empty(f"needs at least {ECE_MIN_ROWS} scored rows ({rows} here): "
                                                     f"with fewer, binning noise alone inflates ECE"))
    out["brier"] = {"value": brier(r.probs, r.answer)} if r.n else empty()
    return _scoped_reasons(out, r.n, ordered.n, free.n)


ALL_PINNED = ("every question here has an option kept at its letter (\"All of the above\") or its original order, "
              "so no option visits every letter")
ALL_FIXED = ("every question here kept its original order (its text names options by letter, or fewer than two of "
             "its options may move)")
LETTER_METRICS = ("letter_recall", "rstd", "rsd", "ckld", "position_bias", "pride")
ORDER_METRICS = ("all_correct", "any_correct", "order_sensitivity", "fluctuation", "variance_components")


def _scoped_reasons(out: dict[str, Any], n: int, ordered: int, free: int) -> dict[str, Any]:
    """Where the scope left a metric no question, say so instead of "no permuted rows"."""
    for names, kept, reason in ((LETTER_METRICS, free, ALL_PINNED), (ORDER_METRICS, ordered, ALL_FIXED)):
        for name in names:
            if n and not kept and (out.get(name) or {}).get("reason") in (NO_ROWS, _too_few_reason(out, name)):
                out[name] = {"value": None, "reason": reason}
    return out


def _too_few_reason(out: dict[str, Any], name: str) -> str | None:
    """The order metrics' reason when no question had two orders (all were fixed)."""
    reason = (out.get(name) or {}).get("reason")
    return reason if isinstance(reason, str) and reason.startswith(NEEDS_TWO) else None
