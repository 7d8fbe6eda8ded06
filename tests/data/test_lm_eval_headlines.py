"""Each benchmark's headline is the number lm-eval's own evaluator reports for its task, on the same
documents (small Hub-shaped copies, the tiny random model of test_registry_fidelity.py):

- Winogrande (partial scoring: every option scores the same rest of the sentence): ``acc`` alone,
  per document and on average; no acc_norm/acc_bytes; acc is the CF side of the MCF - CF gap.
- TruthfulQA MC2: ``metrics.accuracy`` is lm-eval's truthfulqa_mc2 ``acc``, the normalised probability
  mass on the true answers per question, averaged, with lm-eval's stderr; the pick of the first true
  answer stays as ``first_true_acc``.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest
import test_registry_fidelity as registry
from test_benchmark_fidelity import lm_eval_task
from test_registry_fidelity import CASES, write_case

from twinkle_hf.data.catalog import load_named
from twinkle_hf.settings.config import EvalConfig

pytest.importorskip("lm_eval", reason="lm-eval is not installed: pip install lm-eval==0.4.13 (.ci/run installs it)")
logging.getLogger("lm_eval").setLevel(logging.ERROR)
tiny_lm = registry.tiny_lm  # the same tiny model and lm-eval HFLM (a module fixture)


def lm_eval_run(lm, task, name: str) -> tuple[dict[str, float], list[float]]:
    """lm-eval's own evaluator on ``task``: the metrics it reports for ``name`` ({"acc,none": ...}) and
    each document's acc, in document order. One bootstrap draw: ``mean``'s closed-form stderr."""
    from lm_eval.evaluator import evaluate as lm_evaluate
    from lm_eval.tasks import get_task_dict

    theirs = lm_evaluate(lm, get_task_dict([task]), bootstrap_iters=1, verbosity="ERROR")
    per_doc = [s["acc"] for s in sorted(theirs["samples"][name], key=lambda s: s["doc_id"])]
    reported = {k: v for k, v in theirs["results"][name].items() if "," in k}  # metric,filter keys
    return reported, per_doc


def test_winogrande_reports_lm_evals_acc_alone_on_a_tiny_model(tmp_path, tiny_lm):
    from twinkle_hf.evaluation import evaluate
    from twinkle_hf.outputs.subjects import subject_table
    from twinkle_hf.outputs.summary import headline_rows

    tokenizer, model, lm = tiny_lm
    files = write_case(CASES["winogrande"], tmp_path / "wino")
    reported, per_doc = lm_eval_run(lm, lm_eval_task("winogrande", "parquet", files["winogrande_xl"]), "winogrande")
    assert set(reported) == {"acc,none", "acc_stderr,none"}  # lm-eval's winogrande: acc alone
    data = load_named(f"winogrande={tmp_path / 'wino'}")
    result = evaluate(model, tokenizer, [data], EvalConfig(method="logit+cloze", bootstrap=0), progress=False)
    cloze = result.predictions.select(result.predictions.cloze_rows)
    assert (cloze.pred == cloze.answer).astype(float).tolist() == per_doc  # per document
    metrics = result.metrics["datasets"]["winogrande"]["metrics"]
    acc = metrics["cloze"]["accuracy"]
    assert acc["value"] == pytest.approx(reported["acc,none"]) and len(per_doc) == acc["n_questions"] == 8
    assert acc["stderr"] == pytest.approx(reported["acc_stderr,none"])
    assert not {"acc_norm", "acc_bytes"} & set(metrics["cloze"]) and metrics["cloze"]["cf_metric"] == "acc"
    both = metrics["formulations"]
    assert both["cf"]["metric"] == "acc" and both["cf"]["value"] == pytest.approx(acc["value"])  # CF = acc
    assert both["max"]["value"] == max(both["mcf"]["value"], acc["value"])
    labels = [row[0] for row in headline_rows(metrics)]
    assert "cloze acc" in labels and not any("acc_norm" in label for label in labels)
    only = evaluate(model, tokenizer, [data], EvalConfig(method="cloze", bootstrap=0), progress=False)
    assert only.metrics["overall"]["accuracy"]["value"] == pytest.approx(reported["acc,none"])
    assert not {"acc_norm", "acc_bytes"} & set(only.metrics["overall"])
    table = subject_table({"metrics": only.metrics["overall"], "datasets": only.metrics["datasets"]})
    assert table[0] == "| dataset / subject | questions | acc % ± stderr (cloze) | 95% interval |"  # acc alone


def test_truthfulqa_mc2_headline_is_lm_evals_own_score_on_a_tiny_model(tmp_path, tiny_lm):
    """lm-eval's own evaluator runs its ``truthfulqa_mc2`` task (its ``process_results_mc2``) with HFLM
    on the tiny model. twinkle_hf's cloze mass equals it per question and on average, and is the
    headline ``metrics.accuracy`` of a cloze run (results.json, the console's first row, report.md,
    after ``twinkle-hf report`` too), with lm-eval's stderr; a run of both formulations heads with the
    letters' mass and sets the two masses against each other; the first-true pick is ``first_true_acc``."""
    from twinkle_hf.evaluation import evaluate
    from twinkle_hf.metrics.true_mass import loglik_mass
    from twinkle_hf.outputs.report import regenerate, write_outputs
    from twinkle_hf.outputs.summary import console_summary

    tokenizer, model, lm = tiny_lm
    files = write_case(CASES["truthfulqa_mc2"], tmp_path / "tqa")
    task = lm_eval_task("truthfulqa_mc2", "parquet", files["multiple_choice"])
    reported, per_doc = lm_eval_run(lm, task, "truthfulqa_mc2")
    score = reported["acc,none"]
    data = load_named(f"truthfulqa_mc2={tmp_path / 'tqa'}")
    assert [list(data.true_options[i]) for i in data.rows["id"]] == \
        [[j for j, x in enumerate(d["mc2_targets"]["labels"]) if x] for d in task.eval_docs]
    result = evaluate(model, tokenizer, [data], EvalConfig(method="logit+cloze", bootstrap=0), progress=False)
    cloze = result.predictions.select(result.predictions.cloze_rows)
    ours = [loglik_mass(ll, data.true_options[i]) for i, ll in zip(cloze.id, cloze.cloze.loglik)]
    assert ours == pytest.approx(per_doc, abs=1e-5)  # the same sums, batched differently in float32
    block = result.true_mass["truthfulqa_mc2"]
    assert block["cloze"]["value"] == pytest.approx(score, abs=1e-5)
    assert block["cloze"]["n_questions"] == len(per_doc) == 5
    letters = result.predictions.select(~result.predictions.cloze_rows)  # unshuffled: one order, perm identity
    probs = letters.letters.probs
    by_hand = np.mean([p[list(data.true_options[i])].sum() / p.sum() for i, p in zip(letters.id, probs)])
    assert block["letters"]["value"] == pytest.approx(by_hand)
    metrics = result.metrics["datasets"]["truthfulqa_mc2"]["metrics"]
    assert metrics["accuracy"]["value"] == pytest.approx(by_hand)  # letters head: the letters' mass
    assert metrics["cloze"]["accuracy"]["value"] == pytest.approx(score, abs=1e-5)
    assert metrics["first_true_acc"]["value"] == np.mean(letters.pred == letters.answer)
    assert metrics["cloze"]["first_true_acc"]["value"] == np.mean(cloze.pred == cloze.answer)
    assert metrics["formulations"]["cf"]["value"] == pytest.approx(score, abs=1e-5)
    assert metrics["formulations"]["mcf"]["value"] == pytest.approx(by_hand)

    only = evaluate(model, tokenizer, [data], EvalConfig(method="cloze", bootstrap=0), progress=False)
    out = write_outputs(only, tmp_path / "run")
    for doc in (json.loads((out / "results.json").read_text(encoding="utf-8")), regenerate(out)):
        acc = doc["metrics"]["accuracy"]
        assert acc["value"] == pytest.approx(score, abs=1e-5) and acc["n_questions"] == 5
        assert acc["stderr"] == pytest.approx(reported["acc_stderr,none"], abs=1e-5)
        assert acc["stderr"] == pytest.approx(np.std(per_doc, ddof=1) / math.sqrt(5), abs=1e-5)
        assert acc["ci95"][0] <= acc["value"] <= acc["ci95"][1] and acc["definition"].startswith("TruthfulQA MC2")
        assert doc["datasets"]["truthfulqa_mc2"]["metrics"]["accuracy"]["value"] == acc["value"]
        assert doc["metrics"]["first_true_acc"]["value"] == np.mean(only.predictions.correct)
        assert not {"acc_norm", "acc_bytes"} & set(doc["metrics"])  # lm-eval's truthfulqa_mc2: acc alone
        # the console table's first row (one dataset: its subjects, then overall, no dataset row repeating it)
        first_row = next(line for line in console_summary(doc).splitlines() if line.startswith("| ") and
                         not line.startswith(("| dataset", "|---")))
        assert f"{100 * score:.1f} ±" in first_row
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| acc (cloze): MC2 | {100 * score:.1f}% |" in report and "| first true as gold |" in report
    assert "## Probability mass on the true answers (TruthfulQA MC2)" in report
    assert "acc_norm" not in report.split("## Per subject")[1]  # the subject table: acc alone
