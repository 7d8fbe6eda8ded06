"""--method logit+box|pattern|regex through the command line: planted writer models whose scored and
written letters are known prove that each row holds both, that letter_text_agreement and the
confusion table count them, that a crashed run resumes without mixing the two halves' saved rows,
and that a tokenizer without a chat template is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main

CHAT = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def _writer(tmp_path_factory, name: str, pieces: list[str]) -> Path:
    """A model whose next token after any prompt is pieces[0] (its scored letter, where that is a
    letter) and whose answer is "".join(pieces)."""
    tok = make_tokenizer()
    model = make_writer_model(tok, pieces)
    tok.chat_template = CHAT
    return save_model_dir(tmp_path_factory.mktemp(name) / "model", tok, model)


def _run(out: Path, model: Path, *args: str) -> tuple[dict, list[dict]]:
    assert main(["--model", str(model), "--output-dir", str(out), "--quiet", "--device", "cpu", *args]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return results, rows


@pytest.mark.parametrize(("method", "said", "written", "agree"), [
    ("logit+pattern", " so the answer is (C)", 2, 1.0),
    ("logit+pattern", " no, the answer is (B)", 1, 0.0),
    ("logit+box", " no: \\boxed{B}", 1, 0.0),
])
def test_each_row_holds_the_scored_and_the_written_letter(tmp_path_factory, all_a_dir, tmp_path, method, said,
                                                          written, agree):
    model = _writer(tmp_path_factory, "writer", ["C", said])
    results, rows = _run(tmp_path / "run", model, "--dataset", str(all_a_dir), "--method", method,
                         "--shuffle-mode", "cyclic", "--limit", "2", "--max-new-tokens", "8", "--log-prompts")
    assert len(rows) == 2 * (3 + 4 + 5 + 3)  # 2 questions a subject: k cyclic orders + the original
    for r in rows:
        assert r["pred"] == 2 and "probs" in r  # the scored letter: the first token is always C
        assert r["pred_written"] == written and r["written"] == "C" + said
        assert r["prompt"].endswith("<|assistant|>")  # asked through the chat template
    metrics = results["metrics"]
    block = metrics["letter_text_agreement"]
    assert block["value"] == agree and block["unparsed"] == 0
    assert block["confusion"]["C"]["ABCD"[written]] == block["rows"]
    assert metrics["accuracy"]["value"] == pytest.approx(block["accuracy"]["scored"]["value"])
    # gold is always A originally: under cyclic orders each letter is gold in 1 of k orders
    assert block["accuracy"]["written"]["value"] == pytest.approx((1 / 3 + 1 / 4 + 1 / 5) / 3)
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "Letter vs text: the scored letter is the written one in" in report
    assert "## Scored letter vs written letter" in report
    assert "Letter vs text:" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert main(["report", str(tmp_path / "run")]) == 0  # recomputed from predictions.jsonl: the same block
    again = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert again["metrics"]["letter_text_agreement"] == block


def test_unparsed_answers_are_counted_apart(tmp_path_factory, all_a_dir, tmp_path):
    model = _writer(tmp_path_factory, "mumbler", ["C", " I do not know"])
    results, _ = _run(tmp_path / "run", model, "--dataset", str(all_a_dir), "--method", "logit+pattern",
                      "--limit", "1", "--max-new-tokens", "8")
    block = results["metrics"]["letter_text_agreement"]
    assert block["value"] is None and block["unparsed_rate"] == 1.0 and block["confusion"]["C"]["unparsed"] == 3


def test_a_crashed_run_resumes_both_halves_to_the_same_rows(tmp_path_factory, all_a_dir, tmp_path, monkeypatch):
    from twinkle_hf.engine.decode import Decoder

    model = _writer(tmp_path_factory, "writer", ["C", " so the answer is (C)"])
    args = ["--model", str(model), "--dataset", str(all_a_dir), "--method", "logit+pattern", "--shuffle-mode",
            "cyclic", "--max-new-tokens", "8", "--batch-size", "4", "--quiet", "--device", "cpu"]
    assert main(args + ["--output-dir", str(tmp_path / "whole")]) == 0
    prefill, calls = Decoder._prefill, []

    def crash_on_the_third_prefill(*a, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return prefill(*a, **kw)

    broken = tmp_path / "broken"
    with monkeypatch.context() as patch:
        patch.setattr(Decoder, "_prefill", crash_on_the_third_prefill)
        assert main(args + ["--output-dir", str(broken)]) == 130
    saved = len((broken / ".partial" / "scores.0.jsonl").read_text(encoding="utf-8").splitlines())
    assert main(args + ["--output-dir", str(broken), "--resume"]) == 0
    read = lambda out: (out / "predictions.jsonl").read_text(encoding="utf-8")
    assert read(broken) == read(tmp_path / "whole")
    results = json.loads((broken / "results.json").read_text(encoding="utf-8"))
    rows = len(read(broken).splitlines())
    assert rows < saved < 2 * rows  # every scored row and some written ones were saved apart, and kept
    assert results["timing"]["resumed_rows"] == saved  # every scored row and the written ones saved before


def test_a_tokenizer_without_a_chat_template_is_one_line_exit_2(tiny_model_dir, all_a_dir, tmp_path, capsys):
    args = ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--method", "logit+pattern", "--limit", "1",
            "--max-new-tokens", "8", "--quiet", "--device", "cpu"]
    capsys.readouterr()
    assert main(args + ["--output-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has none" in err[0] and "--no-chat-template" in err[0]
    assert main(args + ["--output-dir", str(tmp_path / "b"), "--no-chat-template"]) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "logit+pattern", "--probe", "choices-only"], "--method logit alone"),
    (["--method", "logit+regex"], "--answer-regex goes with --method regex"),
    (["--method", "logit+box", "--samples", "2", "--temperature", "1"], "needs generation mode"),
])
def test_bad_combinations_say_what_to_do(tiny_model_dir, capsys, args, message):
    assert main(["--model", str(tiny_model_dir), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
