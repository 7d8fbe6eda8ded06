"""A sweep pairs each checkpoint with the first and the previous one; trend.csv against an independent
recomputation from the checkpoints' predictions.jsonl (outputs/paired_check.py), and the marks."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from helpers import make_model, save_model_dir
from outputs.paired_check import change, holm, mcnemar, sign_flip_exact

from twinkle_hf.cli import main


def _sweep(tmp_path: Path, tokenizer, models: dict[int, object], data: Path, *flags: str) -> list[dict[str, str]]:
    for step, model in models.items():
        save_model_dir(tmp_path / "out" / f"checkpoint-{step}", tokenizer, model)
    assert main(["--model", str(tmp_path / "out" / "checkpoint-*"), "--dataset", str(data), *flags,
                 "--output-dir", str(tmp_path / "sweep"), "--quiet"]) == 0
    return list(csv.DictReader((tmp_path / "sweep" / "trend.csv").read_text(encoding="utf-8").splitlines()))


def test_trend_pairs_equal_a_recomputation_from_the_predictions(tmp_path, tiny_tokenizer, all_a_dir):
    # models that always say one letter: under random orders a question's mean over its orders is the share
    # of orders that put its gold at that letter, so the per-question differences vary
    models = {10: make_model(tiny_tokenizer, favour=" A"), 20: make_model(tiny_tokenizer, favour=" B"),
              30: make_model(tiny_tokenizer, seed=3)}
    rows = _sweep(tmp_path, tiny_tokenizer, models, all_a_dir, "--shuffle", "--seeds", "3", "--limit", "3")
    runs = [tmp_path / "sweep" / r["checkpoint"] for r in rows]
    assert [r["checkpoint"] for r in rows] == ["checkpoint-10", "checkpoint-20", "checkpoint-30"]
    assert all(rows[0][k] == "" for k in ("delta_vs_first", "p_vs_first", "vs_first", "delta_vs_previous"))
    for i in (1, 2):
        for ref, suffix in ((runs[0], "vs_first"), (runs[i - 1], "vs_previous")):
            acc, orig = change(ref, runs[i], "accuracy"), change(ref, runs[i], "acc_original")
            row = rows[i]
            assert float(row[f"delta_{suffix}"]) == pytest.approx(acc["delta"])
            assert float(row[f"p_{suffix}"]) == pytest.approx(acc["p"])
            assert (int(row[f"flips_right_to_wrong_{suffix}"]), int(row[f"flips_wrong_to_right_{suffix}"])) == \
                (acc["down"], acc["up"])
            assert float(row[f"acc_original_delta_{suffix}"]) == pytest.approx(orig["delta"])
            assert float(row[f"acc_original_p_{suffix}"]) == pytest.approx(orig["p"])
    assert float(rows[1]["delta_vs_first"]) != 0.0  # something to pair: A's questions are not B's
    p_first = [change(runs[0], run, "accuracy") for run in runs[1:]]
    adjusted = holm([r["p"] for r in p_first])
    for row, p, want in zip(rows[1:], adjusted, p_first):
        assert float(row["p_holm_vs_first"]) == pytest.approx(p)
        assert row["vs_first"] == ("" if p >= 0.05 or want["delta"] == 0 else
                                   "better" if want["delta"] > 0 else "worse")


def test_a_planted_improvement_is_marked_and_no_difference_is_not(tmp_path, tiny_tokenizer, all_a_dir):
    """Gold is always A and the options keep their order: a model that always says B gets every question
    wrong, one that always says A every one right."""
    wrong = make_model(tiny_tokenizer, favour=" B")
    rows = _sweep(tmp_path, tiny_tokenizer, {1: wrong, 2: wrong, 3: make_model(tiny_tokenizer, favour=" A")},
                  all_a_dir)
    n = 18  # 6 questions in each of the three subjects
    same, better = rows[1], rows[2]
    assert (float(same["delta_vs_first"]), float(same["p_vs_first"]), same["vs_first"]) == (0.0, 1.0, "")
    assert float(better["delta_vs_first"]) == 1.0 and better["vs_first"] == "better"
    assert int(better["flips_wrong_to_right_vs_first"]) == n and int(better["flips_right_to_wrong_vs_first"]) == 0
    assert float(better["acc_original_p_vs_first"]) == pytest.approx(mcnemar(0, n))
    assert float(better["p_holm_vs_first"]) == pytest.approx(holm([1.0, sign_flip_exact([1.0] * n)])[1])
    assert float(better["delta_vs_previous"]) == 1.0
    md = (tmp_path / "sweep" / "trend.md").read_text(encoding="utf-8").splitlines()
    assert "| better |" in md[4] and "better" not in md[3] and "worse" not in "".join(md)
    paired = [c.strip() for c in md[2].strip("| ").split(" | ")][-7:]  # the markdown's 7 paired columns
    assert paired == ["n/a"] * 7  # the first checkpoint has nothing to be paired with
    html = (tmp_path / "sweep" / "trend.html").read_text(encoding="utf-8")
    assert html.count("▲ better") == 1 and "▼ worse" not in html
    assert math.isfinite(float(better["p_vs_previous"]))
