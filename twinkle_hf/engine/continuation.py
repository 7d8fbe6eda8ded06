"""Continuation scoring (cloze): the log-probability of each token of a continuation, read at the
positions that predict it, as lm-evaluation-harness's ``loglikelihood`` computes it.

A row is ``context + continuation`` without the continuation's last token; the logits of its last
``len(continuation)`` positions predict the continuation's tokens. Rows are left-padded, so those
positions are the last ones of the pass, and only they are computed (``logits_to_keep``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def collect_continuations(logits: torch.Tensor, batch: list[int], targets: Sequence[Sequence[int]],
                          probs: list[np.ndarray], greedy: np.ndarray) -> None:
    """``logits``: [rows, keep, vocab], the last ``keep`` positions of each row of ``batch``. Per row,
    the log-softmax of its last ``len(targets[i])`` positions at its target tokens (float32 as the
    model gives them, kept as float64), and 1.0 in ``greedy`` when each target is the top token."""
    keep = logits.shape[1]
    for j, i in enumerate(batch):
        wanted = torch.tensor(list(targets[i]), dtype=torch.long, device=logits.device)
        logp = torch.log_softmax(logits[j, keep - len(wanted):].float(), dim=-1)
        probs[i] = logp.gather(1, wanted.unsqueeze(1)).squeeze(1).double().cpu().numpy()
        greedy[i] = float(bool((logp.argmax(dim=-1) == wanted).all()))


def cloze_picks(loglik: Sequence[np.ndarray], choices: Sequence[Sequence[str]], partial: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per question, the option lm-eval picks from its options' summed log-probabilities: ``acc``'s
    (the largest sum), ``acc_norm``'s (divided by the option text's length in characters, without the
    delimiter) and ``acc_bytes``' (by its UTF-8 bytes). A tie goes to the first option, as
    ``np.argmax`` gives it to lm-eval. Under ``partial`` scoring (Winogrande) every option scores the
    same continuation and the option text is not scored: dividing by its length would only favour the
    longer one, so there is no normalised pick (-1) and lm-eval reports ``acc`` alone."""
    picks = np.full((3, len(loglik)), -1, dtype=np.int64)
    for q, (ll, texts) in enumerate(zip(loglik, choices)):
        picks[0, q] = np.argmax(ll)
        if not partial:
            chars = np.array([float(len(t)) for t in texts])
            size = np.array([float(len(t.encode("utf-8"))) for t in texts])
            picks[1:, q] = np.argmax(ll / chars), np.argmax(ll / size)
    return picks[0], picks[1], picks[2]
