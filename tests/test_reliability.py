"""Reliability: bad input is an error naming where (or is skipped and counted), local runs never
touch the network, predictions do not depend on the batch size, and nothing unsafe happens by
default (remote code, secrets in outputs, paths outside --output-dir, pickled weights)."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import cli_error, make_model, save_model_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twinkle_hf.cli import main
from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.data.load import load_benchmark
from twinkle_hf.data.sources import load_datasets
from twinkle_hf.errors import TwinkleError
from twinkle_hf.evaluation import evaluate
from twinkle_hf.models.loading import load_model, load_tokenizer
from twinkle_hf.settings.config import EvalConfig
from twinkle_hf.sweep import run_name

ROOT = Path(__file__).resolve().parents[1]
HEADER = "question,A,B,C,D,answer\n"
GOOD_CSV = "Q1?,a,b,c,d,A\n"
GOOD_JSON = {"question": "Q1?", "choices": ["a", "b", "c", "d"], "answer": 0}


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


# --- 1. bad input: a corpus ---------------------------------------------------------------------
# Whole-file problems: always an error (exit 2) naming the file, and where possible the line.
BAD_FILES = [  # (file name, content, words in the message)
    ("empty.csv", b"", "the file is empty"),
    ("blank.csv", b"  \n\t\n\n", "the file is empty"),
    ("header_only.csv", HEADER.encode(), "holds no rows"),
    ("latin1.csv", (HEADER + "Caf\u00e9?,a,b,c,d,A\n").encode("latin-1"), "not UTF-8 text (line 2"),
    ("utf16.csv", (HEADER + GOOD_CSV).encode("utf-16"), "UTF-16LE text, not UTF-8"),
    ("utf16_no_bom.csv", (HEADER + GOOD_CSV).encode("utf-16-le"), "line 1 holds a NUL byte"),
    ("utf16.json", json.dumps([GOOD_JSON]).encode("utf-16"), "UTF-16LE text, not UTF-8"),
    ("ragged.csv", (HEADER + GOOD_CSV + "Q2?,a,b,c,d,A,extra\n").encode(),
     "the record starting on line 3 has 7 cells but the first has 6"),
    ("unclosed_quote.csv", (HEADER + GOOD_CSV + '"Q2?,a,b,c,d,A\n').encode(),
     "opened in the record starting on line 3 is never closed"),
    ("deep.json", b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
    ("deep.jsonl", jsonl(GOOD_JSON) + b'{"question": ' + b"[" * 50_000 + b"\n", "line 2 is nested"),
    ("broken.jsonl", jsonl(GOOD_JSON) + b'{"question": "Q2?",\n', "line 2 is not valid JSON"),
    ("scalar.json", b"42", "expected a JSON array of objects"),
    ("array_of_lists.jsonl", b"[1, 2]\n", "line 1 is not a JSON object"),
    ("garbage.parquet", b"PAR1 this is not parquet", "cannot be read as Parquet"),
    ("unknown_layout.csv", b"query,opa,opb,gold\nQ?,a,b,A\n", "cannot tell which columns"),
    ("repeated_header.csv", b"question,A,A,answer\nQ?,a,b,A\n", "the header repeats a column name"),
    ("duplicate_ids.jsonl", jsonl({"id": 7, **GOOD_JSON}, {"id": "7", **GOOD_JSON}),
     "duplicate id '7'"),
]

# Row problems: by default an error naming file, row and column; with skip, skipped and counted.
# Each file holds a good row 0 and the bad row 1 (counted from 0, as `row` in predictions.jsonl).
BAD_ROWS = [  # (file name, content, column, words in the message)
    ("nan_cell.jsonl", (b'{"question": "Q1?", "A": "a", "B": "b", "answer": "A"}\n'
                        b'{"question": "Q2?", "A": NaN, "B": "b", "answer": "A"}\n'), "A", "missing option text"),
    ("none_cell.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "question": None}), "question", "missing question"),
    ("empty_cell.csv", (HEADER + GOOD_CSV + "Q2?,a,,c,d,A\n").encode(), "B", "empty option text"),
    ("blank_question.csv", (HEADER + GOOD_CSV + "   ,a,b,c,d,A\n").encode(), "question", "empty question"),
    ("letter_beyond.csv", (HEADER + GOOD_CSV + "Q2?,a,b,c,d,E\n").encode(), "answer",
     "answer is not among the 4 options A-D"),
    ("one_based.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "answer": 4}), "answer",
     "answers look 1-based (found 4 = the number of options); answers must be 0-based indices or letters"),
    ("one_based_text.csv", (b'question,choices,answer\nQ1?,"[""a"", ""b""]",0\n'
                            b'Q2?,"[""a"", ""b""]",2\n'), "answer", "answers look 1-based (found 2"),
    ("negative.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "answer": -1}), "answer", "not among the 4 options"),
    ("fraction.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "answer": 1.5}), "answer", "answer is not"),
    ("bool_answer.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "answer": True}), "answer", "answer is not"),
    ("no_answer.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "answer": None}), "answer", "missing answer"),
    ("number_for_letter.csv", (HEADER + GOOD_CSV + "Q2?,a,b,c,d,2\n").encode(), "answer",
     "it is a number: to read 0-based option indices, map the column explicitly"),
    ("27_options.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "choices": [f"o{i}" for i in range(27)]}),
     "choices", "27 options, but a question needs at most 26 (A-Z)"),
    ("1_option.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "choices": ["only"]}), "choices",
     "1 options, but a question needs at least 2"),
    ("question_list.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "question": ["Q2?"]}), "question",
     "question is a list, not text"),
    ("nested_option.jsonl", jsonl(GOOD_JSON, {**GOOD_JSON, "choices": [["a"], "b"]}), "choices",
     "option 1 is a list, not text"),
    ("arc_label.jsonl", jsonl({"question": "Q1?", "choices": {"text": ["a", "b"], "label": ["1", "2"]},
                               "answerKey": "1"},
                              {"question": "Q2?", "choices": {"text": ["a", "b"], "label": ["1", "2"]},
                               "answerKey": "3"}), "answerKey", "not a label"),
]


def write(directory: Path, name: str, content: bytes) -> Path:
    path = directory / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(("name", "content", "words"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_file_is_one_clear_error(tmp_path, tiny_model_dir, capsys, name, content, words):
    path = write(tmp_path, name, content)
    for policy in ("error", "skip"):  # a broken file is never "skipped"
        with pytest.raises(TwinkleError) as err:
            load_benchmark(str(path), on_bad_row=policy)
        assert str(path) in str(err.value) and words in str(err.value), str(err.value)
        assert "\n" not in str(err.value)  # the CLI prints it as one line
    line = cli_error(capsys, ["--model", str(tiny_model_dir), "--dataset", str(path),
                              "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert name in line and words in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("name", "content", "column", "words"), BAD_ROWS, ids=[c[0] for c in BAD_ROWS])
def test_bad_row_names_file_row_column_or_is_skipped_and_counted(tmp_path, tiny_model_dir, capsys,
                                                                 name, content, column, words):
    path = write(tmp_path, name, content)
    with pytest.raises(TwinkleError) as err:
        load_benchmark(str(path))
    message = str(err.value)
    assert message.startswith(f"{path}: row 1 (counted from 0") and f"column {column!r}: " in message, message
    assert words in message and "--on-bad-row skip" in message and "\n" not in message
    loaded = load_benchmark(str(path), on_bad_row="skip")
    assert (len(loaded.rows), loaded.skipped) == (1, 1)
    assert loaded.rows["question"] == ["Q1?"] and words in loaded.skipped_reasons[0]
    line = cli_error(capsys, ["--model", str(tiny_model_dir), "--dataset", str(path),
                              "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert name in line and f"column {column!r}" in line and words in line


def test_skipped_rows_are_counted_in_the_results(tmp_path, tiny_model_dir):
    path = write(tmp_path, "half_bad.csv", (HEADER + GOOD_CSV + "Q2?,a,b,c,d,E\nQ3?,a,b,c,d,B\n").encode())
    out = tmp_path / "out"
    assert main(["--model", str(tiny_model_dir), "--dataset", str(path), "--on-bad-row", "skip",
                 "--output-dir", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["skipped_rows"]["half_bad"]["rows"] == 1
    reason = results["skipped_rows"]["half_bad"]["reasons"][0]
    assert "row 1 (counted from 0, as `row` in predictions.jsonl; header not counted; starts on line 3)" in reason
    assert results["metrics"]["accuracy"]["n_questions"] == 2
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["row"] for line in lines] == [0, 2]  # the same numbering as the message's


# --- 1. bad input: fuzzing ----------------------------------------------------------------------

NAMES = ["question", "Question", "A", "B", "C", "D", "E", "answer", "ANSWER", "choices", "options",
         "answer_index", "answerKey", "id", "subject", "category", "option_a", "option_b", "x"]
TOKENS = ["A", "B", "E", "b", "0", "1", "3", "4", "-1", "2.0", "", " ", "N/A", "None", "nan", "NaN", "1e309",
          '["x", "y"]', '{"text": ["x", "y"], "label": ["A", "B"]}', "[1, [2]]", "[" * 3000, "[", "{", '"',
          "\r", "\n", "\t", "\ufeff", "\u00e9"]
CELL = st.one_of(st.sampled_from(TOKENS + NAMES), st.text(max_size=6))


@st.composite
def csv_texts(draw: st.DrawFn) -> str:
    """Random tables: maybe a header of known names, random cells, quoting (sometimes unclosed),
    random column counts and line endings."""
    rows = [draw(st.lists(st.sampled_from(NAMES), max_size=8))] if draw(st.booleans()) else []
    rows += draw(st.lists(st.lists(CELL, max_size=8), max_size=6))
    lines = []
    for row in rows:
        cells = []
        for cell in row:
            quoting = draw(st.sampled_from(["none", "quoted", "unclosed"]))
            cells.append({"none": cell, "quoted": '"' + cell.replace('"', '""') + '"',
                          "unclosed": '"' + cell}[quoting])
        lines.append(",".join(cells))
    return draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines) + draw(st.sampled_from(["", "\n"]))


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 30), st.floats(), st.sampled_from(TOKENS),
                    st.text(max_size=5))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.sampled_from(["text", "label", *NAMES]), inner, max_size=4)),
    max_leaves=12)
RECORDS = st.lists(st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=7), max_size=5)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def assert_canonical(loaded) -> None:
    rows = loaded.rows
    assert rows.features == CANONICAL_FEATURES and len(rows) > 0
    assert len(set(rows["id"])) == len(rows)
    for row in rows:
        assert row["question"].strip() and 2 <= len(row["choices"]) <= 26
        assert all(choice.strip() for choice in row["choices"]) and 0 <= row["answer"] < len(row["choices"])


def load_or_refuse(path: Path, policy: str) -> None:
    """Either a valid canonical dataset, or TwinkleError/FileNotFoundError; nothing else."""
    try:
        loaded = load_benchmark(str(path), on_bad_row=policy)
    except (TwinkleError, FileNotFoundError) as err:
        assert str(err) and "\n" not in str(err).strip()
        return
    assert_canonical(loaded)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(text=csv_texts(), policy=st.sampled_from(["error", "skip"]), tsv=st.booleans())
def test_fuzzed_csv_loads_or_raises_a_twinkle_error(fuzz_dir, text, policy, tsv):
    path = fuzz_dir / ("fuzz_test.tsv" if tsv else "fuzz_test.csv")
    path.write_text(text.replace(",", "\t") if tsv else text, encoding="utf-8", newline="")
    load_or_refuse(path, policy)


@FUZZ
@given(records=RECORDS, policy=st.sampled_from(["error", "skip"]), lines=st.booleans())
def test_fuzzed_json_records_load_or_raise_a_twinkle_error(fuzz_dir, records, policy, lines):
    path = fuzz_dir / ("fuzz.jsonl" if lines else "fuzz.json")
    path.write_text("\n".join(map(json.dumps, records)) if lines else json.dumps(records), encoding="utf-8")
    load_or_refuse(path, policy)


@FUZZ
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".tsv", ".json", ".jsonl", ".parquet"]))
def test_fuzzed_bytes_load_or_raise_a_twinkle_error(fuzz_dir, data, suffix):
    path = fuzz_dir / f"bytes_test{suffix}"
    path.write_bytes(data)
    load_or_refuse(path, "error")


# --- 1. bad input: models -----------------------------------------------------------------------


def _broken_models(root: Path, model_dir: Path) -> dict[str, tuple[Path, str]]:
    """name -> (--model, words in the message)."""
    random_gguf = write(root, "model.gguf", np.random.default_rng(0).bytes(4096))
    empty_gguf = write(root, "empty.gguf", b"")
    cut_gguf = write(root, "cut.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1, 5))  # header, then nothing
    no_tokenizer = root / "no_tokenizer"
    no_tokenizer.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(model_dir / name, no_tokenizer / name)
    no_config = shutil.copytree(model_dir, root / "no_config")
    (no_config / "config.json").unlink()
    corrupt = shutil.copytree(model_dir, root / "corrupt_weights")
    (corrupt / "model.safetensors").write_bytes(np.random.default_rng(1).bytes(1000))
    return {
        "random bytes named .gguf": (random_gguf, "not a GGUF file (it starts with"),
        "empty .gguf": (empty_gguf, "not a GGUF file (it is empty"),
        "truncated .gguf": (cut_gguf, "the .gguf file cannot be read, it looks truncated or corrupt"),
        "no tokenizer": (no_tokenizer, "the directory has no tokenizer files"),
        "no config.json": (no_config, "the directory has no config.json"),
        "corrupt safetensors": (corrupt, "its weights cannot be read (SafetensorError"),
    }


def test_broken_models_are_one_clear_error(tmp_path, tiny_model_dir, all_a_dir, capsys):
    for case, (model, words) in _broken_models(tmp_path, tiny_model_dir).items():
        cfg = EvalConfig(model=str(model), device="cpu")
        with pytest.raises(TwinkleError) as err:  # the CLI loads the tokenizer first, then the model
            load_tokenizer(cfg)
            load_model(cfg)
        assert words in str(err.value), (case, str(err.value))
        line = cli_error(capsys, ["--model", str(model), "--dataset", str(all_a_dir), "--device", "cpu",
                                  "--output-dir", str(tmp_path / "out"), "--quiet"])
        assert words in line and str(model) in line, case


def test_a_model_dir_without_tokenizer_still_loads_its_weights(tmp_path, tiny_model_dir):
    """Only the tokenizer is missing: load_model works, load_tokenizer says what to add."""
    _broken_models(tmp_path, tiny_model_dir)
    cfg = EvalConfig(model=str(tmp_path / "no_tokenizer"), device="cpu")
    assert load_model(cfg)[0] is not None
    with pytest.raises(TwinkleError, match="save the tokenizer next to the weights"):
        load_tokenizer(cfg)


# --- 2. offline for real: a socket guard, without HF_HUB_OFFLINE -----------------------------------

SITECUSTOMIZE = '''
"""Test guard: any attempt to resolve a name or open a connection is logged and fails."""
import os
import socket
import traceback

LOG = os.environ["TWINKLE_SOCKET_LOG"]


def _blocked(what):
    def guard(*args, **kwargs):
        with open(LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{what} {args!r}\\n" + "".join(traceback.format_stack(limit=12)) + "\\n")
        raise OSError(f"network blocked by the test: {what}")
    return guard


socket.socket.connect = _blocked("socket.connect")
socket.socket.connect_ex = _blocked("socket.connect_ex")
socket.create_connection = _blocked("socket.create_connection")
socket.getaddrinfo = _blocked("socket.getaddrinfo")
'''
SECRETS = {  # values that must never reach a file or the console
    "HF_TOKEN": "hf_PLANTEDsecretHFtoken0123456789",
    "HUGGING_FACE_HUB_TOKEN": "hf_PLANTEDsecretHubToken987",
    "OPENAI_API_KEY": "sk-PLANTEDsecretOpenAI4242",
    "WANDB_API_KEY": "PLANTEDsecretWandb31337",
    "MY_SERVICE_TOKEN": "PLANTEDsecretServiceToken",
    "AWS_SECRET_ACCESS_KEY": "PLANTEDsecretAws/abc+def",
}


def run_script(args: list[str], cwd: Path, env: dict | None = None, guard: Path | None = None,
               timeout: int = 180) -> subprocess.CompletedProcess:
    """scripts/eval.py in a fresh process; HF_*_OFFLINE removed so only local files keep it offline."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")}
    if guard is not None:
        guard.mkdir(exist_ok=True)
        (guard / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        full["PYTHONPATH"] = os.pathsep.join([str(guard), str(ROOT), full.get("PYTHONPATH", "")])
        full["TWINKLE_SOCKET_LOG"] = str(guard / "connections.log")
    full.update(env or {})
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "eval.py"), *args], capture_output=True,
                          text=True, env=full, cwd=cwd, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def guarded_run(tmp_path_factory, tiny_model_dir):
    """One end-to-end CLI run on local files: network blocked, secrets planted in the environment,
    a dataset whose subjects and ids try to climb out ("../"), cwd an empty folder."""
    base = tmp_path_factory.mktemp("guarded")
    data = base / "data"
    data.mkdir()
    rows = [{"id": f"../../escape/{i}", "subject": "../../../escaped" if i % 2 else "..", "question": f"Q{i}?",
             "choices": ["w", "x", "y", "z"], "answer": i % 4} for i in range(4)]
    (data / "climb.jsonl").write_bytes(jsonl(*rows))
    (base / "cwd").mkdir()
    out = base / "run" / "out"
    before = sorted(p.relative_to(base) for p in base.rglob("*"))
    proc = run_script(["--model", str(tiny_model_dir), "--dataset", str(data / "climb.jsonl"), "--shuffle",
                       "--seeds", "2", "--log-prompts", "--output-dir", str(out), "--device", "cpu"],
                      cwd=base / "cwd", env={**SECRETS, "HF_HOME": str(base / "hf_home")}, guard=base / "guard")
    return base, out, before, proc


