"""The benchmarks a user can name (``--benchmark mmlu``): one small declarative entry each
(:class:`~twinkle_hf.data.benchmark.Benchmark`), the MMLU family here and the other groups in the
``registry_*`` modules. Loading is :mod:`twinkle_hf.data.catalog`; the prompt is built from an
entry by :func:`twinkle_hf.prompts.templates.benchmark_template`. Per-subject descriptions (CMMLU, C-Eval,
TMMLU+, MMLU) are lm-eval's own strings, in ``resources/benchmarks/subjects.json``
(``scripts/make_benchmark_subjects.py`` rebuilds it from the installed lm-eval).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .benchmark import Benchmark
from .registry_commonsense import COMMONSENSE
from .registry_multilingual import CHINESE, MULTILINGUAL
from .registry_reading import READING, SCIENCE

SUBJECTS_FILE = Path(__file__).resolve().parents[1] / "resources" / "benchmarks" / "subjects.json"


_LANGUAGES = "en am ar bn cs de el es fa fil fr ha he hi id ig it ja ko ky lt mg ms ne nl ny pl pt ro ru si sn so sr sv"
GLOBAL_MMLU_LANGUAGES = tuple(_LANGUAGES.split() + ["sw", "te", "tr", "uk", "vi", "yo", "zh"])
ARC_NOTE = ("lm-eval's arc_challenge/arc_easy score the option texts after 'Question: ...\\nAnswer:' "
            "(acc/acc_norm): --method cloze asks that way; letters are asked in MMLU's format")
MMLU_FAMILY = (
    Benchmark("mmlu", "MMLU, 57 subjects (Hendrycks et al.)", "cais/mmlu", "all", group="knowledge",
              eval_split="test", fewshot_splits=("dev",), layout="mmlu", subject_table="mmlu", license="MIT",
              lm_eval_task="mmlu"),
    Benchmark("cmmlu", "CMMLU, Chinese MMLU, 67 subjects", "haonan-li/cmmlu", None,
              group="Chinese and Taiwanese", eval_split="test", fewshot_splits=("dev",), layout="cmmlu",
              columns=(("question", "Question"), ("choices", "A|B|C|D"), ("answer", "Answer")),
              description="", subject_table="cmmlu", answer_cue="答案：", language="zh-Hans", license="CC-BY-NC-4.0",
              subject_configs=True, lm_eval_task="cmmlu"),
    Benchmark("ceval", "C-Eval, Chinese exams, 52 subjects (val evaluated: test has no answers)",
              "ceval/ceval-exam", None,
              group="Chinese and Taiwanese", eval_split="val", fewshot_splits=("dev",), layout="ceval",
              columns=(("question", "question"), ("choices", "A|B|C|D"), ("answer", "answer")),
              description="", subject_table="ceval", answer_cue="答案：", language="zh-Hans",
              license="CC-BY-NC-SA-4.0", keep_ids=False, subject_configs=True, lm_eval_task="ceval-valid"),
    Benchmark("tmmluplus", "TMMLU+, Traditional Chinese MMLU, 67 subjects", "ikala/tmmluplus", None,
              group="Chinese and Taiwanese", eval_split="test", fewshot_splits=("train", "dev"), layout="tmmluplus",
              description="", subject_table="tmmluplus", language="zh-Hant", license="MIT", subject_configs=True,
              lm_eval_task="tmmluplus"),
    Benchmark("mmlu_pro", "MMLU-Pro, up to 10 options, 14 categories", "TIGER-Lab/MMLU-Pro", None,
              group="knowledge", eval_split="test", fewshot_splits=("validation",), layout="hub",
              columns=(("question", "question"), ("choices", "options"), ("answer", "answer_index"),
                       ("subject", "category")),
              fewshot_scope="all", description="", strip_question=False, options="up to 10", license="MIT",
              lm_eval_task="leaderboard_mmlu_pro", default_k=5),
    Benchmark("mmlu_redux", "MMLU-Redux 2.0, 5,700 re-annotated MMLU questions", "edinburgh-dawg/mmlu-redux-2.0",
              None, group="knowledge", eval_split="test", fewshot_splits=(), layout="hub", subject_table="mmlu",
              license="CC-BY-4.0", subject_configs=True,
              lm_eval_note="lm-eval's mmlu_redux tasks generate an answer; this entry scores letters as mmlu does"),
    Benchmark("global_mmlu", "Global-MMLU, MMLU in 42 languages (global_mmlu:ja)", "CohereForAI/Global-MMLU",
              "{variant}", group="multilingual", eval_split="test", fewshot_splits=("dev",), layout="hub",
              description="",
              license="Apache-2.0", variants=GLOBAL_MMLU_LANGUAGES, lm_eval_task="global_mmlu_full_{variant}"),
    Benchmark("arc_challenge", "ARC-Challenge, grade-school science (letters)", "allenai/ai2_arc", "ARC-Challenge",
              group="science and medicine", eval_split="test", fewshot_splits=("train",), layout="hub",
              description="", license="CC-BY-SA-4.0", options="3-5", lm_eval_note=ARC_NOTE, cloze_task="arc_challenge"),
    Benchmark("arc_easy", "ARC-Easy, grade-school science (letters)", "allenai/ai2_arc", "ARC-Easy",
              group="science and medicine", eval_split="test", fewshot_splits=("train",), layout="hub",
              description="", license="CC-BY-SA-4.0", options="3-5", lm_eval_note=ARC_NOTE, cloze_task="arc_easy"),
    Benchmark("hellaswag", "HellaSwag, commonsense sentence endings (validation evaluated: test has no labels)",
              "Rowan/hellaswag", None, group="commonsense", eval_split="validation", fewshot_splits=("train",),
              layout="hub",
              fewshot_scope="all", description="", strip_question=False, license="MIT",
              lm_eval_note="lm-eval's hellaswag scores the endings' texts (acc/acc_norm): --method cloze asks that "
                           "way; letters are asked in MMLU's format",
              cloze_task="hellaswag", cloze_question="{question}"),
    Benchmark("gpqa", "GPQA, graduate-level science (main, diamond, extended)", "Idavidrein/gpqa", "gpqa_{variant}",
              group="science and medicine", eval_split="train", fewshot_splits=(), layout="gpqa",
              columns=(("question", "Question"),
                       ("choices", "Correct Answer|Incorrect Answer 1|Incorrect Answer 2|Incorrect Answer 3")),
              description="", license="CC-BY-4.0", gated=True, variants=("main", "diamond", "extended"),
              fixed_order=True,
              lm_eval_note="lm-eval's gpqa tasks shuffle the options with Python's unseeded random, so their "
                           "prompts cannot be reproduced; here each question gets one seeded order"),
    Benchmark("supergpqa", "SuperGPQA, 285 graduate disciplines, up to 10 options", "m-a-p/SuperGPQA", None,
              group="knowledge", eval_split="train", fewshot_splits=(), layout="hub",
              columns=(("question", "question"), ("choices", "options"), ("answer", "answer_letter"),
                       ("subject", "discipline"), ("id", "uuid")),
              description="", options="up to 10", license="ODC-BY", lm_eval_note="not in lm-eval"),
    Benchmark("formosa_bench", "Formosa-bench, Taiwan geography, government, history, society",
              "lianghsun/Formosa-bench", None,
              group="Chinese and Taiwanese", eval_split="test", fewshot_splits=(), layout="hub",
              description="", language="zh-Hant", license="Apache-2.0", lm_eval_note="not in lm-eval"),
)
BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in MMLU_FAMILY + COMMONSENSE + READING + SCIENCE + MULTILINGUAL
                                    + CHINESE}
# Other spellings, Twinkle Eval's registry names among them (its multiple-choice names are ours).
ALIASES = {"mmlu-pro": "mmlu_pro", "mmlupro": "mmlu_pro", "leaderboard_mmlu_pro": "mmlu_pro",
           "mmlu-redux": "mmlu_redux", "tmmlu+": "tmmluplus", "tmmlu_plus": "tmmluplus", "c-eval": "ceval",
           "ceval-valid": "ceval", "global-mmlu": "global_mmlu", "arc-challenge": "arc_challenge",
           "arc-easy": "arc_easy", "super_gpqa": "supergpqa", "formosa-bench": "formosa_bench"}
TWINKLE_EVAL_NAMES = ("mmlu", "mmlu_pro", "tmmluplus", "mmlu_redux", "supergpqa", "gpqa", "formosa_bench")


@functools.cache
def _subject_tables() -> dict[str, dict[str, str]]:
    return json.loads(SUBJECTS_FILE.read_text(encoding="utf-8"))


def subject_descriptions(table: str | None) -> dict[str, str]:
    """lm-eval's description of each subject of a benchmark (``subjects.json``); {} for none."""
    return dict(_subject_tables().get(table, {})) if table else {}
