"""Runs by name beyond one prompt: a release whose gold option sits in one fixed place (TruthfulQA MC1
lists it first), and suites (several entries, each reported, and their macro row)."""

from __future__ import annotations

import json

import benchmark_docs as docs
import pytest

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


def test_core_is_the_olmes_set(capsys):
    """OLMES's standard ten tasks; ``benchmarks core`` lists them and says in one line where its runs
    differ from OLMES's procedure (never that they are "the set OLMES reports")."""
    from twinkle_hf.data.registry import BENCHMARKS
    from twinkle_hf.data.suites import SUITES, expand_suites

    olmes = ["arc_challenge", "arc_easy", "boolq", "commonsense_qa", "hellaswag", "mmlu", "openbookqa", "piqa", "siqa",
             "winogrande"]
    assert [a for a, _ in expand_suites(("core",))] == olmes
    assert expand_suites(("core=/x", "mmlu"))[-1] == ("mmlu", "") and expand_suites(("core=/x",))[0][0] == \
        "arc_challenge=/x/arc_challenge"
    assert all(m in BENCHMARKS for s in SUITES.values() for m in s.members)
    assert main(["benchmarks", "core"]) == 0
    listed, note = capsys.readouterr().out.strip().split("\n")
    assert listed.startswith("core: OLMES's ten tasks (10): " + ", ".join(olmes) + ";")
    assert note.startswith("Note: run as lm-eval asks them, not by OLMES's procedure") and "curated 5-shot" in note
    assert "OLMES reports" not in listed + note


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


def test_a_suites_macro_takes_each_members_formulation_as_olmes_reports(tmp_path, tiny_model_dir, monkeypatch):
    """``--method logit+cloze`` on a suite: each member is counted under the better of letters (MCF)
    and cloze (CF: acc_norm; Winogrande's acc under partial scoring; TruthfulQA MC2's mass), says which,
    and the macro row is their mean; results.json, report.md and ``twinkle-hf report`` agree."""
    from twinkle_hf.data.suites import SUITES, Suite
    from twinkle_hf.outputs.report import regenerate

    members = {"winogrande": ("winogrande_xl", docs.winogrande), "truthfulqa_mc2": ("multiple_choice", docs.truthfulqa),
               "boolq": ("boolq", docs.boolq), "piqa": ("default", docs.piqa)}
    root = tmp_path / "mix"
    for name, (config, make) in members.items():
        docs.write_snapshot(root / name, config, {"validation": make("validation", 6)})
    monkeypatch.setitem(SUITES, "mix", Suite("mix", "a test suite", tuple(members)))
    out = tmp_path / "run"
    assert main(["--model", str(tiny_model_dir), "--benchmark", f"mix={root}", "--method", "logit+cloze", "--quiet",
                 "--output-dir", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    block = doc["suites"]["mix"]
    assert list(block["members"]) == list(members) and block["n_members"] == 4
    cf_metrics = {"winogrande": "acc", "truthfulqa_mc2": "acc (the mass on the true answers)", "boolq": "acc_norm",
                  "piqa": "acc_norm"}
    chosen = []
    for name, member in block["members"].items():
        both = doc["datasets"][name]["metrics"]["formulations"]
        assert both["cf"]["metric"] == cf_metrics[name]
        better = "letters" if both["mcf"]["value"] >= both["cf"]["value"] else "cloze"
        assert member["formulation"] == better and member["accuracy"] == max(both["mcf"]["value"], both["cf"]["value"])
        assert cf_metrics[name] in member["metric"] and member["questions"] == 6
        chosen.append(member["accuracy"])
    assert block["macro"] == pytest.approx(sum(chosen) / 4)
    assert sum(block["formulations"].values()) == 4
    report = (out / "report.md").read_text(encoding="utf-8")
    first = block["members"]["winogrande"]
    assert f"| mix | winogrande | {100 * first['accuracy']:.1f}% | {first['formulation']}: max(" in report
    assert f"**macro (mean of 4)** | **{100 * block['macro']:.1f}%**" in report
    assert regenerate(out)["suites"]["mix"] == block


def test_the_suite_block_counts_each_member_as_it_ran():
    """Mixed formulations, by hand: letters only, cloze only (acc_norm; acc where lm-eval has no other),
    both with cloze better, both with letters better."""
    from twinkle_hf.outputs.suites import suite_block

    both = lambda mcf, cf: {"accuracy": {"value": mcf}, "formulations": {
        "mcf": {"value": mcf}, "cf": {"value": cf, "metric": "acc_norm"},
        "max": {"value": max(mcf, cf), "stderr": 0.1, "formulation": "letters" if mcf >= cf else "cloze"}}}
    datasets = {"a": {"metrics": {"accuracy": {"value": 0.5, "stderr": 0.05, "n_questions": 9}}},
                "b": {"metrics": {"formulation": "cloze", "accuracy": {"value": 0.2}, "acc_norm": {"value": 0.4},
                                  "cf_metric": "acc_norm", "n_questions": 3}},
                "c": {"metrics": {"formulation": "cloze", "accuracy": {"value": 0.7}, "cf_metric": "acc"}},
                "d": {"metrics": both(0.3, 0.6)}, "e": {"metrics": both(0.9, 0.1)}}
    block = suite_block({name: {"suite": "s"} for name in datasets}, datasets)["s"]
    got = {name: (m["accuracy"], m["formulation"], m["metric"].split(" ")[0]) for name, m in block["members"].items()}
    assert got == {"a": (0.5, "letters", "accuracy"), "b": (0.4, "cloze", "acc_norm"), "c": (0.7, "cloze", "acc"),
                   "d": (0.6, "cloze", "max(letters"), "e": (0.9, "letters", "max(letters")}
    assert block["macro"] == pytest.approx((0.5 + 0.4 + 0.7 + 0.6 + 0.9) / 5)
    assert block["formulations"] == {"letters": 2, "cloze": 3} and block["n_members"] == 5
    assert block["members"]["a"]["questions"] == 9 and block["members"]["b"]["questions"] == 3
