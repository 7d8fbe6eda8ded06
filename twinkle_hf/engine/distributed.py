"""Scoring and generation across processes (accelerate launch / torchrun).

Every process builds the same rows (cheap and deterministic) and runs its share (runtime/rows.py
deals them). Every process then gets all results back in row order, so the metrics do not depend
on the number of processes and no row is lost or counted twice. A model sharded over the processes
(FSDP, ZeRO-3, tensor parallel) runs its passes in lockstep (runtime/lockstep.py). Under tensor
parallelism a share belongs to a group, whose processes run it together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..models.facts import input_device
from ..runtime.layout import Layout, agree
from ..runtime.lockstep import Lockstep
from ..runtime.rows import deal_rows, gather_rows
from .generate import GenSink, generate_texts
from .plan import Generated, GenerationSettings
from .results import Requests, Scores
from .scoring import ScoreSettings, Sink, score_prompts


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
    mine = deal_rows(token_ids, groups, layout.share, layout.shares)
    local_sink = None if sink is None or not layout.leader else (
        lambda rows, *values: sink([mine[r] for r in rows], *values))
    settings = _quiet_unless_main(settings, layout)
    if not layout.lockstep:
        return mine, run(mine, settings, local_sink)
    with Lockstep(model, layout, input_device(model), settings.pad_id) as step:
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
    (rows,), stats = gather_rows(len(prompts), mine, [out.rows()], out.stats, layout)
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
    (tokens, truncated), stats = gather_rows(len(token_ids), mine, [out.tokens, out.truncated.tolist()], out.stats,
                                             layout)
    return Generated(tokens=tokens, truncated=np.asarray(truncated, dtype=bool), stats=stats)
