"""Twinkle Eval's result files (its v2.8.0 layout), computed from the same predictions as results.json.

Written into ``<output-dir>/results/`` when ``twinkle_results`` is on (the default for a Twinkle
Eval config), so that scripts which read Twinkle Eval's files keep working:

- ``results_<YYYYMMDD_HHMM>.json``: ``{timestamp, config, dataset_results, duration_seconds}``;
  ``dataset_results[<dataset path>]`` holds one entry per *file* (Twinkle scores every file as its
  own unit) and the dataset's averages over its files;
- ``eval_results_<YYYYMMDD_HHMM>_run<N>.jsonl``: one line per question (and sample) of run N.

A Twinkle "run" is one option order here: run N is order index N (``--seeds`` random orders, the k
cyclic ones, or the one original order without shuffling). The original order that a shuffled run
also scores (for ``acc_original``) is no Twinkle run and is left out, as it is from the shuffled
metrics. ``config`` is written in Twinkle's shape from the EvalConfig, so it can hold no API key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..data.load import LoadedDataset
from ..metrics.sampling import pass_at_k
from ..metrics.twinkle_extract import twinkle_letter, twinkle_patterns
from ..prompts.twinkle_style import twinkle_question
from ..schema import LETTERS, Predictions
from ..settings.config import EvalConfig
from .result import EvalResult

FOLDER = "results"
METHOD_NAMES = {"logit": "logit", "box": "box", "pattern": "pattern", "regex": "custom_regex"}


def twinkle_config(cfg: EvalConfig, sources: Sequence[str], runs: int) -> dict[str, Any]:
    """The run's settings in the sections of a Twinkle Eval config, plus twinkle_hf's own."""
    evaluation: dict[str, Any] = {
        "dataset_paths": list(sources), "evaluation_method": METHOD_NAMES[cfg.method],
        "shuffle_options": cfg.shuffle, "repeat_runs": runs, "samples_per_question": cfg.samples,
        "pass_k": cfg.pass_k, "system_prompt": cfg.system_prompt,
        "strategy_config": {"patterns": [cfg.answer_regex] if isinstance(cfg.answer_regex, str)
                            else list(cfg.answer_regex)} if cfg.answer_regex else {},
    }
    model = {"name": cfg.model, "temperature": cfg.temperature, "top_p": cfg.top_p, "max_tokens": cfg.max_new_tokens}
    return {"model": model, "evaluation": evaluation, "twinkle_hf": cfg.to_dict()}


def _question_text(question: str, choices: Sequence[str], perm: Sequence[int], style: str) -> str:
    """The question with its options in the order this run showed them: as Twinkle Eval sent it
    (``prompt_style`` twinkle), else as the lm-eval prompt showed it."""
    shown = [choices[o] for o in perm]
    if style == "twinkle":
        return twinkle_question(question, shown)
    return "\n".join([question.strip()] + [f"{LETTERS[j]}. {text}" for j, text in enumerate(shown)])


def _letter(index: int) -> str | None:
    return LETTERS[index] if index >= 0 else None


def answer_letters(cfg: EvalConfig, p: Predictions) -> list[str | None]:
    """Each row's answer as Twinkle's files hold it: the letter of ``pred``, or under ``--extractor
    twinkle`` the letter Twinkle Eval reads, even one no option has (its "T" from "The answer is")."""
    if cfg.extractor == "twinkle" and p.generation is not None:
        patterns = twinkle_patterns(cfg.method, cfg.answer_regex)
        return [twinkle_letter(text, patterns) for text in p.generation.output]
    return [_letter(int(x)) for x in p.pred]


def run_rows(p: Predictions, rows: Sequence[int], questions: dict[tuple[str, str], tuple[str, Sequence[str]]],
             positions: dict[tuple[str, str], int], letters: Sequence[str | None],
             style: str = "lm-eval") -> list[dict[str, Any]]:
    """The lines of one run's ``eval_results_*.jsonl``: one per question (and sample)."""
    out = []
    written, scored = p.generation, p.letters
    for r in rows:
        key = (p.dataset[r], p.id[r])
        question, choices = questions[key]
        prompt = int(p.prompt_tokens[r]) if p.prompt_tokens is not None else None
        completion = int(written.new_tokens[r]) if written is not None else 0
        line: dict[str, Any] = {
            "question_id": int(p.row[r]) if p.row is not None else positions[key],
            "sample_id": int(p.samples[r]),
            "question": _question_text(question, choices, p.perm[r], style),
            "correct_answer": _letter(int(p.answer[r])),
            "llm_output": written.output[r] if written is not None else letters[r],
            "llm_reasoning_output": (written.reasoning[r] or None) if written is not None else None,
            "predicted_answer": letters[r],
            "is_correct": letters[r] == _letter(int(p.answer[r])),
            "usage_completion_tokens": completion,
            "usage_prompt_tokens": prompt,
            "usage_total_tokens": None if prompt is None else prompt + completion,
        }
        if written is None:  # full-vocabulary log-probability of each option's label
            line["logprob_scores"] = {} if scored is None else {
                LETTERS[j]: math.log(max(float(q) * float(scored.letter_mass[r]), 1e-300))
                for j, q in enumerate(scored.probs[r])}
        out.append(line)
    return out


