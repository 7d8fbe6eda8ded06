"""The "coming from Twinkle Eval" block: a generation run from a Twinkle config reads its answers both
ways and shows both accuracies, how many letters differ and examples; ``twinkle-hf report`` rebuilds it;
``--extractor twinkle`` scores with Twinkle's reading and writes its letters into Twinkle's files."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from helpers import make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main

GOLD = "ABCDAB"


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    """A model that always writes "The answer is B" (Twinkle's patterns read T), a Twinkle config."""
    tok = make_tokenizer()
    model = save_model_dir(tmp_path / "writer", tok, make_writer_model(tok, ["The answer is", " B"]))
    folder = tmp_path / "datasets" / "quiz"
    folder.mkdir(parents=True)
    rows = [{"question": f"Q{i}?", "A": "w", "B": "x", "C": "y", "D": "z", "answer": g} for i, g in enumerate(GOLD)]
    (folder / "quiz.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "twinkle.yaml"
    config.write_text(yaml.safe_dump({
        "llm_api": {"base_url": "http://localhost:8000/v1"}, "model": {"name": "m", "max_tokens": 6},
        "evaluation": {"dataset_paths": [str(folder)], "evaluation_method": "pattern", "shuffle_options": True,
                       "repeat_runs": 2}}), encoding="utf-8")
    return model, config


def _run(model: Path, config: Path, out: Path, *flags: str) -> dict:
    assert main(["--config", str(config), "--model", str(model), "--output-dir", str(out), "--quiet",
                 "--device", "cpu", *flags]) == 0
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _predictions(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_block_shows_both_readings_and_report_rebuilds_it(tmp_path, capsys):
    model, config = _setup(tmp_path)
    out = tmp_path / "run"
    doc = _run(model, config, out)
    scored = [p for p in _predictions(out) if p["order"] >= 0]  # Twinkle's runs: the original order is none
    assert len(scored) == 12 and {p["output"] for p in scored} == {"The answer is B"}
    gold_b = sum(p["answer"] == 1 for p in scored)  # twinkle_hf reads B: right where B is gold
    block = doc["twinkle_extraction"]
    assert {k: v for k, v in block.items() if k != "examples"} == {
        "answers": 12, "accuracy_twinkle_hf": gold_b / 12, "accuracy_twinkle": 0.0,  # "T" is never right
        "unparsed_twinkle_hf": 0, "unparsed_twinkle": 0, "different_letters": 12}
    assert len(block["examples"]) == 10  # at most ten
    for example, p in zip(block["examples"], scored):
        assert (example["id"], example["order"], example["gold"]) == (p["id"], p["order"], "ABCD"[p["answer"]])
        assert (example["output_end"], example["twinkle_hf"], example["twinkle"]) == ("The answer is B", "B", "T")
    assert doc["metrics"]["accuracy"]["value"] == gold_b / 12  # the run scores with twinkle_hf's reading
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Coming from Twinkle Eval" in report and "| The answer is B | B | T |" in report
    assert f"accuracy {100 * gold_b / 12:.1f}% with twinkle_hf's extraction" in report
    assert "0.0% with Twinkle Eval's" in report and "--extractor twinkle" in report
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Coming from Twinkle Eval</h2>" in html and "<td>T</td>" in html
    console = capsys.readouterr().out
    assert "Coming from Twinkle Eval: The same 12 answers read twice" in console
    assert console.count("-> twinkle_hf B, Twinkle Eval T, gold") == 10
    # rebuilt from the files alone
    doc.pop("twinkle_extraction")
    (out / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    (out / "report.md").write_text("", encoding="utf-8")
    assert main(["report", str(out)]) == 0
    rebuilt = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert rebuilt["twinkle_extraction"] == block
    assert (out / "report.md").read_text(encoding="utf-8") == report


def test_extractor_twinkle_reproduces_twinkles_letters(tmp_path):
    model, config = _setup(tmp_path)
    out = tmp_path / "run"
    doc = _run(model, config, out, "--extractor", "twinkle")
    assert doc["config"]["extractor"] == "twinkle"
    preds = _predictions(out)
    assert {p["pred"] for p in preds} == {-1} and doc["metrics"]["accuracy"]["value"] == 0.0  # "T" is no option
    assert doc["twinkle_extraction"]["different_letters"] == 12  # the block reads both ways whichever scores
    results = sorted((out / "results").glob("eval_results_*_run*.jsonl"))
    lines = [json.loads(x) for path in results for x in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12 and {x["predicted_answer"] for x in lines} == {"T"}
    assert not any(x["is_correct"] for x in lines)
    summary = json.loads(next((out / "results").glob("results_*.json")).read_text(encoding="utf-8"))
    block = next(iter(summary["dataset_results"].values()))
    assert block["total_unparsed_count"] == 0 and block["average_accuracy"] == 0.0  # read, as Twinkle reads it


def test_native_runs_have_no_block(tmp_path):
    model, _ = _setup(tmp_path)
    out = tmp_path / "native"
    assert main(["--model", str(model), "--dataset", str(tmp_path / "datasets" / "quiz"), "--method", "pattern",
                 "--max-new-tokens", "6", "--output-dir", str(out), "--quiet", "--device", "cpu"]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "twinkle_extraction" not in doc and "Coming from Twinkle Eval" not in (out / "report.md").read_text()
