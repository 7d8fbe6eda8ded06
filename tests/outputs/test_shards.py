"""--shard K/N and `twinkle-hf merge`: shards 0..N-1 merged equal the one-process run (rows, picks,
probabilities within 1e-6, every metric), for letters with few-shot and random orders beside cloze,
and for cyclic orders answered in writing; more shards than prefix groups leave some empty; --shard
auto reads Slurm's and Kubernetes' variables; a shard killed and resumed merges the same; merge
refuses what is missing, repeated, unfinished or not one run, and writes nothing then."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import make_tokenizer, make_writer_model, save_model_dir

from twinkle_hf.cli import main
from twinkle_hf.errors import TwinkleError
from twinkle_hf.settings.shards import parse_shard, shard_from_env

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]  # as the interpreter running the tests has it
TOL = 1e-6
# random orders + the original, one few-shot example, letters beside cloze: prefix groups are few
LETTERS = ["--limit", "2", "--shuffle", "--seeds", "2", "--num-fewshot", "1", "--method", "logit+cloze"]
WRITTEN = ["--limit", "1", "--shuffle-mode", "cyclic", "--method", "pattern", "--max-new-tokens", "6"]


@pytest.fixture(scope="module", autouse=True)
def offline():
    """Every run here offline, in this process as in the shards' own processes: results.json records
    it in ``config.offline``, which a merged run must share with the one-process run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


def _eval(model: Path, data: Path, out: Path, extra: list[str], *more: str) -> int:
    return main(["--model", str(model), "--dataset", str(data), "--output-dir", str(out), "--quiet",
                 "--device", "cpu", "--batch-size", "3", *extra, *more])


def _merge(folders: list[Path], out: Path) -> int:
    return main(["merge", *map(str, folders), "--output-dir", str(out)])


