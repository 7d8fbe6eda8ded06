"""report.html, comparison.html and trend.html: self-contained, escaped, holding the run's numbers,
rendering with missing metrics, and (where a chromium is installed) drawn by a real browser."""

from __future__ import annotations

import copy
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from twinkle_hf.cli import main
from twinkle_hf.outputs.cells import pct
from twinkle_hf.outputs.comparison import compare_runs, diff_cells
from twinkle_hf.outputs.html_compare import comparison_html, trend_html
from twinkle_hf.outputs.html_report import report_html
from twinkle_hf.outputs.records import read_results
from twinkle_hf.outputs.summary import headline_rows, plain_language
from twinkle_hf.sweep import trend_row, write_trend

EVIL = "<script>alert(1)</script>"
LOADING_TAGS = {"script", "link", "img", "iframe", "object", "embed", "audio", "video", "source", "base", "image",
                "use", "frame", "track"}


class Resources(HTMLParser):
    """Every tag, and every attribute that can point at another resource, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str, str]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_style = tag == "style"
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "poster", "data", "srcset", "background") or (
                    tag == "meta" and name == "http-equiv"):
                self.links.append((tag, name, value or ""))

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False


def assert_self_contained(text: str) -> Resources:
    parsed = Resources()
    parsed.feed(text)
    parsed.close()
    loading = LOADING_TAGS & set(parsed.tags)
    assert not loading, f"tags that load or run something: {loading}"
    assert all(value.startswith("#") for _, _, value in parsed.links), parsed.links  # in-page anchors only
    assert "url(" not in parsed.style and "@import" not in parsed.style
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in text
    assert parsed.tags.count("svg") >= 1
    return parsed


def _run(model_dir: Path, data_dir: Path, out: Path, *args: str) -> Path:
    assert main(["--model", str(model_dir), "--dataset", str(data_dir), "--output-dir", str(out), "--quiet",
                 "--device", "cpu", *args]) == 0
    return out


@pytest.fixture(scope="module")
def runs(biased_model_dir, tiny_model_dir, all_a_dir, tmp_path_factory) -> dict[str, Path]:
    """Two cyclic runs on the same questions (pairable) and an unshuffled one."""
    root = tmp_path_factory.mktemp("html_runs")
    return {"biased": _run(biased_model_dir, all_a_dir, root / "biased", "--shuffle-mode", "cyclic"),
            "tiny": _run(tiny_model_dir, all_a_dir, root / "tiny", "--shuffle-mode", "cyclic"),
            "plain": _run(tiny_model_dir, all_a_dir, root / "plain", "--shuffle-mode", "none", "--limit", "2")}


def _doc(run: Path) -> dict:
    return read_results(run / "results.json")


def test_every_run_writes_a_self_contained_report_html(runs):
    for run in runs.values():
        assert_self_contained((run / "report.html").read_text(encoding="utf-8"))
    (runs["plain"] / "report.html").unlink()
    assert main(["report", str(runs["plain"])]) == 0
    assert (runs["plain"] / "report.html").is_file()


def test_report_html_holds_the_numbers_of_the_run(runs):
    doc = _doc(runs["biased"])
    text = (runs["biased"] / "report.html").read_text(encoding="utf-8")
    metrics = doc["metrics"]
    _, shown, err, _ = headline_rows(metrics)[0]  # as report.md shows it
    assert shown in (runs["biased"] / "report.md").read_text(encoding="utf-8")
    stderr, interval = err.split(" (95% ")  # the headline table's cell: stderr (95% low–high)
    assert f'id="headline">accuracy {shown} <small>± {stderr} (stderr) · 95% interval {interval[:-1]}' in text
    assert plain_language(metrics) == "The model predicts A 100% of the time while A is gold 25% of the time."
    assert plain_language(metrics) in text
    for subject in doc["datasets"]["all_a"]["subjects"]:
        assert f"\u2003{subject}</td>" in text
    for letter, share in metrics["letter_dist"].items():
        assert f'class="strong">{letter}</text>' in text
        assert f"{letter} predicted {pct(share['pred'])}%" in text and f"{letter} gold {pct(share['gold'])}%" in text
    for i, value in enumerate(metrics["accuracy"]["per_order"]):
        assert f"<title>order {i}: {pct(value)}%</title>" in text
    assert f"original order {pct(metrics['acc_original']['value'])}%" in text


def test_an_unshuffled_run_has_one_order_and_no_order_chart(runs):
    text = report_html(_doc(runs["plain"]))
    assert "One order per question (no shuffling)" in text and "Accuracy per order</title>" not in text
    assert "<td class=num>n/a</td>" in text  # all_correct needs two orders


def test_user_strings_are_escaped(runs):
    doc = _doc(runs["biased"])
    doc["model"]["name_or_path"] = '<img src="http://x/y.png">'
    doc["datasets"] = {"<b>bold</b>": doc["datasets"]["all_a"]}
    subjects = doc["datasets"]["<b>bold</b>"]["subjects"]
    subjects[EVIL] = subjects.pop("four")
    text = report_html(doc)
    assert EVIL not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>bold</b>" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text
    parsed = assert_self_contained(text.replace("http://x/y.png", "x"))  # the escaped URL is text, not a link
    assert "img" not in parsed.tags and "script" not in parsed.tags


def _without_metrics(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    empty = {"accuracy": {"value": None, "reason": "no permuted rows", "n_questions": 0}, "acc_original": None}
    doc["metrics"] = dict(empty)
    for block in doc["datasets"].values():
        block["metrics"] = dict(empty)
        block["subjects"] = {s: dict(empty) for s in block["subjects"]}
    return doc


def _generation(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["metrics"]["letter_dist"]["unparsed"] = {"pred": 0.25, "gold": 0.0}
    doc["metrics"]["unparsed_rate"] = {"value": 0.25, "rows": 2, "n_rows": 8}
    return doc


NO_ACCURACY = 'id="headline">accuracy n/a <small>(not computed)</small>'


@pytest.mark.parametrize(("make", "expected"), [
    (_without_metrics, ['id="headline">accuracy n/a <small>(no permuted rows)</small>', "Accuracy per order: n/a",
                        "<td class=num>0</td><td class=num>n/a</td>", "Letter distribution: n/a"]),
    (_generation, ['class="strong">unparsed</text>', "No letter could be extracted from 25%", "<td>unparsed</td>"]),
    (lambda d: {}, [NO_ACCURACY, "<p>n/a</p>", "dataset(s): n/a"]),
    (lambda d: {"metrics": None, "datasets": {}}, [NO_ACCURACY, "Accuracy per order: n/a"]),
    (lambda d: {**d, "timing": {}, "model": None, "config": {}, "seeds": {}}, ["orders: ?, ? per question"]),
], ids=["none-computed", "generation", "empty-doc", "no-metrics", "no-settings"])
def test_missing_metrics_render_as_na(runs, make, expected):
    text = report_html(make(_doc(runs["biased"])))
    assert_self_contained(text)
    for part in expected:
        assert part in text


def test_compare_writes_the_page_next_to_the_markdown(runs, tmp_path):
    pair = [str(runs["biased"]), str(runs["tiny"])]
    assert main(["compare", *pair, "--labels", "base,<i>tuned</i>", "--output", str(tmp_path / "cmp.md")]) == 0
    text = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert (tmp_path / "cmp.md").read_text(encoding="utf-8").startswith("| metric | base | <i>tuned</i> |")
    parsed = assert_self_contained(text)
    assert parsed.tags.count("svg") >= 4 and "<i>" not in text and "&lt;i&gt;tuned&lt;/i&gt;" in text
    c = compare_runs(pair, ["base", "<i>tuned</i>"])
    for d in c.diffs:
        assert "".join(f"<td class=num>{cell}</td>" for cell in diff_cells(d)[2:]) in text
    for subject, m in _doc(runs["tiny"])["datasets"]["all_a"]["subjects"].items():
        assert f"\u2003{subject}" in text and f"{pct(m['accuracy']['value'])} ± " in text
    assert main(["compare", *pair, "--output", str(tmp_path / "only.html")]) == 0
    assert (tmp_path / "only.html").is_file() and not (tmp_path / "only.md").exists()


def test_comparison_page_of_runs_without_subjects_says_na(runs):
    c = compare_runs([runs["biased"], runs["tiny"]])
    text = comparison_html(c, [{"metrics": {}}, {}])
    assert "hold no per-subject metrics" in text and assert_self_contained(text)


def test_sweep_trend_page(runs, tmp_path):
    sweep = tmp_path / "sweep"
    for step, name in ((100, "biased"), (200, "tiny")):
        shutil.copytree(runs[name], sweep / f"checkpoint-{step}")
    rows = [trend_row(str(sweep / f"checkpoint-{s}"), _doc(sweep / f"checkpoint-{s}")["metrics"]) for s in (100, 200)]
    assert "trend.html" in write_trend(rows, sweep)
    text = (sweep / "trend.html").read_text(encoding="utf-8")
    assert_self_contained(text)
    assert "Checkpoint trend</title>" in text and "checkpoint-200: accuracy" in text
    assert f"{pct(rows[1]['accuracy'])} ± {pct(rows[1]['accuracy_stderr'])}" in text
    alone = trend_html(rows)  # no run folders: the trend only
    assert "Paired differences" not in alone and "checkpoint-100" in alone


@pytest.fixture(scope="session")
def browser() -> str:
    """A chromium to render pages with (session-scoped so it is set up before the runs: its absence skips at once)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return str(shutil.which(name))
    pytest.skip("no chromium: install Debian's chromium to run this check")


def test_a_headless_browser_draws_the_pages(browser, runs, tmp_path):
    c = compare_runs([runs["biased"], runs["tiny"]])
    (tmp_path / "cmp.html").write_text(comparison_html(c, [_doc(runs["biased"]), _doc(runs["tiny"])]))
    headline = lambda run: f"accuracy {headline_rows(_doc(run)['metrics'])[0][1]}"
    pages = {runs["biased"] / "report.html": headline(runs["biased"]), runs["plain"] / "report.html":
             headline(runs["plain"]), tmp_path / "cmp.html": "Paired differences"}
    for path, headline in pages.items():
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert headline in done.stdout and "<svg" in done.stdout, done.stdout[:2000]
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1200,1600", (runs["biased"] / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000
