"""Written answers: every prompt decoded (``--samples`` times), its letter extracted from the text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.load import LoadedDataset
from ..engine.distributed import generate_sharded
from ..engine.plan import GenerationSettings
from ..engine.results import Generation
from ..engine.stats import ScoreStats
from ..metrics.extract import extract
from ..metrics.twinkle_extract import letter_index, twinkle_letter, twinkle_patterns
from ..prompts.permute import hash_ids
from ..prompts.prepare import Prepared
from ..runtime.layout import Layout
from ..schema import GenerationColumns, Predictions
from ..settings.config import EvalConfig
from ..settings.values import compile_answer_regex
from .columns import meaning, provenance
from .driver import Sink
from .keys import Key, letter_key, written_name

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from ..models.facts import Model


@dataclass
class Written:
    """One dataset's permuted prompts answered in writing, a row per (question, order, sample).

    ``tag``: the written half of ``--method logit+X`` (X), whose rows are saved apart from the
    letter rows of the same prompts.
    """

    data: LoadedDataset
    prep: Prepared
    cfg: EvalConfig
    tokenizer: PreTrainedTokenizerBase
    settings: GenerationSettings
    tag: str | None = None
    rows: dict[str, list] = field(init=False)
    base: np.ndarray = field(init=False)  # per row: its prompt (index into prep)
    sample: np.ndarray = field(init=False)  # per row: its sample number
    seeds: list[int] = field(init=False)  # per row: its sampling generator's seed

    def __post_init__(self) -> None:
        samples = self.cfg.samples
        self.base = np.repeat(np.arange(len(self.prep.rows)), samples)
        self.sample = np.tile(np.arange(samples, dtype=np.int64), len(self.prep.rows))
        self.rows = self.prep.rows.select(self.base)[:]  # the columns as lists, read once
        # Sample 0 is the row of a one-sample run, so --samples n extends it.
        self.seeds = [int(h) for h in hash_ids([f"{self.data.name}\x00{i}\x00{o}" + (f"\x00{s}" if s else "")
                                                for i, o, s in zip(self.rows["id"], self.rows["order_index"],
                                                                   self.sample)])]

    @property
    def part(self) -> str:
        return f"answers of {written_name(self.data.name, self.tag)}"

    def keys(self) -> list[Key]:
        name = written_name(self.data.name, self.tag)
        return [letter_key(name, i, o, s) for i, o, s in zip(self.rows["id"], self.rows["order_index"], self.sample)]

    def reuse(self, row: int, saved: Mapping[str, Any]) -> Generation | None:
        if saved.get("perm") != self.rows["perm"][row] or "tokens" not in saved:
            return None
        return Generation([int(t) for t in saved["tokens"]], saved["output"], bool(saved["truncated"]))

    def record(self, row: int, result: Generation) -> dict[str, Any]:
        return {"dataset": self.data.name, "id": self.rows["id"][row], "order": self.rows["order_index"][row],
                "sample": self.sample[row], "perm": self.rows["perm"][row], "output": result.text,
                "truncated": result.truncated, "tokens": result.tokens,
                **({"formulation": self.tag} if self.tag else {})}

    def _token_ids(self, rows: Sequence[int]) -> list[list[int]]:
        return [self.prep.token_ids[self.base[i]] for i in rows]

    def dealt_by(self) -> tuple[list[list[int]], list[Any] | None]:
        every = range(len(self.base))
        return self._token_ids(every), None if self.prep.groups is None else [self.prep.groups[self.base[i]]
                                                                              for i in every]

    def run(self, model: Model, rows: list[int], layout: Layout, sink: Sink | None
            ) -> tuple[list[Generation], ScoreStats]:
        decoded: dict[int, str] = {}  # this process's answers, decoded once (for the resume file and after)
        decode = lambda j, tokens: decoded.setdefault(j, str(self.tokenizer.decode(tokens, skip_special_tokens=True)))
        finished = None if sink is None else (lambda idx, tokens, cut: sink(
            idx, [Generation(t, decode(j, t), c) for j, t, c in zip(idx, tokens, cut)]))
        groups = None if self.prep.groups is None else [self.prep.groups[self.base[i]] for i in rows]
        out = generate_sharded(model, self._token_ids(rows), self.settings, layout, [self.seeds[i] for i in rows],
                               finished, groups, self.part)
        return [Generation(t, decode(j, t), bool(c)) for j, (t, c) in enumerate(zip(out.tokens, out.truncated))], \
            out.stats

    def predictions(self, results: Sequence[Generation]) -> Predictions:
        cfg, rows = self.cfg, self.rows
        texts = [r.text for r in results]
        regex = compile_answer_regex(cfg.answer_regex) if cfg.answer_regex else None
        found = [extract(text, len(c), cfg.method, regex) for text, c in zip(texts, rows["choices"])]
        pred = [f.pred for f in found]
        if cfg.extractor == "twinkle":  # Twinkle Eval's reading of the same texts (reasoning is still set aside)
            patterns = twinkle_patterns(cfg.method, cfg.answer_regex)
            pred = [letter_index(twinkle_letter(text, patterns), len(c)) for text, c in zip(texts, rows["choices"])]
        n = len(results)
        return Predictions(
            dataset=[self.data.name] * n, id=rows["id"], subject=rows["subject"],
            order_index=np.asarray(rows["order_index"], dtype=np.int64), perm=rows["perm"],
            answer=np.asarray(rows["answer"], dtype=np.int64), pred=np.array(pred, dtype=np.int64),
            generation=GenerationColumns(texts, [f.reasoning for f in found],
                                         np.array([r.truncated for r in results], dtype=bool),
                                         np.array([len(r.tokens) for r in results], dtype=np.int64),
                                         self.sample if cfg.samples > 1 else None),
            prompt=[self.prep.texts[i] for i in self.base] if cfg.log_prompts else None,
            **provenance(self.data, rows["id"], [len(t) for t in self._token_ids(range(n))]), **meaning(rows),
        )
