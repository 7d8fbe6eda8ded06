"""Local copies of each benchmark in its release's own layout, written by tests, and the same documents
in the Hub schema that lm-evaluation-harness's task reads (its ``doc_to_text`` names Hub columns).

Each writer returns ``(root, lm_files)``: ``root`` is what ``--benchmark NAME=root`` reads, and
``lm_files[task] = (builder, {split: file})`` is what lm-eval's own task for ``task`` is pointed at.
The rows are small but awkward: whitespace around questions, newlines, commas and quotes, "None" and
"NA" as option texts, CJK text, every gold letter.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

LETTERS = "ABCD"
LmFiles = dict[str, tuple[str, dict[str, str]]]


def awkward_rows(tag: str, n: int, zh: bool = False) -> list[list[str]]:
    """``n`` rows ``question, A, B, C, D, answer-letter`` (deterministic)."""
    stems = ["  {t} 第{i}題：下列何者正確？ ", "{t} question {i}, with a comma\nand a newline?", '{t} "quoted" {i}\t',
             "{t}: which is right? ({i})"] if zh else \
        ["  {t} question {i}, leading and trailing spaces  ", "{t} question {i}\nsecond line, with a comma",
         '{t} "quoted" question {i}?', "{t}: pick one ({i})\n"]
    rows = []
    for i in range(n):
        options = [f"{tag} {i} option a", "None", f" {tag} 選項 {i}" if zh else f" {tag} {i} c, d", "NA"]
        rows.append([stems[i % len(stems)].format(t=tag, i=i), *options, LETTERS[(i * 3 + 1) % 4]])
    return rows


def _csv(path: Path, rows: list[list[str]], header: list[str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)


def _jsonl(path: Path, docs: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return str(path)


def read_mmlu_csv(path: Path) -> list[list[str]]:
    """An original MMLU CSV (no header), read with the csv module alone."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [row for row in csv.reader(fh)]


def write_mmlu(tmp: Path, source: Path, subjects: list[str]) -> tuple[Path, LmFiles]:
    """MMLU's release (``data/{dev,test}/<subject>_<split>.csv``) copied from the real one, and cais/mmlu's
    schema (question, subject, choices, answer index) for lm-eval's ``mmlu_<subject>``."""
    root, lm = tmp / "mmlu", tmp / "lm_mmlu"
    files: LmFiles = {}
    for subject in subjects:
        paths = {}
        for split in ("dev", "test"):
            rows = read_mmlu_csv(source / split / f"{subject}_{split}.csv")
            _csv(root / "data" / split / f"{subject}_{split}.csv", rows)
            docs = [{"question": r[0], "subject": subject, "choices": r[1:5], "answer": LETTERS.index(r[5])}
                    for r in rows]
            paths[split] = _jsonl(lm / f"{subject}_{split}.jsonl", docs)
        files[f"mmlu_{subject}"] = ("json", paths)
    return root, files


def write_cmmlu(tmp: Path, subjects: list[str]) -> tuple[Path, LmFiles]:
    """CMMLU's release: ``{dev,test}/<subject>.csv``, header ``,Question,A,B,C,D,Answer``."""
    root, lm = tmp / "cmmlu", tmp / "lm_cmmlu"
    files: LmFiles = {}
    for subject in subjects:
        paths = {}
        for split, n in (("dev", 5), ("test", 7)):
            rows = awkward_rows(f"{subject}-{split}", n, zh=True)
            _csv(root / split / f"{subject}.csv", [[str(i), *r] for i, r in enumerate(rows)],
                 ["", "Question", "A", "B", "C", "D", "Answer"])
            docs = [dict(zip(["Question", "A", "B", "C", "D", "Answer"], r)) for r in rows]
            paths[split] = _jsonl(lm / f"{subject}_{split}.jsonl", docs)
        files[f"cmmlu_{subject}"] = ("json", paths)
    return root, files


