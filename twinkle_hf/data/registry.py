"""The benchmarks a user can name (``--benchmark mmlu``): one small declarative entry each.

An entry says where the data lives (Hub id and config, the release's own folder layout), which
split is evaluated and which one holds the few-shot examples, how lm-evaluation-harness's own task
asks each question (description, answer cue, the text between cue and letter), how many options a
question has, the aggregate its papers report, its licence and whether the Hub gates it. Loading
is :mod:`twinkle_hf.data.catalog`; the prompt is built from an entry by
:func:`twinkle_hf.prompts.templates.benchmark_template`. Per-subject descriptions (CMMLU, C-Eval,
TMMLU+, MMLU) are lm-eval's own strings, in ``resources/benchmarks/subjects.json``
(``scripts/make_benchmark_subjects.py`` rebuilds it from the installed lm-eval).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUBJECTS_FILE = Path(__file__).resolve().parents[1] / "resources" / "benchmarks" / "subjects.json"
EN_DESCRIPTION = "The following are multiple choice questions (with answers) about {subject}.\n\n"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark as lm-eval runs it (``lm_eval_task``), or as its authors do where lm-eval has no
    letter-scored task (``lm_eval_note`` says what lm-eval does instead)."""

    name: str
    title: str  # what it is, in a few words
    hub_id: str
    hub_config: str | None  # the config evaluated ({variant} is filled in), None: the default
    eval_split: str
    fewshot_splits: tuple[str, ...]  # the few-shot pool: the first of these a copy holds; () none
    layout: str  # a key of catalog.RELEASE_LAYOUTS: how a local copy of the release is laid out
    columns: tuple[tuple[str, str], ...] = ()  # column map (canonical field -> column), () detect
    fewshot_scope: str = "subject"  # subject: each subject's own first k; all: the pool's first k
    description: str = EN_DESCRIPTION  # "{subject}" is the subject with spaces; "" none
    subject_table: str | None = None  # key in subjects.json: lm-eval's description per subject
    answer_cue: str = "Answer:"
    label_prefix: str = " "  # between the cue and the letter (lm-eval's target_delimiter)
    strip_question: bool = True  # lm-eval's templates write {{question.strip()}}
    language: str = "en"
    options: str = "4"
    aggregate: str = "micro"  # the canonical headline: micro (over questions) or macro (over subjects)
    license: str = ""
    gated: bool = False
    keep_ids: bool = True  # False: the copy's id column restarts per file (C-Eval), ids are made
    subject_configs: bool = False  # the Hub dataset has a config per subject (read from the cache one by one)
    variants: tuple[str, ...] = ()  # name:variant picks one (global_mmlu:ja, gpqa:diamond)
    variant: str = ""  # the chosen one ("" before resolving; the first variant by default)
    fixed_order: bool = False  # the copy lists the gold option first: options get one seeded order
    lm_eval_task: str = ""  # lm-eval's task whose prompts these match byte for byte ("" none)
    lm_eval_note: str = ""  # how lm-eval differs, when it has no letter-scored task
    default_k: int = 0  # lm-eval's default num_fewshot for the task
    # The cloze formulation (--method cloze): lm-eval's task that scores the option texts ("" none:
    # the default cloze template is used), its question block and description
    cloze_task: str = ""
    cloze_question: str = "Question: {question}\nAnswer:"
    cloze_description: str = ""
    cloze_strip: bool = False

    @property
    def formulations(self) -> dict[str, str]:
        """lm-eval's task for each formulation this entry asks: ``letters`` (MCF) and ``cloze`` (CF)."""
        return {"letters": self.lm_eval_task.format(variant=self.variant), "cloze": self.cloze_task}

    @property
    def display(self) -> str:
        """``name`` or ``name:variant``: how it is named in results."""
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @property
    def config(self) -> str | None:
        """The Hub config of the chosen variant."""
        return self.hub_config.format(variant=self.variant) if self.hub_config else None

    def resolved_hash(self, k: int, subjects: tuple[str, ...] = ()) -> str:
        """sha256 of everything that decides the prompts and splits of a run: the entry, k, subjects."""
        entry = {key: value for key, value in dataclasses.asdict(self).items() if key not in ("title", "license")
                 and (self.cloze_task or not key.startswith("cloze_"))}  # no cloze task: hashes as before it had one
        text = json.dumps({"entry": entry, "num_fewshot": k, "subjects": list(subjects)}, sort_keys=True,
                          ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def summary(self) -> dict[str, Any]:
        """What results.json records about the benchmark (besides its hash)."""
        return {"name": self.display, "hub_id": self.hub_id, "config": self.config, "split": self.eval_split,
                "fewshot_split": self.fewshot_splits[0] if self.fewshot_splits else None,
                "fewshot_scope": self.fewshot_scope, "aggregate": self.aggregate,
                "lm_eval_task": self.lm_eval_task.format(variant=self.variant) or None,
                "lm_eval_cloze_task": self.cloze_task or None}


_LANGUAGES = "en am ar bn cs de el es fa fil fr ha he hi id ig it ja ko ky lt mg ms ne nl ny pl pt ro ru si sn so sr sv"
GLOBAL_MMLU_LANGUAGES = tuple(_LANGUAGES.split() + ["sw", "te", "tr", "uk", "vi", "yo", "zh"])
ARC_NOTE = ("lm-eval's arc_challenge/arc_easy score the option texts after 'Question: ...\\nAnswer:' "
            "(acc/acc_norm): --method cloze asks that way; letters are asked in MMLU's format")
BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("mmlu", "MMLU, 57 subjects (Hendrycks et al.)", "cais/mmlu", "all", eval_split="test",
              fewshot_splits=("dev",), layout="mmlu", subject_table="mmlu", license="MIT", lm_eval_task="mmlu"),
    Benchmark("cmmlu", "CMMLU, Chinese MMLU, 67 subjects", "haonan-li/cmmlu", None, eval_split="test",
              fewshot_splits=("dev",), layout="cmmlu",
              columns=(("question", "Question"), ("choices", "A|B|C|D"), ("answer", "Answer")),
              description="", subject_table="cmmlu", answer_cue="答案：", language="zh-Hans", license="CC-BY-NC-4.0",
              subject_configs=True, lm_eval_task="cmmlu"),
    Benchmark("ceval", "C-Eval, Chinese exams, 52 subjects (val evaluated: test has no answers)",
              "ceval/ceval-exam", None, eval_split="val", fewshot_splits=("dev",), layout="ceval",
              columns=(("question", "question"), ("choices", "A|B|C|D"), ("answer", "answer")),
              description="", subject_table="ceval", answer_cue="答案：", language="zh-Hans",
              license="CC-BY-NC-SA-4.0", keep_ids=False, subject_configs=True, lm_eval_task="ceval-valid"),
    Benchmark("tmmluplus", "TMMLU+, Traditional Chinese MMLU, 67 subjects", "ikala/tmmluplus", None,
              eval_split="test", fewshot_splits=("train", "dev"), layout="tmmluplus", description="",
              subject_table="tmmluplus", language="zh-Hant", license="MIT", subject_configs=True,
              lm_eval_task="tmmluplus"),
    Benchmark("mmlu_pro", "MMLU-Pro, up to 10 options, 14 categories", "TIGER-Lab/MMLU-Pro", None,
              eval_split="test", fewshot_splits=("validation",), layout="hub",
              columns=(("question", "question"), ("choices", "options"), ("answer", "answer_index"),
                       ("subject", "category")),
              fewshot_scope="all", description="", strip_question=False, options="up to 10", license="MIT",
              lm_eval_task="leaderboard_mmlu_pro", default_k=5),
    Benchmark("mmlu_redux", "MMLU-Redux 2.0, 5,700 re-annotated MMLU questions", "edinburgh-dawg/mmlu-redux-2.0",
              None, eval_split="test", fewshot_splits=(), layout="hub", subject_table="mmlu", license="CC-BY-4.0",
              subject_configs=True,
              lm_eval_note="lm-eval's mmlu_redux tasks generate an answer; this entry scores letters as mmlu does"),
    Benchmark("global_mmlu", "Global-MMLU, MMLU in 42 languages (global_mmlu:ja)", "CohereForAI/Global-MMLU",
              "{variant}", eval_split="test", fewshot_splits=("dev",), layout="hub", description="",
              license="Apache-2.0", variants=GLOBAL_MMLU_LANGUAGES, lm_eval_task="global_mmlu_full_{variant}"),
    Benchmark("arc_challenge", "ARC-Challenge, grade-school science (letters)", "allenai/ai2_arc", "ARC-Challenge",
              eval_split="test", fewshot_splits=("train",), layout="hub", description="", license="CC-BY-SA-4.0",
              options="3-5", lm_eval_note=ARC_NOTE, cloze_task="arc_challenge"),
    Benchmark("arc_easy", "ARC-Easy, grade-school science (letters)", "allenai/ai2_arc", "ARC-Easy",
              eval_split="test", fewshot_splits=("train",), layout="hub", description="", license="CC-BY-SA-4.0",
              options="3-5", lm_eval_note=ARC_NOTE, cloze_task="arc_easy"),
    Benchmark("hellaswag", "HellaSwag, commonsense sentence endings (validation evaluated: test has no labels)",
              "Rowan/hellaswag", None, eval_split="validation", fewshot_splits=("train",), layout="hub",
              fewshot_scope="all", description="", strip_question=False, license="MIT",
              lm_eval_note="lm-eval's hellaswag scores the endings' texts (acc/acc_norm): --method cloze asks that "
                           "way; letters are asked in MMLU's format",
              cloze_task="hellaswag", cloze_question="{question}"),
    Benchmark("gpqa", "GPQA, graduate-level science (main, diamond, extended)", "Idavidrein/gpqa", "gpqa_{variant}",
              eval_split="train", fewshot_splits=(), layout="gpqa",
              columns=(("question", "Question"),
                       ("choices", "Correct Answer|Incorrect Answer 1|Incorrect Answer 2|Incorrect Answer 3")),
              description="", license="CC-BY-4.0", gated=True, variants=("main", "diamond", "extended"),
              fixed_order=True,
              lm_eval_note="lm-eval's gpqa tasks shuffle the options with Python's unseeded random, so their "
                           "prompts cannot be reproduced; here each question gets one seeded order"),
    Benchmark("supergpqa", "SuperGPQA, 285 graduate disciplines, up to 10 options", "m-a-p/SuperGPQA", None,
              eval_split="train", fewshot_splits=(), layout="hub",
              columns=(("question", "question"), ("choices", "options"), ("answer", "answer_letter"),
                       ("subject", "discipline"), ("id", "uuid")),
              description="", options="up to 10", license="ODC-BY", lm_eval_note="not in lm-eval"),
    Benchmark("formosa_bench", "Formosa-bench, Taiwan geography, government, history, society",
              "lianghsun/Formosa-bench", None, eval_split="test", fewshot_splits=(), layout="hub",
              description="", language="zh-Hant", license="Apache-2.0", lm_eval_note="not in lm-eval"),
)}
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
