"""What the docs promise at the command line: --quiet shows no progress bar from any library, a
bad or contradictory flag is one line (exit 2), an honoured HF_HUB_OFFLINE is recorded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import cli_error
from twinkle_hf.cli import main

ROOT = Path(__file__).resolve().parents[1]


def eval_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "eval.py"), *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=cwd)


def test_quiet_shows_no_progress_bar_of_any_library(tiny_model_dir, all_a_dir, tmp_path):
    base = ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--limit", "1", "--device", "cpu"]
    loud = eval_script(*base, "--output-dir", str(tmp_path / "loud"), cwd=tmp_path)
    assert loud.returncode == 0 and "Loading weights" in loud.stderr and "it/s]" in loud.stderr, loud.stderr
    quiet = eval_script(*base, "--output-dir", str(tmp_path / "quiet"), "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    for bar in ("Loading weights", "it/s]", "prompt/s]", "%|"):
        assert bar not in quiet.stderr, quiet.stderr


def test_quiet_silences_the_gguf_bar_and_restores_every_library(capsys):
    import datasets
    import huggingface_hub.utils as hub
    import transformers.modeling_gguf_pytorch_utils as gguf
    import transformers.utils.logging as tf

    from twinkle_hf.engine.quiet import quiet_libraries

    # a known start: other code in this process (a script a test imported) may have turned a library's bars off
    tf.enable_progress_bar()
    datasets.enable_progress_bars()
    hub.enable_progress_bars()
    original = gguf.tqdm
    with quiet_libraries():
        assert not tf.is_progress_bar_enabled() and not datasets.is_progress_bar_enabled()
        assert hub.are_progress_bars_disabled()
        sink = io.StringIO()
        assert list(gguf.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...", file=sink)) == [0, 1, 2]
        assert sink.getvalue() == ""
    assert gguf.tqdm is original and tf.is_progress_bar_enabled() and datasets.is_progress_bar_enabled()
    assert not hub.are_progress_bars_disabled()
    sink = io.StringIO()
    list(gguf.tqdm(range(3), desc="de-quantizing", file=sink))
    assert "de-quantizing" in sink.getvalue()  # the same call shows its bar outside


@pytest.mark.parametrize(("argv", "words"), [
    (["--shuffle-mode", "cyclical"], ["--shuffle-mode", "'cyclical'", "'cyclic'", "'random'"]),
    (["--batch-size", "0"], ["--batch-size", "positive integer", "'0'"]),
    (["--dtype", "fp16"], ["--dtype", "'bfloat16'"]),
    (["--seeds", "x"], ["--seeds", "'x'"]),
    (["--no-such-flag"], ["--no-such-flag"]),
])
def test_a_bad_flag_value_is_one_line(capsys, argv, words):
    line = cli_error(capsys, ["--model", "m", *argv])
    assert all(w in line for w in words), line
    assert "usage:" not in capsys.readouterr().err


def test_a_bad_flag_value_is_one_line_on_stderr_of_the_script(tmp_path):
    proc = eval_script("--shuffle-mode", "cyclical", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--shuffle-mode" in proc.stderr, proc.stderr


def test_report_and_compare_usage_errors_are_one_line(capsys):
    for argv in (["report"], ["compare", "--no-such-flag", "a"]):
        line = cli_error(capsys, argv)
        assert "twinkle-hf" in line, line


@pytest.mark.parametrize("pair", [("--apply-chat-template", "--no-chat-template"),
                                  ("--twinkle-results", "--no-twinkle-results")])
def test_contradictory_flags_exit_2(capsys, tmp_path, tiny_model_dir, pair):
    for flags in (pair, pair[::-1]):
        line = cli_error(capsys, ["--model", str(tiny_model_dir), *flags, "--output-dir", str(tmp_path / "x")])
        assert pair[0] in line and pair[1] in line and "contradict" in line, line
    assert not (tmp_path / "x").exists()


def test_the_choice_flags_have_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--shuffle-mode {none,random,cyclic,all} random (default)", "--dtype {auto,float32,bfloat16,float16} "
                  "auto (default)", "--on-bad-row {error,skip} a row with", "--prompt-lang {en,zh} en (default",
                  "--trust-remote-code run the Python code"):
        assert words in text, words


def test_an_honoured_hf_hub_offline_is_recorded(tiny_model_dir, all_a_dir, tmp_path, monkeypatch):
    for value, expected in (("1", True), ("0", False)):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        out = tmp_path / value
        assert main(["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--limit", "1", "--device", "cpu",
                     "--quiet", "--output-dir", str(out)]) == 0
        assert json.loads((out / "results.json").read_text(encoding="utf-8"))["config"]["offline"] is expected


def test_predictions_name_files_relative_to_the_dataset_root(tiny_model_dir, mmlu_dir, all_a_dir, tmp_path):
    single = tmp_path / "deep" / "folder" / "good.csv"
    single.parent.mkdir(parents=True)
    single.write_text("question,A,B,answer\nIs it?,yes,no,A\nIs it not?,yes,no,B\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--dataset", str(single), "--limit", "2",
                 "--device", "cpu", "--quiet", "--output-dir", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    files = {r["file"] for r in rows}
    assert files == {"test/anatomy_test.csv", "test/astronomy_test.csv", "good.csv"}, files
    text = (out / "predictions.jsonl").read_text(encoding="utf-8")
    assert str(tmp_path) not in text and str(mmlu_dir) not in text


def test_a_named_benchmark_on_a_folder_of_another_layout_names_both(tiny_model_dir, mmlu_dir, tmp_path, capsys):
    line = cli_error(capsys, ["--model", str(tiny_model_dir), "--benchmark", f"cmmlu={mmlu_dir}", "--output-dir",
                              str(tmp_path / "x")])
    assert "column map" not in line and "question 0" not in line, line  # no map the user never gave, no data row
    assert "expected CMMLU's release" in line and "without a header" in line and "mmlu=PATH" in line, line
    line = cli_error(capsys, ["--model", str(tiny_model_dir), "--benchmark", f"mmlu={tiny_model_dir}", "--output-dir",
                              str(tmp_path / "x")])
    assert "expected MMLU's release" in line and "found: config.json" in line, line
    assert not (tmp_path / "x").exists()


def test_a_size_check_is_not_called_a_failed_load(tiny_model_dir, monkeypatch):
    from twinkle_hf.errors import TwinkleError
    from twinkle_hf.models.loading import load_model
    from twinkle_hf.settings.config import EvalConfig

    monkeypatch.setenv("WORLD_SIZE", "3")  # the tiny Llama's 4 attention heads do not split 3 ways
    with pytest.raises(TwinkleError) as err:
        load_model(EvalConfig(model=str(tiny_model_dir), tensor_parallel=3, device="cpu"))
    assert str(err.value).startswith("--tensor-parallel 3: the model") and "could not load" not in str(err.value)


def test_the_tensor_parallel_example_saves_its_model_outside_the_project():
    page = (ROOT / "docs" / "processes.md").read_text(encoding="utf-8")
    assert 'save_pretrained("smollm2")' not in page and "--model smollm2 " not in page
    assert 'Path.home() / "models" / "smollm2"' in page and "--model ~/models/smollm2" in page
    assert "/smollm2/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()  # a copy saved there anyway
    assert "ChildFailedError" in page  # torchrun's report after the one line: what it is, what to read


def test_a_file_by_itself_gives_no_subject_unless_named_as_mmlu(tiny_model_dir, tmp_path):
    body = "question,A,B,answer\nIs it?,yes,no,A\n"
    for name in ("good.csv", "anatomy_test.csv"):
        (tmp_path / name).write_text(body, encoding="utf-8")
        out = tmp_path / name.replace(".", "_")
        assert main(["--model", str(tiny_model_dir), "--dataset", str(tmp_path / name), "--device", "cpu", "--quiet",
                     "--log-prompts", "--output-dir", str(out)]) == 0
        (row,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
        if name == "good.csv":  # no subject is known: lm-eval's description without one
            assert row["subject"] == "" and row["prompt"].startswith(
                "The following are multiple choice questions (with answers).\n\nIs it?"), row["prompt"]
            assert "about good" not in (out / "report.md").read_text(encoding="utf-8")
        else:  # MMLU's <subject>_<split>.csv: the subject from the name (DESIGN.md)
            assert row["subject"] == "anatomy" and "(with answers) about anatomy.\n\n" in row["prompt"]
