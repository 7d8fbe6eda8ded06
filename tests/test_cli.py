"""The CLI end to end on tiny random models: files, schema, exit codes, offline behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from twinkle_hf.cli import main

ROOT = Path(__file__).resolve().parents[1]
PREDICTION_KEYS = {"dataset", "id", "subject", "order", "seed", "perm", "answer", "pred", "correct", "probs",
                   "answer_original", "pred_original", "letter_mass"}


def run_script(*args: str, env: dict | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "eval.py"), *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=ROOT)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_shuffled_run_writes_the_contract(tiny_model_dir, mmlu_dir, tmp_path):
    out = tmp_path / "run"
    rc = main(["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--shuffle", "--seeds", "3",
               "--num-fewshot", "1", "--output-dir", str(out), "--quiet", "--log-prompts"])
    assert rc == 0
    records = read_jsonl(out / "predictions.jsonl")
    questions = {r["id"] for r in records}
    assert len(records) == len(questions) * (3 + 1)  # 3 permutations + the original order
    for r in records:
        assert set(r) >= PREDICTION_KEYS and "prompt" in r
        assert r["order"] == r["seed"]  # "seed" is the contract's name of the order index
        assert r["perm"][r["answer"]] == r["answer_original"]
        assert r["perm"][r["pred"]] == r["pred_original"]
        assert r["correct"] == (r["pred"] == r["answer"])
        assert abs(sum(r["probs"]) - 1) < 1e-4 and len(r["probs"]) == len(r["perm"])
        assert r["prompt"].endswith("Answer:")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    acc = results["metrics"]["accuracy"]
    assert {"value", "std", "per_order", "stderr"} <= set(acc) and len(acc["per_order"]) == 3
    # the output contract (docs/design.md) names accuracy.mean and accuracy.per_seed: kept as aliases
    assert acc["mean"] == acc["value"] and acc["per_seed"] == acc["per_order"]
    assert results["format_version"] == 2 and results["config"]["seeds"] == 3
    assert results["model"]["dtype"] == "float32" and results["model"]["device"] == "cpu"
    timing = results["timing"]
    assert timing["padded_tokens"] >= timing["computed_tokens"] > 0
    assert timing["computed_tokens"] < timing["tokens"] and timing["shared_prefixes"] > 0  # few-shot blocks shared
    assert set(results["datasets"]["mmlu"]["subjects"]) == {"anatomy", "astronomy"}
    assert "accuracy %" in (out / "report.md").read_text(encoding="utf-8")


def test_planted_bias_is_100_percent_unshuffled_and_one_over_k_cyclic(biased_model_dir, all_a_dir, tmp_path):
    for mode, expected in (("none", 1.0), ("cyclic", None)):
        out = tmp_path / mode
        args = ["--model", str(biased_model_dir), "--dataset", str(all_a_dir), "--output-dir", str(out), "--quiet"]
        assert main(args + (["--shuffle-mode", mode] if mode != "none" else [])) == 0
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        for subject, block in results["datasets"]["all_a"]["subjects"].items():
            k = {"three": 3, "four": 4, "five": 5}[subject]
            assert block["accuracy"]["value"] == pytest.approx(expected or 1 / k)
            assert block["letter_dist"]["A"]["pred"] == 1.0


def test_default_dataset_is_the_embedded_sample(tiny_model_dir, tmp_path):
    out = tmp_path / "default"
    assert main(["--model", str(tiny_model_dir), "--limit", "2", "--output-dir", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (name,) = results["datasets"]
    assert results["metrics"]["accuracy"]["n_questions"] == 2 * len(results["datasets"][name]["subjects"])


def test_bad_row_exits_2_with_one_line_naming_file_and_row(tiny_model_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("question,A,B,C,D,answer\nQ1,a,b,c,d,A\nQ2,a,b,c,d,F\n", encoding="utf-8")
    proc = run_script("--model", str(tiny_model_dir), "--dataset", str(bad), "--output-dir", str(tmp_path / "o"))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("twinkle-hf: error:")]
    assert len(error) == 1 and "bad.csv" in error[0] and "answer" in error[0]


def test_offline_uncached_hub_id_fails_fast_with_one_line(tmp_path):
    proc = run_script("--model", "nobody-here/no-such-model", "--offline", "--dataset", str(tmp_path / "x.csv"),
                      env={"HF_HOME": str(tmp_path / "hf")}, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (tmp_path / "x.csv").write_text("question,A,B,answer\nq,a,b,A\n", encoding="utf-8")
    proc = run_script("--model", "nobody-here/no-such-model", "--offline", "--dataset", str(tmp_path / "x.csv"),
                      env={"HF_HOME": str(tmp_path / "hf")}, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "not in the local Hugging Face cache" in proc.stderr


def test_usage_errors_exit_2(tmp_path):
    assert run_script("--seeds", "x").returncode == 2
    proc = run_script("--model", str(tmp_path / "missing-dir"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_help_lists_every_subcommand(capsys):
    """`twinkle-hf --help` is the eval parser's help: it must still name report, compare and any later command."""
    from twinkle_hf.cli import COMMANDS

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--model" in text  # the eval flags are still there
    for command in COMMANDS:
        assert f"\n  {command} " in text, command
    for command in ("report", "compare"):  # each command's own help works
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0 and f"twinkle-hf {command}" in capsys.readouterr().out
