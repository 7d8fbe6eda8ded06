"""PriDe as published (Zheng et al., ICLR 2024; the authors' LLM-MCQ-Bias code), recomputed from a run's
files: per estimation question softmax(mean over its cyclic orders of log(p + 1e-10)), the prior their
plain mean; and the paper's table protocol."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from twinkle_hf.cli import main

EPS = 1e-10


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.fixture(scope="module")
def confident_model_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A tiny random model with sharp attention and a scaled output layer: its letter probabilities
    range from about 0.3 to 0.9 over these questions (the plain tiny model is equally unsure of all)."""
    import torch
    from helpers import make_model, save_model_dir

    model = make_model(tiny_tokenizer, seed=3)
    with torch.no_grad():
        model.lm_head.weight.mul_(10.0)
        for layer in model.model.layers:
            for proj, scale in (("q_proj", 15), ("k_proj", 15), ("v_proj", 30), ("o_proj", 30)):
                getattr(layer.self_attn, proj).weight.mul_(scale)
    return save_model_dir(tmp_path_factory.mktemp("confident") / "model", tiny_tokenizer, model)


@pytest.fixture(scope="module")
def run(tmp_path_factory, confident_model_dir) -> tuple[dict, list[dict], Path]:
    root = tmp_path_factory.mktemp("pride")
    data = root / "quiz.csv"
    data.write_text("question,A,B,C,D,answer\n" + "".join(
        f"Question number {i} about {['cats', 'dogs', 'birds', 'fish'][i % 4]}?,alpha {i},beta {i * 7},gamma,"
        f"delta {i % 3},{'ABCD'[i % 4]}\n" for i in range(40)), encoding="utf-8")
    config = root / "config.yaml"
    config.write_text("shuffle_mode: cyclic\npride_fraction: 0.25\nbootstrap: 0\n", encoding="utf-8")
    out = root / "out"
    assert main(["--config", str(config), "--model", str(confident_model_dir), "--dataset", str(data), "--output-dir",
                 str(out), "--quiet", "--device", "cpu"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return results["metrics"]["pride"], rows, out


def _orders(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    by_question = defaultdict(list)
    for row in rows:
        if row["order"] >= 0:
            by_question[(row["dataset"], row["id"])].append(row)
    return by_question


def test_the_prior_is_the_mean_of_per_question_priors_recomputed_from_the_files(run):
    pride, rows, _ = run
    assert pride["seed"] == 1234 and pride["n_prior_questions"] == 10 == len(pride["prior_questions"])
    orders = _orders(rows)
    chosen = [(q["dataset"], q["id"]) for q in pride["prior_questions"]]
    per_question = []
    for key in chosen:
        probs = np.array([r["probs"] for r in sorted(orders[key], key=lambda r: r["order"])])  # [orders, positions]
        assert probs.shape == (4, 4)
        per_question.append(_softmax(np.log(probs + EPS).mean(axis=0)))
    published = np.mean(per_question, axis=0)
    assert list(pride["prior"].values()) == pytest.approx(published.tolist(), abs=1e-6)
    # the questions differ in confidence, so pooling their log-probabilities (one softmax) would differ
    pooled = _softmax(np.log(np.concatenate([np.array([r["probs"] for r in orders[k]]) for k in chosen]) + EPS)
                      .mean(axis=0))
    assert np.abs(pooled - published).max() > 1e-4


def test_the_papers_protocol_is_reported_and_recomputed_from_the_files(run):
    pride, rows, _ = run
    prior = np.array(list(pride["prior"].values()))
    chosen = {(q["dataset"], q["id"]) for q in pride["prior_questions"]}
    original = {(r["dataset"], r["id"]): r for r in rows if r["order"] == -1}
    hits = []
    for key, orders in _orders(rows).items():
        if key in chosen:  # the order-averaged answer, by content
            content = np.zeros(4)
            for r in orders:
                content[r["perm"]] += r["probs"]
            hits.append(int(content.argmax()) == orders[0]["answer_original"])
        else:  # the original order alone, the prior divided out
            r = original[key]
            hits.append(int(np.argmax(np.log(np.array(r["probs"]) + EPS) - np.log(prior + EPS))) == r["answer"])
    paper = pride["paper_protocol"]
    assert paper["n_questions"] == 40 and paper["value"] == pytest.approx(np.mean(hits), abs=1e-12)


def test_report_shows_the_prior(run):
    pride, _, out = run
    text = (out / "report.md").read_text(encoding="utf-8")
    first = next(iter(pride["prior"]))
    assert "PriDe prior, from the cyclic orders of 10 questions (seed 1234" in text
    assert f"{first} {100 * pride['prior'][first]:.1f}%" in text
    # one PriDe accuracy, with its definition (the paper's count stays in results.json)
    (row,) = [line for line in text.splitlines() if "PriDe" in line and "accuracy" in line and line.startswith("|")]
    assert f"| {100 * pride['value']:.1f}% |" in row and "divided out" in row
    assert text.count("PriDe accuracy") == 1
