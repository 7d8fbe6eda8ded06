"""--benchmark NAME[=PATH]: the registry, local copies in each release's layout, and the errors a user
meets (one line, exit 2): an unknown name, a folder in the wrong layout, a gated or uncached Hub id."""

from __future__ import annotations

import json

import pytest
from benchmark_files import write_ceval, write_cmmlu, write_mmlu_pro, write_tmmluplus

from twinkle_hf.cli import main
from twinkle_hf.data.catalog import find_benchmark, load_named
from twinkle_hf.data.registry import ALIASES, BENCHMARKS, TWINKLE_EVAL_NAMES
from twinkle_hf.errors import TwinkleError


def test_registry_entries_are_complete():
    for name, entry in BENCHMARKS.items():
        assert entry.name == name and entry.hub_id.count("/") == 1 and entry.license and entry.eval_split
        assert entry.aggregate in ("micro", "macro") and entry.fewshot_scope in ("subject", "all")
        assert entry.lm_eval_task or entry.lm_eval_note, f"{name}: say how lm-eval runs it"
    assert set(TWINKLE_EVAL_NAMES) <= set(BENCHMARKS)
    assert all(target in BENCHMARKS for target in ALIASES.values())
    assert {"mmlu", "cmmlu", "ceval", "tmmluplus", "mmlu_pro", "mmlu_redux", "global_mmlu", "arc_challenge",
            "arc_easy", "gpqa", "supergpqa"} <= set(BENCHMARKS)


def test_names_aliases_and_variants():
    assert find_benchmark("MMLU-Pro").name == "mmlu_pro"
    assert find_benchmark("global_mmlu:ja").display == "global_mmlu:ja"
    assert find_benchmark("global_mmlu").config == "en"
    assert find_benchmark("gpqa:diamond").config == "gpqa_diamond"
    with pytest.raises(TwinkleError, match="did you mean mmlu_pro"):
        find_benchmark("mmlu_prp")
    with pytest.raises(TwinkleError, match="no variant 'xx'; choose one of en, "):
        find_benchmark("global_mmlu:xx")


@pytest.mark.parametrize("name, writer, subjects, rows, fewshot", [
    ("cmmlu", write_cmmlu, ["agronomy", "anatomy"], 14, 10),
    ("ceval", write_ceval, ["accountant", "law"], 12, 10),  # val evaluated, dev the pool; ids made (restart per file)
    ("tmmluplus", write_tmmluplus, ["accounting", "geography_of_taiwan"], 14, 10),  # dev files = Hub's train
])
def test_release_layouts_load_by_name(tmp_path, name, writer, subjects, rows, fewshot):
    root, _ = writer(tmp_path, subjects)
    data = load_named(f"{name}={root}")
    assert (data.name, len(data.rows), len(data.fewshot)) == (name, rows, fewshot)
    assert sorted(set(data.rows["subject"])) == sorted(subjects)
    one = load_named(f"{name}={root}", subjects=(subjects[1],))
    assert set(one.rows["subject"]) == set(one.fewshot["subject"]) == {subjects[1]}


def test_mmlu_pro_snapshot_keeps_options_and_pools_all_categories(tmp_path):
    root, _ = write_mmlu_pro(tmp_path)
    data = load_named(f"mmlu_pro={root}", subjects=("law",))
    assert set(data.rows["subject"]) == {"law"} and len(set(data.fewshot["subject"])) == 3  # lm-eval: one pool
    assert max(len(c) for c in data.rows["choices"]) == 10 and any("N/A" in c for c in data.rows["choices"])


def test_gpqa_gets_one_seeded_order(tmp_path):
    import csv

    path = tmp_path / "gpqa" / "gpqa_diamond.csv"
    path.parent.mkdir()
    header = ["Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3",
              "Record ID", "High-level domain"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header] + [[f"q{i}", f"right {i}", "w1", "w2", "w3", f"rec{i}", "Physics"]
                                             for i in range(40)])
    data = load_named(f"gpqa:diamond={path.parent}")
    golds = data.rows["answer"]
    assert all(c[a] == f"right {i}" for i, (c, a) in enumerate(zip(data.rows["choices"], golds)))
    assert len(set(golds)) == 4  # the gold answer is not always listed first
    assert list(load_named(f"gpqa:diamond={path}").rows["answer"]) == golds  # the same order every time


