"""--method cloze and --method logit+cloze as a user runs them: the CLI on a tiny model, the reports,
`twinkle-hf report`, --shuffle, resume after an interruption, and 2 processes against 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from twinkle_hf.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _args(model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--dataset", str(data), "--limit", "4", "--output-dir", str(out), "--quiet",
            "--device", "cpu", *extra]


def _lines(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_cloze_run_reports_lm_evals_accuracies_and_no_letter_metric(tiny_model_dir, mmlu_dir, tmp_path):
    out = tmp_path / "cloze"
    assert main(_args(tiny_model_dir, mmlu_dir, out, "--method", "cloze")) == 0
    doc, lines = _results(out), _lines(out)
    assert len(lines) == 8 and all(r["formulation"] == "cloze" and len(r["loglik"]) == 4 for r in lines)
    m = doc["metrics"]
    for name, pick in (("accuracy", "pred"), ("acc_norm", "pred_norm"), ("acc_bytes", "pred_bytes")):
        assert m[name]["value"] == sum(r[pick] == r["answer"] for r in lines) / 8, name
    assert m["rstd"]["value"] is None and "no letters" in m["rstd"]["reason"]
    assert doc["timing"]["prompts"] == 32 and doc["timing"]["resumed_rows"] == 0  # 8 questions x 4 options
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "acc_norm" in report and "acc_bytes" in report and "n/a" in report
    assert "acc_norm" in (out / "report.html").read_text(encoding="utf-8")
    before = doc["metrics"]
    assert main(["report", str(out)]) == 0  # rebuilt from the files alone
    assert _results(out)["metrics"]["acc_norm"] == before["acc_norm"]


def test_shuffle_changes_nothing_in_a_cloze_run(tiny_model_dir, mmlu_dir, tmp_path):
    assert main(_args(tiny_model_dir, mmlu_dir, tmp_path / "plain", "--method", "cloze")) == 0
    assert main(_args(tiny_model_dir, mmlu_dir, tmp_path / "shuffled", "--method", "cloze", "--shuffle")) == 0
    plain, shuffled = _lines(tmp_path / "plain"), _lines(tmp_path / "shuffled")
    assert [(r["id"], r["loglik"], r["pred"]) for r in plain] == [(r["id"], r["loglik"], r["pred"]) for r in shuffled]
    assert _results(tmp_path / "shuffled")["timing"]["prompts"] == 32  # no extra passes


def test_both_formulations_on_the_same_questions(tiny_model_dir, mmlu_dir, tmp_path, capsys):
    assert main(_args(tiny_model_dir, mmlu_dir, tmp_path / "cloze", "--method", "cloze")) == 0
    out = tmp_path / "both"
    assert main(_args(tiny_model_dir, mmlu_dir, out, "--method", "logit+cloze", "--shuffle-mode", "cyclic")) == 0
    lines = _lines(out)
    cloze = [r for r in lines if r["formulation"] == "cloze"]
    assert [(r["id"], r["pred"], r["pred_norm"]) for r in cloze] == [
        (r["id"], r["pred"], r["pred_norm"]) for r in _lines(tmp_path / "cloze")]
    assert len(lines) - len(cloze) == 8 * 5 and {r["formulation"] for r in lines} == {"logit", "cloze"}
    m = _results(out)["metrics"]
    assert m["formulations"]["gap"]["n_questions"] == 8 and m["formulations"]["sentence"]
    assert m["rstd"]["value"] is not None or "letter" in m["rstd"]["reason"]  # letter metrics of the letters
    for name in ("report.md", "report.html"):
        assert "MCF" in (out / name).read_text(encoding="utf-8")
    assert m["formulations"]["sentence"] in capsys.readouterr().out + (out / "report.md").read_text()
    # compare pairs the letter rows of a run of both (its headline), the cloze rows of a cloze run
    assert main(["compare", str(out), str(tmp_path / "cloze"), "--output", str(tmp_path / "cmp.md")]) == 0
    assert (tmp_path / "cmp.md").is_file()


@pytest.mark.parametrize("method", ["cloze", "logit+cloze"])
def test_an_interrupted_cloze_run_resumes_to_the_same_result(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch, method):
    import twinkle_hf.engine.scoring as scoring

    extra = ("--method", method, "--batch-size", "2", "--shuffle")
    assert main(_args(tiny_model_dir, mmlu_dir, tmp_path / "whole", *extra)) == 0
    real, calls = scoring._forward_last, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) > 6:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    broken = tmp_path / "broken"
    with monkeypatch.context() as patch:
        patch.setattr(scoring, "_forward_last", failing)
        assert main(_args(tiny_model_dir, mmlu_dir, broken, *extra)) == 130
    assert (broken / ".partial").is_dir()
    assert main(_args(tiny_model_dir, mmlu_dir, broken, *extra, "--resume")) == 0
    resumed = _results(broken)
    assert resumed["timing"]["resumed_rows"] > 0
    key = lambda r: (r["formulation"], r["id"], r["order"], r["pred"], r.get("pred_norm"))
    assert [key(r) for r in _lines(tmp_path / "whole")] == [key(r) for r in _lines(broken)]
    assert _results(tmp_path / "whole")["metrics"]["accuracy"] == resumed["metrics"]["accuracy"]


@pytest.mark.slow
def test_two_processes_score_cloze_as_one(tiny_model_dir, mmlu_dir, tmp_path):
    args = ["scripts/eval.py", "--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--method", "logit+cloze",
            "--batch-size", "3"]
    outs = {}
    for name, launcher in (("one", [sys.executable]), ("two", [sys.executable, "-m", "torch.distributed.run",
                                                                "--nproc_per_node", "2"])):
        out = tmp_path / name
        flags = ["--limit", "3", "--output-dir", str(out), "--quiet", "--device", "cpu"]
        proc = subprocess.run([*launcher, *args, *flags],
                              capture_output=True, text=True, cwd=ROOT, timeout=600,
                              env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs[name] = (_lines(out), _results(out))
    (one, doc1), (two, doc2) = outs["one"], outs["two"]
    key = lambda r: (r["formulation"], r["id"], r["order"], r["pred"], r.get("pred_norm"), r.get("pred_bytes"))
    assert [key(r) for r in one] == [key(r) for r in two]
    for a, b in zip(one, two):
        if "loglik" in a:
            assert a["loglik"] == pytest.approx(b["loglik"], abs=1e-5)
    assert doc1["metrics"]["formulations"]["gap"] == doc2["metrics"]["formulations"]["gap"]
