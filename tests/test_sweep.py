"""Checkpoint sweeps: step order, identical permutations, a trend table; PEFT adapters."""

from __future__ import annotations

import csv
import importlib.util
import json

import pytest
from helpers import make_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.sweep import checkpoint_step, expand_models, trend_markdown, trend_row


def test_checkpoint_step_and_order(tmp_path):
    for step in (10, 2, 9):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    ordered = expand_models(str(tmp_path / "checkpoint-*"))
    assert [checkpoint_step(m) for m in ordered] == [2, 9, 10]
    assert expand_models("a,b") == ["a", "b"] and expand_models("org/model") == ["org/model"]
    assert checkpoint_step("run/global_step_300") == 300 and checkpoint_step("final") is None


def test_sweep_uses_identical_permutations_and_writes_a_trend(tmp_path, tiny_tokenizer, all_a_dir):
    for step, seed in ((20, 1), (5, 2), (100, 3)):
        save_model_dir(tmp_path / "out" / f"checkpoint-{step}", tiny_tokenizer, make_model(tiny_tokenizer, seed=seed))
    results = tmp_path / "sweep"
    assert main(["--model", str(tmp_path / "out" / "checkpoint-*"), "--dataset", str(all_a_dir), "--shuffle",
                 "--seeds", "3", "--limit", "2", "--output-dir", str(results), "--quiet"]) == 0
    rows = list(csv.DictReader((results / "trend.csv").read_text(encoding="utf-8").splitlines()))
    assert [r["step"] for r in rows] == ["5", "20", "100"]
    assert "| checkpoint |" in (results / "trend.md").read_text(encoding="utf-8")
    assert "checkpoint-100: accuracy" in (results / "trend.html").read_text(encoding="utf-8")  # paired with step 5
    perms = {}
    for step in (5, 20, 100):
        lines = (results / f"checkpoint-{step}" / "predictions.jsonl").read_text().splitlines()
        perms[step] = [(r["id"], r["seed"], r["perm"]) for r in map(json.loads, lines)]
    assert perms[5] == perms[20] == perms[100]


@pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs `pip install peft`")
def test_peft_adapter_loads_its_base_model(tmp_path, tiny_tokenizer, tiny_model_dir, all_a_dir):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                                LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)  # a non-trivial adapter
    peft_model.save_pretrained(tmp_path / "adapter")
    merged_dir = save_model_dir(tmp_path / "merged", tiny_tokenizer, peft_model.merge_and_unload())
    args = ["--dataset", str(all_a_dir), "--shuffle", "--seeds", "2", "--limit", "2", "--quiet"]
    assert main(["--model", str(tmp_path / "adapter"), "--output-dir", str(tmp_path / "a"), *args]) == 0
    assert main(["--model", str(merged_dir), "--output-dir", str(tmp_path / "m"), *args]) == 0
    adapter = [json.loads(x) for x in (tmp_path / "a" / "predictions.jsonl").read_text().splitlines()]
    merged = [json.loads(x) for x in (tmp_path / "m" / "predictions.jsonl").read_text().splitlines()]
    assert [r["pred"] for r in adapter] == [r["pred"] for r in merged]
    info = json.loads((tmp_path / "a" / "results.json").read_text())["model"]
    assert info["kind"].startswith("peft adapter on")


def test_a_metric_that_does_not_apply_reads_n_a_in_the_trend_not_0():
    overall = {"accuracy": {"value": 0.5, "stderr": 0.1}, "rstd": {"value": None, "reason": "too few letters"}}
    row = trend_row("out/checkpoint-10", overall)
    assert "rstd" not in row and row["accuracy"] == 0.5
    line = trend_markdown([row]).splitlines()[2]
    assert "n/a" in line and "0.000" not in line
