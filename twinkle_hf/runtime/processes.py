"""The processes of a run, through accelerate: which state to shard with, which process speaks,
and the main process's decisions handed to every other one."""

from __future__ import annotations

import sys
from typing import Any

from ..models.parallel import launched_processes


def process_state(given: Any = None, cpu: bool = False) -> Any:
    """The accelerate state to shard with: the caller's (an Accelerator or PartialState), else the
    shared PartialState when a launcher started several processes (on CPU with gloo), else None
    (one process)."""
    if given is not None:
        return given
    import torch.distributed as dist

    if launched_processes() > 1 or (dist.is_available() and dist.is_initialized()):
        from accelerate import PartialState

        return PartialState(cpu=cpu)
    return None


def end_processes() -> None:
    """Destroy the launcher's process group, if one is up, before the interpreter exits.

    For the command line only, which owns its process: an exit that leaves the group to the
    interpreter's teardown lets gloo's worker threads free tensors after Python is gone, which can
    abort the process (SIGABRT, a corrupted heap) after its work is done. Every process of a run
    calls it once, at the end, with no collective left to run. A command that never imported torch
    (report, compare) has no group, and imports nothing here.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is not None and launched_processes() > 1 and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def is_main(state: Any) -> bool:
    return state is None or state.is_main_process


def broadcast(state: Any, value: Any) -> Any:
    """The main process's ``value`` on every process (what the others pass is ignored), so that
    decisions such as the output folder or what a resumed run still has to score are taken once."""
    if state is None or state.num_processes == 1:
        return value
    from accelerate.utils import broadcast_object_list

    box = [value if state.is_main_process else None]
    broadcast_object_list(box, from_process=0)
    return box[0]
