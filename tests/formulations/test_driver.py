"""Every formulation runs through the one driver: a run killed after its first batch and resumed
from its saved rows gives exactly the rows of a run that was never stopped, and runs only the rows
that were missing."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import make_model

from twinkle_hf.data.load import load_benchmark
from twinkle_hf.errors import TwinkleError
from twinkle_hf.formulations.driver import drive
from twinkle_hf.formulations.letters import Letters
from twinkle_hf.formulations.option_texts import OptionTexts
from twinkle_hf.formulations.plan import Session
from twinkle_hf.outputs.resume import RunLog, run_identity
from twinkle_hf.prompts.cloze import prepare_cloze
from twinkle_hf.prompts.prepare import prepare_dataset
from twinkle_hf.runtime.layout import Layout
from twinkle_hf.settings.config import EvalConfig


class Killed(Exception):
    """Stands for the process dying after a batch was saved."""


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("driver") / "q.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(7):
            k = 3 + i % 2
            fh.write(json.dumps({"question": f"Question {i}: which is the sea mammal?", "subject": "sea",
                                 "choices": [f"option {j} of {i}" for j in range(k)], "answer": i % k}) + "\n")
    return path


def _form(kind: str, tok: Any, path: Path, model: Any = None) -> Any:
    data = load_benchmark(str(path))
    if kind == "cloze":
        cfg = EvalConfig(method="cloze", batch_size=2)
        return OptionTexts(data, prepare_cloze(tok, data, cfg, None), cfg, tok.eos_token_id, progress=False)
    if kind == "letters":
        cfg = EvalConfig(shuffle=True, seeds=2, batch_size=2)
        return Letters(data, prepare_dataset(tok, data, cfg, None), cfg, tok.eos_token_id, progress=False)
    cfg = EvalConfig(method="box", shuffle=True, seeds=2, batch_size=2, max_new_tokens=4, temperature=0.8,
                     samples=2, apply_chat_template=False)
    session = Session(model, tok, Layout(), progress=False)
    return session.written(data, prepare_dataset(tok, data, cfg, None), cfg)


class Counting:
    """A formulation that counts the rows it is asked to run."""

    def __init__(self, form: Any) -> None:
        self.form, self.ran = form, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.form, name)

    def run(self, model: Any, rows: list[int], layout: Layout, sink: Any) -> Any:
        self.ran.extend(rows)
        return self.form.run(model, rows, layout, sink)


def _same(a: Any, b: Any) -> None:
    """Every column equal, a formulation's part column by column; probabilities to float rounding (a
    batch of other rows moves them by that)."""
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if dataclasses.is_dataclass(x):
            _same(x, y)
        elif isinstance(x, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-6, err_msg=f)
        elif isinstance(x, list) and x and isinstance(x[0], np.ndarray):
            assert len(x) == len(y) and all(np.allclose(p, q, rtol=0, atol=1e-6) for p, q in zip(x, y)), f
        else:
            assert x == y, f


@pytest.mark.parametrize("kind", ["letters", "cloze", "written"])
def test_a_killed_run_resumed_equals_one_never_stopped(kind, tiny_tokenizer, questions, tmp_path):
    model = make_model(tiny_tokenizer, seed=3)
    whole, _ = drive(_form(kind, tiny_tokenizer, questions, model), model, Layout())
    identity = run_identity({"kind": kind}, "weights", data_fingerprint="data")
    log = RunLog(tmp_path, identity, resume=False)
    saved = log.append

    def die_after_first_batch(rows: Iterable[Mapping[str, Any]]) -> None:
        saved(rows)
        raise Killed

    log.append = die_after_first_batch  # type: ignore[method-assign]
    with pytest.raises(Killed):
        drive(_form(kind, tiny_tokenizer, questions, model), model, Layout(), log)
    log.close()
    again = RunLog(tmp_path, identity, resume=True)
    assert 0 < len(again.done) < len(whole) * (9 if kind == "cloze" else 1)
    form = Counting(_form(kind, tiny_tokenizer, questions, model))
    resumed, _ = drive(form, model, Layout(), again)
    again.close()
    assert len(form.ran) == len(form.keys()) - len(again.done)  # only the rows that were missing ran
    _same(whole, resumed)


def test_saved_rows_that_no_longer_answer_their_row_run_again(tiny_tokenizer, questions):
    """A saved letter row of another option order (the data changed under the same id) is not reused."""
    form = Counting(_form("letters", tiny_tokenizer, questions))
    key = form.keys()[0]
    other = [p for p in reversed(form.rows["perm"][0])]

    class Log:
        def __init__(self) -> None:
            self.done = {key: {"perm": other, "probs": [1.0, 0.0, 0.0], "letter_mass": 1.0}}

        def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
            list(rows)

    drive(form, make_model(tiny_tokenizer), Layout(), Log())
    assert 0 in form.ran and len(form.ran) == len(form.keys())


def test_a_run_saved_by_an_older_version_is_refused_in_one_line(tmp_path):
    identity = run_identity({"method": "cloze"}, "weights", data_fingerprint="data")
    old = {k: v for k, v in identity.items() if k != "resume_format"}
    (tmp_path / ".partial").mkdir()
    (tmp_path / ".partial" / "run.json").write_text(json.dumps(old), encoding="utf-8")
    with pytest.raises(TwinkleError, match=r"resume format 1; this version reads 2\); start it again with "
                                           r"--overwrite") as err:
        RunLog(tmp_path, identity, resume=True)
    assert "\n" not in str(err.value)
