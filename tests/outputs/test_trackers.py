"""`--report-to`: each tracker logs a real CLI run offline into a temporary folder, read back with the
tracker's own reader; the logged accuracy is results.json's. A tracker that is not installed is one
line and exit 2 before any weights load; compare logs its verdicts. A tracker's tests skip, with the
reason, where it is not installed (`pip install -e ".[trackers]"`)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import twinkle_hf.models.loading
from twinkle_hf.cli import main
from twinkle_hf.errors import TwinkleError
from twinkle_hf.outputs.trackers import PACKAGES, flat_params, metric_name
from twinkle_hf.settings.config import build_config

ROOT = Path(__file__).resolve().parents[2]
TRACKERS = tuple(PACKAGES)


def needs(name: str) -> pytest.MarkDecorator:
    module = PACKAGES[name][0]
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (pip install -e \".[{PACKAGES[name][1]}]\")")


def eval_args(model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--dataset", str(data), "--shuffle-mode", "cyclic", "--limit", "3",
            "--output-dir", str(out), "--quiet", *extra]


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def subject_accuracies(doc: dict) -> dict[str, float]:
    return {metric_name("subject", d, s, "accuracy"): m["accuracy"]["value"]
            for d, block in doc["datasets"].items() for s, m in block["subjects"].items()}


# ---------------------------------------------------------------------------------------------- settings


@pytest.mark.parametrize("value", ["mlflow, TensorBoard", ["mlflow", "tensorboard"], "mlflow,tensorboard,mlflow"])
def test_report_to_is_a_list_or_a_comma_string(value):
    assert build_config({"report_to": value}).report_to == ("mlflow", "tensorboard")


def test_report_to_none_and_the_default_log_nowhere():
    assert build_config({"report_to": "none"}).report_to == () == build_config().report_to


def test_an_unknown_tracker_lists_the_valid_names(capsys):
    with pytest.raises(TwinkleError, match=r"'comet'.*mlflow, wandb, tensorboard, trackio"):
        build_config({"report_to": "mlflow,comet"})
    assert main(["--model", "m", "--report-to", "comet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("twinkle-hf: error: --report-to") and "trackio" in err


def test_a_resumed_run_may_log_to_other_trackers():
    from twinkle_hf.outputs.resume import run_identity
    from twinkle_hf.settings.config import EvalConfig

    identity = lambda names: run_identity(EvalConfig(model="m", report_to=names).to_dict(), None)
    assert identity(("tensorboard",)) == identity(()) and "report_to" not in identity(("mlflow",))


def test_params_are_flat_text():
    params = flat_params({"seeds": 5, "columns": {"question": "q"}, "limit": None, "subjects": ["a", "b"], "x": {}})
    assert params == {"seeds": "5", "columns.question": "q", "limit": "null", "subjects": '["a", "b"]', "x": "{}"}
    assert metric_name("subject", "global_mmlu:ja", "a b", "accuracy") == "subject/global_mmlu_ja/a b/accuracy"


# ---------------------------------------------------------------------------------------------- not installed


@pytest.mark.parametrize("name", TRACKERS)
def test_a_missing_tracker_is_one_line_before_any_weights_load(name, monkeypatch, capsys, tiny_model_dir, mmlu_dir,
                                                               tmp_path):
    loads = []
    monkeypatch.setattr(twinkle_hf.models.loading, "load_model", lambda *a, **k: loads.append("model"))
    monkeypatch.setattr(twinkle_hf.models.loading, "load_tokenizer", lambda *a, **k: loads.append("tokenizer"))
    monkeypatch.setitem(sys.modules, PACKAGES[name][0], None)  # `import` of it now fails as if not installed
    rc = main(eval_args(tiny_model_dir, mmlu_dir, tmp_path / "run", "--report-to", name))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and loads == [] and not (tmp_path / "run").exists()
    assert err.count("\n") == 0 and f"--report-to {name}:" in err and f'pip install -e ".[{PACKAGES[name][1]}]"' in err
    assert main(["compare", "a", "b", "--report-to", name]) == 2  # before the runs are read
    assert "pip install" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- each tracker


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory) -> Path:
    """One sqlite store for the module's mlflow tests (creating its tables takes a while)."""
    return tmp_path_factory.mktemp("mlflow")