def test_a_local_run_never_touches_the_network(guarded_run):
    base, out, _, proc = guarded_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = base / "guard" / "connections.log"
    assert not log.exists(), log.read_text(encoding="utf-8")[:3000]
    assert (out / "results.json").is_file()


def test_offline_uncached_hub_id_fails_fast_without_touching_the_network(tmp_path):
    (tmp_path / "x.csv").write_text("question,A,B,answer\nq,a,b,A\n", encoding="utf-8")
    proc = run_script(["--model", "nobody-here/no-such-model", "--offline", "--dataset", str(tmp_path / "x.csv")],
                      cwd=tmp_path, env={"HF_HOME": str(tmp_path / "hf")}, guard=tmp_path / "guard", timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("twinkle-hf: error:")]
    assert len(errors) == 1 and "not in the local Hugging Face cache" in errors[0]
    assert not (tmp_path / "guard" / "connections.log").exists()


COUNT_CONNECTS = '''
"""Test probe: every TCP connect is logged (address), then made as usual."""
import os
import socket

_connect = socket.socket.connect


def _logged(self, address):
    with open(os.environ["TWINKLE_CONNECT_LOG"], "a", encoding="utf-8") as fh:
        fh.write(f"{address!r}\\n")
    return _connect(self, address)


socket.socket.connect = _logged
'''


