"""Builders for offline test fixtures: a tiny byte-level BPE tokenizer and tiny random Llama models."""

from __future__ import annotations

import os
from pathlib import Path

import torch

# The real assets (tokenizers, MMLU, the SmolLM2 GGUF; see the README's "Test" section): $TWINKLE_HF_SHARED,
# else ../shared next to the project root. Tests that need them skip, with the path, when they are absent.
SHARED_ENV = "TWINKLE_HF_SHARED"
SHARED = Path(os.environ.get(SHARED_ENV) or Path(__file__).resolve().parents[1].parent / "shared").absolute()
SMOLLM_GGUF = SHARED / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MMLU_DIR = SHARED / "data" / "mmlu" / "data"


def real_model_marks() -> list:
    """A module's marks for tests of the real SmolLM2 on real MMLU: slow, and skipped with the reason
    where the file, the data or the gguf reader is missing."""
    import importlib.util

    import pytest

    return [pytest.mark.slow,
            pytest.mark.skipif(not SMOLLM_GGUF.is_file(), reason=f"real model not found: {SMOLLM_GGUF}"),
            pytest.mark.skipif(not MMLU_DIR.is_dir(), reason=f"MMLU files not found: {MMLU_DIR}"),
            pytest.mark.skipif(importlib.util.find_spec("gguf") is None, reason="needs `pip install gguf`")]

TOKENIZER_DIRS = sorted((SHARED / "tokenizers").glob("*")) if (SHARED / "tokenizers").is_dir() else []

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """``scripts/<name>.py`` imported as a module (registered in sys.modules, so that its dataclasses
    resolve their annotations)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"twinkle_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_CORPUS = [
    "The following are multiple choice questions (with answers) about high school biology.",
    "Which of these is a mammal? A. shark B. whale C. trout D. frog Answer: B",
    "What is 2 + 2? A. 3 B. 4 C. 5 D. 22 E. 1 F. 0 Answer: A Answer: C Answer: D Answer: E Answer: F",
]


def make_tokenizer(extra: tuple[str, ...] = ()):
    """A 400-token byte-level BPE trained in ~1 s: same " A" vs "A" behaviour as GPT-2/Llama-3;
    ``extra`` lines join its training text (e.g. more answer letters)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"])
    tok.train_from_iterator((_CORPUS + list(extra)) * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


def make_model(tokenizer, seed: int = 0, favour: str | None = None, layers: int = 2):
    """A tiny random LlamaForCausalLM for ``tokenizer``.

    ``favour`` plants a bias: every position's output is the same vector (attention and MLP
    outputs are zeroed and all embeddings are equal), and the lm_head row of ``favour``'s token
    points along it, so the model prefers that token after any prompt.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=2048, tie_word_embeddings=False,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    model = LlamaForCausalLM(config).eval()
    if favour is not None:
        (token_id,) = tokenizer(favour, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.o_proj.weight.zero_()
                layer.mlp.down_proj.weight.zero_()
            model.model.embed_tokens.weight.copy_(torch.ones_like(model.model.embed_tokens.weight))
            model.lm_head.weight.mul_(0.01)
            model.lm_head.weight[token_id] = 5.0
    return model


def save_model_dir(path: Path, tokenizer, model) -> Path:
    """A model directory as a user would have it: weights + config + tokenizer."""
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def make_writer_model(tokenizer, pieces: list[str], stop: bool = True):
    """A tiny Llama whose greedy output after any prompt is ``"".join(pieces)``, then end of text.

    Each piece becomes one added token. Attention and MLP outputs are zeroed, so a position's
    hidden state is its token's embedding: every ordinary token shares one direction and piece i
    has its own (orthonormal, so nothing ties), and the lm_head row of the token meant to follow
    points along the current one's direction. ``stop=False`` leaves out the end-of-text step, so
    the model writes its pieces over and over (a truncated output). Mutates ``tokenizer``.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer.add_tokens(pieces)
    ids = tokenizer.convert_tokens_to_ids(pieces)
    assert len(set(ids)) == len(pieces), "pieces must be distinct"
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    directions = torch.linalg.qr(torch.randn(32, len(pieces) + 1))[0].T  # orthonormal rows
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight[:] = directions[0]
        model.lm_head.weight.zero_()
        for i, token in enumerate(ids):
            model.model.embed_tokens.weight[token] = directions[i + 1]
            model.lm_head.weight[token] = 30 * directions[i]  # follows direction i: the token before it
        follows_last = tokenizer.eos_token_id if stop else ids[-1]  # without a stop, the last piece repeats
        model.lm_head.weight[follows_last] += 30 * directions[len(pieces)]
    return model


class OomOver(torch.nn.Module):
    """A model that raises CUDA-style out-of-memory for any forward of more than ``limit`` tokens
    (cached ones included), and otherwise passes everything on."""

    def __init__(self, model, limit: int):
        super().__init__()
        self.inner, self.limit, self.config = model, limit, model.config

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, logits_to_keep=0,
                cache=None):
        held = cache.get_seq_length() if cache is not None else 0  # a pass without padding sends no mask
        rows, width = input_ids.shape
        tokens = attention_mask.numel() if attention_mask is not None else rows * (held + width)
        if tokens > self.limit:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          use_cache=use_cache, logits_to_keep=logits_to_keep, cache=cache)


def cli_error(capsys, args: list[str]) -> str:
    """Run the CLI in process; it must exit 2 with exactly one error line and no traceback: that line."""
    from twinkle_hf.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("twinkle-hf: error:")]
    assert len(lines) == 1, err
    return lines[0]
