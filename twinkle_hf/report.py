"""Files and console text from an EvalResult. Called on the main process only."""

from __future__ import annotations

import dataclasses
import json
import platform
from pathlib import Path
from typing import Any, Iterator

from .evaluate import EvalResult
from .schema import LETTERS

FORMAT_VERSION = 1


def library_versions() -> dict[str, str]:
    """Versions of what produced the numbers."""
    import accelerate
    import datasets
    import numpy
    import torch
    import transformers

    from . import __version__

    return {"twinkle_hf": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "accelerate": accelerate.__version__, "datasets": datasets.__version__,
            "numpy": numpy.__version__, "python": platform.python_version()}


def prediction_records(result: EvalResult) -> Iterator[dict[str, Any]]:
    """One JSON-ready dict per (question, permutation): the predictions.jsonl contract."""
    p = result.predictions
    answer_original, pred_original = p.answer_original, p.pred_original
    for r in range(len(p)):
        record = {
            "dataset": p.dataset[r], "id": p.id[r], "subject": p.subject[r], "seed": int(p.perm_index[r]),
            "perm": list(p.perm[r]), "answer": int(p.answer[r]), "pred": int(p.pred[r]),
            "correct": bool(p.answer[r] == p.pred[r]), "probs": [round(float(x), 6) for x in p.probs[r]],
            "answer_original": int(answer_original[r]), "pred_original": int(pred_original[r]),
            "letter_mass": round(float(p.letter_mass[r]), 6),
        }
        if p.prompt is not None:
            record["prompt"] = p.prompt[r]
        yield record


def results_document(result: EvalResult) -> dict[str, Any]:
    """The results.json contract."""
    cfg = result.config
    return {
        "format_version": FORMAT_VERSION,
        "config": cfg.to_dict(),
        "seeds": {"base_seed": cfg.seed, "mode": cfg.permutation_mode,
                  "permutations_per_question": {"none": "1", "random": str(cfg.seeds), "cyclic": "k (one per option)",
                                                "all": "k! (every order)"}[cfg.permutation_mode],
                  "original_order_scored": cfg.permutation_mode != "none" and cfg.score_original},
        "model": dataclasses.asdict(result.model) if result.model else None,
        "versions": library_versions(),
        "timing": result.timing,
        "skipped_rows": result.skipped,
        "metrics": result.metrics["overall"],
        "datasets": result.metrics["datasets"],
    }


def write_outputs(result: EvalResult, output_dir: str | Path) -> Path:
    """Write predictions.jsonl, results.json and report.md into ``output_dir``."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for record in prediction_records(result):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    doc = results_document(result)
    (out / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.md").write_text(summary_markdown(doc), encoding="utf-8")
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _acc(metrics: dict[str, Any]) -> str:
    acc = metrics["accuracy"]
    if acc.get("mean") is None:
        return "-"
    return f"{_pct(acc['mean'])} ± {_pct(acc['stderr'])}"


def _letters(metrics: dict[str, Any]) -> str:
    dist = metrics["letter_dist"]
    return " ".join(f"{k}:{_pct(v['pred'])}/{_pct(v['gold'])}" for k, v in dist.items() if k in LETTERS[:10])


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """A small markdown table: one row per dataset and subject, plus the overall row."""
    lines = ["| dataset / subject | questions | accuracy % ± stderr | std over seeds | acc_original % | "
             "pred/gold % per letter |", "|---|---|---|---|---|---|"]

    def row(name: str, m: dict[str, Any]) -> str:
        acc = m["accuracy"]
        orig = m["acc_original"]["mean"] if m["acc_original"] else None
        std = _pct(acc.get("std")) if acc.get("n_permutations", 0) > 1 else "-"
        return f"| {name} | {acc.get('n_questions', 0)} | {_acc(m)} | {std} | {_pct(orig)} | {_letters(m)} |"

    for name, block in doc["datasets"].items():
        lines.append(row(f"**{name}**", block["metrics"]))
        lines.extend(row(f"  {s}", m) for s, m in block["subjects"].items())
    lines.append(row("**overall**", doc["metrics"]))
    return lines


def summary_markdown(doc: dict[str, Any]) -> str:
    """report.md: what ran, and the table."""
    cfg, model, timing = doc["config"], doc["model"] or {}, doc["timing"]
    head = [
        f"# twinkle_hf report: {model.get('name_or_path', cfg['model'])}", "",
        f"- permutations: {doc['seeds']['mode']} (base seed {cfg['seed']}, "
        f"{doc['seeds']['permutations_per_question']} per question"
        f"{', plus the original order' if doc['seeds']['original_order_scored'] else ''})",
        f"- few-shot: {cfg['num_fewshot']}; dtype {model.get('dtype', '?')} on {model.get('device', '?')}",
        f"- {timing['questions']} questions, {timing['prompts']} prompts in {timing['seconds']:.1f} s "
        f"({timing['questions_per_second'] or 0:.2f} questions/s)",
        "",
        "Accuracy is the mean over questions of each question's accuracy across its permutations; its error "
        "bar is the standard error clustered by question. `std over seeds` is the spread of per-seed "
        "accuracies, not an error bar.", "",
    ]
    return "\n".join(head + summary_lines(doc)) + "\n"
