"""--benchmark NAME asks every question exactly as lm-evaluation-harness's own installed task does.

A reviewer's check, per benchmark lm-eval scores by letters: write a local copy in the release's own
layout, load it by name, and load lm-eval's task definition (its YAML from the installed package,
includes and ``!function`` hooks resolved) with only ``dataset_path``/``dataset_kwargs`` pointed at the
same documents; render every question with lm-eval's ``fewshot_context`` at k = 0 and k = 2 (and its
default k), and compare byte for byte, continuations (" A", ...) included. Unshuffled predictions of
a tiny random model are compared with lm-eval's ``HFLM.loglikelihood`` on lm-eval's own requests.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest
from benchmark_files import write_ceval, write_cmmlu, write_global_mmlu, write_mmlu, write_mmlu_pro, write_tmmluplus
from helpers import MMLU_DIR, SHARED, make_model, make_tokenizer, save_model_dir

from twinkle_hf.data.catalog import load_named
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.prompts.prepare import _prompt_texts
from twinkle_hf.prompts.templates import benchmark_template
from twinkle_hf.schema import index_to_letter
from twinkle_hf.settings.config import EvalConfig

pytest.importorskip("lm_eval", reason="lm-eval is not installed: pip install lm-eval==0.4.13 (.ci/run installs it)")
logging.getLogger("lm_eval").setLevel(logging.ERROR)
MMLU_SUBJECTS = ["abstract_algebra", "anatomy", "high_school_european_history", "moral_scenarios"]
GLOBAL_MMLU_JA = SHARED / "data" / "global_mmlu_dev" / "ja_dev_edited.jsonl"


@functools.cache
def _task_index() -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager().task_index


@functools.cache
def _documents(builder: str, files: tuple[tuple[str, str], ...]) -> Any:
    """The files as a DatasetDict, read once with `datasets`' own json/parquet builder."""
    import datasets

    return datasets.load_dataset(builder, data_files=dict(files))


def lm_eval_task(name: str, builder: str, files: dict[str, str]) -> Any:
    """lm-eval's own task ``name`` (its installed YAML, resolved), its documents read from ``files``
    instead of the Hub (lm-eval's ``custom_dataset`` hook: the files are read once for all the
    subjects' tasks that share them, not once per task)."""
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    cfg = load_yaml(_task_index()[name].yaml_path, resolve_func=True)
    for key in ("tag", "group", "task_list"):
        cfg.pop(key, None)
    documents = _documents(builder, tuple(sorted(files.items())))
    cfg.update(dataset_path=builder, dataset_name=None, dataset_kwargs=None,
               custom_dataset=lambda **_: documents)
    return ConfigurableTask(config=cfg)


def lm_eval_prompts(task: Any, k: int) -> list[tuple[str, list[str]]]:
    """(context, continuations) of every evaluated document, as lm-eval builds its requests."""
    docs = list(task.eval_docs)
    delimiter = task.config.target_delimiter
    return [(task.fewshot_context(doc, k), [delimiter + c for c in task.doc_to_choice(doc)]) for doc in docs]


def our_prompts(argument: str, k: int, tokenizer: Any) -> tuple[Any, dict[str, list[tuple[str, list[str]]]]]:
    """Per subject, in file order, (prompt, continuations) of --benchmark ``argument``, unshuffled."""
    data = load_named(argument)
    rows, texts = prompt_texts(data, k, tokenizer)
    prefix = benchmark_template(data.benchmark, {}).label_prefix
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for subject, text, choices in zip(rows["subject"], texts, rows["choices"]):
        out.setdefault(subject, []).append((text, [prefix + index_to_letter(i) for i in range(len(choices))]))
    return data, out


