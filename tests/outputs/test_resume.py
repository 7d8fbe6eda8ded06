"""A killed run, resumed, equals an uninterrupted one; changed settings, weights or data are refused."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import make_model

from twinkle_hf.cli import main
from twinkle_hf.outputs.resume import RESUME_FORMAT

ROOT = Path(__file__).resolve().parents[2]


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
    (partial / "run.json").write_text(json.dumps({"seeds": 3, "resume_format": RESUME_FORMAT}), encoding="utf-8")
    assert main(_args(tiny_model_dir, many_questions, out) + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "seeds: was 3, now 4" in err
    assert main(_args(tiny_model_dir, many_questions, tmp_path / "fresh") + ["--resume"]) == 2
    assert "holds no unfinished run" in capsys.readouterr().err
    (partial / "run.json").write_bytes(b'{"seeds": 3')  # torn by a full disk
    assert main(_args(tiny_model_dir, many_questions, out) + ["--resume"]) == 2
    assert "run.json cannot be read" in capsys.readouterr().err


def _interrupt(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A run stopped right after it recorded its settings, as a kill before its first batch leaves it."""
    import twinkle_hf.evaluation

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(twinkle_hf.evaluation, "evaluate", stop)
        assert main(args) == 130
    assert (Path(args[args.index("--output-dir") + 1]) / ".partial" / "run.json").is_file()


def test_resume_refuses_retrained_weights_of_the_same_shapes(tiny_tokenizer, tiny_model_dir, many_questions,
                                                             tmp_path, monkeypatch, capsys):
    model_dir = shutil.copytree(tiny_model_dir, tmp_path / "model")
    args = _args(model_dir, many_questions, tmp_path / "run")
    _interrupt(args, monkeypatch)
    size = (model_dir / "model.safetensors").stat().st_size
    make_model(tiny_tokenizer, seed=1).save_pretrained(model_dir)  # "retrained": same names, shapes, sizes
    assert (model_dir / "model.safetensors").stat().st_size == size
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "1 setting(s) differ" in err and "model_fingerprint" in err, err


def test_resume_refuses_a_changed_answer_and_accepts_the_same_rows(tiny_model_dir, many_questions, tmp_path,
                                                                   monkeypatch, capsys):
    data = shutil.copy(many_questions, tmp_path / "many.csv")
    args = _args(tiny_model_dir, data, tmp_path / "run") + ["--limit", "3"]
    _interrupt(args, monkeypatch)
    original = data.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    assert lines[1].rstrip().endswith(",A")
    data.write_text("".join([lines[0], lines[1].rstrip()[:-1] + "B\n", *lines[2:]]), encoding="utf-8")
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "1 setting(s) differ" in err and "data_fingerprint" in err, err
    data.write_text(original, encoding="utf-8")  # the same rows again: accepted
    assert main(args + ["--resume"]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert len(results["data_fingerprint"]) == 64 and results["model"]["fingerprint"]


def _snapshot(cache: Path, repo: str, commit: str, model_dir: Path) -> None:
    """``repo`` at ``commit`` in a hub cache, as a download leaves it: refs/main -> snapshots/<commit>/."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, folder / "snapshots" / commit)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(commit, encoding="utf-8")


def test_resume_refuses_a_new_hub_revision(tiny_model_dir, many_questions, tmp_path, monkeypatch, capsys):
    """A hub model is identified by the commit it was loaded from: the same weights at a new commit
    on main are not resumed into the run of the old one."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # --offline sets it; monkeypatch restores it after the test
    _snapshot(tmp_path / "hub", "someone/tiny", "1" * 40, tiny_model_dir)
    args = ["--model", "someone/tiny", "--offline", "--dataset", str(many_questions), "--limit", "2",
            "--output-dir", str(tmp_path / "run"), "--quiet", "--device", "cpu"]
    _interrupt(args, monkeypatch)
    saved = json.loads((tmp_path / "run" / ".partial" / "run.json").read_text(encoding="utf-8"))
    assert saved["model_revision"] == "1" * 40
    _snapshot(tmp_path / "hub", "someone/tiny", "2" * 40, tiny_model_dir)
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert f"model_revision: was '{'1' * 40}', now '{'2' * 40}'" in err, err
