"""Data-parallel scoring across processes (accelerate launch / torchrun), through accelerate.

Every process builds the same permuted rows and prompts (cheap and deterministic), scores its
share, and `gather_object` hands every process all results, reassembled in row order, so
metrics are identical whatever the number of processes and no row is lost or counted twice.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .generate import GenSink, generate_texts
from .plan import Generated, GenerationSettings
from .scoring import Prompts, ScoreOutput, ScoreSettings, Sink, score_prompts
from .stats import ScoreStats


def launched_processes() -> int:
    """How many processes the launcher started (1 under plain `python`)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


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


def _gather_rows(n: int, mine: list[int], columns: list[list[Any]],
                 stats: ScoreStats) -> tuple[list[list[Any]], ScoreStats]:
    """Every process's values of each column, reassembled in row order on every process."""
    from accelerate.utils import gather_object

    parts = gather_object([(mine, columns, stats)])
    out: list[list[Any]] = [[None] * n for _ in columns]
    seen = 0
    for rows, cols, _ in parts:
        for c, col in enumerate(cols):
            for i, value in zip(rows, col):
                out[c][i] = value
        seen += len(rows)
    assert seen == n, f"gathered {seen} rows for {n}"  # internal invariant: a row lost or doubled
    return out, ScoreStats.merge([p[2] for p in parts])


def _quiet_unless_main(settings: Any, state: Any) -> Any:
    return dataclasses.replace(settings, progress=settings.progress and state.is_main_process)


def score_sharded(model: Any, prompts: Prompts, settings: ScoreSettings, state: Any,
                  sink: Sink | None = None) -> ScoreOutput:
    """:func:`score_prompts` over this process's share of the rows, gathered to every process."""
    if state is None or state.num_processes == 1:
        return score_prompts(model, prompts, settings, sink)
    # Deal the length-sorted rows out in turn, so every process gets long and short prompts alike
    # (contiguous chunks of sorted rows would give one process all the long ones); with prefix
    # groups, deal out whole groups, so a shared prefix is computed by one process only.
    mine = _my_rows(prompts.token_ids, prompts.groups, state.process_index, state.num_processes)
    local_sink = None if sink is None else (lambda rows, probs, mass: sink([mine[r] for r in rows], probs, mass))
    out = score_prompts(model, prompts.take(mine), _quiet_unless_main(settings, state), local_sink)
    (probs, mass), stats = _gather_rows(len(prompts), mine, [out.probs, out.letter_mass.tolist()], out.stats)
    return ScoreOutput(probs=probs, letter_mass=np.asarray(mass, dtype=np.float64), stats=stats)


def generate_sharded(model: Any, token_ids: Sequence[list[int]], settings: GenerationSettings, state: Any,
                     keys: Sequence[int], sink: GenSink | None = None,
                     groups: Sequence[Any] | None = None) -> Generated:
    """:func:`generate_texts` over this process's share of the rows (whole prefix groups), gathered
    to every process."""
    if state is None or state.num_processes == 1:
        return generate_texts(model, token_ids, settings, keys, sink, groups)
    mine = _my_rows(token_ids, groups, state.process_index, state.num_processes)
    local_sink = None if sink is None else (lambda rows, tokens, cut: sink([mine[r] for r in rows], tokens, cut))
    out = generate_texts(model, [token_ids[i] for i in mine], _quiet_unless_main(settings, state),
                         [keys[i] for i in mine], local_sink, None if groups is None else [groups[i] for i in mine])
    (tokens, truncated), stats = _gather_rows(len(token_ids), mine, [out.tokens, out.truncated.tolist()], out.stats)
    return Generated(tokens=tokens, truncated=np.asarray(truncated, dtype=bool), stats=stats)