def _rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def _close(a: object, b: object, where: str = "") -> None:
    """Equal, floats within TOL (batches of other sizes round differently)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, abs=TOL, nan_ok=True), where
    else:
        assert a == b, where


def assert_same_run(one: Path, merged: Path, resumed: bool = False) -> None:
    """Every row (its pick, order, probabilities, scores) and every metric of results.json; the
    tokens run, unless a shard was resumed (its saved rows are not run, nor counted, again)."""
    a, b = _rows(one), _rows(merged)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b):
        _close(x, y, f"row {x['id']}")
    ra, rb = (json.loads((p / "results.json").read_text(encoding="utf-8")) for p in (one, merged))
    for key in ("metrics", "datasets", "data_fingerprint", "seeds", "skipped_rows"):
        _close(ra[key], rb[key], key)
    assert {k: v for k, v in ra["config"].items() if k != "output_dir"} == \
        {k: v for k, v in rb["config"].items() if k != "output_dir"}
    assert ra["timing"]["prompts"] == rb["timing"]["prompts"]
    if not resumed:
        assert ra["timing"]["tokens"] == rb["timing"]["tokens"] and rb["timing"]["resumed_rows"] == 0


def _shards(model: Path, data: Path, root: Path, extra: list[str], n: int) -> list[Path]:
    folders = [root / f"shard{k}of{n}" for k in range(n)]
    for k, folder in enumerate(folders):
        assert _eval(model, data, folder, extra, "--shard", f"{k}/{n}") == 0
    return folders


@pytest.fixture(scope="module")
def letters_one(tiny_model_dir, mmlu_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("letters") / "one"
    assert _eval(tiny_model_dir, mmlu_dir, out, LETTERS) == 0
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_merged_shards_equal_one_process(tiny_model_dir, mmlu_dir, letters_one, tmp_path, n):
    folders = _shards(tiny_model_dir, mmlu_dir, tmp_path, LETTERS, n)
    manifests = [json.loads((f / "shard.json").read_text(encoding="utf-8")) for f in folders]
    assert all(m["finished"] and m["rows_written"] == m["rows_expected"] for m in manifests)
    assert not any((f / "results.json").exists() or (f / "predictions.jsonl").exists() for f in folders)
    one_rows = len(_rows(letters_one))
    # every row of every formulation (letters, the 2 cloze options per question...) in exactly one shard
    assert sum(m["rows_expected"] for m in manifests) >= one_rows
    if n == 5:  # 4 questions, so 4 cloze prefix groups for 5 shards: whole groups dealt, shards of unequal size
        assert min(m["rows_expected"] for m in manifests) < max(m["rows_expected"] for m in manifests)
    assert _merge(folders, tmp_path / "merged") == 0
    assert_same_run(letters_one, tmp_path / "merged")
    timing = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))["timing"]
    assert [s["shard"] for s in timing["shards"]] == [f"{k}/{n}" for k in range(n)]
    assert timing["seconds"] == pytest.approx(sum(m["timing"]["seconds"] for m in manifests))
    assert _merge(folders, tmp_path / "merged") == 2  # a finished merge is refused like any finished run


def test_an_empty_shard_finishes_and_merges(tiny_model_dir, mmlu_dir, tmp_path):
    extra = ["--limit", "1", "--subjects", "anatomy"]  # one question, one prompt: shards 1..3 have no row
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "one", extra) == 0
    folders = _shards(tiny_model_dir, mmlu_dir, tmp_path, extra, 4)
    written = [json.loads((f / "shard.json").read_text(encoding="utf-8"))["rows_written"] for f in folders]
    assert sorted(written) == [0, 0, 0, 1]
    assert _merge(folders, tmp_path / "merged") == 0
    assert_same_run(tmp_path / "one", tmp_path / "merged")


def test_the_choices_only_probe_is_sharded_too(tiny_model_dir, mmlu_dir, tmp_path):
    extra = ["--limit", "2", "--shuffle", "--seeds", "2", "--probe", "choices-only"]
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "one", extra) == 0
    folders = _shards(tiny_model_dir, mmlu_dir, tmp_path, extra, 2)
    assert _merge(folders, tmp_path / "merged") == 0
    assert_same_run(tmp_path / "one", tmp_path / "merged")
    assert all("pred_choices_only" in r for r in _rows(tmp_path / "merged"))


@pytest.fixture(scope="module")
def writer_dir(tmp_path_factory) -> Path:
    tok = make_tokenizer()
    return save_model_dir(tmp_path_factory.mktemp("writer") / "model", tok,
                          make_writer_model(tok, [" so the answer is (", "C", ")"]))


@pytest.mark.parametrize("n", [2, 3])
def test_written_answers_over_cyclic_orders_merge(writer_dir, all_a_dir, tmp_path, n):
    assert _eval(writer_dir, all_a_dir, tmp_path / "one", WRITTEN) == 0
    folders = _shards(writer_dir, all_a_dir, tmp_path, WRITTEN, n)
    assert _merge(folders, tmp_path / "merged") == 0
    assert_same_run(tmp_path / "one", tmp_path / "merged")
    assert {r["output"] for r in _rows(tmp_path / "merged")} == {" so the answer is (C)"}


@pytest.fixture(scope="module")
def three(tiny_model_dir, mmlu_dir, tmp_path_factory) -> list[Path]:
    return _shards(tiny_model_dir, mmlu_dir, tmp_path_factory.mktemp("three"), LETTERS, 3)


def _edited(folder: Path, to: Path, edit) -> Path:
    shutil.copytree(folder, to)
    doc = json.loads((to / "shard.json").read_text(encoding="utf-8"))
    edit(doc)
    (to / "shard.json").write_text(json.dumps(doc), encoding="utf-8")
    return to


def _identity(key: str, value: object):
    return lambda doc: doc["identity"].__setitem__(key, value)


@pytest.mark.parametrize(("case", "said"), [
    ("missing", "shard 1/3 missing"),
    ("repeated", "shard 2/3 is given twice"),
    ("unfinished", "is not finished"),
    ("resumable", "is not finished"),
    ("config", "seeds 3 vs 2"),
    ("data", "data_fingerprint"),
    ("model", "model_fingerprint"),
    ("other split", "splits the run 4 ways"),
    ("not a shard", "holds a finished run made without --shard"),
])
def test_merge_refuses_in_one_line_and_writes_nothing(three, letters_one, tmp_path, capsys, case, said):
    s0, s1, s2 = three
    given = {
        "missing": lambda: [s0, s2],
        "repeated": lambda: [s0, s1, s2, s2],
        "unfinished": lambda: [s0, _edited(s1, tmp_path / "s1", lambda d: d.update(finished=False)), s2],
        "resumable": lambda: [s0, s1, _partial(s2, tmp_path / "s2")],
        "config": lambda: [s0, _edited(s1, tmp_path / "s1", _identity("seeds", 3)), s2],
        "data": lambda: [s0, s1, _edited(s2, tmp_path / "s2", _identity("data_fingerprint", "0" * 64))],
        "model": lambda: [s0, _edited(s1, tmp_path / "s1", _identity("model_fingerprint", "f" * 64)), s2],
        "other split": lambda: [s0, s1, _edited(s2, tmp_path / "s2", lambda d: d["shard"].update(count=4))],
        "not a shard": lambda: [letters_one, s1, s2],
    }[case]()
    capsys.readouterr()
    assert _merge(given, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert not (tmp_path / "out").exists()


def _partial(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    (to / ".partial").mkdir()
    (to / ".partial" / "run.json").write_text("{}", encoding="utf-8")
    return to


def test_a_finished_shard_is_not_overwritten(tiny_model_dir, mmlu_dir, three, capsys):
    before = (three[0] / "rows.jsonl").read_bytes()
    capsys.readouterr()
    assert _eval(tiny_model_dir, mmlu_dir, three[0], LETTERS, "--shard", "0/3") == 2
    assert "finished shard 0/3" in capsys.readouterr().err
    assert (three[0] / "rows.jsonl").read_bytes() == before


@pytest.mark.parametrize(("env", "found"), [
    ({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "8"}, "2/8"),
    ({"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "13"}, "2/4"),
    ({"SLURM_ARRAY_TASK_ID": "11", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "3"}, "1/3"),
    ({"JOB_COMPLETION_INDEX": "0", "TWINKLE_SHARDS": "5"}, "0/5"),
])
def test_shard_auto_reads_the_job_array(env, found):
    text, used = shard_from_env(env)
    assert text == found and found in used and next(iter(env)) in used


@pytest.mark.parametrize(("env", "said"), [
    ({}, "no job array here"),
    ({"JOB_COMPLETION_INDEX": "1"}, "TWINKLE_SHARDS"),
    ({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, "K must be 0..N-1"),
    ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, "not an integer"),
])
def test_shard_auto_without_a_usable_array_is_one_line(env, said):
    with pytest.raises(TwinkleError, match=said):
        shard_from_env(env)


@pytest.mark.parametrize("text", ["3/3", "0/0", "-1/2", "a/2", "1", "1/2/3", "1.0/2"])
def test_bad_shards_are_refused(text, tiny_model_dir, mmlu_dir, tmp_path, capsys):
    with pytest.raises(TwinkleError, match="shard"):
        parse_shard(text)
    capsys.readouterr()
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "out", [], "--shard", text) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_shard_auto_on_the_command_line(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch, capsys):
    for name in ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                 "JOB_COMPLETION_INDEX", "TWINKLE_SHARDS"):
        monkeypatch.delenv(name, raising=False)
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "none", LETTERS, "--shard", "auto") == 2
    assert "no job array here" in capsys.readouterr().err
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "3")
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "slurm", LETTERS, "--shard", "auto") == 0
    assert "--shard auto: shard 1/3 from SLURM_ARRAY_TASK_ID" in capsys.readouterr().err
    assert json.loads((tmp_path / "slurm" / "shard.json").read_text(encoding="utf-8"))["shard"] == \
        {"index": 1, "count": 3}


def test_shard_rows_are_the_data_parallel_share():
    """The dealing is runtime/rows.deal_rows, the data-parallel one: every row once over the shards."""
    from twinkle_hf.runtime.rows import deal_rows

    ids = [[1] * (i % 7 + 1) for i in range(23)]
    groups = [i // 3 for i in range(23)]
    for n in (1, 2, 3, 5, 9):
        shares = [deal_rows(ids, groups, k, n) for k in range(n)]
        assert sorted(i for s in shares for i in s) == list(range(23))
        for s in shares:  # whole prefix groups
            assert all(set(i for i in range(23) if groups[i] == groups[r]) <= set(s) for r in s)
    assert np.all(np.diff(deal_rows(ids, groups, 0, 2)) > 0)  # in row order


def _process(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """scripts/eval.py (or torchrun over it) as a process of its own, with the job array's ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMPLETION", "TWINKLE_SHARDS"))}
    return subprocess.Popen([*cmd, "--output-dir", str(out), "--quiet", "--device", "cpu"], cwd=ROOT,
                            env={**clean, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(proc: subprocess.Popen) -> str:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return err


@pytest.mark.slow
def test_shards_as_processes_under_torchrun_and_job_arrays(tiny_model_dir, mmlu_dir, letters_one, tmp_path):
    """Shard 0 under Slurm's array variables, shard 1 split again over 2 torchrun processes, shard 2
    under a Kubernetes Indexed Job's: each a process of its own, merged by another."""
    args = ["scripts/eval.py", "--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--batch-size", "3",
            *LETTERS]
    slurm = _finished(_process([sys.executable, *args, "--shard", "auto"], tmp_path / "s0",
                               {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"}))
    assert "shard 0/3 from SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT" in slurm
    _finished(_process([*TORCHRUN, "--nproc_per_node", "2", *args, "--shard", "1/3"], tmp_path / "s1"))
    kube = _finished(_process([sys.executable, *args, "--shard", "auto"], tmp_path / "s2",
                              {"JOB_COMPLETION_INDEX": "2", "TWINKLE_SHARDS": "3"}))
    assert "shard 2/3 from JOB_COMPLETION_INDEX of TWINKLE_SHARDS" in kube
    split = json.loads((tmp_path / "s1" / "shard.json").read_text(encoding="utf-8"))["timing"]["parallel"]
    assert split["processes"] == 2 and split["mode"] == "data parallel"
    merge = subprocess.run([sys.executable, "scripts/eval.py", "merge", str(tmp_path / "s*"), "--output-dir",
                            str(tmp_path / "merged")], cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert merge.returncode == 0, merge.stderr[-3000:]
    assert_same_run(letters_one, tmp_path / "merged")


@pytest.mark.slow
def test_a_killed_shard_resumes_and_merges_the_same(tiny_model_dir, tmp_path):
    data = tmp_path / "many.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["question", "A", "B", "C", "D", "answer"])
        writer.writerows([f"Question {i} about whales?", f"a{i}", f"b{i}", f"c{i}", f"d{i}", "ABCD"[i % 4]]
                         for i in range(60))
    extra = ["--shuffle", "--seeds", "4", "--no-share-prefix"]  # 300 rows, 150 in shard 0, one per batch
    killed = tmp_path / "s0"
    proc = _process([sys.executable, "scripts/eval.py", "--model", str(tiny_model_dir), "--dataset", str(data),
                     "--batch-size", "1", *extra, "--shard", "0/2"], killed)
    scores = killed / ".partial" / "scores.0.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if scores.is_file() and len(scores.read_bytes().splitlines()) >= 30:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the shard finished before it could be killed"
    assert not json.loads((killed / "shard.json").read_text(encoding="utf-8"))["finished"]
    assert _eval(tiny_model_dir, data, tmp_path / "s1", extra, "--shard", "1/2") == 0
    assert _merge([killed, tmp_path / "s1"], tmp_path / "merged") == 2  # unfinished: refused
    assert _eval(tiny_model_dir, data, killed, extra, "--shard", "0/2") == 2  # no --resume: refused
    assert _eval(tiny_model_dir, data, killed, extra, "--shard", "0/2", "--resume") == 0
    timing = json.loads((killed / "shard.json").read_text(encoding="utf-8"))["timing"]
    assert 30 <= 150 - timing["rows"] < 150  # the saved rows were not run again
    assert _eval(tiny_model_dir, data, tmp_path / "one", extra) == 0
    assert _merge([killed, tmp_path / "s1"], tmp_path / "merged") == 0
    assert_same_run(tmp_path / "one", tmp_path / "merged", resumed=True)
    merged = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert merged["timing"]["resumed_rows"] == 150 - timing["rows"]


def test_the_merged_run_is_logged_to_the_trackers_the_shards_named(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch):
    pytest.importorskip("tensorboard", reason="pip install -e '.[tensorboard]' to log to TensorBoard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    folders = _shards(tiny_model_dir, mmlu_dir, tmp_path, ["--limit", "2", "--report-to", "tensorboard"], 2)
    assert not any((f / "tensorboard").exists() for f in folders)  # a shard has no numbers to log
    assert _merge(folders, tmp_path / "merged") == 0
    events = EventAccumulator(str(tmp_path / "merged" / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    logged = tensor_util.make_ndarray(events.Tensors("accuracy")[0].tensor_proto).item()
    doc = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert logged == doc["metrics"]["accuracy"]["value"]


def test_merge_leaves_the_callers_hub_settings_as_they_were(three, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    assert _merge(three, tmp_path / "merged") == 0
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["HF_DATASETS_OFFLINE"] == "0"


def test_a_glob_takes_the_shard_folders_and_not_the_jobs_log_files_beside_them(tmp_path):
    from twinkle_hf.errors import TwinkleError
    from twinkle_hf.merge import shard_folders

    for k in (1, 0, 10):
        (tmp_path / f"shard-{k}").mkdir()
        (tmp_path / f"shard-{k}.out").write_text("slurm's log\n", encoding="utf-8")
    assert shard_folders([str(tmp_path / "shard-*")]) == [tmp_path / f"shard-{k}" for k in (0, 1, 10)]
    with pytest.raises(TwinkleError, match="matches no folder"):
        shard_folders([str(tmp_path / "*.out")])


def test_merged_shards_write_twinkle_evals_files_as_one_process(tiny_model_dir, mmlu_dir, tmp_path):
    extra = ["--limit", "2", "--shuffle", "--seeds", "2", "--twinkle-results"]
    assert _eval(tiny_model_dir, mmlu_dir, tmp_path / "one", extra) == 0
    assert _merge(_shards(tiny_model_dir, mmlu_dir, tmp_path, extra, 2), tmp_path / "merged") == 0

    def files(run: Path) -> dict[str, object]:
        out: dict[str, object] = {}
        for path in sorted((run / "results").iterdir()):
            name = re.sub(r"\d{8}_\d{4}", "STAMP", path.name)  # the minute each was written
            text = path.read_text(encoding="utf-8")
            out[name] = json.loads(text) if path.suffix == ".json" else [json.loads(x) for x in text.splitlines()]
        return out

    one, merged = files(tmp_path / "one"), files(tmp_path / "merged")
    assert sorted(one) == sorted(merged) == ["eval_results_STAMP_run0.jsonl", "eval_results_STAMP_run1.jsonl",
                                             "results_STAMP.json"]
    for doc in (one["results_STAMP.json"], merged["results_STAMP.json"]):
        doc.pop("duration_seconds")  # type: ignore[union-attr]
        doc["config"]["twinkle_hf"]["output_dir"] = None  # type: ignore[index]
    _close(one, merged)
