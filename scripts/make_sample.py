"""Regenerate the embedded MMLU sample (``twinkle_hf/resources/mmlu_sample``).

    python scripts/make_sample.py [MMLU_DATA_DIR]      # default: ../shared/data/mmlu/data

MMLU's CSV cells contain newlines, so whole CSV records are copied (never lines), byte for byte:
the first 20 test rows and all dev rows of six subjects from different fields. The copy is then
checked to parse to the same rows as the original. The MIT licence is copied next to it.
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
from pathlib import Path

SUBJECTS = ("abstract_algebra", "college_computer_science", "high_school_biology", "marketing",
            "moral_disputes", "world_religions")
ROWS = {"test": 20, "dev": None}  # None: every row
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "twinkle_hf" / "resources" / "mmlu_sample"
LICENSE_NAME = "LICENSE.hendrycks-test.txt"
SOURCE_MD = """# Embedded MMLU sample

A small slice of MMLU -- Hendrycks et al., "Measuring Massive Multitask Language Understanding",
ICLR 2021 (https://github.com/hendrycks/test) -- under the MIT licence, copied here as `LICENSE`.
It keeps MMLU's own layout: `test/<subject>_test.csv` and `dev/<subject>_dev.csv`, no header,
columns question,A,B,C,D,answer (letter).

- Subjects: {subjects}.
- Rows: the first {n_test} test rows and all {n_dev} dev rows of each subject ({total_test} test,
  {total_dev} dev), copied byte for byte as whole CSV records from the original MMLU CSVs (the
  `data/{{test,dev}}/` files of Hendrycks' data.tar, via the project's shared data folder
  `data/mmlu/data/`).
- Regenerate with `python scripts/make_sample.py <MMLU data dir>`; it checks that each copied
  file parses to exactly the first rows of the original.
"""


def head_records(text: str, n: int | None) -> str:
    """The text of the first ``n`` CSV records (all if None), exactly as in the file."""
    lines = io.StringIO(text, newline="").readlines()
    if n is None:
        return text
    reader = csv.reader(iter(lines))
    for count, _ in enumerate(reader, start=1):
        if count == n:
            return "".join(lines[: reader.line_num])
    raise SystemExit(f"the file has fewer than {n} records")


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def copy_split(data_dir: Path, split: str, n: int | None) -> int:
    """Copy one split's files; returns the number of rows copied."""
    (OUT / split).mkdir(parents=True, exist_ok=True)
    total = 0
    for subject in SUBJECTS:
        name = f"{subject}_{split}.csv"
        text = (data_dir / split / name).read_bytes().decode("utf-8")
        sample = head_records(text, n)
        rows = parse(sample)
        if not text.startswith(sample) or rows != parse(text)[: len(rows)] or len(rows[0]) != 6:
            raise SystemExit(f"{name}: the copy does not reproduce the original rows")
        (OUT / split / name).write_bytes(sample.encode("utf-8"))
        total += len(rows)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared/data/mmlu/data"),
                        help="MMLU data directory holding test/ and dev/")
    data_dir = Path(parser.parse_args().data_dir)
    if OUT.exists():
        shutil.rmtree(OUT)
    counts = {split: copy_split(data_dir, split, n) for split, n in ROWS.items()}
    shutil.copyfile(data_dir.parent / LICENSE_NAME, OUT / "LICENSE")
    source = SOURCE_MD.format(
        subjects=", ".join(f"`{subject}`" for subject in SUBJECTS), n_test=ROWS["test"],
        n_dev=counts["dev"] // len(SUBJECTS), total_test=counts["test"], total_dev=counts["dev"])
    (OUT / "SOURCE.md").write_text(source, encoding="utf-8")


if __name__ == "__main__":
    main()
