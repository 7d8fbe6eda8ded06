"""Write twinkle_hf/resources/benchmarks/subjects.json: each benchmark's subjects and the
description lm-evaluation-harness's own task gives each one (MIT), read from the installed lm-eval.

    pip install lm-eval==0.4.13 && python scripts/make_benchmark_subjects.py

The file is committed; this script says where every string in it came from and rebuilds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "twinkle_hf" / "resources" / "benchmarks" / "subjects.json"
# benchmark -> (task folder, YAML glob, task-name prefix stripped to give the subject)
SOURCES = {
    "mmlu": ("mmlu/default", "mmlu_*.yaml", "mmlu_"),
    "cmmlu": ("cmmlu", "cmmlu_*.yaml", "cmmlu_"),
    "ceval": ("ceval", "ceval-valid_*.yaml", "ceval-valid_"),
    "tmmluplus": ("tmmluplus/default", "tmmluplus_*.yaml", "tmmluplus_"),
    "tmlu": ("tmlu/default", "tmlu_*.yaml", "tmlu_"),
    "kmmlu": ("kmmlu/default", "kmmlu_*.yaml", "kmmlu_"),  # no description: "" (the config name is the subject)
    "arabicmmlu": ("arabicmmlu", "arabicmmlu_*.yaml", "arabicmmlu_"),
}


class _Loader(yaml.SafeLoader):
    """Reads lm-eval's task YAMLs without resolving their !function tags."""


_Loader.add_constructor("!function", lambda loader, node: None)


def main() -> None:
    import lm_eval

    tasks = Path(lm_eval.__file__).parent / "tasks"
    out: dict[str, dict[str, str]] = {}
    for name, (folder, pattern, prefix) in SOURCES.items():
        subjects: dict[str, str] = {}
        for path in sorted((tasks / folder).glob(pattern)):
            cfg = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
            if not isinstance(cfg, dict) or "task" not in cfg or not ("description" in cfg or "dataset_name" in cfg):
                continue
            subjects[str(cfg.get("dataset_name") or cfg["task"][len(prefix):])] = cfg.get("description", "")
        out[name] = dict(sorted(subjects.items()))
    out["_source"] = {"lm_eval": lm_eval.__version__}  # type: ignore[assignment]
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: " + ", ".join(f"{k} {len(v)}" for k, v in out.items() if k != "_source"))


if __name__ == "__main__":
    main()
