"""--tensor-parallel's mistakes are one line and exit 2 before any weight loads; sharding is read off
the model (no flag); the processes refuse to run different work instead of pairing it up wrongly."""

from __future__ import annotations

import pytest
from helpers import make_tokenizer, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.errors import TwinkleError
from twinkle_hf.models.parallel import check_tensor_parallel
from twinkle_hf.runtime.layout import Layout, agree
from twinkle_hf.runtime.placement import sharding
from twinkle_hf.settings.config import EvalConfig


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def no_weights(monkeypatch):
    """Loading any weights fails the test: every mistake must be found before."""
    from transformers import AutoModelForCausalLM

    def refuse(*args, **kwargs):
        raise AssertionError("weights were loaded before the mistake was found")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", refuse)


def test_processes_must_divide_into_groups(tiny_model_dir, capsys, monkeypatch, no_weights):
    monkeypatch.setenv("WORLD_SIZE", "3")
    err = _error(capsys, ["--model", str(tiny_model_dir), "--tensor-parallel", "2", "--device", "cpu"])
    assert "--tensor-parallel 2 needs a multiple of 2 processes" in err and "this run has 3" in err
    monkeypatch.delenv("WORLD_SIZE")
    err = _error(capsys, ["--model", str(tiny_model_dir), "--tensor-parallel", "2", "--device", "cpu"])
    assert "this run has 1" in err and "torchrun --nproc_per_node 2" in err


def test_tensor_parallel_with_device_map_or_gguf(tiny_model_dir, tmp_path, capsys, no_weights):
    err = _error(capsys, ["--model", str(tiny_model_dir), "--tensor-parallel", "2", "--device-map", "auto"])
    assert "--tensor-parallel 2 and --device-map auto both split the model" in err
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(16))
    err = _error(capsys, ["--model", str(gguf), "--tensor-parallel", "2"])
    assert "a .gguf loads whole into each process" in err and "save_pretrained" in err


def test_zero_or_negative_sizes_name_the_flag(tiny_model_dir, capsys):
    err = _error(capsys, ["--model", str(tiny_model_dir), "--tensor-parallel", "0"])
    assert "--tensor-parallel must be an integer >= 1; got 0" in err  # the flag as typed


def test_an_architecture_without_a_plan_and_heads_that_do_not_split(tmp_path, monkeypatch, no_weights):
    from transformers import GPT2Config, GPT2LMHeadModel

    from twinkle_hf.models.loading import load_model

    tokenizer = make_tokenizer()
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=4))
    folder = save_model_dir(tmp_path / "gpt2", tokenizer, gpt2)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(TwinkleError, match="no tensor-parallel plan for model type 'gpt2'; use --device-map auto"):
        load_model(EvalConfig(model=str(folder), tensor_parallel=2, device="cpu"))


def test_heads_that_do_not_split(tiny_model_dir, monkeypatch, no_weights):
    from twinkle_hf.models.loading import load_model

    monkeypatch.setenv("WORLD_SIZE", "3")  # the tiny Llama has 4 attention heads, 2 key/value heads
    with pytest.raises(TwinkleError, match="has 4 attention heads, which do not split 3 ways"):
        load_model(EvalConfig(model=str(tiny_model_dir), tensor_parallel=3, device="cpu"))
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(TwinkleError, match="has 2 key/value heads, which do not split 4 ways"):
        load_model(EvalConfig(model=str(tiny_model_dir), tensor_parallel=4, device="cpu"))


def test_check_passes_what_it_should():
    check_tensor_parallel(EvalConfig(model="m", tensor_parallel=2), 4)
    check_tensor_parallel(EvalConfig(model="m.gguf", device_map="auto"), 1)  # no tensor parallelism: nothing to check


def test_sharding_is_read_off_the_model(tiny_tokenizer):
    from helpers import make_model

    model = make_model(tiny_tokenizer)
    assert sharding(model) is None
    next(iter(model.parameters())).ds_id = 0  # what DeepSpeed ZeRO-3 sets on every parameter it partitions
    assert sharding(model) == "zero3"
    plain = make_model(tiny_tokenizer)
    plain._tp_size = 2  # what transformers sets on a model it loaded tensor parallel, beside its mesh
    assert sharding(plain).startswith("unknown: the model says tensor parallel size 2")  # no mesh: never a guess


def test_processes_that_would_run_different_work_stop_with_a_clear_error(monkeypatch):
    from twinkle_hf.runtime import layout

    monkeypatch.setattr(layout, "_all_gather", lambda value, world: [value, ("letters of mmlu", 7)])
    with pytest.raises(TwinkleError, match=r"process 0: \('letters of mmlu', 8\); process 1: \('letters of mmlu', 7\)"):
        agree(Layout(processes=2), ("letters of mmlu", 8))
    agree(Layout(processes=2), ("letters of mmlu", 7))  # the same work: nothing to say


def test_the_yaml_key_and_the_config_field(tmp_path, tiny_model_dir, capsys, monkeypatch, no_weights):
    from twinkle_hf.settings.config import build_config

    assert build_config({"tensor_parallel": 2}).tensor_parallel == 2
    with pytest.raises(TwinkleError, match="tensor_parallel must be an integer"):
        build_config({"tensor_parallel": "2"})
    config = tmp_path / "tp.yaml"
    config.write_text(f"model: {tiny_model_dir}\ntensor_parallel: 4\n", encoding="utf-8")
    monkeypatch.setenv("WORLD_SIZE", "2")
    err = _error(capsys, ["--config", str(config)])
    assert "--tensor-parallel 4 needs a multiple of 4 processes" in err and "this run has 2" in err