@pytest.mark.parametrize("what", ["model", "dataset"])
def test_uncached_hub_id_fails_at_once_when_the_hub_cannot_be_reached(tmp_path, tiny_model_dir, what):
    """Network on, but HF_ENDPOINT a closed local port: one connection attempt (the probe), no
    retries (they took ~50 s for a model, ~25 s for a dataset), one error line saying so."""
    (tmp_path / "x.csv").write_text("question,A,B,answer\nq,a,b,A\n", encoding="utf-8")
    args = {"model": ["--model", "nobody-here/no-such-model", "--dataset", str(tmp_path / "x.csv")],
            "dataset": ["--model", str(tiny_model_dir), "--dataset", "nobody-here/no-such-dataset"]}[what]
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(COUNT_CONNECTS, encoding="utf-8")
    log = tmp_path / "connects.log"
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": "http://127.0.0.1:9", "TWINKLE_CONNECT_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(probe), str(ROOT)]), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    proc = run_script([*args, "--device", "cpu", "--output-dir", str(tmp_path / "out")], cwd=tmp_path, env=env,
                      timeout=170)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Retry" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("twinkle-hf: error:")]
    assert len(errors) == 1 and "not in the local" in errors[0], proc.stderr
    assert "127.0.0.1:9" in errors[0] and "could not be reached (Connection refused)" in errors[0]
    assert log.read_text(encoding="utf-8").splitlines() == ["('127.0.0.1', 9)"]
    assert not (tmp_path / "out").exists()


