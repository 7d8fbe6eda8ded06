"""--dry-run: counts that match what the run then does, no weights loaded, nothing written, and a
time estimate once a run of the model has been measured."""

from __future__ import annotations

import json
import re

import pytest

from twinkle_hf.cli import main


def _table_row(text: str) -> list[str]:
    row = next(line for line in text.splitlines() if line.startswith("| mmlu"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_dry_run_counts_what_the_run_does_without_loading_weights(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch,
                                                                  capsys):
    import twinkle_hf.engine.loading

    monkeypatch.setenv("TWINKLE_HF_CACHE", str(tmp_path / "cache"))  # no speed measured yet
    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--shuffle-mode", "cyclic",
            "--num-fewshot", "1", "--device", "cpu", "--quiet", "--output-dir", str(tmp_path / "run")]

    def no_weights(*_a, **_k):
        raise AssertionError("a dry run loaded the weights")

    with monkeypatch.context() as patch:
        patch.setattr(twinkle_hf.engine.loading, "load_model", no_weights)
        assert main(args + ["--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert not (tmp_path / "run").exists() and "No time estimate" in dry
    _, subjects, questions, orders, prompts, tokens, shared, longest = _table_row(dry)
    assert "The following are multiple choice questions" in dry.split("Example prompt")[1]
    assert re.fullmatch(r"[\d,]+ \(.+\)", longest)

    assert main(args) == 0  # the real run, then the same dry run again
    capsys.readouterr()
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    timing, rows = results["timing"], (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert int(prompts.replace(",", "")) == len(rows) == timing["prompts"]
    assert int(questions) == timing["questions"] and int(orders) == len({json.loads(r)["order"] for r in rows})
    assert int(tokens.replace(",", "")) == timing["tokens"]
    assert int(shared.replace(",", "")) == timing["computed_tokens"] < timing["tokens"]
    assert int(subjects) == len({json.loads(r)["subject"] for r in rows})
    assert main(args + ["--dry-run"]) == 0
    estimate = re.search(r"Estimated time: (\d+) s .*at ([\d,]+) tokens/s", capsys.readouterr().out)
    assert estimate is not None
    rate = timing["computed_tokens"] / timing["seconds"]
    assert int(estimate.group(2).replace(",", "")) == pytest.approx(rate, rel=0.01, abs=1)


def test_dry_run_shows_its_progress_and_counts_the_same(tiny_model_dir, mmlu_dir, monkeypatch, capsys):
    """Full MMLU 5-shot took minutes with nothing on screen: each step is said on stderr, and tokenizing goes
    in chunks under a progress bar, with the counts of one call."""
    import twinkle_hf.prompts.prepare

    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--shuffle-mode", "cyclic", "--num-fewshot",
            "1", "--device", "cpu", "--dry-run"]
    assert main([*args, "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    monkeypatch.setattr(twinkle_hf.prompts.prepare, "TOKENIZE_CHUNK", 6)  # several chunks, the last one shorter
    assert main(args) == 0
    shown = capsys.readouterr()
    assert _table_row(shown.out) == _table_row(quiet.out)
    prompts = _table_row(quiet.out)[4]
    for step in ("dry run: loading the tokenizer of", "dry run: reading the data", "dry run: mmlu: 14 questions read",
                 "tokenizing prompts", f"{prompts}/{prompts}"):
        assert step in shown.err, step
