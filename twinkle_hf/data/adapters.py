"""Hub rows -> canonical columns, for the benchmarks whose question is built from several columns.

Each adapter takes a table's columns (``{name: [cell, ...]}``, as the Hub schema has them) and the
registry entry, and returns ``question``, ``choices`` (a list per row), ``answer`` (a 0-based index)
and, where the benchmark has them, ``subject``, ``id`` and ``true_options`` (every true option's index:
TruthfulQA MC2). The question text is what lm-evaluation-harness's ``doc_to_text`` builds before its
options and cue, so the templates of
:mod:`twinkle_hf.prompts.templates` and :mod:`twinkle_hf.prompts.cloze` render lm-eval's prompt.
A column the adapter needs and the table lacks is an error naming both.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TwinkleError

Columns = dict[str, list[Any]]
LETTERS = "ABCDEFGHIJ"
# XCOPA's connectors per language (lm-eval's xcopa/utils.py)
XCOPA_CONNECTORS = {
    "et": ("sest", "seetõttu"), "ht": ("poukisa", "donk sa"), "it": ("perché", "quindi"), "id": ("karena", "maka"),
    "qu": ("imataq", "chaymi"), "sw": ("kwa sababu", "kwa hiyo"), "zh": ("因为", "所以"), "ta": ("காரணமாக", "எனவே"),
    "th": ("เพราะ", "ดังนั้น"), "tr": ("çünkü", "bu yüzden"), "vi": ("bởi vì", "vì vậy"),
}
ARABIC_LEVELS = {"Primary": "primary school", "Middle": "middle school", "High": "high school", "Univ": "university",
                 "Prof": "professional"}


def _need(data: Columns, names: Sequence[str], where: str) -> None:
    missing = [n for n in names if n not in data]
    if missing:
        raise TwinkleError(f"{where}: no column {', '.join(map(repr, missing))}; expected the Hub dataset's columns "
                           f"({', '.join(names)}); found {', '.join(map(repr, data))}")


def _rows(data: Columns) -> int:
    return len(next(iter(data.values()))) if data else 0


def _first_lower(text: str) -> str:
    return text[0].lower() + text[1:]


def openbookqa(data: Columns, entry: Any) -> Columns:
    labels = [c["label"] for c in data["choices"]]
    return {"id": data["id"], "question": data["question_stem"], "choices": [c["text"] for c in data["choices"]],
            "answer": [ls.index(str(k).lstrip()) for ls, k in zip(labels, data["answerKey"])]}


def piqa(data: Columns, entry: Any) -> Columns:
    return {"question": data["goal"], "choices": [[a, b] for a, b in zip(data["sol1"], data["sol2"])],
            "answer": [int(x) for x in data["label"]]}


def siqa(data: Columns, entry: Any) -> Columns:
    return {"question": [f"{c} {q}" for c, q in zip(data["context"], data["question"])],
            "choices": [list(t) for t in zip(data["answerA"], data["answerB"], data["answerC"])],
            "answer": [int(x) - 1 for x in data["label"]]}


def winogrande(data: Columns, entry: Any) -> Columns:
    return {"question": data["sentence"], "choices": [[a, b] for a, b in zip(data["option1"], data["option2"])],
            "answer": [{"1": 0, "2": 1}.get(str(x), x) for x in data["answer"]]}


def copa(data: Columns, entry: Any) -> Columns:
    """SuperGLUE COPA as lm-eval's ``copa``: the premise without its full stop, then "because" or
    "therefore"; the choices with a lower-case first letter (lm-eval adds a space before each)."""
    connectors = XCOPA_CONNECTORS[entry.variant] if entry.variant else ("because", "therefore")
    questions = [p.strip()[:-1] + " " + connectors[0 if q == "cause" else 1]
                 for p, q in zip(data["premise"], data["question"])]
    return {"question": questions,
            "choices": [[_first_lower(a), _first_lower(b)] for a, b in zip(data["choice1"], data["choice2"])],
            "answer": [int(x) for x in data["label"]]}


def boolq(data: Columns, entry: Any) -> Columns:
    """SuperGLUE BoolQ as lm-eval's ``boolq``: the passage, then "Question: <question>?"; no, yes."""
    return {"question": [f"{p}\nQuestion: {q}?" for p, q in zip(data["passage"], data["question"])],
            "choices": [["no", "yes"]] * _rows(data), "answer": [int(x) for x in data["label"]]}


