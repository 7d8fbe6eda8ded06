"""One benchmark a user can name (``--benchmark mmlu``): a frozen, declarative entry.

An entry says where the data lives (Hub id and config, the release's own folder layout), which
split is evaluated and which one holds the few-shot examples. It says how lm-evaluation-harness's
own task asks each question: description, question block, answer cue, the text between cue and
letter, and for the option-text formulation its context and delimiter. It names how a Hub row
becomes a canonical row (``adapter``, a key of :data:`twinkle_hf.data.adapters.ADAPTERS`), how many
options a question has, the aggregate its papers report, its licence and whether the Hub gates it.
The entries themselves are in the ``registry_*`` modules, one per group;
:mod:`twinkle_hf.data.registry` collects them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

EN_DESCRIPTION = "The following are multiple choice questions (with answers) about {subject}.\n\n"
# The groups `twinkle-hf benchmarks` lists, in order (suites come last, from suites.py).
GROUPS = ("knowledge", "commonsense", "reading and logic", "science and medicine", "multilingual",
          "Chinese and Taiwanese")
# Fields left out of the hash at their defaults: an entry that does not use one keeps the hash that
# recorded results hold.
LATER_FIELDS = ("adapter", "question_block", "option_format", "option_formats", "cloze_delimiter", "cloze_scoring",
                "gold_position",
                "subjects", "variant_configs", "mc2")
NOT_HASHED = ("title", "license", "group", "suite")  # what does not change a prompt


@dataclass(frozen=True)
class Benchmark:
    """One benchmark as lm-eval runs it (``lm_eval_task``), or as its authors do where lm-eval has no
    letter-scored task (``lm_eval_note`` says what lm-eval does instead)."""

    name: str
    title: str  # what it is, in a few words
    hub_id: str  # "{subject}" in it: a Hub dataset per subject (AGIEval)
    hub_config: str | None  # the config evaluated ({variant} is filled in), None: the default
    eval_split: str
    fewshot_splits: tuple[str, ...]  # the few-shot pool: the first of these a copy holds; () none
    layout: str  # a key of catalog.RELEASE_LAYOUTS: how a local copy of the release is laid out
    columns: tuple[tuple[str, str], ...] = ()  # column map (canonical field -> column), () detect
    fewshot_scope: str = "subject"  # subject: each subject's own first k; all: the pool's first k
    description: str = EN_DESCRIPTION  # "{subject}" is the subject with spaces, "{language}" the variant's; "" none
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
    cloze_question: str = "Question: {question}\nAnswer:"  # "{options}" in it: lm-eval shows them (LogiQA)
    cloze_description: str = ""
    cloze_strip: bool = False
    group: str = "knowledge"  # one of GROUPS
    adapter: str = ""  # adapters.ADAPTERS key: builds question/choices/answer from the Hub columns ("" detect)
    question_block: str = "{question}\n{options}\n"  # the letter prompt before the cue
    option_format: str = "{letter}. {text}"
    option_formats: tuple[str, ...] = ()  # per displayed position, where lm-eval's lines differ (INCLUDE's " D.")
    cloze_delimiter: str = " "  # lm-eval's target_delimiter before an option text (COPA's choices add a space)
    cloze_scoring: str = ""  # "partial": the option fills a blank, the rest is scored (Winogrande)
    gold_position: str = ""  # where the release always lists the gold option ("first", "last"); "" anywhere
    subjects: tuple[str, ...] = ()  # the subjects (Hub configs) when no subject table lists them
    variant_configs: tuple[tuple[str, str, str], ...] = ()  # (variant, Hub config, language name)
    mc2: bool = False  # TruthfulQA MC2: also the normalised probability mass on the true answers
    suite: str = ""  # the suite (suites.py) this run of the entry belongs to, "" none

    @property
    def formulations(self) -> dict[str, str]:
        """lm-eval's task for each formulation this entry asks: ``letters`` (MCF) and ``cloze`` (CF)."""
        return {"letters": self.lm_eval_task.format(variant=self.variant),
                "cloze": self.cloze_task.format(variant=self.variant)}

    @property
    def display(self) -> str:
        """``name`` or ``name:variant``: how it is named in results."""
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @property
    def config(self) -> str | None:
        """The Hub config of the chosen variant."""
        for variant, config, _ in self.variant_configs:
            if variant == self.variant:
                return config
        return self.hub_config.format(variant=self.variant) if self.hub_config else None

    @property
    def language_name(self) -> str:
        """The chosen variant's language as lm-eval's descriptions name it ("" none)."""
        return next((label for variant, _, label in self.variant_configs if variant == self.variant), "")

    def resolved_hash(self, k: int, subjects: tuple[str, ...] = ()) -> str:
        """sha256 of everything that decides the prompts and splits of a run: the entry, k, subjects."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        entry = {key: value for key, value in dataclasses.asdict(self).items()
                 if key not in NOT_HASHED and (self.cloze_task or not key.startswith("cloze_"))
                 and not (key in LATER_FIELDS and value == defaults[key])}  # as before those fields existed
        text = json.dumps({"entry": entry, "num_fewshot": k, "subjects": list(subjects)}, sort_keys=True,
                          ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def summary(self) -> dict[str, Any]:
        """What results.json records about the benchmark (besides its hash)."""
        return {"name": self.display, "hub_id": self.hub_id, "config": self.config, "split": self.eval_split,
                "fewshot_split": self.fewshot_splits[0] if self.fewshot_splits else None,
                "fewshot_scope": self.fewshot_scope, "aggregate": self.aggregate,
                "lm_eval_task": self.lm_eval_task.format(variant=self.variant) or None,
                "lm_eval_cloze_task": self.cloze_task.format(variant=self.variant) or None,
                **({"suite": self.suite} if self.suite else {})}
