"""End to end on the real SmolLM2-135M-Instruct (shared/models, GGUF) and real MMLU files (slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import MMLU_DIR, SMOLLM_GGUF, real_model_marks

from twinkle_hf.cli import main

pytestmark = real_model_marks()
SUBJECTS = ("anatomy", "high_school_geography")


@pytest.fixture(scope="module")
def two_subjects(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mmlu2") / "mmlu"
    for subject in SUBJECTS:
        for split in ("test", "dev"):
            (root / split).mkdir(parents=True, exist_ok=True)
            shutil.copy(MMLU_DIR / split / f"{subject}_{split}.csv", root / split)
    return root


def test_cli_on_smollm2_cyclic_shows_the_a_bias(two_subjects, tmp_path):
    out = tmp_path / "run"
    rc = main(["--model", str(SMOLLM_GGUF), "--dataset", str(two_subjects), "--shuffle-mode", "cyclic",
               "--limit", "25", "--output-dir", str(out), "--quiet", "--offline"])
    assert rc == 0
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 * 25 * (4 + 1)  # 4 rotations + the original order
    for r in records:
        assert r["perm"][r["answer"]] == r["answer_original"] and len(r["probs"]) == 4
        assert 0 < r["letter_mass"] <= 1
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(results["datasets"]["mmlu"]["subjects"]) == set(SUBJECTS)
    assert results["model"]["kind"] == "gguf" and len(results["model"]["fingerprint"]) == 64
    assert results["model"]["parameters"] > 100_000_000
    dist = results["metrics"]["letter_dist"]
    # cyclic: every letter is gold exactly a quarter of the time ...
    assert all(abs(v["gold"] - 0.25) < 1e-9 for v in dist.values())
    # ... and this small model answers "A" far more often than that (shared/README.md)
    assert dist["A"]["pred"] > 0.5
    assert results["metrics"]["accuracy"]["n_permutations"] == 4
