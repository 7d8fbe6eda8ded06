"""compare's verdicts on two real runs (slow): the real SmolLM2-135M-Instruct (shared/models, GGUF) and a
copy with some weights perturbed, on a few real MMLU questions; PATH.json against an independent
recomputation from the runs' predictions.jsonl (paired_check.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from helpers import MMLU_DIR, SMOLLM_GGUF, real_model_marks, save_model_dir
from paired_check import check_against_predictions

from twinkle_hf.cli import main
from twinkle_hf.compare import main_compare

pytestmark = real_model_marks()
SUBJECTS = ("anatomy", "high_school_geography")
QUESTIONS = 6  # per subject: 12 questions in all, 5 orders each (4 cyclic + the original)


def perturbed_copy(folder: Path) -> Path:
    """SmolLM2 with seeded noise (half the weights' own spread) added to the MLPs of its last 4 layers."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(SMOLLM_GGUF.parent, gguf_file=SMOLLM_GGUF.name)
    model = AutoModelForCausalLM.from_pretrained(SMOLLM_GGUF.parent, gguf_file=SMOLLM_GGUF.name)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for layer in model.model.layers[-4:]:
            for w in (layer.mlp.up_proj.weight, layer.mlp.down_proj.weight):
                w.add_(0.5 * w.std() * torch.randn(w.shape, generator=generator))
    model.hf_quantizer = None  # dequantized on load: plain float32 weights, which save as such
    del model.config.quantization_config
    return save_model_dir(folder, tokenizer, model)


def test_smollm2_against_a_perturbed_copy_matches_an_independent_recomputation(tmp_path: Path):
    data = tmp_path / "mmlu"
    for subject in SUBJECTS:
        for split in ("test", "dev"):
            (data / split).mkdir(parents=True, exist_ok=True)
            shutil.copy(MMLU_DIR / split / f"{subject}_{split}.csv", data / split)
    runs = [tmp_path / "base", tmp_path / "perturbed"]
    for model, out in zip((SMOLLM_GGUF, perturbed_copy(tmp_path / "model")), runs):
        assert main(["--model", str(model), "--dataset", str(data), "--shuffle-mode", "cyclic", "--limit",
                     str(QUESTIONS), "--device", "cpu", "--output-dir", str(out), "--quiet", "--offline"]) == 0
    out = tmp_path / "cmp.md"
    assert main_compare([*map(str, runs), "--margin", "2", "--output", str(out)]) == 0
    got = check_against_predictions(runs, out, 0.02)
    assert {r["dataset"] for r in got} == {"overall", *(f"mmlu/{s}" for s in SUBJECTS)}
    assert {r["metric"] for r in got} == {"accuracy", "acc_original"}
    overall = [r for r in got if r["dataset"] == "overall"]
    assert all(r["n_questions"] == 2 * QUESTIONS for r in overall)
    # the noise changes some answers: the test is not comparing two empty lists
    assert sum(r["flips"]["right_to_wrong"] + r["flips"]["wrong_to_right"] for r in overall) > 0
