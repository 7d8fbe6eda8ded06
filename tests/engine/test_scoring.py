"""The scorer against an independent reference, and against a model with a planted letter bias."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
import torch
from helpers import make_model, make_tokenizer

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.engine.scoring import Prompts, ScoreSettings, score_prompts
from twinkle_hf.errors import TwinkleError
from twinkle_hf.prompts.letters import resolve_letter_ids
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.prompts.templates import EN_TEMPLATE, build_prompt_set

WORDS = ["whale", "shark", "trout", "frog", "cat", "oak", "iron", "salt", "moon", "river", "glass", "rope"]

QUIET = ScoreSettings(progress=False)



def build_prompts(rows, template, **kwargs) -> list[str]:
    """The prompt texts only."""
    return build_prompt_set(rows, template, **kwargs).texts


def questions(n: int, k_of=lambda i: 4) -> datasets.Dataset:
    rng = np.random.default_rng(0)  # explicit seed: fixture text only
    return datasets.Dataset.from_dict(
        {"id": [f"t/s/{i}" for i in range(n)], "subject": ["biology"] * n,
         "question": [" ".join(rng.choice(WORDS, size=1 + i % 7)) + "?" for i in range(n)],
         "choices": [[str(w) for w in rng.choice(WORDS, size=k_of(i), replace=False)] for i in range(n)],
         "answer": [0] * n},
        features=CANONICAL_FEATURES,
    )


def reference_probs(model, tokenizer, prompt: str, k: int) -> np.ndarray:
    """Independent path: one plain, unpadded full forward of prompt + label per option."""
    logps = []
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:k]:
        ids = tokenizer(prompt + " " + letter)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
        logps.append(torch.log_softmax(logits[-2].double(), -1)[ids[-1]].item())
    return torch.softmax(torch.tensor(logps), 0).numpy()


@pytest.fixture(scope="module")
def tiny():
    tok = make_tokenizer()
    return tok, make_model(tok, seed=1)


@pytest.mark.parametrize("batch_size", [1, 3, "auto"])
def test_scores_equal_an_independent_full_forward_reference(tiny, batch_size):
    tok, model = tiny
    rows = expand_permutations(questions(9, k_of=lambda i: 2 + i % 5), "none", 0)
    prompts = build_prompts(rows, EN_TEMPLATE)
    ks = [len(c) for c in rows["choices"]]
    letter_ids = [resolve_letter_ids(tok, p, k) for p, k in zip(prompts, ks)]
    ids = tok(prompts)["input_ids"]
    out = score_prompts(model, Prompts(ids, letter_ids), ScoreSettings(batch_size, progress=False))
    for prompt, k, probs in zip(prompts, ks, out.probs):
        ref = reference_probs(model, tok, prompt, k)
        np.testing.assert_allclose(probs, ref, atol=1e-5)
        assert int(np.argmax(probs)) == int(np.argmax(ref))
    assert out.stats.tokens == sum(len(t) for t in tok(prompts)["input_ids"])
    assert out.stats.padded_tokens >= out.stats.tokens
    assert np.all((out.label_mass > 0) & (out.label_mass <= 1))


def test_planted_bias_model_prefers_a(tiny):
    tok, _ = tiny
    model = make_model(tok, favour=" A")
    rows = expand_permutations(questions(5), "none", 0)
    prompts = build_prompts(rows, EN_TEMPLATE)
    letter_ids = [resolve_letter_ids(tok, p, 4) for p in prompts]
    out = score_prompts(model, Prompts(tok(prompts)["input_ids"], letter_ids), ScoreSettings(2, progress=False))
    assert all(int(np.argmax(p)) == 0 and p[0] > 0.9 for p in out.probs)


class _OomOnce(torch.nn.Module):
    """Wraps a model and raises CUDA-style out-of-memory for batches larger than ``limit``."""

    def __init__(self, model, limit: int):
        super().__init__()
        self.inner, self.limit, self.config, self.calls = model, limit, model.config, []

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask, position_ids=None, use_cache=False, logits_to_keep=0):
        self.calls.append(len(input_ids))
        if len(input_ids) > self.limit:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          logits_to_keep=logits_to_keep)


def test_auto_batch_halves_on_out_of_memory_and_keeps_results(tiny):
    tok, model = tiny
    rows = expand_permutations(questions(40), "none", 0)
    prompts = build_prompts(rows, EN_TEMPLATE)
    letter_ids = [resolve_letter_ids(tok, prompts[0], 4)] * len(prompts)
    ids = tok(prompts)["input_ids"]
    plain = score_prompts(model, Prompts(ids, letter_ids), QUIET)
    wrapped = _OomOnce(model, limit=10)
    out = score_prompts(wrapped, Prompts(ids, letter_ids), QUIET)
    assert out.stats.oom_retries >= 1 and out.stats.final_batch_rows <= 10
    for a, b in zip(plain.probs, out.probs):
        np.testing.assert_allclose(a, b, atol=1e-6)
    with pytest.raises(TwinkleError, match="--batch-size auto"):
        score_prompts(_OomOnce(model, limit=10), Prompts(ids, letter_ids), ScoreSettings(32, progress=False))


class _RowCounter(torch.nn.Module):
    """Passes everything on to ``model`` and counts the rows it is asked to run."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.config, self.rows = model, model.config, 0

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, logits_to_keep=0,
                **cache):
        self.rows += input_ids.shape[0]
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          use_cache=use_cache, logits_to_keep=logits_to_keep, **cache)


@pytest.mark.parametrize("groups", [False, True])
def test_a_prompt_seen_twice_runs_once_and_every_row_gets_its_result(tiny, groups):
    """A shuffled run may draw the same order twice (k=4 has 24): such rows equal an earlier one;
    they are run once, and every row, and the sink, still gets its result."""
    tok, model = tiny
    rows = expand_permutations(questions(6), "random", 0, n_random=3)
    prompts = build_prompts(rows, EN_TEMPLATE)
    ids, letter_ids = tok(prompts)["input_ids"], [resolve_letter_ids(tok, p, 4) for p in prompts]
    ids, letter_ids = ids + ids[:5], letter_ids + letter_ids[:5]  # five more rows equal to earlier ones
    keys = [rows[i % len(rows)]["id"] for i in range(len(ids))] if groups else None
    distinct = len({(tuple(t), tuple(lab)) for t, lab in zip(ids, letter_ids)})
    assert distinct <= len(ids) - 5
    counter, seen = _RowCounter(model), []
    out = score_prompts(counter, Prompts(ids, letter_ids, keys), ScoreSettings(4, progress=False),
                        sink=lambda r, results: seen.extend(r))
    each = [score_prompts(model, Prompts([t], [lab]), QUIET) for t, lab in zip(ids, letter_ids)]
    assert sorted(seen) == list(range(len(ids)))
    assert out.stats.repeated_rows == len(ids) - distinct and out.stats.rows == len(ids)
    assert out.stats.tokens == sum(len(t) for t in ids)
    if not groups:
        assert counter.rows == distinct
    for i, alone in enumerate(each):
        np.testing.assert_allclose(out.probs[i], alone.probs[0], atol=1e-5)
        assert out.label_mass[i] == pytest.approx(alone.label_mass[0], abs=1e-5)
