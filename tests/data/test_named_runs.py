"""Runs by name beyond one prompt: a release whose gold option sits in one fixed place (TruthfulQA MC1
lists it first), and suites (several entries, each reported, and their macro row)."""

from __future__ import annotations

import json

import benchmark_docs as docs

from twinkle_hf.cli import main


def test_truthfulqa_gold_first_scores_a_planted_a_model_100_percent_until_shuffled(tmp_path, biased_model_dir,
                                                                                   capsys):
    """The model answers "A" whatever it is asked: in TruthfulQA's released order that is always right;
    under --shuffle it is right exactly where the gold option was drawn to A (chance), and the
    unshuffled run says why its number means nothing."""
    root = tmp_path / "tqa"
    docs.write_snapshot(root, "multiple_choice", {"validation": docs.truthfulqa("validation", 24)})
    argv = ["--model", str(biased_model_dir), "--benchmark", f"truthfulqa_mc1={root}", "--quiet"]
    assert main([*argv, "--output-dir", str(tmp_path / "plain")]) == 0
    warned = capsys.readouterr().err
    assert "truthfulqa_mc1 lists the correct option first (A) in every question" in warned and "--shuffle" in warned
    plain = json.loads((tmp_path / "plain" / "results.json").read_text(encoding="utf-8"))
    assert plain["metrics"]["accuracy"]["value"] == 1.0
    assert main([*argv, "--shuffle", "--seeds", "4", "--output-dir", str(tmp_path / "shuffled")]) == 0
    assert "lists the correct option" not in capsys.readouterr().err
    rows = [json.loads(line) for line in (tmp_path / "shuffled" / "predictions.jsonl").read_text().splitlines()]
    shuffled = [r for r in rows if r["seed"] != -1]
    assert all(r["pred"] == 0 for r in shuffled)  # still "A", every time
    at_a = sum(r["answer"] == 0 for r in shuffled) / len(shuffled)  # how often the draw put the gold at A
    result = json.loads((tmp_path / "shuffled" / "results.json").read_text(encoding="utf-8"))
    assert result["metrics"]["accuracy"]["value"] == at_a < 0.5  # 3 or 4 options: chance, not 100%


def test_a_suite_runs_each_entry_and_reports_a_macro_row(tmp_path, tiny_model_dir):
    """``--benchmark taiwan=PATH``: TMMLU+, TMLU and Formosa-bench from PATH/<name>, each in its own
    layout; results.json and report.md hold a row per entry and their unweighted mean."""
    from benchmark_files import awkward_rows, write_tmmluplus

    root = tmp_path / "taiwan"
    write_tmmluplus(root, ["accounting"])
    docs.write_snapshot(root / "tmlu", "AST_biology", {"test": docs.tmlu("test", 4), "dev": docs.tmlu("dev", 2)})
    formosa = [dict(zip(["question", "A", "B", "C", "D", "answer"], r)) for r in awkward_rows("台灣", 5, zh=True)]
    docs.write_snapshot(root / "formosa_bench", "data", {"test": formosa})
    out = tmp_path / "run"
    assert main(["--model", str(tiny_model_dir), "--benchmark", f"taiwan={root}", "--limit", "3", "--quiet",
                 "--output-dir", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    block = doc["suites"]["taiwan"]
    assert list(block["members"]) == ["tmmluplus", "tmlu", "formosa_bench"]
    values = [doc["datasets"][name]["metrics"]["accuracy"]["value"] for name in block["members"]]
    assert block["macro"] == sum(values) / 3 and block["n_members"] == 3
    assert all(doc["benchmarks"][name]["suite"] == "taiwan" for name in block["members"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| taiwan | tmlu |" in report and "**macro (mean of 3)**" in report


def test_core_is_the_olmes_set():
    from twinkle_hf.data.registry import BENCHMARKS
    from twinkle_hf.data.suites import SUITES, expand_suites

    assert [a for a, _ in expand_suites(("core",))] == ["arc_challenge", "arc_easy", "commonsense_qa", "hellaswag",
                                                         "mmlu", "openbookqa", "piqa", "siqa", "winogrande"]
    assert expand_suites(("core=/x", "mmlu"))[-1] == ("mmlu", "") and expand_suites(("core=/x",))[0][0] == \
        "arc_challenge=/x/arc_challenge"
    assert all(m in BENCHMARKS for s in SUITES.values() for m in s.members)


def test_the_listing_is_grouped_and_a_benchmark_shows_each_formulation(tmp_path, capsys):
    from twinkle_hf.data.benchmark import GROUPS
    from twinkle_hf.data.registry import BENCHMARKS

    assert main(["benchmarks"]) == 0
    table = capsys.readouterr().out
    heads = [table.index(f"## {g[0].upper()}{g[1:]} (") for g in GROUPS] + [table.index("## Suites")]
    assert heads == sorted(heads) and "| core | " in table and "--benchmark taiwan --dry-run" in table
    assert "it adds the time (in all and per member) once one run of model M has finished" in table
    assert all(f"| {name}" in table for name in BENCHMARKS) and table.count("FIXED ORDER") == 3
    root = tmp_path / "wino"
    docs.write_snapshot(root, "winogrande_xl", {"validation": docs.winogrande("validation", 2)})
    assert main(["benchmarks", f"winogrande={root}"]) == 0
    shown = capsys.readouterr().out
    assert "Sarah gave the book to Maria because _ was leaving.\nA. Sarah\nB. Maria\nAnswer:" in shown  # letters
    assert "context 1: 'Sarah gave the book to Maria because Sarah'" in shown  # the partial requests
    assert "context 2: 'Sarah gave the book to Maria because Maria'" in shown
    assert "scored continuation (each context): ' was leaving.'" in shown
