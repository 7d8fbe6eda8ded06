"""Commonsense benchmarks: the suite model cards report (OpenBookQA, CommonsenseQA, PIQA, SIQA,
Winogrande, COPA). lm-eval scores all but CommonsenseQA by the option texts: ``--method cloze``
asks as its task does, and the letters ask the same options in MMLU's format."""

from __future__ import annotations

from .benchmark import Benchmark


def cloze_note(task: str) -> str:
    """What lm-eval does when its task scores the option texts, not letters."""
    return (f"lm-eval's {task} scores the option texts (acc/acc_norm): --method cloze asks that way; letters are "
            f"asked in MMLU's format")


COMMONSENSE = (
    Benchmark("openbookqa", "OpenBookQA, elementary science with an open book of facts", "allenai/openbookqa", "main",
              group="commonsense", eval_split="test", fewshot_splits=("train",), layout="hub", description="",
              license="Apache-2.0", lm_eval_note=cloze_note("openbookqa"), adapter="openbookqa",
              cloze_task="openbookqa", cloze_question="{question}"),
    Benchmark("commonsense_qa", "CommonsenseQA, 5-option everyday reasoning (validation evaluated: test has no "
              "labels)", "tau/commonsense_qa", None, group="commonsense", eval_split="validation",
              fewshot_splits=("train",), layout="hub", description="",
              question_block="Question: {question}\n{options}\n",
              options="5", license="MIT", lm_eval_task="commonsense_qa"),
    Benchmark("piqa", "PIQA, physical commonsense: which of two solutions reaches the goal", "baber/piqa", None,
              group="commonsense", eval_split="validation", fewshot_splits=("train",), layout="hub", description="",
              options="2", license="AFL-3.0", lm_eval_note=cloze_note("piqa"), adapter="piqa", cloze_task="piqa"),
    Benchmark("siqa", "Social IQa, social situations, 3 options", "lighteval/siqa", None, group="commonsense",
              eval_split="validation", fewshot_splits=("train",), layout="hub", description="", options="3",
              license="CC-BY-4.0", lm_eval_note=cloze_note("social_iqa"), adapter="siqa", cloze_task="social_iqa",
              cloze_question="Q: {question}\nA:"),
    Benchmark("winogrande", "Winogrande (XL), fill the blank with one of two names (partial scoring)",
              "allenai/winogrande", "winogrande_xl", group="commonsense", eval_split="validation",
              fewshot_splits=("train",), layout="hub", description="", options="2", license="CC-BY",
              lm_eval_note="lm-eval's winogrande scores the rest of the sentence after each option fills the blank "
                           "(partial evaluation): --method cloze asks that way; letters are asked in MMLU's format",
              adapter="winogrande", cloze_task="winogrande", cloze_question="{question}", cloze_scoring="partial"),
    Benchmark("copa", "COPA (SuperGLUE), the more plausible cause or effect", "aps/super_glue", "copa",
              group="commonsense", eval_split="validation", fewshot_splits=("train",), layout="hub", description="",
              options="2", license="BSD-2-Clause", lm_eval_note=cloze_note("copa"), adapter="copa", cloze_task="copa",
              cloze_question="{question}", cloze_delimiter="  "),  # lm-eval's choices start with a space of their own
)
