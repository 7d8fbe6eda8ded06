"""--benchmark NAME=PATH from a downloaded dataset repository (``hf download REPO --repo-type dataset
--local-dir PATH``): the repository's own CSV or JSON/JSONL files, configs declared in the card's YAML
header or data files named by split, read offline with ``datasets`` and the entry's row adapter. Each
snapshot is written in two shapes by the test (the real repositories' files were not seen), and asks
exactly the rows the Hub's parquet layout of the same documents asks; that layout is checked against
lm-eval's own tasks in test_registry_fidelity.py."""

from __future__ import annotations

import json
from pathlib import Path

import benchmark_docs as docs
import pytest
from test_catalog import one_error_line

from twinkle_hf.data.catalog import load_named
from twinkle_hf.errors import TwinkleError

KMMLU_SUBJECTS = ("Accounting", "Agricultural-Sciences")
FIELDS = ("subject", "question", "choices", "answer")


def card(root: Path, configs: dict[str, dict[str, str]]) -> None:
    """README.md whose YAML header declares ``configs`` (config -> {split: path}), as the Hub's cards do."""
    lines = ["---", "license: cc-by-nd-4.0", "configs:"]
    for name, files in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in files.items()]
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("\n".join(lines + ["---", "", "# A dataset card", ""]), encoding="utf-8")


def rows_of(argument: str) -> tuple[list[tuple], list[tuple]]:
    """The evaluated rows and the few-shot pool, field by field (ids name the folder, so left out)."""
    data = load_named(argument)
    pool = data.fewshot[:] if data.fewshot is not None else {f: [] for f in FIELDS}
    return (list(zip(*(data.rows[f] for f in FIELDS))), list(zip(*(pool[f] for f in FIELDS))))


def parquet_copy(root: Path, configs: dict[str, docs.Docs]) -> Path:
    for config, split_docs in configs.items():
        docs.write_snapshot(root, config, split_docs)
    return root


def test_a_csv_repository_with_a_config_per_subject(tmp_path):
    """KMMLU's shape: data/<Subject>-{train,dev,test}.csv, a config per subject in the card."""
    import datasets

    made = {s: docs.make_docs(docs.kmmlu, {"train": 2, "dev": 3, "test": 5}) for s in KMMLU_SUBJECTS}
    repo = tmp_path / "KMMLU"
    card(repo, {s: {split: f"data/{s}-{split}.csv" for split in made[s]} for s in KMMLU_SUBJECTS})
    for subject, split_docs in made.items():
        for split, rows in split_docs.items():
            (repo / "data").mkdir(exist_ok=True)
            datasets.Dataset.from_list(rows).to_csv(str(repo / "data" / f"{subject}-{split}.csv"), index=False)
    ours = rows_of(f"kmmlu={repo}")
    assert ours == rows_of(f"kmmlu={parquet_copy(tmp_path / 'parquet', made)}")
    assert len(ours[0]) == 10 and len(ours[1]) == 6 and {r[0] for r in ours[0]} == set(KMMLU_SUBJECTS)
    only = load_named(f"kmmlu={repo}", subjects=("Accounting",))
    assert set(only.rows["subject"]) == {"Accounting"} and len(only.rows) == 5


def test_json_repositories_by_card_and_by_file_name(tmp_path):
    """Belebele's shape (a JSONL file per language, each a config of the card) and a repository
    without configs whose JSON Lines files are named by split (data/{train,test}.jsonl)."""
    made = docs.make_docs(docs.belebele, {"test": 6})
    repo = tmp_path / "belebele"
    card(repo, {"eng_Latn": {"test": "data/eng_Latn.jsonl"}, "zho_Hant": {"test": "data/zho_Hant.jsonl"}})
    (repo / "data").mkdir()
    for language in ("eng_Latn", "zho_Hant"):
        (repo / "data" / f"{language}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in made["test"]), encoding="utf-8")
    assert rows_of(f"belebele:zho_Hant={repo}") == \
        rows_of(f"belebele:zho_Hant={parquet_copy(tmp_path / 'parquet', {'zho_Hant': made})}")
    medqa = docs.make_docs(docs.medqa, {"test": 6, "train": 4})
    plain = tmp_path / "medqa"
    (plain / "data").mkdir(parents=True)
    for split, rows in medqa.items():
        (plain / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert rows_of(f"medqa={plain}") == rows_of(f"medqa={parquet_copy(tmp_path / 'medqa_parquet', {'default': medqa})}")
    with pytest.raises(TwinkleError, match="declares no config 'fra_Latn' for belebele:fra_Latn; it declares "
                                           "eng_Latn, zho_Hant"):
        load_named(f"belebele:fra_Latn={repo}")


def test_a_folder_in_no_layout_is_one_line_naming_the_layouts(tmp_path, capsys, tiny_model_dir):
    (tmp_path / "wrong" / "stuff").mkdir(parents=True)
    (tmp_path / "wrong" / "notes.txt").write_text("x")
    model = ["--model", str(tiny_model_dir), "--output-dir", str(tmp_path / "out"), "--quiet"]
    err = one_error_line(capsys, [*model, "--benchmark", f"kmmlu={tmp_path / 'wrong'}"])
    assert "a Hub parquet snapshot (<config>/<split>-*.parquet)" in err
    assert "a README.md whose YAML declares configs, or csv/json/jsonl data files named by split" in err
    assert "found: notes.txt, stuff/" in err
    card(tmp_path / "cardonly", {"Accounting": {"test": "data/Accounting-test.csv"}})
    err = one_error_line(capsys, [*model, "--benchmark", f"kmmlu={tmp_path / 'cardonly'}"])
    assert "datasets cannot read config Accounting" in err
