"""Every other benchmark with an lm-eval task asks exactly as lm-evaluation-harness's installed task.

Per benchmark: a small copy in its Hub schema (``benchmark_docs.py``) is written once; ``--benchmark
NAME=PATH`` and lm-eval's own task (its YAML and ``utils`` hooks, documents read from the same files)
render every document, and each request (context, continuation) is compared byte for byte: the letter
prompts where lm-eval scores letters, the option-text (cloze) requests where it scores the texts,
Winogrande's partial requests (a context per filled-in option, the rest of the sentence scored).
Few-shot (k = 2) where lm-eval's task takes the first examples (``first_n``); its other tasks draw
them at random, and their default is zero-shot. Then every entry is scored end to end with one tiny
random model: twinkle_hf's unshuffled picks (letters, or cloze acc and acc_norm) equal those from
lm-eval's ``HFLM.loglikelihood`` on lm-eval's own requests, question by question. The headlines
lm-eval's own evaluator reports (Winogrande's acc, TruthfulQA MC2's mass) are in test_lm_eval_headlines.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchmark_docs as docs
import numpy as np
import pytest
from helpers import make_tokenizer
from test_benchmark_fidelity import lm_eval_task, prompt_texts

from twinkle_hf.data.catalog import load_named
from twinkle_hf.prompts.cloze import cloze_texts
from twinkle_hf.prompts.templates import benchmark_template
from twinkle_hf.schema import index_to_letter
from twinkle_hf.settings.config import EvalConfig

pytest.importorskip("lm_eval", reason="lm-eval is not installed: pip install lm-eval==0.4.13 (.ci/run installs it)")
logging.getLogger("lm_eval").setLevel(logging.ERROR)
Requests = list[list[tuple[str, str]]]  # per document: (context, continuation) per option


@dataclass(frozen=True)
class Case:
    argument: str  # NAME or NAME:VARIANT
    make: Any  # benchmark_docs writer of one split's documents
    splits: dict[str, int]
    tasks: dict[str, str | None]  # lm-eval task -> the subject (config folder) it asks; None: all rows
    configs: tuple[str, ...] = ("default",)  # folders of the snapshot (a subject each, or the variant's config)
    cloze: bool = False  # lm-eval scores the option texts
    ks: tuple[int, ...] = (0,)
    makers: dict[str, Any] = field(default_factory=dict)  # config -> its own writer (else ``make``)


TRAIN = {"test": 6, "train": 4}
CASES = {
    "openbookqa": Case("openbookqa", docs.openbookqa, TRAIN, {"openbookqa": None}, ("main",), cloze=True),
    "commonsense_qa": Case("commonsense_qa", docs.commonsense_qa, {"validation": 6, "train": 3},
                           {"commonsense_qa": None}),
    "piqa": Case("piqa", docs.piqa, {"validation": 5, "train": 3}, {"piqa": None}, cloze=True),
    "siqa": Case("siqa", docs.siqa, {"validation": 5, "train": 3}, {"social_iqa": None}, cloze=True),
    "winogrande": Case("winogrande", docs.winogrande, {"validation": 8, "train": 3}, {"winogrande": None},
                       ("winogrande_xl",), cloze=True),
    "boolq": Case("boolq", docs.boolq, {"validation": 6, "train": 3}, {"boolq": None}, ("boolq",), cloze=True),
    "copa": Case("copa", docs.copa, {"validation": 6, "train": 3}, {"copa": None}, ("copa",), cloze=True),
    "xcopa": Case("xcopa:zh", docs.copa, {"test": 6, "validation": 3}, {"xcopa_zh": None}, ("zh",), cloze=True),
    "sciq": Case("sciq", docs.sciq, TRAIN, {"sciq": None}, cloze=True),
    "race": Case("race", docs.race, {"test": 5}, {"race": None}, ("high",), cloze=True),
    "logiqa": Case("logiqa", docs.logiqa, TRAIN, {"logiqa": None}, ("logiqa",), cloze=True),
    "logiqa2": Case("logiqa2", docs.logiqa2, TRAIN, {"logiqa2": None}, ("logiqa2",), cloze=True),
    "agieval": Case("agieval", docs.agieval, {"test": 5},
                    {"agieval_lsat_lr": "lsat-lr", "agieval_logiqa_zh": "logiqa-zh"},
                    ("lsat-lr", "logiqa-zh"), cloze=True),
    "truthfulqa_mc1": Case("truthfulqa_mc1", docs.truthfulqa, {"validation": 5}, {"truthfulqa_mc1": None},
                           ("multiple_choice",), cloze=True),
    "truthfulqa_mc2": Case("truthfulqa_mc2", docs.truthfulqa, {"validation": 5}, {"truthfulqa_mc2": None},
                           ("multiple_choice",), cloze=True),
    "medqa": Case("medqa", docs.medqa, TRAIN, {"medqa_4options": None}),
    "medmcqa": Case("medmcqa", docs.medmcqa, {"validation": 6, "train": 3}, {"medmcqa": None}),
    "pubmedqa": Case("pubmedqa", docs.pubmedqa, TRAIN, {"pubmedqa": None}, ("pubmed_qa_labeled_fold0_source",),
                     cloze=True),
    "belebele": Case("belebele:zho_Hant", docs.belebele, {"test": 6}, {"belebele_zho_Hant": None}, ("zho_Hant",),
                     ks=(0, 2)),
    "mmmlu": Case("mmmlu:ja_jp", docs.mmmlu, {"test": 9},
                  {"mmmlu_ja_jp_abstract_algebra": "abstract_algebra", "mmmlu_ja_jp_college_mathematics":
                   "college_mathematics", "mmmlu_ja_jp_anatomy": "anatomy"}, ("JA_JP",), ks=(0, 2)),
    "include": Case("include:greek", docs.include, {"test": 6}, {"include_base_44_greek_stem": "STEM",
                    "include_base_44_greek_social_science": "Social Science"}, ("Greek",)),
    "kmmlu": Case("kmmlu", docs.kmmlu, {"test": 5, "dev": 3}, {"kmmlu_accounting": "Accounting",
                  "kmmlu_agricultural_sciences": "Agricultural-Sciences"}, ("Accounting", "Agricultural-Sciences")),
    "arabicmmlu": Case("arabicmmlu", docs.arabicmmlu, {"test": 6, "dev": 3},
                       {"arabicmmlu_biology_high_school": "Biology (High School)",
                        "arabicmmlu_accounting_university": "Accounting (University)"},
                       ("Biology (High School)", "Accounting (University)"), ks=(0, 2)),
    "tmlu": Case("tmlu", docs.tmlu, {"test": 6, "dev": 3}, {"tmlu_AST_biology": "AST_biology",
                 "tmlu_AST_chemistry": "AST_chemistry"}, ("AST_biology", "AST_chemistry"), ks=(0, 2),
                 makers={"AST_chemistry": docs.tmlu5}),
}


def write_case(case: Case, root: Path) -> dict[str, dict[str, str]]:
    """The copy, and per config its {split: file}."""
    return {config: docs.write_snapshot(root, config, docs.make_docs(case.makers.get(config, case.make), case.splits))
            for config in case.configs}


def lm_eval_requests(task: Any, k: int) -> Requests:
    """lm-eval's requests per document: one context per option (partial scoring) or one for all."""
    delimiter = task.config.target_delimiter
    out = []
    for doc in task.eval_docs:
        context = task.fewshot_context(doc, k)
        if isinstance(context, list):  # Winogrande: the option is in the context, the target is shared
            out.append([(c, delimiter + task.doc_to_target(doc)) for c in context])
        else:
            out.append([(context, delimiter + c) for c in task.doc_to_choice(doc)])
    return out


