"""Prompt text: lm-evaluation-harness's `mmlu` format by default, byte for byte.

``description + example_1 + sep + ... + example_k + sep + question_block`` where a question block is
``"{question.strip()}\\nA. {c0}\\nB. {c1}\\n...\\nAnswer:"`` and an example adds ``" {gold letter}"``.
The scored continuation is ``label_prefix + letter`` (``" A"``), so unshuffled numbers compare
with published lm-eval numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets

from ..data.registry import subject_descriptions
from ..errors import TwinkleError
from ..schema import index_to_letter
from .permute import example_options


@dataclass(frozen=True)
class PromptTemplate:
    """All the strings a prompt is built from. ``{subject}``, ``{question}``, ``{options}``,
    ``{letter}``, ``{text}`` are the placeholders."""

    description: str = "The following are multiple choice questions (with answers) about {subject}.\n\n"
    description_no_subject: str = "The following are multiple choice questions (with answers).\n\n"
    question: str = "{question}\n{options}\n"
    option: str = "{letter}. {text}"
    option_lines: tuple[str, ...] = ()  # per displayed position, overriding ``option`` (a benchmark's quirk)
    answer_cue: str = "Answer:"
    label_prefix: str = " "  # what comes between the cue and the letter (" A" after "Answer:")
    fewshot_separator: str = "\n\n"
    # generation mode: what the question block ends with instead of the answer cue
    instruction_pattern: str = 'Answer with the letter of the correct option, in the form "Answer: X".'
    instruction_box: str = "Give the letter of the correct option as your final answer, in the form \\boxed{X}."
    # a named benchmark: lm-eval's own description per subject, and whether the question is stripped
    descriptions: Mapping[str, str] = field(default_factory=dict)
    strip_question: bool = True
    # cloze (--method cloze): no options shown; each option's text follows the question after
    # ``cloze_delimiter`` (lm-eval's target_delimiter). Default: lm-eval's `mmlu_continuation` task.
    cloze_description: str = "The following are questions (with answers) about {subject}.\n\n"
    cloze_question: str = "Question: {question}\nAnswer:"
    cloze_delimiter: str = " "
    cloze_strip: bool = True  # the question is stripped first (lm-eval's mmlu_continuation; ARC's is not)

    def instruction(self, method: str) -> str:
        """The request that ends a generation-mode prompt (``regex`` asks like ``pattern``)."""
        return self.instruction_box if method == "box" else self.instruction_pattern


EN_TEMPLATE = PromptTemplate()
# Traditional Chinese (TMMLU+ users); the description follows lm-eval's `tmmluplus` task.
ZH_TEMPLATE = PromptTemplate(
    description="以下為{subject}的單選題，請提供正確答案的選項。\n\n",
    description_no_subject="以下為單選題，請提供正確答案的選項。\n\n",
    answer_cue="答案：",
    label_prefix="",
    instruction_pattern="請以「答案：X」的格式回答正確選項的字母。",
    instruction_box="請將正確選項的字母以 \\boxed{X} 的格式作為最終答案。",
    cloze_description="以下為{subject}的問題與答案。\n\n",
    cloze_question="問題：{question}\n答案：",
    cloze_delimiter="",
)
TEMPLATES = {"en": EN_TEMPLATE, "zh": ZH_TEMPLATE}


def resolve_template(lang: str, overrides: Mapping[str, str]) -> PromptTemplate:
    """The language's default template with the YAML ``templates:`` overrides applied."""
    return dataclasses.replace(TEMPLATES[lang], **dict[str, Any](overrides))


def benchmark_template(entry: Any, overrides: Mapping[str, str]) -> PromptTemplate:
    """The prompt a named benchmark (a ``data.registry.Benchmark``) is asked with, as lm-eval's own
    task renders it, with the YAML ``templates:`` overrides applied."""
    base = ZH_TEMPLATE if entry.language.startswith("zh") else EN_TEMPLATE
    no_subject = EN_TEMPLATE.description_no_subject if entry.description else ""
    description = entry.description.replace("{language}", getattr(entry, "language_name", ""))
    template = dataclasses.replace(
        base, description=description, description_no_subject=no_subject, answer_cue=entry.answer_cue,
        label_prefix=entry.label_prefix, descriptions=subject_descriptions(entry.subject_table),
        strip_question=entry.strip_question, question=entry.question_block, option=entry.option_format,
        option_lines=entry.option_formats)
    if entry.cloze_task:  # lm-eval's own cloze task for this benchmark
        template = dataclasses.replace(template, cloze_description=entry.cloze_description,
                                       cloze_question=entry.cloze_question, cloze_strip=entry.cloze_strip,
                                       cloze_delimiter=entry.cloze_delimiter)
    return dataclasses.replace(template, **dict[str, Any](overrides))


def format_description(template: PromptTemplate, subject: str) -> str:
    """lm-eval writes subjects with spaces: ``high_school_biology`` -> ``high school biology``."""
    if subject in template.descriptions:
        return template.descriptions[subject]
    if not subject:
        return template.description_no_subject
    return template.description.format(subject=subject.replace("_", " "))


def format_options(template: PromptTemplate, choices: Sequence[str]) -> str:
    """The options, one a line: ``A. text`` (or the benchmark's own format, Belebele's ``A: text``)."""
    lines = template.option_lines
    return "\n".join((lines[i] if i < len(lines) else template.option).format(letter=index_to_letter(i), text=text)
                     for i, text in enumerate(choices))


