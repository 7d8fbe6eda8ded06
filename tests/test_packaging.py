"""What the package imports is what it declares, requirements.txt says the same as setup.cfg, and the
tests find the real assets where the README says."""

from __future__ import annotations

import ast
import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST_OF = {"yaml": "pyyaml"}  # import name -> distribution name, where they differ


def _names(lines: str) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", line.strip())[0].lower().replace("_", "-")
            for line in lines.splitlines() if line.strip() and not line.strip().startswith("#")}


def _declared() -> tuple[set[str], set[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    required = _names(cfg["options"]["install_requires"])
    extras = set().union(*(_names(v) for v in cfg["options.extras_require"].values()))
    return required, extras


def _imports(folder: Path) -> set[str]:
    found = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("twinkle_hf", "__future__")}


def test_every_third_party_import_is_declared():
    required, extras = _declared()
    for module in sorted(_imports(ROOT / "twinkle_hf")):
        dist = DIST_OF.get(module, module).lower().replace("_", "-")
        assert dist in required | extras, f"twinkle_hf imports {module} but setup.cfg does not declare {dist}"


def test_requirements_txt_matches_install_requires():
    required, _ = _declared()
    assert _names((ROOT / "requirements.txt").read_text(encoding="utf-8")) == required


def test_the_real_assets_come_from_twinkle_hf_shared_and_skips_say_why(tmp_path):
    """A fresh clone has no ../shared: the tests that need it skip, and pytest prints why (addopts -ra)."""
    nowhere = tmp_path / "nowhere"
    env = {**os.environ, "TWINKLE_HF_SHARED": str(nowhere)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/prompts/test_letters.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "short test summary info" in done.stdout and f"real tokenizers not found in {nowhere}" in done.stdout
