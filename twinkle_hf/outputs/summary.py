"""Human-readable text from a results document: report.md and the console table.

Pure string building from the dict written to results.json, so `twinkle-hf report RUN_DIR` can
rebuild it from files alone.
"""

from __future__ import annotations

from typing import Any

from ..metrics.agreement import agreement_sentence, confusion_table
from ..metrics.meaning import meaning_lines
from ..metrics.probes import choices_only_sentence
from ..schema import UNPARSED, plural
from .cells import NA, markdown_rows, metric_value, num, pct
from .run_facts import run_lines, run_title
from .subjects import na_notes, subject_table
from .suites import suite_markdown
from .true_mass import true_mass_markdown
from .twinkle_block import twinkle_console, twinkle_markdown

# (key in a metrics block, label, what it means) for the headline table
HEADLINE = [
    ("accuracy", "accuracy (shuffled)", "mean over questions of accuracy across orders"),
    ("accuracy_macro", "accuracy over subjects", "unweighted mean of the subjects' accuracies (macro, as OLMES "
                                                  "reports); the row above weighs questions (micro, lm-eval's mmlu)"),
    ("acc_original", "acc_original", "accuracy on the original order (comparable with published numbers)"),
    ("debiased_accuracy", "debiased accuracy", "argmax of option probabilities averaged over orders"),
    ("pride", "PriDe accuracy", "the other questions' shuffled orders, scored once the letter prior (estimated on the "
                                "cyclic orders of a seeded share of the questions) is divided out"),
    ("all_correct", "all_correct", "right under every order (CircularEval)"),
    ("any_correct", "any_correct", "right under at least one order"),
    ("fluctuation", "fluctuation", "share of order pairs that pick different options"),
    ("rstd", "RStd", "100 x std of per-letter recall (0: every letter recalled alike; n/a when a letter is too "
                     "rarely gold to measure and the model leans on it)"),
    ("ckld", "CKLD", "KL(gold letter share || predicted letter share)"),
    ("ece", "ECE", "calibration error of the letter probabilities"),
    ("brier", "Brier", "squared error of the letter probabilities"),
]
CLOZE_HEADLINE = [  # cloze rows (--method cloze): "accuracy" is lm-eval's acc
    ("acc_norm", "acc_norm", "argmax of log-likelihood / characters of the option text (lm-eval's acc_norm)"),
    ("acc_bytes", "acc_bytes", "argmax of log-likelihood / UTF-8 bytes of the option text (lm-eval's acc_bytes)"),
]
FIRST_TRUE = ("first_true_acc", "first true as gold", "the pick counted right when it is the first true answer "
              "(as MC1 counts; not MC2's metric)")
GENERATION_HEADLINE = [  # generation mode only
    ("unparsed_rate", "unparsed", "answers no letter could be extracted from (counted wrong)"),
    ("truncated", "truncated", "answers cut off by --max-new-tokens"),
]


INTERVAL = "95%"  # the headline's error-bar cell: "stderr (95% low–high)", the interval of metrics/intervals.py
HEADLINE_HEADER = ["metric", "value", "± stderr (95% interval)", "meaning"]


