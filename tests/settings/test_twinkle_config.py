"""Twinkle Eval configs run unchanged: the translation of every section, what is ignored (api_key
never copied or shown), clear errors, and a run from a Twinkle config and dataset folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.errors import TwinkleError
from twinkle_hf.settings.config import build_config
from twinkle_hf.settings.files import read_yaml
from twinkle_hf.settings.twinkle_config import is_twinkle_config, translate

SECRET = "sk-do-not-leak-123"


def twinkle_config(**evaluation) -> dict:
    """A config in Twinkle Eval v2.8.0's layout, every section present."""
    return {
        "llm_api": {"base_url": "http://localhost:8000/v1", "api_key": SECRET, "type": "openai", "max_retries": 5,
                    "timeout": 600, "api_rate_limit": 2, "disable_ssl_verify": False},
        "model": {"name": "Qwen/Qwen3-0.6B", "temperature": 0.0, "top_p": 0.9, "max_tokens": 4096,
                  "frequency_penalty": 0.0, "presence_penalty": 0.0,
                  "extra_body": {"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20}},
        "evaluation": {"dataset_paths": ["datasets/tmmlu/"], "evaluation_method": "box",
                       "system_prompt": {"zh": "使用者將提供一個題目", "en": "The user will give a question"},
                       "datasets_prompt_map": {"datasets/tmmlu/": "zh"}, "system_prompt_enabled": True,
                       "repeat_runs": 1, "shuffle_options": False, "samples_per_question": 1, "pass_k": 1,
                       "strategy_config": {}, **evaluation},
        "distributed": {"enabled": False}, "environment": {"gpu_info": {}},
        "logging": {"level": "INFO"}, "google_services": {"enabled": False},
    }


def test_every_section_is_translated_or_listed_as_ignored():
    data = twinkle_config(shuffle_options=True, repeat_runs=5)
    assert is_twinkle_config(data) and not is_twinkle_config({"model": "x", "method": "box"})
    t = translate(data)
    assert t.values == {
        "model": "Qwen/Qwen3-0.6B", "temperature": 0.0, "top_p": 0.9, "max_new_tokens": 4096,
        "chat_template_kwargs": {"enable_thinking": False}, "datasets": ("datasets/tmmlu/",), "prompt_lang": "zh",
        "method": "box", "system_prompt": "使用者將提供一個題目",  # its dataset's language (zh)
        "shuffle": True, "shuffle_mode": "random", "seeds": 5, "pass_k": 1, "twinkle_results": True,
        "prompt_style": "twinkle", "from_twinkle": True,
    }
    assert {"llm_api.api_key", "llm_api.base_url", "model.frequency_penalty", "model.presence_penalty",
            "model.extra_body.top_k", "distributed.enabled", "logging.level",
            "google_services.enabled"} <= set(t.ignored)
    shown = "\n".join(t.describe("twinkle.yaml"))
    assert SECRET not in shown and "llm_api.api_key" in shown
    cfg = build_config(t.values)  # every translated value is a valid setting
    assert cfg.seeds == 5 and cfg.permutation_mode == "random" and cfg.method == "box"


@pytest.mark.parametrize(("evaluation", "values"), [
    ({"evaluation_method": "custom_regex", "strategy_config": {"patterns": ["答案[:：]\\s*([A-D])"]}},
     {"method": "regex", "answer_regex": "答案[:：]\\s*([A-D])"}),
    ({"evaluation_method": "logit", "system_prompt_enabled": False}, {"method": "logit"}),
    ({"evaluation_method": "custom_regex", "strategy_config": {"patterns": ["=([A-D])", "([A-D])$"]}},
     {"method": "regex", "answer_regex": ("=([A-D])", "([A-D])$")}),  # several: tried in turn
    ({"datasets_prompt_map": {}}, {"prompt_lang": "zh"}),  # Twinkle's default language
    ({"datasets_prompt_map": {"datasets/tmmlu": "en"}}, {"prompt_lang": "en"}),  # with or without the slash
])
def test_methods_languages_and_the_system_prompt(evaluation, values):
    t = translate(twinkle_config(**evaluation))
    assert {k: t.values.get(k) for k in values} == values
    if evaluation.get("system_prompt_enabled") is False:
        assert "system_prompt" not in t.values


def test_languages_and_dataset_overrides_become_per_dataset_settings():
    t = translate(twinkle_config(
        dataset_paths=["a/", "b/", "c/"], datasets_prompt_map={"a/": "en", "b/": "zh"},  # c/: Twinkle's default, zh
        dataset_overrides={"b/": {"evaluation_method": "pattern", "shuffle_options": True, "repeat_runs": 3,
                                  "colour": "red"},
                           "c/": {"evaluation_method": "custom_regex", "strategy_config": {"patterns": ["=([A-D])"]},
                                  "pass_k": 2, "system_prompt_enabled": False}}))
    assert t.values["prompt_lang"] == "en" and t.values["method"] == "box"
    assert t.values["system_prompt"] == "The user will give a question"  # a/ is English
    assert t.values["dataset_overrides"] == {
        "b/": {"prompt_lang": "zh", "system_prompt": "使用者將提供一個題目",  # zh's, as Twinkle Eval picks it
               "method": "pattern", "shuffle": True, "shuffle_mode": "random", "seeds": 3, "samples": 1},
        "c/": {"prompt_lang": "zh", "method": "regex", "answer_regex": "=([A-D])", "pass_k": 2, "system_prompt": None},
    }
    assert "evaluation.dataset_overrides['b/'].colour" in t.ignored
    cfg = build_config(t.values)
    b, c = cfg.for_dataset("b"), cfg.for_dataset("c/sub/file.csv")
    assert (b.method, b.prompt_lang, b.permutation_mode, b.seeds) == ("pattern", "zh", "random", 3)
    assert (c.method, c.answer_regex, c.pass_k, c.system_prompt) == ("regex", "=([A-D])", 2, None)
    assert cfg.for_dataset("a/") == cfg and cfg.for_dataset("bb/") == cfg  # whole folder names only


def test_repeats_and_samples():
    greedy = translate(twinkle_config(repeat_runs=3))  # identical prompts, greedy: one answer
    assert "samples" not in greedy.values and "seeds" not in greedy.values and len(greedy.notes) == 2
    data = twinkle_config(samples_per_question=4)
    data["model"]["temperature"] = 0.7
    assert translate(data).values["samples"] == 4


@pytest.mark.parametrize(("evaluation", "message"), [
    ({"evaluation_method": "others"}, "evaluation_method 'others' has no local equivalent"),
    ({"evaluation_method": "custom_regex"}, "custom_regex needs evaluation.strategy_config.patterns"),
    ({"dataset_overrides": {"a/": {"evaluation_method": "others"}}}, r"dataset_overrides\['a/'\]: evaluation_method"),
    ({"repeat_runs": 0}, "repeat_runs must be an integer >= 1"),
    ({"dataset_paths": 3}, "dataset_paths must be a folder or a list of folders"),
])
def test_what_cannot_be_translated_says_why(evaluation, message):
    with pytest.raises(TwinkleError, match=message):
        translate(twinkle_config(**evaluation))


def _twinkle_folder(root: Path, name: str = "quiz") -> Path:
    """A Twinkle-style dataset folder: one JSONL file with options under A-D and a letter answer, and
    a nested CSV."""
    folder = root / "datasets" / name
    (folder / "more").mkdir(parents=True)
    rows = [{"question": f"Question {i}: which is right?", "A": f"a{i}", "B": f"b{i}", "C": f"c{i}", "D": f"d{i}",
             "answer": "ABCD"[i % 4]} for i in range(6)]
    (folder / "part1.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                        encoding="utf-8")
    (folder / "more" / "part2.csv").write_text("question,A,B,C,D,answer\n" + "".join(
        f"Another question {i}?,w{i},x{i},y{i},z{i},{'DCBA'[i % 4]}\n" for i in range(4)), encoding="utf-8")
    return folder


def _run_twinkle(tmp_path: Path, data: dict, model: Path, name: str = "run", *flags: str) -> Path:
    """Write ``data`` as a Twinkle config file and run it with ``model``; returns the output folder."""
    config = tmp_path / "twinkle.yaml"
    config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = tmp_path / name
    assert main(["--config", str(config), "--model", str(model), "--output-dir", str(out), "--quiet", "--device", "cpu",
                 *flags]) == 0
    return out


def test_a_twinkle_config_and_folder_run_unchanged(tiny_model_dir, tmp_path, capsys):
    folder = _twinkle_folder(tmp_path)
    data = twinkle_config(dataset_paths=str(folder), evaluation_method="logit", shuffle_options=True, repeat_runs=2,
                          datasets_prompt_map={str(folder): "en"})
    out = _run_twinkle(tmp_path, data, tiny_model_dir)
    assert read_yaml(tmp_path / "twinkle.yaml")["seeds"] == 2
    err = capsys.readouterr().err
    assert "a Twinkle Eval config" in err and "llm_api.api_key" in err and SECRET not in err
    log = (out / "run.log").read_text(encoding="utf-8")
    assert "a Twinkle Eval config" in log and "llm_api.api_key" in log  # the notice is in run.log too
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["config"]["seeds"] == 2 and results["config"]["method"] == "logit"
    assert results["metrics"]["accuracy"]["n_questions"] == 10
    for path in out.rglob("*"):
        assert not path.is_file() or SECRET not in path.read_text(encoding="utf-8", errors="replace")


RESULT_KEYS = {"timestamp", "config", "dataset_results", "duration_seconds"}
DATASET_KEYS = {"results", "average_accuracy", "average_std", "average_pass_at_k", "pass_metric",
                "total_unparsed_count", "average_unparsed_rate", "evaluation_method"}
FILE_KEYS = {"file", "accuracy_mean", "accuracy_std", "pass_at_k_mean", "pass_metric", "unparsed_count",
             "unparsed_rate", "individual_runs"}
RUN_KEYS = {"accuracies", "pass_at_k", "unparsed_counts", "results"}
LINE_KEYS = {"question_id", "sample_id", "question", "correct_answer", "llm_output", "llm_reasoning_output",
             "predicted_answer", "is_correct", "usage_completion_tokens", "usage_prompt_tokens", "usage_total_tokens"}


def _twinkle_files(out: Path) -> tuple[dict, dict[int, list[dict]]]:
    """results/results_<stamp>.json and its eval_results_<stamp>_run<N>.jsonl, read back."""
    found = sorted((out / "results").glob("results_*.json"))
    assert len(found) == 1, found
    doc = json.loads(found[0].read_text(encoding="utf-8"))
    stamp = found[0].stem.removeprefix("results_")
    assert len(stamp) == len("20261203_1520") and stamp == doc["timestamp"]
    runs = {int(p.stem.rsplit("_run", 1)[1]): [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines()]
            for p in (out / "results").glob(f"eval_results_{stamp}_run*.jsonl")}
    return doc, runs


def _predictions(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_twinkle_result_files_agree_with_results_json(tiny_model_dir, tmp_path):
    """The documented keys exactly; every number recomputed from predictions.jsonl; per file = per subject
    of results.json here (no subject column: a file's stem is its subject)."""
    folder = _twinkle_folder(tmp_path)
    data = twinkle_config(dataset_paths=str(folder), evaluation_method="logit", shuffle_options=True, repeat_runs=3,
                          datasets_prompt_map={str(folder): "en"})
    out = _run_twinkle(tmp_path, data, tiny_model_dir, "run")
    doc, runs = _twinkle_files(out)
    assert set(doc) == RESULT_KEYS and doc["config"]["model"]["name"] == str(tiny_model_dir)
    assert doc["config"]["evaluation"]["repeat_runs"] == 3 and SECRET not in json.dumps(doc)
    assert list(doc["dataset_results"]) == [str(folder)]
    block = doc["dataset_results"][str(folder)]
    assert set(block) == DATASET_KEYS and block["evaluation_method"] == "logit" and block["pass_metric"] == "pass@1"
    files = {Path(f["file"]).name: f for f in block["results"]}
    assert set(files) == {"part1.jsonl", "part2.csv"} and sorted(runs) == [0, 1, 2]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    subjects = results["datasets"]["quiz"]["subjects"]
    preds = [p for p in _predictions(out) if p["order"] >= 0]  # the original order is no Twinkle run
    for name, entry in files.items():
        assert set(entry) == FILE_KEYS and set(entry["individual_runs"]) == RUN_KEYS
        mine = [p for p in preds if Path(p["file"]).name == name]
        per_run = [sum(p["correct"] for p in mine if p["order"] == o) / sum(p["order"] == o for p in mine)
                   for o in range(3)]
        assert entry["individual_runs"]["accuracies"] == pytest.approx(per_run, abs=1e-12)
        assert entry["accuracy_mean"] == pytest.approx(sum(per_run) / 3, abs=1e-12)
        assert entry["pass_at_k_mean"] == pytest.approx(entry["accuracy_mean"], abs=1e-12)  # pass@1, one sample
        subject = subjects[Path(name).stem]["accuracy"]
        assert entry["accuracy_mean"] == pytest.approx(subject["value"], abs=1e-12)
        assert entry["individual_runs"]["accuracies"] == pytest.approx(subject["per_order"], abs=1e-12)
        assert entry["unparsed_count"] == 0 and entry["individual_runs"]["results"] == [
            f"eval_results_{doc['timestamp']}_run{o}.jsonl" for o in range(3)]
    assert block["average_accuracy"] == pytest.approx(
        (files["part1.jsonl"]["accuracy_mean"] + files["part2.csv"]["accuracy_mean"]) / 2, abs=1e-12)
    by_key = {(Path(p["file"]).name, p["row"], p["order"]): p for p in preds}
    for order, lines in runs.items():
        assert len(lines) == 10
        for line in lines:
            assert set(line) == LINE_KEYS | {"logprob_scores"}
            name = "part1.jsonl" if line["question"].startswith("Question") else "part2.csv"
            pred = by_key[(name, line["question_id"], order)]
            assert line["correct_answer"] == "ABCD"[pred["answer"]]
            assert line["predicted_answer"] == line["llm_output"] == "ABCD"[pred["pred"]]
            assert line["is_correct"] == pred["correct"]
            assert max(line["logprob_scores"], key=line["logprob_scores"].get) == line["predicted_answer"]
            assert line["usage_prompt_tokens"] == line["usage_total_tokens"] > 0
            shown = _options(folder, name, line["question_id"], pred["perm"])  # the options in this run's order
            assert line["question"].splitlines()[1:] == [f"{'ABCD'[j]}: {text}" for j, text in enumerate(shown)]
            number = line["question_id"]  # the row in its own file: its text says which
            assert line["question"].startswith(f"Question {number}:" if name == "part1.jsonl"
                                               else f"Another question {number}?")


def _options(folder: Path, name: str, row: int, perm: list[int]) -> list[str]:
    if name == "part1.jsonl":
        record = json.loads((folder / name).read_text(encoding="utf-8").splitlines()[row])
        original = [record[x] for x in "ABCD"]
    else:
        original = [f"{x}{row}" for x in "wxyz"]
    return [original[i] for i in perm]


def test_generation_mode_twinkle_files_count_unparsed_answers(tmp_path):
    """custom_regex: the text and its usage are written; an answer the regex cannot read counts as unparsed."""
    tok = make_tokenizer()
    model = save_model_dir(tmp_path / "writer", tok, make_writer_model(tok, ["I pick", " (B)"]))
    folder = _twinkle_folder(tmp_path)
    data = twinkle_config(dataset_paths=str(folder), evaluation_method="custom_regex",
                          strategy_config={"patterns": [r"\(([A-D])\)"]}, datasets_prompt_map={str(folder): "en"})
    data["model"]["max_tokens"] = 8
    out = _run_twinkle(tmp_path, data, model, "run")
    doc, runs = _twinkle_files(out)
    block = doc["dataset_results"][str(folder)]
    assert block["evaluation_method"] == "custom_regex" and block["total_unparsed_count"] == 0
    assert doc["config"]["evaluation"]["strategy_config"] == {"patterns": [r"\(([A-D])\)"]}
    assert sorted(runs) == [0] and len(runs[0]) == 10
    for line in runs[0]:
        assert set(line) == LINE_KEYS and line["llm_output"] == "I pick (B)" and line["predicted_answer"] == "B"
        assert line["usage_completion_tokens"] == 2  # the two pieces; the end of text is not counted
        assert line["usage_total_tokens"] == line["usage_prompt_tokens"] + line["usage_completion_tokens"]
    for entry in block["results"]:  # always B: right exactly where B is gold
        first = Path(entry["file"]).name == "part1.jsonl"
        lines = [x for x in runs[0] if x["question"].startswith("Question") == first]
        assert entry["accuracy_mean"] == pytest.approx(sum(x["correct_answer"] == "B" for x in lines) / len(lines))
    # the same answers, unreadable to another pattern: every one unparsed
    data["evaluation"]["strategy_config"] = {"patterns": [r"Answer: ([A-D])"]}
    doc, runs = _twinkle_files(_run_twinkle(tmp_path, data, model, "run2"))
    block = doc["dataset_results"][str(folder)]
    assert block["total_unparsed_count"] == 10 and block["average_unparsed_rate"] == 1.0
    assert all(x["predicted_answer"] is None and not x["is_correct"] for x in runs[0])
    # several patterns, tried in turn: the second reads it
    data["evaluation"]["strategy_config"] = {"patterns": [r"Answer: ([A-D])", r"\(([A-D])\)"]}
    doc, runs = _twinkle_files(_run_twinkle(tmp_path, data, model, "run3"))
    assert doc["dataset_results"][str(folder)]["total_unparsed_count"] == 0
    assert {x["predicted_answer"] for x in runs[0]} == {"B"}


def test_flags_turn_the_twinkle_files_on_and_off(tiny_model_dir, mmlu_dir, tmp_path):
    base = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--quiet", "--device", "cpu", "--limit", "2"]
    assert main([*base, "--output-dir", str(tmp_path / "plain")]) == 0
    assert not (tmp_path / "plain" / "results").exists()  # not asked for: not written
    assert main([*base, "--output-dir", str(tmp_path / "on"), "--twinkle-results"]) == 0
    doc, runs = _twinkle_files(tmp_path / "on")
    assert sorted(runs) == [0] and doc["config"]["evaluation"]["shuffle_options"] is False


def test_dataset_overrides_and_languages_apply_to_their_dataset_only(tiny_model_dir, tmp_path):
    first = _twinkle_folder(tmp_path, "quiz")
    second = _twinkle_folder(tmp_path, "exam")
    data = twinkle_config(dataset_paths=[str(first), str(second)], evaluation_method="logit",
                          datasets_prompt_map={str(first): "en", str(second): "zh"},
                          dataset_overrides={str(second): {"shuffle_options": True, "repeat_runs": 2}})
    out = _run_twinkle(tmp_path, data, tiny_model_dir, "run", "--log-prompts", "--prompt-style", "lm-eval")
    preds = _predictions(out)
    names = {str(first): preds[0]["dataset"], str(second): preds[-1]["dataset"]}
    orders = {name: sorted({p["order"] for p in preds if p["dataset"] == name}) for name in names.values()}
    assert orders == {names[str(first)]: [0], names[str(second)]: [-1, 0, 1]}  # shuffled: 2 orders + the original
    for p in preds:
        chinese = "答案：" in p["prompt"]
        assert chinese == (p["dataset"] == names[str(second)])
    doc, runs = _twinkle_files(out)
    runs_per_file = {path: [len(f["individual_runs"]["accuracies"]) for f in block["results"]]
                     for path, block in doc["dataset_results"].items()}
    assert runs_per_file == {str(first): [1, 1], str(second): [2, 2]} and sorted(runs) == [0, 1]
    assert len(runs[0]) == 20 and len(runs[1]) == 10  # run 1 exists for the shuffled dataset only