def one_error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    return err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, tiny_model_dir, monkeypatch):
    model = ["--model", str(tiny_model_dir), "--output-dir", str(tmp_path / "out"), "--quiet"]
    assert "did you mean mmlu_pro" in one_error_line(capsys, [*model, "--benchmark", "mmlu_prp"])
    (tmp_path / "wrong" / "stuff").mkdir(parents=True)
    (tmp_path / "wrong" / "notes.txt").write_text("x")
    err = one_error_line(capsys, [*model, "--benchmark", f"ceval={tmp_path / 'wrong'}"])
    assert "expected C-Eval's release: {dev,val,test}/<subject>_<split>.csv" in err
    assert "found: notes.txt, stuff/" in err
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_cache"))
    import datasets
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "empty_cache" / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "empty_cache" / "datasets")
    err = one_error_line(capsys, [*model, "--offline", "--benchmark", "cmmlu"])
    assert "not in the local cache and offline mode is on; pass a local copy: --benchmark cmmlu=PATH" in err
    assert "(the Hub's is gated); pass --benchmark gpqa:main=PATH" in one_error_line(capsys, [*model, "--benchmark",
                                                                                          "gpqa"])
    assert "--subjects: cmmlu has no subject 'agronomyy' (did you mean agronomy?)" in one_error_line(
        capsys, [*model, "--benchmark", f"cmmlu={write_cmmlu(tmp_path, ['agronomy'])[0]}", "--subjects", "agronomyy"])


def test_a_run_by_name_records_the_benchmark(tmp_path, tiny_model_dir, capsys):
    root, _ = write_cmmlu(tmp_path, ["agronomy", "anatomy"])
    out = tmp_path / "run"
    argv = ["--model", str(tiny_model_dir), "--benchmark", f"cmmlu={root}", "--num-fewshot", "1", "--output-dir",
            str(out), "--quiet"]
    assert main(argv) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    record = doc["benchmarks"]["cmmlu"]
    assert record["hub_id"] == "haonan-li/cmmlu" and record["num_fewshot"] == 1 and record["subjects"] == 2
    assert record["lm_eval_task"] == "cmmlu" and len(record["hash"]) == 64
    assert doc["datasets"]["cmmlu"]["metrics"]["accuracy_macro"]["n_subjects"] == 2
    assert doc["metrics"]["accuracy_micro"]["value"] == doc["metrics"]["accuracy"]["value"]
    assert main([*argv[:-3], "--num-fewshot", "0", "--output-dir", str(tmp_path / "run0"), "--quiet"]) == 0
    other = json.loads((tmp_path / "run0" / "results.json").read_text(encoding="utf-8"))["benchmarks"]["cmmlu"]
    assert other["hash"] != record["hash"]  # k is part of the resolved entry


def test_listing_and_one_prompt(capsys, tmp_path):
    assert main(["benchmarks"]) == 0
    table = capsys.readouterr().out
    for name in BENCHMARKS:
        assert f"| {name}" in table
    assert "score the option texts" in table  # ARC: what lm-eval's default task does instead
    root, _ = write_cmmlu(tmp_path, ["agronomy"])
    assert main(["benchmarks", f"cmmlu={root}", "--num-fewshot", "1"]) == 0
    shown = capsys.readouterr().out
    assert "以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n" in shown and "答案： " in shown
    assert shown.count("答案：") == 2


def test_every_form_of_a_copy_asks_the_same_questions(tmp_path):
    """MMLU's release folder, a Hub save_to_disk folder and a Hub parquet snapshot (cais/mmlu's schema,
    config ``all``) of the same rows give the same prompts, 2-shot."""
    import csv

    import datasets
    from benchmark_files import awkward_rows

    from twinkle_hf.prompts.permute import expand_permutations
    from twinkle_hf.prompts.templates import benchmark_template, build_prompt_set

    hub: dict[str, list[dict]] = {"test": [], "dev": []}
    for subject in ("anatomy", "college_physics"):
        for split, n in (("dev", 3), ("test", 5)):
            rows = awkward_rows(f"{subject} {split}", n)
            folder = tmp_path / "release" / "data" / split
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / f"{subject}_{split}.csv", "w", newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerows(rows)
            hub[split] += [{"question": r[0], "subject": subject, "choices": r[1:5], "answer": "ABCD".index(r[5])}
                           for r in rows]
    dd = datasets.DatasetDict({split: datasets.Dataset.from_list(docs) for split, docs in hub.items()})
    dd.save_to_disk(str(tmp_path / "disk"))
    for split, ds in dd.items():
        (tmp_path / "snapshot" / "all").mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(tmp_path / "snapshot" / "all" / f"{split}-00000-of-00001.parquet"))

    def prompts(folder: str) -> list[str]:
        data = load_named(f"mmlu={tmp_path / folder}")
        rows = expand_permutations(data.rows, "none", 0, 1, False)
        return build_prompt_set(rows, benchmark_template(data.benchmark, {}), num_fewshot=2, pool=data.fewshot,
                                self_pool=data.rows).texts

    release = prompts("release")
    assert len(release) == 10 and "about college physics.\n\n" in release[-1]
    assert prompts("disk") == release and prompts("snapshot") == release


def test_yaml_names_benchmarks_and_subjects():
    from twinkle_hf.settings.config import build_config

    cfg = build_config({"benchmarks": ["mmlu", "cmmlu=data/cmmlu"], "subjects": "anatomy, astronomy"})
    assert cfg.benchmarks == ("mmlu", "cmmlu=data/cmmlu") and cfg.subjects == ("anatomy", "astronomy")
    assert build_config({"benchmarks": "mmlu"}).benchmarks == ("mmlu",)
    with pytest.raises(TwinkleError, match="benchmarks must be a name or a list of names"):
        build_config({"benchmarks": [1]})


