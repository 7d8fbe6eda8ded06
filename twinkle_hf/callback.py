"""Shuffled evaluation while a model trains: a `transformers.TrainerCallback`.

    callback = TwinkleCallback(dataset="path/to/mmlu", config=EvalConfig(shuffle_mode="cyclic", limit=20))
    trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer)
    callback.attach(trainer)   # logs twinkle/<metric> through trainer.log (TensorBoard, W&B, ...)
    trainer.train()

It runs at each evaluation (`eval_strategy`), or every ``every_n_steps`` optimizer steps. It runs
on every process (each scores a share; see distributed.py) and leaves the model in training mode.
A model wrapped in DDP (or by accelerate or DeepSpeed) is evaluated through the module inside.

From the second evaluation on it also logs that evaluation against the first and the previous one,
paired per question as compare pairs two runs: ``twinkle/delta_vs_first``, ``twinkle/p_vs_first``,
``twinkle/flips_right_to_wrong_vs_first``, ``twinkle/flips_wrong_to_right_vs_first``,
``twinkle/acc_original_delta_vs_first``, ``twinkle/acc_original_p_vs_first`` and the same
``..._vs_previous`` (metrics/checkpoint_pairs.py). It keeps only the per-question outcomes of those
two evaluations; every process gets the whole predictions, so every process logs the same values.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from .data.load import LoadedDataset
from .data.sources import as_datasets
from .errors import TwinkleError
from .evaluation import evaluate
from .metrics.checkpoint_pairs import FIRST, PREVIOUS, Outcomes, paired_scalars, question_outcomes
from .metrics.summarize import headline_scalars
from .outputs.result import EvalResult
from .settings.config import EvalConfig

DEFAULT_CONFIG = EvalConfig(shuffle=True, shuffle_mode="cyclic", bootstrap=0)


class TwinkleCallback(TrainerCallback):
    """Evaluate with shuffled options during training and log ``twinkle/<metric>`` values."""

    def __init__(self, dataset: str | LoadedDataset | list[LoadedDataset] | None = None,
                 config: EvalConfig | None = None, *, every_n_steps: int | None = None,
                 tokenizer: Any = None, prefix: str = "twinkle/") -> None:
        """``dataset`` defaults to ``config.datasets`` (the embedded MMLU sample if empty);
        ``config.limit`` (questions per subject) keeps each run small; ``config.model`` is unused."""
        if every_n_steps is not None and every_n_steps < 1:
            raise TwinkleError(f"every_n_steps must be >= 1; got {every_n_steps}")
        self.config = config or DEFAULT_CONFIG
        self.dataset = dataset
        self.every_n_steps = every_n_steps
        self.tokenizer = tokenizer
        self.prefix = prefix
        self.trainer: Any = None
        self.history: list[tuple[int, dict[str, float]]] = []
        self.last_result: EvalResult | None = None
        self._data: list[LoadedDataset] | None = None
        self._first: Outcomes | None = None  # per-question outcomes of the first and the last evaluation
        self._previous: Outcomes | None = None

    def attach(self, trainer: Any) -> TwinkleCallback:
        """Register with ``trainer`` and log through ``trainer.log`` (so reporters see the values)."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def _datasets(self) -> list[LoadedDataset]:
        if self._data is None:  # loaded once, reused at every evaluation
            self._data = as_datasets(self.dataset, self.config)
        return self._data

    def run(self, model: Any, tokenizer: Any, state: Any) -> dict[str, float]:
        """One evaluation now (``tokenizer`` None: the one given to the callback); returns the logged values."""
        tokenizer = tokenizer if tokenizer is not None else self.tokenizer
        if tokenizer is None:
            raise TwinkleError("TwinkleCallback needs a tokenizer: pass tokenizer=... or give the Trainer a "
                               "processing_class")
        result = evaluate(model, tokenizer, self._datasets(), self.config, progress=False)
        self.last_result = result
        scalars = headline_scalars(result.metrics["overall"])
        outcomes = question_outcomes(result.predictions)
        if self._first is not None and self._previous is not None:
            scalars |= paired_scalars(self._first, outcomes, FIRST) | paired_scalars(self._previous, outcomes, PREVIOUS)
        else:
            self._first = outcomes
        self._previous = outcomes
        logs = {self.prefix + k: v for k, v in scalars.items()}
        self.history.append((state.global_step, logs))
        if self.trainer is not None:
            self.trainer.log(dict(logs))
        else:  # not attached: keep the values in the trainer state's history at least
            state.log_history.append({**logs, "step": state.global_step})
        return logs

    def _tokenizer(self, kwargs: dict[str, Any]) -> Any:
        return self.tokenizer or kwargs.get("processing_class") or kwargs.get("tokenizer")

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.every_n_steps is None:
            self.run(kwargs["model"], self._tokenizer(kwargs), state)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.every_n_steps and state.global_step % self.every_n_steps == 0:
            self.run(kwargs["model"], self._tokenizer(kwargs), state)