def _pass_at(p: Predictions, rows: np.ndarray, k: int) -> float:
    """Twinkle's pass@k of one run: per question, k of its samples hold a right answer."""
    per_question: dict[str, list[bool]] = {}
    for r in rows:
        per_question.setdefault(p.id[r], []).append(bool(p.pred[r] == p.answer[r]))
    return float(np.mean([pass_at_k(len(c), sum(c), min(k, len(c))) for c in per_question.values()]))


def file_entry(p: Predictions, rows: np.ndarray, file: str, run_files: dict[int, str], k: int,
               unread: np.ndarray | None = None) -> dict[str, Any]:
    """One file's entry in ``dataset_results[...]['results']``: its runs and their mean/std
    (``unread``: the rows with no answer, when not those whose ``pred`` is -1)."""
    unread = p.pred < 0 if unread is None else unread
    orders = sorted(set(p.order_index[rows].tolist()))
    by_run = [rows[p.order_index[rows] == o] for o in orders]
    accuracies = [float(np.mean(p.pred[r] == p.answer[r])) for r in by_run]
    passes = [_pass_at(p, r, k) for r in by_run]
    unparsed = [int(np.sum(unread[r])) for r in by_run]
    return {
        "file": file, "accuracy_mean": float(np.mean(accuracies)), "accuracy_std": float(np.std(accuracies)),
        "pass_at_k_mean": float(np.mean(passes)), "pass_metric": f"pass@{k}",
        "unparsed_count": sum(unparsed), "unparsed_rate": sum(unparsed) / len(rows),
        "individual_runs": {"accuracies": accuracies, "pass_at_k": passes, "unparsed_counts": unparsed,
                            "results": [run_files[o] for o in orders]},
    }


def dataset_entry(files: list[dict[str, Any]], k: int, method: str) -> dict[str, Any]:
    """A dataset's block: its files, and the mean over files (Twinkle's dataset score)."""
    mean = lambda key: float(np.mean([f[key] for f in files]))
    return {"results": files, "average_accuracy": mean("accuracy_mean"), "average_std": mean("accuracy_std"),
            "average_pass_at_k": mean("pass_at_k_mean"), "pass_metric": f"pass@{k}",
            "total_unparsed_count": sum(f["unparsed_count"] for f in files),
            "average_unparsed_rate": mean("unparsed_rate"), "evaluation_method": method}


def twinkle_documents(result: EvalResult, data: Sequence[LoadedDataset],
                      stamp: str) -> tuple[dict[str, Any], dict[int, list[dict[str, Any]]]]:
    """The results document and, per run, its lines; from ``result``'s predictions alone (plus the
    question texts of ``data``)."""
    cfg, p = result.config, result.predictions
    twinkle = cfg.prompt_style == "twinkle"  # the texts Twinkle Eval shows (pandas-typed cells), if they differ
    questions = {(d.name, i): d.shown.get(i, (q, c)) if twinkle else (q, c) for d in data
                 for i, q, c in zip(d.rows["id"], d.rows["question"], d.rows["choices"])}
    positions = {(d.name, i): n for d in data for n, i in enumerate(d.rows["id"])}
    kept = p.order_index >= 0
    letters = answer_letters(cfg, p)
    unread = np.array([x is None for x in letters], dtype=bool)
    orders = sorted(set(p.order_index[kept].tolist()))
    run_files = {o: run_file(stamp, o) for o in orders}
    files = np.array(p.file if p.file is not None else p.subject, dtype=object)  # no file known: a subject is a unit
    dataset = np.array(p.dataset, dtype=object)
    results = {}
    sources = {d.name: d.source for d in data}
    for name in dict.fromkeys(dataset[kept]):
        source = sources.get(name, name)
        local = cfg.for_dataset(source)  # its dataset_overrides, if any
        mine = kept & (dataset == name)
        entries = [file_entry(p, np.flatnonzero(mine & (files == f)), f, run_files, local.pass_k, unread)
                   for f in dict.fromkeys(files[mine])]
        results[source] = dataset_entry(entries, local.pass_k, METHOD_NAMES[local.method])
    doc = {"timestamp": stamp, "config": twinkle_config(cfg, [d.source for d in data], len(orders)),
           "dataset_results": results, "duration_seconds": result.timing.get("seconds")}
    runs = {o: run_rows(p, np.flatnonzero(p.order_index == o).tolist(), questions, positions, letters,
                        cfg.prompt_style) for o in orders}
    return doc, runs


def run_file(stamp: str, order: int) -> str:
    """The name of run ``order``'s eval_results file."""
    return f"eval_results_{stamp}_run{order}.jsonl"


def write_twinkle_results(result: EvalResult, data: Sequence[LoadedDataset], output_dir: str | Path,
                          when: datetime | None = None) -> list[Path]:
    """Write Twinkle Eval's files into ``output_dir/results/``; returns their paths."""
    stamp = (when or datetime.now()).strftime("%Y%m%d_%H%M")
    doc, runs = twinkle_documents(result, data, stamp)
    folder = Path(output_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"results_{stamp}.json"]
    written[0].write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for order, lines in runs.items():
        path = folder / run_file(stamp, order)
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        written.append(path)
    return written