def our_requests(argument: str, k: int, cloze: bool, tokenizer: Any) -> tuple[list[str], Requests]:
    """Per evaluated row, in order: its subject and its requests (letters or option texts), unshuffled."""
    data = load_named(argument)
    if cloze:
        rows, contexts, continuations = cloze_texts(data, EvalConfig(method="cloze", num_fewshot=k))
        return rows["subject"][:], [list(zip(c, t)) for c, t in zip(contexts, continuations)]
    rows, texts = prompt_texts(data, k, tokenizer)
    prefix = benchmark_template(data.benchmark, {}).label_prefix
    return rows["subject"][:], [[(t, prefix + index_to_letter(i)) for i in range(len(c))]
                                for t, c in zip(texts, rows["choices"][:])]


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.mark.parametrize("name", list(CASES))
def test_requests_match_lm_eval(name, tmp_path, tokenizer):
    case = CASES[name]
    files = write_case(case, tmp_path / name)
    compared = 0
    for k in case.ks:
        subjects, ours = our_requests(f"{case.argument}={tmp_path / name}", k, case.cloze, tokenizer)
        for task_name, subject in case.tasks.items():
            config = subject if subject in files else case.configs[0]
            theirs = lm_eval_requests(lm_eval_task(task_name, "parquet", files[config]), k)
            mine = [r for s, r in zip(subjects, ours) if subject is None or s == subject]
            assert len(mine) == len(theirs) > 0, (task_name, len(mine), len(theirs))
            for i, (a, b) in enumerate(zip(mine, theirs)):
                assert a == b, f"{task_name} k={k} doc {i}:\nours:    {a!r}\nlm-eval: {b!r}"
                compared += 1
    assert compared >= len(case.tasks)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """One tiny random model for the end-to-end tests: the tokenizer, the model, and lm-eval's HFLM on it."""
    import torch
    from helpers import make_model, save_model_dir
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM

    tokenizer = make_tokenizer(tuple(d["sentence"] for d in docs.winogrande("validation", 4)))
    folder = save_model_dir(tmp_path_factory.mktemp("tiny_lm") / "model", tokenizer, make_model(tokenizer, seed=3))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    return tokenizer, model, HFLM(pretrained=model, tokenizer=tokenizer, batch_size=16)


