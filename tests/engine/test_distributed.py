"""1 process vs 2 (torchrun, gloo on CPU): same predictions, same metrics, no row lost or doubled;
the processes agree on the run's folder and on what a resumed run still has to score."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from twinkle_hf.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
# torchrun as the interpreter running the tests has it (no need for the venv on PATH)
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def _run(cmd: list[str], out: Path, extra_env: dict[str, str] | None = None) -> dict:
    # faulthandler: a process that dies of a signal prints every thread's Python stack first
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1", **(extra_env or {})}
    proc = subprocess.run(cmd + ["--output-dir", str(out), "--quiet", "--device", "cpu"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, f"stdout: {proc.stdout[-1000:]}\nstderr: {proc.stderr[-6000:]}"
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_two_processes_equal_one(tiny_model_dir, all_a_dir, mmlu_dir, tmp_path):
    # limit 3: 3 subjects of all_a + 2 of mmlu = 15 questions x (2 orders + the original) = 45 rows
    args = ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--dataset", str(mmlu_dir),
            "--limit", "3", "--shuffle", "--seeds", "2", "--batch-size", "4"]
    one = _run([sys.executable, "scripts/eval.py", *args], tmp_path / "one")
    two = _run([*TORCHRUN, "--nproc_per_node", "2", "scripts/eval.py", *args], tmp_path / "two")
    lines = {name: [json.loads(x) for x in (tmp_path / name / "predictions.jsonl").read_text().splitlines()]
             for name in ("one", "two")}
    assert len(lines["one"]) == len(lines["two"]) == one["timing"]["prompts"] == two["timing"]["prompts"]
    keys = [(r["dataset"], r["id"], r["seed"]) for r in lines["two"]]
    assert len(set(keys)) == len(keys)  # nothing counted twice
    assert len(keys) % 2 == 1  # the row count does not divide by the process count
    for a, b in zip(lines["one"], lines["two"]):
        assert (a["id"], a["seed"], a["perm"], a["pred"]) == (b["id"], b["seed"], b["perm"], b["pred"])
        np.testing.assert_allclose(a["probs"], b["probs"], atol=1e-6)
    for key in ("accuracy", "acc_original", "letter_dist", "all_correct", "fluctuation"):
        assert one["metrics"][key] == two["metrics"][key], key
    assert one["timing"]["tokens"] == two["timing"]["tokens"]


# Fault injection for one process (TWINKLE_LAGGING_RANK): its clock runs an hour ahead, and it reads
# the partial score files of a run 3 s late, after the main process has started scoring.
LAGGING = '''
import os

if os.environ.get("RANK") is not None and os.environ.get("RANK") == os.environ.get("TWINKLE_LAGGING_RANK"):
    import pathlib
    import time

    _gmtime, _read_text = time.gmtime, pathlib.Path.read_text
    time.gmtime = lambda secs=None: _gmtime((time.time() if secs is None else secs) + 3600)

    def _late_read(self, *args, **kwargs):
        if self.name.startswith("scores.") and self.name.endswith(".jsonl"):
            time.sleep(3)
        return _read_text(self, *args, **kwargs)

    pathlib.Path.read_text = _late_read
'''


def _lagging_env(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "lagging"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(LAGGING, encoding="utf-8")
    path = [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"TWINKLE_LAGGING_RANK": "1", "PYTHONPATH": os.pathsep.join(path)}


def test_processes_write_into_the_folder_the_main_process_picked(tiny_model_dir, all_a_dir, tmp_path):
    """No --output-dir, and rank 1's clock an hour ahead: one run folder, nothing left behind."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **_lagging_env(tmp_path)}
    proc = subprocess.run([*TORCHRUN, "--nproc_per_node", "2", str(ROOT / "scripts" / "eval.py"),
                           "--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--limit", "1", "--quiet",
                           "--device", "cpu"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = list((tmp_path / "results").glob("*/*"))
    assert len(runs) == 1, runs
    assert (runs[0] / "results.json").is_file() and not list(tmp_path.rglob(".partial"))


def _ppid(pid_dir: Path) -> int | None:
    try:
        return int((pid_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _kill_launch(proc: subprocess.Popen) -> None:
    """SIGKILL torchrun and its workers (it starts each worker in a session, a process group, of its own)."""
    workers = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == proc.pid]
    for group in [proc.pid, *workers]:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    proc.wait()


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.is_file() else 0


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds torchrun's workers through /proc")
def test_a_killed_two_process_run_resumes_to_the_one_process_result(tiny_model_dir, tmp_path):
    data = tmp_path / "many.csv"
    data.write_text("question,A,B,C,D,answer\n" + "".join(
        f"Question {i} about whales?,a{i},b{i},c{i},d{i},{'ABCD'[i % 4]}\n" for i in range(100)), encoding="utf-8")
    args = ["--model", str(tiny_model_dir), "--dataset", str(data), "--shuffle", "--seeds", "4", "--batch-size", "1",
            "--no-share-prefix"]
    assert main([*args, "--output-dir", str(tmp_path / "one"), "--quiet", "--device", "cpu"]) == 0
    one = json.loads((tmp_path / "one" / "results.json").read_text(encoding="utf-8"))
    broken = tmp_path / "two"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([*TORCHRUN, "--nproc_per_node", "2", "scripts/eval.py", *args,
                             "--output-dir", str(broken), "--quiet", "--device", "cpu"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    files = [broken / ".partial" / f"scores.{rank}.jsonl" for rank in (0, 1)]
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and min(map(_lines, files)) < 20:
        time.sleep(0.02)
    _kill_launch(proc)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    saved = sum(map(_lines, files))
    assert saved < 500 and not (broken / "results.json").exists()

    two = _run([*TORCHRUN, "--nproc_per_node", "2", "scripts/eval.py", *args, "--resume"], broken,
               extra_env=_lagging_env(tmp_path))
    assert two["timing"]["resumed_rows"] >= saved - 2  # a torn last line per file is scored again
    a, b = ([json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
            for out in (tmp_path / "one", broken))
    assert len(a) == len(b) == 500
    for x, y in zip(a, b):
        assert (x["id"], x["seed"], x["perm"], x["pred"]) == (y["id"], y["seed"], y["perm"], y["pred"])
        np.testing.assert_allclose(x["probs"], y["probs"], atol=1e-6)
    assert one["metrics"]["accuracy"] == two["metrics"]["accuracy"]
    assert not (broken / ".partial").exists()
