"""Wrapped models (PEFT/LoRA, torch.compile-style, unknown wrappers) score exactly as the bare model.

An absolute-position model (GPT-2) shows a lost ``position_ids`` at once: a left-padded row is
then read at shifted positions. A freshly initialised LoRA adapter changes nothing (its B matrix is
zero), so bare and wrapped must agree to float precision, padded or not.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from helpers import make_tokenizer

from twinkle_hf.engine.scoring import Prompts, ScoreSettings, score_prompts
from twinkle_hf.models.facts import accepts, unwrap
from twinkle_hf.prompts.letters import resolve_letter_ids

peft = pytest.importorskip("peft", reason="peft is in the test extras (pip install -e '.[test]')")

STEM = "The following are multiple choice questions (with answers) about biology.\n\n"
QUESTIONS = ["Which is a mammal?", "What is 2 + 2, the sum asked about here?", "Salt?",
             "Which of these animals lives in the sea and breathes air through a blowhole on its head?"]


def _prompts() -> list[str]:
    out = []
    for q in QUESTIONS:
        for order in ("whale|shark|trout|frog", "frog|whale|shark|trout"):
            options = "\n".join(f"{letter}. {text}" for letter, text in zip("ABCD", order.split("|")))
            out.append(f"{STEM}{q}\n{options}\nAnswer:")
    return out


@pytest.fixture(scope="module")
def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = make_tokenizer()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=512,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # make positions matter a lot, as in a trained model
        model.transformer.wpe.weight.normal_(0, 1.0)
    return tok, model


def _lora(model):
    """A fresh LoRA adapter on a copy of ``model`` (PEFT changes the model it wraps)."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=4, target_modules=["c_attn"], task_type="CAUSAL_LM", fan_in_fan_out=True)
    return get_peft_model(copy.deepcopy(model), cfg).eval()


def _score(model, tok, batch_size, groups=None):
    prompts = _prompts()
    ids = tok(prompts)["input_ids"]
    letters = [resolve_letter_ids(tok, p, 4) for p in prompts]
    settings = ScoreSettings(batch_size, tok.eos_token_id, progress=False)
    return score_prompts(model, Prompts(ids, letters, groups), settings)


def test_unwrap_finds_the_model_inside_peft(gpt2):
    _, model = gpt2
    wrapped = _lora(model)
    assert type(unwrap(wrapped)) is type(model) and unwrap(wrapped) is not wrapped
    assert accepts(wrapped, "position_ids") and accepts(wrapped, "logits_to_keep")
    assert unwrap(model) is model


def test_lora_wrapped_absolute_position_model_scores_like_the_bare_one(gpt2):
    tok, model = gpt2
    bare = _score(model, tok, 1)  # one prompt per batch: no padding at all
    assert max(np.abs(a - b).max() for a, b in zip(bare.probs, _score(model, tok, 16).probs)) < 1e-5
    padded = _score(_lora(model), tok, 16)
    assert padded.stats.padded_tokens > padded.stats.computed_tokens  # the batch really was padded
    diff = max(np.abs(a - b).max() for a, b in zip(bare.probs, padded.probs))
    assert diff < 1e-5, f"LoRA-wrapped model moved the probabilities by {diff}"


def test_wrapped_model_gets_position_ids_last_logits_and_shared_prefixes(gpt2):
    tok, model = gpt2
    seen: list[set[str]] = []
    wrapped = _lora(model)
    unwrap(wrapped).register_forward_pre_hook(lambda mod, args, kwargs: seen.append(set(kwargs)), with_kwargs=True)
    groups = [i // 2 for i in range(len(_prompts()))]  # a question's two orders share its stem
    out = _score(wrapped, tok, 16, groups=groups)
    assert out.stats.shared_prefixes > 0
    assert seen and all({"position_ids", "logits_to_keep"} <= keys for keys in seen)
    bare = _score(model, tok, 1)
    assert max(np.abs(a - b).max() for a, b in zip(bare.probs, out.probs)) < 1e-5


class _NoPositions(torch.nn.Module):
    """An unknown wrapper whose forward cannot take position_ids (as some remote-code models)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask=None, use_cache=None):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache)


def test_model_without_position_ids_is_batched_without_padding_and_warned(gpt2):
    tok, model = gpt2
    bare = _score(model, tok, 1)
    with pytest.warns(UserWarning, match="no position_ids"):
        out = _score(_NoPositions(model), tok, 16)
    assert out.stats.padded_tokens == out.stats.computed_tokens  # nothing padded
    assert max(np.abs(a - b).max() for a, b in zip(bare.probs, out.probs)) < 1e-5
