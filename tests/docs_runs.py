"""The runners of tests/test_docs.py: one per ``<!-- docs-test: run NAME -->`` block of the docs.

A runner runs every command of its block: ``twinkle-hf ...`` and ``python scripts/eval.py ...``
in-process through ``twinkle_hf.cli.main``, Python blocks with ``exec``. To keep the suite fast it
may swap the SmolLM2 file and placeholder models for a tiny random model (``tiny_chat_model``),
``../shared`` for the real assets folder (skipping where it is absent), a hub dataset for the
embedded sample, and add ``--limit``, ``--device cpu``, ``--quiet``, ``--output-dir``. A runner
marked ``slow`` runs the real model as the page says and checks the output the page shows.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import SHARED, SMOLLM_GGUF, make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.data.load import DEFAULT_DATASET

ROOT = Path(__file__).resolve().parents[1]
GGUF = "../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
PLACEHOLDERS = {"path/to/model", "path/to/instruct-model", "<dir>"}
CHAT = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")
SUBCOMMANDS = ("report", "compare", "benchmarks")


def tiny_chat_model(folder: Path) -> Path:
    """A tiny model with a chat template that writes "The answer is \\boxed{C}." after any prompt (one
    added token, so the letters still tokenize as usual; their scores all tie)."""
    tok = make_tokenizer()
    model = make_writer_model(tok, ["The answer is \\boxed{C}."])
    tok.chat_template = CHAT
    return save_model_dir(folder / "model", tok, model)


@dataclass
class RunContext:
    model: Path  # the tiny model that stands in for the page's model
    mmlu_dir: Path  # a small folder in MMLU's own layout
    tmp: Path  # the working folder the block runs in
    capsys: Any
    monkeypatch: Any


def commands(text: str) -> list[list[str]]:
    """A shell block's commands: continuation lines joined, comments dropped, split as a shell would."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [args for line in joined.splitlines() if (args := shlex.split(line, comments=True))]


def shared(path: str) -> str:
    """``../shared/...`` as the real assets folder; skips, naming it, where it is absent."""
    real = SHARED / path.removeprefix("../shared/")
    if not real.exists():
        pytest.skip(f"real assets not found: {real} (set TWINKLE_HF_SHARED; CONTRIBUTING.md, 'The real assets')")
    return str(real)


def cli_args(argv: list[str], ctx: RunContext, real: bool = False, limit: str | None = "2") -> list[str]:
    """The arguments of ``twinkle-hf ...`` / ``python scripts/eval.py ...`` for ``main``, swapped for a test."""
    if argv[:2] == ["python", "scripts/eval.py"]:
        argv = argv[2:]
    else:
        assert argv[0] == "twinkle-hf", f"not a twinkle-hf command: {shlex.join(argv)}"
        argv = argv[1:]
    out = []
    for arg in argv:
        if arg == GGUF:
            arg = shared(arg) if real else str(ctx.model)
        elif arg in PLACEHOLDERS:
            arg = str(ctx.model)
        elif "../shared/" in arg:
            name, sep, path = arg.rpartition("=")
            arg = f"{name}{sep}{shared(path)}"
        elif arg.startswith("configs/"):
            arg = str(ROOT / arg)
        out.append(arg)
    if out and out[0] in SUBCOMMANDS:
        return out
    extra = [] if real or "--device" in out else ["--device", "cpu"]
    extra += ["--limit", limit] if limit and "--limit" not in out and not real else []
    return [*out, *extra, "--quiet"]


def run_cli(ctx: RunContext, args: list[str]) -> str:
    ctx.capsys.readouterr()
    code = main(args)
    done = ctx.capsys.readouterr()
    assert code == 0, f"twinkle-hf {shlex.join(args)} exited {code}: {done.err[-2000:]}"
    return done.out


def run_block(block: Any, ctx: RunContext, **swaps: Any) -> list[str]:
    """Every command of ``block``, each one's console output."""
    return [run_cli(ctx, cli_args(argv, ctx, **swaps)) for argv in commands(block.text)]


def exec_block(block: Any, replace: dict[str, str]) -> dict[str, Any]:
    """A Python block, run with each placeholder in ``replace`` (each must be in it) filled in."""
    code = block.text
    for old, new in replace.items():
        assert old in code, f"{block.page}:{block.line}: the block no longer holds {old!r}"
        code = code.replace(old, new)
    namespace: dict[str, Any] = {}
    exec(compile(code, f"{block.page}:{block.line}", "exec"), namespace)
    return namespace


