"""Metrics: pure functions from predictions to numbers (docs/design.md, "Metrics").

Notation: n questions, K permutations each; y_ik = 1 when permutation k of question i is right.
The error bar of an accuracy is the standard error *clustered by question*,
sd_i(mean_k y_ik) / sqrt(n): permutations of one question are not independent samples, so the
std of per-order accuracies is reported as `std` but never used as the error bar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..schema import LETTERS, UNPARSED, Predictions
from .accuracy import acc_original, accuracy, accuracy_interval
from .agreement import letter_text_agreement
from .bias import bias_metrics
from .cloze import cloze_summary, compare_formulations
from .intervals import SMALL_N, macro_interval
from .meaning import option_meaning
from .position import PERMUTATIONS
from .probes import choices_only_accuracy
from .sampling import sampling_metrics
from .true_mass import first_true_block, mark_headline, row_scores
from .uncertainty import question_codes

if TYPE_CHECKING:
    from ..settings.config import EvalConfig


def letter_dist(pred: np.ndarray, answer: np.ndarray, num_choices: np.ndarray,
                generated: bool = False) -> dict[str, dict[str, float]]:
    """Share of predictions and of gold answers per displayed letter (over the rows given); in
    generation mode also the share of answers no letter was extracted from (``pred`` -1)."""
    top = int(num_choices.max()) if len(num_choices) else 0
    n = max(1, len(pred))
    parsed = pred >= 0
    predicted = np.bincount(pred[parsed], minlength=top)[:top] / n
    gold = np.bincount(answer, minlength=top)[:top] / n
    out = {LETTERS[i]: {"pred": float(predicted[i]), "gold": float(gold[i])} for i in range(top)}
    if generated:
        out[UNPARSED] = {"pred": float(np.mean(~parsed)) if len(pred) else 0.0, "gold": 0.0}
    return out


def generation_metrics(preds: Predictions) -> dict[str, Any]:
    """Generation mode: how often no letter was extracted, how often the output hit
    max_new_tokens, and how long the outputs were."""
    n = len(preds)
    written = preds.generation
    if written is None or n == 0:
        return {}
    unparsed = int(np.sum(preds.pred < 0))
    cut = int(np.sum(written.truncated))
    return {
        "unparsed_rate": {"value": unparsed / n, "rows": unparsed, "n_rows": n},
        "truncated": {"value": cut / n, "rows": cut,
                      "unparsed_rows": int(np.sum(written.truncated & (preds.pred < 0)))},
        "new_tokens": {"value": float(np.mean(written.new_tokens)), "max": int(np.max(written.new_tokens))},
    }


@dataclass(frozen=True)
class MetricOptions:
    """Knobs of the uncertainty and bias computations (from EvalConfig; written into results)."""

    n_boot: int = 1000  # question-level bootstrap replicates for nonlinear metrics (0: none)
    seed: int = 0  # bootstrap draws and the PriDe subset
    pride_fraction: float = 0.05
    min_per_letter: int = 5  # rstd/rsd use letters that are gold at least this often
    small_n: int = SMALL_N  # below this many questions, no proportion's ci95 is narrower than Wilson's
    shuffle_mode: str | None = None  # none | random | cyclic | all (None: position_bias tells from the orders)
    permutations: int = PERMUTATIONS  # re-draws of position_bias's randomisation test

    @classmethod
    def from_config(cls, cfg: EvalConfig) -> MetricOptions:
        """The metric knobs of a config (the bootstrap and PriDe subset use the base seed)."""
        return cls(n_boot=cfg.bootstrap, seed=cfg.seed, pride_fraction=cfg.pride_fraction,
                   shuffle_mode=cfg.permutation_mode)


LOW_LETTER_MASS = 0.5  # below this mean, the model mostly wanted a token that is no option label


def label_mass_summary(mass: np.ndarray) -> dict[str, Any]:
    """Probability the model put on the k option labels (among the whole vocabulary), per row:
    its mean, and the share of rows under LOW_LETTER_MASS. A low mean means the scored position is
    not where the model answers (a chat or thinking template, a missing answer cue): the letter
    probabilities are then read from a distribution that is mostly elsewhere."""
    if len(mass) == 0:
        return {"value": None, "reason": "no rows"}
    return {"value": float(np.mean(mass)), "min": float(np.min(mass)),
            "share_low": float(np.mean(mass < LOW_LETTER_MASS)), "low": bool(np.mean(mass) < LOW_LETTER_MASS)}


def exact_ties(probs: list[np.ndarray]) -> dict[str, Any]:
    """Rows whose top probability is shared by two or more options (broken by a seeded order, see
    permute.choose_options)."""
    rows = 0
    for k in {len(p) for p in probs} - {0}:  # rows of one option count at once
        same = np.stack([p for p in probs if len(p) == k])
        rows += int(np.sum(np.sum(same == same.max(axis=1, keepdims=True), axis=1) > 1))
    return {"value": rows / len(probs) if probs else None, "rows": int(rows)}


def summarize(preds: Predictions, options: MetricOptions = MetricOptions()) -> dict[str, Any]:
    """The metrics of one group of predictions (a subject, a dataset, or everything): of its letter
    rows, with its cloze rows' under ``cloze`` and both compared under ``formulations``; of a group
    of cloze rows alone, the cloze metrics."""
    cloze = preds.cloze_rows
    if not cloze.any():
        return _letter_summary(preds, options)
    if cloze.all():
        return cloze_summary(preds, options.small_n)
    letters, texts = preds.select(~cloze), preds.select(cloze)
    return {**_letter_summary(letters, options), "cloze": cloze_summary(texts, options.small_n),
            "formulations": compare_formulations(letters, texts)}


def _letter_summary(preds: Predictions, options: MetricOptions) -> dict[str, Any]:
    """The metrics of letter rows (logit scoring or generation)."""
    question = question_codes(preds)
    scores = row_scores(preds)  # 0/1 picks; TruthfulQA MC2's rows: the mass on the true answers
    shuffled = preds.order_index >= 0
    letters = preds.letters
    acc = accuracy(question, preds.order_index, scores)
    acc.update(accuracy_interval(acc, options.small_n))
    return {
        "accuracy": mark_headline(acc, preds),
        "acc_original": acc_original(preds.order_index, scores, question),
        **first_true_block(preds, question, options.small_n),
        "letter_dist": letter_dist(preds.pred[shuffled], preds.answer[shuffled], preds.num_choices[shuffled],
                                   preds.generated),
        "n_rows": len(preds),
        **({"letter_mass": label_mass_summary(letters.letter_mass), "ties": exact_ties(letters.probs)}
           if letters is not None else generation_metrics(preds)),
        **({"sampling": sampling_metrics(preds)} if preds.n_samples > 1 else {}),
        **({"choices_only_accuracy": choices_only_accuracy(preds)}
           if letters is not None and letters.pred_choices_only is not None else {}),
        **({"letter_text_agreement": letter_text_agreement(preds, options.small_n)}
           if letters is not None and letters.pred_written is not None else {}),
        **bias_metrics(preds, pride_fraction=options.pride_fraction, seed=options.seed, n_boot=options.n_boot,
                       min_per_letter=options.min_per_letter, mode=options.shuffle_mode,
                       permutations=options.permutations),
        **({"option_meaning": meaning} if (meaning := option_meaning(preds)) else {}),
    }


MACRO_OVER = "subjects: the mean of the subjects' accuracies (OLMES)"
MICRO_OVER = "questions: the mean over every question (lm-eval's mmlu)"


def macro_accuracy(subjects: list[dict[str, Any]]) -> dict[str, Any]:
    """The unweighted mean of the subjects' accuracies (the micro mean weighs questions instead).

    Its error bar treats the subjects as fixed strata: stderr = sqrt(sum_s stderr_s^2) / S, each
    subject's own (clustered) stderr; none when a subject has none (a one-question subject). Its
    interval is the proportion interval over the subjects' effective number of questions
    (:func:`~.intervals.macro_interval`): never [v, v]."""
    blocks = [m["accuracy"] for m in subjects if m["accuracy"]["value"] is not None]
    if not blocks:
        return {"value": None, "reason": "no subject has permuted rows", "n_subjects": 0, "over": MACRO_OVER}
    out = macro_interval(blocks)
    if "stderr_reason" in out:
        out["stderr_reason"] = "a subject has a single question, so no error bar of its own"
    return {**out, "n_subjects": len(blocks), "over": MACRO_OVER}


def micro_accuracy(block: dict[str, Any]) -> dict[str, Any]:
    """``accuracy`` (over questions) under its aggregate's name, beside ``accuracy_macro``."""
    keep = ("value", "reason", "stderr", "ci95", "ci_method", "wilson_weight", "n_questions")
    return {**{k: block["accuracy"][k] for k in keep if k in block["accuracy"]}, "over": MICRO_OVER}