def compare(argument: str, lm_files: dict[str, tuple[str, dict[str, str]]], subject_of: Any, ks: tuple[int, ...],
            tokenizer: Any, counts: dict[str, tuple[int, int]]) -> None:
    """Every prompt and continuation equal; counts[benchmark] = (compared, identical)."""
    compared = identical = 0
    for k in ks:
        _, ours = our_prompts(argument, k, tokenizer)
        assert set(ours) == {subject_of(task) for task in lm_files} or len(lm_files) == 1
        for task_name, (builder, files) in lm_files.items():
            theirs = lm_eval_prompts(lm_eval_task(task_name, builder, files), k)
            mine = ours[subject_of(task_name)] if len(lm_files) > 1 else [p for v in ours.values() for p in v]
            if len(lm_files) == 1:  # one lm-eval task over every subject, in file order
                mine = _file_order(argument, k, tokenizer)
            assert len(mine) == len(theirs), task_name
            for i, (a, b) in enumerate(zip(mine, theirs)):
                compared += 1
                identical += a == b
                assert a == b, f"{task_name} k={k} doc {i}:\nours:   {a!r}\nlm-eval: {b!r}"
    counts[argument.split("=")[0]] = (compared, identical)


def _file_order(argument: str, k: int, tokenizer: Any) -> list[tuple[str, list[str]]]:
    data = load_named(argument)
    rows, texts = prompt_texts(data, k, tokenizer)
    prefix = benchmark_template(data.benchmark, {}).label_prefix
    return [(t, [prefix + index_to_letter(i) for i in range(len(c))]) for t, c in zip(texts, rows["choices"])]


def prompt_texts(data: Any, k: int, tokenizer: Any) -> tuple[Any, list[str]]:
    """The unshuffled rows and their prompt texts, as prepare_dataset builds them before tokenizing
    (tokenizing 14,042 5-shot prompts with the tiny BPE would cost minutes and prove nothing here;
    the prediction test below runs the whole path)."""
    rows = expand_permutations(data.rows, "none", 0, 1, False)
    texts, _, _ = _prompt_texts(EvalConfig(num_fewshot=k), data, rows, tokenizer)
    return rows, texts


COUNTS: dict[str, tuple[int, int]] = {}


@pytest.fixture(scope="module")
def tokenizer():
    """The tests' tiny BPE, also knowing " G" ... " J" (MMLU-Pro has up to 10 options)."""
    return make_tokenizer(extra=("Answer: G Answer: H Answer: I Answer: J",))


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    if COUNTS:
        print("\nprompts compared / identical with lm-eval: "
              + ", ".join(f"{name} {c}/{i}" for name, (c, i) in sorted(COUNTS.items())))


def test_mmlu_matches_lm_eval(tmp_path, tokenizer):
    """All 57 subjects of the real MMLU, 5-shot (every test question), and 4 of them zero-shot."""
    if not MMLU_DIR.is_dir():
        pytest.skip(f"real MMLU not found: {MMLU_DIR} (set TWINKLE_HF_SHARED; see the README's Test section)")
    subjects = sorted(p.name.removesuffix("_test.csv") for p in (MMLU_DIR / "test").glob("*_test.csv"))
    assert len(subjects) == 57
    root, files = write_mmlu(tmp_path / "all", MMLU_DIR, subjects)
    compare(f"mmlu={root}", files, lambda t: t.removeprefix("mmlu_"), (5,), tokenizer, COUNTS)
    five = COUNTS.pop("mmlu")
    root, files = write_mmlu(tmp_path / "some", MMLU_DIR, MMLU_SUBJECTS)
    compare(f"mmlu={root}", files, lambda t: t.removeprefix("mmlu_"), (0,), tokenizer, COUNTS)
    COUNTS["mmlu"] = tuple(a + b for a, b in zip(five, COUNTS["mmlu"]))  # type: ignore[assignment]


def test_cmmlu_matches_lm_eval(tmp_path, tokenizer):
    root, files = write_cmmlu(tmp_path, ["agronomy", "high_school_physics"])
    compare(f"cmmlu={root}", files, lambda t: t.removeprefix("cmmlu_"), (0, 2, 5), tokenizer, COUNTS)


def test_ceval_matches_lm_eval(tmp_path, tokenizer):
    root, files = write_ceval(tmp_path, ["accountant", "high_school_physics"])
    compare(f"ceval={root}", files, lambda t: t.removeprefix("ceval-valid_"), (0, 2, 5), tokenizer, COUNTS)