def test_a_cached_hub_id_is_not_probed(tmp_path, monkeypatch):
    """In the cache, the hub libraries decide (they fall back to it offline): no probe in front."""
    import huggingface_hub.constants

    from twinkle_hf.data import hub
    from twinkle_hf.models import loading

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    (tmp_path / "models--someone--cached" / "snapshots" / ("0" * 40)).mkdir(parents=True)
    monkeypatch.setattr(hub, "hub_unreachable", lambda: pytest.fail("a cached id was probed"))
    loading._require_reachable("someone/cached", "hub", offline=False)
    monkeypatch.setattr(hub, "hub_unreachable", lambda: "x:1 (x) could not be reached (test)")
    with pytest.raises(TwinkleError, match="could not be reached"):
        loading._require_reachable("someone/not-cached", "hub", offline=False)


# --- 3. determinism -----------------------------------------------------------------------------


def test_predictions_do_not_depend_on_batch_size_or_run(tiny_tokenizer, mmlu_dir):
    model = make_model(tiny_tokenizer)  # float32 on CPU
    runs = {}
    for key, batch_size in (("1", 1), ("7", 7), ("auto", "auto"), ("auto again", "auto")):
        cfg = EvalConfig(model="unused", datasets=(str(mmlu_dir),), shuffle=True, seeds=2, num_fewshot=1,
                         limit=3, batch_size=batch_size, bootstrap=0, device="cpu")
        runs[key] = evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False).predictions
    first = runs["1"]
    assert len(first) == 6 * 3  # 2 subjects x 3 questions x (2 orders + the original)
    for key, other in runs.items():
        assert other.id == first.id and np.array_equal(other.order_index, first.order_index), key
        assert np.array_equal(other.pred, first.pred), key
        assert max(np.max(np.abs(a - b)) for a, b in zip(other.letters.probs, first.letters.probs)) < 1e-6, key


