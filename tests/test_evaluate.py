"""The Python API: several datasets, chat templates, the zh template, model state left as found."""

from __future__ import annotations

import pytest
from helpers import SHARED, make_model

from twinkle_hf.data.sources import load_datasets
from twinkle_hf.evaluation import evaluate
from twinkle_hf.settings.config import EvalConfig


def test_several_datasets_are_reported_each_on_their_own(tiny_tokenizer, mmlu_dir, all_a_dir):
    cfg = EvalConfig(model="unused", datasets=(str(mmlu_dir), str(all_a_dir)), shuffle=True, seeds=2)
    model = make_model(tiny_tokenizer)
    result = evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False)
    per = result.metrics["datasets"]
    assert set(per) == {"mmlu", "all_a"}
    assert per["mmlu"]["metrics"]["accuracy"]["n_questions"] == 14
    assert per["all_a"]["metrics"]["accuracy"]["n_questions"] == 18
    assert result.metrics["overall"]["accuracy"]["n_questions"] == 32
    assert len(result.predictions) == 32 * 3


def test_model_state_is_restored(tiny_tokenizer, all_a_dir):
    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), limit=1)
    model = make_model(tiny_tokenizer).train()
    evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False)
    assert model.training


def test_state_takes_an_accelerate_state_and_accelerator_is_its_old_name(tiny_tokenizer, all_a_dir):
    from accelerate import PartialState

    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), limit=1)
    model, data = make_model(tiny_tokenizer), load_datasets(cfg)
    plain = evaluate(model, tiny_tokenizer, data, cfg, progress=False)
    given = evaluate(model, tiny_tokenizer, data, cfg, state=PartialState(cpu=True), progress=False)
    with pytest.warns(DeprecationWarning, match="state="):
        old = evaluate(model, tiny_tokenizer, data, cfg, accelerator=PartialState(cpu=True), progress=False)
    assert plain.predictions.pred.tolist() == given.predictions.pred.tolist() == old.predictions.pred.tolist()


def test_zh_template_end_to_end(tiny_tokenizer, all_a_dir):
    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), prompt_lang="zh", log_prompts=True, limit=2)
    result = evaluate(make_model(tiny_tokenizer), tiny_tokenizer, load_datasets(cfg), cfg, progress=False)
    assert all(p.startswith("以下為") and p.endswith("\n答案：") for p in result.predictions.prompt)


@pytest.mark.skipif(not (SHARED / "tokenizers" / "qwen3").is_dir(), reason=f"qwen3 tokenizer not in {SHARED}")
def test_chat_template_wraps_the_prompt_and_scores_the_bare_letter(all_a_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(SHARED / "tokenizers" / "qwen3")
    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), apply_chat_template=True, log_prompts=True,
                     limit=2)
    model = make_model(tok, layers=1, favour="A")  # the assistant turn starts with "A", no space
    result = evaluate(model, tok, load_datasets(cfg), cfg, progress=False)
    prompt = result.predictions.prompt[0]
    assert prompt.startswith("<|im_start|>user\n")
    # Qwen3's template opens a think block after the assistant tag unless thinking is off: letter
    # scoring renders it off, so the letter is read right after the (empty) think block.
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert result.metrics["overall"]["acc_original"]["value"] == 1.0  # gold is always A
    assert not result.metrics["overall"]["letter_mass"]["low"]


@pytest.mark.skipif(not (SHARED / "tokenizers" / "qwen3").is_dir(), reason=f"qwen3 tokenizer not in {SHARED}")
def test_chat_template_kwargs_reach_the_template(all_a_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(SHARED / "tokenizers" / "qwen3")
    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), apply_chat_template=True, log_prompts=True,
                     limit=1, chat_template_kwargs={"enable_thinking": True})
    result = evaluate(make_model(tok, layers=1), tok, load_datasets(cfg), cfg, progress=False)
    assert result.predictions.prompt[0].endswith("<|im_start|>assistant\n")


def test_context_policy_drops_fewshot_examples_then_errors(tiny_tokenizer, mmlu_dir):
    from twinkle_hf.errors import TwinkleError

    base = EvalConfig(model="unused", datasets=(str(mmlu_dir),), limit=2, log_prompts=True)
    model = make_model(tiny_tokenizer)
    zero = evaluate(model, tiny_tokenizer, load_datasets(base), base, progress=False)
    longest_zero = max(len(tiny_tokenizer(p)["input_ids"]) for p in zero.predictions.prompt)
    cfg = EvalConfig(model="unused", datasets=(str(mmlu_dir),), limit=2, log_prompts=True, num_fewshot=3)
    model.config.max_position_embeddings = longest_zero + 2  # room for no few-shot example at all
    cut = evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False)
    assert cut.timing["fewshot_shortened_rows"] == len(cut.predictions) == 4
    assert all(len(tiny_tokenizer(p)["input_ids"]) <= longest_zero + 2 for p in cut.predictions.prompt)
    model.config.max_position_embeddings = longest_zero - 1
    with pytest.raises(TwinkleError, match="without few-shot examples"):
        evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False)
