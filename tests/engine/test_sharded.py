"""A model no process holds whole, evaluated as a training run or a big-model user holds it: FSDP2 and
FSDP1 over 2 processes, tensor parallel over 2 (and 2 groups x 2 over 4), under torchrun with gloo on
the CPU. Every method (letters, cloze, both, the choices-only probe, generation), with and without
shared prefixes, on uneven shares (rows that do not divide, a process with no row at all, one prefix
group larger than all others) gives one process's predictions, probabilities within 1e-5 and
greedy texts identical, and the run says how it was spread."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from twinkle_hf import EvalConfig, evaluate

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("sharded_worker.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("sharded_worker", WORKER)
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)

FAST = {"bootstrap": 0}
CASES = {  # name: (config, data: None = the embedded MMLU sample, "uneven", "one")
    "logit": ({"shuffle": True, "shuffle_mode": "cyclic", "limit": 3}, None),
    "logit_fewshot": ({"shuffle": True, "shuffle_mode": "cyclic", "limit": 2, "num_fewshot": 2, "batch_size": 3}, None),
    "logit_no_prefix": ({"shuffle": True, "seeds": 2, "limit": 3, "share_prefix": False, "batch_size": 5}, None),
    "cloze": ({"method": "cloze", "limit": 2}, None),
    "logit_cloze_no_prefix": ({"method": "logit+cloze", "limit": 2, "share_prefix": False}, None),
    "probe": ({"probe": "choices-only", "shuffle": True, "shuffle_mode": "cyclic", "limit": 2}, None),
    "generate": ({"method": "pattern", "max_new_tokens": 5, "shuffle": True, "shuffle_mode": "cyclic", "limit": 2},
                 None),
    "generate_no_prefix": ({"method": "pattern", "max_new_tokens": 4, "limit": 2, "share_prefix": False,
                            "batch_size": 2}, None),
    # one subject's few-shot group holds 9 questions x 4 orders, the other's 1 x 4
    "uneven": ({"shuffle": True, "shuffle_mode": "cyclic", "num_fewshot": 1}, "uneven"),
    "uneven_generate": ({"method": "pattern", "max_new_tokens": 3, "num_fewshot": 1}, "uneven"),
    # one prompt: every process but one has no row at all
    "one_prompt": ({}, "one"),
    "one_prompt_cloze": ({"method": "cloze"}, "one"),
    "one_prompt_generate": ({"method": "pattern", "max_new_tokens": 3}, "one"),
}
FEW = ("logit", "cloze", "generate", "one_prompt", "uneven")  # the 4-process layout runs these


def _write(path: Path, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["question", "A", "B", "C", "D", "answer"], *rows])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("sharded_data")
    row = lambda s, i: [f"In {s}, which holds for case {i} of the whale survey?", f"{s} a{i}", f"b{i}", f"c{i}",
                        f"d{i}", "ABCD"[i % 4]]
    for split, sizes in (("test", {"big": 9, "small": 1}), ("dev", {"big": 2, "small": 2})):
        for subject, n in sizes.items():
            _write(root / "uneven" / split / f"{subject}_{split}.csv", [row(subject, i) for i in range(n)])
    _write(root / "one" / "lone_test.csv", [row("lone", 0)])
    return {"uneven": str(root / "uneven"), "one": str(root / "one")}


def _cases(names, datasets) -> list[dict]:
    return [{"name": n, "config": {**FAST, **CASES[n][0]}, "data": CASES[n][1] and datasets[CASES[n][1]]}
            for n in names]


def _launch(tmp_path: Path, model: Path, how: str, processes: int, cases: list[dict], tp: int = 1,
            callback: bool = False, fail_rank: int | None = None, plant: dict | None = None,
            timeout: int = 900) -> dict[str, dict]:
    out = tmp_path / f"{how}{processes}"
    out.mkdir()
    spec = tmp_path / f"{how}{processes}.json"
    spec.write_text(json.dumps({"model": str(model), "how": how, "tp": tp, "out": str(out), "cases": cases,
                                "callback": callback, "fail_rank": fail_rank, "plant": plant}))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([*TORCHRUN, "--nproc_per_node", str(processes), str(WORKER), str(spec)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    stopping = bool(plant and plant.get("exit"))
    assert (proc.returncode != 0) == stopping, proc.stderr[-4000:]
    if fail_rank is not None or stopping:
        return {p.name: {"error": p.read_text()} for p in out.glob("error.*.txt")}
    names = [c["name"] for c in cases] + (["callback"] if callback else [])
    return {name: json.loads((out / f"{name}.json").read_text()) for name in names}


def _reference(model_dir: Path, cases: list[dict]) -> dict[str, dict]:
    """One process, the plain model: what every layout must reproduce."""
    import torch

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    return {c["name"]: worker.case_record(evaluate(model, tokenizer, c["data"], EvalConfig(**c["config"]),
                                                   progress=False)) for c in cases}


def _same(one: dict, many: dict, name: str) -> None:
    assert many["id"] == one["id"] and many["order"] == one["order"], name
    assert many["pred"] == one["pred"], name
    for key in ("pred_choices_only", "pred_written", "output", "written"):
        assert many[key] == one[key], (name, key)  # greedy texts identical
    for a, b in zip(one["probs"] or [], many["probs"] or []):
        np.testing.assert_allclose(b, a, atol=1e-5, err_msg=f"{name} probs")
    # an option's log-likelihood sums its tokens' log-probabilities: each token's probability within
    # 1e-5, the sum within a relative 1e-5 (30 layers of a 3-way split add in another order: ~2e-6)
    for a, b in zip(one["loglik"] or [], many["loglik"] or []):
        np.testing.assert_allclose(np.exp(b), np.exp(a), atol=1e-5, err_msg=f"{name} option probabilities")
        np.testing.assert_allclose(b, a, rtol=1e-5, err_msg=f"{name} loglik")
    assert many["accuracy"]["accuracy"]["mean"] == pytest.approx(one["accuracy"]["accuracy"]["mean"], abs=1e-12)


@pytest.fixture(scope="module")
def reference(tiny_model_dir, datasets) -> dict[str, dict]:
    return _reference(tiny_model_dir, _cases(CASES, datasets))


@pytest.mark.parametrize("how", ["fsdp2", "fsdp1"])
def test_a_model_sharded_by_fsdp_over_two_processes_predicts_as_one_process(how, tiny_model_dir, datasets, reference,
                                                                             tmp_path):
    got = _launch(tmp_path, tiny_model_dir, how, 2, _cases(CASES, datasets))
    for name in CASES:
        _same(reference[name], got[name], name)
    parallel = got["logit"]["parallel"]
    assert parallel["mode"] == "lockstep over a sharded model" and parallel["sharding"] == {"fsdp2": "fsdp2",
                                                                                          "fsdp1": "fsdp"}[how]
    assert parallel["data_shares"] == 2  # the rows are still divided: each process scores its share
    lone = got["one_prompt"]["parallel"]["per_process"]
    assert sorted(p["dummy_passes"] for p in lone) == [0, 1]  # the process without a row ran one pass for the other


def test_tensor_parallel_over_two_processes_predicts_as_one_process(tiny_model_dir, datasets, reference, tmp_path):
    got = _launch(tmp_path, tiny_model_dir, "tp", 2, _cases(CASES, datasets), tp=2)
    for name in CASES:
        _same(reference[name], got[name], name)
    parallel = got["logit"]["parallel"]
    assert (parallel["mode"], parallel["tensor_parallel"], parallel["data_shares"]) == ("tensor parallel", 2, 1)
    assert all(p["dummy_passes"] == 0 for p in parallel["per_process"])  # one group: both ran the same passes


def test_four_processes_as_two_groups_of_two_way_tensor_parallel(tiny_model_dir, datasets, reference, tmp_path):
    got = _launch(tmp_path, tiny_model_dir, "tp", 4, _cases(FEW, datasets), tp=2)
    for name in FEW:
        _same(reference[name], got[name], name)
    parallel = got["logit"]["parallel"]
    assert (parallel["processes"], parallel["tensor_parallel"], parallel["data_shares"]) == (4, 2, 2)
    assert [p["share"] for p in parallel["per_process"]] == [0, 0, 1, 1]
    # the groups are independent: the group without the one prompt runs no pass for the other
    lone = got["one_prompt"]["parallel"]["per_process"]
    assert [p["passes"] + p["dummy_passes"] for p in lone][2:] == [0, 0] and all(p["passes"] for p in lone[:2])


def test_a_2d_model_fully_shard_and_parallelize_module_on_four_processes_predicts_as_one_process(
        tiny_model_dir, datasets, reference, tmp_path):
    """``parallelize_module`` over a "tp" mesh dimension and ``fully_shard`` over "dp", without
    transformers' ``_tp_size``: read from the placements, the tensor-parallel groups score their
    rows together and every process passes in lockstep (FSDP gathers across the groups)."""
    names = ("logit", "one_prompt", "cloze")
    got = _launch(tmp_path, tiny_model_dir, "2d", 4, _cases(names, datasets))
    for name in names:
        _same(reference[name], got[name], name)
    parallel = got["logit"]["parallel"]
    assert (parallel["sharding"], parallel["tensor_parallel"], parallel["data_shares"]) == (
        "fsdp2 + tensor parallel", 2, 2)
    assert [p["share"] for p in parallel["per_process"]] == [0, 0, 1, 1]


def test_a_ddp_wrapped_model_with_fewer_prefix_groups_than_processes_predicts_as_one_process(
        tiny_model_dir, datasets, reference, tmp_path):
    """The usual training loop's DistributedDataParallel: evaluated through the module inside (the
    worker fails the run if the wrapper's forward is called); a process without rows finishes."""
    names = ("one_prompt", "one_prompt_generate", "logit_fewshot")
    got = _launch(tmp_path, tiny_model_dir, "ddp", 2, _cases(names, datasets))
    for name in names:
        _same(reference[name], got[name], name)
    parallel = got["one_prompt"]["parallel"]
    assert (parallel["mode"], parallel["sharding"], parallel["data_shares"]) == ("data parallel", None, 2)


