"""scripts/bench_generate_batch.py: its arguments, and one small run on the real SmolLM2-135M-Instruct
whose texts must equal transformers' generate_batch's. No timing is checked."""

from __future__ import annotations

import json

import pytest
from helpers import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("bench_generate_batch")


def test_cb_fields_are_parsed_as_numbers_flags_or_text(script):
    args = script.parse_args(["--cb", "max_batch_tokens=2048", "--cb", "max_memory_percent=0.5",
                              "--cb", "allow_block_sharing=false", "--cb", "scheduler_type=fifo"])
    assert args.cb == {"max_batch_tokens": 2048, "max_memory_percent": 0.5, "allow_block_sharing": False,
                       "scheduler_type": "fifo"}
    with pytest.raises(SystemExit):
        script.parse_args(["--cb", "no-equals-sign"])


@pytest.mark.slow
def test_one_small_run_prints_identical_texts(script, tmp_path, capsys):
    if not script.MMLU_DIR.is_dir() or not script.GGUF.is_file():
        pytest.skip("needs ../shared (SmolLM2-135M-Instruct and MMLU)")
    out = tmp_path / "gb.json"
    assert script.main(["--questions", "1", "--repeats", "1", "--cb", "max_batch_tokens=2048", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["prompts"] == 3 * 1 * 4  # 3 subjects, 1 question, 4 cyclic orders
    assert report["identical_texts"] == report["prompts"], table  # greedy, same ids, same stop: the same texts
    assert f"| {report['prompts']}/{report['prompts']} |" in table
