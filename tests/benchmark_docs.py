"""Small copies of the other benchmarks in their Hub schema (the columns lm-evaluation-harness's task
reads), written as a Hub parquet snapshot: ``<root>/<config>/<split>-00000-of-00001.parquet``.

``--benchmark NAME=<root>`` and lm-eval's own task read the very same files. Rows are few but awkward:
surrounding whitespace, newlines, quotes, accents and CJK text, every gold position.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Docs = dict[str, list[dict[str, Any]]]  # split -> documents
STEMS = ["  Which one is right, {t} {i}? ", "{t} {i}: a line\nand a second line, with a comma", '{t} "quoted" {i}',
         "Café {t} {i} — naïve?"]


def stem(tag: str, i: int) -> str:
    return STEMS[i % len(STEMS)].format(t=tag, i=i)


def options(tag: str, i: int, k: int = 4) -> list[str]:
    texts = [f"{tag} {i} option {j}" for j in range(k)]
    texts[1] = f" {tag} {i} spaced option "
    return texts


def openbookqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{i}", "question_stem": stem(split, i),
             "choices": {"text": options(split, i), "label": list("ABCD")}, "answerKey": "ABCD"[i % 4]}
            for i in range(n)]


def commonsense_qa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{i}", "question": stem(split, i), "question_concept": "x",
             "choices": {"label": list("ABCDE"), "text": options(split, i, 5)}, "answerKey": "ABCDE"[i % 5]}
            for i in range(n)]


def piqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"goal": stem(split, i), "sol1": f"use the {split} {i} tool", "sol2": f" skip it {i}.", "label": i % 2}
            for i in range(n)]


def siqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"context": f"Ana went home {i}.", "question": f"What did {split} {i} feel?", "answerA": "glad",
             "answerB": "sad and tired", "answerC": " bored", "label": str(i % 3 + 1)} for i in range(n)]


def winogrande(split: str, n: int) -> list[dict[str, Any]]:
    sentences = ["Sarah gave the book to Maria because _ was leaving.", "The cup fit in the bag since the _ was small",
                 "  _ won the race, so Tom cheered.", "Ben told Ivan that _ would come back {i} times — promised."]
    return [{"sentence": sentences[i % 4].replace("{i}", str(i)), "option1": ["Sarah", "cup", "Ana", "Ben"][i % 4],
             "option2": ["Maria", "bag", "Tom", "Ivan"][i % 4], "answer": str(i % 2 + 1)} for i in range(n)]


def copa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"premise": f"The {split} man {i} fell.  " if i % 2 else f"Le café {i} était froid.",
             "choice1": f"He slipped on {i} ice.", "choice2": "The sun rose.",
             "question": ("cause", "effect")[i % 2], "idx": i, "label": (i // 2) % 2, "changed": False}
            for i in range(n)]


def boolq(split: str, n: int) -> list[dict[str, Any]]:
    """SuperGLUE BoolQ's columns: lower-case questions without their question mark, passages with a
    title, a newline, accents, quotes and trailing spaces."""
    passages = ["Café culture -- Paris has {i} cafés.\nSome are \"old\".", "  The {s} river {i} flows north.  ",
                "Naïve Bayes {i} -- a classifier."]
    return [{"question": f"is the {split} answer {i} yes", "passage": passages[i % 3].format(s=split, i=i), "idx": i,
             "label": (i // 2) % 2} for i in range(n)]


def sciq(split: str, n: int) -> list[dict[str, Any]]:
    return [{"question": stem(split, i), "distractor1": "iron", "distractor2": f"{i} copper", "distractor3": "tin",
             "correct_answer": "gold", "support": ("  Metals conduct.\nSome more.") if i % 2 else ""}
            for i in range(n)]


def race(split: str, n: int) -> list[dict[str, Any]]:
    docs = []
    for i in range(n):
        problems = [{"question": "The author wants to  _  .", "options": ["a", "b", "c", "d"], "answer": "B"},
                    {"question": f"What is {i}?", "options": ["one", "two", "three", "four"], "answer": "C"},
                    {"question": f"Last {i}?", "options": ["w", "x y", "z", "v"], "answer": "ABCD"[i % 4]}]
        docs.append({"article": f"An article {i}.\nWith lines.", "problems": str(problems[i % 2:])})
    return docs


def logiqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"label": "abcd"[i % 4], "context": f"Passage {split} {i}.", "question": stem(split, i),
             "options": options(split, i)} for i in range(n)]


def logiqa2(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": i, "answer": i % 4, "text": f"Text {split} {i}.", "question": stem(split, i),
             "options": options(split, i), "type": "{}"} for i in range(n)]


def agieval(split: str, n: int) -> list[dict[str, Any]]:
    return [{"query": f"Q: {stem(split, i)} Answer Choices: (A)x (B)y (C)z (D)w\nA: Among A through D, the answer is",
             "choices": ["(A)x", "(B)y", "(C)z", "(D)w"], "gold": [i % 4]} for i in range(n)]


def truthfulqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"question": stem(split, i), "mc1_targets": {"choices": options(split, i, 3 + i % 2), "labels":
                                                          [1] + [0] * (2 + i % 2)},
             "mc2_targets": {"choices": options(split, i, 4), "labels": [1, 1, 0, 0] if i % 2 else [1, 0, 0, 0]}}
            for i in range(n)]


def medqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{i}", "sent1": stem(split, i), "sent2": "", "label": i % 4,
             **{f"ending{j}": t for j, t in enumerate(options(split, i))}} for i in range(n)]


def medmcqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{i}", "question": stem(split, i), "opa": "A drug", "opb": f" {i} mg", "opc": "None",
             "opd": "All of the above", "cop": i % 4, "choice_type": "single", "exp": "", "subject_name": "Anatomy",
             "topic_name": "x"} for i in range(n)]


def pubmedqa(split: str, n: int) -> list[dict[str, Any]]:
    return [{"QUESTION": stem(split, i), "CONTEXTS": [f"Background {i}.", "Methods: we looked."], "LABELS": ["A", "B"],
             "MESHES": [], "YEAR": "2001", "reasoning_required_pred": "yes", "reasoning_free_pred": "no",
             "final_decision": ("yes", "no", "maybe")[i % 3], "LONG_ANSWER": "x"} for i in range(n)]


def belebele(split: str, n: int) -> list[dict[str, Any]]:
    return [{"link": "x", "question_number": i, "flores_passage": f" Passage {i}, with\nlines. ",
             "question": stem(split, i), **{f"mc_answer{j + 1}": t for j, t in enumerate(options(split, i))},
             "correct_answer_num": str(i % 4 + 1), "dialect": "x", "ds": "2023"} for i in range(n)]


def mmmlu(split: str, n: int) -> list[dict[str, Any]]:
    subjects = ["abstract_algebra", "college_mathematics_test.csv_sw-KE.csv", "anatomy"]
    return [{"Unnamed: 0": i, "Question": stem("問", i), **dict(zip("ABCD", options("選", i))), "Answer": "ABCD"[i % 4],
             "Subject": subjects[i % 3]} for i in range(n)]


def include(split: str, n: int) -> list[dict[str, Any]]:
    return [{"language": "Greek", "country": "Greece", "domain": ("STEM", "Social Science")[i % 2],
             "subject": "Math", "regional_feature": "x", "level": "x", "question": stem("Ερώτηση", i),
             **{f"option_{x}": t for x, t in zip("abcd", options("Επ", i))}, "answer": i % 4} for i in range(n)]


def kmmlu(split: str, n: int) -> list[dict[str, Any]]:
    return [{"question": stem("질문", i), "answer": i % 4 + 1, **dict(zip("ABCD", options("답", i))),
             "Category": "x", "Human Accuracy": 0.5} for i in range(n)]


def arabicmmlu(split: str, n: int) -> list[dict[str, Any]]:
    return [{"ID": i, "Source": "x", "Country": "Jordan" if i % 2 else None, "Group": "x", "Subject": "Biology",
             "Level": ("High", None, "Univ")[i % 3], "Question": stem("سؤال", i),
             "Context": "سياق" if i % 3 == 1 else None,
             "Answer Key": "ABCDE"[i % (4 + i % 2)], **{f"Option {j + 1}": t for j, t in enumerate(options("خيار", i))},
             "Option 5": "خامس" if i % 2 else None, "is_few_shot": 0} for i in range(n)]


def tmlu(split: str, n: int) -> list[dict[str, Any]]:
    """A four-option subject's rows: the E column is there, empty (as in the subjects TMLU gives a fifth)."""
    return [{"question": stem("臺灣", i), **dict(zip("ABCD", options("選項", i))), "E": None, "answer": "ABCD"[i % 4]}
            for i in range(n)]


def tmlu5(split: str, n: int) -> list[dict[str, Any]]:
    """A five-option subject's rows (AST chemistry)."""
    return [{**row, "E": f"戊 {i}", "answer": "ABCDE"[i % 5]} for i, row in enumerate(tmlu(split, n))]


def write_snapshot(root: Path, config: str, docs: Docs) -> dict[str, str]:
    """``root/config/<split>-00000-of-00001.parquet`` per split; {split: file} for lm-eval."""
    import datasets

    folder = root / config
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, rows in docs.items():
        path = folder / f"{split}-00000-of-00001.parquet"
        datasets.Dataset.from_list(rows).to_parquet(str(path))
        files[split] = str(path)
    return files


def make_docs(make: Callable[[str, int], list[dict[str, Any]]], splits: dict[str, int]) -> Docs:
    return {split: make(split, n) for split, n in splits.items()}