def results(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def the_run(ctx: RunContext) -> Path:
    """The one run folder a command wrote under results/ (the default --output-dir)."""
    found = [p.parent for p in (ctx.tmp / "results").rglob("results.json")]
    assert len(found) == 1, found
    return found[0]


def _numbers(line: str) -> tuple[str, list[float]]:
    return re.sub(r"\d+(\.\d+)?", "#", line), [float(x) for x in re.findall(r"\d+(?:\.\d+)?", line)]


def shown_output(page: str, after_line: int) -> list[str]:
    """The lines of the first plain block after the block opened on line ``after_line`` of ``page``:
    what the page shows its command printing."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()[after_line:]
    closed = next(i for i, line in enumerate(lines) if line.startswith("```"))  # the command block's end
    start = next(i for i in range(closed + 1, len(lines)) if lines[i].strip() in ("```", "```text")) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    return [line for line in lines[start:end] if line.strip()]


def assert_shows(printed: str, shown: list[str], tolerance: float = 1.0) -> None:
    """Every line the page shows is printed, word for word, each number within ``tolerance``
    (a float32 CPU run can differ in the last digit from one machine to another)."""
    got = [_numbers(line) for line in printed.splitlines()]
    for line in shown:
        shape, values = _numbers(line)
        assert any(s == shape and all(abs(a - b) <= tolerance for a, b in zip(v, values)) for s, v in got), \
            f"the page shows a line the run did not print:\n{line}\n--- printed:\n{printed[-3000:]}"


def slow(fn: Callable[..., None]) -> Callable[..., None]:
    fn.slow = True  # type: ignore[attr-defined]
    return fn


# --- the runners ------------------------------------------------------------------------------------


@slow
def first_run(block: Any, ctx: RunContext) -> None:
    """README: the real SmolLM2 file on the embedded sample, exactly as written; the output shown."""
    if not SMOLLM_GGUF.is_file():
        pytest.skip(f"real model not found: {SMOLLM_GGUF}")
    pytest.importorskip("gguf", reason='the GGUF needs pip install -e ".[gguf]"')
    (printed,) = run_block(block, ctx, real=True)
    assert_shows(printed, shown_output(block.page, block.line))


def chat_template(block: Any, ctx: RunContext) -> None:
    """methods.md: the chat template applied, and each prompt written into predictions.jsonl."""
    run_block(block, ctx)
    row = json.loads((the_run(ctx) / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert row["prompt"].startswith("<|user|>")  # the tiny model's chat template


def getting_started_run(block: Any, ctx: RunContext) -> None:
    """getting-started.md: the README's first command (the real model there), on the tiny model."""
    (printed,) = run_block(block, ctx)
    assert "| **overall** |" in printed and (the_run(ctx) / "report.html").is_file()


def dry_run(block: Any, ctx: RunContext) -> None:
    (printed,) = run_block(block, ctx, limit=None)
    assert printed.startswith("Dry run:") and "| dataset | subjects | questions |" in printed
    assert not (ctx.tmp / "results").exists()


def own_csv(block: Any, ctx: RunContext) -> None:
    rows = ["query,opa,opb,opc,opd,gold,category"] + [f"Question {i}?,one,two,three,four,{'ABCD'[i % 4]},demo"
                                                       for i in range(4)]
    (ctx.tmp / "my_questions.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    run_block(block, ctx)
    assert results(the_run(ctx))["metrics"]["accuracy"]["n_questions"] == 2  # --limit 2 of subject "demo"


def benchmarks_list(block: Any, ctx: RunContext) -> None:
    listing, markdown, prompt = run_block(block, ctx)
    assert "| mmlu |" in listing.replace("| mmlu (", "| mmlu |") and markdown == listing  # a pipe gets Markdown
    assert "The following are multiple choice questions" in prompt and "scored continuations" in prompt


def benchmark_example(block: Any, ctx: RunContext) -> None:
    shared("../shared/data/mmlu")
    (printed,) = run_block(block, ctx)
    header, _, *subjects = shown_output(block.page, block.line)[:5]
    assert header in printed and "| **mmlu** |" not in printed  # one dataset: the overall row alone
    assert printed.count("| **overall** |") == 1
    for row in subjects[:3]:
        assert row.split("|")[1] in printed


def orders(block: Any, ctx: RunContext) -> None:
    for argv in commands(block.text):
        out = ctx.tmp / f"run{len(list(ctx.tmp.glob('run*')))}"
        run_cli(ctx, [*cli_args(argv, ctx), "--output-dir", str(out)])
    seeds = [results(ctx.tmp / f"run{i}")["seeds"] for i in range(3)]
    assert [s["mode"] for s in seeds] == ["random", "random", "cyclic"] and seeds[1]["base_seed"] == 7


def generation(block: Any, ctx: RunContext) -> None:
    for argv in commands(block.text):
        args = cli_args(argv, ctx)
        if "--config" in args:  # configs/instruct_generate.yaml names cais/mmlu:all: the embedded sample here
            args += ["--dataset", DEFAULT_DATASET]
        run_cli(ctx, [*args, "--max-new-tokens", "16"])


def generation_example(block: Any, ctx: RunContext) -> None:
    run_block(block, ctx)
    assert "unparsed_rate" in results(the_run(ctx))["metrics"]


def written_example(block: Any, ctx: RunContext) -> None:
    (printed,) = run_block(block, ctx)
    assert "Letter vs text: the scored letter is the written one in" in printed


def cloze(block: Any, ctx: RunContext) -> None:
    cloze_only, both = run_block(block, ctx)
    assert "formulations" not in cloze_only and "cloze" in both.lower()


def cloze_example(block: Any, ctx: RunContext) -> None:
    run_block(block, ctx)
    assert results(the_run(ctx))["metrics"]["formulations"]["mcf"] is not None


def reading_example(block: Any, ctx: RunContext) -> None:
    (printed,) = run_block(block, ctx)
    assert "Position bias:" in printed and "rstd" in results(the_run(ctx))["metrics"]


def probe(block: Any, ctx: RunContext) -> None:
    (printed,) = run_block(block, ctx)
    assert "Choices only:" in printed


def python_api(block: Any, ctx: RunContext) -> None:
    ns = exec_block(block, {'"path/to/model"': repr(str(ctx.model)), '"path/to/mmlu/data"': repr(str(ctx.mmlu_dir))})
    assert 0.0 <= ns["result"].metrics["overall"]["accuracy"]["value"] <= 1.0 and len(ns["result"].predictions)


def callback(block: Any, ctx: RunContext) -> None:
    ns = exec_block(block, {'"path/to/model"': repr(str(ctx.model)), '"path/to/mmlu/data"': repr(str(ctx.mmlu_dir)),
                            "max_steps=1000": "max_steps=2", "every_n_steps=200": "every_n_steps=1",
                            "limit=20": "limit=2"})
    step, logs = ns["step"], ns["logs"]
    assert step == 2 and 0.0 <= logs["twinkle/accuracy"] <= 1.0 and ns["model"].training
    assert "twinkle/delta_vs_first" in logs and "twinkle/p_vs_previous" in logs  # the second evaluation's


def sweep(block: Any, ctx: RunContext) -> None:
    for step in (100, 200):
        shutil.copytree(ctx.model, ctx.tmp / "out" / f"checkpoint-{step}")
    run_block(block, ctx)
    trend = (ctx.tmp / "results" / "sweep" / "trend.md").read_text(encoding="utf-8")
    assert "checkpoint-100" in trend and "checkpoint-200" in trend and "| delta_vs_first |" in trend
    rows = list(csv.DictReader((ctx.tmp / "results" / "sweep" / "trend.csv").read_text(encoding="utf-8").splitlines()))
    assert float(rows[1]["delta_vs_first"]) == 0.0 and rows[1]["vs_first"] == ""  # two copies of one model


def reports(block: Any, ctx: RunContext) -> None:
    for name in ("run1", "base", "finetuned"):
        run_cli(ctx, cli_args(["twinkle-hf", "--model", "path/to/model", "--shuffle-mode", "cyclic", "--output-dir",
                               f"results/{name}"], ctx))
    (ctx.tmp / "results" / "run1" / "report.html").unlink()
    _report, compared = run_block(block, ctx)
    assert (ctx.tmp / "results" / "run1" / "report.html").is_file() and "| metric |" in compared


def twinkle_config(block: Any, ctx: RunContext) -> None:
    """Run from the project root (the sample config names the package's MMLU sample by a relative path)."""
    config = (ROOT / "configs" / "twinkle_eval.yaml").read_text(encoding="utf-8")
    assert "name: path/to/model" in config
    (ctx.tmp / "twinkle.yaml").write_text(config.replace("name: path/to/model", f"name: {ctx.model}"), "utf-8")
    ctx.monkeypatch.chdir(ROOT)
    for i, argv in enumerate(commands(block.text)):
        args = cli_args(argv, ctx, limit="1")
        args[args.index("--config") + 1] = str(ctx.tmp / "twinkle.yaml")
        run_cli(ctx, [*args, "--max-new-tokens", "16", "--output-dir", str(ctx.tmp / f"out{i}")])
        assert list((ctx.tmp / f"out{i}" / "results").glob("results_*.json"))


def add_formulation(block: Any, ctx: RunContext) -> None:
    ns = exec_block(block, {'"path/to/model"': repr(str(ctx.model)),
                            '"path/to/mmlu/data"': repr(str(ctx.mmlu_dir))})
    preds, stats = ns["preds"], ns["stats"]
    assert stats.rows == sum(len(c) for c in ns["data"].rows["choices"]) and len(preds) == len(ns["data"].rows)
    assert set(preds.pred.tolist()) <= set(range(4))


RUNNERS: dict[str, Callable[[Any, RunContext], None]] = {
    "first-run": first_run, "getting-started-run": getting_started_run, "chat-template": chat_template,
    "dry-run": dry_run, "own-csv": own_csv,
    "benchmarks-list": benchmarks_list, "benchmark-example": benchmark_example, "orders": orders,
    "generation": generation, "generation-example": generation_example, "written-example": written_example,
    "cloze": cloze, "cloze-example": cloze_example, "reading-example": reading_example, "probe": probe,
    "python-api": python_api, "callback": callback, "sweep": sweep, "reports": reports,
    "twinkle-config": twinkle_config, "add-formulation": add_formulation,
}