@pytest.mark.parametrize("name", list(CASES))
def test_predictions_equal_lm_eval_on_a_tiny_model(name, tmp_path, tiny_lm):
    """Every entry scored end to end, unshuffled, on the copy the request test reads: twinkle_hf's
    picks equal those computed from lm-eval's ``HFLM.loglikelihood`` on lm-eval's own requests,
    question by question, with the same tiny random model: the letter picked where lm-eval scores
    letters, the cloze acc and acc_norm picks (``--method cloze``) where it scores the option texts
    (COPA's doubled space, TruthfulQA's primer, BoolQ's passage among them); under Winogrande's partial
    scoring acc alone, as lm-eval's task reports it (no normalised pick). The gold option is lm-eval's,
    and lm-eval's own ``process_results`` scores each document as twinkle_hf does."""
    from twinkle_hf.evaluation import evaluate

    tokenizer, model, lm = tiny_lm
    case = CASES[name]
    k = 0  # few-shot prompts are compared above; here the scoring, kept quick
    files = write_case(case, tmp_path / name)
    method = {"method": "cloze"} if case.cloze else {}
    data = load_named(f"{case.argument}={tmp_path / name}")
    ours = evaluate(model, tokenizer, [data], EvalConfig(num_fewshot=k, batch_size=16, bootstrap=0, **method),
                    progress=False).predictions
    compared = 0
    for task_name, subject in case.tasks.items():
        config = subject if subject in files else case.configs[0]
        task = lm_eval_task(task_name, "parquet", files[config])
        mine = ours.select(np.array([subject is None or s == subject for s in ours.subject]))
        theirs = lm_eval_picks(task, lm, k)
        assert len(mine) == len(theirs["acc"]) > 0, (task_name, len(mine), len(theirs["acc"]))
        assert mine.pred.tolist() == theirs["acc"], f"{task_name}: acc picks"
        if case.cloze and task.multiple_input:  # partial scoring: lm-eval reports acc alone, and so do we
            assert [m["metric"] for m in task.config.metric_list] == ["acc"] and set(theirs["scores"]) == {"acc"}
            assert mine.cloze is not None
            assert set(mine.cloze.pred_norm.tolist()) == set(mine.cloze.pred_bytes.tolist()) == {-1}, \
                f"{task_name}: no acc_norm"
        elif case.cloze:
            assert mine.cloze is not None and mine.cloze.pred_norm.tolist() == theirs["acc_norm"], \
                f"{task_name}: acc_norm picks"
        assert mine.answer.tolist() == [lm_eval_gold(task, d) for d in task.eval_docs], f"{task_name}: gold"
        for metric, scores in theirs["scores"].items():  # lm-eval's own per-document acc / acc_norm
            pick = mine.cloze.pred_norm if metric == "acc_norm" and case.cloze and mine.cloze else mine.pred
            assert scores == (pick == mine.answer).astype(float).tolist(), f"{task_name}: {metric}"
        compared += len(mine)
    assert compared == len(ours)  # every evaluated question was one of lm-eval's documents


def lm_eval_picks(task: Any, lm: Any, k: int) -> dict[str, Any]:
    """lm-eval's picks per document from ``HFLM.loglikelihood`` on its requests: ``acc``'s (the
    largest sum) and ``acc_norm``'s (divided by each choice's characters, as its ``process_results``
    does; meaningless under partial scoring, where its choices are the filled-in sentence starts and
    its task reports acc alone), and the acc/acc_norm its ``process_results`` gives each document
    (where it computes them)."""
    from lm_eval.api.instance import Instance

    picks: dict[str, Any] = {"acc": [], "acc_norm": [], "scores": {}}
    docs = list(task.eval_docs)
    requests = lm_eval_requests(task, k)
    asked = [Instance(request_type="loglikelihood", doc=doc, arguments=p, idx=j, doc_id=i)
             for i, (doc, pairs) in enumerate(zip(docs, requests)) for j, p in enumerate(pairs)]
    answers = iter(lm.loglikelihood(asked, disable_tqdm=True))  # one call, batched as lm-eval batches a run
    for doc, pairs in zip(docs, requests):
        results = [next(answers) for _ in pairs]
        lls = np.array([ll for ll, _ in results])
        chars = np.array([float(len(c)) for c in task.doc_to_choice(doc)])
        picks["acc"].append(int(np.argmax(lls)))
        picks["acc_norm"].append(int(np.argmax(lls / chars)))
        if not task.config.process_results:  # TruthfulQA MC2's own hook gives the mass (tested below)
            for metric, value in task.process_results(doc, results).items():
                if metric in ("acc", "acc_norm"):
                    picks["scores"].setdefault(metric, []).append(float(value))
    return picks


def lm_eval_gold(task: Any, doc: dict) -> int:
    """The gold option's index as lm-eval reads it (Winogrande's doc_to_text is the index; COPA's
    target is the gold text; AGIEval's a one-index list)."""
    target = task.doc_to_target(doc)
    if task.multiple_input:
        return int(task.doc_to_text(doc))
    if isinstance(target, list):  # AGIEval's gold is a list of one index
        (target,) = target
    return task.doc_to_choice(doc).index(target) if isinstance(target, str) else int(target)
