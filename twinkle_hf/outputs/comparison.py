"""Two or more runs side by side, with paired differences (`twinkle-hf compare`, compare.py).

Two runs on the same questions are not independent samples: an easy question is easy for both.
So each run is compared with the first (the baseline) on the rows both scored, matched by
(dataset, id, order index) *and* the displayed order ``perm``, and the difference gets a
paired standard error clustered by question: d_i = y_i(other) - y_i(base), where y_i is the mean
correctness over the shared permutations of question i; diff = mean_i d_i and
stderr = sd_i(d_i, ddof=1) / sqrt(n). That is usually far smaller than the two runs' own error bars.
The tests and verdicts on those pairs (per metric, dataset and subject) are verdicts.py's.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TwinkleError
from ..metrics.position import p_text
from ..metrics.uncertainty import Z95, clustered_stderr, question_means
from ..schema import Predictions, original_order, plural
from .records import read_predictions, read_results
from .verdicts import MIN_PAIRED, Scores, Verdict, build_verdicts, scores_of, verdicts_markdown

# (row label, metric key, scale, decimals): proportions are shown in %, rstd is already 100 x std.
TABLE_ROWS = (("accuracy % ± stderr", "accuracy", 100, 1), ("acc_original %", "acc_original", 100, 1),
              ("all_correct %", "all_correct", 100, 1), ("debiased_accuracy %", "debiased_accuracy", 100, 1),
              ("rstd", "rstd", 1, 2), ("ckld", "ckld", 1, 4), ("fluctuation %", "fluctuation", 100, 1),
              ("position bias: excess points (p)", "position_bias", 100, 1),
              ("choices-only accuracy %", "choices_only_accuracy", 100, 1),
              ("letter/text agreement %", "letter_text_agreement", 100, 1))
Question = tuple[str, str]  # (dataset, id)

@dataclass(frozen=True)
class RunSummary:
    """One run as the side-by-side table shows it; ``metrics`` is results.json's "metrics" block."""

    path: str
    label: str
    model: str
    metrics: dict
    n_questions: int

@dataclass(frozen=True)
class PairedDiff:
    """``other`` minus ``baseline`` on the questions both scored with the same orders."""

    metric: str
    baseline: str
    other: str
    n_questions: int
    diff: float
    stderr: float  # NaN with fewer than 2 questions
    ci95: tuple[float, float]

@dataclass(frozen=True)
class Comparison:
    """The runs (the baseline first), their paired differences and verdicts against it, and notes."""

    runs: list[RunSummary]
    diffs: list[PairedDiff]
    notes: list[str]
    verdicts: list[Verdict] = field(default_factory=list)
    scores: list[Scores] = field(default_factory=list)  # per (run, metric): what the flipped-questions table shows
    margin: float = 0.01
    adjust: str = "holm"
    texts: dict[Question, str] = field(default_factory=dict)  # question text where the runs logged prompts

@dataclass(frozen=True)
class _MatchedRows:
    """A run's rows keyed for matching: permuted rows by (dataset, id, seed), original-order rows
    by (dataset, id); values are (perm, correct, pick, gold), pick and gold as original option indices.
    ``cloze``: the same values per question for cloze acc and acc_norm (a question without a normalised
    pick has no acc_norm value)."""

    permuted: dict[tuple[str, str, int], tuple[tuple[int, ...], bool, int, int]]
    original: dict[Question, tuple[tuple[int, ...], bool, int, int]]
    settings: str  # permutation mode and base seed, for a note when two runs differ
    subjects: dict[Question, str] = field(default_factory=dict)
    texts: dict[Question, str] = field(default_factory=dict)
    cloze: dict[str, dict[Question, tuple]] = field(default_factory=dict)

