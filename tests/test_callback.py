"""TwinkleCallback inside a real transformers.Trainer run on CPU."""

from __future__ import annotations

import datasets
import pytest
import torch
from helpers import make_model
from outputs.paired_check import change
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


PAIRED = ("delta", "p", "flips_right_to_wrong", "flips_wrong_to_right", "acc_original_delta", "acc_original_p")


def _rows(result) -> list[dict]:
    """A result's predictions as predictions.jsonl rows (what paired_check reads)."""
    p = result.predictions
    return [{"dataset": d, "id": i, "subject": s, "seed": int(o), "pred": int(pred), "answer": int(a)}
            for d, i, s, o, pred, a in zip(p.dataset, p.id, p.subject, p.order_index, p.pred, p.answer)]


def _check_against_recomputation(logs: dict, base, other, suffix: str) -> None:
    acc, orig = change(_rows(base), _rows(other), "accuracy"), change(_rows(base), _rows(other), "acc_original")
    assert logs[f"twinkle/delta_{suffix}"] == pytest.approx(acc["delta"])
    assert logs[f"twinkle/p_{suffix}"] == pytest.approx(acc["p"])
    assert (logs[f"twinkle/flips_right_to_wrong_{suffix}"], logs[f"twinkle/flips_wrong_to_right_{suffix}"]) == \
        (acc["down"], acc["up"])
    assert logs[f"twinkle/acc_original_delta_{suffix}"] == pytest.approx(orig["delta"])
    assert logs[f"twinkle/acc_original_p_{suffix}"] == pytest.approx(orig["p"])


def _recording(monkeypatch) -> list:
    """Every result the callback's evaluations return, in order."""
    import twinkle_hf.callback as module

    results, evaluate = [], module.evaluate
    monkeypatch.setattr(module, "evaluate", lambda *a, **k: results.append(evaluate(*a, **k)) or results[-1])
    return results


def test_the_trainer_logs_each_evaluation_against_the_first_from_the_second_on(tmp_path, tiny_tokenizer, all_a_dir,
                                                                               monkeypatch):
    results = _recording(monkeypatch)
    trainer = _trainer(tmp_path, tiny_tokenizer, make_model(tiny_tokenizer))
    config = EvalConfig(shuffle=True, seeds=2, limit=2, bootstrap=0)
    TwinkleCallback(dataset=str(all_a_dir), config=config, every_n_steps=1).attach(trainer)
    trainer.train()
    first, second = [h for h in trainer.state.log_history if "twinkle/accuracy" in h]
    assert not any("vs_" in k for k in first)  # nothing to pair the first evaluation with
    assert {f"twinkle/{k}_{s}" for k in PAIRED for s in ("vs_first", "vs_previous")} <= set(second)
    for suffix in ("vs_first", "vs_previous"):
        _check_against_recomputation(second, results[0], results[1], suffix)


def test_vs_first_and_vs_previous_equal_a_recomputation(tiny_tokenizer, all_a_dir, monkeypatch):
    """Models that always say one letter: under random orders the per-question means differ between them."""
    results = _recording(monkeypatch)
    cb = TwinkleCallback(dataset=str(all_a_dir), config=EvalConfig(shuffle=True, seeds=3, limit=3, bootstrap=0))

    class State:
        global_step, log_history = 0, []

    logs = [cb.run(make_model(tiny_tokenizer, favour=f" {x}"), tiny_tokenizer, State) for x in "ABA"]
    assert logs[1]["twinkle/delta_vs_first"] != 0 and logs[1]["twinkle/acc_original_delta_vs_first"] == -1.0
    _check_against_recomputation(logs[1], results[0], results[1], "vs_first")
    _check_against_recomputation(logs[2], results[0], results[2], "vs_first")
    _check_against_recomputation(logs[2], results[1], results[2], "vs_previous")
    assert logs[2]["twinkle/delta_vs_first"] == 0 and logs[2]["twinkle/delta_vs_previous"] == \
        -logs[1]["twinkle/delta_vs_first"]