def use_mlflow(store: Path, monkeypatch) -> None:
    monkeypatch.chdir(store)  # mlflow's artifacts go under the working folder
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store / 'mlflow.db'}")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)


@needs("mlflow")
def test_mlflow_logs_the_run(tiny_model_dir, mmlu_dir, tmp_path, mlflow_store, monkeypatch, capsys):
    import mlflow

    use_mlflow(mlflow_store, monkeypatch)
    out = tmp_path / "run"
    assert main(eval_args(tiny_model_dir, mmlu_dir, out, "--report-to", "mlflow")) == 0
    run_id = re.search(r"logged to mlflow: run (\w+)", capsys.readouterr().err).group(1)
    run = mlflow.MlflowClient().get_run(run_id)
    doc = results(out)
    assert run.data.metrics["accuracy"] == doc["metrics"]["accuracy"]["value"]
    assert run.data.metrics["acc_original"] == doc["metrics"]["acc_original"]["value"]
    for key, value in subject_accuracies(doc).items():
        assert run.data.metrics[key] == value
    assert run.data.params["shuffle_mode"] == "cyclic" and run.data.params["limit"] == "3"
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run_id)}
    assert {"results.json", "report.html", "report.md"} <= artifacts


def wandb_records(run_dir: Path) -> list:
    """The records of an offline run's .wandb file (a LevelDB-style log of wandb's protobuf records)."""
    from wandb.proto import wandb_internal_pb2

    data = (next(run_dir.glob("run-*.wandb"))).read_bytes()
    block, header, pos, chunk, records = 32768, 7, 7, b"", []
    while pos + header <= len(data):
        if block - pos % block < header:  # too little left in this block for a header: padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + header])
        chunk, pos = chunk + data[pos + header:pos + header + length], pos + header + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunk)
            records.append(record)
            chunk = b""
    return records


@needs("wandb")
def test_wandb_logs_the_run_offline(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    assert main(eval_args(tiny_model_dir, mmlu_dir, out, "--report-to", "wandb")) == 0
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    records = wandb_records(run_dir)
    history = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            history.update({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                            for item in r.history.item})
    doc = results(out)
    assert history["accuracy"] == doc["metrics"]["accuracy"]["value"]
    for key, value in subject_accuracies(doc).items():
        assert history[key] == value
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    config = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in run.config.update}
    assert config["shuffle_mode"] == "cyclic" and run.display_name == "model"
    files = {c.path for r in records if r.WhichOneof("record_type") == "artifact" for c in r.artifact.manifest.contents}
    assert {"results.json", "report.html", "report.md"} <= files


