"""Suites: one name (``--benchmark core``) for several registry entries, run together, each reported,
and their unweighted mean (the macro row, each member under the formulation OLMES reports:
outputs/suites.py) beside them. ``core`` holds OLMES's standard ten tasks; ``differs`` says in one
line how its runs differ from OLMES's procedure.

``core=PATH`` reads each member from ``PATH/<member>`` (its own layout there, as ``member=PATH/member``
would); without a path each member comes from the Hub cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    members: tuple[str, ...]  # registry names (NAME or NAME:VARIANT)
    differs: str = ""  # one line: where its runs differ from the procedure of the set it is named after


OLMES_DIFFERS = ("run as lm-eval asks them, not by OLMES's procedure: lm-eval's prompts and the first k examples of "
                 "the few-shot split (OLMES: curated 5-shot), CF normalised per character (OLMES: PMI or none on "
                 "some tasks), letters over shuffled orders; with --method logit+cloze the macro row takes each "
                 "task's better formulation, as OLMES does")
SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("core", "OLMES's ten tasks", ("arc_challenge", "arc_easy", "boolq", "commonsense_qa", "hellaswag", "mmlu",
                                        "openbookqa", "piqa", "siqa", "winogrande"), OLMES_DIFFERS),
    Suite("taiwan", "Traditional Chinese knowledge of Taiwan", ("tmmluplus", "tmlu", "formosa_bench")),
)}


def expand_suites(arguments: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each ``--benchmark`` argument as (argument for one entry, the suite it came from or "")."""
    out: list[tuple[str, str]] = []
    for argument in arguments:
        name, sep, path = argument.partition("=")
        suite = SUITES.get(name.strip().lower())
        if suite is None:
            out.append((argument, ""))
            continue
        for member in suite.members:
            where = f"={Path(path.strip()) / member.partition(':')[0]}" if sep else ""
            out.append((member + where, suite.name))
    return out
