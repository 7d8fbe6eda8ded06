"""Shared fixtures: tiny models and datasets written to temporary folders (all offline)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from helpers import SHARED, make_model, make_tokenizer, save_model_dir


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory) -> None:
    """Runs record their speed for --dry-run in the user cache; tests use their own."""
    os.environ["TWINKLE_HF_CACHE"] = str(tmp_path_factory.mktemp("twinkle_cache"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"real assets not found: {SHARED} (set TWINKLE_HF_SHARED; see the README's Test section)")
    return SHARED


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    return save_model_dir(tmp_path_factory.mktemp("tiny") / "model", tiny_tokenizer, make_model(tiny_tokenizer))


@pytest.fixture(scope="session")
def biased_model_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A model that answers " A" after any prompt."""
    model = make_model(tiny_tokenizer, favour=" A")
    return save_model_dir(tmp_path_factory.mktemp("biased") / "model", tiny_tokenizer, model)


def _write_csv(path: Path, rows: list[list[str]], header: list[str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        if header:
            writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture(scope="session")
def mmlu_dir(tmp_path_factory) -> Path:
    """A small folder in original MMLU layout (no header, split folders), 2 subjects."""
    root = tmp_path_factory.mktemp("mmlu_root") / "mmlu"
    for subject in ("anatomy", "astronomy"):
        for split, n in (("test", 7), ("dev", 3)):
            rows = [[f"{subject} {split} question {i}, with a comma\nand a newline?", f"opt a{i}", "None",
                     f"opt c{i}", "NA", "ABCD"[i % 4]] for i in range(n)]
            _write_csv(root / split / f"{subject}_{split}.csv", rows)
    return root


@pytest.fixture(scope="session")
def all_a_dir(tmp_path_factory) -> Path:
    """Twinkle layout, gold always A; subjects with 3, 4 and 5 options."""
    root = tmp_path_factory.mktemp("all_a_root") / "all_a"
    for name, k in (("three", 3), ("four", 4), ("five", 5)):
        letters = "ABCDE"[:k]
        rows = [[f"{name} question {i}?"] + [f"{name} {i} option {x}" for x in letters] + ["A"] for i in range(6)]
        _write_csv(root / f"{name}_test.csv", rows, header=["question", *letters, "answer"])
    return root
