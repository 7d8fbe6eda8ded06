"""Label token ids are resolved in context, on every real tokenizer in ../shared/tokenizers."""

from __future__ import annotations

import functools

import pytest
from helpers import SHARED, TOKENIZER_DIRS, make_tokenizer

from twinkle_hf.errors import TwinkleError
from twinkle_hf.prompts.letters import resolve_letter_ids
from twinkle_hf.prompts.templates import EN_TEMPLATE, ZH_TEMPLATE, format_question

PROMPT = "The following are multiple choice questions (with answers) about anatomy.\n\n" + format_question(
    EN_TEMPLATE, "Which bone?", ["femur", "tibia", "ulna", "radius"])
needs_shared = pytest.mark.skipif(not TOKENIZER_DIRS, reason=f"real tokenizers not found in {SHARED}")


@functools.cache
def _load(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@needs_shared
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
@pytest.mark.parametrize("k", [4, 10, 26])
def test_labels_resolve_to_distinct_single_tokens_in_context(path, k):
    tok = _load(path)
    ids = resolve_letter_ids(tok, PROMPT, k)
    assert len(set(ids)) == k
    base = tok(PROMPT)["input_ids"]
    for letter, token in zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", ids):
        assert tok(PROMPT + " " + letter)["input_ids"] == base + [token]


@needs_shared
def test_known_ids_space_vs_no_space():
    # shared/README.md: after "Answer:" the label is " A": GPT-2 317 (not 32), Llama-3/Qwen 362, Llama-2 319.
    expected = {"gpt2": 317, "llama3": 362, "qwen3": 362, "llama2": 319}
    for name, token in expected.items():
        assert resolve_letter_ids(_load(SHARED / "tokenizers" / name), PROMPT, 1)[0] == token


@needs_shared
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
def test_zh_cue_resolves(path):
    prompt = format_question(ZH_TEMPLATE, "哪一個？", ["甲", "乙", "丙", "丁"])
    ids = resolve_letter_ids(_load(path), prompt, 4, label_prefix=ZH_TEMPLATE.label_prefix)
    assert len(set(ids)) == 4


def test_a_label_that_merges_with_the_prompt_is_an_error():
    tok = make_tokenizer()
    # "Answer: " + "A" -> the trailing space merges with the letter: not one clean new token
    with pytest.raises(TwinkleError, match="not exactly one new token"):
        resolve_letter_ids(tok, "Answer: ", 4, label_prefix="A")


def test_tiny_tokenizer_resolves():
    tok = make_tokenizer()
    assert len(set(resolve_letter_ids(tok, PROMPT, 6))) == 6