@needs("tensorboard")
def test_tensorboard_writes_event_files_in_the_output_dir(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    out = tmp_path / "run"
    assert main(eval_args(tiny_model_dir, mmlu_dir, out, "--report-to", "tensorboard")) == 0
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    logged = lambda tag: tensor_util.make_ndarray(events.Tensors(tag)[0].tensor_proto).item()
    doc = results(out)
    assert logged("accuracy") == doc["metrics"]["accuracy"]["value"]  # in double precision: the same number
    for key, value in subject_accuracies(doc).items():
        assert logged(key) == value
    report = tensor_util.make_ndarray(events.Tensors("report/text_summary")[0].tensor_proto).item().decode()
    assert report == (out / "report.md").read_text(encoding="utf-8")


TRACKIO_READ = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
project, run = sys.argv[1:]
print(json.dumps({"logs": SQLiteStorage.get_logs(project, run), "config": SQLiteStorage.get_run_config(project, run),
                  "artifacts": SQLiteStorage.get_run_artifacts(project, run, None)}, default=str))
"""


@needs("trackio")
def test_trackio_logs_into_its_local_store(tiny_model_dir, mmlu_dir, tmp_path):
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}  # trackio reads TRACKIO_DIR once, on import: a process of its own
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "eval.py"),
                          *eval_args(tiny_model_dir, mmlu_dir, out, "--report-to", "trackio")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    read = subprocess.run([sys.executable, "-c", TRACKIO_READ, "twinkle-hf", "model"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert read.returncode == 0, read.stderr
    logged = json.loads(read.stdout)
    metrics = {k: v for log in logged["logs"] for k, v in log.items()}
    doc = results(out)
    assert metrics["accuracy"] == doc["metrics"]["accuracy"]["value"]
    for key, value in subject_accuracies(doc).items():
        assert metrics[key] == value
    assert metrics["report"]["_value"] == (out / "report.md").read_text(encoding="utf-8")
    assert logged["config"]["shuffle_mode"] == "cyclic"
    assert "results.json" in json.dumps(logged["artifacts"])


# ---------------------------------------------------------------------------------------------- compare


def write_run(path: Path, correct: list[bool]) -> Path:
    """A finished unshuffled run: one original-order row per question of one subject."""
    path.mkdir(parents=True)
    with open(path / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for i, right in enumerate(correct):
            fh.write(json.dumps({"dataset": "ds", "id": f"q{i}", "subject": "s1" if i % 2 else "s2", "order": -1,
                                 "perm": [0, 1, 2, 3], "answer": 0, "pred": 0 if right else 1,
                                 "probs": [0.25] * 4, "letter_mass": 0.5}) + "\n")
    doc = {"model": {"name_or_path": path.name}, "seeds": {"base_seed": 1, "mode": "none"}, "metrics": {}}
    (path / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def two_runs(tmp_path: Path) -> list[str]:
    base = write_run(tmp_path / "base", [i % 3 == 0 for i in range(30)])
    other = write_run(tmp_path / "next", [i % 3 != 2 for i in range(30)])
    return [str(base), str(other)]


@needs("mlflow")
def test_compare_logs_its_verdicts_to_mlflow(two_runs, tmp_path, mlflow_store, monkeypatch, capsys):
    import mlflow

    use_mlflow(mlflow_store, monkeypatch)
    output = tmp_path / "cmp.md"
    assert main(["compare", *two_runs, "--output", str(output), "--margin", "2", "--report-to", "mlflow"]) == 0
    run_id = re.search(r"logged to mlflow: run (\w+)", capsys.readouterr().err).group(1)
    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    pairs = json.loads(output.with_suffix(".json").read_text(encoding="utf-8"))["pairs"]
    assert pairs
    for pair in pairs:
        logged = {key: run.data.metrics[metric_name("verdict", pair["other"], pair["metric"],
                                                    *pair["dataset"].split("/"), key)]
                  for key in ("diff", "p_holm", "right_to_wrong", "tost_p")}
        assert logged == {"diff": pair["diff"], "p_holm": pair["p_holm"],
                          "right_to_wrong": pair["flips"]["right_to_wrong"], "tost_p": pair["equivalence"]["p"]}
    assert run.data.params["baseline"] == "base" and run.data.params["margin"] == "0.02"
    assert {"cmp.md", "cmp.json", "cmp.html", "verdicts_table.json"} <= {a.path for a in client.list_artifacts(run_id)}
    table = mlflow.load_table("verdicts_table.json", run_ids=[run_id])
    assert list(table["verdict"]) == [p["verdict"] for p in pairs]


@needs("tensorboard")
def test_compare_without_output_logs_to_tensorboard_in_the_working_folder(two_runs, tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    assert main(["compare", *two_runs, "--report-to", "tensorboard"]) == 0
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    overall = metric_name("verdict", "next", "acc_original", "overall", "diff")
    assert tensor_util.make_ndarray(events.Tensors(overall)[0].tensor_proto).item() == pytest.approx(1 / 3)


def test_a_tracker_that_fails_is_one_warning_and_the_others_still_log(tmp_path, monkeypatch):
    from twinkle_hf.outputs import trackers
    from twinkle_hf.outputs.tracker_clients import TrackedRun

    logged = []

    def unreachable(run):
        raise ConnectionError("HTTPConnectionPool(host='mlflow.lab', port=5000): Max retries exceeded\nmore lines")

    monkeypatch.setitem(trackers.CLIENTS, "mlflow", unreachable)
    monkeypatch.setitem(trackers.CLIENTS, "tensorboard", lambda run: logged.append(run.metrics) or "events/")
    run = TrackedRun(name="m", folder=tmp_path, params={}, metrics={"accuracy": 0.5})
    told = trackers.report_to(["mlflow", "tensorboard"], run)
    assert told[0] == ("warning: could not log to mlflow (ConnectionError: HTTPConnectionPool(host='mlflow.lab', "
                       f"port=5000): Max retries exceeded); the files are in {tmp_path}")
    assert told[1] == "logged to tensorboard: events/" and logged == [{"accuracy": 0.5}]
