"""Which formulations a run asks of one dataset, and how their rows join into its predictions.

Letters (or written answers), the written answers read beside the letters (``--method logit+X``),
the choices-only probe over the same orders, and option texts (``--method cloze``, or beside the
letters with ``logit+cloze``): each runs through the one driver, then their columns join here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.load import LoadedDataset
from ..engine.generate import stop_token_ids
from ..engine.plan import GenerationSettings
from ..engine.stats import ScoreStats
from ..models.facts import model_config
from ..prompts.cloze import prepare_cloze
from ..prompts.prepare import Prepared, prepare_dataset
from ..runtime.layout import Layout
from ..schema import Predictions
from ..settings.config import EvalConfig
from ..settings.methods import letter_method, letter_parts
from .columns import pad_token_id
from .driver import Formulation, RunLog, drive, drive_share
from .letters import Letters
from .option_texts import OptionTexts
from .written import Written

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from ..models.facts import Model


@dataclasses.dataclass(frozen=True)
class Session:
    """What every formulation of one run shares: the model and tokenizer, how the run is spread
    over processes, its resume log, and whether to show progress."""

    model: Model
    tokenizer: PreTrainedTokenizerBase
    layout: Layout
    log: RunLog | None = None
    progress: bool = True

    @property
    def context(self) -> int | None:
        return getattr(model_config(self.model), "max_position_embeddings", None)

    def written(self, data: LoadedDataset, prep: Prepared, cfg: EvalConfig, tag: str | None = None) -> Written:
        stop = stop_token_ids(self.model, self.tokenizer)
        settings = GenerationSettings(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                                      top_p=cfg.top_p, seed=cfg.seed, stop_ids=stop, batch_size=cfg.batch_size,
                                      pad_id=pad_token_id(self.tokenizer), progress=self.progress)
        return Written(data, prep, cfg, self.tokenizer, settings, tag)


def score_dataset(session: Session, data: LoadedDataset, cfg: EvalConfig) -> tuple[Predictions, ScoreStats, int]:
    """One dataset's predictions under every formulation ``cfg`` asks for, the engine's counts, and
    how many prompts had their few-shot block shortened to fit the context."""
    parts, stats, cut = [], [], 0
    if cfg.scores_letters:
        preds, st, cut = _letters(session, data, cfg)
        stats.extend(st)
        parts.append(preds.tagged(letter_method(cfg.method) or "") if cfg.cloze else preds)
    if cfg.cloze:
        preds, st1 = drive(_cloze(session, data, cfg), session.model, session.layout, session.log)
        parts.append(preds)
        stats.append(st1)
    return Predictions.concat(parts), ScoreStats.merge(stats), cut


def score_share(session: Session, data: LoadedDataset, cfg: EvalConfig, shard: tuple[int, int]
                ) -> tuple[int, ScoreStats]:
    """``--shard K/N``: every formulation of one dataset run on its share K of N only, each row saved
    to the session's log (which a shard needs); how many rows the share has, and the engine's counts."""
    assert session.log is not None
    forms: list[tuple[Formulation, bool]] = []  # and whether its counts join the timing (a run's: not the probe's)
    if cfg.scores_letters:
        scored, local, _, written = _letter_forms(session, data, cfg)
        forms += [(scored, True), *((w, True) for w in written)]
        if local.probe == "choices-only":
            forms.append((_probe(session, data, local), False))
    if cfg.cloze:
        forms.append((_cloze(session, data, cfg), True))
    shares = [(drive_share(form, session.model, session.layout, session.log, shard), counted)
              for form, counted in forms]
    return sum(n for (n, _), _ in shares), ScoreStats.merge([st for (_, st), counted in shares if counted])


def _cloze(session: Session, data: LoadedDataset, cfg: EvalConfig) -> OptionTexts:
    prep = prepare_cloze(session.tokenizer, data, cfg, session.context)
    return OptionTexts(data, prep, cfg, pad_token_id(session.tokenizer), session.progress)


def _letter_forms(session: Session, data: LoadedDataset, cfg: EvalConfig
                  ) -> tuple[Formulation[Any], EvalConfig, Prepared, list[Written]]:
    """The letters scored (or written when ``cfg`` generates), their settings and prompts, and
    the written answers of the same prompts read beside them (logit+X)."""
    scored, *written = letter_parts(cfg, session.tokenizer)
    prep = prepare_dataset(session.tokenizer, data, scored, session.context)
    form: Letters | Written = session.written(data, prep, scored) if scored.generates else \
        Letters(data, prep, scored, pad_token_id(session.tokenizer), session.progress)
    beside = [session.written(data, prepare_dataset(session.tokenizer, data, answers, session.context), answers,
                              tag=answers.method) for answers in written]
    return form, scored, prep, beside


def _letters(session: Session, data: LoadedDataset, cfg: EvalConfig) -> tuple[Predictions, list[ScoreStats], int]:
    """The letter rows (scored, or written when ``cfg`` generates), with the written letters read
    beside them (logit+X) and the choices-only probe's picks."""
    form, scored, prep, written = _letter_forms(session, data, cfg)
    preds, st = drive(form, session.model, session.layout, session.log)
    stats = [st]
    for answers in written:  # the same prompts answered in writing: the letter read beside the letter scored
        text, st = drive(answers, session.model, session.layout, session.log)
        assert text.id == preds.id and np.array_equal(text.order_index, preds.order_index)
        assert preds.letters is not None and text.generation is not None
        preds = dataclasses.replace(preds, letters=dataclasses.replace(preds.letters, pred_written=text.pred,
                                                                        written=text.generation.output))
        stats.append(st)
    if scored.probe == "choices-only":
        assert preds.letters is not None
        probe = _probe(session, data, scored)
        assert probe.rows["id"] == preds.id and probe.rows["perm"] == preds.perm
        preds = dataclasses.replace(preds, letters=dataclasses.replace(
            preds.letters, pred_choices_only=drive(probe, session.model, session.layout, session.log)[0].pred))
    return preds, stats, prep.fewshot_truncated


def _probe(session: Session, data: LoadedDataset, cfg: EvalConfig) -> Letters:
    """--probe choices-only: letters over the same orders with every question text removed, the
    few-shot examples' too (Balepur et al. 2024); the displayed letter chosen. Its rows are saved
    apart from the letters' (tag ``choices-only``), so a resumed run or a shard keeps them too."""
    prep = prepare_dataset(session.tokenizer, data, cfg, session.context, blank_questions=True)
    return Letters(data, prep, cfg, pad_token_id(session.tokenizer), session.progress, name="choices-only probe",
                   tag="choices-only")
