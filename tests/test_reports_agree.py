"""Real runs' results.json and report.md agree with themselves: every proportion block follows the
one interval rule (metrics/intervals.py); the README's first run (its flags, on a tiny model) shows
one PriDe number, counts its prompts one way and has no dataset row repeating the overall row; no
report has an empty line of markup."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from twinkle_hf.cli import main
from twinkle_hf.metrics.intervals import SMALL_N
from twinkle_hf.metrics.uncertainty import wilson_score_interval

# every block that is a share of questions (a mean of per-question scores in [0, 1]), by its key
PROPORTIONS = {"accuracy", "acc_original", "all_correct", "any_correct", "order_sensitivity", "fluctuation",
               "debiased_accuracy", "accuracy_macro", "accuracy_micro", "acc_norm", "acc_bytes", "scored", "written",
               "letter_text_agreement", "choices_only_accuracy", "majority_vote", "mean", "macro_interval"}
NOT_PROPORTIONS = {"rstd", "ckld"}  # bootstrapped, on other scales
RUNS = {"readme": ["--shuffle-mode", "cyclic", "--limit", "5"],  # the README's first run
        "cloze": ["--method", "cloze", "--limit", "2"],
        "probe": ["--probe", "choices-only", "--shuffle-mode", "cyclic", "--limit", "2"],
        "one_each": ["--shuffle-mode", "cyclic", "--limit", "1"]}  # one question per subject: no stderr of its own


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agree")
    for name, flags in RUNS.items():
        out = root / name
        assert main(["--model", str(tiny_model_dir), *flags, "--device", "cpu", "--quiet",
                     "--output-dir", str(out)]) == 0
    return {name: root / name for name in RUNS}


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _blocks(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(path, block) of every dict in the document that has a numeric ``value`` or a ``ci95``."""
    found = []
    if isinstance(node, dict):
        if (isinstance(node.get("value"), float | int) and not isinstance(node.get("value"), bool)) or "ci95" in node:
            found.append((path, node))
        for key, child in node.items():
            found += _blocks(child, f"{path}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _blocks(child, f"{path}/{i}")
    return found


def _key(path: str) -> str:
    """The block's own name: the last key, or its parent's for pass@k's numbered blocks."""
    parts = path.split("/")
    return "pass_at_k" if len(parts) > 1 and parts[-2] == "pass_at_k" else parts[-1]


@pytest.mark.parametrize("run", list(RUNS))
def test_every_proportion_block_follows_the_interval_rule(runs, run):
    doc = _results(runs[run])
    checked = 0
    for path, block in _blocks(doc):
        key = _key(path)
        if key in NOT_PROPORTIONS or ("ci95" not in block and key not in PROPORTIONS | {"pass_at_k"}):
            continue
        assert key in PROPORTIONS | {"pass_at_k"}, f"{path}: an interval on a block the rule does not know"
        value = block.get("value", block.get("macro"))
        if value is None:
            continue
        assert block.get("ci95") is not None, f"{path}: a proportion without an interval"
        low, high = block["ci95"]
        n = block.get("n_effective", block.get("n_questions"))
        assert 0.0 <= low <= value <= high <= 1.0 and high > low, (path, block)
        assert n <= block.get("n_questions", n), f"{path}: an effective n above the questions"
        stderr = block.get("stderr")
        if n < SMALL_N or value in (0.0, 1.0) or not stderr:
            w_low, w_high = wilson_score_interval(value, n)
            assert low <= w_low + 1e-12 and high >= w_high - 1e-12, f"{path}: narrower than Wilson: {block}"
        checked += 1
    assert checked >= {"readme": 60, "cloze": 10, "probe": 40, "one_each": 40}[run]


def test_a_macro_average_is_no_point(runs):
    """A macro average of 6 subjects of 5 questions, or of 1 (no stderr): an interval from its
    members', never [v, v]."""
    macro = _results(runs["readme"])["metrics"]["accuracy_macro"]
    assert macro["n_subjects"] == 6 and macro["ci95"][1] - macro["ci95"][0] > 0.1
    single = _results(runs["one_each"])["metrics"]["accuracy_macro"]
    assert single["n_subjects"] == 6 and "stderr" not in single and "single question" in single["stderr_reason"]
    assert single["ci95"] == pytest.approx(wilson_score_interval(single["value"], 6))


def _report(out: Path) -> list[str]:
    return (out / "report.md").read_text(encoding="utf-8").splitlines()


def test_the_readme_runs_report_has_one_pride_number_with_its_reason(runs):
    doc, lines = _results(runs["readme"]), _report(runs["readme"])
    pride = doc["metrics"]["pride"]
    # 5% of the 28 questions whose options all move (2 keep "all of the above" at D: docs/orders.md)
    assert pride["value"] is None and pride["n_prior_questions"] == 1
    assert doc["metrics"]["bias_scope"]["letter_metrics_questions"] == 28
    (row,) = [line for line in lines if "PriDe" in line]
    assert "PriDe accuracy | n/a" in row and "from 1 of 28 questions" in row and "at least 10" in row
    assert not re.search(r"\d%", row.split("|")[2] + row.split("|")[3])  # no number shown, the reason instead


def test_the_headline_shows_each_shares_interval(runs):
    doc, lines = _results(runs["readme"]), _report(runs["readme"])
    for key, label in (("accuracy", "accuracy (shuffled)"), ("all_correct", "all_correct"),
                       ("any_correct", "any_correct")):
        block = doc["metrics"][key]
        (row,) = [line for line in lines if line.startswith(f"| {label} |")]
        low, high = (f"{100 * b:.1f}" for b in block["ci95"])
        assert f"| {100 * block['stderr']:.1f} (95% {low}–{high}) |" in row, row
    assert "all_correct | 0.0% | 0.0 (95% 0.0–" in "\n".join(lines)  # 0 of 30 is not a point


def test_the_readme_runs_prompts_are_counted_one_way(runs):
    """A repeated prompt is a question's original order that is also one of its cyclic orders: the
    same tokens, scored once. The report says so, and how many the model ran."""
    doc = _results(runs["readme"])
    rows = [json.loads(x) for x in (runs["readme"] / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    distinct = len({(r["dataset"], r["id"], tuple(r["perm"])) for r in rows})
    timing = doc["timing"]
    # 28 questions x (4 cyclic orders + the original) and 2 with "all of the above" kept at D x (3 + 1)
    pinned = {r["id"] for r in rows if r.get("pinned")}
    assert len(pinned) == 2 and len(rows) == 28 * 5 + 2 * 4
    assert timing["prompts"] == len(rows) and timing["repeated_rows"] == len(rows) - distinct > 0
    (line,) = [x for x in _report(runs["readme"]) if " prompts in " in x]
    assert f"30 questions, {len(rows)} prompts in " in line
    assert f"{timing['repeated_rows']} prompts repeated another one" in line and f"the model ran {distinct}" in line


def test_one_dataset_has_no_row_repeating_the_overall_row(runs):
    lines = _report(runs["readme"])
    table = [x for x in lines[lines.index("## Per subject"):] if x.startswith("| ")][1:]  # after the header
    assert len(table) == 6 + 1 and table[-1].startswith("| **overall** |")  # 6 subjects and overall
    assert sum(x.startswith("| **") for x in table) == 1


@pytest.mark.parametrize("run", list(RUNS))
def test_no_report_has_an_empty_line_of_markup(runs, run):
    for line in _report(runs[run]):
        assert not re.fullmatch(r"\s*(\*\*\s*\*\*|>\s*|#+\s*|\|\s*\|)\s*", line), f"{run}: {line!r}"


def test_a_suites_macro_row_gets_an_interval_from_its_members():
    from twinkle_hf.outputs.suites import suite_block

    members = {"a": (0.2, 0.0, 5), "b": (0.6, 0.05, 100)}  # a spread of 0 on 5 questions, and 100 questions
    datasets = {name: {"metrics": {"accuracy": {"value": v, "stderr": se, "n_questions": n}, "n_questions": n}}
                for name, (v, se, n) in members.items()}
    block = suite_block({name: {"suite": "s"} for name in members}, datasets)["s"]
    macro = block["macro_interval"]
    assert macro["value"] == pytest.approx(block["macro"]) == pytest.approx(0.4)
    assert macro["stderr"] == pytest.approx(0.05 / 2) and macro["n_effective"] == pytest.approx(4 / 0.21, abs=0.01)
    low, high = macro["ci95"]
    assert (low, high) == pytest.approx(wilson_score_interval(0.4, 4 / 0.21))  # under 30 questions' worth
