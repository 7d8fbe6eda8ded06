"""Runs that would succeed with misleading numbers: exact ties, a scored position the model does
not answer at, and the README's Python API run as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import make_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.prompts.permute import choose_options
from twinkle_hf.settings.config import EvalConfig

PYTHON_API = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"  # the README's Python API moved here


def test_ties_are_broken_without_favouring_a_letter():
    n, k = 4000, 4
    probs = [np.full(k, 1 / k) for _ in range(n)]
    ids = [f"q{i}" for i in range(n)]
    pred, tied = choose_options(probs, ids, np.zeros(n, dtype=np.int64), seed=1234)
    assert tied.all()
    shares = np.bincount(pred, minlength=k) / n
    assert np.all(np.abs(shares - 1 / k) < 0.03), shares  # A would get 100% under argmax
    again, _ = choose_options(probs[::-1], ids[::-1], np.zeros(n, dtype=np.int64), seed=1234)
    assert again[::-1].tolist() == pred.tolist()  # a function of the row, not of its place
    other, _ = choose_options(probs, ids, np.zeros(n, dtype=np.int64), seed=99)
    assert other.tolist() != pred.tolist()


def test_ties_only_choose_among_the_tied_options():
    probs = [np.array([0.1, 0.45, 0.45]), np.array([0.7, 0.2, 0.1]), np.array([0.2, 0.3, 0.3, 0.2])]
    pred, tied = choose_options(probs, ["a", "b", "c"], np.array([0, 0, -1]), seed=0)
    assert tied.tolist() == [True, False, True]
    assert pred[0] in (1, 2) and pred[1] == 0 and pred[2] in (1, 2)


@pytest.fixture(scope="module")
def tied_model_dir(tiny_tokenizer, tmp_path_factory):
    """Every option label gets exactly the same logit (their lm_head rows are zero)."""
    model = make_model(tiny_tokenizer, favour=" A")
    with torch.no_grad():
        for letter in "ABCDE":
            (token,) = tiny_tokenizer(" " + letter, add_special_tokens=False)["input_ids"]
            model.lm_head.weight[token] = 0.0
    return save_model_dir(tmp_path_factory.mktemp("tied") / "model", tiny_tokenizer, model)


def test_a_model_that_ties_every_letter_does_not_score_as_an_a_picker(tied_model_dir, all_a_dir, tmp_path):
    """Gold is always A: argmax-on-ties would report 100% accuracy for a model that knows nothing."""
    out = tmp_path / "run"
    assert main(["--model", str(tied_model_dir), "--dataset", str(all_a_dir), "--output-dir", str(out),
                 "--quiet", "--device", "cpu"]) == 0
    import json

    metrics = json.loads((out / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["ties"]["rows"] == metrics["n_rows"] == 18
    assert metrics["accuracy"]["value"] < 0.75
    assert metrics["letter_dist"]["A"]["pred"] < 0.75
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "18 prompts had an exact tie" in report


def test_low_letter_mass_is_called_out(tiny_model_dir, biased_model_dir, all_a_dir, tmp_path, capsys):
    """A random model puts ~1% of its probability on the labels: the scores are suspect, say so."""
    for model, low in ((tiny_model_dir, True), (biased_model_dir, False)):
        out = tmp_path / model.parent.name
        assert main(["--model", str(model), "--dataset", str(all_a_dir), "--output-dir", str(out), "--quiet",
                     "--limit", "2", "--device", "cpu"]) == 0
        console = capsys.readouterr().out
        report = (out / "report.md").read_text(encoding="utf-8")
        for text in (console, report):
            assert ("the model wanted another token" in text) == low


def _readme_block(heading: str) -> str:
    text = PYTHON_API.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_python_api_runs_as_written(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch):
    """The snippet under "Python API", with only its placeholder paths filled in."""
    code = _readme_block("## Python API")
    assert "path/to/model" in code and "path/to/mmlu/data" in code
    code = code.replace("path/to/model", str(tiny_model_dir)).replace("path/to/mmlu/data", str(mmlu_dir))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "docs/python-api.md", "exec"), namespace)
    assert 0.0 <= namespace["result"].metrics["overall"]["accuracy"]["value"] <= 1.0
    assert len(namespace["result"].predictions) > 0


def test_no_public_name_is_shadowed_by_a_submodule():
    """`from twinkle_hf import evaluate` must give the function even after every submodule loaded."""
    import importlib
    import pkgutil
    import types

    import twinkle_hf

    for info in pkgutil.iter_modules(twinkle_hf.__path__):
        if info.name != "callback":  # needs transformers' Trainer stack; checked below anyway
            importlib.import_module(f"twinkle_hf.{info.name}")
    importlib.import_module("twinkle_hf.callback")
    for name in twinkle_hf.__all__:
        value = getattr(twinkle_hf, name)
        assert not isinstance(value, types.ModuleType), f"twinkle_hf.{name} is a module"
    from twinkle_hf import EvalConfig as C
    from twinkle_hf import evaluate as ev

    assert callable(ev) and C is EvalConfig
