"""``twinkle-hf benchmarks``: the registry as tables, one per group, and the suites.

``twinkle-hf benchmarks NAME[=PATH]`` shows one prompt of that benchmark per formulation (letters,
and the option texts where lm-eval scores them), rendered as a run would ask it. The question is
the copy's first, or a placeholder when no copy is at hand."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from ..data.benchmark import GROUPS, Benchmark
from ..data.catalog import RELEASE_LAYOUTS, find_benchmark, load_named, split_argument
from ..data.registry import ALIASES, BENCHMARKS, TWINKLE_EVAL_NAMES, subject_descriptions
from ..data.suites import SUITES
from ..errors import OneLineParser, TwinkleError
from ..prompts.templates import benchmark_template, format_fewshot_block, format_question

COLUMNS = ("name", "what it is", "evaluated / few-shot split", "subjects", "options", "language", "license",
           "as lm-eval runs it", "where it looks for data")


def _row(b: Benchmark) -> list[str]:
    few = " or ".join(b.fewshot_splits) if b.fewshot_splits else "none"
    subjects = str(len(b.subjects or subject_descriptions(b.subject_table))) if b.subjects or b.subject_table \
        else "from the data"
    where = f"Hub {b.hub_id}" + (f":{b.hub_config}" if b.hub_config else "") + " (local cache)"
    where += "; gated: NAME=PATH" if b.gated else ""
    where += f"; NAME=PATH: {RELEASE_LAYOUTS[b.layout]}" if b.layout != "hub" else "; NAME=PATH: its files"
    name = b.name + (f" (:{'|'.join(b.variants[:3])}{'|...' if len(b.variants) > 3 else ''})" if b.variants else "")
    title = b.title + (f"; FIXED ORDER: the gold option is always {b.gold_position}, use --shuffle"
                       if b.gold_position else "")
    return [name, title, f"{b.eval_split} / {few}", subjects, b.options, b.language, b.license, _lm_eval(b), where]


def _table(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]]


DRY_RUN_TIME = ("How long: the --dry-run command above loads no weights and prints each member's prompts and tokens; "
                "it adds the time (in all and per member) once one run of model M has finished on this device with "
                "the same dtype and --method, since every finished run records its speed (rates.json in "
                "~/.cache/twinkle_hf or $TWINKLE_HF_CACHE): a short run with --limit 5 is enough.")


def suite_rows() -> list[list[str]]:
    """A row per suite: its members, and how to see how long it would take."""
    return [[s.name, s.title + (f"; {s.differs}" if s.differs else ""), ", ".join(s.members),
             f"twinkle-hf --model M --benchmark {s.name} --dry-run"] for s in SUITES.values()]


def _lm_eval(b: Benchmark) -> str:
    """How lm-eval asks it: its letter task, or what it does instead; a cloze task named once."""
    scoring = " (partial: the rest of the sentence)" if b.cloze_scoring == "partial" else ""
    if b.cloze_task and not b.lm_eval_task:  # lm-eval has the option texts only: letters asked as mmlu asks them
        return (f"lm-eval's {b.cloze_task}{scoring} and --method cloze score the option texts (acc, acc_norm), "
                f"byte for byte; letters are asked in MMLU's format")
    if b.cloze_task:
        return (f"letters: {b.lm_eval_task}, byte for byte; --method cloze: {b.cloze_task}{scoring}, requests "
                f"byte for byte")
    return f"{b.lm_eval_task}, byte for byte" if b.lm_eval_task else b.lm_eval_note


def _wrap(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
                         break_on_hyphens=False, break_long_words=False)


def benchmarks_overview(width: int = 80) -> str:
    """The registry for a terminal: grouped by language, one entry in a few lines of at most ``width``
    columns (``--markdown`` gives the full table)."""
    width = max(60, width)
    indent = 4
    lines: list[str] = []
    for group in GROUPS:
        entries = [b for b in BENCHMARKS.values() if b.group == group]
        if not entries:
            continue
        lines += ["", f"{group[0].upper()}{group[1:]} ({len(entries)})"]
        for b in entries:
            row = dict(zip(COLUMNS, _row(b)))
            subjects = f"{row['subjects']} subjects" if row["subjects"].isdigit() else "subjects from the data"
            lm_eval = row["as lm-eval runs it"]
            lm_eval = lm_eval if "lm-eval" in lm_eval else f"lm-eval: {lm_eval}"
            facts = (f"splits {row['evaluated / few-shot split']}; {subjects}; {row['options']} options; "
                     f"{row['license']}; {lm_eval}")
            title = row["what it is"]  # with a fixed-order release's note
            lines.append(f"  {row['name']}: {title}" if len(row["name"]) + len(title) + 4 <= width
                         else f"  {row['name']}")
            if not lines[-1].endswith(title):
                lines += _wrap(title, width, initial_indent=" " * indent, subsequent_indent=" " * indent)
            lines += _wrap(facts, width, initial_indent=" " * indent, subsequent_indent=" " * indent)
    lines += ["", f"Suites ({len(SUITES)})"]
    for suite in SUITES.values():
        lines += _wrap(f"{suite.name}: {suite.title}: {', '.join(suite.members)}", width, initial_indent="  ",
                       subsequent_indent=" " * indent)
        lines += _wrap(f"Note: {suite.differs}.", width, initial_indent=" " * indent,
                       subsequent_indent=" " * indent) if suite.differs else []
    return "\n".join([*lines[1:], "", *_wrap(
        f"Also: {', '.join(sorted(ALIASES))}. Twinkle Eval's names ({', '.join(TWINKLE_EVAL_NAMES)}) are these "
        "entries. Where each looks for its data, and every column: twinkle-hf benchmarks --markdown. One prompt: "
        "twinkle-hf benchmarks NAME[=PATH].", width)])


def benchmarks_table() -> str:
    """Every registry entry as a Markdown table per group, the suites, and the other names each answers to."""
    lines: list[str] = []
    for group in GROUPS:
        rows = [_row(b) for b in BENCHMARKS.values() if b.group == group]
        lines += [f"## {group[0].upper()}{group[1:]} ({len(rows)})", "", *_table(COLUMNS, rows), ""]
    lines += ["## Suites (a row per member and their macro mean in the report)", "",
              *_table(("name", "what it is", "members", "how long it takes (per member, on your model)"),
                      suite_rows()), "", DRY_RUN_TIME, ""]
    aliases = ", ".join(f"{a} -> {n}" for a, n in sorted(ALIASES.items()))
    return "\n".join(lines + [f"Also: {aliases}. Twinkle Eval's multiple-choice names "
                              f"({', '.join(TWINKLE_EVAL_NAMES)}) are these entries.",
                              "Run one: twinkle-hf --model M --benchmark NAME[=PATH]; see its prompts: "
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


def _load_first(argument: str) -> tuple[Benchmark, Any, str]:
    """The entry, its data (a local copy, or the Hub cache; None when neither) and why there is none."""
    from ..data.sources import quiet_datasets

    name, path = split_argument(argument)
    entry = find_benchmark(name)
    try:
        with quiet_datasets():
            return entry, load_named(argument, offline=True), ""
    except TwinkleError as err:
        if path:
            raise
        return entry, None, f"(no local copy: {err}; placeholders shown)\n\n"


def example_prompt(argument: str, k: int) -> str:
    """The first question of ``argument``'s data (a local copy, or the Hub cache), else a placeholder."""
    from ..data.sources import quiet_datasets
    from ..prompts.permute import expand_permutations
    from ..prompts.templates import build_prompt_set

    entry, data, why = _load_first(argument)
    if data is None:
        return why + placeholder_prompt(entry, k)
    with quiet_datasets():
        rows = expand_permutations(data.rows.select(range(1)), "none", 0, 1, False)
        built = build_prompt_set(rows, benchmark_template(entry, {}), num_fewshot=k, pool=data.fewshot,
                                 self_pool=data.rows, by_subject=entry.fewshot_scope == "subject")
    return built.texts[0]