def sciq(data: Columns, entry: Any) -> Columns:
    """The support paragraph, then the question; the correct answer is listed last (lm-eval's order)."""
    return {"question": [f"{s.lstrip()}\nQuestion: {q}" for s, q in zip(data["support"], data["question"])],
            "choices": [list(t) for t in zip(data["distractor1"], data["distractor2"], data["distractor3"],
                                              data["correct_answer"])],
            "answer": [3] * _rows(data)}


def race(data: Columns, entry: Any) -> Columns:
    """A RACE article with its earlier questions answered, then its last question (lm-eval's ``race``)."""
    out: Columns = {"question": [], "choices": [], "answer": []}
    for article, problems in zip(data["article"], data["problems"]):
        items = ast.literal_eval(problems) if isinstance(problems, str) else problems
        text = "Article: " + article + "\n\n"
        for p in items[:-1]:
            gold = p["options"][LETTERS.index(p["answer"])]
            text += (p["question"][:-5] + gold + "\n" if p["question"][-6:] == "  _  ." else
                     "Question: " + p["question"] + "\n" + "Answer: " + gold + "\n")
        last = items[-1]
        out["question"].append(text + last["question"])
        out["choices"].append([last["options"][i] for i in range(4)])
        out["answer"].append(LETTERS.index(last["answer"]))
    return out


def logiqa(data: Columns, entry: Any) -> Columns:
    return {"question": [f"Passage: {c}\nQuestion: {q}" for c, q in zip(data["context"], data["question"])],
            "choices": data["options"], "answer": ["abcd".index(str(x).strip()) for x in data["label"]]}


def logiqa2(data: Columns, entry: Any) -> Columns:
    return {"question": [f"Passage: {c}\nQuestion: {q}" for c, q in zip(data["text"], data["question"])],
            "choices": data["options"], "answer": [int(x) for x in data["answer"]]}


def agieval(data: Columns, entry: Any) -> Columns:
    """The query as AGIEval writes it; of several gold options (a few Gaokao/JEC-QA questions), the first."""
    return {"question": data["query"], "choices": data["choices"], "answer": [int(g[0]) for g in data["gold"]]}


def truthfulqa(data: Columns, entry: Any) -> Columns:
    """The MC1 (or MC2) targets; the release lists the true answers first. MC2 has several true
    answers: ``answer`` is the first, and ``true_options`` (load.TRUE_OPTIONS) lists them all."""
    key = "mc2_targets" if entry.mc2 else "mc1_targets"
    out = {"question": data["question"], "choices": [t["choices"] for t in data[key]],
           "answer": [list(t["labels"]).index(1) for t in data[key]]}
    if entry.mc2:
        out["true_options"] = [[j for j, label in enumerate(t["labels"]) if int(label) == 1] for t in data[key]]
    return out


def medqa(data: Columns, entry: Any) -> Columns:
    return {"id": data["id"], "question": data["sent1"],
            "choices": [list(t) for t in zip(*(data[f"ending{i}"] for i in range(4)))],
            "answer": [int(x) for x in data["label"]]}


def medmcqa(data: Columns, entry: Any) -> Columns:
    return {"id": data["id"], "question": data["question"],
            "choices": [list(t) for t in zip(data["opa"], data["opb"], data["opc"], data["opd"])],
            "answer": [int(x) for x in data["cop"]]}


def pubmedqa(data: Columns, entry: Any) -> Columns:
    questions = [f"Abstract: {chr(10).join(c)}\nQuestion: {q}" for c, q in zip(data["CONTEXTS"], data["QUESTION"])]
    return {"question": questions, "choices": [["yes", "no", "maybe"]] * len(questions),
            "answer": [["yes", "no", "maybe"].index(x) for x in data["final_decision"]]}


def belebele(data: Columns, entry: Any) -> Columns:
    return {"question": [f"P: {p}\nQ: {q.strip()}" for p, q in zip(data["flores_passage"], data["question"])],
            "choices": [list(t) for t in zip(*(data[f"mc_answer{i}"] for i in range(1, 5)))],
            "answer": [int(x) - 1 for x in data["correct_answer_num"]]}


def mmmlu(data: Columns, entry: Any) -> Columns:
    """OpenAI's MMMLU; some configs name the subject by its CSV file (lm-eval's _normalize_subject_name)."""
    def subject(name: str) -> str:
        for marker in ("_test.csv", "_test-"):
            if marker in name:
                return name[:name.find(marker)]
        return name

    return {"question": data["Question"], "choices": [list(t) for t in zip(*(data[x] for x in "ABCD"))],
            "answer": [LETTERS.index(str(x).strip()) for x in data["Answer"]],
            "subject": [subject(s) for s in data["Subject"]]}