def test_tmmluplus_matches_lm_eval(tmp_path, tokenizer):
    root, files = write_tmmluplus(tmp_path, ["accounting", "taiwanese_hokkien"])
    compare(f"tmmluplus={root}", files, lambda t: t.removeprefix("tmmluplus_"), (0, 2, 5), tokenizer, COUNTS)


def test_mmlu_pro_matches_lm_eval(tmp_path, tokenizer):
    root, files = write_mmlu_pro(tmp_path)
    compare(f"mmlu_pro={root}", files, lambda t: t, (0, 2, 5), tokenizer, COUNTS)


def test_global_mmlu_matches_lm_eval(tmp_path, tokenizer):
    if not GLOBAL_MMLU_JA.is_file():
        pytest.skip(f"Global-MMLU dev rows not found: {GLOBAL_MMLU_JA} (set TWINKLE_HF_SHARED)")
    root, files = write_global_mmlu(tmp_path, GLOBAL_MMLU_JA, "ja")
    compare(f"global_mmlu:ja={root}", files, lambda t: t.removeprefix("global_mmlu_full_ja_"), (0, 2),
            tokenizer, COUNTS)


def test_a_changed_template_is_caught(tmp_path, tokenizer, monkeypatch):
    """The check can fail: CMMLU's cue without its full-width colon differs from lm-eval's task."""
    import dataclasses

    from twinkle_hf.data import registry

    root, files = write_cmmlu(tmp_path, ["agronomy"])
    broken = dataclasses.replace(registry.BENCHMARKS["cmmlu"], answer_cue="答案:")
    monkeypatch.setitem(registry.BENCHMARKS, "cmmlu", broken)
    with pytest.raises(AssertionError, match="cmmlu_agronomy k=0 doc 0"):
        compare(f"cmmlu={root}", files, lambda t: t.removeprefix("cmmlu_"), (0,), tokenizer, {})


def test_unshuffled_predictions_equal_lm_eval(tmp_path, tokenizer):
    """The same tiny model scored by twinkle_hf and by lm-eval's HFLM on lm-eval's own requests picks the
    same option for every question, on every benchmark above (2-shot)."""
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM

    from twinkle_hf.evaluation import evaluate

    folder = save_model_dir(tmp_path / "model", tokenizer, make_model(tokenizer))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=8)
    cases = [write_cmmlu(tmp_path, ["agronomy"]) + ("cmmlu",), write_ceval(tmp_path, ["accountant"]) + ("ceval",),
             write_tmmluplus(tmp_path, ["accounting"]) + ("tmmluplus",), write_mmlu_pro(tmp_path) + ("mmlu_pro",)]
    if MMLU_DIR.is_dir():
        cases.append(write_mmlu(tmp_path, MMLU_DIR, ["anatomy"]) + ("mmlu",))
    if GLOBAL_MMLU_JA.is_file():  # two subjects whose Japanese fits the tiny model's context in bytes
        root, files = write_global_mmlu(tmp_path, GLOBAL_MMLU_JA, "ja")
        keep = ("global_mmlu_full_ja_abstract_algebra", "global_mmlu_full_ja_anatomy")
        cases.append((root, {task: files[task] for task in keep}, "global_mmlu:ja"))
    cfg = EvalConfig(num_fewshot=2, batch_size=8, bootstrap=0)
    for root, files, name in cases:
        subjects = tuple(t.removeprefix("global_mmlu_full_ja_") for t in files) if name == "global_mmlu:ja" else ()
        data = load_named(f"{name}={root}", subjects=subjects)
        ours = evaluate(model, tokenizer, [data], cfg, progress=False).predictions
        theirs = []
        for task_name, (builder, paths) in files.items():
            task = lm_eval_task(task_name, builder, paths)
            for i, (ctx, conts) in enumerate(lm_eval_prompts(task, 2)):
                requests = [Instance(request_type="loglikelihood", doc={}, arguments=(ctx, c), idx=j, doc_id=i)
                            for j, c in enumerate(conts)]
                scores = [ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True)]
                theirs.append(max(range(len(scores)), key=scores.__getitem__))
        assert list(ours.pred) == theirs, name
        COUNTS[f"{name} predictions"] = (len(theirs), sum(int(a == b) for a, b in zip(ours.pred, theirs)))
