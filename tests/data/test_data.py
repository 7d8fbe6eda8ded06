"""Loading benchmarks into canonical rows: every documented layout, splits, ids and bad rows.

Fixture files are tiny and written into tmp_path; the real MMLU / Global-MMLU files in ../shared
are used when present (skipped otherwise). Nothing here touches the network.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import SHARED

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.data.load import DEFAULT_DATASET, limit_per_subject, load_benchmark, parse_column_map
from twinkle_hf.errors import TwinkleError

ROOT = Path(__file__).resolve().parents[2]
MMLU = SHARED / "data" / "mmlu" / "data"
GLOBAL_MMLU_EN = SHARED / "data" / "global_mmlu_dev" / "global_mmlu_dev_en.jsonl"
needs_mmlu = pytest.mark.skipif(not MMLU.is_dir(), reason=f"MMLU data not found in {MMLU}")


def write_csv(path: Path, rows: list[list[Any]], sep: str = ",") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter=sep, lineterminator="\n").writerows(rows)
    return path


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


TWINKLE_HEADER = ["question", "A", "B", "C", "D", "answer"]


def twinkle_csv(path: Path, *rows: list[str]) -> Path:
    return write_csv(path, [TWINKLE_HEADER, *rows])


# --- layouts ------------------------------------------------------------------------------------


def test_twinkle_csv_with_five_options(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "accounting_test.csv", [
        ["question", "A", "B", "C", "D", "E", "answer"],
        ["Q1?", "a", "b", "c", "d", "e", "E"],
        ["Q2?", "1", "2", "3", "4", "5", "b"],
    ])
    loaded = load_benchmark(str(path))
    assert loaded.rows.features == CANONICAL_FEATURES
    assert loaded.name == "accounting_test" and loaded.fewshot is None and loaded.skipped == 0
    assert loaded.rows.to_list() == [
        {"id": "accounting_test/accounting/0", "subject": "accounting", "question": "Q1?",
         "choices": ["a", "b", "c", "d", "e"], "answer": 4},
        {"id": "accounting_test/accounting/1", "subject": "accounting", "question": "Q2?",
         "choices": ["1", "2", "3", "4", "5"], "answer": 1},
    ]


def test_original_mmlu_split_dir(tmp_path: Path) -> None:
    root = tmp_path / "mmlu"
    write_csv(root / "test" / "anatomy_test.csv", [
        ['Line one\n"quoted" line two', " x ", "y", "z", "w", "C"],
        ["Second?", "None", "NA", "1.50", "007", "A"],
    ])
    write_csv(root / "dev" / "anatomy_dev.csv", [["Dev?", "p", "q", "r", "s", "D"]])
    write_csv(root / "val" / "anatomy_val.csv", [["Val?", "p", "q", "r", "s", "B"]])
    loaded = load_benchmark(str(root))
    assert loaded.name == "mmlu"
    first, second = loaded.rows.to_list()
    assert first == {"id": "mmlu/anatomy/0", "subject": "anatomy",
                     "question": 'Line one\n"quoted" line two',
                     "choices": [" x ", "y", "z", "w"], "answer": 2}  # texts kept as given
    assert second["choices"] == ["None", "NA", "1.50", "007"]  # no NA parsing, no numbers
    assert loaded.fewshot is not None and loaded.fewshot["question"] == ["Dev?"]
    assert loaded.fewshot["answer"] == [3]
    # the split folder itself gives the same ids (its parent names the dataset)
    assert load_benchmark(str(root / "test")).rows["id"] == loaded.rows["id"]
    assert load_benchmark(str(root), split="validation").rows["question"] == ["Val?"]


def test_case_insensitive_columns_and_tsv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "x.tsv", [["Question", "a", "b", "c", "d", "Answer", "Subject"],
                                          ["Q?", "1", "2", "3", "4", "d", "law"]], sep="\t")
    row = load_benchmark(str(path)).rows[0]
    assert (row["subject"], row["choices"], row["answer"]) == ("law", ["1", "2", "3", "4"], 3)


HF_MMLU = [
    {"question": "Q0?", "subject": "anatomy", "choices": ["a", "b", "c", "d"], "answer": 2},
    {"question": "Q1?", "subject": "virology", "choices": ["e", "f", "g", "h"], "answer": 0},
]


def test_hf_mmlu_jsonl_and_parquet(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "mmlu.jsonl", HF_MMLU)
    parquet = tmp_path / "mmlu.parquet"
    pq.write_table(pa.Table.from_pylist(HF_MMLU), parquet)
    for path in (jsonl, parquet):
        rows = load_benchmark(str(path)).rows
        assert rows["id"] == ["mmlu/anatomy/0", "mmlu/virology/1"]
        assert rows["choices"] == [["a", "b", "c", "d"], ["e", "f", "g", "h"]]
        assert rows["answer"] == [2, 0]


def test_arc_labels_digits_and_letters(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "arc_easy.jsonl", [
        {"id": "Mercury_1", "question": "Q?", "answerKey": "3",
         "choices": {"text": ["a", "b", "c", "d"], "label": ["1", "2", "3", "4"]}},
        {"id": "Mercury_2", "question": "Q2?", "answerKey": "E",
         "choices": {"text": ["a", "b", "c", "d", "e"], "label": ["A", "B", "C", "D", "E"]}},
    ])
    rows = load_benchmark(str(path)).rows
    assert rows["id"] == ["Mercury_1", "Mercury_2"] and rows["answer"] == [2, 4]
    assert rows["subject"] == ["", ""]  # a file by itself, no subject column: no subject (DESIGN: MMLU's names only)


def test_mmlu_pro_options_and_na_padding(tmp_path: Path) -> None:
    ten = [f"o{i}" for i in range(10)]
    path = write_jsonl(tmp_path / "mmlu_pro.jsonl", [
        {"question_id": 70, "question": "Q?", "options": ten, "answer": "J", "answer_index": 9,
         "category": "math"},
        {"question_id": 71, "question": "Q?", "options": ["a", "N/A", "c", "d"], "answer": "C",
         "answer_index": 2, "category": "law"},
        {"question_id": 72, "question": "Q?", "options": ["a", "b", "c", "N/A", "N/A"],
         "answer": "B", "answer_index": 1, "category": "law"},
    ])
    rows = load_benchmark(str(path)).rows
    assert rows["id"] == ["70", "71", "72"] and rows["subject"] == ["math", "law", "law"]
    assert rows["choices"] == [ten, ["a", "N/A", "c", "d"], ["a", "b", "c"]]
    assert rows["answer"] == [9, 2, 1]


def test_global_mmlu_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "global_mmlu_en.jsonl", [
        {"sample_id": "anatomy/test/0", "subject": "anatomy", "question": "Q?", "option_a": "a",
         "option_b": "b", "option_c": "c", "option_d": "d", "answer": "D", "is_annotated": False},
    ])
    assert load_benchmark(str(path)).rows.to_list() == [
        {"id": "anatomy/test/0", "subject": "anatomy", "question": "Q?",
         "choices": ["a", "b", "c", "d"], "answer": 3}]


def test_save_to_disk_dataset_dict(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_dict({"question": ["Q?", "R?"], "choices": [["a", "b"], ["c", "d"]],
                                     "answer": [1, 0]})
    saved = datasets.DatasetDict({"test": ds, "validation": ds.select([0])})
    saved.save_to_disk(tmp_path / "saved")
    loaded = load_benchmark(str(tmp_path / "saved"), fewshot_split="val")
    assert loaded.name == "saved" and loaded.rows["id"] == ["saved//0", "saved//1"]
    assert loaded.rows["subject"] == ["", ""] and loaded.rows["answer"] == [1, 0]
    assert loaded.fewshot is not None and len(loaded.fewshot) == 1  # "val" found "validation"
    assert load_benchmark(str(tmp_path / "saved")).fewshot is None  # no "dev" split


def test_hub_dataset_splits_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    ds = datasets.Dataset.from_list(HF_MMLU)

    def fake_load(repo: str, config: str | None = None) -> datasets.DatasetDict:
        calls.append((repo, config))
        return datasets.DatasetDict({"test": ds, "dev": ds.select([1])})

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.chdir(tmp_path)
    loaded = load_benchmark("cais/mmlu:all", offline=True)
    assert calls == [("cais/mmlu", "all")] and loaded.name == "cais/mmlu:all"
    assert loaded.rows["id"] == ["cais/mmlu:all/anatomy/0", "cais/mmlu:all/virology/1"]
    assert loaded.fewshot is not None and loaded.fewshot["question"] == ["Q1?"]


def test_column_map_columns_and_int_answer(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "medmcqa.csv", [
        ["query", "opa", "opb", "opc", "opd", "gold", "category"],
        ["Q?", "a", "b", "c", "d", "2", "Anatomy"],
    ])
    with pytest.raises(TwinkleError, match="--column-map"):
        load_benchmark(str(path))
    cmap = parse_column_map("question=query,choices=opa|opb|opc|opd,answer=gold,subject=category")
    assert load_benchmark(str(path), column_map=cmap).rows.to_list() == [
        {"id": "medmcqa/Anatomy/0", "subject": "Anatomy", "question": "Q?",
         "choices": ["a", "b", "c", "d"], "answer": 2}]


def test_column_map_label_answer_and_yaml_list(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "obqa.jsonl", [
        {"uid": 7, "stem": "Q?", "key": "B",
         "opts": {"text": ["a", "b", "c"], "label": ["A", "B", "C"]}},
    ])
    rows = load_benchmark(str(path), column_map={"question": "stem", "choices": ["opts"],
                                                 "answer": "key", "id": "uid"}).rows
    assert rows.to_list() == [{"id": "7", "subject": "", "question": "Q?",
                               "choices": ["a", "b", "c"], "answer": 1}]


@pytest.mark.parametrize("header", [["text", "x", "y"], ["text", "o1", "o2", "o3", "o4", "gold"]])
def test_unknown_layout_names_file_and_columns(tmp_path: Path, header: list[str]) -> None:
    cells = ["Q?", "a", "b", "c", "d", "A"][: len(header)]
    path = write_csv(tmp_path / "weird.csv", [header, cells])
    with pytest.raises(TwinkleError) as err:
        load_benchmark(str(path))
    assert "weird.csv" in str(err.value) and "'text'" in str(err.value)
    assert "--column-map question=" in str(err.value)
    with pytest.raises(TwinkleError, match="'nope' from the column map is not in the file"):
        load_benchmark(str(path), column_map={"question": "nope", "choices": "text|text",
                                              "answer": "text"})


@pytest.mark.parametrize(("header", "says", "example"), [
    (["question", "A", "B", "C", "D"], ["no answer column: looked for 'answer', 'answerKey' or 'answer_index'"],
     "--column-map answer=gold "),
    (["Question", "choices", "gold"], ["no answer column"], "--column-map answer=gold "),
    (["query", "A", "B", "answer"], ["no question column: looked for 'question'"], "--column-map question=query "),
    (["question", "x", "y", "answer"], ["no options column: looked for 'choices', 'options', 'A', 'B'"],
     "--column-map choices=opa|opb|opc|opd "),
])
def test_a_missing_column_is_named_with_the_names_tried(tmp_path: Path, header, says, example) -> None:
    """It read "cannot tell which columns hold the question, options and answer" for a table that
    lacked only its answer column."""
    path = write_csv(tmp_path / "partial.csv", [header, ["Q?", "a", "b", "c", "d"][: len(header)]])
    with pytest.raises(TwinkleError) as err:
        load_benchmark(str(path))
    message = str(err.value)
    assert all(words in message for words in says) and example in message and "cannot tell" not in message
    assert "partial.csv" in message and f"columns found: {', '.join(map(repr, header))}" in message
    if header[-1] == "D":  # the map the message suggests is enough: the options are found as without it
        (tmp_path / "partial.csv").write_text("question,A,B,C,D,gold\nQ?,a,b,c,d,C\n", encoding="utf-8")
        assert load_benchmark(str(path), column_map={"answer": "gold"}).rows["answer"] == [2]


# --- subjects, ids, splits, order ---------------------------------------------------------------


def test_subject_from_file_name_and_split_folders(tmp_path: Path) -> None:
    twinkle_csv(tmp_path / "d" / "test" / "law.csv", ["Q?", "a", "b", "c", "d", "A"])
    twinkle_csv(tmp_path / "d" / "validation" / "law_validation.csv",
                ["V?", "a", "b", "c", "d", "B"])
    loaded = load_benchmark(str(tmp_path / "d"), fewshot_split="val")
    assert loaded.rows["subject"] == ["law"] and loaded.fewshot["subject"] == ["law"]
    assert loaded.fewshot["id"] == ["d/law/0"]


def test_missing_split_lists_the_splits_found(tmp_path: Path) -> None:
    twinkle_csv(tmp_path / "d" / "law_dev.csv", ["Q?", "a", "b", "c", "d", "A"])
    twinkle_csv(tmp_path / "d" / "law_train.csv", ["Q?", "a", "b", "c", "d", "A"])
    with pytest.raises(TwinkleError, match=r"no split 'test'; splits found: dev, train"):
        load_benchmark(str(tmp_path / "d"))
    assert load_benchmark(str(tmp_path / "d"), split="train").fewshot is not None


def test_directory_without_splits_is_all_test_in_path_order(tmp_path: Path) -> None:
    twinkle_csv(tmp_path / "d" / "b.csv", ["B?", "a", "b", "c", "d", "A"])
    twinkle_csv(tmp_path / "d" / "a" / "z.csv", ["AZ?", "a", "b", "c", "d", "A"])
    twinkle_csv(tmp_path / "d" / "a.csv", ["A?", "a", "b", "c", "d", "A"])
    (tmp_path / "d" / "notes.txt").write_text("ignored")
    loaded = load_benchmark(str(tmp_path / "d"))
    assert loaded.rows["question"] == ["A?", "AZ?", "B?"] and loaded.fewshot is None


def test_mixed_split_and_plain_files_is_an_error(tmp_path: Path) -> None:
    twinkle_csv(tmp_path / "d" / "law_test.csv", ["Q?", "a", "b", "c", "d", "A"])
    twinkle_csv(tmp_path / "d" / "extra.csv", ["Q?", "a", "b", "c", "d", "A"])
    with pytest.raises(TwinkleError, match=r"extra\.csv"):
        load_benchmark(str(tmp_path / "d"))


def test_ids_stable_unique_and_from_id_column(tmp_path: Path) -> None:
    rows = [["question", "A", "B", "answer", "subject"]]
    rows += [[f"Q{i}?", "a", "b", "A", "s1" if i % 2 else "s2"] for i in range(6)]
    write_csv(tmp_path / "d" / "p1.csv", rows)
    write_csv(tmp_path / "d" / "p2.csv", rows)  # same subjects in a second file
    loaded = load_benchmark(str(tmp_path / "d"))
    ids = loaded.rows["id"]
    assert len(set(ids)) == 12 and ids[:2] == ["d/s2/0", "d/s1/1"]
    assert ids[6:8] == ["d/s2/6", "d/s1/7"]  # continues past the first file's rows
    limited = limit_per_subject(loaded.rows, 1)
    assert limited["id"] == ["d/s2/0", "d/s1/1"]  # unchanged by --limit
    assert load_benchmark(str(tmp_path / "d")).rows["id"] == ids


def test_duplicate_ids_name_both_positions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dup.jsonl", [
        {"id": 1, "question": "Q?", "choices": ["a", "b"], "answer": 0},
        {"id": 2, "question": "Q?", "choices": ["a", "b"], "answer": 0},
        {"id": "1", "question": "Q?", "choices": ["a", "b"], "answer": 0},
    ])
    with pytest.raises(TwinkleError, match=r"duplicate id '1': .*dup.jsonl row 0 \(counted from 0, .*; line 1\) and "
                                           r".*dup.jsonl row 2 \(counted from 0, .*; line 3\)"):
        load_benchmark(str(path))


# --- bad rows -----------------------------------------------------------------------------------

GOOD = {"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": 0}
BAD_ROWS = [  # (record, column named in the message, words in the message)
    ({**GOOD, "question": "   "}, "question", "empty question"),
    ({**GOOD, "question": None}, "question", "missing question"),
    ({**GOOD, "question": float("nan")}, "question", "missing question"),
    ({**GOOD, "choices": ["only"]}, "choices", "1 options"),
    ({**GOOD, "choices": [str(i) for i in range(27)]}, "choices", "27 options"),
    ({**GOOD, "choices": ["a", "", "c", "d"]}, "choices", "option 2 is missing or empty"),
    ({**GOOD, "choices": ["a", None, "c", "d"]}, "choices", "option 2 is missing or empty"),
    ({**GOOD, "choices": "a b c d"}, "choices", "must be a list"),
    ({**GOOD, "answer": 4}, "answer", "not among the 4 options"),
    ({**GOOD, "answer": -1}, "answer", "not among the 4 options"),
    ({**GOOD, "answer": "E"}, "answer", "not among the 4 options"),
    ({**GOOD, "answer": "maybe"}, "answer", "answer is not"),
    ({**GOOD, "answer": None}, "answer", "missing answer"),
    ({"question": "Q?", "answerKey": "5", "choices": {"text": ["a", "b"], "label": ["1", "2"]}},
     "answerKey", "not a label"),
]


@pytest.mark.parametrize(("record", "column", "words"), BAD_ROWS)
def test_bad_json_rows(tmp_path: Path, record: dict, column: str, words: str) -> None:
    good = GOOD if "answer" in record else {**record, "answerKey": "1"}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(TwinkleError) as err:
        load_benchmark(str(path))
    message = str(err.value)
    row = "row 1 (counted from 0, as `row` in predictions.jsonl; line 3)"  # `row` of predictions.jsonl
    for part in (str(path), row, f"column {column!r}", words, "--on-bad-row skip"):
        assert part in message
    loaded = load_benchmark(str(path), on_bad_row="skip")
    assert len(loaded.rows) == 1 and loaded.skipped == 1
    assert loaded.skipped_reasons[0].startswith(f"{path}: {row}, column {column!r}")


@pytest.mark.parametrize(("cells", "column", "words"), [
    (["", "a", "b", "c", "d", "A"], "question", "empty question"),
    (["Q?", "a", "b", "", "d", "A"], "C", "empty option text"),
    (["Q?", "a", "b", "c", "d", "E"], "answer", "answer is not among the 4 options A-D"),
    (["Q?", "a", "b", "c", "d", "1"], "answer", "answer is not an option letter"),
])
def test_bad_csv_rows_name_row_and_line(tmp_path: Path, cells: list[str], column: str,
                                        words: str) -> None:
    path = twinkle_csv(tmp_path / "law_test.csv", ["Two\nlines?", "a", "b", "c", "d", "A"], cells)
    with pytest.raises(TwinkleError) as err:
        load_benchmark(str(path))
    row = "row 1 (counted from 0, as `row` in predictions.jsonl; header not counted; starts on line 4)"
    expected = f"{path}: {row}, column {column!r}: {words}"
    assert str(err.value).startswith(expected)
    assert load_benchmark(str(path), on_bad_row="skip").skipped == 1


def test_header_less_csv_rows_are_numbered_from_zero(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "law_test.csv", [["Q?", "a", "b", "c", "d", "A"],
                                                 ["Q?", "a", "b", "c", "d", "Z"]])
    with pytest.raises(TwinkleError, match=r"row 1 \(counted from 0, .*; starts on line 2\), column 'answer'"):
        load_benchmark(str(path))


def test_skip_keeps_twenty_reasons_and_all_bad_is_an_error(tmp_path: Path) -> None:
    rows = [["Q?", "a", "b", "c", "d", "A" if i % 2 else "Z"] for i in range(60)]
    path = write_csv(tmp_path / "x_test.csv", [TWINKLE_HEADER, *rows])
    loaded = load_benchmark(str(path), on_bad_row="skip")
    assert (len(loaded.rows), loaded.skipped, len(loaded.skipped_reasons)) == (30, 30, 20)
    assert loaded.rows["id"][:2] == ["x_test/x/1", "x_test/x/3"]  # ids keep the file row
    write_csv(path, [TWINKLE_HEADER, ["Q?", "a", "b", "c", "d", "Z"]])
    with pytest.raises(TwinkleError, match="every row is bad"):
        load_benchmark(str(path), on_bad_row="skip")
    with pytest.raises(TwinkleError, match="on_bad_row must be"):
        load_benchmark(str(path), on_bad_row="ignore")


@pytest.mark.parametrize(("content", "words"), [
    (b"", "is empty"),
    (b"  \n", "is empty"),
    (b"question,A,B,answer\n", "holds no rows"),
    ("question,A,B,answer\nQ\u00e9?,a,b,A\n".encode("latin-1"), "not UTF-8"),
])
def test_unreadable_files_name_the_file(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "broken_test.csv"
    path.write_bytes(content)
    with pytest.raises(TwinkleError, match=words) as err:
        load_benchmark(str(path))
    assert str(path) in str(err.value)


def test_utf8_bom_and_json_array(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("question,A,B,answer\nQ?,a,b,B\n".encode("utf-8-sig"))
    assert load_benchmark(str(path)).rows["answer"] == [1]
    array = tmp_path / "arr.json"
    array.write_text(json.dumps([{**GOOD, "choices": [1, 2.5, True]}]), encoding="utf-8")
    assert load_benchmark(str(array)).rows["choices"] == [["1", "2.5", "True"]]


# --- sources that are not there -----------------------------------------------------------------


def test_missing_local_path_is_file_not_found(tmp_path: Path) -> None:
    for source in (str(tmp_path / "nope.csv"), "./nope", "data/missing.jsonl"):
        with pytest.raises(FileNotFoundError, match=r"nope|missing"):
            load_benchmark(source)


def test_hub_id_offline_and_not_cached_fails_fast(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    monkeypatch.chdir(tmp_path)
    before = datasets.config.HF_HUB_OFFLINE
    start = time.monotonic()
    with pytest.raises(TwinkleError, match="not in the local cache") as err:
        load_benchmark("twinkle-hf-tests/not-a-dataset:sub", offline=True)
    assert time.monotonic() - start < 30
    assert "pass a local file" in str(err.value)
    assert before == datasets.config.HF_HUB_OFFLINE  # offline only for that call


def test_hub_id_with_offline_env_fails_fast_in_a_fresh_process(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_CACHE": str(tmp_path / "ds"),
           "PYTHONPATH": str(ROOT)}
    code = ("from twinkle_hf.data.load import load_benchmark\n"
            "from twinkle_hf.errors import TwinkleError\n"
            "try:\n    load_benchmark('twinkle-hf-tests/not-a-dataset')\n"
            "except TwinkleError as exc:\n    print('TWINKLE', exc)\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, timeout=120,
                          capture_output=True, text=True, check=True)
    assert "TWINKLE" in done.stdout and "not in the local cache" in done.stdout


# --- limit and column-map parsing ---------------------------------------------------------------


def test_limit_per_subject_keeps_order() -> None:
    rows = datasets.Dataset.from_dict(
        {"id": list("abcdef"), "subject": ["x", "y", "x", "x", "y", "z"], "question": ["q"] * 6,
         "choices": [["1", "2"]] * 6, "answer": [0] * 6}, features=CANONICAL_FEATURES)
    assert limit_per_subject(rows, 2)["id"] == ["a", "b", "c", "e", "f"]
    assert limit_per_subject(rows, 1)["id"] == ["a", "b", "f"]
    assert limit_per_subject(rows, None) is rows
    for bad in (0, -1, True, 1.5):
        with pytest.raises(TwinkleError, match="--limit"):
            limit_per_subject(rows, bad)


def test_parse_column_map() -> None:
    assert parse_column_map(" question = query , choices=opa|opb| opc,answer=gold,id=uid ") == {
        "question": "query", "choices": "opa|opb|opc", "answer": "gold", "id": "uid"}
    for text, words in [("", "empty"), ("question", "not key=column"),
                        ("question=", "key=column"), ("foo=bar", "unknown column-map key 'foo'"),
                        ("answer=a|b", "only 'choices'"), ("answer=a,answer=b", "twice"),
                        ("choices=a||b", "only 'choices'")]:
        with pytest.raises(TwinkleError, match=words):
            parse_column_map(text)


# --- real data (../shared) ----------------------------------------------------------------------


@needs_mmlu
def test_real_mmlu_test_and_dev() -> None:
    loaded = load_benchmark(str(MMLU))
    assert len(loaded.rows) == 14042 and len(set(loaded.rows["subject"])) == 57
    assert loaded.fewshot is not None and len(loaded.fewshot) == 285
    assert len(set(loaded.rows["id"])) == 14042 and loaded.skipped == 0
    assert {len(c) for c in loaded.rows["choices"]} == {4}


@pytest.mark.skipif(not GLOBAL_MMLU_EN.is_file(), reason=f"{GLOBAL_MMLU_EN} not found")
def test_real_global_mmlu_en() -> None:
    rows = load_benchmark(str(GLOBAL_MMLU_EN)).rows
    assert len(rows) == 285 and rows[0]["id"] == "abstract_algebra/dev/0"
    assert rows[0]["subject"] == "abstract_algebra" and rows[0]["answer"] == 1


def test_embedded_sample_loads() -> None:
    loaded = load_benchmark(DEFAULT_DATASET)
    assert loaded.name == "mmlu_sample" and len(loaded.rows) == 120
    assert loaded.fewshot is not None and len(loaded.fewshot) == 30
    assert len(set(loaded.rows["subject"])) == 6
    assert (Path(DEFAULT_DATASET) / "SOURCE.md").is_file()
    assert "MIT License" in (Path(DEFAULT_DATASET) / "LICENSE").read_text(encoding="utf-8")


@needs_mmlu
def test_embedded_sample_equals_real_mmlu_rows() -> None:
    sample = load_benchmark(DEFAULT_DATASET)
    for split, rows in (("test", sample.rows), ("dev", sample.fewshot)):
        for subject in sorted(set(rows["subject"])):
            real = load_benchmark(str(MMLU / split / f"{subject}_{split}.csv")).rows
            mine = rows.filter(lambda r, s=subject: r["subject"] == s)
            fields = ("question", "choices", "answer")
            assert [[r[f] for f in fields] for r in mine] == \
                   [[r[f] for f in fields] for r in real.select(range(len(mine)))]
            assert mine["id"] == [f"mmlu_sample/{subject}/{i}" for i in range(len(mine))]


def test_a_one_based_answer_column_is_an_error_even_under_skip(tmp_path: Path) -> None:
    """Answers 1..k with no 0 anywhere: skipping only the rows with answer k would score the rest
    against the option after the right one, so that is refused; with a 0 in the column, a stray k
    is an ordinary bad row."""
    path = tmp_path / "one_based.jsonl"
    rows = [{**GOOD, "answer": a} for a in (1, 4, 2, 3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(TwinkleError, match="whole column looks 1-based") as err:
        load_benchmark(str(path), on_bad_row="skip")
    assert "row 1 (counted from 0" in str(err.value) and "Subtract 1" in str(err.value)
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {**GOOD, "answer": 0}]), encoding="utf-8")
    loaded = load_benchmark(str(path), on_bad_row="skip")
    assert len(loaded.rows) == 4 and loaded.skipped == 1


def test_arrow_files_in_both_ipc_formats_load_like_any_table(tmp_path):
    import shutil

    rows = {"question": ["Q1?", "Q2?", "Q3?"], "A": ["a", "b", "c"], "B": ["x", "y", "z"], "answer": ["A", "B", "A"]}
    folder = tmp_path / "quiz"
    folder.mkdir()
    table = pa.table(rows)
    with pa.ipc.new_file(folder / "physics.arrow", table.schema) as writer:  # the random-access format
        writer.write_table(table)
    saved = tmp_path / "saved"
    datasets.Dataset.from_dict(rows).save_to_disk(str(saved))  # datasets writes the stream format
    shutil.copy(next(saved.glob("*.arrow")), folder / "history.arrow")
    data = load_benchmark(str(folder))
    assert sorted(set(data.rows["subject"])) == ["history", "physics"] and len(data.rows) == 6
    assert data.rows["answer"][:3] == [0, 1, 0] and data.rows["choices"][0] == ["a", "x"]
    (folder / "broken.arrow").write_bytes(b"not arrow at all")
    with pytest.raises(TwinkleError, match=r"broken\.arrow: cannot be read as an Arrow file"):
        load_benchmark(str(folder))
