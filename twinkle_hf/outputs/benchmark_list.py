"""``twinkle-hf benchmarks``: the registry as a table; ``twinkle-hf benchmarks NAME[=PATH]``: one
prompt of that benchmark, rendered as a run would ask it (the copy's first question, or a
placeholder question when no copy is at hand)."""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Sequence

from ..data.catalog import RELEASE_LAYOUTS, find_benchmark, load_named, split_argument
from ..data.registry import ALIASES, BENCHMARKS, TWINKLE_EVAL_NAMES, Benchmark, subject_descriptions
from ..errors import TwinkleError
from ..prompts.templates import benchmark_template, format_fewshot_block, format_question

COLUMNS = ("name", "what it is", "evaluated / few-shot split", "subjects", "options", "language", "license",
           "as lm-eval runs it", "where it looks for data")


def _row(b: Benchmark) -> list[str]:
    few = " or ".join(b.fewshot_splits) if b.fewshot_splits else "none"
    subjects = str(len(subject_descriptions(b.subject_table))) if b.subject_table else "from the data"
    where = f"Hub {b.hub_id}" + (f":{b.hub_config}" if b.hub_config else "") + " (local cache)"
    where += "; gated: NAME=PATH" if b.gated else ""
    where += f"; NAME=PATH: {RELEASE_LAYOUTS[b.layout]}" if b.layout != "hub" else "; NAME=PATH: its files"
    name = b.name + (f" (:{'|'.join(b.variants[:3])}{'|...' if len(b.variants) > 3 else ''})" if b.variants else "")
    return [name, b.title, f"{b.eval_split} / {few}", subjects, b.options, b.language, b.license, _lm_eval(b), where]


def _lm_eval(b: Benchmark) -> str:
    """How lm-eval asks it: its letter task, or what it does instead; a cloze task named once."""
    if b.cloze_task:  # lm-eval has the option texts only; letters are asked as mmlu asks them
        return (f"lm-eval's {b.cloze_task} and --method cloze score the option texts (acc, acc_norm), byte for byte; "
                "letters are asked in MMLU's format")
    return f"{b.lm_eval_task}, byte for byte" if b.lm_eval_task else b.lm_eval_note


LANGUAGES = {"en": "English", "zh-Hans": "Chinese, simplified", "zh-Hant": "Chinese, traditional"}


def _wrap(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
                         break_on_hyphens=False, break_long_words=False)


def benchmarks_overview(width: int = 80) -> str:
    """The registry for a terminal: grouped by language, one entry in a few lines of at most ``width``
    columns (``--markdown`` gives the full table)."""
    width = max(60, width)
    indent = 4
    groups: dict[str, list[Benchmark]] = {}
    for b in BENCHMARKS.values():
        groups.setdefault(b.language, []).append(b)
    lines: list[str] = []
    for language, entries in groups.items():
        label = LANGUAGES.get(language, language)
        lines += ["", f"{label} ({language})" if label != language else label]
        for b in entries:
            row = dict(zip(COLUMNS, _row(b)))
            subjects = f"{row['subjects']} subjects" if row["subjects"].isdigit() else "subjects from the data"
            lm_eval = row["as lm-eval runs it"]
            lm_eval = lm_eval if "lm-eval" in lm_eval else f"lm-eval: {lm_eval}"
            facts = (f"splits {row['evaluated / few-shot split']}; {subjects}; {row['options']} options; "
                     f"{row['license']}; {lm_eval}")
            lines.append(f"  {row['name']}: {b.title}" if len(row["name"]) + len(b.title) + 4 <= width
                         else f"  {row['name']}")
            if not lines[-1].endswith(b.title):
                lines += _wrap(b.title, width, initial_indent=" " * indent, subsequent_indent=" " * indent)
            lines += _wrap(facts, width, initial_indent=" " * indent, subsequent_indent=" " * indent)
    return "\n".join([*lines[1:], "", *_wrap(
        f"Also: {', '.join(sorted(ALIASES))}. Twinkle Eval's names ({', '.join(TWINKLE_EVAL_NAMES)}) are these "
        "entries. Where each looks for its data, and every column: twinkle-hf benchmarks --markdown. One prompt: "
        "twinkle-hf benchmarks NAME[=PATH].", width)])