def _load_run(run_dir: Path) -> tuple[dict[str, Any], _MatchedRows]:
    """results.json and the predictions of one run directory, checked to be one."""
    for name in ("results.json", "predictions.jsonl"):
        if not (run_dir / name).is_file():
            raise FileNotFoundError(f"{run_dir}: no {name}; compare expects twinkle_hf run directories "
                                    "(the --output-dir of an eval, holding results.json and predictions.jsonl)")

    doc = read_results(run_dir / "results.json")
    p = read_predictions(run_dir / "predictions.jsonl")
    cloze = p.cloze_rows
    cloze_scores = _cloze_scores(p.select(cloze)) if cloze.any() else {}
    if cloze.any() and not cloze.all():  # both formulations: the letters are the run's headline
        p = p.select(~cloze)
    keys = list(zip(p.dataset, p.id, p.order_index.tolist()))
    dup = len(keys) - len(set(keys))
    if dup:
        raise TwinkleError(f"{run_dir / 'predictions.jsonl'}: {dup} duplicate (dataset, id, seed) rows; "
                           "compare needs one row per question and permutation")
    values = [(tuple(perm), bool(c), int(pick), int(gold)) for perm, c, pick, gold in
              zip(p.perm, p.correct.tolist(), p.pred_original.tolist(), p.answer_original.tolist())]
    original_seed = original_order(p.order_index.tolist())
    texts = {} if p.prompt is None else {k[:2]: t for k, t in zip(keys, p.prompt) if k[2] in (0, original_seed)}
    rows = _MatchedRows(permuted={k: v for k, v in zip(keys, values) if k[2] >= 0},
                 original={k[:2]: v for k, v in zip(keys, values) if k[2] == original_seed},
                 settings="mode {mode}, base seed {base_seed}".format_map(
                     {"mode": "?", "base_seed": "?", **doc.get("seeds", {})}),
                 subjects={k[:2]: s for k, s in zip(keys, p.subject)}, texts=texts, cloze=cloze_scores)
    return doc, rows

def _cloze_scores(p: Predictions) -> dict[str, dict[Question, tuple]]:
    """Cloze rows (one per question, original order) as matched values of cloze acc and acc_norm."""
    out: dict[str, dict[Question, tuple]] = {"cloze_acc": {}, "cloze_acc_norm": {}}
    norm = p.cloze.pred_norm if p.cloze is not None else np.full(len(p), -1)
    for r, q in enumerate(zip(p.dataset, p.id)):
        gold = int(p.answer[r])
        out["cloze_acc"][q] = ((), bool(p.pred[r] == gold), int(p.pred[r]), gold)
        if norm[r] >= 0:
            out["cloze_acc_norm"][q] = ((), bool(norm[r] == gold), int(norm[r]), gold)
    return {k: v for k, v in out.items() if v}

def _default_labels(paths: Sequence[Path], docs: Sequence[dict[str, Any]]) -> list[str]:
    """The model's short name; the run directory's name is added where two runs share a model."""
    names = []
    for doc in docs:
        model = (doc.get("model") or {}).get("name_or_path") or doc.get("config", {}).get("model") or "run"
        names.append(Path(str(model).rstrip("/")).name.removesuffix(".gguf"))
    counts = Counter(names)
    labels = [f"{n} ({p.name})" if counts[n] > 1 else n for n, p in zip(names, paths)]
    seen: Counter[str] = Counter()
    for i, label in enumerate(labels):  # same model and same directory name in two places
        seen[label] += 1
        labels[i] = label if seen[label] == 1 else f"{label} #{seen[label]}"
    return labels

def _paired(metric: str, base: str, other: str, questions: list[Question], y_base: np.ndarray,
            y_other: np.ndarray, reduce: str = "mean") -> PairedDiff:
    """The clustered paired difference from matched rows: per question, the mean over its shared
    permutations (``reduce="all"``: 1 when all of them are right), then mean and sd over questions."""
    keys = np.array([f"{d}\x00{i}" for d, i in questions], dtype=object)
    per_q = [question_means(keys, y) for y in (y_base, y_other)]
    if reduce == "all":
        per_q = [(q == 1).astype(np.float64) for q in per_q]
    d = per_q[1] - per_q[0]
    n, diff = len(d), float(d.mean())
    stderr = clustered_stderr(d) if n > 1 else math.nan
    # from a handful of questions a normal interval is no interval (all differences equal: stderr 0,
    # a "certain" difference): none rather than a misleading one
    half = Z95 * stderr if n >= MIN_PAIRED else math.nan
    return PairedDiff(metric, base, other, n, diff, stderr, (diff - half, diff + half))

