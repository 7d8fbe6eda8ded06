"""What a newcomer trips on first, each answered in one line that says what to do: a .gguf without
the gguf package, a GGUF download folder passed whole, a wrong flag value named as typed, a near
benchmark name, the benchmark list in a terminal, and the dry run's time estimate."""

from __future__ import annotations

import json

import pytest
from helpers import cli_error

import twinkle_hf.models.locate
from twinkle_hf.cli import main
from twinkle_hf.data.registry import BENCHMARKS
from twinkle_hf.dry_run import Estimate, describe_estimate, estimate_speed, measured_runs, record_rate
from twinkle_hf.outputs.benchmark_list import _lm_eval, benchmarks_overview, benchmarks_table
from twinkle_hf.settings.config import EvalConfig


def gguf_file(folder, name="model.Q4_1.gguf"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"GGUF" + bytes(60))  # the magic bytes: refused before anything reads further
    return path


def test_a_gguf_without_the_gguf_package_says_which_extra_to_install(tmp_path, all_a_dir, capsys, monkeypatch):
    monkeypatch.setattr(twinkle_hf.models.locate, "has_gguf_package", lambda: False)
    model = gguf_file(tmp_path / "m")
    line = cli_error(capsys, ["--model", str(model), "--dataset", str(all_a_dir), "--device", "cpu", "--quiet"])
    assert 'pip install -e ".[gguf]"' in line and str(model) in line and "torch" not in line


def test_a_folder_holding_only_a_gguf_names_the_file_to_pass(tmp_path, all_a_dir, capsys):
    model = gguf_file(tmp_path / "download")
    line = cli_error(capsys, ["--model", str(tmp_path / "download"), "--dataset", str(all_a_dir), "--quiet"])
    assert f"--model {model}" in line and "no tokenizer files" not in line
    gguf_file(tmp_path / "download", "model.Q8_0.gguf")  # several: the first, and the others named
    line = cli_error(capsys, ["--model", str(tmp_path / "download"), "--dataset", str(all_a_dir), "--quiet"])
    assert "model.Q4_1.gguf" in line and "model.Q8_0.gguf" in line


def test_a_bad_value_is_named_as_the_user_wrote_it(tmp_path, capsys):
    line = cli_error(capsys, ["--model", "m", "--num-fewshot", "-1"])
    assert "--num-fewshot must be an integer >= 0; got -1" in line and "num_fewshot" not in line
    assert "--seeds must be" in cli_error(capsys, ["--model", "m", "--seeds=0"])
    config = tmp_path / "run.yaml"
    config.write_text("num_fewshot: -1\n", encoding="utf-8")
    line = cli_error(capsys, ["--model", "m", "--config", str(config)])
    assert f"num_fewshot (in {config}) must be an integer >= 0" in line
    line = cli_error(capsys, ["--model", "m", "--config", str(config), "--num-fewshot", "-2"])
    assert "--num-fewshot must be an integer >= 0; got -2" in line  # the flag wins over the file


@pytest.mark.parametrize("typed", ["formosabench", "formosa_bnch", "mmlupro-x"])
def test_a_near_benchmark_name_is_suggested_once(capsys, typed):
    line = cli_error(capsys, ["--model", "m", "--benchmark", typed])
    near = line.split("did you mean ")[1].split("?")[0].split(", ")
    assert len(near) == len(set(near)) and all(name in BENCHMARKS for name in near), near


def test_the_benchmark_list_fits_a_terminal_and_the_markdown_keeps_every_column(capsys, monkeypatch):
    text = benchmarks_overview(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in BENCHMARKS:
        assert f"  {name}" in text
    assert "Knowledge (" in text and "Chinese and Taiwanese (" in text and "Suites (2)" in text  # by group
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)  # a terminal
    assert main(["benchmarks"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80
    assert main(["benchmarks", "--markdown"]) == 0
    assert capsys.readouterr().out == benchmarks_table() + "\n"
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)  # a pipe or a file: the full table
    assert main(["benchmarks"]) == 0
    assert capsys.readouterr().out == benchmarks_table() + "\n"
    for b in BENCHMARKS.values():  # the ARC cell said its cloze task twice
        cell = _lm_eval(b)
        for task in {b.cloze_task, b.lm_eval_task} - {""}:
            assert cell.count(task) == 1, cell


def test_the_time_estimate_weighs_runs_by_their_tokens():
    """The issue's case: a 10-question run at 85 tokens/s, a 120-question one at 118."""
    runs = [{"tokens": 1_700, "seconds": 20.0}, {"tokens": 23_600, "seconds": 200.0}]
    est = estimate_speed(runs)
    assert est.seconds_per_token == pytest.approx(220.0 / 25_300)  # Σ seconds / Σ tokens
    per_token = [20.0 / 1_700, 200.0 / 23_600]
    mean = (1_700 * per_token[0] + 23_600 * per_token[1]) / 25_300
    spread = ((1_700 * (per_token[0] - mean) ** 2 + 23_600 * (per_token[1] - mean) ** 2) / 25_300) ** 0.5
    assert est.spread == pytest.approx(spread) and est.runs == 2 and est.tokens == 25_300
    line = describe_estimate(est, run=50_000, new=0)
    assert "token-weighted mean of 2 earlier runs" in line and "±" in line and " to " in line
    one = describe_estimate(estimate_speed(runs[:1]), run=50_000, new=0)
    assert "85 tokens/s" in one and "uncertainty is unknown" in one
    assert estimate_speed([]) is None and "No time estimate" in describe_estimate(None, 10, 0)
    assert describe_estimate(Estimate(0.01, 0.0, 3, 900), 100, 10).startswith("Estimated time: 1 s plus up to 0 s")


def test_every_finished_run_joins_the_history(tmp_path, monkeypatch):
    monkeypatch.setenv("TWINKLE_HF_CACHE", str(tmp_path))
    cfg = EvalConfig(model="some/model")
    (tmp_path / "rates.json").write_text(json.dumps({  # a file of the first format: the last run only
        "some/model|auto|auto|logit": {"tokens_per_second": 85.0, "tokens": 1_700}}), encoding="utf-8")
    assert measured_runs(cfg) == [{"tokens": 1_700, "seconds": pytest.approx(20.0)}]
    for seconds in (200.0, 100.0):
        record_rate(cfg, {"computed_tokens": 23_000, "generated_tokens": 600, "seconds": seconds})
    assert [r["seconds"] for r in measured_runs(cfg)] == [pytest.approx(20.0), 200.0, 100.0]
    for _ in range(30):
        record_rate(cfg, {"computed_tokens": 10, "seconds": 1.0})
    assert len(measured_runs(cfg)) == 20  # the most recent runs only