def _file_groups(part: Predictions) -> dict[str, np.ndarray]:
    """Each source file's rows (Twinkle Eval's unit), when they are not simply the subjects: a file
    holding several subjects, or a subject spread over several files; else nothing."""
    if part.file is None:
        return {}
    files = sorted(set(part.file))
    if len(set(zip(part.file, part.subject))) == len(files) == len(set(part.subject)):
        return {}
    column = np.array(part.file, dtype=object)
    return {f: column == f for f in files}


def summarize_groups(preds: Predictions, options: MetricOptions = MetricOptions()) -> dict[str, Any]:
    """Overall (micro), per dataset with per subject (and per file, where files are not the
    subjects), and the macro average over subjects."""
    out: dict[str, Any] = {"overall": summarize(preds, options), "datasets": {}}
    every_subject: list[dict[str, Any]] = []
    dataset = np.array(preds.dataset, dtype=object)
    subject = np.array(preds.subject, dtype=object)
    for name in dict.fromkeys(preds.dataset):
        part = preds.select(dataset == name)
        subjects = {s: summarize(preds.select((dataset == name) & (subject == s)), options)
                    for s in sorted(set(part.subject))}
        block = summarize(part, options)
        block["accuracy_macro"] = macro_accuracy(list(subjects.values()))
        block["accuracy_micro"] = micro_accuracy(block)
        out["datasets"][name] = {"metrics": block, "subjects": subjects}
        files = _file_groups(part)
        if files:
            out["datasets"][name]["files"] = {f: summarize(part.select(rows), options) for f, rows in files.items()}
        every_subject.extend(subjects.values())
    out["overall"]["accuracy_macro"] = macro_accuracy(every_subject)
    out["overall"]["accuracy_micro"] = micro_accuracy(out["overall"])
    return out


