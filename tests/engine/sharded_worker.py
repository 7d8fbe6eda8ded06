"""Launched by tests/engine/test_sharded.py under torchrun (gloo, CPU): the model held as a training
run holds it (FSDP2's ``fully_shard`` on each decoder layer then the model, FSDP1's
``FullyShardedDataParallel`` wrapping each decoder layer, or loaded tensor parallel by
``--tensor-parallel``'s own loader), then ``evaluate()`` on each of the test's cases in turn;
process 0 writes what each case predicted to ``<out>/<case>.json``.

    python -m torch.distributed.run --nproc_per_node 2 tests/engine/sharded_worker.py SPEC.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch


def case_record(result: Any) -> dict[str, Any]:
    """What a case is compared on: per row its prediction and probabilities (or texts, option
    log-likelihoods, choices-only and written predictions), and how the run was spread."""
    p = result.predictions
    listed = lambda xs: None if xs is None else [x.tolist() if hasattr(x, "tolist") else x for x in xs]
    letters, written, cloze = p.letters, p.generation, p.cloze
    return {"id": list(p.id), "order": p.order_index.tolist(), "pred": p.pred.tolist(),
            "probs": listed(letters.probs) if letters else None, "output": written.output if written else None,
            "loglik": listed(cloze.loglik) if cloze else None,
            "pred_choices_only": listed(letters.pred_choices_only) if letters else None,
            "pred_written": listed(letters.pred_written) if letters else None,
            "written": letters.written if letters else None,
            "parallel": result.timing.get("parallel"), "oom_retries": result.timing.get("oom_retries"),
            "accuracy": result.metrics["overall"]}


def shard(model: Any, how: str) -> Any:
    """``model`` sharded over the process group as FSDP2 or FSDP1 would hold it in training, wrapped
    in DDP (whole on every process), or 2-D: ``parallelize_module`` over a "tp" mesh dimension of 2
    and ``fully_shard`` over "dp" (4 processes), without transformers' ``_tp_size``."""
    import torch.distributed as dist

    layers = model.model.layers
    if how == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model)
    if how == "2d":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh("cpu", (dist.get_world_size() // 2, 2), mesh_dim_names=("dp", "tp"))
        plan = {"self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
                "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
                "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                "mlp.down_proj": RowwiseParallel()}
        for layer in layers:
            parallelize_module(layer, mesh["tp"], plan)
            fully_shard(layer, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
        return model
    if how == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        for layer in layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model
    if how == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        return FullyShardedDataParallel(model, auto_wrap_policy=ModuleWrapPolicy({type(layers[0])}),
                                        use_orig_params=True, device_id=torch.device("cpu"))
    raise ValueError(how)


def train_with_callback(model: Any, tokenizer: Any, out: Path) -> None:
    """What a Trainer with TwinkleCallback does (accelerate turns FSDP on for GPUs only, so the
    Trainer cannot shard on this CPU): the callback at step 0, two optimizer steps of the sharded
    model, the callback again, and a step after it (training goes on)."""
    import torch.distributed as dist
    from transformers import TrainerState

    from twinkle_hf import EvalConfig
    from twinkle_hf.callback import TwinkleCallback

    callback = TwinkleCallback(config=EvalConfig(**CALLBACK_CONFIG), tokenizer=tokenizer)
    state = TrainerState()
    logs = [callback.run(model, None, state)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = tokenizer(["Which of these is a mammal? A. shark B. whale Answer: B"] * 2, return_tensors="pt")
    losses = []
    model.train()
    for step in range(3):
        loss = model(**batch, labels=batch["input_ids"]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss))
        state.global_step = step + 1
        if step == 1:
            logs.append(callback.run(model, None, state))
            assert model.training, "the callback left the model in eval mode"
    if dist.get_rank() == 0:
        (out / "callback.json").write_text(json.dumps({"logs": logs, "losses": losses}), encoding="utf-8")
    (out / f"callback.{dist.get_rank()}.json").write_text(json.dumps(logs), encoding="utf-8")  # each process's


def plant_failure() -> None:
    """This process fails after its second pass, between passes (reading the pass's logits)."""
    from twinkle_hf.engine import scoring

    collect, calls = scoring._collect, [0]

    def failing(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("planted failure between passes")
        collect(*args, **kwargs)

    scoring._collect = failing


def plant_before_first_pass() -> None:
    """This process fails before its first pass (as a zero-token prompt in its share would)."""
    from twinkle_hf.engine import distributed
    from twinkle_hf.errors import TwinkleError

    def failing(*args: Any, **kwargs: Any) -> None:
        raise TwinkleError("a prompt tokenized to zero tokens; check the template and tokenizer")

    distributed.score_prompts = failing


def plant_out_of_memory(model: Any, where: str, call: int) -> None:
    """This process runs out of memory in its ``call``-th pass: at the logits (the lm_head's output,
    after the model's last collective) or mid-model (in the first decoder layer, before the next
    layers' gathers)."""
    inner = getattr(model, "module", model)
    module = inner.lm_head if where == "logits" else inner.model.layers[0].mlp
    calls = [0]

    def hook(mod: Any, args: Any, output: Any) -> None:
        if args[0].shape[0] > 1:  # a pass of several rows, not a dummy one
            calls[0] += 1
            if calls[0] == call:
                raise torch.OutOfMemoryError(f"planted: out of memory at the {where}")

    module.register_forward_hook(hook)


CALLBACK_CONFIG = {"shuffle": True, "shuffle_mode": "cyclic", "limit": 2, "bootstrap": 0}


def main() -> None:
    import torch.distributed as dist
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from twinkle_hf import EvalConfig, evaluate
    from twinkle_hf.models.loading import load_model

    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    dist.init_process_group("gloo")
    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    if spec["how"] == "tp":
        model, _ = load_model(EvalConfig(model=spec["model"], tensor_parallel=spec["tp"], device="cpu",
                                         dtype="float32"))
    else:
        model = shard(AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32).eval(), spec["how"])
    out = Path(spec["out"])
    if spec.get("callback"):
        train_with_callback(model, tokenizer, out)
    if spec["how"] == "ddp" and not spec.get("callback"):
        def refuse(*args: Any) -> None:
            raise AssertionError("the DDP wrapper's forward was called")

        model.register_forward_pre_hook(refuse)
    planted = spec.get("plant") or {}
    if spec.get("fail_rank") == dist.get_rank():
        {"between": plant_failure, "before": plant_before_first_pass}[planted.get("when", "between")]()
    if planted.get("oom_rank") == dist.get_rank():
        plant_out_of_memory(model, planted["where"], planted["call"])
    for case in spec["cases"]:
        try:
            result = evaluate(model, tokenizer, case.get("data"), EvalConfig(**case["config"]), progress=False)
        except Exception as err:  # what each process stopped with, for the test to read
            (out / f"error.{dist.get_rank()}.txt").write_text(f"{type(err).__name__}: {err}", encoding="utf-8")
            if planted.get("exit"):
                raise SystemExit(1) from err
            continue
        if dist.get_rank() == 0:
            (out / f"{case['name']}.json").write_text(json.dumps(case_record(result)), encoding="utf-8")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
