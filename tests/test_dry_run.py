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
    import twinkle_hf.models.loading

    monkeypatch.setenv("TWINKLE_HF_CACHE", str(tmp_path / "cache"))  # no speed measured yet
    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--shuffle-mode", "cyclic",
            "--num-fewshot", "1", "--device", "cpu", "--quiet", "--output-dir", str(tmp_path / "run")]

    def no_weights(*_a, **_k):
        raise AssertionError("a dry run loaded the weights")

    with monkeypatch.context() as patch:
        patch.setattr(twinkle_hf.models.loading, "load_model", no_weights)
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


def _plan_rows(text: str) -> dict[str, list[int]]:
    """The dry run's table: name -> [subjects, questions, orders, prompts, tokens, after sharing]."""
    rows = [line for line in text.splitlines() if line.startswith("| mmlu")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return {c[0]: [int(x.replace(",", "")) for x in c[1:7]] for c in cells}


@pytest.mark.parametrize(("method", "parts"), [("cloze", ["mmlu"]),
                                               ("logit+cloze", ["mmlu (letters)", "mmlu (cloze)"])])
def test_a_cloze_dry_run_counts_every_part_the_run_then_runs(tiny_model_dir, mmlu_dir, tmp_path, capsys, method,
                                                             parts):
    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--method", method, "--shuffle-mode",
            "cyclic", "--device", "cpu", "--quiet", "--output-dir", str(tmp_path / "run")]
    assert main(args + ["--dry-run"]) == 0
    plan = _plan_rows(capsys.readouterr().out)
    assert list(plan) == parts
    assert main(args) == 0
    timing = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["timing"]
    assert sum(p[3] for p in plan.values()) == timing["prompts"]
    assert sum(p[4] for p in plan.values()) == timing["tokens"]
    assert sum(p[5] for p in plan.values()) == timing["computed_tokens"] < timing["tokens"]
    assert plan[parts[-1]][2] == 1 and plan[parts[-1]][3] == sum(4 for _ in range(plan[parts[-1]][1]))  # k = 4


def test_a_written_dry_run_counts_both_halves_and_the_new_tokens(tiny_model_dir, mmlu_dir, capsys):
    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--method", "logit+pattern", "--limit", "2",
            "--max-new-tokens", "7", "--device", "cpu", "--dry-run"]
    capsys.readouterr()
    assert main(args) == 2  # no chat template: said before anything is prepared
    assert "has none" in capsys.readouterr().err
    assert main(args + ["--no-chat-template"]) == 0
    out = capsys.readouterr().out
    plan = _plan_rows(out)
    assert list(plan) == ["mmlu (letters)", "mmlu (written)"]
    letters, written = plan.values()
    assert letters[3] == written[3] and written[4] > letters[4]  # the same prompts, asking for a written answer
    assert f"Generation adds at most {7 * written[3]:,} new tokens" in out


def test_a_suites_estimate_gives_each_member_its_time(tmp_path):
    """With a measured rate (100 tokens/s here), the estimate is split per dataset (a suite's members):
    each one's tokens after prefix sharing over the rate, beside the total."""
    from twinkle_hf.dry_run import DatasetPlan, describe, record_rate
    from twinkle_hf.settings.config import EvalConfig

    cfg = EvalConfig(model=str(tmp_path / "m"), device="cpu")
    record_rate(cfg, {"computed_tokens": 1000, "seconds": 10.0})
    plans = [DatasetPlan("tmmluplus", 2, 10, 1, 10, 5000, 3000, 200, "x"),
             DatasetPlan("tmlu", 1, 5, 1, 5, 900, 900, 190, "y")]
    text = describe(plans, "", cfg)
    assert "Estimated time: 39 s (at 100 tokens/s" in text and "per dataset: tmmluplus 30 s, tmlu 9 s" in text
    assert "per dataset" not in describe(plans[:1], "", cfg)
