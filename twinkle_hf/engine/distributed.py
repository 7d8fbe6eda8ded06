"""Scoring across processes (accelerate launch / torchrun), through accelerate.

Every process builds the same permuted rows and prompts (cheap and deterministic), scores its
share, and `gather_object` hands every process all results, reassembled in row order, so
metrics are identical whatever the number of processes and no row is lost or counted twice. A
model sharded over the processes (FSDP, ZeRO-3, tensor parallel) runs its passes in lockstep
(lockstep.py); under tensor parallelism a share is a group's, whose processes score it together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .generate import GenSink, generate_texts
from .lockstep import Layout, Lockstep, agree
from .parallel import launched_processes
from .plan import Generated, GenerationSettings
from .results import Requests, Scores
from .scoring import ScoreSettings, Sink, score_prompts
from .stats import ScoreStats


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


def _my_rows(token_ids: Sequence[list[int]], groups: Sequence[Any] | None, rank: int, world: int) -> list[int]:
    """This process's rows: rows (or whole prefix groups) in descending size, dealt out in turn."""
    if groups is None:
        order = np.argsort(-np.array([len(t) for t in token_ids]), kind="stable")
        return order[rank::world].tolist()
    members: dict[Any, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    ranked = sorted(members.values(), key=lambda rows: -sum(len(token_ids[i]) for i in rows))
    return sorted(i for rows in ranked[rank::world] for i in rows)


def _gather_rows(n: int, mine: list[int], columns: list[list[Any]], stats: ScoreStats,
                 layout: Layout) -> tuple[list[list[Any]], ScoreStats]:
    """Every share's values of each column, reassembled in row order on every process (a
    tensor-parallel group's rows come from its first process: the others hold the same)."""
    from accelerate.utils import gather_object

    parts = gather_object([(mine, columns, stats) if layout.leader else ([], [[] for _ in columns], None)])
    out: list[list[Any]] = [[None] * n for _ in columns]
    seen = 0
    for rows, cols, _ in parts:
        for c, col in enumerate(cols):
            for i, value in zip(rows, col):
                out[c][i] = value
        seen += len(rows)
    assert seen == n, f"gathered {seen} rows for {n}"  # internal invariant: a row lost or doubled
    return out, ScoreStats.merge([p[2] for p in parts if p[2] is not None])


def _quiet_unless_main(settings: Any, layout: Layout) -> Any:
    return dataclasses.replace(settings, progress=settings.progress and layout.rank == 0)


def _on_my_share(model: Any, layout: Layout, part: str, token_ids: Sequence[list[int]], groups: Sequence[Any] | None,
                 settings: Any, sink: Callable[..., None] | None,
                 run: Callable[[list[int], Any, Callable[..., None] | None], Any]) -> tuple[list[int], Any]:
    """``run(mine, settings, sink)`` on this process's share of the rows, once the processes agree on
    ``part`` (lockstep.agree), in lockstep with them when the model is sharded over them; the sink
    sees the rows' indices among all and is left out where another process of a tensor-parallel
    group speaks for this one. Returns the share and what ``run`` returned."""
    agree(layout, (part, len(token_ids)))
    # Deal the length-sorted rows out in turn, so every share gets long and short prompts alike
    # (contiguous chunks of sorted rows would give one share all the long ones); with prefix
    # groups, deal out whole groups, so a shared prefix is computed by one share only.
    mine = _my_rows(token_ids, groups, layout.share, layout.shares)
    local_sink = None if sink is None or not layout.leader else (
        lambda rows, *values: sink([mine[r] for r in rows], *values))
    settings = _quiet_unless_main(settings, layout)
    if not layout.lockstep:
        return mine, run(mine, settings, local_sink)
    with Lockstep(model, layout, model.get_input_embeddings().weight.device, settings.pad_id) as step:
        return mine, run(mine, dataclasses.replace(settings, lockstep=step), local_sink)


def score_sharded(model: Any, prompts: Requests, settings: ScoreSettings, layout: Layout,
                  sink: Sink | None = None, part: str = "scoring") -> Scores:
    """:func:`score_prompts` over this process's share of the rows, gathered to every process.
    ``part`` names what is scored, for the processes to check that they agree (lockstep.agree)."""
    if layout.processes == 1:
        return score_prompts(model, prompts, settings, sink)
    mine, out = _on_my_share(model, layout, part, prompts.token_ids, prompts.groups, settings, sink,
                             lambda rows, mine_settings, local_sink: score_prompts(
                                 model, prompts.take(rows), mine_settings, local_sink))
    (rows,), stats = _gather_rows(len(prompts), mine, [out.rows()], out.stats, layout)
    return type(out).of(rows, stats)


def generate_sharded(model: Any, token_ids: Sequence[list[int]], settings: GenerationSettings, layout: Layout,
                     keys: Sequence[int], sink: GenSink | None = None,
                     groups: Sequence[Any] | None = None, part: str = "generation") -> Generated:
    """:func:`generate_texts` over this process's share of the rows (whole prefix groups), gathered
    to every process; under lockstep every decode step of every process is paired."""
    if layout.processes == 1:
        return generate_texts(model, token_ids, settings, keys, sink, groups)
    mine, out = _on_my_share(model, layout, part, token_ids, groups, settings, sink,
                             lambda rows, mine_settings, local_sink: generate_texts(
                                 model, [token_ids[i] for i in rows], mine_settings, [keys[i] for i in rows],
                                 local_sink, None if groups is None else [groups[i] for i in rows]))
    (tokens, truncated), stats = _gather_rows(len(token_ids), mine, [out.tokens, out.truncated.tolist()], out.stats,
                                              layout)
    return Generated(tokens=tokens, truncated=np.asarray(truncated, dtype=bool), stats=stats)
