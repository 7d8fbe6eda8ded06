"""Shared-prefix KV reuse computes what the plain path computes, on real tokenizers too."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from helpers import SHARED, TOKENIZER_DIRS, OomOver, make_model

from twinkle_hf.data.sources import load_datasets
from twinkle_hf.engine.prefix import MIN_PREFIX, common_prefix, plan_jobs
from twinkle_hf.engine.scoring import Prompts, ScoreSettings, score_prompts
from twinkle_hf.evaluation import evaluate
from twinkle_hf.settings.config import EvalConfig

QUIET = ScoreSettings(progress=False)



def test_common_prefix_leaves_a_token_for_every_row():
    assert common_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 4, 9]]) == 3
    assert common_prefix([[7, 8], [7, 8]]) == 1
    assert common_prefix([[1], [2]]) == 0


def test_plan_jobs_shares_only_long_prefixes(tiny_tokenizer):
    model = make_model(tiny_tokenizer)
    shared = list(range(100, 100 + MIN_PREFIX))
    rows = [shared + [1, 2], shared + [3], [5] * 20, shared[:4] + [9], shared[:4] + [8]]
    jobs = plan_jobs(model, rows, ["a", "a", "b", "c", "c"])
    assert [(j.prefix_len, j.rows) for j in jobs] == [(MIN_PREFIX, [0, 1]), (0, [2, 3, 4])]
    assert [(j.prefix_len, j.rows) for j in plan_jobs(model, rows, None)] == [(0, [0, 1, 2, 3, 4])]


def _pair(model, tokenizer, dataset, **settings):
    results = []
    for share in (True, False):
        cfg = EvalConfig(model="unused", datasets=(str(dataset),), share_prefix=share, **settings)
        results.append(evaluate(model, tokenizer, load_datasets(cfg), cfg, progress=False))
    return results


def _assert_same(shared, plain):
    assert shared.predictions.pred.tolist() == plain.predictions.pred.tolist()
    for a, b in zip(shared.predictions.letters.probs, plain.predictions.letters.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert shared.timing["computed_tokens"] < plain.timing["computed_tokens"] <= plain.timing["tokens"]
    assert plain.timing["repeated_rows"] == shared.timing["repeated_rows"]
    p = plain.predictions
    if shared.config.num_fewshot == 0:  # a prompt is its question and order: each distinct one runs once, in full
        distinct = {(d, i, tuple(perm)): n for d, i, perm, n in zip(p.dataset, p.id, p.perm, p.prompt_tokens)}
        assert plain.timing["computed_tokens"] == sum(distinct.values())
        assert plain.timing["repeated_rows"] == len(p) - len(distinct) > 0
    assert shared.timing["shared_prefixes"] > 0 and plain.timing["shared_prefixes"] == 0


@pytest.mark.parametrize("settings", [
    {"num_fewshot": 2, "shuffle": True, "shuffle_mode": "cyclic"},
    {"num_fewshot": 0, "shuffle": True, "seeds": 3},
    {"num_fewshot": 1, "shuffle": True, "seeds": 2, "batch_size": 3},
])
def test_shared_prefix_equals_plain_on_the_tiny_model(tiny_tokenizer, mmlu_dir, settings):
    _assert_same(*_pair(make_model(tiny_tokenizer, seed=4), tiny_tokenizer, mmlu_dir, limit=4, **settings))


def test_fewshot_from_the_evaluated_data_still_shares(tiny_tokenizer, all_a_dir):
    shared, plain = _pair(make_model(tiny_tokenizer, seed=5), tiny_tokenizer, all_a_dir, num_fewshot=2,
                          shuffle=True, seeds=2)
    _assert_same(shared, plain)


@functools.cache
def _tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@pytest.mark.skipif(not TOKENIZER_DIRS, reason=f"real tokenizers not found in {SHARED}")
@pytest.mark.parametrize("path", TOKENIZER_DIRS, ids=[p.name for p in TOKENIZER_DIRS])
def test_shared_prefix_equals_plain_with_real_tokenizers(path, mmlu_dir):
    tok = _tokenizer(path)
    model = make_model(tok, seed=6, layers=1)
    _assert_same(*_pair(model, tok, mmlu_dir, limit=3, num_fewshot=1, shuffle=True, seeds=2))


def _token_rows(vocab: int, lengths: dict[str, int], seed: int = 0, tails: tuple[int, int] = (1, 13)):
    """Per group: a random shared prefix of the given length, then 3-5 random continuations of
    ``tails`` tokens (a continuation may start like another: the scorer takes the whole common part)."""
    rng = np.random.default_rng(seed)  # explicit seed: fixture tokens only
    rows, groups = [], []
    for name, n in lengths.items():
        prefix = rng.integers(3, vocab, size=n).tolist()
        for _ in range(int(rng.integers(3, 6))):
            rows.append(prefix + rng.integers(3, vocab, size=int(rng.integers(*tails))).tolist())
            groups.append(name)
    return rows, groups


@pytest.mark.parametrize("batch_size", [1, 3, "auto"])
def test_prefixes_of_different_lengths_batched_together_equal_plain(tiny_tokenizer, batch_size):
    model = make_model(tiny_tokenizer, seed=7)
    lengths = {"a": MIN_PREFIX, "b": MIN_PREFIX + 3, "c": 40, "d": 41, "e": 75}
    rows, groups = _token_rows(len(tiny_tokenizer), lengths)
    letters = [[5, 6, 7, 8]] * len(rows)
    plain = score_prompts(model, Prompts(rows, letters), ScoreSettings(batch_size, progress=False))
    shared = score_prompts(model, Prompts(rows, letters, groups), ScoreSettings(batch_size, progress=False))
    for a, b in zip(shared.probs, plain.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(shared.label_mass, plain.label_mass, rtol=1e-4)
    assert shared.stats.shared_prefixes == len(lengths)
    if batch_size == "auto":  # prefixes of similar length run together
        assert shared.stats.prefix_batches < len(lengths)
    assert shared.stats.computed_tokens < plain.stats.computed_tokens == plain.stats.tokens


def test_similar_prefixes_run_in_one_batch_and_so_do_their_continuations(tiny_tokenizer):
    model = make_model(tiny_tokenizer, seed=9)
    rows, groups = _token_rows(len(tiny_tokenizer), {"a": 40, "b": 41, "c": 41}, tails=(6, 7))
    letters = [[5, 6, 7, 8]] * len(rows)
    shared = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    assert (shared.stats.prefix_batches, shared.stats.batches) == (1, 1)
    plain = score_prompts(model, Prompts(rows, letters), QUIET)
    for a, b in zip(shared.probs, plain.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_out_of_memory_in_the_prefix_path_halves_and_keeps_results(tiny_tokenizer):
    model = make_model(tiny_tokenizer, seed=8)
    rows, groups = _token_rows(len(tiny_tokenizer), {"a": 60, "b": 62, "c": 64, "d": 30})
    letters = [[5, 6, 7, 8]] * len(rows)
    want = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    got = score_prompts(OomOver(model, limit=150), Prompts(rows, letters, groups), QUIET)
    assert got.stats.oom_retries >= 1 and got.stats.shared_prefixes == 4
    for a, b in zip(got.probs, want.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)


def _store_sizes(monkeypatch) -> list[int]:
    """The prefix tokens of every store the scorer builds."""
    from twinkle_hf.engine import scoring

    sizes: list[int] = []
    original = scoring.PrefixStore

    def store(lengths, *args):
        sizes.append(sum(lengths))
        return original(lengths, *args)

    monkeypatch.setattr(scoring, "PrefixStore", store)
    return sizes


def test_a_store_stays_within_the_memory_share_of_what_is_free(tiny_tokenizer, monkeypatch):
    """A device that says how much is free caps each store at KV_MEMORY_SHARE of it: more, smaller
    stores, the same scores."""
    from twinkle_hf.engine import batching
    from twinkle_hf.engine.forward import kv_bytes_per_token

    model = make_model(tiny_tokenizer, seed=8)
    rows, groups = _token_rows(len(tiny_tokenizer), {"a": 60, "b": 62, "c": 64, "d": 30})
    letters = [[5, 6, 7, 8]] * len(rows)
    sizes = _store_sizes(monkeypatch)
    want = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    assert len(sizes) == 1
    whole = sizes[0]  # all four prefixes in one store
    cap = 130  # prefix tokens: room for two of the prefixes at a time
    monkeypatch.setattr(batching, "free_memory", lambda device: int(cap * kv_bytes_per_token(model)
                                                                     / batching.KV_MEMORY_SHARE) + 1)
    sizes.clear()
    got = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    assert len(sizes) > 1 and max(sizes) <= cap and sum(sizes) == whole
    for a, b in zip(got.probs, want.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_out_of_memory_allocating_a_store_shrinks_the_store(tiny_tokenizer, monkeypatch):
    """A store too large for the device: no pass can help, so the store halves and its prefixes are
    built again in smaller stores; every row keeps its score. A single prefix that cannot fit is a
    clear error."""
    from twinkle_hf.engine.prefix import PrefixStore
    from twinkle_hf.errors import TwinkleError

    model = make_model(tiny_tokenizer, seed=8)
    rows, groups = _token_rows(len(tiny_tokenizer), {"a": 60, "b": 62, "c": 64, "d": 30})
    letters = [[5, 6, 7, 8]] * len(rows)
    want = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    limit = {"tokens": 100}
    original = PrefixStore._allocate

    def allocate(self, part):
        if sum(self.lengths) > limit["tokens"]:
            raise RuntimeError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return original(self, part)

    monkeypatch.setattr(PrefixStore, "_allocate", allocate)
    sizes = _store_sizes(monkeypatch)
    got = score_prompts(model, Prompts(rows, letters, groups), QUIET)
    built = [s for s in sizes if s <= limit["tokens"]]  # the stores that were allocated
    assert got.stats.oom_retries >= 1 and sizes[0] > limit["tokens"] and len(built) > 1
    assert got.stats.shared_prefixes == 4 and got.stats.rows == len(rows)
    for a, b in zip(got.probs, want.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    limit["tokens"] = 40  # the 64-token prefix alone does not fit
    with pytest.raises(TwinkleError, match="single shared prefix"):
        score_prompts(model, Prompts(rows, letters, groups), QUIET)


def _spy_index_select(monkeypatch) -> list:
    """Every index_select's (tensor device, index device), as it is called."""
    calls = []
    original = torch.Tensor.index_select

    def spy(self, dim, index):
        calls.append((self.device, index.device))
        return original(self, dim, index)

    monkeypatch.setattr(torch.Tensor, "index_select", spy)
    return calls

