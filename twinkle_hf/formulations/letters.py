"""Letters: each prompt's next token read over its option labels (and the choices-only probe:
the same, over prompts whose question text is blanked)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.load import LoadedDataset
from ..engine.distributed import score_sharded
from ..engine.results import LetterScore, Prompts
from ..engine.scoring import ScoreSettings
from ..engine.stats import ScoreStats
from ..prompts.permute import choose_options
from ..prompts.prepare import Prepared
from ..runtime.layout import Layout
from ..schema import LetterColumns, Predictions
from ..settings.config import EvalConfig
from .columns import meaning, provenance
from .driver import Sink
from .keys import Key, letter_key, written_name

if TYPE_CHECKING:
    from ..models.facts import Model


@dataclass
class Letters:
    """One dataset's permuted prompts, each scored over its labels; the pick is the most probable
    label (ties broken by a seeded order, permute.choose_options)."""

    data: LoadedDataset
    prep: Prepared
    cfg: EvalConfig
    pad_id: int
    progress: bool = True
    name: str = "letters"  # what the progress bar calls the rows
    tag: str | None = None  # keeps its saved rows apart from the letters' of the same orders (the probe's)
    rows: dict[str, list] = field(init=False)

    def __post_init__(self) -> None:
        self.rows = self.prep.rows[:]  # the columns as lists, read once (a datasets column reads row by row)

    @property
    def part(self) -> str:
        return f"{self.name} of {self.data.name}"

    def keys(self) -> list[Key]:
        name = written_name(self.data.name, self.tag)
        return [letter_key(name, i, o) for i, o in zip(self.rows["id"], self.rows["order_index"])]

    def reuse(self, row: int, saved: Mapping[str, Any]) -> LetterScore | None:
        if saved.get("perm") != self.rows["perm"][row] or "probs" not in saved:  # another order was saved
            return None
        return LetterScore(np.asarray(saved["probs"], dtype=np.float64), float(saved["letter_mass"]))

    def record(self, row: int, result: LetterScore) -> dict[str, Any]:
        return {"dataset": self.data.name, "id": self.rows["id"][row], "order": self.rows["order_index"][row],
                "perm": self.rows["perm"][row], "probs": result.probs, "letter_mass": result.label_mass,
                **({"formulation": self.tag} if self.tag else {})}

    def dealt_by(self) -> tuple[Sequence[list[int]], Sequence[Any] | None]:
        return self.prep.token_ids, self.prep.groups

    def run(self, model: Model, rows: list[int], layout: Layout, sink: Sink | None
            ) -> tuple[list[LetterScore], ScoreStats]:
        prompts = Prompts(self.prep.token_ids, self.prep.letter_ids, self.prep.groups).take(rows)
        out = score_sharded(model, prompts, ScoreSettings(self.cfg.batch_size, self.pad_id, self.progress), layout,
                            sink, self.part)
        return out.rows(), out.stats  # type: ignore[return-value]  # Prompts give letter scores

    def predictions(self, results: Sequence[LetterScore]) -> Predictions:
        rows = self.rows
        probs = [r.probs for r in results]
        order_index = np.asarray(rows["order_index"], dtype=np.int64)
        return Predictions(
            dataset=[self.data.name] * len(results), id=rows["id"], subject=rows["subject"], order_index=order_index,
            perm=rows["perm"], answer=np.asarray(rows["answer"], dtype=np.int64),
            pred=choose_options(probs, rows["id"], order_index, self.cfg.seed)[0],
            letters=LetterColumns(probs, np.array([r.label_mass for r in results], dtype=np.float64)),
            prompt=self.prep.texts if self.cfg.log_prompts else None,
            **provenance(self.data, rows["id"], [len(t) for t in self.prep.token_ids]), **meaning(rows),
        )
