"""A question is never shown as its own few-shot example when examples come from the evaluated rows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import make_model

from twinkle_hf.data.sources import load_datasets
from twinkle_hf.evaluation import evaluate
from twinkle_hf.settings.config import EvalConfig


def _questions_in(prompt: str, questions: list[str]) -> int:
    return sum(prompt.count(q) for q in questions)


def _run(tokenizer, dataset: Path, **settings):
    cfg = EvalConfig(model="unused", datasets=(str(dataset),), log_prompts=True, bootstrap=0, **settings)
    result = evaluate(make_model(tokenizer), tokenizer, load_datasets(cfg), cfg, progress=False)
    return result.predictions


def _test_questions(root: Path) -> dict[str, str]:
    """id-free: question text -> subject, for every test question of the mmlu_dir fixture."""
    out = {}
    for path in sorted((root / "test").glob("*.csv")):
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.reader(fh):
                out[row[0]] = path.stem
    return out


@pytest.mark.parametrize("settings", [
    {"fewshot_split": "test"},                                   # the pool is the evaluated split
    {"fewshot_split": "test", "shuffle": True, "shuffle_mode": "cyclic"},
    {"fewshot_split": "none"},                                   # no pool: the evaluated data
])
def test_a_question_is_never_its_own_example(tiny_tokenizer, mmlu_dir, settings):
    preds = _run(tiny_tokenizer, mmlu_dir, num_fewshot=3, **settings)
    questions = list(_test_questions(mmlu_dir))
    for prompt in preds.prompt:
        block, _, own = prompt.rpartition("\n\n")
        (mine,) = [q for q in questions if own.startswith(q)]
        assert mine not in block, "the question appears in its own few-shot block"
        assert _questions_in(block, questions) == 3  # still k examples, all other questions