def test_an_out_of_memory_at_the_logits_of_one_fsdp2_process_is_survived(tiny_model_dir, datasets, reference,
                                                                         tmp_path):
    """Process 1 runs out of memory at the logits of its first pass of several rows (after the
    model's last collective): both halve at the next handshake and go on to the reference."""
    plant = {"oom_rank": 1, "where": "logits", "call": 1}
    got = _launch(tmp_path, tiny_model_dir, "fsdp2", 2, _cases(["logit"], datasets), plant=plant)
    _same(reference["logit"], got["logit"], "logit")
    assert got["logit"]["oom_retries"] == 2  # each process halved once, in step


def test_an_out_of_memory_inside_the_model_stops_every_process_within_90_seconds(tiny_model_dir, datasets,
                                                                                 tmp_path):
    """Process 1 runs out of memory in its first decoder layer, while process 0 waits in the next
    layer's gathers: process 1 finds nobody at the handshake, stops with one line, and the launcher
    ends process 0 (the launch must end within 90 s, not at gloo's 30-minute timeout)."""
    plant = {"oom_rank": 1, "where": "mid", "call": 1, "exit": True}
    errors = _launch(tmp_path, tiny_model_dir, "fsdp2", 2, _cases(["logit"], datasets), plant=plant, timeout=90)
    line = errors["error.1.txt"]["error"]
    assert line.startswith("TwinkleError: process 1: out of memory inside a pass of ") and "--batch-size" in line
    assert len(line.splitlines()) == 1
    if "error.0.txt" in errors:  # gloo: process 0's gather failed when process 1 left, before the launcher ended it
        assert "process 1" in errors["error.0.txt"]["error"]


