"""How a run is spread over processes: which share of the rows each scores, which processes pass in
lockstep, read from the model (placement.py) and agreed by every process before the first pass."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import TwinkleError
from .placement import parameter_checksum, read_placement


@dataclass(frozen=True)
class Layout:
    """How a run is spread over processes: which share of the rows this process scores
    (``share`` of ``shares``), whether its results are its share's (one process per
    tensor-parallel group speaks for it), and which processes pass in lockstep with it
    (``step_ranks``: all of them under FSDP or ZeRO-3, its tensor-parallel group under tensor
    parallelism alone, whose groups are independent)."""

    processes: int = 1
    rank: int = 0
    share: int = 0
    shares: int = 1
    leader: bool = True
    sharding: str | None = None  # placement's kind, None: every process holds the whole model
    tensor_parallel: int = 1
    step_ranks: tuple[int, ...] = ()
    group_ranks: tuple[int, ...] = ()  # this process's tensor-parallel group (empty: none)
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


def _all_gather(value: Any, world: int) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * world
    dist.all_gather_object(out, value)
    return out


def layout_of(model: Any, state: Any) -> Layout:
    """The layout of ``model`` over the processes of ``state`` (accelerate; None: one process).
    Data parallel and FSDP/ZeRO-3 split the rows over every process; tensor parallelism splits
    them over its groups, whose processes score the same rows together. The processes first agree
    (one all-gather, the same on every process whatever it found) on the layout and on the
    parameters' names and whole shapes: a layout that cannot be read, or processes that disagree,
    is one line on every process before any pass."""
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
        return Layout(world, rank, rank, world, True, seen.kind, step_ranks=tuple(range(world)))
    groups = sorted({ranks for _, ranks, _ in every})
    ranks = seen.tp_ranks
    if any(set(a) & set(b) for a in groups for b in groups if a != b) or sorted(r for g in groups for r in g) != list(
            range(world)):
        raise TwinkleError(f"the tensor-parallel groups do not split the processes ({groups}); every process must "
                           f"belong to one group")
    # Tensor parallelism alone: a group's passes are collectives of the group only. Beside FSDP
    # (a 2-D model), every pass also gathers across groups: all processes pass in lockstep.
    step = ranks if seen.kind == "tensor parallel" else tuple(range(world))
    return Layout(world, rank, groups.index(ranks), len(groups), rank == ranks[0], seen.kind, len(ranks), step, ranks)


def parallel_record(layout: Layout, device: torch.device) -> dict[str, Any]:
    """results.json ``timing.parallel``: how the run was spread, and per process its peak memory
    (the device's, CUDA; the process's resident set) and its passes in lockstep (own and dummy)."""
    mine = {"process": layout.rank, "share": layout.share,
            "peak_memory_bytes": int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None,
            "peak_rss_bytes": peak_rss()}
    if layout.lockstep:
        mine.update(passes=layout.tally["real"], dummy_passes=layout.tally["dummy"])
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


def _status_peak() -> int | None:
    """VmHWM of /proc/self/status in bytes (Linux: the peak that clear_refs resets); None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def peak_rss() -> int | None:
    """This process's peak resident set size in bytes since :func:`reset_peaks` (Linux), else since
    it started; None where the OS does not say."""
    peak = _status_peak()
    if peak is not None:
        return peak
    try:
        import resource
    except ImportError:  # Windows
        return None
    most = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(most) if sys.platform == "darwin" else int(most) * 1024  # bytes on macOS, KiB on Linux


def reset_peaks(device: torch.device) -> None:
    """Start the peaks an evaluation reports afresh (a callback between training steps must not
    report the training's): the device's (CUDA) and the process's resident set (Linux)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # resets VmHWM to the current resident set
    except OSError:
        pass