def test_hub_configs_per_subject_are_read_one_by_one(tmp_path, monkeypatch):
    """CMMLU on the Hub has a config per subject and no subject column: `--benchmark cmmlu` reads each
    subject's config from the cache and names its rows by it; the questions equal the release's."""
    import datasets

    from twinkle_hf.data import catalog, hub

    root, lm_files = write_cmmlu(tmp_path, ["agronomy", "anatomy"])
    asked: list[str] = []
    real_load = catalog.load_benchmark

    def cached(source: str, **kwargs):  # the Hub cache, as save_to_disk folders of the Hub's schema
        if ":" not in source:  # a local path
            return real_load(source, **kwargs)
        asked.append(source)
        subject = source.split(":")[1]
        folder = tmp_path / "cache" / subject
        if not folder.exists():
            files = lm_files[f"cmmlu_{subject}"][1]
            splits = {split: datasets.Dataset.from_json(path) for split, path in files.items()}
            datasets.DatasetDict(splits).save_to_disk(str(folder))
        return real_load(str(folder), **kwargs)

    monkeypatch.setattr(catalog, "load_benchmark", cached)
    monkeypatch.setattr(hub, "hub_cached", lambda repo, kind="model": True)
    from_hub = load_named("cmmlu", subjects=("anatomy", "agronomy"))
    assert asked == ["haonan-li/cmmlu:anatomy", "haonan-li/cmmlu:agronomy"]
    release = load_named(f"cmmlu={root}")
    for split in ("rows", "fewshot"):
        mine, theirs = getattr(from_hub, split), getattr(release, split)
        key = lambda t: sorted(zip(t["subject"], t["question"], map(tuple, t["choices"]), t["answer"]))
        assert key(mine) == key(theirs)


def _parquet(path, docs) -> None:
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(docs).to_parquet(str(path))


def test_the_other_benchmarks_run_from_hub_shaped_copies(tmp_path):
    """mmlu_redux (a folder per subject), ARC (its config's folder, {text, label} options, numeric
    labels), SuperGPQA (its one JSON Lines file) and formosa_bench (Twinkle Eval's <subject>.parquet)."""
    import json

    from twinkle_hf.prompts.permute import expand_permutations
    from twinkle_hf.prompts.templates import benchmark_template, build_prompt_set

    for subject in ("anatomy", "virology"):
        _parquet(tmp_path / "redux" / subject / "test-00000-of-00001.parquet",
                 [{"question": f"{subject} q{i}", "choices": ["a", "b", "c", "d"], "answer": i % 4,
                   "error_type": "ok"} for i in range(3)])
    for split in ("train", "test"):
        _parquet(tmp_path / "arc" / "ARC-Challenge" / f"{split}-00000-of-00001.parquet",
                 [{"id": f"{split}{i}", "question": f"arc {split} {i}",
                   "choices": {"text": list("xyzwv")[:3 + i % 3], "label": list("12345")[:3 + i % 3]},
                   "answerKey": "2"} for i in range(4)])
    (tmp_path / "supergpqa").mkdir()
    (tmp_path / "supergpqa" / "SuperGPQA-all.jsonl").write_text("".join(
        json.dumps({"uuid": f"u{i}", "question": f"sg {i}", "options": [f"o{j}" for j in range(10)],
                    "answer": "o3", "answer_letter": "D", "discipline": "Science"}) + "\n" for i in range(3)))
    for subject in ("geography", "history"):
        _parquet(tmp_path / "formosa" / f"{subject}.parquet",
                 [{"question": f"{subject} {i}", "A": "甲", "B": "乙", "C": "丙", "D": "丁", "answer": "C"}
                  for i in range(2)])
    cases = {"mmlu_redux": ("redux", 6, "about anatomy.\n\nanatomy q0\nA. a"),
             "arc_challenge": ("arc", 4, "arc test 0\nA. x\nB. y\nC. z\nAnswer:"),
             "supergpqa": ("supergpqa/SuperGPQA-all.jsonl", 3, "sg 0\nA. o0"),
             "formosa_bench": ("formosa", 4, "geography 0\nA. 甲")}
    for name, (folder, n, start) in cases.items():
        data = load_named(f"{name}={tmp_path / folder}")
        assert len(data.rows) == n, name
        rows = expand_permutations(data.rows, "none", 0, 1, False)
        first = build_prompt_set(rows, benchmark_template(data.benchmark, {}), self_pool=data.rows).texts[0]
        assert first.startswith(start) or start in first, (name, first)
    arc = load_named(f"arc_challenge={tmp_path / 'arc'}")
    assert [len(c) for c in arc.rows["choices"]] == [3, 4, 5, 3] and set(arc.rows["answer"]) == {1}
    assert load_named(f"supergpqa={tmp_path / 'supergpqa' / 'SuperGPQA-all.jsonl'}").rows["answer"][:] == [3, 3, 3]

