"""A shuffle keeps each question's meaning, end to end through the CLI: the prompts a model is shown
(`--log-prompts`), zero-shot and few-shot, from MMLU's and CMMLU's file layouts, hold every
place-naming option at its own letter, every letter reference naming where its options now stand,
every content option (look-alikes included) unchanged, and the gold following its content."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from twinkle_hf.cli import main
from twinkle_hf.prompts.anchors import OptionRoles, classify_options, letter_list
from twinkle_hf.schema import LETTERS

# Real MMLU shapes (options as in MMLU's test set; questions shortened): subject -> rows.
MMLU_ROWS = {
    "security_studies": [
        ("Which concepts belong to just war theory?", "jus in bello.", "jus ad bellum.", "moral nihilism.",
         "all of the above", "D"),
        ("Which are goals of a security protocol?", "Integrity", "Privacy", "Nonrepudiation", "Both A & C", "B"),
        ("Which learning needs labels?", "Supervised learning", "Unsupervised learning", "Both (a) and (b)",
         "Neither (a) nor (b)", "A"),
        ("Which vitamins are fat-soluble?", "A and C", "B6 and B12", "B6 and D", "B12 and E", "C"),
        ("Which colour is the sky?", "red", "green", "blue", "grey", "C"),
        ("Which statements hold?", "A and B only.", "A and C only.", "B and C only.", "A B and C.", "A"),
    ],
    "statistics": [
        ("Which is a robust centre?", "mean", "median", "both of the above.", "the mode", "B"),
        ("Which languages are compiled?", "C, Ruby", "C, C++", "Java", "Python", "B"),
        ("Which of options A and C is right?", "p-value", "q-value", "r-value", "s-value", "A"),
        ("What limits an oscillator?", "Inaccurate.", "Unreliable.", "both A and B.", "none of the above.", "C"),
    ],
}
MMLU_DEV = {
    "security_studies": [("Which are spies?", "agents", "moles", "sleepers", "All of the above", "D"),
                         ("Which are ciphers?", "AES", "RSA", "MD5", "A and B only", "D")],
    "statistics": [("Which are measures of spread?", "variance", "range", "mode", "Both A and B", "D"),
                   ("Which is a test?", "t-test", "z-test", "chi-square", "None of the above", "A")],
}
CMMLU_ROWS = {
    "genetics": [("下列哪些属于书写材料？", "墨水", "纸张", "以上都不对", "A和B均正确", "D"),
                 ("下列哪种是一元醇？", "以上都不对", "甲醇", "乙二醇", "丙三醇", "B"),
                 ("下列组合正确的是（）a甲；b乙；c丙；d丁", "AB", "AC", "BD", "CD", "A"),
                 ("下列哪些可用于粘贴？", "墨水", "纸张", "胶水", "AB", "C"),
                 ("天空是什么颜色？", "红色", "绿色", "蓝色", "灰色", "C")],
}
CMMLU_DEV = {"genetics": [("下列哪些是金属？", "铁", "铜", "以上都是", "以上都不是", "C"),
                          ("下列哪些是气体？", "氧气", "氮气", "水", "A和B", "D"),
                          ("一加一等于几？", "一", "二", "三", "四", "B"),
                          ("二加二等于几？", "二", "三", "四", "五", "C"),
                          ("三加三等于几？", "五", "六", "七", "八", "B")]}


def write_mmlu(root: Path) -> None:
    for split, table in (("test", MMLU_ROWS), ("dev", MMLU_DEV)):
        for subject, rows in table.items():
            (root / split).mkdir(parents=True, exist_ok=True)
            with open(root / split / f"{subject}_{split}.csv", "w", newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerows(rows)


def write_cmmlu(root: Path) -> None:
    for split, table in (("test", CMMLU_ROWS), ("dev", CMMLU_DEV)):
        for subject, rows in table.items():
            (root / split).mkdir(parents=True, exist_ok=True)
            with open(root / split / f"{subject}.csv", "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["", "Question", "A", "B", "C", "D", "Answer"])
                writer.writerows([[str(i), *r] for i, r in enumerate(rows)])


def blocks(prompt: str) -> list[tuple[str, list[str], str | None]]:
    """Each question block of a prompt (examples first): its question, its options as shown (the
    lines "A. ...", "B. ..." just above the answer cue: a question's own lines may look alike), and
    the letter that follows the answer cue (None for the question asked)."""
    out = []
    for chunk in prompt.split("\n\n"):
        lines = chunk.split("\n")
        cue = re.search(r"(?:Answer:|答案：) ?([A-Z])?$", lines[-1])
        if not cue:
            continue
        options: list[str] = []
        last = ""
        for line in reversed(lines[:-1]):
            m = re.match(r"^([A-Z])\. (.*)$", line)
            if not m or (options and LETTERS.index(m.group(1)) != LETTERS.index(last) - 1):
                break
            options.insert(0, m.group(2))
            last = m.group(1)
        assert options and last == "A", chunk
        question = "\n".join(lines[: len(lines) - 1 - len(options)])
        out.append((question, options, cue.group(1)))
    return out


def check_block(shown: list[str], original: list[str], question: str, gold: int, letter: str | None,
                roles: OptionRoles | None = None) -> None:
    """Every promise for one block shown to the model, against the question as written (``roles``:
    what its options are, by hand; None: as classified)."""
    roles = roles or classify_options(question, original)
    assert len(shown) == len(original)
    where: dict[int, int] = {}  # original index -> displayed position
    for j, text in enumerate(shown):
        if text in original and original.index(text) not in roles.refs:
            where[original.index(text)] = j
    refs_at = [j for j in range(len(shown)) if j not in where.values()]
    assert sorted(set(range(len(original))) - set(where)) == sorted(roles.refs)  # only references change text
    for i in roles.pinned:
        assert where[i] == i, (question, shown)  # a place-naming option at its own letter
    for i, j in zip(sorted(roles.refs), refs_at):  # (a question's references are alike enough to pair in order)
        named = sorted(LETTERS[where[n]] for n in roles.refs[i])
        assert letter_list(shown[j]).letters == tuple(named), (question, shown)
    if roles.fixed:
        assert shown == original
    if letter is not None:  # a few-shot example's answer: the gold, wherever it now stands
        gold_at = where.get(gold, refs_at[0] if gold in roles.refs else -1)
        assert letter == LETTERS[gold_at], (question, shown, letter)


def check_run(out: Path, tables: list[dict]) -> dict:
    """Every block of every logged prompt; returns results.json."""
    source = {q: (list(opts), "ABCD".index(a)) for t in tables for rows in t.values() for q, *opts, a in rows}
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    seen_pinned = seen_rewritten = 0
    for r in records:
        for question, shown, letter in blocks(r["prompt"]):
            key = next(q for q in source if question.endswith(q))
            original, gold = source[key]
            check_block(shown, original, key, gold, letter)
        assert r["perm"][r["answer"]] == r["answer_original"]
        seen_pinned += bool(r.get("pinned"))
        seen_rewritten += bool(r.get("rewritten"))
    assert seen_pinned and seen_rewritten
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", ["cyclic", "random"])
@pytest.mark.parametrize("shots", [0, 2])
def test_mmlu_layout_prompts_keep_every_question(tiny_model_dir, tmp_path, mode, shots):
    write_mmlu(tmp_path / "mmlu")
    out = tmp_path / "run"
    rc = main(["--model", str(tiny_model_dir), "--dataset", str(tmp_path / "mmlu"), "--shuffle-mode", mode,
               "--seeds", "4", "--num-fewshot", str(shots), "--log-prompts", "--output-dir", str(out), "--quiet",
               "--device", "cpu"])
    assert rc == 0
    results = check_run(out, [MMLU_ROWS, MMLU_DEV])
    meaning = results["metrics"]["option_meaning"]
    # pinned: just war, learning (both/neither refs are not pins), centre, oscillator; fixed: options A and C
    assert (meaning["pinned"], meaning["fixed_order"], meaning["n_questions"]) == (3, 1, 10)
    assert meaning["rewritten"] == 3  # security goals, learning, oscillator (its "both A and B.")
    assert results["metrics"]["bias_scope"]["letter_metrics_questions"] == 6


@pytest.mark.parametrize("shots", [0, 2])
def test_cmmlu_layout_prompts_keep_every_question(tiny_model_dir, tmp_path, shots):
    write_cmmlu(tmp_path / "cmmlu")
    out = tmp_path / "run"
    rc = main(["--model", str(tiny_model_dir), "--benchmark", f"cmmlu={tmp_path / 'cmmlu'}", "--shuffle-mode",
               "cyclic", "--num-fewshot", str(shots), "--log-prompts", "--output-dir", str(out), "--quiet",
               "--device", "cpu"])
    assert rc == 0
    results = check_run(out, [CMMLU_ROWS, CMMLU_DEV])
    meaning = next(iter(results["datasets"].values()))["metrics"]["option_meaning"]
    # "A和B均正确" names A and B, which only swap (以上都不对 holds C): its letters never need rewriting
    assert (meaning["pinned"], meaning["rewritten"], meaning["fixed_order"]) == (2, 1, 0)


def test_off_shuffles_every_option_as_written(tiny_model_dir, tmp_path, capsys):
    write_mmlu(tmp_path / "mmlu")
    out = tmp_path / "run"
    rc = main(["--model", str(tiny_model_dir), "--dataset", str(tmp_path / "mmlu"), "--shuffle-mode", "cyclic",
               "--keep-option-meaning", "off", "--log-prompts", "--output-dir", str(out), "--quiet",
               "--device", "cpu"])
    assert rc == 0
    source = {q: list(opts) for rows in MMLU_ROWS.values() for q, *opts, _ in rows}
    moved = 0
    for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        assert not {"pinned", "rewritten", "fixed_order"} & set(r)
        (question, shown, _), = blocks(r["prompt"])
        original = source[next(q for q in source if question.endswith(q))]
        assert shown == [original[p] for p in r["perm"]]
        moved += shown[3] != "all of the above" and "all of the above" in shown
    assert moved  # "all of the above" did leave D
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "option_meaning" not in results["metrics"] and results["config"]["keep_option_meaning"] is False


def test_the_console_says_how_many_questions_kept_their_meaning(tiny_model_dir, tmp_path, capsys):
    write_mmlu(tmp_path / "mmlu")
    rc = main(["--model", str(tiny_model_dir), "--dataset", str(tmp_path / "mmlu"), "--shuffle-mode", "cyclic",
               "--output-dir", str(tmp_path / "run"), "--quiet", "--device", "cpu"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "Options: 6 questions (60.0%) have options that name their place or other options: 3 with an option " \
           "kept at its letter, 3 with letter references rewritten, 1 kept in their original order" in printed
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "6 questions (60.0%) have options that name their place" in report


def test_a_bad_value_is_one_line(tiny_model_dir, tmp_path, capsys):
    assert main(["--model", str(tiny_model_dir), "--keep-option-meaning", "maybe", "--output-dir",
                 str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--keep-option-meaning" in err and "must be 'on' or 'off', not 'maybe'" in err and "\n" not in err
