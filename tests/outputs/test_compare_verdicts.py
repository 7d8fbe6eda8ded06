"""compare's verdicts and PATH.json: hand-computed values on synthetic runs, and an independent
recomputation (paired_check.py) on two tiny random models run through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from paired_check import check_against_predictions, holm, pairs, sign_flip_exact

from twinkle_hf.cli import main
from twinkle_hf.compare import main_compare
from twinkle_hf.errors import TwinkleError
from twinkle_hf.outputs.comparison import compare_runs
from twinkle_hf.outputs.verdicts import qualified

PAIR_KEYS = {"other", "dataset", "metric", "n_questions", "diff", "stderr", "ci95", "p_value", "p_holm",
             "mcnemar_p", "flips", "equivalence", "verdict"}


def write_run(path: Path, rows: list[tuple[str, str, str, int, bool]]) -> Path:
    """A run directory from rows of (dataset, subject, id, order, correct); order -1 is the original order."""
    path.mkdir(parents=True)
    with open(path / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for dataset, subject, qid, order, correct in rows:
            perm = [0, 1, 2, 3] if order < 0 else [(order + j) % 4 for j in range(4)]
            fh.write(json.dumps({"dataset": dataset, "id": qid, "subject": subject, "order": order, "perm": perm,
                                 "answer": 0, "pred": 0 if correct else 1, "probs": [0.25] * 4,
                                 "letter_mass": 0.5}) + "\n")
    doc = {"model": {"name_or_path": path.name}, "seeds": {"base_seed": 1, "mode": "cyclic"}, "metrics": {}}
    (path / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return path


def original_rows(outcomes: dict[tuple[str, str], list[bool]]) -> list[tuple]:
    """Original-order rows from {(dataset, subject): [correct of question 0, 1, ...]}."""
    return [(ds, subject, f"{subject}{i}", -1, c) for (ds, subject), cs in outcomes.items() for i, c in enumerate(cs)]


def test_mcnemar_holm_and_the_json_schema_by_hand(tmp_path: Path):
    # s1: 6 questions wrong -> right, 6 unchanged right; s2: 1 right -> wrong, 1 wrong -> right, 10 unchanged
    base = original_rows({("ds", "s1"): [False] * 6 + [True] * 6, ("ds", "s2"): [True, False] + [True] * 10})
    other = original_rows({("ds", "s1"): [True] * 12, ("ds", "s2"): [False, True] + [True] * 10})
    runs = [write_run(tmp_path / "base", base), write_run(tmp_path / "next", other)]
    out = tmp_path / "cmp.md"
    assert main_compare([*map(str, runs), "--output", str(out)]) == 0
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert doc["baseline"] == "base" and [r["label"] for r in doc["runs"]] == ["base", "next"]
    assert all(set(p) == PAIR_KEYS for p in doc["pairs"])
    assert [p["dataset"] for p in doc["pairs"]] == ["overall", "ds/s1", "ds/s2"]  # one dataset: no dataset row
    overall, s1, s2 = doc["pairs"]
    # overall: b = 1, c = 7 of 24 -> p = 2 * (1 + 8) / 256
    assert overall["flips"]["right_to_wrong"] == 1 and overall["flips"]["wrong_to_right"] == 7
    assert overall["flips"]["ids"] == {"right_to_wrong": ["s20"],
                                       "wrong_to_right": [f"s1{i}" for i in range(6)] + ["s21"]}
    assert overall["p_value"] == overall["mcnemar_p"] == overall["p_holm"] == pytest.approx(18 / 256)
    assert overall["diff"] == pytest.approx(6 / 24)
    # subjects: s1 p = 2 / 64, s2 p = 1 (b = c); Holm over the two: .0625 and 1
    assert (s1["p_value"], s2["p_value"]) == (pytest.approx(2 / 64), 1.0)
    assert (s1["p_holm"], s2["p_holm"]) == (pytest.approx(4 / 64), 1.0)
    assert s1["equivalence"]["margin"] == 0.01 and s1["ci95"][0] == pytest.approx(0.5 - 1.959964 * s1["stderr"])
    # the overall difference is not significant (p = .07): no "better", and not equivalent either
    assert overall["verdict"].startswith("no difference detectable: about ")
    assert "more questions would detect 1 point" in overall["verdict"]
    # s1 alone is significant before adjustment, not after Holm
    assert s1["verdict"].startswith("no difference detectable")
    page = out.with_suffix(".html").read_text(encoding="utf-8")
    assert page.index("<h2>Verdicts</h2>") < page.index("<h2>Headline</h2>")
    assert "<h2>Flipped questions</h2>" in page and "ds/s10" in page and "wrong → right" in page


def test_a_significant_gain_reads_better_and_bh_is_an_option(tmp_path: Path):
    base = original_rows({("ds", "s1"): [False] * 12 + [True] * 8})
    other = original_rows({("ds", "s1"): [True] * 20})
    runs = [write_run(tmp_path / "base", base), write_run(tmp_path / "next", other)]
    c = compare_runs(runs, adjust="bh")
    (v,) = c.verdicts
    assert v.p_value == pytest.approx(2 / 2**12)
    assert v.verdict.startswith("next is better than base by 60.0 points [")
    assert v.verdict.endswith("(McNemar p = 4.9e-04, 12 questions gained, 0 lost)")
    swapped = compare_runs(runs, baseline="next").verdicts[0]
    assert swapped.other == "base" and swapped.diff == pytest.approx(-0.6) and "worse than next" in swapped.verdict
    with pytest.raises(TwinkleError, match="--baseline 'nope' names no run"):
        compare_runs(runs, baseline="nope")


def test_identical_runs_on_many_questions_are_equivalent_and_on_few_are_not(tmp_path: Path):
    many = original_rows({("ds", "s"): [True, False] * 600})
    c = compare_runs([write_run(tmp_path / "a", many), write_run(tmp_path / "b", many)])
    (v,) = c.verdicts
    # no question changed: stderr 0, floored at 1/n for TOST -> p = P(Z <= -.01 * 1200)
    assert (v.right_to_wrong, v.wrong_to_right, v.p_value, v.equivalent) == ((), (), 1.0, True)
    assert v.verdict.startswith("equivalent within ±1 point (TOST p = ")
    few = original_rows({("ds", "s"): [True, False] * 10})
    (v,) = compare_runs([write_run(tmp_path / "c", few), write_run(tmp_path / "d", few)]).verdicts
    assert not v.equivalent and v.verdict == "no difference detectable: no question changed (20 questions)"


def test_shuffled_accuracy_uses_the_sign_flip_test_and_suites_adjust_over_datasets(tmp_path: Path):
    def rows(scores: dict[str, list[int]]) -> list[tuple]:
        return [(ds, "s", f"{ds}{i}", order, bool(c)) for ds, per_q in scores.items()
                for i, q in enumerate(per_q) for order, c in enumerate([1] * q + [0] * (4 - q))]
    base = {"x": [0, 1, 2, 3, 4, 2, 2], "y": [4, 4, 0, 0, 1, 1, 2]}
    other = {"x": [2, 3, 2, 4, 4, 4, 3], "y": [4, 3, 0, 1, 1, 1, 2]}
    runs = [write_run(tmp_path / "a", rows(base)), write_run(tmp_path / "b", rows(other))]
    verdicts = {v.dataset: v for v in compare_runs(runs).verdicts}
    assert list(verdicts) == ["overall", "x", "y"]
    assert verdicts["overall"].mcnemar_p is None
    d_x = [(o - b) / 4 for b, o in zip(base["x"], other["x"])]
    d_y = [(o - b) / 4 for b, o in zip(base["y"], other["y"])]
    assert verdicts["overall"].p_value == pytest.approx(sign_flip_exact(d_x + d_y))
    p = [sign_flip_exact(d_x), sign_flip_exact(d_y)]
    assert [verdicts["x"].p_value, verdicts["y"].p_value] == pytest.approx(p)
    assert [verdicts["x"].p_holm, verdicts["y"].p_holm] == pytest.approx(holm(p))
    assert verdicts["overall"].wrong_to_right == ("x/x0", "x/x1", "x/x3", "x/x5", "x/x6", "y/y3")
    # ids that already name their dataset (MMLU's "mmlu/anatomy/0") are not prefixed twice
    assert qualified(("mmlu", "mmlu/anatomy/0")) == "mmlu/anatomy/0"


def test_runs_that_cannot_be_paired_still_say_why_and_have_no_verdicts(tmp_path: Path):
    a = write_run(tmp_path / "a", original_rows({("ds", "s"): [True] * 3}))
    b = write_run(tmp_path / "b", original_rows({("other", "s"): [True] * 3}))
    out = tmp_path / "cmp.md"
    assert main_compare([str(a), str(b), "--output", str(out)]) == 0
    assert pairs(out) == [] and "no rows in common" in out.read_text(encoding="utf-8")


def test_a_margin_must_be_positive(tmp_path: Path):
    a = write_run(tmp_path / "a", original_rows({("ds", "s"): [True] * 3}))
    with pytest.raises(TwinkleError, match="--margin must be > 0 percentage points"):
        main_compare([str(a), str(a), "--margin", "0"])


def test_tiny_models_through_the_cli_match_an_independent_recomputation(tiny_tokenizer, mmlu_dir, tmp_path):
    from helpers import make_model, save_model_dir

    runs = []
    for seed in (0, 1):
        model = save_model_dir(tmp_path / f"m{seed}", tiny_tokenizer, make_model(tiny_tokenizer, seed=seed))
        runs.append(tmp_path / f"run{seed}")
        assert main(["--model", str(model), "--dataset", str(mmlu_dir), "--shuffle-mode", "cyclic", "--device", "cpu",
                     "--output-dir", str(runs[-1]), "--quiet"]) == 0
    out = tmp_path / "cmp.md"
    assert main_compare([*map(str, runs), "--labels", "base,next", "--margin", "2", "--output", str(out)]) == 0
    got = check_against_predictions(runs, out, 0.02)
    assert {r["metric"] for r in got} == {"accuracy", "acc_original"}
    assert all(math.isfinite(r["p_value"]) and 0 < r["p_value"] <= 1 for r in got)
    assert sum(r["flips"]["right_to_wrong"] + r["flips"]["wrong_to_right"] for r in got) > 0  # not two empty lists


def test_cloze_acc_and_acc_norm_get_mcnemar_verdicts(tmp_path: Path):
    def run(name: str, acc: list[bool], norm: list[int]) -> Path:
        path = write_run(tmp_path / name, original_rows({("ds", "s"): [True] * len(acc)}))
        letters = [{**json.loads(line), "formulation": "logit"}
                   for line in (path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
        with open(path / "predictions.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in letters)
            for i, (right, pick_norm) in enumerate(zip(acc, norm)):
                fh.write(json.dumps({"dataset": "ds", "id": f"s{i}", "subject": "s", "order": -1, "perm": [0, 1, 2, 3],
                                     "answer": 0, "pred": 0 if right else 2, "formulation": "cloze",
                                     "loglik": [-1.0] * 4, "pred_norm": pick_norm, "pred_bytes": -1}) + "\n")
        return path
    # acc: 3 gained, 0 lost of 12; acc_norm: question 0 lost, question 1 has no normalised pick in the other run
    base = run("base", [False] * 3 + [True] * 9, [0] * 12)
    other = run("next", [True] * 12, [1, -1] + [0] * 10)
    verdicts = {v.metric: v for v in compare_runs([base, other]).verdicts}
    assert set(verdicts) == {"acc_original", "cloze_acc", "cloze_acc_norm"}
    assert verdicts["cloze_acc"].wrong_to_right == ("s0", "s1", "s2")
    assert verdicts["cloze_acc"].mcnemar_p == pytest.approx(2 / 8)
    norm = verdicts["cloze_acc_norm"]
    assert (norm.n_questions, norm.right_to_wrong, norm.mcnemar_p) == (11, ("s0",), 1.0)
