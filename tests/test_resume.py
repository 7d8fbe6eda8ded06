"""A killed run, resumed, equals an uninterrupted one; a changed config is refused."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twinkle_hf.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def many_questions(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("many") / "many.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["question", "A", "B", "C", "D", "answer"])
        for i in range(150):
            writer.writerow([f"Question number {i} about whales?", f"a{i}", f"b{i}", f"c{i}", f"d{i}", "ABCD"[i % 4]])
    return path


def _args(model_dir: Path, data: Path, out: Path) -> list[str]:
    return ["--model", str(model_dir), "--dataset", str(data), "--shuffle", "--seeds", "4", "--batch-size", "1",
            "--no-share-prefix", "--output-dir", str(out), "--quiet", "--device", "cpu"]


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_killed_run_resumes_to_the_same_result(tiny_model_dir, many_questions, tmp_path):
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert main(_args(tiny_model_dir, many_questions, whole)) == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "scripts/eval.py", *_args(tiny_model_dir, many_questions, broken)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scores = broken / ".partial" / "scores.0.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if scores.is_file() and len(scores.read_bytes().splitlines()) >= 100:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    saved = len(scores.read_bytes().splitlines())
    assert 100 <= saved < 750 and not (broken / "results.json").exists()

    assert main(_args(tiny_model_dir, many_questions, broken)) == 2  # unfinished run, no --resume: refused
    assert main(_args(tiny_model_dir, many_questions, broken) + ["--resume"]) == 0
    resumed = json.loads((broken / "results.json").read_text(encoding="utf-8"))
    assert resumed["timing"]["resumed_rows"] >= saved - 1  # a torn last line is scored again
    a, b = _records(whole), _records(broken)
    assert len(a) == len(b) == 150 * 5
    assert [(r["id"], r["seed"], r["pred"]) for r in a] == [(r["id"], r["seed"], r["pred"]) for r in b]
    assert json.loads((whole / "results.json").read_text())["metrics"]["accuracy"] == resumed["metrics"]["accuracy"]
    assert not (broken / ".partial").exists()


def test_resume_names_the_settings_that_differ(tiny_model_dir, many_questions, tmp_path, capsys):
    out = tmp_path / "run"
    partial = out / ".partial"
    partial.mkdir(parents=True)
    (partial / "run.json").write_text(json.dumps({"seeds": 3}), encoding="utf-8")
    assert main(_args(tiny_model_dir, many_questions, out) + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "seeds: was 3, now 4" in err
    assert main(_args(tiny_model_dir, many_questions, tmp_path / "fresh") + ["--resume"]) == 2
    assert "holds no unfinished run" in capsys.readouterr().err