def benchmarks_table() -> str:
    """Every registry entry as a Markdown table, and the other names each answers to."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _row(b)) + " |" for b in BENCHMARKS.values()]
    aliases = ", ".join(f"{a} -> {n}" for a, n in sorted(ALIASES.items()))
    return "\n".join(lines + ["", f"Also: {aliases}. Twinkle Eval's multiple-choice names "
                              f"({', '.join(TWINKLE_EVAL_NAMES)}) are these entries.",
                              "Run one: twinkle-hf --model M --benchmark NAME[=PATH]; see one prompt: "
                              "twinkle-hf benchmarks NAME[=PATH]"])


def placeholder_prompt(entry: Benchmark, k: int) -> str:
    """A prompt of ``entry`` for its first subject, with placeholder questions (no data needed)."""
    template = benchmark_template(entry, {})
    subjects = list(subject_descriptions(entry.subject_table)) or [""]
    n = 10 if entry.options == "up to 10" else 4
    options = [f"<option {chr(65 + i)}>" for i in range(n)]
    shots = [format_question(template, f"<example question {i + 1}>", options) + template.label_prefix + "A"
             for i in range(k)]
    return format_fewshot_block(template, subjects[0], shots) + format_question(template, "<question>", options)


def example_prompt(argument: str, k: int) -> str:
    """The first question of ``argument``'s data (a local copy, or the Hub cache), else a placeholder."""
    from ..prompts.permute import expand_permutations
    from ..prompts.templates import build_prompt_set

    name, path = split_argument(argument)
    entry = find_benchmark(name)
    from ..data.sources import quiet_datasets

    try:
        with quiet_datasets():
            data = load_named(argument, offline=True)
    except TwinkleError as err:
        if path:
            raise
        text = placeholder_prompt(entry, k)
        return f"(no local copy: {err}; placeholders shown)\n\n{text}"
    with quiet_datasets():
        rows = expand_permutations(data.rows.select(range(1)), "none", 0, 1, False)
        built = build_prompt_set(rows, benchmark_template(entry, {}), num_fewshot=k, pool=data.fewshot,
                                 self_pool=data.rows, by_subject=entry.fewshot_scope == "subject")
    return built.texts[0]


def main_benchmarks(argv: Sequence[str]) -> int:
    """``twinkle-hf benchmarks [NAME[=PATH]] [--num-fewshot K]``."""
    p = argparse.ArgumentParser(prog="twinkle-hf benchmarks", description="List the benchmarks --benchmark "
                                "knows, or print one prompt of one (its first question, as a run asks it).")
    p.add_argument("name", nargs="?", metavar="NAME[=PATH]", help="e.g. mmlu, cmmlu=data/cmmlu, global_mmlu:ja")
    p.add_argument("--num-fewshot", type=int, help="few-shot examples (default: lm-eval's default for the task)")
    p.add_argument("--markdown", action="store_true", help="the full table in Markdown (every column, wide rows; "
                   "also what a pipe gets), not the narrow list a terminal gets")
    args = p.parse_args(argv)
    if not args.name:
        terminal = sys.stdout.isatty() and not args.markdown  # piped, or asked for: the full Markdown
        print(benchmarks_overview(shutil.get_terminal_size().columns) if terminal else benchmarks_table())
        return 0
    entry = find_benchmark(split_argument(args.name)[0])
    k = entry.default_k if args.num_fewshot is None else args.num_fewshot
    if k < 0:
        raise TwinkleError(f"--num-fewshot must be an integer >= 0; got {k}")
    summary = entry.summary()
    print(f"{entry.display}: {entry.title}; {k}-shot; " + ", ".join(f"{key} {value}" for key, value in summary.items()
                                                                   if key != "name" and value is not None))
    print("-" * 72)
    print(example_prompt(args.name, k))
    print("-" * 72)
    labels = [repr(benchmark_template(entry, {}).label_prefix + x) for x in "ABCD"]
    print(f"scored continuations: {', '.join(labels)}, ...")
    return 0