def include(data: Columns, entry: Any) -> Columns:
    """INCLUDE: lm-eval asks by domain (its subject is the finer topic)."""
    return {"question": data["question"], "choices": [list(t) for t in zip(*(data[f"option_{x}"] for x in "abcd"))],
            "answer": [int(x) for x in data["answer"]], "subject": data["domain"]}


def kmmlu(data: Columns, entry: Any) -> Columns:
    return {"question": data["question"], "choices": [list(t) for t in zip(*(data[x] for x in "ABCD"))],
            "answer": [int(x) - 1 for x in data["answer"]]}


def arabicmmlu(data: Columns, entry: Any) -> Columns:
    """ArabicMMLU as lm-eval's utils.doc_to_text writes it: subject, level and country, then the
    question (after its context, when it has one); the options that are not empty."""
    out: Columns = {"question": [], "choices": [], "answer": []}
    for i in range(_rows(data)):
        level = f" for {ARABIC_LEVELS[data['Level'][i]]}" if data["Level"][i] else ""
        country = f" in {data['Country'][i]}" if data["Country"][i] else ""
        question = data["Question"][i] if not data["Context"][i] else f"{data['Context'][i]}\n\n{data['Question'][i]}"
        out["question"].append(f"This is a {data['Subject'][i]} question{level}{country}. Select the correct "
                               f"answer!\n\nQuestion: {question}")
        options = []
        for k in range(1, 6):
            text = data.get(f"Option {k}", [None] * (i + 1))[i]
            if not text:
                break
            options.append(text)
        out["choices"].append(options)
        out["answer"].append(LETTERS.index(str(data["Answer Key"][i]).strip()))
    return out


def tmlu(data: Columns, entry: Any) -> Columns:
    """TMLU: four to six options (E and F when the cells are not empty), the answer a letter."""
    letters = [x for x in "ABCDEF" if x in data]
    choices = [[data[x][i] for x in letters if x in "ABCD" or data[x][i]] for i in range(_rows(data))]
    return {"question": data["question"], "choices": choices,
            "answer": [LETTERS.index(str(x).strip()) for x in data["answer"]]}


ADAPTERS: dict[str, tuple[Callable[[Columns, Any], Columns], tuple[str, ...]]] = {
    "openbookqa": (openbookqa, ("id", "question_stem", "choices", "answerKey")),
    "piqa": (piqa, ("goal", "sol1", "sol2", "label")),
    "siqa": (siqa, ("context", "question", "answerA", "answerB", "answerC", "label")),
    "winogrande": (winogrande, ("sentence", "option1", "option2", "answer")),
    "copa": (copa, ("premise", "choice1", "choice2", "question", "label")),
    "boolq": (boolq, ("question", "passage", "label")),
    "sciq": (sciq, ("question", "distractor1", "distractor2", "distractor3", "correct_answer", "support")),
    "race": (race, ("article", "problems")),
    "logiqa": (logiqa, ("context", "question", "options", "label")),
    "logiqa2": (logiqa2, ("text", "question", "options", "answer")),
    "agieval": (agieval, ("query", "choices", "gold")),
    "truthfulqa": (truthfulqa, ("question", "mc1_targets", "mc2_targets")),
    "medqa": (medqa, ("id", "sent1", "ending0", "ending1", "ending2", "ending3", "label")),
    "medmcqa": (medmcqa, ("id", "question", "opa", "opb", "opc", "opd", "cop")),
    "pubmedqa": (pubmedqa, ("QUESTION", "CONTEXTS", "final_decision")),
    "belebele": (belebele, ("flores_passage", "question", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4",
                            "correct_answer_num")),
    "mmmlu": (mmmlu, ("Question", "A", "B", "C", "D", "Answer", "Subject")),
    "include": (include, ("question", "option_a", "option_b", "option_c", "option_d", "answer", "domain")),
    "kmmlu": (kmmlu, ("question", "A", "B", "C", "D", "answer")),
    "arabicmmlu": (arabicmmlu, ("Question", "Context", "Subject", "Level", "Country", "Answer Key", "Option 1",
                                "Option 2")),
    "tmlu": (tmlu, ("question", "A", "B", "C", "D", "answer")),
}


def adapt_columns(entry: Any, data: Columns, where: str) -> Columns:
    """The canonical columns of a table of ``entry``'s Hub schema (``entry.adapter`` names how)."""
    function, needed = ADAPTERS[entry.adapter]
    _need(data, needed, where)
    try:
        return function(data, entry)
    except (KeyError, ValueError, IndexError, TypeError, SyntaxError) as err:
        raise TwinkleError(f"{where}: a row does not read as {entry.name}'s Hub schema ({type(err).__name__}: "
                           f"{err}); pass the dataset's own files") from None