def example_cloze(argument: str, k: int) -> str:
    """The option-text formulation of the first question: the context of its first option, then
    what each option scores (partial scoring: a context per option, the same continuation)."""
    from ..data.sources import quiet_datasets
    from ..prompts.cloze import cloze_texts, format_cloze_question
    from ..settings.config import EvalConfig

    entry, data, why = _load_first(argument)
    if data is None:
        template = benchmark_template(entry, {})
        options = [f"<option {chr(65 + i)}>" for i in range(2)]
        if entry.cloze_scoring == "partial":
            return why + "\n".join(f"context {i + 1}: '<sentence up to the blank>{o}'" for i, o in enumerate(options)) \
                + "\nscored continuation (each context): ' <rest of the sentence>'"
        context = format_cloze_question(template, "<question>", options)
        return f"{why}{context}\nscored continuations: " + ", ".join(repr(template.cloze_delimiter + o)
                                                                    for o in options)
    with quiet_datasets():
        first = dataclasses.replace(data, rows=data.rows.select(range(1)))
        _, contexts, continuations = cloze_texts(first, EvalConfig(method="cloze", num_fewshot=k))
    if len(set(contexts[0])) > 1:  # partial scoring
        return "\n".join(f"context {i + 1}: {c!r}" for i, c in enumerate(contexts[0])) + \
            f"\nscored continuation (each context): {continuations[0][0]!r}"
    return f"{contexts[0][0]}\nscored continuations: " + ", ".join(map(repr, continuations[0]))


def main_benchmarks(argv: Sequence[str]) -> int:
    """``twinkle-hf benchmarks [NAME[=PATH]] [--num-fewshot K]``."""
    p = OneLineParser(prog="twinkle-hf benchmarks", description="List the benchmarks --benchmark "
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
    suite = SUITES.get(split_argument(args.name)[0].lower())
    if suite is not None:
        print(f"{suite.name}: {suite.title} ({len(suite.members)}): {', '.join(suite.members)}; see one: twinkle-hf "
              f"benchmarks {suite.members[0]}; how long on your model: twinkle-hf --model M --benchmark {suite.name} "
              f"--dry-run")
        if suite.differs:
            print(f"Note: {suite.differs}.")
        return 0
    entry = find_benchmark(split_argument(args.name)[0])
    k = entry.default_k if args.num_fewshot is None else args.num_fewshot
    if k < 0:
        raise TwinkleError(f"--num-fewshot must be an integer >= 0; got {k}")
    summary = entry.summary()
    print(f"{entry.display}: {entry.title}; {k}-shot; " + ", ".join(f"{key} {value}" for key, value in summary.items()
                                                                   if key != "name" and value is not None))
    if entry.gold_position:
        print(f"FIXED ORDER: the release lists the correct option {entry.gold_position}; ask letters with --shuffle")
    print(f"letters{' (lm-eval: ' + entry.formulations['letters'] + ')' if entry.lm_eval_task else ''}:")
    print("-" * 72)
    print(example_prompt(args.name, k))
    print("-" * 72)
    labels = [repr(benchmark_template(entry, {}).label_prefix + x) for x in "ABCD"]
    print(f"scored continuations: {', '.join(labels)}, ...")
    if entry.cloze_task:
        print(f"\n--method cloze (lm-eval: {entry.formulations['cloze']}):")
        print("-" * 72)
        print(example_cloze(args.name, k))
        print("-" * 72)
    return 0
