"""--probe choices-only through the command line: the question-less prompts, the probe's letter in
predictions.jsonl, its block per group in results.json, its line in the reports; bad input exits 2."""

from __future__ import annotations

import json

from twinkle_hf.cli import main
from twinkle_hf.formulations import plan


def test_choices_only_probe_end_to_end(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch):
    prepared = []
    real = plan.prepare_dataset
    monkeypatch.setattr(plan, "prepare_dataset", lambda *a, **k: prepared.append(real(*a, **k)) or prepared[-1])
    out = tmp_path / "run"
    assert main(["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--shuffle-mode", "cyclic",
                 "--num-fewshot", "1", "--probe", "choices-only", "--output-dir", str(out), "--quiet"]) == 0
    scored, probe = prepared
    assert probe.rows["order_index"][:] == scored.rows["order_index"][:]
    assert all("with a comma" in t for t in scored.texts) and not any("with a comma" in t for t in probe.texts)
    assert all(t.count("opt a") == 2 for t in probe.texts)  # the example's options and the question's stay
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert all(0 <= r["pred_choices_only"] < len(r["perm"]) for r in records)
    doc = json.loads((out / "results.json").read_text())
    for block in (doc["metrics"], doc["datasets"]["mmlu"]["subjects"]["anatomy"]):
        assert {"value", "stderr", "chance", "majority", "p_vs_chance"} <= set(block["choices_only_accuracy"])
    assert "Choices only: " in (out / "report.md").read_text() and "Choices only: " in (out / "report.html").read_text()


def test_probe_with_generation_mode_is_one_line_exit_2(tiny_model_dir, capsys):
    assert main(["--model", str(tiny_model_dir), "--method", "pattern", "--probe", "choices-only"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--method logit" in err[0]