def _match(a: dict, b: dict) -> tuple[list, int]:
    """Keys in both with the same displayed order, and how many keys had a different order."""
    shared = [k for k in a if k in b]
    same = [k for k in shared if a[k][0] == b[k][0]]
    return same, len(shared) - len(same)

def _compare_pair(base: RunSummary, rb: _MatchedRows, other: RunSummary,
                  ro: _MatchedRows) -> tuple[list[PairedDiff], list[str], list[Scores]]:
    """accuracy, acc_original and all_correct of ``other`` minus ``base``, the per-question scores the
    verdicts test (accuracy, acc_original, cloze acc and acc_norm), and what to tell the reader."""
    b, o, notes = base.label, other.label, []
    subjects = {**ro.subjects, **rb.subjects}
    head = f"{o} vs {b}"
    if rb.settings != ro.settings:
        notes.append(f"{head}: different permutation settings ({rb.settings} vs {ro.settings}); "
                     "only rows shown in the same order are paired")
    q_base = {k[:2] for k in rb.permuted} | set(rb.original)
    q_other = {k[:2] for k in ro.permuted} | set(ro.original)
    permuted, bad_perm = _match(rb.permuted, ro.permuted)
    original, bad_orig = _match(rb.original, ro.original)
    if bad_perm + bad_orig:
        notes.append(f"{head}: {plural(bad_perm + bad_orig, 'row')} had the same order index but a different order "
                     "(different --seed or --shuffle-mode?); excluded")
    if not permuted and not original:
        notes.append(f"{head}: no rows in common (same question, order index and order); "
                     "no paired differences")
        return [], notes, []
    shared_q = q_base & q_other
    if shared_q != q_base or shared_q != q_other:
        notes.append(f"{head}: {plural(len(shared_q), 'shared question')} ({len(q_base)} in {b}, {len(q_other)} in "
                     f"{o}); paired differences use only those")
    diffs, scores = [], []
    if permuted:
        scores.append(scores_of("accuracy", o, permuted, rb.permuted, ro.permuted, subjects, single=False))
        questions = [k[:2] for k in permuted]
        y_b = np.array([rb.permuted[k][1] for k in permuted])
        y_o = np.array([ro.permuted[k][1] for k in permuted])
        diffs.append(_paired("accuracy", b, o, questions, y_b, y_o))
        if min(Counter(questions).values()) >= 2:
            diffs.append(_paired("all_correct", b, o, questions, y_b, y_o, reduce="all"))
        else:
            notes.append(f"{head}: all_correct not paired (needs at least 2 shared permutations per question)")
    else:
        notes.append(f"{head}: accuracy not paired (no permuted rows in common)")
    if original:
        scores.append(scores_of("acc_original", o, original, rb.original, ro.original, subjects, single=True))
        diffs.insert(1, _paired("acc_original", b, o, original, np.array([rb.original[k][1] for k in original]),
                                np.array([ro.original[k][1] for k in original])))
    elif rb.original or ro.original:
        notes.append(f"{head}: acc_original not paired (no original-order rows in common)")
    for metric in ("cloze_acc", "cloze_acc_norm"):
        mb, mo = rb.cloze.get(metric, {}), ro.cloze.get(metric, {})
        if shared := [q for q in mb if q in mo]:
            scores.append(scores_of(metric, o, shared, mb, mo, subjects, single=True))
        elif mb or mo:
            notes.append(f"{head}: {metric} not paired (no cloze rows in common)")
    return diffs, notes, scores