def headline_rows(metrics: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(metric, value, error bar, meaning) per headline row, formatted; percentages except RStd,
    CKLD, Brier. Shared by report.md and report.html."""
    rows = []
    extra = GENERATION_HEADLINE if "unparsed_rate" in metrics else CLOZE_HEADLINE if "acc_norm" in metrics else []
    extra = ([FIRST_TRUE] if "first_true_acc" in metrics else []) + extra
    for key, label, meaning in HEADLINE[:1] + extra + HEADLINE[1:]:
        value, stderr, reason = metric_value(metrics, key)
        if key == "accuracy_macro" and (metrics.get(key) or {}).get("n_subjects", 0) < 2:
            continue  # one subject: the same number as the row above
        if key == "accuracy" and (metrics.get("accuracy") or {}).get("n_permutations", 2) < 2:
            label = "accuracy"  # one order: nothing was shuffled
        if key == "accuracy" and metrics.get("formulation") == "cloze":
            label, meaning = "acc (cloze)", "argmax of the option texts' summed log-likelihoods (lm-eval's acc)"
        if key == "accuracy" and "first_true_acc" in metrics:  # TruthfulQA MC2: lm-eval's acc is the mass
            label, meaning = f"{label}: MC2", metrics["accuracy"].get("definition", meaning)
        as_pct = key not in ("rstd", "ckld", "brier")
        fmt = pct if as_pct else (lambda v: num(v, 2))
        shown = NA if value is None else fmt(value) + ("%" if as_pct else "")
        err = fmt(stderr) if stderr is not None else ("" if value is not None else reason)
        ci = (metrics.get(key) or {}).get("ci95") if value is not None and as_pct else None
        err = f"{err} ({INTERVAL} {pct(ci[0])}–{pct(ci[1])})".strip() if ci else err
        if key == "unparsed_rate" and unparsed_counts(metrics):
            meaning += f": {unparsed_counts(metrics)}"
        rows.append((label, shown, err, meaning))
    return rows + sampling_rows(metrics.get("sampling") or {}) + formulation_rows(metrics)


def formulation_rows(metrics: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Headline rows of a run of both formulations (--method logit+cloze): the cloze accuracies, the
    paired MCF - CF gap and max(MCF, CF) as OLMES reports it."""
    both, cloze = metrics.get("formulations") or {}, metrics.get("cloze") or {}
    if both.get("value") is None:
        return []
    rows = [(f"cloze {key}", f"{pct(b.get('value'))}%", pct(b.get("stderr")), f"cloze formulation: lm-eval's {key}")
            for key, b in (("acc", cloze.get("accuracy")), ("acc_norm", cloze.get("acc_norm"))) if b]
    gap, best = both["gap"], both["max"]
    rows.append(("MCF − CF", f"{100 * gap['value']:+.1f} points", pct(gap.get("stderr")),
                 f"letters minus cloze ({both['cf'].get('metric')}), per question: paired, clustered by question"))
    rows.append(("max(MCF, CF)", f"{pct(best['value'])}%", pct(best.get("stderr")),
                 f"the better formulation ({best['formulation']}), as OLMES reports a task"))
    return [(label, value, err.replace("-", ""), meaning) for label, value, err, meaning in rows]


def unparsed_counts(metrics: dict[str, Any]) -> str:
    """What the headline's unparsed share counts, e.g. "20 of all 60 answers, the original order's 12 too":
    every answer, where the letter table counts those under shuffled orders (as every shuffled metric)."""
    block, gold = metrics.get("unparsed_rate") or {}, (metrics.get("letter_recall") or {}).get("n_gold") or {}
    everyone, shuffled = block.get("n_rows") or 0, sum(gold.values())
    extra = f", the original order's {everyone - shuffled} too" if gold and shuffled != everyone else ""
    return f"{block.get('rows')} of all {plural(everyone, 'answer')}{extra}" if everyone else ""


def letter_note(metrics: dict[str, Any]) -> str:
    """Why the letter table's unparsed share differs from the headline's, where it does."""
    gold = (metrics.get("letter_recall") or {}).get("n_gold")
    everyone = (metrics.get("unparsed_rate") or {}).get("n_rows")
    shuffled = sum((gold or {}).values())
    if not gold or not everyone or shuffled == everyone:
        return ""
    return (f"Letter shares count the {plural(shuffled, 'answer')} under shuffled orders; the headline's unparsed "
            f"share counts {unparsed_counts(metrics)}.")


def headline_table(metrics: dict[str, Any]) -> list[str]:
    """metric | value | error bar | what it means."""
    return markdown_rows(HEADLINE_HEADER, headline_rows(metrics))


def sampling_rows(block: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Headline rows of ``--samples n``: majority vote and pass@k (the accuracy row is their mean)."""
    if not block.get("n_samples"):
        return []
    n = block["n_samples"]
    rows = [("majority vote", block["majority_vote"], f"the letter extracted most often of {n} samples")]
    rows += [(f"pass@{k}", b, f"at least one of {k} samples right (unbiased estimate from {n})")
             for k, b in block["pass_at_k"].items()]
    return [(label, f"{pct(b['value'])}%", pct(b["stderr"]), meaning) for label, b, meaning in rows]


def letter_rows(metrics: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Per displayed letter: how often predicted and how often gold (in %, with the counts where the
    run recorded them), and recall when gold: every letter, also those too rare for RStd."""
    block = metrics.get("letter_recall") or {}
    recall, gold_n, pred_n = (block.get(key) or {} for key in ("value", "n_gold", "n_predicted"))
    if gold_n and pred_n and UNPARSED in (metrics.get("letter_dist") or {}):  # the answers no letter was read from
        pred_n = {**pred_n, UNPARSED: sum(gold_n.values()) - sum(pred_n.values())}
    count = lambda counts, letter: f" ({counts[letter]})" if letter in counts else ""
    return [(letter, pct(share["pred"]) + count(pred_n, letter), pct(share["gold"]) + count(gold_n, letter),
             pct(recall.get(letter)) if recall.get(letter) is not None else NA)
            for letter, share in (metrics.get("letter_dist") or {}).items()]


def letter_table(metrics: dict[str, Any]) -> list[str]:
    """Per displayed letter: how often predicted, how often gold, and recall when gold."""
    return markdown_rows(["letter", "predicted % (n)", "gold % (n)", "recall %"], letter_rows(metrics))


def plain_language(metrics: dict[str, Any]) -> str:
    """One sentence about the letter predicted most often (and the letter most over-predicted, when
    that is another one), and in generation mode about the answers no letter was extracted from."""
    every = metrics.get("letter_dist") or {}
    dist = {k: v for k, v in every.items() if k != UNPARSED}
    unparsed = (metrics.get("unparsed_rate") or {}).get("value") or 0.0  # every answer, as the headline counts
    lines = []
    if dist and any(share["pred"] for share in dist.values()):
        excess = lambda kv: kv[1]["pred"] - kv[1]["gold"]
        letter, share = max(dist.items(), key=lambda kv: (kv[1]["pred"], excess(kv)))  # ties: the one it leans on
        lines.append(f"The model predicts {letter} {pct(share['pred'], 0)}% of the time while {letter} is gold "
                     f"{pct(share['gold'], 0)}% of the time.")
        leaned, lean_share = max(dist.items(), key=excess)
        if leaned != letter and excess((leaned, lean_share)) > max(0.0, excess((letter, share))):
            lines.append(f"It over-predicts {leaned} most: {pct(lean_share['pred'], 0)}% of the time while {leaned} is "
                         f"gold {pct(lean_share['gold'], 0)}% of the time.")
    sentence = (metrics.get("formulations") or {}).get("sentence")
    if sentence:  # both formulations: which one this model can use
        lines.append(sentence)
    if unparsed:
        lines.append(f"No letter could be extracted from {pct(unparsed, 0)}% of its answers (counted wrong; see "
                     f"`output` in predictions.jsonl).")
    return " ".join(lines)


def verdict_lines(metrics: dict[str, Any]) -> list[str]:
    """The position-bias verdict (metrics/position.py), e.g. "Position bias: strong evidence of a
    preference for A (p < 0.001): ...", the choices-only probe's line (metrics/probes.py) and the
    letter/text agreement's (metrics/agreement.py), each where the run has its block."""
    block, probe = metrics.get("position_bias"), metrics.get("choices_only_accuracy")
    lines = [f"Position bias: {block.get('verdict') or 'n/a (' + str(block.get('reason', 'not computed')) + ')'}."
             ] if block else []
    lines += [f"Choices only: {choices_only_sentence(probe)}."] if probe else []
    lines += meaning_lines(metrics)
    agree = metrics.get("letter_text_agreement")
    lines += [f"Letter vs text: {agreement_sentence(agree)}."] if agree else []
    return lines


def cautions(metrics: dict[str, Any]) -> list[str]:
    """Warnings that change how every number of the run should be read."""
    out = []
    mass = metrics.get("letter_mass") or {}
    if mass.get("low"):
        out.append(f"Warning: on average only {pct(mass['value'])}% of the model's next-token probability is on "
                   f"the option labels ({pct(mass.get('share_low'))}% of prompts under 50%): the model wanted "
                   f"another token where the letter is read, so these scores are suspect. Check the prompt's "
                   f"ending (--log-prompts), the chat template (--apply-chat-template, --chat-template-kwargs) "
                   f"and the answer cue.")
    ties = metrics.get("ties") or {}
    if ties.get("rows"):
        out.append(f"Note: {plural(ties['rows'], 'prompt')} had an exact tie for the top option; ties are broken by a "
                   f"seeded random order (not by position), see the README.")
    return out


def console_summary(doc: dict[str, Any]) -> str:
    """What the CLI prints at the end of a run."""
    notes = na_notes(doc)
    return "\n".join(subject_table(doc) + (["", *notes] if notes else [])
                     + ["", plain_language(doc["metrics"]), *verdict_lines(doc["metrics"]),
                        *cautions(doc["metrics"])] + twinkle_console(doc))


def pride_lines(block: dict[str, Any]) -> list[str]:
    """PriDe's prior and how it was estimated (its accuracy is the headline's one PriDe row; the
    paper's way of counting stays in results.json as ``paper_protocol``)."""
    if block.get("value") is None or not block.get("prior"):
        return []
    prior = ", ".join(f"{letter} {pct(p)}%" for letter, p in block["prior"].items())
    return [f"PriDe prior, from the cyclic orders of {plural(block.get('n_prior_questions'), 'question')} (seed "
            f"{block.get('seed')}; listed in results.json as prior_questions): {prior}; divided out of the "
            f"shuffled orders of the other {plural(block.get('n_questions'), 'question')} (the headline's PriDe row)."]


def reading_notes(metrics: dict[str, Any]) -> list[str]:
    """How to read the error bars (and, where computed, where the variance of correctness lies)."""
    acc = metrics.get("accuracy") or {}
    spread = (f" The std of per-order accuracies is {pct(acc.get('std'))} points — a spread, not an error bar."
              if acc.get("std") is not None else "")
    notes = [f"Error bars are standard errors clustered by question (bootstrap over questions, B = "
             f"{metrics.get('n_boot', 0)}, for the nonlinear metrics).{spread} The 95% interval of a share is never "
             f"narrower than Wilson's over its questions below 30 questions, at 0% or 100%, or where the spread "
             f"is 0 (docs/results.md)."]
    notes += pride_lines(metrics.get("pride") or {})
    var = metrics.get("variance_components") or {}
    if var.get("within_question") is not None:
        notes.append(f"Variance of correctness: within a question (across orders) {num(var['within_question'])}, "
                     f"between questions {num(var['between_question'])}.")
    return notes


def report_markdown(doc: dict[str, Any], plots: list[str] | None = None, plot_note: str = "") -> str:
    """report.md: what ran, the headline, letters, per subject, and how to read it."""
    metrics = doc["metrics"]
    head = [
        f"# twinkle_hf report: {run_title(doc)}", "", *run_lines(doc), "",
        *([f"**{plain_language(metrics)}**", ""] if plain_language(metrics) else []),
        *[x for line in verdict_lines(metrics) for x in (line, "")],
        *[f"> {line}\n" for line in cautions(metrics)],
        "## Headline", "", *headline_table(metrics), "", *[x for note in reading_notes(metrics) for x in (note, "")],
        "", "## Letters", "", *letter_table(metrics), "", *([letter_note(metrics), ""] if letter_note(metrics) else []),
        *_confusion_section(metrics),
        *suite_markdown(doc), *true_mass_markdown(doc),
        "## Per subject", "", *subject_table(doc), "", *na_notes(doc, most=50), "", *twinkle_markdown(doc),
    ]
    if plots:
        head += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    if plot_note:
        head += [plot_note, ""]
    return "\n".join(head)


def _confusion_section(metrics: dict[str, Any]) -> list[str]:
    """logit+X runs: the scored letter against the written one, row by row counts."""
    table = confusion_table(metrics.get("letter_text_agreement") or {})
    return ["## Scored letter vs written letter", "", *table, ""] if table else []