def test_prefix_gather_indexes_each_layer_on_its_own_device(monkeypatch, tiny_tokenizer):
    """Under --device-map the cached layers sit on several devices; the gather index of each
    layer must live where that layer lives (one index on the first layer's device fails on GPUs)."""
    from twinkle_hf.engine.prefix import PrefixBatch

    model = make_model(tiny_tokenizer)
    devices = [torch.device("cpu"), torch.device("meta")]
    layers = tuple((torch.zeros(2, 2, 5, 8, device=d), torch.zeros(2, 2, 5, 8, device=d)) for d in devices)
    batch = PrefixBatch(lengths=(3, 5), layers=layers, config=model.config, keyword="past_key_values")
    calls = _spy_index_select(monkeypatch)
    _, mask = batch.arguments([0, 1, 1])
    assert len(calls) == 4 and all(tensor == index for tensor, index in calls), calls
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]]


def test_device_map_with_shared_prefixes_matches_the_plain_model(tiny_model_dir, mmlu_dir):
    """A model loaded with a device_map (accelerate hooks; every layer on the CPU here) scores
    exactly like the plain model, shared prefixes included. Several GPUs: see the README."""
    from twinkle_hf.models.loading import load_model, load_tokenizer

    results = []
    for device_map in (None, "auto"):
        cfg = EvalConfig(model=str(tiny_model_dir), datasets=(str(mmlu_dir),), device="cpu", device_map=device_map,
                         num_fewshot=2, shuffle=True, shuffle_mode="cyclic", limit=3, bootstrap=0)
        model, _ = load_model(cfg)
        results.append(evaluate(model, load_tokenizer(cfg), None, cfg, progress=False))
    plain, mapped = results
    assert mapped.timing["shared_prefixes"] > 0
    assert mapped.predictions.pred.tolist() == plain.predictions.pred.tolist()
    for a, b in zip(mapped.predictions.letters.probs, plain.predictions.letters.probs):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_start_every_prefix_shares_runs_once_and_gives_the_same_cache(tiny_tokenizer):
    from twinkle_hf.engine.prefix import PrefixBatch

    model = make_model(tiny_tokenizer, seed=9)
    rng = np.random.default_rng(1)  # fixture tokens only
    header = rng.integers(3, len(tiny_tokenizer), size=24).tolist()
    prefixes = [header + rng.integers(3, len(tiny_tokenizer), size=n).tolist() for n in (5, 30, 1, 12)]
    with torch.inference_mode():
        alone = PrefixBatch.build(model, prefixes, 0, torch.device("cpu"))
        shared = PrefixBatch.build(model, prefixes, 0, torch.device("cpu"), share_common=True)
    assert shared.lengths == alone.lengths
    assert (alone.computed, shared.computed) == (sum(map(len, prefixes)), 24 + 5 + 30 + 1 + 12)
    for (k1, v1), (k2, v2) in zip(alone.layers, shared.layers):
        for i, n in enumerate(alone.lengths):  # the real positions; padding differs and stays masked
            torch.testing.assert_close(k2[i, :, :n], k1[i, :, :n], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(v2[i, :, :n], v1[i, :, :n], atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not TOKENIZER_DIRS, reason="real tokenizers not found in ../shared/tokenizers")
@pytest.mark.parametrize("name", ["qwen3", "llama3"])
def test_shared_prefix_equals_plain_with_a_chat_template(name, mmlu_dir):
    path = next((p for p in TOKENIZER_DIRS if p.name == name), None)
    if path is None:
        pytest.skip(f"../shared/tokenizers/{name} not found")
    tok = _tokenizer(path)
    model = make_model(tok, seed=10, layers=1)
    _assert_same(*_pair(model, tok, mmlu_dir, limit=3, num_fewshot=1, shuffle=True, seeds=2,
                        apply_chat_template=True))


@pytest.mark.parametrize("batch_size", [2, "auto"])
def test_continuations_of_prefixes_of_any_length_run_together(tiny_tokenizer, batch_size):
    """One store holds every prefix; the continuations are batched by their own length across
    prefixes (here all of one length: one pass in auto mode, with no padding at all)."""
    model = make_model(tiny_tokenizer, seed=11)
    rows, groups = _token_rows(len(tiny_tokenizer), {"a": MIN_PREFIX, "b": 40, "c": 75, "d": 130}, tails=(5, 6))
    letters = [[5, 6, 7, 8]] * len(rows)
    shared = score_prompts(model, Prompts(rows, letters, groups), ScoreSettings(batch_size, progress=False))
    plain = score_prompts(model, Prompts(rows, letters), ScoreSettings(batch_size, progress=False))
    for a, b in zip(shared.probs, plain.probs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(shared.label_mass, plain.label_mass, rtol=1e-4)
    rests = len(rows) * 5  # every continuation runs 5 tokens, however long its prefix
    assert shared.stats.computed_tokens == sum(lengths := [MIN_PREFIX, 40, 75, 130]) + rests
    if batch_size == "auto":
        assert shared.stats.batches == 1 and shared.stats.prefix_batches == len(lengths)


def test_padding_is_capped_on_the_continuations_run(tiny_tokenizer):
    """Rows under one long prefix with rests of 4 to 12 tokens: a cap on prefix + rest would let
    them pad to 12 in one pass; the tokens run are the rests, so they pad at most 5% (auto)."""
    model = make_model(tiny_tokenizer, seed=12)
    rng = np.random.default_rng(2)  # fixture tokens only
    prefix = rng.integers(3, len(tiny_tokenizer), size=200).tolist()
    rows = [prefix + rng.integers(3, len(tiny_tokenizer), size=n).tolist() for n in range(4, 13) for _ in range(3)]
    letters = [[5, 6, 7, 8]] * len(rows)
    out = score_prompts(model, Prompts(rows, letters, ["g"] * len(rows)), QUIET)
    assert out.stats.prefix_batches == 1 and out.stats.computed_tokens == 200 + sum(len(r) - 200 for r in rows)
    assert out.stats.padded_tokens - 200 <= 1.05 * (out.stats.computed_tokens - 200)
    plain = score_prompts(model, Prompts(rows, letters), ScoreSettings(1, progress=False))  # one row a pass
    for a, b in zip(out.probs, plain.probs):  # passes of one prefix and equal rests send no mask: same scores
        np.testing.assert_allclose(a, b, atol=1e-5)


class _Spy(torch.nn.Module):
    """Passes everything on to ``model`` and keeps each call's attention mask."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.config, self.masks = model, model.config, []

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, logits_to_keep=0,
                cache=None):
        self.masks.append(attention_mask)
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          use_cache=use_cache, logits_to_keep=logits_to_keep, cache=cache)


def test_a_pass_without_padding_sends_no_mask(tiny_tokenizer):
    model = make_model(tiny_tokenizer, seed=13)
    rng = np.random.default_rng(3)  # fixture tokens only
    even = [rng.integers(3, len(tiny_tokenizer), size=9).tolist() for _ in range(4)]
    spy = _Spy(model)
    out = score_prompts(spy, Prompts(even, [[5, 6]] * 4), QUIET)
    assert spy.masks == [None]
    ragged = even[:2] + [even[2][:5]]
    spy.masks.clear()
    score_prompts(spy, Prompts(ragged, [[5, 6]] * 3), ScoreSettings(3, progress=False))
    assert [m is not None for m in spy.masks] == [True]
    alone = [score_prompts(model, Prompts([r], [[5, 6]]), QUIET).probs[0] for r in even]
    for a, b in zip(out.probs, alone):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_prefix_store_gathers_each_layer_on_its_own_device(monkeypatch, tiny_tokenizer):
    """The store of a --device-map model: each layer's gather index lives where the layer does."""
    from twinkle_hf.engine.prefix import PrefixStore

    model = make_model(tiny_tokenizer)
    store = PrefixStore([3, 5], model.config, "past_key_values")
    store.layers = [(torch.zeros(2, 8, 4, device=d), torch.zeros(2, 8, 4, device=d))
                    for d in (torch.device("cpu"), torch.device("meta"))]
    calls = _spy_index_select(monkeypatch)
    kwargs, mask = store.arguments([0, 1, 1])
    assert len(calls) == 4 and all(tensor == index for tensor, index in calls), calls
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]]
    assert kwargs["past_key_values"].layers[0].keys.shape == (3, 2, 5, 4)
