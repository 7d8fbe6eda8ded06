"""Suites: one name (``--benchmark core``) for several registry entries, run together, each reported,
and their unweighted mean (the macro row) beside them.

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


SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("core", "the set OLMES and most model cards report", ("arc_challenge", "arc_easy", "commonsense_qa",
                                                               "hellaswag", "mmlu", "openbookqa", "piqa", "siqa",
                                                               "winogrande")),
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
