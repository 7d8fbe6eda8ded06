"""lm-eval's picks among a cloze question's options, from their summed log-probabilities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
