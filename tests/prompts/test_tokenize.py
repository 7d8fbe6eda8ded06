"""Prompts are tokenized through a fast tokenizer's Rust core where that gives the tokenizer's own
ids: checked on every real tokenizer in ../shared/tokenizers, on few-shot, Chinese and chat prompts."""

from __future__ import annotations

import functools

import pytest
from helpers import MMLU_DIR, SHARED, TOKENIZER_DIRS, make_tokenizer

from twinkle_hf.data.load import load_benchmark
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.prompts.prepare import encode_texts as _encode
from twinkle_hf.prompts.templates import EN_TEMPLATE, ZH_TEMPLATE, build_prompt_set

needs_shared = pytest.mark.skipif(not TOKENIZER_DIRS or not MMLU_DIR.is_dir(),
                                  reason=f"real tokenizers or MMLU not found in {SHARED}")


@functools.cache
def _load(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@functools.cache
def _texts() -> tuple[str, ...]:
    """Real MMLU prompts: 2-shot in English, 1-shot with the Chinese template, a few odd strings."""
    data = load_benchmark(str(MMLU_DIR)).rows
    rows = expand_permutations(data.select(range(0, len(data), max(1, len(data) // 40))), "cyclic", 0)
    en = build_prompt_set(rows, EN_TEMPLATE, num_fewshot=2, self_pool=data).texts
    zh = build_prompt_set(rows.select(range(10)), ZH_TEMPLATE, num_fewshot=1, self_pool=data).texts
    odd = ["  leading spaces", "tabs\tand\r\nCRLF\n\n\n", "émoji 🙂 and ZWJ 👩‍🔬", "A", " "]
    return tuple(en + zh + odd)


@needs_shared
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
@pytest.mark.parametrize("special", [True, False])
def test_the_rust_core_gives_the_tokenizers_own_ids(path, special):
    tok = _load(path)
    texts = list(_texts())
    if special and getattr(tok, "chat_template", None):  # a rendered chat prompt, its special tokens as text
        texts += [tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
                  for t in texts[:5]]
    assert _encode(tok, texts, special) == tok(texts, add_special_tokens=special)["input_ids"]


def test_a_tokenizer_whose_core_truncates_is_asked_itself():
    tok = make_tokenizer()
    texts = ["one two three four five six seven eight", "nine ten"]
    want = tok(texts)["input_ids"]
    tok.backend_tokenizer.enable_truncation(max_length=3)  # as a tokenizer.json may ship
    assert _encode(tok, texts, True) == want and len(want[0]) > 3
