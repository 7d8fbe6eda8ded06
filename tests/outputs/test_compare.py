"""compare: paired differences of two runs against hand-computed values, on tiny synthetic run dirs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from twinkle_hf.compare import main_compare
from twinkle_hf.errors import TwinkleError
from twinkle_hf.outputs.comparison import Comparison, PairedDiff, compare_runs, comparison_markdown

Z = 1.959964
IDENTITY = [0, 1, 2, 3]


def write_run(path: Path, model: str, rows: list[tuple], mode: str = "random", metrics: dict | None = None) -> Path:
    """A run directory from rows of (id, seed, correct) or (id, seed, correct, perm).

    The default perm is a function of the seed only (identity for the original order, seed -1),
    so two runs written from the same (id, seed) pairs show the same orders.
    """
    path.mkdir(parents=True)
    with open(path / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            qid, seed, correct = row[:3]
            perm = row[3] if len(row) > 3 else IDENTITY if seed < 0 else IDENTITY[seed % 4:] + IDENTITY[:seed % 4]
            answer, pred = 0, 0 if correct else 1
            fh.write(json.dumps({
                "dataset": "ds", "id": qid, "subject": "s", "seed": seed, "perm": perm, "answer": answer,
                "pred": pred, "correct": bool(correct), "probs": [0.25] * 4, "answer_original": perm[answer],
                "pred_original": perm[pred], "letter_mass": 0.5}) + "\n")
    doc = {"model": {"name_or_path": model}, "config": {"model": model},
           "seeds": {"base_seed": 1234, "mode": mode},
           "metrics": metrics or {"accuracy": {"mean": 0.5, "stderr": 0.1}, "acc_original": None,
                                  "rstd": {"value": None, "reason": "needs at least 2 permutations"}}}
    (path / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return path


def grid(correct: dict[str, list[int]], original: dict[str, int] | None = None) -> list[tuple]:
    """Rows from {id: [correct under seed 0, seed 1, ...]} and optionally {id: correct in original order}."""
    rows = [(qid, seed, c) for qid, ys in correct.items() for seed, c in enumerate(ys)]
    return rows + [(qid, -1, c) for qid, c in (original or {}).items()]


BASE = {"q1": [1, 1], "q2": [1, 0], "q3": [0, 0], "q4": [1, 0]}
OTHER = {"q1": [1, 1], "q2": [1, 1], "q3": [1, 0], "q4": [0, 0]}


def by_metric(c: Comparison) -> dict[str, PairedDiff]:
    return {d.metric: d for d in c.diffs}


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    return [write_run(tmp_path / "base", "org/model-a", grid(BASE, {"q1": 1, "q2": 0, "q3": 1, "q4": 0})),
            write_run(tmp_path / "other", "org/model-b", grid(OTHER, {"q1": 1, "q2": 1, "q3": 1, "q4": 1}))]


def test_the_paired_interval_is_normal_from_ten_questions():
    from twinkle_hf.outputs.comparison import MIN_PAIRED, _paired

    questions = [("d", f"q{i}") for i in range(MIN_PAIRED)]
    y_base, y_other = np.zeros(MIN_PAIRED), np.array([1.0, 0.0] * (MIN_PAIRED // 2))
    d = _paired("accuracy", "a", "b", questions, y_base, y_other)
    assert d.stderr == pytest.approx(np.std(y_other, ddof=1) / math.sqrt(MIN_PAIRED))
    assert d.ci95 == pytest.approx((0.5 - Z * d.stderr, 0.5 + Z * d.stderr))
    short = _paired("accuracy", "a", "b", questions[:-1], y_base[:-1], y_other[:-1])
    assert short.stderr > 0 and all(x != x for x in short.ci95)


def test_paired_diff_and_stderr_match_a_direct_computation(two_runs):
    c = compare_runs(two_runs)
    diffs = by_metric(c)
    assert [d.metric for d in c.diffs] == ["accuracy", "acc_original", "all_correct"]
    # accuracy: y_base = [1, .5, 0, .5], y_other = [1, 1, .5, 0] -> d = [0, .5, .5, -.5]
    # mean 0.125; squared deviations .015625 + .140625 + .140625 + .390625 = .6875
    acc = diffs["accuracy"]
    assert (acc.baseline, acc.other, acc.n_questions) == ("model-a", "model-b", 4)
    assert acc.diff == pytest.approx(0.125)
    assert acc.stderr == pytest.approx(math.sqrt(0.6875 / 3) / 2)
    assert all(x != x for x in acc.ci95)  # 4 questions: too few for a 95% interval (NaN, shown as n/a)
    # acc_original (seed -1 only): d = [0, 1, 0, 1] -> mean .5, squared deviations sum to 1
    orig = diffs["acc_original"]
    assert (orig.n_questions, orig.diff) == (4, pytest.approx(0.5))
    assert orig.stderr == pytest.approx(math.sqrt(1 / 3) / 2)
    # all_correct: base [1, 0, 0, 0], other [1, 1, 0, 0] -> d = [0, 1, 0, 0], mean .25, sd .5
    allc = diffs["all_correct"]
    assert (allc.diff, allc.stderr) == (pytest.approx(0.25), pytest.approx(0.25))
    assert c.notes == []


def test_paired_stderr_matches_numpy_on_random_correctness(tmp_path: Path):
    rng = np.random.default_rng(7)
    yb, yo = rng.integers(0, 2, size=(2, 30, 3))
    runs = [write_run(tmp_path / name, name, grid({f"q{i}": list(y[i]) for i in range(30)}))
            for name, y in (("a", yb), ("b", yo))]
    d = yo.mean(axis=1) - yb.mean(axis=1)
    acc = by_metric(compare_runs(runs))["accuracy"]
    assert acc.n_questions == 30
    assert acc.diff == pytest.approx(d.mean())
    assert acc.stderr == pytest.approx(d.std(ddof=1) / math.sqrt(30))


def test_partial_overlap_uses_shared_questions_and_says_so(tmp_path: Path):
    other = {k: v for k, v in OTHER.items() if k != "q4"}
    runs = [write_run(tmp_path / "a", "a", grid(BASE, {"q1": 1})), write_run(tmp_path / "b", "b", grid(other))]
    c = compare_runs(runs)
    acc = by_metric(c)["accuracy"]
    assert acc.n_questions == 3
    assert acc.diff == pytest.approx((0 + 0.5 + 0.5) / 3)  # d = [0, .5, .5] on q1..q3
    assert any("3 shared questions (4 in a, 3 in b)" in note for note in c.notes)
    assert "acc_original" not in by_metric(c)
    assert any("acc_original not paired" in note for note in c.notes)


def test_same_seed_with_a_different_order_is_excluded(tmp_path: Path):
    rows = [r if r[:2] != ("q2", 1) else (*r, [3, 2, 1, 0]) for r in grid(OTHER)]
    runs = [write_run(tmp_path / "a", "a", grid(BASE)), write_run(tmp_path / "b", "b", rows)]
    c = compare_runs(runs)
    acc = by_metric(c)["accuracy"]
    # q2 keeps seed 0 only (1 vs 1): d = [0, 0, .5, -.5]
    assert (acc.n_questions, acc.diff) == (4, pytest.approx(0.0))
    assert acc.stderr == pytest.approx(math.sqrt(0.5 / 3) / 2)
    assert any("1 row had the same order index but a different order" in note for note in c.notes)
    assert "all_correct" not in by_metric(c)  # q2 has one shared permutation left
    assert any("all_correct not paired" in note for note in c.notes)


def test_no_shared_rows_is_a_note_not_an_error(tmp_path: Path):
    other = [(f"x{qid}", seed, c) for qid, seed, c in grid(OTHER)]
    runs = [write_run(tmp_path / "a", "a", grid(BASE)), write_run(tmp_path / "b", "b", other)]
    c = compare_runs(runs)
    assert c.diffs == []
    assert any("no rows in common" in note for note in c.notes)
    assert "no run shares rows" in comparison_markdown(c)


def test_unshuffled_runs_pair_acc_original_with_the_original_order(tmp_path: Path):
    plain = write_run(tmp_path / "plain", "m", [("q1", 0, 1), ("q2", 0, 0)], mode="none")
    plain2 = write_run(tmp_path / "plain2", "m", [("q1", 0, 0), ("q2", 0, 0)], mode="none")
    shuffled = write_run(tmp_path / "shuf", "m", grid({"q1": [0, 0], "q2": [1, 1]}, {"q1": 1, "q2": 1}))
    assert by_metric(compare_runs([plain, plain2]))["acc_original"].diff == pytest.approx(-0.5)
    c = compare_runs([plain, shuffled])  # plain's seed 0 is the original order: paired with seed -1
    assert by_metric(c)["acc_original"].diff == pytest.approx(0.5)
    assert any("different permutation settings" in note for note in c.notes)


def test_labels_are_unique_and_markdown_has_one_column_per_run(tmp_path: Path):
    runs = [write_run(tmp_path / name, "ckpt/model", grid(BASE)) for name in ("step100", "step200")]
    runs.append(write_run(tmp_path / "other", "org/other.gguf", grid(OTHER)))
    c = compare_runs(runs)
    assert [r.label for r in c.runs] == ["model (step100)", "model (step200)", "other"]
    text = comparison_markdown(c)
    assert text.splitlines()[0] == "| metric | model (step100) | model (step200) | other |"
    assert "| accuracy % ± stderr | 50.0 ± 10.0 | 50.0 ± 10.0 | 50.0 ± 10.0 |" in text
    assert "| rstd | n/a | n/a | n/a |" in text  # not applicable, as results.json says
    assert [d.metric for d in c.diffs] == ["accuracy", "all_correct"] * 2  # no original-order rows
    assert c.notes == []


def test_the_paired_differences_sentence_closes_what_it_opens(two_runs):
    """It read "... no 95% interval from fewer than 10 questions)." with a ")" nothing had opened."""
    text = comparison_markdown(compare_runs(two_runs))
    line = next(line for line in text.splitlines() if line.startswith("Paired differences"))
    assert line.count("(") == line.count(")") and line.endswith("no 95% interval from fewer than 10 questions.")


def test_main_compare_prints_and_writes_with_labels(two_runs, tmp_path: Path, capsys):
    out = tmp_path / "cmp.md"
    assert main_compare([str(p) for p in two_runs] + ["--labels", "base,tuned", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| metric | base | tuned |")
    assert "| accuracy | tuned | 4 | +12.5 |" in printed
    assert out.read_text(encoding="utf-8") == printed
    page = (tmp_path / "cmp.html").read_text(encoding="utf-8")  # runs without per-subject metrics
    assert "<svg" in page and "<td class=num>+12.5</td>" in page and "hold no per-subject metrics" in page


@pytest.mark.parametrize("labels", [["a"], ["a", "a"]])
def test_bad_labels_are_errors(two_runs, labels):
    with pytest.raises(TwinkleError, match="--labels"):
        compare_runs(two_runs, labels)


def test_fewer_than_two_runs_is_an_error(two_runs):
    with pytest.raises(TwinkleError, match="at least 2"):
        compare_runs(two_runs[:1])


@pytest.mark.parametrize("missing", ["results.json", "predictions.jsonl"])
def test_missing_files_name_the_run_dir(two_runs, missing):
    (two_runs[1] / missing).unlink()
    with pytest.raises(FileNotFoundError, match=f"other: no {missing}"):
        compare_runs(two_runs)
