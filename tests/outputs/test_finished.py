"""A finished run is never overwritten: refused (kept byte for byte) unless --overwrite, which says
what it replaces; the default output folder is a new one for every run."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import cli_error
from twinkle_hf import TwinkleError, evaluate, write_outputs
from twinkle_hf.cli import main
from twinkle_hf.models.loading import load_model, load_tokenizer
from twinkle_hf.outputs import finished
from twinkle_hf.settings.config import EvalConfig


def hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: its sha256, and its mtime in ns (touched or not)."""
    return {str(p.relative_to(folder)): f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.stat().st_mtime_ns}"
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run(model: Path, data: Path, out: Path, *extra: str) -> int:
    return main(["--model", str(model), "--dataset", str(data), "--limit", "2", "--output-dir", str(out), "--quiet",
                 "--device", "cpu", *extra])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_model_dir, mmlu_dir) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    assert run(tiny_model_dir, mmlu_dir, out, "--twinkle-results") == 0
    assert (out / "results.json").is_file() and not (out / ".partial").exists()
    return out


def test_a_finished_run_is_refused_and_kept_byte_for_byte(finished_run, tiny_model_dir, all_a_dir, capsys):
    before = hashes(finished_run)
    assert "results.json" in before and "run.log" in before and any(k.startswith("results/") for k in before)
    for extra in ([], ["--resume"], ["--shuffle", "--seeds", "2"]):
        line = cli_error(capsys, ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--output-dir",
                                  str(finished_run), "--quiet", "--device", "cpu", *extra])
        assert str(finished_run) in line and "finished run" in line, line
        assert ("--overwrite" in line) and ("nothing to resume" in line) == bool(extra == ["--resume"]), line
        assert hashes(finished_run) == before


def test_overwrite_replaces_the_finished_run_and_says_so(tmp_path, tiny_model_dir, mmlu_dir, all_a_dir, capsys):
    out = tmp_path / "run"
    assert run(tiny_model_dir, mmlu_dir, out, "--twinkle-results") == 0
    (out / "mine.txt").write_text("kept", encoding="utf-8")  # not the run's: left alone
    old = json.loads((out / "results.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    assert run(tiny_model_dir, all_a_dir, out, "--overwrite") == 0
    told = [line for line in capsys.readouterr().err.splitlines() if "--overwrite" in line]
    assert len(told) == 1 and "replacing the finished run" in told[0] and "results.json" in told[0], told
    new = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert new["config"]["datasets"] == [str(all_a_dir)] != old["config"]["datasets"]
    assert not (out / "results").exists()  # the old run's Twinkle files went with it; this run wrote none
    assert (out / "mine.txt").read_text(encoding="utf-8") == "kept"
    log = (out / "run.log").read_text(encoding="utf-8")
    assert log.count("== ") == 1 and "replacing the finished run" in log  # the new run's log only


def test_resume_and_overwrite_contradict(tmp_path, tiny_model_dir, capsys):
    line = cli_error(capsys, ["--model", str(tiny_model_dir), "--output-dir", str(tmp_path / "x"), "--resume",
                              "--overwrite"])
    assert "--resume" in line and "--overwrite" in line and not (tmp_path / "x").exists()


def test_the_default_folder_is_new_for_every_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(finished, "timestamp", lambda: "20260101-000000")  # two runs in the same second
    from twinkle_hf.cli import default_output_dir

    claimed = [finished.claim_folder(default_output_dir("org/model")) for _ in range(3)]
    assert len(set(claimed)) == 3 and all(p.is_dir() for p in claimed)
    assert [p.name for p in claimed] == ["20260101-000000", "20260101-000000-2", "20260101-000000-3"]


def test_a_default_folder_run_that_fails_early_leaves_no_folder(tmp_path, tiny_model_dir, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cli_error(capsys, ["--model", str(tiny_model_dir), "--dataset", str(tmp_path / "missing.csv"), "--quiet"])
    assert not (tmp_path / "results").exists()


def test_two_default_runs_in_one_second_keep_both(tmp_path, tiny_model_dir, mmlu_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(finished, "timestamp", lambda: "20260101-000000")
    for _ in range(2):
        assert main(["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--limit", "1", "--quiet",
                     "--device", "cpu"]) == 0
    runs = sorted(p.parent for p in tmp_path.glob("results/*/*/results.json"))
    assert [p.name for p in runs] == ["20260101-000000", "20260101-000000-2"]


def test_write_outputs_refuses_a_finished_run_unless_overwrite(finished_run, tiny_model_dir, all_a_dir, tmp_path):
    cfg = EvalConfig(model=str(tiny_model_dir), limit=1, device="cpu", bootstrap=0)
    model, info = load_model(cfg)
    result = evaluate(model, load_tokenizer(cfg), str(all_a_dir), cfg, model_info=info, progress=False)
    before = hashes(finished_run)
    with pytest.raises(TwinkleError, match=r"finished run.*overwrite=True"):
        write_outputs(result, finished_run)
    assert hashes(finished_run) == before
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.json", "predictions.jsonl"):
        (copy / name).write_bytes((finished_run / name).read_bytes())
    write_outputs(result, copy, overwrite=True)
    assert json.loads((copy / "results.json").read_text(encoding="utf-8"))["config"]["limit"] == 1
    with pytest.raises(TwinkleError):
        write_outputs(result, copy)
    write_outputs(replace(result, config=replace(cfg, overwrite=True)), copy)  # the config's own setting
