"""The lockstep's handshake and layout in one process (the multi-process runs: engine/test_sharded.py):
rows through a store, a bounded wait, one read per pass, the same handshake before the first pass
whether a process failed or not, out-of-memory halved in step, and what is read off the model."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import make_model

from twinkle_hf.engine import scoring
from twinkle_hf.engine.forward import kv_bytes_per_token
from twinkle_hf.engine.scoring import Prompts, ScoreSettings, score_prompts
from twinkle_hf.errors import TwinkleError
from twinkle_hf.models.facts import data_parallel_inner
from twinkle_hf.runtime.handshake import Handshake
from twinkle_hf.runtime.layout import Layout, layout_of
from twinkle_hf.runtime.lockstep import Lockstep, LockstepAbort
from twinkle_hf.runtime.memory import peak_rss
from twinkle_hf.runtime.placement import read_placement


class CountingStore:
    """A HashStore that counts its reads."""

    def __init__(self) -> None:
        self.store, self.reads = torch.distributed.HashStore(), 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def multi_get(self, keys):
        self.reads += 1
        return self.store.multi_get(keys)


def _pair(work0, work1) -> list:
    """Two processes' handshakes (threads over one store); what each returned or raised."""
    store = torch.distributed.HashStore()
    shakes = [Handshake((0, 1), r, store, generation=0) for r in (0, 1)]
    out: list = [None, None]

    def run(r, work):
        try:
            out[r] = work(shakes[r])
        except Exception as err:  # what the thread stopped with, for the test to read
            out[r] = err

    threads = [threading.Thread(target=run, args=(r, w)) for r, w in ((0, work0), (1, work1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_every_process_reads_every_row_and_a_bounded_wait_gives_up():
    a, b = _pair(lambda h: h.exchange((1, 0, 0, 7)), lambda h: h.exchange((0, 0, 0, 3)))
    assert a == b == [(1, 0, 0, 7), (0, 0, 0, 3)]
    store = torch.distributed.HashStore()
    assert Handshake((0, 1), 0, store, generation=0).exchange((0, 1, 0, -1), wait=0.2) is None  # nobody came


def _lockstep(model, rank: int, shake: Handshake, processes: int = 2) -> Lockstep:
    layout = Layout(processes=processes, rank=rank, share=rank, shares=processes, leader=True, sharding="fsdp2",
                    step_ranks=tuple(range(processes)))
    return Lockstep(model, layout, torch.device("cpu"), handshake=shake)


def test_a_failure_before_the_first_pass_meets_the_others_size_agreement(tiny_tokenizer):
    """Process 1 fails before its first pass while process 0 agrees on free memory: the same
    handshake, so process 0 stops naming process 1 (an all-reduce MIN against a SUM paired before)."""
    model = make_model(tiny_tokenizer)

    def agree_sizes(shake):
        return _lockstep(model, 0, shake).smallest(1000)

    def fail_first(shake):
        with _lockstep(model, 1, shake):
            raise TwinkleError("a prompt tokenized to zero tokens")

    first, second = _pair(agree_sizes, fail_first)
    assert isinstance(first, LockstepAbort) and str(first).startswith("process 1 stopped with an error")
    assert isinstance(second, TwinkleError) and "zero tokens" in str(second)


def _prompts(tokenizer, n: int = 12) -> Prompts:
    texts = [f"Question {i} about the whale survey{'?' * (i % 5)}\nA. a\nB. b\nAnswer:" for i in range(n)]
    letters = [[tokenizer.encode(f" {c}")[-1] for c in "AB"] for _ in texts]
    return Prompts([tokenizer.encode(t) for t in texts], letters)


def test_one_store_read_per_pass(tiny_tokenizer):
    model, prompts = make_model(tiny_tokenizer).eval(), _prompts(tiny_tokenizer)
    store = CountingStore()
    with _lockstep(model, 0, Handshake((0,), 0, store, generation=0), processes=1) as step:
        out = score_prompts(model, prompts, ScoreSettings(3, 0, False, lockstep=step))
    assert out.stats.batches == step.real_passes > 1
    assert store.reads == step.real_passes + 2  # one per pass, the sizes agreed before, the last drain


def test_an_out_of_memory_under_lockstep_halves_and_gives_the_same_scores(tiny_tokenizer, monkeypatch):
    model, prompts = make_model(tiny_tokenizer).eval(), _prompts(tiny_tokenizer)
    plain = score_prompts(model, prompts, ScoreSettings("auto", 0, False))
    collect, calls = scoring._collect, [0]

    def short_once(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 1:
            raise torch.OutOfMemoryError("planted: out of memory at the logits")
        collect(*args, **kwargs)

    monkeypatch.setattr(scoring, "_collect", short_once)
    with _lockstep(model, 0, Handshake((0,), 0, torch.distributed.HashStore(), generation=0), processes=1) as step:
        out = score_prompts(model, prompts, ScoreSettings("auto", 0, False, lockstep=step))
    assert out.stats.oom_retries == 1 and plain.stats.oom_retries == 0
    for a, b in zip(plain.probs, out.probs):
        np.testing.assert_allclose(b, a, atol=1e-6)


def test_kv_bytes_count_this_process_s_heads_under_tensor_parallelism(tiny_tokenizer):
    model = make_model(tiny_tokenizer)  # 2 key/value heads
    assert kv_bytes_per_token(model, 2) * 2 == kv_bytes_per_token(model) > 0


def test_the_module_inside_data_parallel_wrappers_is_evaluated(tiny_tokenizer):
    model = make_model(tiny_tokenizer)
    assert data_parallel_inner(torch.nn.DataParallel(model)) is model
    assert data_parallel_inner(model) is model


class _Mesh:
    def __init__(self, names, shape):
        self.mesh_dim_names, self.shape, self.ndim = names, shape, len(shape)


class _Shard:
    def is_shard(self):
        return True


class DTensor:  # a stand-in with a DTensor's name, mesh and placements
    def __init__(self, names, shape):
        self.device_mesh, self.placements = _Mesh(names, shape), (_Shard(),) * len(shape)


class _Sharded(torch.nn.Module):
    def __init__(self, names, shape):
        super().__init__()
        self.fake = [DTensor(names, shape)]

    def parameters(self, recurse=True):
        return iter(self.fake)


def test_an_unknown_layout_is_one_clear_line_not_a_guess():
    seen = read_placement(_Sharded(("rows",), (2,)))  # sharded over a mesh dimension that is not "tp", no fully_shard
    assert seen.kind.startswith("unknown: parameters are DTensors sharded over mesh dimension(s) ['rows']")
    with pytest.raises(TwinkleError, match="cannot tell how the model is sharded"):
        layout_of(_Sharded(("rows",), (2,)), None)
    assert read_placement(_Sharded(("rows",), (1,))).kind is None  # a dimension of one process splits nothing


def test_processes_holding_different_models_stop_before_the_first_pass(tiny_tokenizer, monkeypatch):
    from types import SimpleNamespace

    from twinkle_hf.runtime import layout

    model = make_model(tiny_tokenizer)
    mine = layout.parameter_checksum(model, None)
    monkeypatch.setattr(layout, "_all_gather", lambda value, world: [value, (None, (), "0123456789ab")])
    with pytest.raises(TwinkleError, match=rf"process 0: whole, parameters {mine}; process 1: whole, parameters 0123"):
        layout_of(model, SimpleNamespace(num_processes=2, process_index=0))
    monkeypatch.setattr(layout, "_all_gather", lambda value, world: [value, value])
    assert layout_of(model, SimpleNamespace(num_processes=2, process_index=0)).mode == "data parallel"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads VmHWM (Linux)")
def test_an_evaluation_reports_its_own_peak_not_the_training_s(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from twinkle_hf import EvalConfig, evaluate

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    training = np.ones(400 * 2**20 // 8)  # 400 MB held, then freed: the "training" peak
    del training
    before = peak_rss()
    result = evaluate(model, tokenizer, None, EvalConfig(limit=1, bootstrap=0), progress=False)
    reported = result.timing["parallel"]["per_process"][0]["peak_rss_bytes"]
    assert reported < before - 200 * 2**20, (reported, before)
