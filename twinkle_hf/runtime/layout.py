"""How a run is spread over processes: which share of the rows each scores, and which processes
pass in lockstep. It is read from the model (placement.py) and agreed by every process before the
first pass, so that a layout the processes disagree on is one line, not a hang."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..errors import TwinkleError
from .memory import peak_rss
from .placement import parameter_checksum, read_placement


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How a run is spread over processes, as this process sees it.

    ``share`` of ``shares``: the rows this process scores. ``leader``: whether its results stand for
    its share (one process per tensor-parallel group speaks for it). ``step_ranks``: the processes
    that pass in lockstep with it: all of them under FSDP or ZeRO-3, its tensor-parallel group under
    tensor parallelism alone, whose groups are independent. Built by keywords and never changed;
    the passes are counted in :data:`PASSES`.
    """

    processes: int = 1
    rank: int = 0
    share: int = 0
    shares: int = 1
    leader: bool = True
    sharding: str | None = None  # placement's kind, None: every process holds the whole model
    tensor_parallel: int = 1
    step_ranks: tuple[int, ...] = ()
    group_ranks: tuple[int, ...] = ()  # this process's tensor-parallel group (empty: none)

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


@dataclass
class Tally:
    """This process's passes in lockstep: its own (``real``) and the dummy ones it ran for the
    others. The Lockstep adds its passes here as it leaves; results.json reports them."""

    real: int = 0
    dummy: int = 0


PASSES = Tally()  # this process's, since layout_of last read the layout (one evaluation's)


def _all_gather(value: Any, world: int) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * world
    dist.all_gather_object(out, value)
    return out


def layout_of(model: Any, state: Any) -> Layout:
    """The layout of ``model`` over the processes of ``state`` (accelerate; None: one process).

    Data parallel and FSDP/ZeRO-3 split the rows over every process; tensor parallelism splits
    them over its groups, whose processes score the same rows together. The processes first agree
    on the layout and on the parameters' names and whole shapes, in one all-gather that is the same
    on every process whatever it found. A layout that cannot be read, or processes that disagree,
    is one line on every process before any pass. This process's pass tally starts afresh.
    """
    PASSES.real = PASSES.dummy = 0
    seen = read_placement(model)
    if state is None or state.num_processes == 1:
        if seen.kind is not None and seen.kind.startswith("unknown"):
            raise TwinkleError(f"cannot tell how the model is sharded ({seen.kind[len('unknown: '):]}); evaluate "
                               f"the model whole, sharded by fully_shard, FSDP or DeepSpeed ZeRO-3, or split by "
                               f"tensor parallelism on a mesh dimension named 'tp'")
        return Layout(sharding=seen.kind)
    world, rank = state.num_processes, state.process_index
    every = _all_gather((seen.kind, seen.tp_ranks, parameter_checksum(model, seen.kind)), world)
    unknown = sorted({k for k, _, _ in every if k is not None and k.startswith("unknown")})
    if unknown:
        seen_text = unknown[0][len("unknown: "):]
        raise TwinkleError(f"cannot tell how the model is sharded over the processes ({seen_text}); "
                           f"evaluate it sharded by fully_shard, FSDP or DeepSpeed ZeRO-3, or split by tensor "
                           f"parallelism on a mesh dimension named 'tp', or whole on every process")
    if len({(k, c) for k, _, c in every}) > 1:
        listed = "; ".join(f"process {r}: {k or 'whole'}, parameters {c}" for r, (k, _, c) in enumerate(every))
        raise TwinkleError(f"the processes hold different models or layouts ({listed}); every process must hold "
                           f"the same model, sharded the same way")
    if not seen.tensor_parallel:
        return Layout(processes=world, rank=rank, share=rank, shares=world, leader=True, sharding=seen.kind,
                      step_ranks=tuple(range(world)))
    groups = sorted({ranks for _, ranks, _ in every})
    ranks = seen.tp_ranks
    if any(set(a) & set(b) for a in groups for b in groups if a != b) or sorted(r for g in groups for r in g) != list(
            range(world)):
        raise TwinkleError(f"the tensor-parallel groups do not split the processes ({groups}); every process must "
                           f"belong to one group")
    # Tensor parallelism alone: a group's passes are collectives of the group only. Beside FSDP
    # (a 2-D model), every pass also gathers across groups: all processes pass in lockstep.
    step = ranks if seen.kind == "tensor parallel" else tuple(range(world))
    return Layout(processes=world, rank=rank, share=groups.index(ranks), shares=len(groups), leader=rank == ranks[0],
                  sharding=seen.kind, tensor_parallel=len(ranks), step_ranks=step, group_ranks=ranks)


def parallel_record(layout: Layout, device: torch.device) -> dict[str, Any]:
    """results.json ``timing.parallel``: how the run was spread, and per process its peak memory
    (the device's, CUDA; the process's resident set) and its passes in lockstep (own and dummy)."""
    mine = {"process": layout.rank, "share": layout.share,
            "peak_memory_bytes": int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None,
            "peak_rss_bytes": peak_rss()}
    if layout.lockstep:
        mine.update(passes=PASSES.real, dummy_passes=PASSES.dummy)
    each = [mine] if layout.processes == 1 else _all_gather(mine, layout.processes)
    return {**layout.record(), "per_process": each}


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
