"""A Twinkle Eval config renders the prompts Twinkle Eval 2.10 sends, byte for byte.

Every expected string here is written out by hand from Twinkle Eval 2.10.0's rules: its
``build_question_text`` (the question as given, then ``"{K}: {text}"`` per option key A, B, ...),
its logit context (that text + ``"\\nAnswer:"``, scored on ``" {K}"``), and its chat messages (a
system message only where ``core/prompts.resolve_system_prompt`` finds a non-empty one for the
dataset's language, then the question text as the user message).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import TOKENIZER_DIRS, make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.errors import TwinkleError
from twinkle_hf.prompts.twinkle_style import twinkle_prompts, twinkle_question
from twinkle_hf.settings.config import build_config
from twinkle_hf.settings.twinkle_config import resolve_system_prompt, translate

# A chat template that shows every message as it is: "<|role|>content\n" ... "<|assistant|>"
SHOW_CHAT = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
             "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def test_the_question_text_is_twinkles():
    # the question is not stripped, the options are written as they are, "K: text", no trailing newline
    assert twinkle_question("  Which one?\n", ["x", " y "]) == "  Which one?\n\nA: x\nB:  y "
    assert twinkle_prompts(["Q?"], [["a", "b", "c"]], generates=False) == ["Q?\nA: a\nB: b\nC: c\nAnswer:"]
    assert twinkle_prompts(["Q?"], [["a", "b", "c"]], generates=True) == ["Q?\nA: a\nB: b\nC: c"]


SYSTEM = {"zh": "中文系統", "en": "English system"}


@pytest.mark.parametrize(("value", "lang", "enabled", "expected"), [
    (SYSTEM, "en", True, "English system"),
    (SYSTEM, "zh", True, "中文系統"),
    (SYSTEM, "ja", True, "中文系統"),  # a language the map does not name: zh's
    ({"en": "only English"}, "zh", True, "only English"),  # no zh either: the only one set
    ({"en": "E", "ja": "J"}, "zh", True, None),  # no zh and two set: none
    ({"zh": "Z", "en": None}, "en", True, None),  # set to null: none for that language, no fallback
    ({"zh": "Z", "en": "   "}, "en", True, None),  # blank: none
    ("  Think step by step.\n", "en", True, "Think step by step."),  # one string for every language, stripped
    ("", "en", True, None),
    (None, "en", True, None),
    (SYSTEM, "en", False, None),  # system_prompt_enabled: false
])
def test_system_prompt_as_twinkle_resolves_it(value, lang, enabled, expected):
    assert resolve_system_prompt({"system_prompt": value}, lang, enabled) == expected


def _config(**evaluation) -> dict:
    return {"llm_api": {"base_url": "http://localhost:8000/v1", "api_key": "sk-x"},
            "model": {"name": "m", "temperature": 0.0, "max_tokens": 8},
            "evaluation": {"evaluation_method": "box", "system_prompt": SYSTEM, **evaluation}}


def test_each_dataset_gets_its_own_system_prompt():
    t = translate(_config(dataset_paths=["a/", "b/", "c/", "d/"], datasets_prompt_map={"a/": "en", "b/": "zh"},
                          dataset_overrides={"c/": {"system_prompt_enabled": False},
                                             "d/": {"system_prompt": "not read by Twinkle Eval"}}))
    assert t.values["system_prompt"] == "English system" and t.values["prompt_style"] == "twinkle"
    overrides = t.values["dataset_overrides"]
    assert overrides["b/"] == {"prompt_lang": "zh", "system_prompt": "中文系統"}
    assert overrides["c/"] == {"prompt_lang": "zh", "system_prompt": None}  # switched off for c/ only
    assert overrides["d/"] == {"prompt_lang": "zh", "system_prompt": "中文系統"}  # d/'s own key is ignored
    assert "evaluation.dataset_overrides['d/'].system_prompt" in t.ignored
    cfg = build_config(t.values)
    assert [cfg.for_dataset(p).system_prompt for p in ("a/x.csv", "b/", "c/", "d/")] == [
        "English system", "中文系統", None, "中文系統"]
    off = translate(_config(dataset_paths=["a/"], system_prompt_enabled=False,
                            dataset_overrides={"a/": {"system_prompt_enabled": True}}))
    assert off.values["system_prompt"] == "中文系統"  # the override switches it back on (language: zh)


def test_letter_scoring_sends_no_system_prompt_and_the_flag_switches_styles():
    t = translate(_config(dataset_paths=["a/"], evaluation_method="logit"))
    assert "system_prompt" not in t.values and any("logit method sends no system prompt" in n for n in t.notes)
    assert build_config(t.values, {"prompt_style": "lm-eval"}).prompt_style == "lm-eval"
    assert build_config({}).prompt_style == "lm-eval"  # twinkle_hf's own configs keep lm-eval's prompts
    with pytest.raises(TwinkleError, match="Twinkle Eval's prompts hold no examples; add --prompt-style lm-eval"):
        build_config(t.values, {"num_fewshot": 5})
    with pytest.raises(TwinkleError, match="prompt_style must be one of lm-eval, twinkle"):
        build_config({"prompt_style": "harness"})


def _folder(root: Path) -> Path:
    """Two files: JSON Lines with id and hint fields beside the options, and a CSV in Twinkle's layout."""
    folder = root / "datasets" / "quiz"
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "question": f" Question {i}: which is right?", "A": f"a{i}", "B": f"b{i}",
             "C": f"c{i}", "D": f"d{i}", "answer": "ABCD"[i % 4], "hint": "think"} for i in range(4)]
    (folder / "part1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "part2.csv").write_text("question,A,B,C,answer\n" + "".join(
        f"Another {i}?,x{i},y{i},z{i},{'CBA'[i % 3]}\n" for i in range(3)), encoding="utf-8")
    return folder