HEADLINE_SCALARS = ("accuracy", "acc_norm", "acc_original", "debiased_accuracy", "all_correct", "fluctuation", "rstd",
                    "ckld", "unparsed_rate", "position_bias", "choices_only_accuracy", "letter_text_agreement")


def headline_scalars(block: dict[str, Any]) -> dict[str, float]:
    """The numbers worth a line on a training dashboard or a trend table, flat and named; a metric
    that does not apply is left out (never logged as 0)."""
    out: dict[str, float] = {}
    for key in HEADLINE_SCALARS:
        metric = block.get(key) or {}
        if metric.get("value") is not None:
            out[key] = metric["value"]
            if key == "accuracy" and metric.get("stderr") is not None:
                out["accuracy_stderr"] = metric["stderr"]
    for key in ("accuracy", "acc_norm"):  # logit+cloze: the option texts' scores beside the letters'
        value = ((block.get("cloze") or {}).get(key) or {}).get("value")
        if value is not None:
            out[f"cloze_{key}"] = value
    bias = block.get("position_bias") or {}
    if bias.get("value") is not None:
        out["position_bias_p"] = bias["p_value"]  # the excess of its letter is "position_bias" (above)
    for letter, share in (block.get("letter_dist") or {}).items():
        out[f"pred_share_{letter}"] = share["pred"]
    sampling = block.get("sampling") or {}
    if sampling.get("n_samples"):
        out["majority_vote"] = sampling["majority_vote"]["value"]
        out.update({f"pass_at_{k}": b["value"] for k, b in sampling["pass_at_k"].items()})
    return out