def test_bfloat16_on_cpu_runs(tiny_tokenizer, all_a_dir):
    """bf16 is not bit-identical to fp32 (the measured gap is documented); it must run and give
    probabilities that sum to one."""
    model = make_model(tiny_tokenizer).to(torch.bfloat16)
    cfg = EvalConfig(model="unused", datasets=(str(all_a_dir),), shuffle=True, seeds=2, limit=2, bootstrap=0)
    preds = evaluate(model, tiny_tokenizer, load_datasets(cfg), cfg, progress=False).predictions
    assert all(math.isclose(float(np.sum(p)), 1.0, abs_tol=1e-3) for p in preds.letters.probs)


# --- 4. safety ----------------------------------------------------------------------------------


def test_trust_remote_code_is_off_unless_asked(tiny_model_dir, monkeypatch):
    import transformers

    seen: list[tuple[str, object]] = []
    for cls in (transformers.AutoConfig, transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        original = cls.from_pretrained

        def spy(*args, _original=original, _name=cls.__name__, **kwargs):
            seen.append((_name, kwargs.get("trust_remote_code", "not passed")))
            return _original(*args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", spy)
    for asked in (False, True):
        seen.clear()
        cfg = EvalConfig(model=str(tiny_model_dir), device="cpu", trust_remote_code=asked)
        load_tokenizer(cfg)
        load_model(cfg)
        assert {name for name, _ in seen} == {"AutoConfig", "AutoModelForCausalLM", "AutoTokenizer"}
        assert all(value is asked for _, value in seen), seen
    assert EvalConfig().trust_remote_code is False


def test_custom_code_in_a_model_dir_is_not_executed(tmp_path, tiny_model_dir):
    model_dir = shutil.copytree(tiny_model_dir, tmp_path / "model")
    marker = tmp_path / "EXECUTED"
    (model_dir / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import LlamaConfig, LlamaForCausalLM\n"
        "class EvilConfig(LlamaConfig):\n    pass\nclass EvilModel(LlamaForCausalLM):\n    pass\n",
        encoding="utf-8")
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}
    (model_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    cfg = EvalConfig(model=str(model_dir), device="cpu")
    try:
        model, _ = load_model(cfg)
        assert type(model).__name__ == "LlamaForCausalLM"
    except TwinkleError:
        pass  # refusing is fine too; running the code is not
    assert not marker.exists()


def test_no_secret_reaches_a_file_or_the_console(guarded_run):
    base, _, _, proc = guarded_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = [p for p in base.rglob("*") if p.is_file() and p.parent.name != "guard"]
    assert {"results.json", "predictions.jsonl", "report.md", "subjects.csv"} <= {p.name for p in written}
    for secret in SECRETS.values():
        assert secret not in proc.stdout and secret not in proc.stderr
        for path in written:
            assert secret.encode() not in path.read_bytes(), path


def test_a_secret_in_the_config_file_is_refused_without_echoing_it(tmp_path, tiny_model_dir, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(f"model: {tiny_model_dir}\nhf_token: {SECRETS['HF_TOKEN']}\n", encoding="utf-8")
    line = cli_error(capsys, ["--config", str(config), "--output-dir", str(tmp_path / "out")])
    assert "hf_token" in line and SECRETS["HF_TOKEN"] not in line


def test_outputs_never_escape_the_output_dir(guarded_run):
    """Subjects and ids with '../' are data, never path parts: only the output dir is new."""
    base, out, before, proc = guarded_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = sorted(p.relative_to(base) for p in base.rglob("*"))
    new = {p for p in set(after) - set(before)}
    outside = [p for p in new if not (base / p).resolve().is_relative_to(out.resolve())
               and p.parts[0] not in ("guard", "hf_home") and p not in (Path("run"), Path("run/out"))]
    assert outside == []
    assert not any((base / "cwd").iterdir())
    subjects = json.loads((out / "results.json").read_text(encoding="utf-8"))["datasets"]["climb"]["subjects"]
    assert set(subjects) == {"..", "../../../escaped"}


@pytest.mark.parametrize("model", ["..", "out/..", "ckpt/../..", "..\\evil", "a\\b"])
def test_sweep_run_names_are_one_safe_path_component(model):
    name = run_name(model)
    assert name not in ("", ".", "..") and "/" not in name and "\\" not in name
    assert Path(name).parts == (name,)


def test_safetensors_are_preferred_over_a_pickle(tmp_path, tiny_tokenizer):
    """Both weight files present, with different weights: the safetensors ones are loaded."""
    safe, pickled = make_model(tiny_tokenizer, seed=0), make_model(tiny_tokenizer, seed=1)
    model_dir = save_model_dir(tmp_path / "both", tiny_tokenizer, safe)
    torch.save(pickled.state_dict(), model_dir / "pytorch_model.bin")
    assert (model_dir / "model.safetensors").is_file()
    loaded, _ = load_model(EvalConfig(model=str(model_dir), device="cpu"))
    assert torch.equal(loaded.lm_head.weight, safe.lm_head.weight)
    assert not torch.equal(loaded.lm_head.weight, pickled.lm_head.weight)
