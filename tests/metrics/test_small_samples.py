"""Small samples: no metric reads as a verdict the data cannot support (issue: an always-"C" model
on 20 questions whose gold letters are A x6, B x6, D x6, C x2 got RStd 0, "no letter is favoured")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import make_model, save_model_dir

from twinkle_hf.cli import main

GOLD = "A" * 6 + "B" * 6 + "D" * 6 + "C" * 2


@pytest.fixture(scope="module")
def always_c_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A model that answers " C" after any prompt."""
    return save_model_dir(tmp_path_factory.mktemp("always_c") / "model", tiny_tokenizer,
                          make_model(tiny_tokenizer, favour=" C"))


@pytest.fixture(scope="module")
def skewed_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("skewed") / "skewed.csv"
    path.write_text("question,A,B,C,D,answer\n" + "".join(
        f"Question {i}?,first {i},second {i},third {i},fourth {i},{gold}\n" for i, gold in enumerate(GOLD)),
        encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, always_c_dir, skewed_csv) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    assert main(["--model", str(always_c_dir), "--dataset", str(skewed_csv), "--output-dir", str(out), "--quiet",
                 "--device", "cpu"]) == 0
    return out


def test_rstd_of_an_always_c_model_is_not_applicable_and_says_why(run_dir):
    metrics = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["letter_dist"]["C"]["pred"] == 1.0  # the planted model: C every time
    for name in ("rstd", "rsd"):
        block = metrics[name]
        assert block["value"] is None, f"{name} reads as a verdict: {block}"
        assert "C (gold 2, predicted 20 times)" in block["reason"]
        assert block["left_out"] == ["C"] and block["n_gold"] == {"A": 6, "B": 6, "C": 2, "D": 6}
    assert metrics["letter_recall"]["n_predicted"] == {"A": 0, "B": 0, "C": 20, "D": 0}
    assert metrics["ckld"]["value"] > 1  # the bias the letter table shows, in the divergence too


def test_the_reports_agree_with_the_letter_table(run_dir):
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    rstd_row = next(line for line in report.splitlines() if line.startswith("| RStd |"))
    assert "| n/a |" in rstd_row and "C (gold 2, predicted 20 times)" in rstd_row
    assert "| C | 100.0 (20) | 10.0 (2) | 100.0 |" in report  # every letter's share, count and recall
    assert "| A | 0.0 (0) | 30.0 (6) | 0.0 |" in report
    # the table's n/a, explained (one file without subjects: its only row is the overall one)
    assert "- RStd n/a for overall: letters gold fewer than 5 times" in report
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "C (gold 2, predicted 20 times)" in html
    log = (run_dir / "run.log").read_text(encoding="utf-8")  # the console
    assert "- RStd n/a for overall:" in log and "C (gold 2, predicted 20 times)" in log


def test_one_order_has_no_spread_and_no_within_question_variance(run_dir):
    metrics = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["accuracy"]["std"] is None  # not 0: a spread over one order does not exist
    assert metrics["variance_components"]["value"] is None and "2 permutations" in metrics["variance_components"][
        "reason"]
    assert metrics["ece"]["value"] is None and "at least 150 scored rows (20 here)" in metrics["ece"]["reason"]
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "std of per-order accuracies" not in report and "Variance of correctness" not in report


def test_the_callback_logs_no_verdict_the_data_cannot_support(tmp_path, always_c_dir, skewed_csv, tiny_tokenizer):
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM

    from twinkle_hf.callback import TwinkleCallback
    from twinkle_hf.settings.config import EvalConfig

    model = AutoModelForCausalLM.from_pretrained(always_c_dir)
    callback = TwinkleCallback(str(skewed_csv), EvalConfig(device="cpu"), tokenizer=tiny_tokenizer)
    logs = callback.run(model, None, SimpleNamespace(global_step=1, log_history=[]))
    assert logs["twinkle/accuracy"] == 0.1 and logs["twinkle/pred_share_C"] == 1.0
    assert not {"twinkle/rstd", "twinkle/rsd", "twinkle/all_correct", "twinkle/fluctuation"} & set(logs)


def test_a_comparison_of_a_few_questions_gives_no_error_bar(tmp_path, always_c_dir, skewed_csv, tiny_model_dir):
    from twinkle_hf.outputs.comparison import compare_runs, comparison_markdown

    runs = []
    for name, model in (("c", always_c_dir), ("tiny", tiny_model_dir)):
        out = tmp_path / name
        assert main(["--model", str(model), "--dataset", str(skewed_csv), "--output-dir", str(out), "--quiet",
                     "--device", "cpu", "--limit", "8"]) == 0
        runs.append(out)
    comparison = compare_runs(runs)
    diff = next(d for d in comparison.diffs if d.metric == "accuracy")
    assert diff.n_questions == 8 and all(x != x for x in diff.ci95)  # NaN: no interval from 8 questions
    row = next(line for line in comparison_markdown(comparison).splitlines() if line.startswith("| accuracy | "))
    assert row.startswith("| accuracy | model (tiny) | 8 |") and row.endswith("| [n/a, n/a] |")
