"""Continuation scoring (cloze): the log-probability of each token of a continuation, read at the
positions that predict it, as lm-evaluation-harness's ``loglikelihood`` computes it.

A row is ``context + continuation`` without the continuation's last token; the logits of its last
``len(continuation)`` positions predict the continuation's tokens. Rows are left-padded, so those
positions are the last ones of the pass, and only they are computed (``logits_to_keep``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .results import ContinuationScores


def collect_continuations(logits: torch.Tensor, batch: list[int], targets: Sequence[Sequence[int]],
                          out: ContinuationScores) -> None:
    """Per row of ``batch``, its continuation's token log-probabilities and whether each token was the top one.

    ``logits``: [rows, keep, vocab], the last ``keep`` positions of each row. A row's last
    ``len(targets[i])`` positions are read at its target tokens (log-softmax in float32 as the
    model gives it, kept as float64)."""
    keep = logits.shape[1]
    for j, i in enumerate(batch):
        wanted = torch.tensor(list(targets[i]), dtype=torch.long, device=logits.device)
        logp = torch.log_softmax(logits[j, keep - len(wanted):].float(), dim=-1)
        out.token_logp[i] = logp.gather(1, wanted.unsqueeze(1)).squeeze(1).double().cpu().numpy()
        out.greedy[i] = bool((logp.argmax(dim=-1) == wanted).all())
