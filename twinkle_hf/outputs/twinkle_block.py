"""The "coming from Twinkle Eval" block of report.md, report.html and the console: a generation run from a
Twinkle Eval config, its answers read by twinkle_hf's extraction and by Twinkle Eval's
(``metrics/twinkle_compare.py`` computes ``twinkle_extraction`` in results.json)."""

from __future__ import annotations

from typing import Any

from .cells import NA, markdown_rows, pct

TITLE = "Coming from Twinkle Eval"
WHY = ("Twinkle Eval takes the first of its patterns that matches anywhere, and its last resort reads any capital "
       "letter followed by a character (\"The answer is B\" as T, \"Answer: C\" as A); twinkle_hf reads the last "
       "explicit statement, and only a letter standing alone. To reproduce Twinkle Eval's numbers, run with "
       "--extractor twinkle (YAML extractor: twinkle).")


def _letter(value: str | None) -> str:
    return NA if value is None else value


def _summary(block: dict[str, Any]) -> str:
    return (f"The same {block['answers']} answers read twice: accuracy {pct(block['accuracy_twinkle_hf'])}% with "
            f"twinkle_hf's extraction ({block['unparsed_twinkle_hf']} unparsed), {pct(block['accuracy_twinkle'])}% "
            f"with Twinkle Eval's ({block['unparsed_twinkle']} unparsed); they read a different letter from "
            f"{block['different_letters']} of them.")


def _example_cells(example: dict[str, Any], width: int | None = None) -> list[str]:
    end = " ".join(example["output_end"].split())
    end = end if width is None or len(end) <= width else "..." + end[-width:]
    return [f"{example['dataset']} {example['id']} (order {example['order']})", end,
            _letter(example["twinkle_hf"]), _letter(example["twinkle"]), example["gold"]]


HEADER = ["question", "the answer's end", "twinkle_hf", "Twinkle Eval", "gold"]


def shuffle_note(doc: dict[str, Any]) -> str:
    """A shuffled run from a Twinkle Eval config: how many questions the meaning-keeping shuffle treats
    otherwise than Twinkle Eval, which moves every option ("" when none, or not such a run)."""
    meaning = (doc.get("metrics") or {}).get("option_meaning")
    if not (doc.get("config") or {}).get("from_twinkle") or not meaning:
        return ""
    return (f"Twinkle Eval shuffles every option as written; here {meaning['questions']} of "
            f"{meaning['n_questions']} questions ({100 * meaning['share']:.1f}%) kept their meaning instead: "
            f"{meaning['pinned']} kept an option such as \"All of the above\" at its letter, "
            f"{meaning['rewritten']} had letter references such as \"Both A and C\" rewritten, "
            f"{meaning['fixed_order']} kept their order. "
            f"--keep-option-meaning off (YAML keep_option_meaning: false) shuffles as Twinkle Eval does.")


def twinkle_markdown(doc: dict[str, Any]) -> list[str]:
    """The block as report.md lines (none when the run has no such block)."""
    block, note = doc.get("twinkle_extraction"), shuffle_note(doc)
    if not block:
        return [f"## {TITLE}", "", note, ""] if note else []
    lines = [f"## {TITLE}", "", _summary(block), "", WHY, "", *([note, ""] if note else [])]
    if block["examples"]:
        cells = [[c.replace("|", "\\|") for c in _example_cells(e)] for e in block["examples"]]
        lines += [f"Where they differ (the first {len(cells)}):", "", *markdown_rows(HEADER, cells), ""]
    return lines


def twinkle_console(doc: dict[str, Any]) -> list[str]:
    """The block as console lines: the summary and each example on one line."""
    block, note = doc.get("twinkle_extraction"), shuffle_note(doc)
    if not block:
        return ["", f"{TITLE}: {note}"] if note else []
    lines = ["", f"{TITLE}: {_summary(block)} To reproduce Twinkle Eval's numbers: --extractor twinkle."]
    lines += [f"  {note}"] if note else []
    for e in block["examples"]:
        where, end, ours, theirs, gold = _example_cells(e, 60)
        lines.append(f"  {where}: {end!r} -> twinkle_hf {ours}, Twinkle Eval {theirs}, gold {gold}")
    return lines


def twinkle_parts(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """The block for report.html: its paragraphs and its example rows (plain text); None without one."""
    block, note = doc.get("twinkle_extraction"), shuffle_note(doc)
    if not block:
        return ([note], []) if note else None
    return [_summary(block), WHY, *([note] if note else [])], [_example_cells(e) for e in block["examples"]]
