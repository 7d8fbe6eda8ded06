"""How a model's parameters are spread over processes, read from the model itself: its device mesh
and each parameter's placements (DTensor), FSDP's wrappers, DeepSpeed ZeRO-3's partitioned
parameters. Never a guess: a layout this module cannot read is named as such, and the processes
stop with one line before any pass (layout.layout_of).

A DTensor parameter placed on a mesh dimension named ``tp`` is split by tensor parallelism
(transformers' ``tp_plan``, torch's ``parallelize_module`` on a ``"tp"`` mesh); the other mesh
dimensions that shard a parameter belong to FSDP2's ``fully_shard`` (one that replicates it, as
transformers' ``dp_replicate`` or torch's ``replicate``, splits nothing: each copy is whole). Both at
once is a 2-D model: its tensor-parallel groups score rows together, and every pass is also a
collective across the groups (FSDP's gathers).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..models.facts import unwrap

TP_DIM = "tp"  # the mesh dimension name tensor parallelism is read from (transformers' and torch's docs)


@dataclass(frozen=True)
class Placement:
    """``kind``: None (every process holds the whole model), "fsdp", "fsdp2", "zero3",
    "tensor parallel", "fsdp2 + tensor parallel", or "unknown: <what was seen>";
    ``tp_ranks``: the global ranks of this process's tensor-parallel group (empty: none)."""

    kind: str | None
    tp_ranks: tuple[int, ...] = ()

    @property
    def tensor_parallel(self) -> bool:
        return bool(self.tp_ranks)


def _dtensor(p: Any) -> Any:
    for t in (p, getattr(p, "data", None)):
        if type(t).__name__ == "DTensor":
            return t
    return None


def _is_fsdp2(module: Any) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch built without distributed support
        return False
    return isinstance(module, FSDPModule)


def _group_ranks(mesh: Any) -> tuple[int, ...]:
    import torch.distributed as dist

    return tuple(sorted(dist.get_process_group_ranks(mesh.get_group())))


def read_placement(model: Any) -> Placement:
    """The layout of ``model``'s parameters (see the module's docstring)."""
    modules = list(model.modules())
    if any(type(m).__name__ == "FullyShardedDataParallel" for m in modules):
        return Placement("fsdp")
    fsdp2 = any(_is_fsdp2(m) for m in modules)
    params = list(model.parameters())
    tp_mesh, other = None, set()
    for p in params:
        d = _dtensor(p)
        if d is None:
            continue
        names = d.device_mesh.mesh_dim_names or (None,) * d.device_mesh.ndim
        for name, size, place in zip(names, d.device_mesh.shape, d.placements):
            if name == TP_DIM and size > 1:
                tp_mesh = d.device_mesh[TP_DIM]
            elif size > 1 and place.is_shard():  # replicated dimensions (a dp_replicate) split nothing
                other.add(name)
    inner = unwrap(model)
    if tp_mesh is None and isinstance(getattr(inner, "_tp_size", None), int) and inner._tp_size > 1:
        mesh = getattr(inner, "_device_mesh", None)
        if mesh is None or TP_DIM not in (mesh.mesh_dim_names or ()):
            return Placement(f"unknown: the model says tensor parallel size {inner._tp_size} (_tp_size) but has no "
                             f"device mesh with a {TP_DIM!r} dimension")
        tp_mesh = mesh[TP_DIM]
    if other and not fsdp2:
        return Placement(f"unknown: parameters are DTensors sharded over mesh dimension(s) {sorted(map(str, other))} "
                         f"without fully_shard, and tensor parallelism is read from a dimension named {TP_DIM!r}")
    tp_ranks = _group_ranks(tp_mesh) if tp_mesh is not None else ()
    if fsdp2 and other:
        return Placement("fsdp2 + tensor parallel" if tp_ranks else "fsdp2", tp_ranks)
    if tp_ranks:
        return Placement("tensor parallel", tp_ranks)
    if any(hasattr(p, "ds_id") for p in params):
        return Placement("zero3")
    return Placement(None)


def sharding(model: Any) -> str | None:
    """How the model's parameters are spread over processes, so that every forward pass is a
    collective (:func:`read_placement`'s kind); None when every process holds the whole model."""
    return read_placement(model).kind


def grad_off(model: Any) -> Any:
    """The context the engine runs passes in: ``torch.inference_mode()``, except for a sharded
    model (FSDP's all-gathers touch version counters, which inference tensors do not keep):
    ``torch.no_grad()`` there."""
    import torch

    return torch.no_grad() if sharding(model) else torch.inference_mode()


def parameter_checksum(model: Any, kind: str | None) -> str:
    """A short hash of the parameters' names and whole shapes (a DTensor's global shape, ZeRO-3's
    ``ds_shape``): processes about to run one model in lockstep must hold the same one. FSDP1
    flattens its parameters into per-process pieces, so there only the names count."""
    h = hashlib.sha1()
    for name, p in model.named_parameters():
        shape = () if kind == "fsdp" else tuple(getattr(p, "ds_shape", None) or p.shape)
        h.update(f"{name}:{shape};".encode())
    return h.hexdigest()[:12]
