"""TwinkleCallback inside a real transformers.Trainer run on CPU."""

from __future__ import annotations

import datasets
import pytest
import torch
from helpers import make_model
from transformers import Trainer, TrainingArguments, default_data_collator

from twinkle_hf.callback import TwinkleCallback
from twinkle_hf.settings.config import EvalConfig


def _train_set(tokenizer) -> datasets.Dataset:
    texts = ["Which of these is a mammal? A. shark B. whale Answer: B"] * 8
    enc = tokenizer(texts)
    return datasets.Dataset.from_dict({"input_ids": enc["input_ids"], "labels": enc["input_ids"]})


def _trainer(tmp_path, tokenizer, model, **extra) -> Trainer:
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4,
                             learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                             **extra)
    return Trainer(model=model, args=args, train_dataset=_train_set(tokenizer), eval_dataset=_train_set(tokenizer),
                   processing_class=tokenizer, data_collator=default_data_collator)  # equal lengths


def test_callback_logs_twinkle_metrics_every_step(tmp_path, tiny_tokenizer, all_a_dir):
    model = make_model(tiny_tokenizer)
    trainer = _trainer(tmp_path, tiny_tokenizer, model)
    config = EvalConfig(shuffle=True, shuffle_mode="cyclic", limit=2, bootstrap=0)
    cb = TwinkleCallback(dataset=str(all_a_dir), config=config,
                         every_n_steps=1).attach(trainer)
    trainer.train()
    logged = [h for h in trainer.state.log_history if "twinkle/accuracy" in h]
    assert [h["step"] for h in logged] == [1, 2]
    assert {"twinkle/rstd", "twinkle/all_correct", "twinkle/pred_share_A"} <= set(logged[0])
    assert [step for step, _ in cb.history] == [1, 2]
    assert cb.last_result.metrics["overall"]["accuracy"]["n_questions"] == 6


def test_callback_runs_at_each_evaluation(tmp_path, tiny_tokenizer, all_a_dir):
    trainer = _trainer(tmp_path, tiny_tokenizer, make_model(tiny_tokenizer), eval_strategy="steps", eval_steps=1)
    TwinkleCallback(dataset=str(all_a_dir), config=EvalConfig(shuffle=True, seeds=2, limit=1)).attach(trainer)
    trainer.train()
    assert sum("twinkle/accuracy" in h for h in trainer.state.log_history) == 2


def test_run_leaves_training_mode_and_grad_state(tiny_tokenizer, all_a_dir):
    model = make_model(tiny_tokenizer).train()
    cb = TwinkleCallback(dataset=str(all_a_dir), config=EvalConfig(limit=1))

    class State:
        global_step, log_history = 7, []

    logs = cb.run(model, tiny_tokenizer, State)
    assert model.training and torch.is_grad_enabled()
    assert State.log_history == [{**logs, "step": 7}]  # not attached: kept in the state's history
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_bad_arguments():
    with pytest.raises(ValueError, match="every_n_steps"):
        TwinkleCallback(every_n_steps=0)