def format_question(template: PromptTemplate, question: str, choices: Sequence[str]) -> str:
    """One question block, ending with the answer cue (no trailing space)."""
    options = format_options(template, choices)
    text = question.strip() if template.strip_question else question
    return template.question.format(question=text, options=options) + template.answer_cue


def format_example(template: PromptTemplate, question: str, choices: Sequence[str], answer: int) -> str:
    """A solved few-shot example: the question block followed by its gold label."""
    return format_question(template, question, choices) + template.label_prefix + index_to_letter(answer)


def format_fewshot_block(template: PromptTemplate, subject: str, examples: Sequence[str]) -> str:
    """Description plus solved examples, ready to be followed by the question block."""
    return format_description(template, subject) + "".join(e + template.fewshot_separator for e in examples)


# ----------------------------------------------------------------------------------------------
# Whole prompts for permuted rows


def fewshot_examples(pool: datasets.Dataset, subject: str | None, k: int, exclude: str | None) -> list[dict]:
    """The first k rows of ``subject`` (None: any) in the pool (lm-eval's ``first_n``), skipping ``exclude``."""
    found: list[dict] = []
    for row in pool:
        if subject in (None, row["subject"]) and row["id"] != exclude:
            found.append(row)
            if len(found) == k:
                return found
    raise TwinkleError(
        f"--num-fewshot {k}: the few-shot pool has only {len(found)} usable example(s) for subject "
        f"{subject!r}; lower --num-fewshot or give a --fewshot-split with more rows"
    )


def _permuted_example(template: PromptTemplate, row: dict, seed: int, order_index: int, shuffled: bool,
                      keep_meaning: bool, blank: bool) -> str:
    """A few-shot example, its options permuted by (seed, order_index, example id) when shuffling
    (``blank``: its question text shown empty, its order that of the question as written)."""
    choices, answer = example_options(row, seed, order_index, shuffled, keep_meaning)
    return format_example(template, "" if blank else row["question"], choices, answer)


@dataclass(frozen=True)
class PromptSet:
    """Prompt texts of permuted rows, and per row the index of its few-shot block (rows with the
    same block share that prefix; the scorer can run it once)."""

    texts: list[str]
    block_ids: list[int]


def build_prompt_set(rows: datasets.Dataset, template: PromptTemplate, *, num_fewshot: int = 0,
                     pool: datasets.Dataset | None = None, self_pool: datasets.Dataset | None = None,
                     shuffled: bool = False, seed: int = 0, by_subject: bool = True,
                     keep_meaning: bool = True, blank_questions: bool = False) -> PromptSet:
    """The text of every permuted row: few-shot block + question block (no chat template).

    Few-shot examples come from ``pool`` (the few-shot split); without one, from ``self_pool``
    (the evaluated data). Whenever the examples are drawn from the evaluated rows (no pool, or a
    pool that is the evaluated split, as with ``--fewshot-split`` equal to ``--split``), a question
    is never its own example. Under one order index the block is the same for every question
    of a subject, so it is built once per (subject, index). ``by_subject=False`` takes the pool's
    first k whatever their subject (lm-eval's leaderboard_mmlu_pro: one task over all categories).
    ``keep_meaning``: examples keep their place-naming options and rewrite their letter references,
    as the questions do (permute.py). ``blank_questions``: the examples' question texts shown empty
    (the choices-only probe; the evaluated rows come blanked already).
    """
    self_drawn = pool is None or pool is self_pool
    blocks: dict[tuple, int] = {}
    texts_of_blocks: list[str] = []
    subset_cache: dict[str, datasets.Dataset] = {}
    first_ids: dict[str, set[str]] = {}
    prompts: list[str] = []
    block_ids: list[int] = []
    for subject, order_index, qid, question, choices in zip(  # [:]: a list, not a column read row by row
        rows["subject"][:], rows["order_index"][:], rows["id"][:], rows["question"][:], rows["choices"][:]
    ):
        source = pool if pool is not None else self_pool
        if num_fewshot and subject not in subset_cache:
            if source is None:
                raise TwinkleError("--num-fewshot needs a few-shot split or the evaluated data as a pool")
            subset_cache[subject] = source if not by_subject else source.filter(
                lambda s, wanted=subject: s == wanted, input_columns="subject", keep_in_memory=True)
            first_ids[subject] = set(subset_cache[subject]["id"][:num_fewshot])
        # Drawing from the evaluated data, a question among the first k must not be its own example;
        # every other question of the subject shares one block.
        exclude = qid if self_drawn and num_fewshot and qid in first_ids[subject] else None
        key = (subject, order_index if num_fewshot else None, exclude)
        if key not in blocks:
            examples: list[str] = []
            if num_fewshot:
                chosen = fewshot_examples(subset_cache[subject], subject if by_subject else None, num_fewshot,
                                           exclude)
                examples = [_permuted_example(template, r, seed, order_index, shuffled, keep_meaning,
                                              blank_questions) for r in chosen]
            blocks[key] = len(texts_of_blocks)
            texts_of_blocks.append(format_fewshot_block(template, subject, examples))
        block_ids.append(blocks[key])
        prompts.append(texts_of_blocks[blocks[key]] + format_question(template, question, choices))
    return PromptSet(prompts, block_ids)
