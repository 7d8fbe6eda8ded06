"""--samples n: pass@k against enumeration, majority vote, order metrics per sample, and end to end
(rows per sample, sample 0 = the one-sample run, the reports)."""

from __future__ import annotations

import itertools
import json
from math import comb
from pathlib import Path

import numpy as np
import pytest
from helpers import make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.metrics.bias import bias_metrics
from twinkle_hf.metrics.sampling import ks_for, majority_vote, pass_at_k, sampling_metrics
from twinkle_hf.metrics.summarize import headline_scalars
from twinkle_hf.metrics.uncertainty import wilson_interval, wilson_score_interval
from twinkle_hf.schema import GenerationColumns, Predictions


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_pass_at_k_is_the_share_of_k_subsets_holding_a_correct_sample(n):
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(samples, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / comb(n, k), abs=1e-12)
    with pytest.raises(ValueError, match="pass_at_k needs"):
        pass_at_k(3, 4, 1)


def test_ks_and_majority_vote():
    assert ks_for(1) == [1] and ks_for(4) == [1, 2, 4] and ks_for(5) == [1, 2, 4, 5] and ks_for(10) == [1, 2, 4, 8, 10]
    assert majority_vote([2, 1, 1, 2, -1]) == 2  # a tie goes to the letter drawn first
    assert majority_vote([-1, 3, -1, -1]) == 3  # unextracted answers do not vote
    assert majority_vote([-1, -1]) == -1


def _rows(spec: list[tuple[str, int, int, int, int]]) -> Predictions:
    """(question id, order, sample, gold, pred) per row; orders are cyclic rotations of 4 options."""
    perms = [[(j + order) % 4 for j in range(4)] for _, order, _, _, _ in spec]
    n = len(spec)
    return Predictions(
        dataset=["d"] * n, id=[s[0] for s in spec], subject=["s"] * n,
        order_index=np.array([s[1] for s in spec]), perm=perms, answer=np.array([s[3] for s in spec]),
        pred=np.array([s[4] for s in spec]),
        generation=GenerationColumns([""] * n, [""] * n, np.zeros(n, bool), np.ones(n, np.int64),
                                     np.array([s[2] for s in spec])),
    )


def test_sampling_metrics_by_hand():
    # q1, order 0: samples right, wrong, right (c=2; vote: the right letter 0 twice)
    # q1, order 1: wrong, wrong, unparsed (c=0; vote: 2)
    # q2, order 0: unparsed x3 (c=0; vote: none)
    spec = [("q1", 0, 0, 0, 0), ("q1", 0, 1, 0, 1), ("q1", 0, 2, 0, 0),
            ("q1", 1, 0, 3, 2), ("q1", 1, 1, 3, 2), ("q1", 1, 2, 3, -1),
            ("q2", 0, 0, 1, -1), ("q2", 0, 1, 1, -1), ("q2", 0, 2, 1, -1)]
    m = sampling_metrics(_rows(spec))
    assert m["n_samples"] == 3 and list(m["pass_at_k"]) == ["1", "2", "3"]
    q1 = [(2 / 3 + 0) / 2, (1 + 0) / 2, (1 - comb(1, 2) / comb(3, 2) + 0) / 2, (1 + 0) / 2]
    assert m["mean"]["value"] == pytest.approx((q1[0] + 0) / 2)
    assert m["majority_vote"]["value"] == pytest.approx((q1[1] + 0) / 2)
    assert m["pass_at_k"]["1"]["value"] == pytest.approx(m["mean"]["value"])
    assert m["pass_at_k"]["2"]["value"] == pytest.approx((q1[2] + 0) / 2)
    assert m["pass_at_k"]["3"]["value"] == pytest.approx((q1[3] + 0) / 2)
    assert m["majority_vote"]["n_questions"] == 2 and m["majority_vote"]["stderr"] > 0


