"""The pure parts of scripts/bench.py and its modules (agreement, summaries, table, inputs) on hand-made inputs.

No model and no timing here: the benchmark itself is a script, run by hand.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench")


@pytest.fixture(scope="module")
def summary():
    return load_script("bench_summary")


@pytest.fixture(scope="module")
def workloads():
    return load_script("bench_workloads")


def test_compare_predictions_counts_same_ties_and_disagreements(summary):
    log = math.log
    twinkle = [[0.7, 0.1, 0.1, 0.1], [0.5, 0.5, 0.0, 0.0], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6, 0.0]]
    lmeval = [
        [log(0.7), log(0.1), log(0.1), log(0.1)],  # same pick
        [-1.0, -1.0 + 1e-9, -5.0, -6.0],  # lm-eval picks B by 1e-9, twinkle A on an exact tie: a tie
        [log(0.1), log(0.3), log(0.6)],  # C vs twinkle's B, clearly: a disagreement
        [-3.0, -2.0, -1.0, -9.0],  # same pick
    ]
    out = summary.compare_predictions(twinkle, lmeval)
    assert (out["rows"], out["identical"], out["fraction_identical"]) == (4, 2, 0.5)
    assert [t["row"] for t in out["ties"]] == [1]
    assert len(out["disagreements"]) == 1 and not out["agree_up_to_ties"]
    d = out["disagreements"][0]
    assert (d["row"], d["twinkle"], d["lm_eval"]) == (2, "B", "C")
    assert d["gap_lm_eval"] == pytest.approx(log(0.6) - log(0.3))
    assert d["gap_twinkle"] == pytest.approx(log(0.6) - log(0.3))
    assert out["max_abs_prob_diff"] == pytest.approx(0.3)  # row 2: 0.6 vs 0.3 on B and on C


def test_compare_predictions_max_prob_diff_normalises_lmeval(summary):
    q = np.exp([-3.0, -2.0, -1.0, -9.0])
    out = summary.compare_predictions([[0.2, 0.2, 0.6, 0.0]], [[-3.0, -2.0, -1.0, -9.0]])
    assert out["max_abs_prob_diff"] == pytest.approx(np.abs(np.array([0.2, 0.2, 0.6, 0.0]) - q / q.sum()).max())


def test_compare_predictions_all_identical_and_mismatched_lengths(summary):
    out = summary.compare_predictions([[0.9, 0.1]], [[-0.1, -2.3]])
    assert out["agree_up_to_ties"] and out["identical"] == 1 and out["ties"] == []
    with pytest.raises(ValueError, match="2 twinkle rows but 1 lm-eval rows"):
        summary.compare_predictions([[0.9, 0.1], [0.2, 0.8]], [[-0.1, -2.3]])


def test_side_summary_hand_computed(summary):
    run = {"seconds": 2.0, "cpu_seconds": 3.5, "forwards": 3, "forward_tokens": 1100, "peak_memory_bytes": None}
    out = summary.side_summary(run, questions=10, tokens=1000, params=50, peak=1e6)
    assert out["questions_per_second"] == 5.0
    assert out["cores_busy"] == 1.75
    assert out["padding_ratio"] == pytest.approx(1.1)
    assert out["mfu"] == pytest.approx(2 * 50 * 1100 / 2.0 / 1e6)
    assert out["forwards"] == 3


def test_pass_figures_hand_computed(summary):
    run = {"seconds": 3.0, "cpu_seconds": 5.0, "forward_seconds": 2.5, "forwards": 4, "forward_tokens": 1000,
           "pass_tokens": [100, 200, 300, 400], "peak_memory_bytes": None}
    out = summary.side_summary(run, questions=50, tokens=900, params=50, peak=1e6, prompts=250)
    assert out["median_tokens_per_pass"] == 250
    assert out["host_seconds_per_1000"] == pytest.approx(2.0)
    assert out["predicted_gpu_seconds"] == pytest.approx(0.091 * 4 + 41e-6 * 1000)
    bare = summary.side_summary({**run, "pass_tokens": [], "forward_seconds": 0.0}, 50, 900, 50, 1e6)
    assert (bare["median_tokens_per_pass"], bare["host_seconds_per_1000"]) == (None, None)


def test_format_pass_table_one_line_per_workload(summary):
    side = lambda passes, pred: {"forwards": passes, "median_tokens_per_pass": 512.0, "padding_ratio": 1.02,
                                 "host_seconds_per_1000": 0.25, "seconds": 2.0, "predicted_gpu_seconds": pred}
    row = {"workload": "W4", "prompts": 2000, "twinkle": side(10, 1.0), "lm_eval": side(40, 3.0)}
    lines = summary.format_pass_table([row]).splitlines()
    assert len(lines) == 3 and all(line.count("|") == lines[0].count("|") for line in lines)
    assert lines[2] == ("| W4 | 2000 | 10 / 40 | 5.0 / 20.0 | 512 / 512 | 1.02 / 1.02 | 0.25 / 0.25 | 2.0 / 2.0 | "
                        "1.00 / 3.00 | **3.00x** |")


def _row(ties=0, differ=0, memory=(3 * 2**20, None)):
    side = lambda qps, pad, mem, mfu: {"questions_per_second": qps, "padding_ratio": pad, "tokens": 1234,
                                       "peak_memory_bytes": mem, "mfu": mfu, "cores_busy": 1.95}
    agreement = {"identical": 10 - ties - differ, "rows": 10, "ties": [{}] * ties, "disagreements": [{}] * differ}
    return {"workload": "W2", "title": "MMLU 5-shot", "questions": 5, "prompts": 10,
            "ratio": 2.0, "starved": differ > 0,
            "twinkle": side(1.5, 1.05, memory[0], 0.25), "lm_eval": side(0.75, None, memory[1], 0.125),
            "agreement": agreement}


def test_format_table_one_line_per_workload(summary):
    table = summary.format_table([_row(), _row(ties=1, differ=2)])
    lines = table.splitlines()
    assert len(lines) == 4
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert lines[2] == ("| W2 MMLU 5-shot | 5 (10) | 1.500 | 0.750 | **2.00x** | 10/10 | 1234 | 1.05 / n/a | "
                        "3 / n/a | 25.0% / 12.5% | 1.9 / 1.9 |")
    assert "**2.00x** (starved) | 7/10 (+1 ties) **2 differ** |" in lines[3]


def test_is_starved_only_on_cpu_and_below_the_share(summary):
    busy = {"seconds": 10.0, "cpu_seconds": 19.0}
    starved = {"seconds": 10.0, "cpu_seconds": 11.0}  # two threads, about one core
    assert not summary.is_starved([busy, busy], threads=2)
    assert summary.is_starved([busy, starved], threads=2)
    assert not summary.is_starved([starved], threads=1)
    assert not summary.is_starved([starved], threads=None)  # an accelerator run: CPU time says nothing


def test_write_subset_copies_mmlu_layout(workloads, tmp_path):
    src = tmp_path / "mmlu"
    for split in ("test", "dev"):
        (src / split).mkdir(parents=True)
        for subject in ("anatomy", "virology"):
            (src / split / f"{subject}_{split}.csv").write_text(f"q,a,b,c,d,A\n{split}\n")
    out = workloads.write_subset(src, ["anatomy"], tmp_path / "out")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.csv")) == [
        "dev/anatomy_dev.csv", "test/anatomy_test.csv"]
    with pytest.raises(FileNotFoundError, match=r"astronomy_test\.csv"):
        workloads.write_subset(src, ["astronomy"], tmp_path / "out2")


def test_workload_configs_are_valid(workloads, tmp_path):
    args = argparse.Namespace(dtype="auto", device="cpu")
    modes = {}
    for w in workloads.WORKLOADS:
        cfg = workloads.workload_config(w, "model-dir", tmp_path, 3, args)
        modes[w.name] = (cfg.permutation_mode, cfg.num_fewshot, cfg.limit, cfg.log_prompts, cfg.score_original)
    assert modes["W1"] == ("none", 0, 3, True, False)
    assert modes["W2"] == ("cyclic", 5, 3, True, False)
    assert modes["W3"] == ("random", 5, 3, True, False)
    assert modes["W4"] == ("cyclic", 0, 3, True, False)
    assert modes["W5"] == ("random", 0, 3, True, True)  # the default --shuffle run: the original order too


def test_workloads_selector_picks_validates_and_dedupes(bench, tmp_path, capsys):
    (tmp_path / "test").mkdir()
    common = ["--model", "some-model", "--mmlu-dir", str(tmp_path)]
    args = bench.parse_args([*common, "--workloads", "w3, W1,W3"])
    assert [w.name for w in args.workloads] == ["W3", "W1"]
    assert [w.name for w in bench.parse_args(common).workloads] == [w.name for w in bench.WORKLOADS]
    for bad in ("W9", " , "):
        with pytest.raises(SystemExit) as err:
            bench.parse_args([*common, "--workloads", bad])
        assert err.value.code == 2
        assert "--workloads: unknown" in capsys.readouterr().err


def test_lmeval_requests_one_per_label(workloads):
    pytest.importorskip("lm_eval", reason="lm-eval is only needed by the benchmark")
    reqs = workloads.lmeval_requests(["p0", "p1"], [2, 3])
    assert [r.args for r in reqs] == [("p0", " A"), ("p0", " B"), ("p1", " A"), ("p1", " B"), ("p1", " C")]
    assert {r.request_type for r in reqs} == {"loglikelihood"}