def compare_runs(run_dirs: Sequence[str | Path], labels: Sequence[str] | None = None, baseline: str | None = None,
                 margin: float = 0.01, adjust: str = "holm") -> Comparison:
    """Read the runs and pair each with the baseline (the first, or the run labelled ``baseline``, which
    then comes first); see the module docstring for the statistics and verdicts.py for the tests."""
    if len(run_dirs) < 2:
        raise TwinkleError(f"compare needs at least 2 run directories, got {len(run_dirs)}")
    paths = [Path(p) for p in run_dirs]
    loaded = [_load_run(p) for p in paths]
    docs = [doc for doc, _ in loaded]
    if labels is None:
        labels = _default_labels(paths, docs)
    elif len(labels) != len(paths) or len(set(labels)) != len(labels):
        raise TwinkleError(f"--labels needs {len(paths)} distinct names, one per run directory, got {list(labels)}")
    if baseline is not None:
        if baseline not in labels:
            raise TwinkleError(f"--baseline {baseline!r} names no run; the runs are labelled {', '.join(labels)}")
        first = list(labels).index(baseline)
        order = [first] + [i for i in range(len(paths)) if i != first]
        paths, labels, loaded = [paths[i] for i in order], [labels[i] for i in order], [loaded[i] for i in order]
    runs = []
    for path, label, (doc, rows) in zip(paths, labels, loaded):
        model = (doc.get("model") or {}).get("name_or_path") or doc.get("config", {}).get("model") or "?"
        n = len({k[:2] for k in rows.permuted} | set(rows.original))
        runs.append(RunSummary(str(path), str(label), str(model), doc.get("metrics", {}), n))
    diffs, notes, scores = [], [], []
    for run, (_, rows) in zip(runs[1:], loaded[1:]):
        pair_diffs, pair_notes, pair_scores = _compare_pair(runs[0], loaded[0][1], run, rows)
        diffs.extend(pair_diffs)
        notes.extend(pair_notes)
        scores.extend(pair_scores)
    try:
        verdicts = build_verdicts(runs[0].label, scores, margin, adjust)
    except ValueError as err:
        raise TwinkleError(f"compare: {err} (--margin is in percentage points, --adjust holm or bh)") from None
    texts = {q: t for _, rows in reversed(loaded) for q, t in rows.texts.items()}
    return Comparison(runs, diffs, notes, verdicts, scores, margin, adjust, texts)

def metric_cell(metrics: dict[str, Any], key: str, scale: float, decimals: int) -> str:
    """One table cell: a number, "mean ± stderr" for accuracy, or "n/a" where the metric does not
    apply (its reason is in the run's results.json)."""
    block = metrics.get(key) or {}
    value = block.get("value")
    if value is None:
        return "n/a"
    text = f"{scale * value:.{decimals}f}"
    if key == "position_bias":  # the letter chosen beyond its content, by how much, and how sure
        return f"{block['letter']} +{text} ({p_text(block['p_value'], block['n_permutations'], block['exceed'])})"
    if key == "accuracy" and block.get("stderr") is not None:
        text += f" ± {scale * block['stderr']:.{decimals}f}"
    return text

def _pp(value: float, sign: str = "") -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:{sign}.1f}"

def diff_cells(d: PairedDiff) -> list[str]:
    """metric, run, questions, diff, stderr and 95% CI of a paired difference (in percentage points)."""
    return [d.metric, d.other, str(d.n_questions), _pp(d.diff, "+"), _pp(d.stderr),
            f"[{_pp(d.ci95[0], '+')}, {_pp(d.ci95[1], '+')}]"]

def comparison_markdown(c: Comparison) -> str:
    """Side-by-side table (one column per run), the paired-difference table, then the notes."""
    lines = ["| metric | " + " | ".join(r.label for r in c.runs) + " |", "|---" * (len(c.runs) + 1) + "|",
             "| questions | " + " | ".join(str(r.n_questions) for r in c.runs) + " |"]
    lines += [f"| {name} | " + " | ".join(metric_cell(r.metrics, key, s, d) for r in c.runs) + " |"
              for name, key, s, d in TABLE_ROWS]
    lines += ["", (f"Paired differences (run − `{c.runs[0].label}`) on the questions and orders both scored, "
                   f"in percentage points; stderr clustered by question; no 95% interval from fewer than {MIN_PAIRED} "
                   f"questions."), ""]
    if c.diffs:
        lines += ["| metric | run | questions | diff | stderr | 95% CI |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(diff_cells(d)) + " |" for d in c.diffs]
    else:
        lines.append("(none: no run shares rows with the baseline)")
    if c.verdicts:
        lines += ["", *verdicts_markdown(c.verdicts, c.runs[0].label, c.margin, c.adjust)]
    lines += ["", "Runs:"] + [f"- `{r.label}`: {r.model} ({r.path})" for r in c.runs]
    if c.notes:
        lines += ["", "Notes:"] + [f"- {note}" for note in c.notes]
    return "\n".join(lines) + "\n"
