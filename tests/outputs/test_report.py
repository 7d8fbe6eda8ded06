"""Reports: written on a run, rebuilt from files alone by `twinkle-hf report`."""

from __future__ import annotations

import csv
import json

import pytest

from twinkle_hf.cli import main
from twinkle_hf.outputs import plots
from twinkle_hf.outputs.records import read_predictions
from twinkle_hf.outputs.summary import plain_language


@pytest.fixture(scope="module")
def biased_run(biased_model_dir, all_a_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "cyclic"
    assert main(["--model", str(biased_model_dir), "--dataset", str(all_a_dir), "--shuffle-mode", "cyclic",
                 "--output-dir", str(out), "--quiet"]) == 0
    return out


def test_run_writes_every_report(biased_run):
    report = (biased_run / "report.md").read_text(encoding="utf-8")
    assert "## Headline" in report and "## Letters" in report and "## Per subject" in report
    assert "The model predicts A 100% of the time" in report
    assert "The model predicts A 100% of the time" in (biased_run / "report.html").read_text(encoding="utf-8")
    timing = json.loads((biased_run / "results.json").read_text(encoding="utf-8"))["timing"]
    assert timing["computed_tokens"] < timing["tokens"] and timing["shared_prefixes"] >= timing["prefix_batches"] > 0
    assert timing["peak_rss_bytes"] > 0
    assert f"- compute: {timing['computed_tokens']:,} of {timing['tokens']:,} prompt tokens run" in report
    assert "- peak memory: process resident" in report
    rows = list(csv.DictReader((biased_run / "subjects.csv").read_text(encoding="utf-8").splitlines()))
    assert {r["subject"] for r in rows} == {"*", "three", "four", "five"}
    four = next(r for r in rows if r["subject"] == "four")
    assert float(four["accuracy"]) == pytest.approx(0.25) and float(four["all_correct"]) == 0.0
    if plots.available():
        assert (biased_run / "letter_dist.png").stat().st_size > 1000
        assert "![letter_dist.png]" in report
    else:
        assert plots.MISSING in report


def test_bias_metrics_of_the_planted_model(biased_run):
    results = json.loads((biased_run / "results.json").read_text(encoding="utf-8"))
    four = results["datasets"]["all_a"]["subjects"]["four"]
    assert four["letter_dist"]["A"]["pred"] == 1.0
    assert four["all_correct"]["value"] == 0.0 and four["any_correct"]["value"] == 1.0
    assert four["rstd"]["value"] == pytest.approx(100 * 0.4330127, abs=1e-4)  # std of recalls [1,0,0,0]
    assert four["fluctuation"]["value"] == 1.0  # every order picks a different option


def test_report_command_rebuilds_the_same_metrics_from_files(biased_run, tmp_path):
    before = json.loads((biased_run / "results.json").read_text(encoding="utf-8"))
    (biased_run / "report.md").unlink()
    assert main(["report", str(biased_run)]) == 0
    after = json.loads((biased_run / "results.json").read_text(encoding="utf-8"))
    assert after["metrics"] == before["metrics"] and after["datasets"] == before["datasets"]
    assert (biased_run / "report.md").is_file()
    assert main(["report", str(tmp_path / "nothing")]) == 2
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text("{not json", encoding="utf-8")
    assert main(["report", str(broken)]) == 2


def _as_format_1(run, to):
    """A copy of ``run`` as format 1 wrote it: "seed" alone in predictions.jsonl; "mean"/"per_seed"
    alone in accuracy blocks, no acc_original block where the original order was not scored, and
    accuracy_macro a bare number."""
    import shutil

    shutil.copytree(run, to)
    lines = [json.loads(line) for line in (to / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    (to / "predictions.jsonl").write_text("".join(
        json.dumps({k: v for k, v in r.items() if k != "order"}) + "\n" for r in lines), encoding="utf-8")
    doc = json.loads((to / "results.json").read_text(encoding="utf-8"))

    def old(m):
        for key in ("accuracy", "acc_original"):
            block = m[key]
            m[key] = None if block["value"] is None else {k: v for k, v in block.items()
                                                          if k not in ("value", "per_order")}
        m["accuracy_macro"] = m["accuracy_macro"]["value"]

    old(doc["metrics"])
    for entry in doc["datasets"].values():
        old(entry["metrics"])
        for subject in entry["subjects"].values():
            subject["accuracy"] = {k: v for k, v in subject["accuracy"].items() if k not in ("value", "per_order")}
    doc["format_version"] = 1
    (to / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return to


def test_runs_written_by_format_1_are_still_read(biased_run, tmp_path):
    from twinkle_hf.outputs.comparison import compare_runs
    from twinkle_hf.outputs.records import read_results

    old = _as_format_1(biased_run, tmp_path / "old")
    now = json.loads((biased_run / "results.json").read_text(encoding="utf-8"))
    upgraded = read_results(old / "results.json")
    assert upgraded["metrics"]["accuracy"]["value"] == now["metrics"]["accuracy"]["value"]
    assert upgraded["metrics"]["accuracy_macro"] == {"value": now["metrics"]["accuracy_macro"]["value"]}
    c = compare_runs([old, biased_run])
    assert c.diffs and all(d.diff == 0 for d in c.diffs)
    assert c.runs[0].metrics["accuracy"]["value"] == c.runs[1].metrics["accuracy"]["value"]
    assert main(["report", str(old)]) == 0  # recomputed from the old files, written in today's format
    again = json.loads((old / "results.json").read_text(encoding="utf-8"))
    assert again["format_version"] == now["format_version"] and again["metrics"] == now["metrics"]


def test_read_predictions_round_trip(biased_run):
    preds = read_predictions(biased_run / "predictions.jsonl")
    assert len(preds) == 6 * (3 + 4 + 5) + 18  # rotations + the original order
    assert (preds.pred == 0).all()


def test_plain_language_names_the_most_over_predicted_letter():
    metrics = {"letter_dist": {"A": {"pred": 0.3, "gold": 0.25}, "B": {"pred": 0.6, "gold": 0.25},
                               "C": {"pred": 0.1, "gold": 0.5}}}
    assert plain_language(metrics) == "The model predicts B 60% of the time while B is gold 25% of the time."


BLOCK_HEAVY = """
import sys
HEAVY = {"torch", "transformers", "accelerate", "datasets", "pandas", "pyarrow"}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError("not installed in this light environment: " + name)
sys.meta_path.insert(0, Blocker())
from twinkle_hf.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_report_and_compare_need_no_model_stack(biased_run, tmp_path):
    """Rebuilding reports from files works where only the light dependencies are installed."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "run"
    shutil.copytree(biased_run, copy)
    before = json.loads((copy / "results.json").read_text(encoding="utf-8"))["metrics"]
    for args in (["report", str(copy)], ["compare", str(biased_run), str(copy)]):
        done = subprocess.run([sys.executable, "-c", BLOCK_HEAVY, *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads((copy / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert after == before