def _run(tmp_path: Path, evaluation: dict, model: Path, name: str, *flags: str) -> tuple[Path, list[dict]]:
    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump(_config(**evaluation), allow_unicode=True), encoding="utf-8")
    out = tmp_path / name
    assert main(["--config", str(config), "--model", str(model), "--output-dir", str(out), "--quiet",
                 "--device", "cpu", "--log-prompts", *flags]) == 0
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return out, [json.loads(x) for x in lines]


def _options(folder: Path, p: dict) -> tuple[str, list[str]]:
    """The question and its options in their original order, read from the file by hand."""
    if p["file"].endswith("part1.jsonl"):
        record = json.loads((folder / "part1.jsonl").read_text(encoding="utf-8").splitlines()[p["row"]])
        return record["question"], [record[k] for k in "ABCD"]
    i = p["row"]
    return f"Another {i}?", [f"x{i}", f"y{i}", f"z{i}"]


def test_letter_scoring_prompts_are_twinkles(tiny_model_dir, tmp_path, capsys):
    folder = _folder(tmp_path)
    out, preds = _run(tmp_path, {"dataset_paths": str(folder), "evaluation_method": "logit",
                                 "shuffle_options": True, "repeat_runs": 2}, tiny_model_dir, "logit")
    first = next(p for p in preds if p["file"].endswith("part1.jsonl") and p["row"] == 0 and p["order"] == -1)
    assert first["prompt"] == " Question 0: which is right?\nA: a0\nB: b0\nC: c0\nD: d0\nAnswer:"
    for p in preds:  # shuffled orders: the options as permuted, under Twinkle's keys in order
        question, options = _options(folder, p)
        lines = "".join(f"\n{'ABCD'[j]}: {options[i]}" for j, i in enumerate(p["perm"]))
        assert p["prompt"] == question + lines + "\nAnswer:"
        assert len(p["probs"]) == len(options)
    assert {p["order"] for p in preds} == {-1, 0, 1}
    err = capsys.readouterr().err
    part1 = f"{folder / 'part1.jsonl'}: these fields never reach the prompt (only the options are listed): id, hint"
    assert err.count(part1) == 1 and "part2.csv: these fields" not in err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "twinkle_extraction" not in doc  # letter scoring reads no text


