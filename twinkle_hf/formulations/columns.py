"""The prediction columns every formulation fills the same way: where each question came from,
what a shuffle kept of its meaning, and the padding token the engine pads with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.load import LoadedDataset

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def provenance(data: LoadedDataset, ids: Sequence[str], prompt_tokens: Sequence[int]) -> dict[str, Any]:
    """Predictions' ``file``/``row`` (each question's file and row in it, when the loader knows
    them) and ``prompt_tokens``."""
    out: dict[str, Any] = {"prompt_tokens": np.array(prompt_tokens, dtype=np.int64)}
    if data.origins and all(i in data.origins for i in ids):
        out["file"] = [data.origins[i][0] for i in ids]
        out["row"] = np.array([data.origins[i][1] for i in ids], dtype=np.int64)
    return out


def meaning(rows: dict[str, list]) -> dict[str, Any]:
    """Predictions' ``pinned``, ``rewritten`` and ``fixed_order`` from the permuted rows' columns."""
    return {"pinned": rows["pinned"], "rewritten": rows["rewritten"],
            "fixed_order": np.asarray(rows["fixed_order"], dtype=bool)}


def no_meaning(n: int) -> dict[str, Any]:
    """The same columns for rows shown in their original order alone (cloze): nothing pinned."""
    return {"pinned": [[] for _ in range(n)], "rewritten": [[] for _ in range(n)],
            "fixed_order": np.zeros(n, dtype=bool)}


def pad_token_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The tokenizer's padding id, else its end-of-sequence id, else 0 (padding is masked anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