def test_order_metrics_compare_orders_within_a_sample_not_across_samples():
    # one question, two orders, two samples: sample 0 right under both orders (and picks the same
    # content), sample 1 right under order 0 only. Sampling noise is not order sensitivity.
    spec = [("q", 0, 0, 0, 0), ("q", 1, 0, 3, 3), ("q", 0, 1, 0, 0), ("q", 1, 1, 3, 1)]
    m = bias_metrics(_rows(spec), n_boot=0)
    assert m["all_correct"]["value"] == pytest.approx(0.5) and m["any_correct"]["value"] == 1.0
    assert m["fluctuation"]["value"] == pytest.approx(0.5)
    # one outcome per question is a share of samples now: the interval is Wilson's at that share
    assert m["all_correct"]["ci95"] == pytest.approx(wilson_score_interval(0.5, 1))
    one = bias_metrics(_rows([s for s in spec if s[2] == 0]), n_boot=0)
    assert one["all_correct"]["value"] == 1.0 and one["fluctuation"]["value"] == 0.0
    assert one["all_correct"]["ci95"] == pytest.approx(wilson_interval(1, 1))


@pytest.fixture(scope="module")
def decoy_dir(tmp_path_factory) -> Path:
    tok = make_tokenizer()
    pieces = ["<think>", "Maybe A", "</think>", "\\boxed{C}"]
    return save_model_dir(tmp_path_factory.mktemp("decoy") / "model", tok, make_writer_model(tok, pieces))


def _run(out: Path, model: Path, *args: str) -> tuple[dict, list[dict]]:
    assert main(["--model", str(model), "--output-dir", str(out), "--quiet", "--device", "cpu", *args]) == 0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return json.loads((out / "results.json").read_text(encoding="utf-8")), rows


def test_samples_end_to_end(decoy_dir, all_a_dir, tmp_path):
    results, rows = _run(tmp_path / "run", decoy_dir, "--dataset", str(all_a_dir), "--method", "box",
                         "--shuffle-mode", "cyclic", "--samples", "3", "--temperature", "0.8",
                         "--max-new-tokens", "8")
    assert len(rows) == 3 * 6 * (4 + 5 + 6) and [r["sample"] for r in rows[:6]] == [0, 1, 2, 0, 1, 2]
    for name, k in (("three", 3), ("four", 4), ("five", 5)):  # always "C", whatever the sample: 1/k everywhere
        block = results["datasets"]["all_a"]["subjects"][name]
        sampling = block["sampling"]
        assert sampling["n_samples"] == 3 and block["accuracy"]["value"] == pytest.approx(1 / k)
        for value in [sampling["mean"], sampling["majority_vote"], *sampling["pass_at_k"].values()]:
            assert value["value"] == pytest.approx(1 / k)
    scalars = headline_scalars(results["metrics"])
    assert scalars["majority_vote"] == results["metrics"]["sampling"]["majority_vote"]["value"]
    assert set(scalars) >= {"pass_at_1", "pass_at_2", "pass_at_3"}
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "| majority vote | " in report and "| pass@2 | " in report and "| pass@3 | " in report


def test_sample_zero_is_the_one_sample_run(tiny_model_dir, all_a_dir, tmp_path):
    args = ["--dataset", str(all_a_dir), "--method", "pattern", "--temperature", "1.0", "--top-p", "0.9",
            "--max-new-tokens", "6", "--limit", "2"]
    _, many = _run(tmp_path / "many", tiny_model_dir, *args, "--samples", "3")
    one_results, one = _run(tmp_path / "one", tiny_model_dir, *args)
    assert [r["output"] for r in many if r["sample"] == 0] == [r["output"] for r in one]
    texts = {(r["id"], r["order"]): set() for r in many}
    for r in many:
        texts[(r["id"], r["order"])].add(r["output"])
    assert all(len(t) > 1 for t in texts.values())  # the samples differ
    assert "sampling" not in one_results["metrics"]


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "box", "--samples", "3"], "with greedy decoding (temperature 0) draws the same answer"),
    (["--samples", "2"], "needs generation mode"),
    (["--method", "box", "--samples", "0"], "samples must be an integer >= 1"),
])
def test_bad_samples_say_what_to_fix(decoy_dir, tmp_path, capsys, args, message):
    assert main(["--model", str(decoy_dir), "--output-dir", str(tmp_path / "x"), "--quiet", *args]) == 2
    assert message in capsys.readouterr().err