def test_a_failure_before_the_first_pass_on_one_process_stops_both_by_name(tiny_model_dir, tmp_path):
    """Process 1 fails before its first pass (a zero-token prompt in its share) while process 0
    agrees sizes for its own: both are the same handshake, so process 0 stops with process 1's name."""
    cases = [{"name": "logit", "config": {**FAST, "limit": 2}, "data": None}]
    errors = _launch(tmp_path, tiny_model_dir, "fsdp2", 2, cases, fail_rank=1, plant={"when": "before"})
    assert errors["error.1.txt"]["error"].startswith("TwinkleError: a prompt tokenized to zero tokens")
    assert errors["error.0.txt"]["error"].startswith("LockstepAbort: process 1 stopped with an error")


def test_the_training_callback_on_a_model_sharded_with_fully_shard(tiny_model_dir, tmp_path):
    """accelerate enables FSDP for GPUs only, so a Trainer on this CPU falls back to DDP: the callback
    runs here as the Trainer runs it, between optimizer steps of a model sharded by hand."""
    import torch
    from transformers import TrainerState

    from twinkle_hf.callback import TwinkleCallback

    got = _launch(tmp_path, tiny_model_dir, "fsdp2", 2, [], callback=True)["callback"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    plain = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    unsharded = TwinkleCallback(config=EvalConfig(**worker.CALLBACK_CONFIG), tokenizer=tokenizer).run(
        plain, None, TrainerState())
    assert got["logs"][0] == unsharded  # the same twinkle/* values as the same model unsharded
    paired = {f"twinkle/{k}_{ref}" for ref in ("vs_first", "vs_previous") for k in
              ("delta", "p", "flips_right_to_wrong", "flips_wrong_to_right", "acc_original_delta", "acc_original_p")}
    assert set(got["logs"][1]) == set(unsharded) | paired  # evaluated again between steps, paired with the first
    ranks = [json.loads((tmp_path / "fsdp22" / f"callback.{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1] == got["logs"]  # every process logs the same values
    losses = got["losses"]  # the same batch three times: training went on, through the callback, and learned
    assert len(losses) == 3 and all(np.isfinite(losses)) and losses[2] < losses[0]


def test_a_process_that_fails_between_passes_stops_the_others_by_name(tiny_model_dir, tmp_path):
    """Process 1 fails after its second pass; process 0, with passes of its own still to run, stops at
    the next one with process 1's name instead of waiting in a collective for ever."""
    cases = [{"name": "logit", "config": {**FAST, "shuffle": True, "shuffle_mode": "cyclic", "limit": 3,
                                          "batch_size": 2}, "data": None}]
    errors = _launch(tmp_path, tiny_model_dir, "fsdp2", 2, cases, fail_rank=1)
    assert errors["error.1.txt"]["error"] == "RuntimeError: planted failure between passes"
    assert errors["error.0.txt"]["error"].startswith("LockstepAbort: process 1 stopped with an error")


@pytest.fixture(scope="module")
def smollm_dir(tmp_path_factory) -> Path:
    """The real SmolLM2-135M-Instruct (../shared's GGUF, dequantized) saved as a transformers folder:
    what a tensor-parallel or FSDP user holds."""
    from helpers import SMOLLM_GGUF

    if not SMOLLM_GGUF.is_file():
        pytest.skip(f"real model not found: {SMOLLM_GGUF} (see the README's Test section)")
    pytest.importorskip("gguf", reason="the GGUF needs pip install gguf (.[gguf])")
    from twinkle_hf.models.loading import load_model, load_tokenizer

    cfg = EvalConfig(model=str(SMOLLM_GGUF), device="cpu", dtype="float32")
    model, _ = load_model(cfg)
    folder = tmp_path_factory.mktemp("smollm2") / "model"
    model.save_pretrained(folder)
    load_tokenizer(cfg).save_pretrained(folder)
    return folder


SMOLLM_CASES = {
    "logit": ({"shuffle": True, "shuffle_mode": "cyclic", "limit": 1}, None),
    "cloze": ({"method": "cloze", "limit": 1}, None),
    "generate": ({"method": "pattern", "max_new_tokens": 6, "limit": 1}, None),
}


@pytest.fixture(scope="module")
def smollm_reference(smollm_dir) -> tuple[list[dict], dict[str, dict]]:
    cases = [{"name": n, "config": {**FAST, **c}, "data": None} for n, (c, _) in SMOLLM_CASES.items()]
    return cases, _reference(smollm_dir, cases)


@pytest.mark.parametrize("how, processes, tp", [("tp", 3, 3), ("fsdp2", 2, 1), ("fsdp1", 2, 1), ("ddp", 2, 1)],
                         ids=["tensor-parallel-3", "fsdp2", "fsdp1", "ddp"])
def test_the_real_smollm2_sharded_predicts_as_one_process(how, processes, tp, smollm_dir, smollm_reference, tmp_path):
    """SmolLM2 has 9 attention heads and 3 key/value heads: 3-way tensor parallelism splits both; DDP
    wraps it whole (evaluated through the module inside)."""
    cases, reference = smollm_reference
    got = _launch(tmp_path, smollm_dir, how, processes, cases, tp=tp)
    for case in cases:
        _same(reference[case["name"]], got[case["name"]], case["name"])
    assert got["logit"]["parallel"]["tensor_parallel"] == tp


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds torchrun's workers through /proc")
def test_a_killed_tensor_parallel_run_resumes_to_the_one_process_result(tiny_model_dir, tmp_path):
    import signal
    import time

    from test_distributed import _kill_launch, _lines, _run

    from twinkle_hf.cli import main

    data = tmp_path / "many.csv"
    data.write_text("question,A,B,C,D,answer\n" + "".join(
        f"Question {i} about whales?,a{i},b{i},c{i},d{i},{'ABCD'[i % 4]}\n" for i in range(100)), encoding="utf-8")
    args = ["--model", str(tiny_model_dir), "--dataset", str(data), "--shuffle", "--seeds", "4", "--batch-size", "1"]
    assert main([*args, "--output-dir", str(tmp_path / "one"), "--quiet", "--device", "cpu"]) == 0
    broken = tmp_path / "tp"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    launch = [*TORCHRUN, "--nproc_per_node", "2", "scripts/eval.py", *args, "--tensor-parallel", "2"]
    proc = subprocess.Popen([*launch, "--output-dir", str(broken), "--quiet", "--device", "cpu"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    saved_file = broken / ".partial" / "scores.0.jsonl"  # one group: its first process writes for both
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and _lines(saved_file) < 40:
        time.sleep(0.02)
    _kill_launch(proc)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    saved = _lines(saved_file)
    assert saved < 500 and not (broken / "results.json").exists()
    assert _lines(broken / ".partial" / "scores.1.jsonl") == 0  # the group's second process wrote nothing twice

    resumed = _run([*launch, "--resume"], broken)
    assert resumed["timing"]["resumed_rows"] >= saved - 1  # a torn last line is scored again
    assert resumed["timing"]["parallel"]["mode"] == "tensor parallel"
    one = json.loads((tmp_path / "one" / "results.json").read_text(encoding="utf-8"))
    a, b = ([json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
            for out in (tmp_path / "one", broken))
    assert len(a) == len(b) == 500
    for x, y in zip(a, b):
        assert (x["id"], x["seed"], x["perm"], x["pred"]) == (y["id"], y["seed"], y["perm"], y["pred"])
        np.testing.assert_allclose(x["probs"], y["probs"], atol=1e-5)
    assert one["metrics"]["accuracy"] == resumed["metrics"]["accuracy"]
