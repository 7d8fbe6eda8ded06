"""Twinkle-style prompts show a file's cells as Twinkle Eval 2.10 shows them: a CSV/TSV as pandas'
default ``read_csv`` types each column, Parquet through ``pd.read_parquet``, then ``str()`` of each
cell; JSON as ``json.load`` gives it. lm-eval prompts keep the cells as written.

Every expected prompt is written out by hand from Twinkle's rules (``datasets/file.py`` ``_load_data``,
``runners/evaluator.py`` ``build_question_text``): a column of integers is int64 ("007" -> "7"), a
column with a decimal or a missing value is float64 ("2" -> "2.0", "1.50" -> "1.5"), "NA"/"None"/
an empty cell is NaN ("nan"), "True"/"true"/"False" make a bool column ("True"/"False").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import make_tokenizer

from twinkle_hf.cli import main
from twinkle_hf.data.load import load_benchmark
from twinkle_hf.data.sources import load_datasets
from twinkle_hf.prompts.prepare import prepare_dataset
from twinkle_hf.prompts.twinkle_style import left_out_notices
from twinkle_hf.settings.config import build_config
from twinkle_hf.settings.twinkle_config import translate

# A: integers (int64); B: "2" beside "0.5" (float64); C: "1.50" (float64); D: "NA"/"None" (NaN in a
# text column); E: "True"/"False"/"true" (bool); F: integers and an "NA" (float64), and an empty cell
# in the last row, which makes that row bad here (an empty option) but still types the column there.
CSV = """question,A,B,C,D,E,F,answer
What is 1.50?,007,2,1.50,NA,True,1,A
"Pick one, please",10,0.5,3,None,False,NA,B
Plain text?,7,3,2.25,plain,true,3,C
Empty?,8,4,1,x,False,,D
"""
TWINKLE = ["What is 1.50?\nA: 7\nB: 2.0\nC: 1.5\nD: nan\nE: True\nF: 1.0\nAnswer:",
           "Pick one, please\nA: 10\nB: 0.5\nC: 3.0\nD: nan\nE: False\nF: nan\nAnswer:",
           "Plain text?\nA: 7\nB: 3.0\nC: 2.25\nD: plain\nE: True\nF: 3.0\nAnswer:"]
AS_WRITTEN = [("What is 1.50?", ["007", "2", "1.50", "NA", "True", "1"]),
              ("Pick one, please", ["10", "0.5", "3", "None", "False", "NA"]),
              ("Plain text?", ["7", "3", "2.25", "plain", "true", "3"])]


def _notice(path: Path) -> str:
    return (f"{path}: column A is int64 to pandas, so Twinkle Eval shows '007' as '7'; column B is float64 to "
            f"pandas, so Twinkle Eval shows '2' as '2.0' (2 cells differ); column C is float64 to pandas, so "
            f"Twinkle Eval shows '1.50' as '1.5' (2 cells differ); column D: pandas reads 'NA' as a missing value, "
            f"so Twinkle Eval shows it as 'nan' (2 cells differ); column E is bool to pandas, so Twinkle Eval shows "
            f"'true' as 'True'; column F is float64 to pandas, so Twinkle Eval shows '1' as '1.0' (3 cells differ); "
            f"these prompts do the same")


def _config(path: Path, **evaluation) -> dict:
    return {"llm_api": {"base_url": "http://localhost:8000/v1", "api_key": "sk-x"},
            "model": {"name": "m", "temperature": 0.0, "max_tokens": 8},
            "evaluation": {"dataset_paths": [str(path)], "evaluation_method": "logit", **evaluation}}


def _cfg(path: Path, **overrides):
    return build_config(translate(_config(path)).values, {"on_bad_row": "skip", **overrides})


@pytest.fixture
def csv_file(tmp_path) -> Path:
    path = tmp_path / "cells.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


@pytest.mark.parametrize("sep", [",", "\t"])
def test_csv_cells_are_shown_as_pandas_types_them(tmp_path, sep):
    path = tmp_path / ("cells.csv" if sep == "," else "cells.tsv")
    quoted = '"Pick one, please"'  # in a TSV the comma needs no quotes
    path.write_text(CSV if sep == "," else CSV.replace(quoted, "@").replace(",", sep).replace("@", quoted.strip('"')),
                    encoding="utf-8")
    cfg = _cfg(path)
    [data] = load_datasets(cfg)
    prep = prepare_dataset(make_tokenizer(), data, cfg, None)
    assert prep.texts == TWINKLE
    assert data.skipped == 1  # the empty option: a bad row for every prompt style, as before
    assert data.rows["choices"][:] == [c for _, c in AS_WRITTEN]  # the rows themselves stay as written
    assert data.rows["answer"][:] == [0, 1, 2]
    assert left_out_notices([data]) == [_notice(path)]


def test_shuffled_orders_show_twinkles_texts_in_the_permuted_order(csv_file):
    cfg = _cfg(csv_file, shuffle=True, seed=3)
    [data] = load_datasets(cfg)
    prep = prepare_dataset(make_tokenizer(), data, cfg, None)
    shown = [t.split("\n")[1:-1] for t in TWINKLE]
    for text, row, perm in zip(prep.texts, prep.rows["id"], prep.rows["perm"]):
        options = shown[int(row.rsplit("/", 1)[1])]
        assert text.split("\n")[1:-1] == [f"{'ABCDEF'[j]}: {options[i].split(': ', 1)[1]}" for j, i in enumerate(perm)]
    assert any(list(p) != sorted(p) for p in prep.rows["perm"])


def test_lm_eval_prompts_keep_the_cells_as_written(csv_file):
    cfg = _cfg(csv_file, prompt_style="lm-eval")
    [data] = load_datasets(cfg)
    assert data.shown == {} and data.retyped == {} and left_out_notices([data]) == []
    prep = prepare_dataset(make_tokenizer(), data, cfg, None)
    for text, (question, options) in zip(prep.texts, AS_WRITTEN):
        assert question in text and all(f"{'ABCDEF'[j]}. {o}\n" in text for j, o in enumerate(options))


def test_json_lines_values_are_shown_as_json_gives_them(tmp_path):
    # 2.0 is the float 2.0 ("2.0"), true is True ("True"), for Twinkle and twinkle_hf alike; a null
    # option (Twinkle: "None") stays a bad row, as an empty CSV cell does
    path = tmp_path / "v.jsonl"
    path.write_text('{"question": "Q?", "A": 2.0, "B": null, "C": 3, "answer": "A"}\n'
                    '{"question": "R?", "A": 2.0, "B": "x", "C": true, "answer": "B"}\n', encoding="utf-8")
    cfg = _cfg(path)
    [data] = load_datasets(cfg)
    assert data.skipped == 1 and data.shown == {} and left_out_notices([data]) == []
    assert prepare_dataset(make_tokenizer(), data, cfg, None).texts == ["R?\nA: 2.0\nB: x\nC: True\nAnswer:"]


def test_parquet_integers_beside_a_null_are_floats_to_pandas(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"question": ["Q0?", "Q1?", "Q2?"], "A": pa.array([1, None, 3], pa.int64()),
                             "B": ["x", "y", "z"], "answer": ["A", "B", "A"]}), path)
    data = load_benchmark(str(path), on_bad_row="skip", twinkle_cells=True)
    # a file passed by itself has no subject (not its name), so its ids are "<source>//<row>"
    assert data.shown == {"p//0": ("Q0?", ("1.0", "x")), "p//2": ("Q2?", ("3.0", "z"))}
    assert left_out_notices([data]) == [f"{path}: column A is float64 to pandas, so Twinkle Eval shows '1' as "
                                        f"'1.0' (2 cells differ); these prompts do the same"]
    assert load_benchmark(str(path), on_bad_row="skip").shown == {}  # asked for by the twinkle style only


def test_a_run_sends_twinkles_texts_and_says_so_once(tiny_model_dir, csv_file, tmp_path, capsys):
    config = tmp_path / "twinkle.yaml"
    config.write_text(yaml.safe_dump(_config(csv_file)), encoding="utf-8")

    def run(name: str, *flags: str) -> list[dict]:
        out = tmp_path / name
        assert main(["--config", str(config), "--model", str(tiny_model_dir), "--output-dir", str(out),
                     "--quiet", "--device", "cpu", "--log-prompts", "--on-bad-row", "skip", *flags]) == 0
        return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]

    assert [p["prompt"] for p in run("twinkle")] == TWINKLE
    [results] = (tmp_path / "twinkle" / "results").glob("eval_results_*_run0.jsonl")  # Twinkle's own files
    lines = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines()]
    assert [x["question"] for x in lines] == [t.removesuffix("\nAnswer:") for t in TWINKLE]
    err = capsys.readouterr().err
    assert err.count(_notice(csv_file)) == 1
    lm = run("lm", "--prompt-style", "lm-eval")
    assert "A. 007\nB. 2\nC. 1.50\nD. NA\nE. True\nF. 1\n" in lm[0]["prompt"]
    assert "Twinkle Eval shows" not in capsys.readouterr().err
