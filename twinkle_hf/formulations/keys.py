"""Resume keys: which saved row answers which row of a run, for every formulation.

A key is (dataset, question id, order index, sample). Formulations that share a run's file keep
their rows apart by the dataset part: the cloze options of ``--method logit+cloze`` and the written
answers of ``--method logit+X`` have the same question ids and orders as the letter rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema import CLOZE

Key = tuple[str, str, int, int]  # (dataset, id, order index, sample)


def letter_key(dataset: str, qid: str, order: int, sample: int = 0) -> Key:
    """The key of one (question, order[, sample]) row of letters or written answers."""
    return (dataset, qid, int(order), int(sample))


def cloze_key(dataset: str, qid: str, option: int) -> Key:
    """The key of one option of a cloze question: apart from every letter row's."""
    return (f"{dataset}\x00{CLOZE}", qid, int(option), 0)


def written_name(dataset: str, tag: str | None) -> str:
    """The dataset part of the keys of a logit+X run's written answers (``tag`` X): apart from its
    letter rows, which have the same (id, order)."""
    return dataset if tag is None else f"{dataset}\x00{tag}"


def row_key(record: Mapping[str, Any]) -> Key:
    """The key of a saved row, from the fields every saved row holds."""
    formulation = record.get("formulation")
    if formulation == CLOZE:
        return cloze_key(record["dataset"], record["id"], int(record["option"]))
    return letter_key(written_name(record["dataset"], formulation), record["id"], int(record["order"]),
                      int(record.get("sample", 0)))