def write_ceval(tmp: Path, subjects: list[str]) -> tuple[Path, LmFiles]:
    """C-Eval's release: ``{dev,val,test}/<subject>_<split>.csv``, header ``id,question,A,B,C,D,answer,
    explanation``; its test split has no answers (never read: val is evaluated)."""
    root, lm = tmp / "ceval", tmp / "lm_ceval"
    files: LmFiles = {}
    header = ["id", "question", "A", "B", "C", "D", "answer", "explanation"]
    for subject in subjects:
        paths = {}
        for split, n in (("dev", 5), ("val", 6), ("test", 3)):
            rows = awkward_rows(f"{subject}-{split}", n, zh=True)
            if split == "test":
                rows = [r[:5] + [""] for r in rows]
            full = [[str(i), *r, "解析" if split == "dev" else ""] for i, r in enumerate(rows)]
            _csv(root / split / f"{subject}_{split}.csv", full, header)
            if split != "test":
                paths[split] = _jsonl(lm / f"{subject}_{split}.jsonl", [dict(zip(header, r)) for r in full])
        files[f"ceval-valid_{subject}"] = ("json", paths)
    return root, files


def write_tmmluplus(tmp: Path, subjects: list[str]) -> tuple[Path, LmFiles]:
    """TMMLU+'s files: ``data/<subject>_{dev,val,test}.csv``, header ``question,A,B,C,D,answer``; its
    Hub dataset names the dev files ``train``, which is lm-eval's few-shot split."""
    root, lm = tmp / "tmmluplus", tmp / "lm_tmmluplus"
    files: LmFiles = {}
    header = ["question", "A", "B", "C", "D", "answer"]
    for subject in subjects:
        paths = {}
        for split, hub_split, n in (("dev", "train", 5), ("val", "validation", 2), ("test", "test", 7)):
            rows = awkward_rows(f"{subject}-{split}", n, zh=True)
            _csv(root / "data" / f"{subject}_{split}.csv", rows, header)
            paths[hub_split] = _jsonl(lm / f"{subject}_{hub_split}.jsonl", [dict(zip(header, r)) for r in rows])
        files[f"tmmluplus_{subject}"] = ("json", paths)
    return root, files


def _parquet(path: Path, docs: list[dict[str, Any]]) -> str:
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(docs).to_parquet(str(path))
    return str(path)


def write_mmlu_pro(tmp: Path) -> tuple[Path, LmFiles]:
    """A Hub parquet snapshot of TIGER-Lab/MMLU-Pro (``data/{test,validation}-00000-of-00001.parquet``):
    3 to 10 options, "N/A" padding kept as the Hub has it, questions with surrounding whitespace."""
    root = tmp / "mmlu_pro"
    paths = {}
    for split, n in (("validation", 7), ("test", 12)):
        docs = []
        for i in range(n):
            k = 3 + (i * 5) % 8
            options = [f"{split} {i} option {j}" + (" " if j == 1 else "") for j in range(k)]
            if i % 4 == 3:
                options[-1] = "N/A"
            docs.append({"question_id": i + (1000 if split == "test" else 0),
                         "question": f" {split} question {i}\nline two " if i % 2 else f"{split} question {i}?",
                         "options": options, "answer": "ABCDEFGHIJ"[i % k], "answer_index": i % k,
                         "cot_content": "", "category": ("law", "math", "physics")[i % 3], "src": "test"})
        paths[split] = _parquet(root / "data" / f"{split}-00000-of-00001.parquet", docs)
    return root, {"leaderboard_mmlu_pro": ("parquet", paths)}


def write_global_mmlu(tmp: Path, jsonl: Path, lang: str) -> tuple[Path, LmFiles]:
    """A Hub parquet snapshot of CohereForAI/Global-MMLU's ``<lang>`` config from the real dev rows
    (``../shared``): each subject's first 2 rows are the dev split, the other 3 the test split."""
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
    seen: dict[str, int] = {}
    split_rows: dict[str, list[dict[str, Any]]] = {"dev": [], "test": []}
    for row in rows:
        seen[row["subject"]] = seen.get(row["subject"], 0) + 1
        split_rows["dev" if seen[row["subject"]] <= 2 else "test"].append(row)
    root = tmp / "global_mmlu"
    paths = {split: _parquet(root / lang / f"{split}-00000-of-00001.parquet", docs)
             for split, docs in split_rows.items()}
    subjects = sorted({r["subject"] for r in split_rows["test"]})
    return root, {f"global_mmlu_full_{lang}_{s}": ("parquet", paths) for s in subjects}
