"""Processes in lockstep over a model that no process holds whole.

A model sharded by its training run (FSDP, FSDP2's ``fully_shard``, DeepSpeed ZeRO-3) gathers each
layer's weights from every process in each forward pass, and a tensor-parallel one exchanges
activations inside it: a forward pass is a collective. Each process scores its own share of the
rows, in its own number of passes (its prompts, its batch sizes, its answers' lengths), so the
passes of two processes would pair up wrongly (gloo: "collective mismatch"; NCCL: a hang until the
watchdog fires). So, as ``generate(synced_gpus=True)`` does for each decode step: before every pass
the processes all-reduce whether they have one of their own, and a process out of rows runs a dummy
pass (one token through the whole model) for as long as any other has a real one. The same
all-reduce carries a process's failure, so the others stop with its name instead of waiting.

Before a part starts, the processes also compare what they are about to run (:func:`agree`): a
process that would score other rows is a clear error naming the processes, not a hang.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import TwinkleError
from .forward import accepts, sharding, unwrap


class LockstepAbort(TwinkleError):
    """Another process failed: this one stops too (raised at the next pass)."""


@dataclass(frozen=True)
class Layout:
    """How a run is spread over processes: which share of the rows this process scores
    (``share`` of ``shares``), whether its results are its share's (one process per
    tensor-parallel group speaks for it), and whether passes must stay in lockstep."""

    processes: int = 1
    rank: int = 0
    share: int = 0
    shares: int = 1
    leader: bool = True
    sharding: str | None = None  # forward.sharding's name, None: every process holds the whole model
    tensor_parallel: int = 1
    # this process's passes in lockstep: its own ("real") and the dummy ones it ran for the others
    tally: dict[str, int] = field(default_factory=lambda: {"real": 0, "dummy": 0}, compare=False, repr=False)

    @property
    def lockstep(self) -> bool:
        return self.sharding is not None and self.processes > 1

    @property
    def mode(self) -> str:
        if self.processes == 1:
            return "one process"
        if self.sharding == "tensor parallel":
            return "tensor parallel"
        return "lockstep over a sharded model" if self.lockstep else "data parallel"

    def record(self) -> dict[str, Any]:
        """results.json ``timing.parallel`` (without the per-process part)."""
        return {"mode": self.mode, "processes": self.processes, "data_shares": self.shares,
                "tensor_parallel": self.tensor_parallel, "sharding": self.sharding}


def _tensor_parallel_group(model: Any) -> tuple[int, list[int]]:
    """(tensor-parallel size, the global ranks of this process's tensor-parallel group)."""
    import torch.distributed as dist

    inner = unwrap(model)
    mesh = getattr(inner, "_device_mesh", None)
    names = getattr(mesh, "mesh_dim_names", None) or ()
    if mesh is not None and "tp" in names:
        group = mesh["tp"].get_group()
        ranks = sorted(dist.get_process_group_ranks(group))
        return len(ranks), ranks
    # A model sharded by hand: every process is one tensor-parallel group (the whole world).
    return dist.get_world_size(), list(range(dist.get_world_size()))


def layout_of(model: Any, state: Any) -> Layout:
    """The layout of ``model`` over the processes of ``state`` (accelerate; None: one process).
    Data parallel and FSDP/ZeRO-3 split the rows over every process; tensor parallelism splits
    them over its groups, whose processes score the same rows together."""
    kind = sharding(model)
    if state is None or state.num_processes == 1:
        return Layout(sharding=kind)
    world, rank = state.num_processes, state.process_index
    if kind != "tensor parallel":
        return Layout(world, rank, rank, world, True, kind)
    size, ranks = _tensor_parallel_group(model)
    firsts = _all_gather(min(ranks), world)
    groups = sorted(set(firsts))
    return Layout(world, rank, groups.index(min(ranks)), len(groups), rank == min(ranks), kind, size)


def parallel_record(layout: Layout, device: torch.device) -> dict[str, Any]:
    """results.json ``timing.parallel``: how the run was spread, and per process its peak memory
    (the device's, CUDA; the process's resident set) and its passes in lockstep (own and dummy)."""
    from .scoring import peak_rss

    mine = {"process": layout.rank, "share": layout.share,
            "peak_memory_bytes": int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None,
            "peak_rss_bytes": peak_rss()}
    if layout.lockstep:
        mine.update(passes=layout.tally["real"], dummy_passes=layout.tally["dummy"])
    each = [mine] if layout.processes == 1 else _all_gather(mine, layout.processes)
    return {**layout.record(), "per_process": each}


def _all_gather(value: Any, world: int) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * world
    dist.all_gather_object(out, value)
    return out


def agree(layout: Layout, what: tuple[Any, ...]) -> None:
    """Every process is about to run the same part (``what``: its name and row count): else a clear
    error on every process, naming each one's, before any pass pairs up wrongly."""
    if layout.processes == 1:
        return
    seen = _all_gather(what, layout.processes)
    if any(w != seen[0] for w in seen):
        listed = "; ".join(f"process {r}: {w}" for r, w in enumerate(seen))
        raise TwinkleError(f"the processes are about to run different work ({listed}); every process must "
                           f"evaluate the same data with the same settings")


class Lockstep:
    """While entered (one scorer or decoder call): every forward pass of ``model`` on this process
    first tells the others it has one; :meth:`drain` (on leaving) runs dummy passes until no
    process has a real one left. ``device``: where the all-reduce's tensor lives (NCCL: the GPU)."""

    def __init__(self, model: Any, layout: Layout, device: torch.device, pad_id: int = 0) -> None:
        self.model, self.layout, self.device, self.pad_id = model, layout, device, pad_id
        self.real_passes = self.dummy_passes = 0
        self._dummy = self._inside = False
        self._handles: list[Any] = []

    def __enter__(self) -> Lockstep:
        # prepend: before FSDP2's and DeepSpeed's own pre-forward hooks, which start the weight gathers
        self._handles = [self.model.register_forward_pre_hook(self._before, prepend=True),
                         self.model.register_forward_hook(self._after)]
        return self

    def __exit__(self, kind: Any, err: BaseException | None, tb: Any) -> None:
        try:
            if err is None:
                self.drain()
                self.layout.tally["real"] += self.real_passes
                self.layout.tally["dummy"] += self.dummy_passes
            elif not isinstance(err, LockstepAbort) and not self._inside:
                # failed between passes (writing results, reading them): tell the others, who wait at
                # their next pass. Inside a pass the others are in its collectives: nothing can reach them.
                self._sync(0, failed=True)
        finally:
            for handle in self._handles:
                handle.remove()

    def _before(self, module: Any, args: Any) -> None:
        self._inside = True
        if not self._dummy:
            self.real_passes += 1
            self._sync(1)

    def _after(self, module: Any, args: Any, output: Any) -> None:
        self._inside = False

    def _sync(self, real: int, failed: bool = False) -> int:
        """All-reduce (processes with a real pass, which processes failed); the first count."""
        import torch.distributed as dist

        flags = torch.zeros(1 + self.layout.processes, dtype=torch.int64, device=self.device)
        flags[0] = real
        flags[1 + self.layout.rank] = int(failed)
        dist.all_reduce(flags)
        failed_ranks = [r for r in range(self.layout.processes) if int(flags[1 + r])]
        if failed_ranks and not failed:
            names = ", ".join(str(r) for r in failed_ranks)
            raise LockstepAbort(f"process {names} stopped with an error (see its messages above); the model is "
                                f"sharded over the processes, so this one cannot go on alone")
        return int(flags[0])

    def drain(self) -> None:
        """Dummy passes while any other process still has real ones; returns when none has."""
        while self._sync(0):
            self._dummy_pass()

    def smallest(self, value: int | None) -> int | None:
        """The smallest of every process's ``value`` (None where any has none): sizes that shape
        passes (free memory) must agree, or a tensor-parallel group would run different shapes."""
        import torch.distributed as dist

        box = torch.tensor([-1 if value is None else value], dtype=torch.int64, device=self.device)
        dist.all_reduce(box, op=dist.ReduceOp.MIN)
        return None if int(box) < 0 else int(box)

    def _dummy_pass(self) -> None:
        """One token through the whole model: the same weight gathers as a real pass."""
        kwargs: dict[str, Any] = {"input_ids": torch.full((1, 1), self.pad_id, dtype=torch.long, device=self.device),
                                  "use_cache": False}
        if accepts(self.model, "logits_to_keep"):
            kwargs["logits_to_keep"] = 1
        self._dummy = True
        try:
            with torch.no_grad():  # a sharded model's passes (forward.grad_off), without looking again
                self.model(**kwargs)
        finally:
            self._dummy = False
        self.dummy_passes += 1
