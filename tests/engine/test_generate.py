"""Generation mode end to end: planted tiny models that always write the same text prove that the
letter is extracted (never from a think block), that unparsed and truncated answers are counted,
that batch size and process count change nothing, and that the reports work on such runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import OomOver, make_model, make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.engine.generate import generate_texts, stop_token_ids
from twinkle_hf.engine.plan import GenerationSettings

ROOT = Path(__file__).resolve().parents[2]
DECOY = ["<think>", "Maybe A", "</think>", "\n\nThe answer is ", "\\boxed{C}"]


def _writer_dir(tmp_path_factory, name: str, pieces: list[str], stop: bool = True) -> Path:
    tok = make_tokenizer()
    return save_model_dir(tmp_path_factory.mktemp(name) / "model", tok, make_writer_model(tok, pieces, stop))


@pytest.fixture(scope="module")
def decoy_dir(tmp_path_factory) -> Path:
    """Writes a think block that says A, then boxes C, after any prompt."""
    return _writer_dir(tmp_path_factory, "decoy", DECOY)


def _run(out: Path, model: Path, *args: str) -> tuple[dict, list[dict]]:
    assert main(["--model", str(model), "--output-dir", str(out), "--quiet", "--device", "cpu", *args]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return results, rows


def test_the_boxed_letter_is_read_and_the_think_block_never(decoy_dir, all_a_dir, tmp_path):
    results, rows = _run(tmp_path / "run", decoy_dir, "--dataset", str(all_a_dir), "--method", "box",
                         "--shuffle-mode", "cyclic", "--max-new-tokens", "16", "--log-prompts")
    for r in rows:
        assert r["output"] == "".join(DECOY) and r["reasoning"] == "Maybe A"
        assert r["parsed"] and not r["truncated"] and r["new_tokens"] == len(DECOY)
        assert r["pred"] == 2 and r["pred_original"] == r["perm"][2] and "probs" not in r
        assert r["prompt"].endswith("in the form \\boxed{X}.")
    for name, k in (("three", 3), ("four", 4), ("five", 5)):  # always "C" under cyclic orders: exactly 1/k
        block = results["datasets"]["all_a"]["subjects"][name]
        assert block["accuracy"]["value"] == pytest.approx(1 / k)
        assert block["letter_dist"]["C"]["pred"] == 1.0 and block["letter_dist"]["unparsed"]["pred"] == 0.0
    metrics = results["metrics"]
    assert metrics["unparsed_rate"]["value"] == 0.0 and metrics["truncated"]["rows"] == 0
    assert metrics["all_correct"]["value"] == 0.0 and metrics["any_correct"]["value"] == 1.0
    for name in ("debiased_accuracy", "pride", "ece", "brier"):
        assert metrics[name]["value"] is None and "generation mode" in metrics[name]["reason"]
    assert "letter_mass" not in metrics and "The model predicts C 100%" in (tmp_path / "run" / "report.md").read_text()


def test_pattern_mode_reads_the_last_statement_after_the_think_block(tmp_path_factory, all_a_dir, tmp_path):
    model = _writer_dir(tmp_path_factory, "zh", ["思考：答案是A", "</think>", "答案：（B）"])
    results, rows = _run(tmp_path / "run", model, "--dataset", str(all_a_dir), "--method", "pattern",
                         "--prompt-lang", "zh", "--limit", "2")
    assert {r["pred"] for r in rows} == {1} and rows[0]["reasoning"] == "思考：答案是A"
    assert results["metrics"]["accuracy"]["value"] == 0.0  # gold is always A


def test_unparsed_and_truncated_answers_are_counted_wrong(tmp_path_factory, all_a_dir, tmp_path):
    model = _writer_dir(tmp_path_factory, "rambling", ["I am not sure", " hmm"], stop=False)
    results, rows = _run(tmp_path / "run", model, "--dataset", str(all_a_dir), "--method", "pattern",
                         "--shuffle", "--seeds", "2", "--limit", "2", "--max-new-tokens", "5")
    for r in rows:
        assert r["output"] == "I am not sure hmm hmm hmm hmm" and r["truncated"] and r["new_tokens"] == 5
        assert (r["pred"], r["pred_original"], r["parsed"], r["correct"]) == (-1, -1, False, False)
    metrics = results["metrics"]
    assert metrics["unparsed_rate"] == {"value": 1.0, "rows": len(rows), "n_rows": len(rows)}
    assert metrics["truncated"]["value"] == 1.0 and metrics["truncated"]["unparsed_rows"] == len(rows)
    assert metrics["accuracy"]["value"] == 0.0 and metrics["letter_dist"]["unparsed"]["pred"] == 1.0
    assert all(share["pred"] == 0.0 for letter, share in metrics["letter_dist"].items() if letter != "unparsed")
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "| unparsed | 100.0% |" in report and "| truncated | 100.0% |" in report
    assert "No letter could be extracted from 100% of its answers" in report and "The model predicts" not in report


def test_report_and_compare_work_on_generation_runs(decoy_dir, all_a_dir, tmp_path):
    args = ["--dataset", str(all_a_dir), "--method", "box", "--shuffle-mode", "cyclic", "--limit", "2"]
    before, _ = _run(tmp_path / "a", decoy_dir, *args)
    _run(tmp_path / "b", decoy_dir, *args, "--batch-size", "1")
    assert main(["report", str(tmp_path / "a")]) == 0
    after = json.loads((tmp_path / "a" / "results.json").read_text(encoding="utf-8"))
    assert after["metrics"] == before["metrics"]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--output", str(tmp_path / "c.md")]) == 0
    assert "| accuracy | " in (tmp_path / "c.md").read_text(encoding="utf-8")


def test_greedy_decoding_is_the_same_in_any_batch_and_equals_transformers_generate():
    tok = make_tokenizer()
    model = make_model(tok, seed=3)
    prompts = tok(["What is 2 + 2? A. 3 B. 4 Answer:", "Which of these is a mammal?", "x", "A. shark B. whale"])
    ids = prompts["input_ids"]
    runs = [generate_texts(model, ids, GenerationSettings(max_new_tokens=12, stop_ids=stop_token_ids(model, tok),
                                                          batch_size=size, progress=False)).tokens
            for size in (1, 3, "auto")]
    assert runs[0] == runs[1] == runs[2]
    for row, tokens in zip(ids, runs[0]):
        ref = model.generate(torch.tensor([row]), max_new_tokens=12, do_sample=False,
                             pad_token_id=tok.eos_token_id)[0, len(row):].tolist()
        assert tokens == (ref[:ref.index(tok.eos_token_id)] if tok.eos_token_id in ref else ref)


def test_sampling_depends_on_the_row_and_seed_not_on_the_batch():
    tok = make_tokenizer()
    model = make_model(tok, seed=3)
    ids = tok(["What is 2 + 2?", "Which of these is a mammal?", "x"])["input_ids"]

    def sample(seed: int, size: int | str) -> list[list[int]]:
        settings = GenerationSettings(max_new_tokens=10, temperature=1.0, top_p=0.9, seed=seed, batch_size=size,
                                      progress=False)
        return generate_texts(model, ids, settings, keys=[11, 12, 13]).tokens

    assert sample(5, 1) == sample(5, 3) != sample(6, 3)


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "regex"], "--answer-regex goes with --method regex"),
    (["--method", "regex", "--answer-regex", "[A-D]"], "has 0 capturing groups"),
    (["--answer-regex", "Answer: ([A-D])"], "--answer-regex goes with --method regex"),
    (["--method", "box", "--temperature", "-1"], "--temperature must be a number"),  # the flag as typed
    (["--method", "box", "--max-new-tokens", "0"], "--max-new-tokens must be an integer >= 1"),
])
def test_bad_generation_settings_say_what_to_fix(decoy_dir, tmp_path, capsys, args, message):
    assert main(["--model", str(decoy_dir), "--output-dir", str(tmp_path / "x"), "--quiet", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_two_processes_generate_what_one_does(decoy_dir, all_a_dir, tmp_path):
    args = ["scripts/eval.py", "--model", str(decoy_dir), "--dataset", str(all_a_dir), "--method", "box",
            "--shuffle", "--seeds", "2", "--limit", "3", "--batch-size", "2", "--quiet", "--device", "cpu"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    for name, launcher in (("one", [sys.executable]), ("two", [sys.executable, "-m", "torch.distributed.run",
                                                                 "--nproc_per_node", "2"])):
        proc = subprocess.run(launcher + args + ["--output-dir", str(tmp_path / name)], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    one, two = ((tmp_path / n / "predictions.jsonl").read_text(encoding="utf-8") for n in ("one", "two"))
    assert one == two and len(one.splitlines()) == 9 * 3


def test_decoding_from_a_shared_prefix_writes_what_decoding_in_full_does():
    tok = make_tokenizer()
    model = make_model(tok, seed=4)
    header = "The following are multiple choice questions (with answers) about biology and the sea. "
    stem = header + "Question: which of these animals is a mammal that lives in the sea and breathes air? "
    other = header + "Question: which of these lives in fresh water only, and never in the sea? "
    ids = tok([stem + tail for tail in ("A. shark B. whale", "A. whale B. shark", "A. tuna", "Answer:")]
              + [other + "A. trout", other + "B. pike"])["input_ids"]
    ids.append(tok("An unrelated short prompt")["input_ids"])
    settings = GenerationSettings(max_new_tokens=10, stop_ids=stop_token_ids(model, tok), batch_size=2,
                                  progress=False)
    full = generate_texts(model, ids, settings)
    shared = generate_texts(model, ids, settings, groups=["q"] * 4 + ["o", "o", "other"])
    assert shared.stats.shared_prefixes == 2 and full.stats.shared_prefixes == 0
    assert shared.stats.computed_tokens < full.stats.computed_tokens
    assert shared.tokens == full.tokens
    for row, tokens in zip(ids, shared.tokens):
        ref = model.generate(torch.tensor([row]), max_new_tokens=10, do_sample=False,
                             pad_token_id=tok.eos_token_id)[0, len(row):].tolist()
        assert tokens == (ref[:ref.index(tok.eos_token_id)] if tok.eos_token_id in ref else ref)


def _rows_of(out: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(r["id"], r["order"], r["sample"], r["output"], r["pred"], r["truncated"]) for r in rows]


def test_a_crashed_generation_run_resumes_to_the_same_answers(tiny_model_dir, all_a_dir, tmp_path, monkeypatch):
    from twinkle_hf.engine.decode import Decoder

    args = ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--method", "pattern", "--shuffle-mode",
            "cyclic", "--samples", "2", "--temperature", "1", "--max-new-tokens", "4", "--batch-size", "2",
            "--quiet", "--device", "cpu"]
    assert main(args + ["--output-dir", str(tmp_path / "whole")]) == 0
    prefill, calls = Decoder._prefill, []

    def crash_on_the_fourth_prefill(*a, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return prefill(*a, **kw)

    broken = tmp_path / "broken"
    scores = broken / ".partial" / "scores.0.jsonl"
    saved = []
    for resume in ([], ["--resume"]):  # crashes twice, the second time later
        calls.clear()
        with monkeypatch.context() as patch:
            patch.setattr(Decoder, "_prefill", crash_on_the_fourth_prefill)
            assert main(args + ["--output-dir", str(broken)] + resume) == 130
        saved.append(len(scores.read_text(encoding="utf-8").splitlines()))
        assert not (broken / "results.json").exists()
    assert 0 < saved[0] < saved[1] < 180
    assert main(args + ["--output-dir", str(broken), "--resume"]) == 0
    whole = _rows_of(tmp_path / "whole")
    assert _rows_of(broken) == whole and len(whole) == 2 * 6 * (4 + 5 + 6)  # 2 samples; k orders + the original
    results = json.loads((broken / "results.json").read_text(encoding="utf-8"))
    assert results["timing"]["resumed_rows"] == saved[1] and not (broken / ".partial").exists()
    assert results["metrics"] == json.loads((tmp_path / "whole" / "results.json").read_text())["metrics"]


def test_out_of_memory_while_decoding_halves_the_batch_and_keeps_the_answers():
    tok = make_tokenizer()
    model = make_model(tok, seed=4)
    stem = "Question: which of these animals is a mammal that lives in the sea and breathes air? "
    ids = tok([stem + tail for tail in ("A. shark B. whale", "A. whale B. shark", "A. tuna B. cod")] * 2
              + ["short one", "another short prompt"])["input_ids"]
    groups = ["q"] * 3 + ["r"] * 3 + ["s", "t"]
    settings = GenerationSettings(max_new_tokens=8, stop_ids=stop_token_ids(model, tok), progress=False)
    want = generate_texts(model, ids, settings, groups=groups)
    got = generate_texts(OomOver(model, limit=100), ids, settings, groups=groups)
    assert got.stats.oom_retries >= 1 and got.stats.shared_prefixes == 2
    assert got.tokens == want.tokens and want.stats.oom_retries == 0


def test_rows_that_join_a_running_batch_write_what_they_would_alone(monkeypatch):
    import twinkle_hf.engine.decode

    tok = make_tokenizer()
    model = make_model(tok, seed=6)
    texts = ["What is 2 + 2? A. 3 B. 4 Answer:", "Which of these is a mammal?", "x", "A. shark B. whale",
             "The following are questions about biology.", "one two three", "Answer: B", "dolphins and whales"]
    ids = tok(texts)["input_ids"]
    free = generate_texts(model, ids, GenerationSettings(max_new_tokens=12, batch_size=1, progress=False)).tokens
    stops = tuple({free[r][k] for r, k in ((0, 2), (1, 6), (3, 9), (5, 4))})  # rows end at different steps
    merges = []
    merge = twinkle_hf.engine.decode.merge
    monkeypatch.setattr(twinkle_hf.engine.decode, "merge", lambda *a: merges.append(1) or merge(*a))
    runs = {size: generate_texts(model, ids, GenerationSettings(max_new_tokens=12, stop_ids=stops, batch_size=size,
                                                                progress=False)).tokens for size in (1, 3, 4, "auto")}
    assert merges, "no row joined a running batch: the test does not test that"
    for row, tokens in zip(ids, runs[1]):
        ref = model.generate(torch.tensor([row]), max_new_tokens=12, do_sample=False, eos_token_id=list(stops),
                             pad_token_id=tok.eos_token_id)[0, len(row):].tolist()
        end = min((ref.index(s) for s in stops if s in ref), default=len(ref))
        assert tokens == ref[:end]
    assert runs[1] == runs[3] == runs[4] == runs["auto"]
    assert len({len(t) for t in runs[1]}) > 2  # answers of several lengths
