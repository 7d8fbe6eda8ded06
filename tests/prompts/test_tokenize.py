"""Prompts are tokenized through a fast tokenizer's Rust core where that gives the tokenizer's own
ids: checked on every real tokenizer in ../shared/tokenizers, on few-shot, Chinese and chat prompts."""

from __future__ import annotations

import functools

import pytest
from helpers import MMLU_DIR, SHARED, TOKENIZER_DIRS, make_tokenizer

from twinkle_hf.data.load import load_benchmark
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.prompts.templates import EN_TEMPLATE, ZH_TEMPLATE, build_prompt_set
from twinkle_hf.prompts.tokenize import encode_grouped, shared_start
from twinkle_hf.prompts.tokenize import encode_texts as _encode

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


@functools.cache
def _grouped_texts() -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], tuple[str, ...]]:
    """Real MMLU prompts with their prefix groups: 5-shot under cyclic orders (a group per few-shot
    block) and zero-shot (a group per question's orders); 12 questions of each of 4 subjects, and
    60 spread over all of them."""
    item = load_benchmark(str(MMLU_DIR))
    data = item.rows
    subjects = data["subject"][:]
    first = {s: subjects.index(s) for s in ("anatomy", "world_religions", "college_medicine", "formal_logic")}
    spread = range(0, len(data), max(1, len(data) // 60))
    picked = data.select(sorted({*spread, *(i + n for i in first.values() for n in range(12))}))
    rows = expand_permutations(picked, "cyclic", 0)
    built = build_prompt_set(rows, EN_TEMPLATE, num_fewshot=5, pool=item.fewshot, self_pool=data, shuffled=True)
    zero = build_prompt_set(rows, EN_TEMPLATE, num_fewshot=0, shuffled=True).texts
    return tuple(built.texts), tuple(built.block_ids), tuple(zero), tuple(rows["id"][:])


@needs_shared
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
def test_a_groups_shared_start_tokenized_once_gives_the_same_ids(path):
    """Few-shot blocks, zero-shot question stems and chat-wrapped prompts: every row's ids equal
    those of the whole prompt tokenized on its own."""
    tok = _load(path)
    texts, blocks, zero, ids = (list(x) for x in _grouped_texts())
    for special in (True, False):
        assert encode_grouped(tok, texts, blocks, special) == _encode(tok, texts, special)
        assert encode_grouped(tok, zero, ids, special) == _encode(tok, zero, special)
    if getattr(tok, "chat_template", None):
        chat = [tok.apply_chat_template([{"role": "system", "content": "You are an examiner."},
                                         {"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
                for t in texts]
        assert encode_grouped(tok, chat, blocks, False) == _encode(tok, chat, False)


class _Core:
    """A tokenizer's Rust core seen through a wrapper (the Rust object's methods cannot be replaced)."""

    def __init__(self, core):
        self.core, self.seen, self.truncation, self.padding = core, [0], None, None

    def encode(self, *args, **kwargs):
        return self.core.encode(*args, **kwargs)

    def encode_batch(self, texts, **kwargs):
        self.seen[0] += sum(len(t) for t in texts)
        return self.core.encode_batch(texts, **kwargs)

    def encode_batch_fast(self, texts, **kwargs):
        self.seen[0] += sum(len(t) for t in texts)
        return self.core.encode_batch_fast(texts, **kwargs)


@needs_shared
def test_the_shared_start_is_tokenized_once_per_group_and_a_failed_check_tokenizes_in_full(monkeypatch):
    from tokenizers import normalizers

    qwen = next((p for p in TOKENIZER_DIRS if p.name == "qwen3"), None)
    if qwen is None:
        pytest.skip("the qwen3 tokenizer is not in ../shared")
    from transformers import AutoTokenizer

    texts, blocks, _, _ = (list(x) for x in _grouped_texts())
    big = [i for i, b in enumerate(blocks) if blocks.count(b) > 8]  # the 4 subjects' 12 questions
    texts, blocks = [texts[i] for i in big], [blocks[i] for i in big]
    tok = AutoTokenizer.from_pretrained(qwen)
    core = _Core(tok.backend_tokenizer)
    monkeypatch.setattr(type(tok), "backend_tokenizer", property(lambda self: core))
    want = tok(texts)["input_ids"]
    assert encode_grouped(tok, texts, blocks, True) == want
    assert core.seen[0] < 0.5 * sum(len(t) for t in texts)  # each block once (plus each group's ends)

    # A normalizer that puts a word before any text it is given: a row's rest tokenized alone starts
    # differently, so every group's check fails and its rows are tokenized in full.
    core.core.normalizer = normalizers.Prepend("Question ")
    core.seen[0] = 0
    want = [e.ids for e in core.core.encode_batch(texts, add_special_tokens=True)]
    core.seen[0] = 0
    assert encode_grouped(tok, texts, blocks, True) == want
    assert core.seen[0] >= sum(len(t) for t in texts)


def test_a_group_whose_middle_row_differs_early_is_cut_before_it_differs():
    tok = make_tokenizer()
    start = "one two three four five six seven eight nine ten " * 12
    texts = [start + "alpha", start[:40] + "X" + start[41:] + "beta", start + "gamma", start + "delta"]
    assert encode_grouped(tok, texts, [0, 0, 0, 0], True) == tok(texts)["input_ids"]
    assert shared_start(texts) == 40 and shared_start(["abc"]) == 3 and shared_start(["ab", "abc"]) == 2
