"""1 process vs 2 (torchrun, gloo on CPU): same predictions, same metrics, no row lost or doubled."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun is not on PATH")]


def _run(cmd: list[str], out: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd + ["--output-dir", str(out), "--quiet", "--device", "cpu"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_two_processes_equal_one(tiny_model_dir, all_a_dir, mmlu_dir, tmp_path):
    # limit 3: 3 subjects of all_a + 2 of mmlu = 15 questions x (2 orders + the original) = 45 rows
    args = ["--model", str(tiny_model_dir), "--dataset", str(all_a_dir), "--dataset", str(mmlu_dir),
            "--limit", "3", "--shuffle", "--seeds", "2", "--batch-size", "4"]
    one = _run([sys.executable, "scripts/eval.py", *args], tmp_path / "one")
    two = _run([shutil.which("torchrun"), "--nproc_per_node", "2", "scripts/eval.py", *args], tmp_path / "two")
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
