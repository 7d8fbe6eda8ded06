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


# --- wording (issue 23): the letter named, the unparsed share's rows, singulars, the "wrote" line ------------


def test_plain_language_names_the_letter_predicted_most_when_none_is_over_predicted():
    """Generation mode, 3 questions: it read "The model predicts A 0% of the time while A is gold 0%" for a
    model that predicted D (every letter's predicted share was at most its gold share)."""
    metrics = {"letter_dist": {"A": {"pred": 0.0, "gold": 0.0}, "B": {"pred": 0.0, "gold": 1 / 3},
                               "C": {"pred": 0.0, "gold": 1 / 3}, "D": {"pred": 1 / 3, "gold": 1 / 3},
                               "unparsed": {"pred": 2 / 3, "gold": 0.0}},
               "unparsed_rate": {"value": 2 / 3, "rows": 2, "n_rows": 3}}
    assert plain_language(metrics).startswith("The model predicts D 33% of the time while D is gold 33% of the time. "
                                              "No letter could be extracted from 67% of its answers")


def test_plain_language_also_names_a_more_over_predicted_letter():
    metrics = {"letter_dist": {"A": {"pred": 0.3, "gold": 0.1}, "B": {"pred": 0.35, "gold": 0.4},
                               "C": {"pred": 0.35, "gold": 0.5}}}
    assert plain_language(metrics) == ("The model predicts B 35% of the time while B is gold 40% of the time. "
                                       "It over-predicts A most: 30% of the time while A is gold 10% of the time.")


def test_pride_line_counts_one_question_in_the_singular():
    from twinkle_hf.outputs.summary import pride_lines

    block = {"value": 0.5, "prior": {"A": 0.5, "B": 0.5}, "n_prior_questions": 1, "seed": 7, "n_questions": 1,
             "paper_protocol": {"value": 0.25, "n_questions": 1}}
    (line,) = pride_lines(block)
    assert "from the cyclic orders of 1 question (seed 7" in line and "of the other 1 question (" in line
    assert "25.0%" not in line and "%" not in line.split(":")[-1].split(";")[-1]  # no second PriDe accuracy


@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    """Generation-mode models that write the same answer after any prompt: a letter, or none."""
    from helpers import make_tokenizer, make_writer_model, save_model_dir

    out = {}
    for name, pieces in (("says_d", ["The answer is D."]), ("rambles", ["Hmm, hard to say."])):
        tok = make_tokenizer()
        out[name] = save_model_dir(tmp_path_factory.mktemp(name) / "model", tok, make_writer_model(tok, pieces))
    return out


def _questions(path, golds: str):
    path.write_text("question,A,B,C,D,answer\n" + "".join(
        f"Question {i}?,first {i},second {i},third {i},fourth {i},{g}\n" for i, g in enumerate(golds)),
        encoding="utf-8")
    return path


def _generate(model, data, out, *args) -> str:
    assert main(["--model", str(model), "--dataset", str(data), "--method", "pattern", "--max-new-tokens", "8",
                 "--output-dir", str(out), "--quiet", "--device", "cpu", *args]) == 0
    return (out / "report.md").read_text(encoding="utf-8")


def test_generation_report_names_the_predicted_letter_and_lists_every_file(writers, tmp_path, capsys):
    report = _generate(writers["says_d"], _questions(tmp_path / "one.csv", "DDD"), tmp_path / "run")
    assert "**The model predicts D 100% of the time while D is gold 100% of the time.**" in report
    assert "predicts A" not in report
    assert "- 3 questions, 3 prompts in" in report
    wrote = capsys.readouterr().out.strip().splitlines()[-1]
    assert wrote.startswith("wrote ") and "run.log" in wrote and (tmp_path / "run" / "run.log").is_file()
    for name in plots.FILES:  # drawn with matplotlib installed, and then named
        assert (name in wrote) == (tmp_path / "run" / name).is_file() == plots.available()


def test_one_question_and_one_time_in_the_singular(writers, tmp_path):
    report = _generate(writers["says_d"], _questions(tmp_path / "one.csv", "B"), tmp_path / "run")
    assert "- 1 question, 1 prompt in" in report
    assert "B (gold 1 time)" in report and "gold 1 times" not in report  # CKLD's reason
    assert "(1 of 1 question has fewer)" in report  # all_correct's


def test_unparsed_share_says_which_answers_it_counts(writers, tmp_path):
    """A shuffled run scores the original order too: the headline's unparsed share counts those answers,
    the letter table (as every shuffled metric) does not, and both say so."""
    report = _generate(writers["rambles"], _questions(tmp_path / "one.csv", "B"), tmp_path / "run",
                       "--shuffle-mode", "cyclic")
    row = next(line for line in report.splitlines() if line.startswith("| unparsed | 100.0% |"))
    assert "5 of all 5 answers, the original order's 1 too" in row
    assert "| unparsed | 100.0 (4) | 0.0 | n/a |" in report
    assert "Letter shares count the 4 answers under shuffled orders; the headline's unparsed share counts 5 of all 5" \
           " answers, the original order's 1 too." in report
    assert "Letter shares count the 4 answers" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")


def test_the_headline_shows_accuracy_over_subjects_beside_over_questions():
    """A benchmark's two aggregates (issue 25): micro in the accuracy row, macro on its own row, only
    when there are two subjects or more (with one it is the same number)."""
    from twinkle_hf.outputs.summary import headline_rows

    metrics = {"accuracy": {"value": 0.5, "stderr": 0.02, "n_permutations": 4},
               "accuracy_macro": {"value": 0.4, "stderr": 0.03, "n_subjects": 3}}
    rows = {label: (value, err) for label, value, err, _ in headline_rows(metrics)}
    assert rows["accuracy (shuffled)"] == ("50.0%", "2.0") and rows["accuracy over subjects"] == ("40.0%", "3.0")
    metrics["accuracy_macro"]["n_subjects"] = 1
    assert "accuracy over subjects" not in {label for label, *_ in headline_rows(metrics)}


@pytest.mark.skipif(not plots.available(), reason="needs matplotlib")
def test_a_run_without_letters_draws_no_letter_plot(tmp_path):
    cloze = {"accuracy": {"value": 0.5, "per_order": [0.5]}, "letter_dist": {}}  # as a cloze-only run's block
    assert plots.draw(cloze, tmp_path) == ["accuracy_per_order.png"]
    assert not (tmp_path / "letter_dist.png").exists()
    letters = {**cloze, "letter_dist": {"A": {"pred": 0.75, "gold": 0.25}, "B": {"pred": 0.25, "gold": 0.75}}}
    assert plots.draw(letters, tmp_path) == list(plots.FILES)
    assert (tmp_path / "letter_dist.png").stat().st_size > 1000


def test_the_legend_of_the_order_plot_covers_no_line(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "close", shown.append)  # keep the figure to measure it
    metrics = {"accuracy": {"value": 0.5, "per_order": [0.4, 0.55, 0.5, 0.55]}, "acc_original": {"value": 0.97}}
    plots.permutation_plot(metrics, tmp_path / "orders.png")
    (fig,) = shown
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(ax.get_window_extent(renderer))  # outside the axes: no line or bar under it
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mean", "original order"]
