"""The docs are executable: every shell and Python block of README.md, CONTRIBUTING.md and docs/*.md
is either run here (its runner in RUNNERS, named by a ``<!-- docs-test: run NAME -->`` comment right
before the block) or marked ``<!-- docs-test: illustrative (REASON) -->``. CONTRIBUTING.md, "Every
command in the docs runs", says what a runner may change to keep the suite fast; the output a page
shows next to a command is checked where the runner runs the command as written."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from docs_runs import RUNNERS, RunContext, tiny_chat_model

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["index", "getting-started", "datasets", "orders", "methods", "results", "twinkle-eval", "processes",
         "python-api", "performance", "reliability", "outputs", "design"]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs" / f"{p}.md" for p in PAGES)]
COMMANDS = {"bash", "sh", "shell", "console", "python", "py"}
MARK = re.compile(r"^<!-- docs-test: (?:run (?P<run>[\w-]+)|illustrative \((?P<why>.+)\)) -->$")
README_MAX_LINES = 250


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, counted from 1
    lang: str
    text: str
    mark: str  # the comment right before the fence, or ""

    @property
    def run(self) -> str | None:
        match = MARK.match(self.mark)
        return match.group("run") if match else None


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a page (``` fences at the start of a line), with the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start, lang = i, lines[i][3:].strip()
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                i += 1
            before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            blocks.append(Block(str(path.relative_to(ROOT)), start + 1, lang,
                                "\n".join(lines[start + 1:i]), before if before.startswith("<!--") else ""))
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [b for page in DOCS for b in read_blocks(page)]


def test_every_page_of_the_guide_exists_and_is_in_the_site():
    for page in DOCS:
        assert page.is_file(), f"{page.relative_to(ROOT)} is missing"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"{page}.md" in nav, f"docs/{page}.md is not in mkdocs.yml's nav"


def test_every_command_block_is_run_or_marked_illustrative():
    problems = []
    for b in all_blocks():
        if b.lang not in COMMANDS:
            continue
        match = MARK.match(b.mark)
        if not match:
            problems.append(f"{b.page}:{b.line}: a {b.lang} block without <!-- docs-test: run NAME --> or "
                            f"<!-- docs-test: illustrative (REASON) --> on the line before it")
        elif match.group("run") and match.group("run") not in RUNNERS:
            problems.append(f"{b.page}:{b.line}: no runner {match.group('run')!r} in tests/docs_runs.py RUNNERS")
    assert not problems, "\n".join(problems)


def test_every_runner_has_its_block():
    names = [b.run for b in all_blocks() if b.run]
    assert sorted(set(names)) == sorted(names), "a runner name is used twice"
    assert set(RUNNERS) == set(names), f"runners without a block: {sorted(set(RUNNERS) - set(names))}"


def block_named(name: str) -> Block:
    return next(b for b in all_blocks() if b.run == name)


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> Path:
    return tiny_chat_model(tmp_path_factory.mktemp("docs_model"))


FAST = [name for name, runner in RUNNERS.items() if not getattr(runner, "slow", False)]
SLOW = [name for name, runner in RUNNERS.items() if getattr(runner, "slow", False)]


def _run(name: str, model: Path, mmlu_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    block = block_named(name)
    monkeypatch.chdir(tmp_path)
    runner: Callable[[Block, RunContext], None] = RUNNERS[name]
    runner(block, RunContext(model=model, mmlu_dir=mmlu_dir, tmp=tmp_path, capsys=capsys, monkeypatch=monkeypatch))


@pytest.mark.parametrize("name", FAST)
def test_a_docs_block_runs(name, chat_model, mmlu_dir, tmp_path, monkeypatch, capsys):
    _run(name, chat_model, mmlu_dir, tmp_path, monkeypatch, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_a_docs_block_runs_on_the_real_model(name, chat_model, mmlu_dir, tmp_path, monkeypatch, capsys):
    _run(name, chat_model, mmlu_dir, tmp_path, monkeypatch, capsys)


def test_the_readme_is_short_and_maps_the_docs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    for page in PAGES:
        assert f"docs/{page}.md" in text, f"the README's map of the docs lacks docs/{page}.md"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_point_at_files_that_exist():
    for page in DOCS:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"


def test_user_pages_hold_no_machine_paths_or_issue_numbers():
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        assert "/work/" not in text and "/home/" not in text, page
        if page.name not in ("design.md", "CONTRIBUTING.md"):
            assert not re.search(r"\b[Ii]ssue \d+", text), f"{page.relative_to(ROOT)} names an issue number"


def test_the_site_builds_strictly(tmp_path):
    if shutil.which("mkdocs") is None and subprocess.run([sys.executable, "-c", "import mkdocs"]).returncode:
        pytest.skip('mkdocs is not installed (pip install -e ".[docs]")')
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_commands_split_as_a_shell_would():
    """The runners' reading of a block: continuation lines joined, comments dropped."""
    from docs_runs import commands

    text = "twinkle-hf --model m \\\n    --limit 2   # two\n\n# a comment line\ntwinkle-hf report 'a b'"
    assert commands(text) == [["twinkle-hf", "--model", "m", "--limit", "2"], ["twinkle-hf", "report", "a b"]]
    assert shlex.split("a # b", comments=True) == ["a"]


def test_the_readme_picture_is_drawn_from_a_run(chat_model, tmp_path, monkeypatch, capsys):
    """scripts/report_picture.py (which drew docs/assets/report.svg from the README's first run)."""
    import xml.dom.minidom

    from helpers import load_script

    from twinkle_hf.cli import main

    assert main(["--model", str(chat_model), "--shuffle-mode", "cyclic", "--limit", "1", "--device", "cpu",
                 "--quiet", "--output-dir", str(tmp_path / "run")]) == 0
    svg = load_script("report_picture").picture(tmp_path / "run")
    xml.dom.minidom.parseString(svg)  # well-formed
    assert "Accuracy with 95% interval" in svg and "Letters: predicted" in svg and "The model predicts" in svg
    xml.dom.minidom.parse(str(ROOT / "docs" / "assets" / "report.svg"))


def test_the_readme_installs_what_its_first_run_needs():
    """The first run is offline (a local .gguf, the embedded sample) and its install block has the
    extra a .gguf needs."""
    blocks = read_blocks(ROOT / "README.md")
    install = next(b for b in blocks if b.lang == "bash" and "pip install -e" in b.text)
    first = next(b for b in blocks if b.run == "first-run")
    assert ".gguf" in first.text and "--dataset" not in first.text and "/" in first.text.split("--model")[1]
    extras = re.search(r'pip install -e "\.\[([\w,]+)\]"', install.text).group(1).split(",")
    assert "gguf" in extras
    assert re.match(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", first.text.split()[2]) is None  # not a hub id