def test_chat_prompts_are_twinkles_messages(tmp_path):
    tok = make_tokenizer()
    tok.chat_template = SHOW_CHAT
    model = save_model_dir(tmp_path / "writer", tok, make_writer_model(tok, ["The answer is", " B"]))
    folder = _folder(tmp_path)
    en = {"dataset_paths": str(folder), "datasets_prompt_map": {str(folder): "en"}}
    _, preds = _run(tmp_path, en, model, "en")
    for p in preds:
        question, options = _options(folder, p)
        user = question + "".join(f"\n{'ABCD'[j]}: {o}" for j, o in enumerate(options))
        assert p["prompt"] == f"<|system|>English system\n<|user|>{user}\n<|assistant|>"
    _, preds = _run(tmp_path, {"dataset_paths": str(folder)}, model, "zh")  # Twinkle's default language: zh
    assert preds[0]["prompt"].startswith("<|system|>中文系統\n<|user|> Question 0: which is right?\nA: a0\n")
    _, preds = _run(tmp_path, {**en, "system_prompt_enabled": False}, model, "off")
    assert preds[0]["prompt"] == "<|user|> Question 0: which is right?\nA: a0\nB: b0\nC: c0\nD: d0\n<|assistant|>"
    _, preds = _run(tmp_path, en, model, "lm", "--prompt-style", "lm-eval")  # twinkle_hf's own prompts
    assert "A. a0" in preds[0]["prompt"] and 'in the form \\boxed{X}' in preds[0]["prompt"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen3", "llama3"])
def test_real_chat_templates_render_twinkles_messages(name, shared_dir, tmp_path):
    """The real tokenizers' chat templates: the prompt is the template applied to Twinkle's messages,
    as an OpenAI-compatible server applies it; letter scoring reads " A" after "Answer:"."""
    from transformers import AutoTokenizer

    from twinkle_hf.data.load import load_benchmark
    from twinkle_hf.prompts.prepare import prepare_dataset

    path = shared_dir / "tokenizers" / name
    if path not in TOKENIZER_DIRS:
        pytest.skip(f"{path} not found")
    tok = AutoTokenizer.from_pretrained(path)
    folder = _folder(tmp_path)
    data = load_benchmark(str(folder))
    cfg = build_config(translate(_config(dataset_paths=str(folder), datasets_prompt_map={str(folder): "en"})).values)
    prep = prepare_dataset(tok, data, cfg, None)
    user = " Question 0: which is right?\nA: a0\nB: b0\nC: c0\nD: d0"
    messages = [{"role": "system", "content": "English system"}, {"role": "user", "content": user}]
    assert prep.texts[0] == tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    # (Llama 3's template trims each message, as it does behind Twinkle Eval's server)
    assert prep.texts[0].count(user.strip()) == 1 and prep.texts[0].count("English system") == 1
    logit = build_config(translate(_config(dataset_paths=str(folder), evaluation_method="logit")).values)
    prep = prepare_dataset(tok, data, logit, None)
    assert prep.texts[0] == user + "\nAnswer:"
    assert prep.letter_ids[0] == [tok.convert_tokens_to_ids(tok.tokenize(" " + x))[0] for x in "ABCD"]


def test_files_whose_options_twinkle_would_not_find_are_named(tmp_path):
    from twinkle_hf.data.load import load_benchmark
    from twinkle_hf.prompts.twinkle_style import left_out_notices

    folder = tmp_path / "global"
    folder.mkdir()
    (folder / "g.jsonl").write_text(json.dumps({"question": "Q?", "option_a": "x", "option_b": "y", "answer": "A",
                                                "subject": "s"}) + "\n", encoding="utf-8")
    (folder / "h.jsonl").write_text(json.dumps({"question": "Q?", "choices": ["x", "y"], "answer": 1}) + "\n",
                                    encoding="utf-8")
    notices = left_out_notices([load_benchmark(str(folder))])
    assert notices == [
        f"{folder / 'g.jsonl'}: these fields never reach the prompt (only the options are listed): subject. If one "
        f"holds what the answer needs (a hint, a context), write it into the question field",
        f"{folder / 'g.jsonl'}: the options are in option_a, option_b; Twinkle Eval finds options only under columns "
        f"A, B, ... (or a 'choices' list), so its prompts for this file would differ; here they are listed as A:, "
        f"B:, ... as it lists those"]  # h.jsonl: a choices list, which Twinkle turns into A, B: nothing to say


def test_few_shot_with_twinkles_prompts_is_a_usage_error(capsys):
    assert main(["--model", "m", "--prompt-style", "twinkle", "--num-fewshot", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "add --prompt-style lm-eval for few-shot prompts" in err
    assert "Traceback" not in err


def test_any_language_of_the_map_picks_its_system_prompt():
    t = translate(_config(dataset_paths=["a/", "b/"], datasets_prompt_map={"a/": "ja", "b/": "ko"},
                          system_prompt={"ja": "日本語で", "zh": "中文系統"}))
    cfg = build_config(t.values)  # Twinkle's language codes are free; this project's templates are en and zh
    assert (cfg.system_prompt, cfg.prompt_lang) == ("日本語で", "en")
    assert cfg.for_dataset("b/").system_prompt == "中文系統"  # ko is not set: zh's
    assert sum("datasets_prompt_map: 'ja' for a/ picks its system prompt" in n for n in t.notes) == 1


def test_patterns_for_pattern_or_box_are_named_not_silently_dropped():
    t = translate(_config(dataset_paths=["a/"], evaluation_method="pattern", strategy_config={"patterns": ["=(.)"]}))
    assert t.values["method"] == "pattern" and "answer_regex" not in t.values
    note = "evaluation.strategy_config.patterns: Twinkle Eval's pattern reads with these"
    assert any(n.startswith(note) for n in t.notes)
