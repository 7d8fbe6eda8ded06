"""Twinkle Eval configs run unchanged: the translation of every section, what is ignored (api_key
never copied or shown), clear errors, and a run from a Twinkle config and dataset folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from twinkle_hf.cli import main
from twinkle_hf.config import build_config, read_yaml
from twinkle_hf.errors import TwinkleError
from twinkle_hf.twinkle_config import is_twinkle_config, translate

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
        "method": "box", "system_prompt": {"zh": "使用者將提供一個題目", "en": "The user will give a question"},
        "shuffle": True, "shuffle_mode": "random", "seeds": 5,
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
    ({"datasets_prompt_map": {}}, {"prompt_lang": "zh"}),  # Twinkle's default language
    ({"datasets_prompt_map": {"datasets/tmmlu": "en"}}, {"prompt_lang": "en"}),  # with or without the slash
])
def test_methods_languages_and_the_system_prompt(evaluation, values):
    t = translate(twinkle_config(**evaluation))
    assert {k: t.values.get(k) for k in values} == values
    if evaluation.get("system_prompt_enabled") is False:
        assert "system_prompt" not in t.values


def test_repeats_and_samples():
    greedy = translate(twinkle_config(repeat_runs=3))  # identical prompts, greedy: one answer
    assert "samples" not in greedy.values and "seeds" not in greedy.values and len(greedy.notes) == 2
    data = twinkle_config(samples_per_question=4)
    data["model"]["temperature"] = 0.7
    assert translate(data).values["samples"] == 4


@pytest.mark.parametrize(("evaluation", "message"), [
    ({"evaluation_method": "others"}, "evaluation_method 'others' has no local equivalent"),
    ({"evaluation_method": "custom_regex"}, "custom_regex needs evaluation.strategy_config.patterns"),
    ({"dataset_paths": ["a/", "b/"], "datasets_prompt_map": {"a/": "en", "b/": "zh"}}, "different languages"),
    ({"repeat_runs": 0}, "repeat_runs must be an integer >= 1"),
    ({"dataset_paths": 3}, "dataset_paths must be a folder or a list of folders"),
])
def test_what_cannot_be_translated_says_why(evaluation, message):
    with pytest.raises(TwinkleError, match=message):
        translate(twinkle_config(**evaluation))


def _twinkle_folder(root: Path) -> Path:
    """A Twinkle-style dataset folder: one JSONL file with options under A-D and a letter answer, and
    a nested CSV."""
    folder = root / "datasets" / "quiz"
    (folder / "more").mkdir(parents=True)
    rows = [{"question": f"Question {i}: which is right?", "A": f"a{i}", "B": f"b{i}", "C": f"c{i}", "D": f"d{i}",
             "answer": "ABCD"[i % 4]} for i in range(6)]
    (folder / "part1.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                        encoding="utf-8")
    (folder / "more" / "part2.csv").write_text("question,A,B,C,D,answer\n" + "".join(
        f"Another question {i}?,w{i},x{i},y{i},z{i},{'DCBA'[i % 4]}\n" for i in range(4)), encoding="utf-8")
    return folder


def test_a_twinkle_config_and_folder_run_unchanged(tiny_model_dir, tmp_path, capsys):
    folder = _twinkle_folder(tmp_path)
    data = twinkle_config(dataset_paths=str(folder), evaluation_method="logit", shuffle_options=True, repeat_runs=2,
                          datasets_prompt_map={str(folder): "en"})
    config = tmp_path / "twinkle.yaml"
    config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert read_yaml(config)["seeds"] == 2
    out = tmp_path / "run"
    assert main(["--config", str(config), "--model", str(tiny_model_dir), "--output-dir", str(out), "--quiet",
                 "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "a Twinkle Eval config" in err and "llm_api.api_key" in err and SECRET not in err
    log = (out / "run.log").read_text(encoding="utf-8")
    assert "a Twinkle Eval config" in log and "llm_api.api_key" in log  # the notice is in run.log too
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["config"]["seeds"] == 2 and results["config"]["method"] == "logit"
    assert results["metrics"]["accuracy"]["n_questions"] == 10
    for path in out.rglob("*"):
        assert not path.is_file() or SECRET not in path.read_text(encoding="utf-8", errors="replace")
