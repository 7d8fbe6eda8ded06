"""scripts/bench_plan.py: lm-eval's batch plan by hand, and a small run whose counted forward
passes match what the scorer reports. No timing here."""

from __future__ import annotations

import pytest
from helpers import load_script


@pytest.fixture(scope="module")
def plan():
    return load_script("bench_plan")


def test_lmeval_plan_pads_each_batch_to_its_longest_prompt(plan):
    passes, real = plan.lmeval_plan([3, 10, 7, 5, 1], batch=2)
    assert passes == [2 * 10, 2 * 5, 1 * 1] and real == 26  # longest first: (10, 7), (5, 3), (1)


def test_side_uses_the_fit(plan):
    out = plan.side([100, 300], real=200, prompts=4)
    assert (out["passes"], out["per_1000"], out["median"], out["run_real"]) == (2, 500.0, 200, 2.0)
    assert out["h200_s"] == pytest.approx(2 * plan.GPU_PASS_S + 400 * plan.GPU_TOKEN_S)


@pytest.mark.slow
def test_a_small_workload_counts_the_passes_the_scorer_reports(plan, monkeypatch, capsys):
    if not plan.QWEN.is_dir() or not plan.MMLU_DIR.is_dir():
        pytest.skip("needs ../shared (the Qwen tokenizer and MMLU)")
    from twinkle_hf.engine import batching

    for name in ("AUTO_TOKEN_BUDGET", "AUTO_MAX_ROWS", "PASS_TOKENS"):  # plan_as_cuda changes copies
        monkeypatch.setattr(batching, name, dict(getattr(batching, name)))
    assert plan.main(["--workloads", "W4,W5", "--questions", "2"]) == 0
    table = capsys.readouterr().out
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| W")]
    assert [r[0] for r in rows] == ["| W4", "| W5"]
    # 12 subjects, 2 questions, 4 cyclic / 6 random orders; one of the 24 questions keeps "all of the above"
    # at D, so it has 3 cyclic orders (docs/orders.md)
    assert [int(r[1]) for r in rows] == [12 * 2 * 4 - 1, 12 * 2 * 6]
    assert batching.AUTO_TOKEN_BUDGET["cpu"] == batching.AUTO_TOKEN_BUDGET["cuda"]  # it planned as on CUDA
