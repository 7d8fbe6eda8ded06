"""Option texts (cloze): every option's text scored as a continuation of its question, as
lm-evaluation-harness's ``multiple_choice`` tasks do; one prediction row per question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.load import LoadedDataset
from ..engine.distributed import score_sharded
from ..engine.results import Continuations, ContinuationScore
from ..engine.scoring import ScoreSettings
from ..engine.stats import ScoreStats
from ..metrics.cloze_picks import cloze_picks
from ..prompts.cloze import ClozePrompts
from ..runtime.layout import Layout
from ..schema import CLOZE, ClozeColumns, Predictions
from ..settings.config import EvalConfig
from .columns import no_meaning, provenance
from .driver import Sink
from .keys import Key, cloze_key

if TYPE_CHECKING:
    from ..models.facts import Model


@dataclass
class OptionTexts:
    """One dataset's cloze requests: a row per option (question-major), the question's context run
    once as the prefix its options share."""

    data: LoadedDataset
    prep: ClozePrompts
    cfg: EvalConfig
    pad_id: int
    progress: bool = True
    rows: dict[str, list] = field(init=False)
    option: list[int] = field(init=False)  # per request row: the option's index in its question

    def __post_init__(self) -> None:
        self.rows = self.prep.rows[:]
        self.option = [j for c in self.rows["choices"] for j in range(len(c))]

    @property
    def part(self) -> str:
        return f"option texts of {self.data.name}"

    def _qid(self, row: int) -> str:
        return self.rows["id"][self.prep.question[row]]

    def keys(self) -> list[Key]:
        return [cloze_key(self.data.name, self._qid(i), j) for i, j in enumerate(self.option)]

    def reuse(self, row: int, saved: Mapping[str, Any]) -> ContinuationScore | None:
        if "token_logp" not in saved:
            return None
        return ContinuationScore(np.asarray(saved["token_logp"], dtype=np.float64), bool(saved["greedy"]))

    def record(self, row: int, result: ContinuationScore) -> dict[str, Any]:
        return {"dataset": self.data.name, "id": self._qid(row), "order": 0, "perm": [], "formulation": CLOZE,
                "option": self.option[row], "token_logp": result.token_logp, "greedy": result.greedy}

    def dealt_by(self) -> tuple[Sequence[list[int]], Sequence[Any] | None]:
        requests = Continuations(self.prep.token_ids, self.prep.targets, self.prep.groups)
        return requests.token_ids, requests.groups

    def run(self, model: Model, rows: list[int], layout: Layout, sink: Sink | None
            ) -> tuple[list[ContinuationScore], ScoreStats]:
        requests = Continuations(self.prep.token_ids, self.prep.targets, self.prep.groups).take(rows)
        out = score_sharded(model, requests, ScoreSettings(self.cfg.batch_size, self.pad_id, self.progress), layout,
                            sink, self.part)
        return out.rows(), out.stats  # type: ignore[return-value]  # Continuations give continuation scores

    def predictions(self, results: Sequence[ContinuationScore]) -> Predictions:
        rows = self.rows
        ids, choices = rows["id"], rows["choices"]
        loglik: list[list[float]] = [[] for _ in ids]
        for q, result in zip(self.prep.question, results):
            loglik[q].append(float(np.sum(result.token_logp)))
        sums = [np.array(x, dtype=np.float64) for x in loglik]
        partial = self.data.benchmark is not None and self.data.benchmark.cloze_scoring == "partial"  # Winogrande
        pred, pred_norm, pred_bytes = cloze_picks(sums, choices, partial)
        n = len(ids)
        return Predictions(
            dataset=[self.data.name] * n, id=ids, subject=rows["subject"], order_index=np.zeros(n, dtype=np.int64),
            perm=[list(range(len(c))) for c in choices], answer=np.asarray(rows["answer"], dtype=np.int64),
            pred=pred, cloze=ClozeColumns(sums, pred_norm, pred_bytes),
            prompt=self.prep.contexts if self.cfg.log_prompts else None, formulation=[CLOZE] * n,
            **provenance(self.data, ids, self.prep.context_tokens),
            **no_meaning(n),
        )
