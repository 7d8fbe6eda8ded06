"""Code comments and docstrings say what and why, never which issue asked for it.

An issue number goes stale once the issue closes: the history belongs in git and the changelog.
Comments are read with ``tokenize`` and docstrings with ``ast``, so a string the code prints is not
checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# "issue 24", "issues 3", "issue-24", "issue #41", or a bare "#41" (not an HTML entity like "&#39;")
ISSUE = re.compile(r"\bissues?[ -]#?\d+|(?<![\w&])#\d+\b", re.IGNORECASE)
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def comments_and_docstrings(source: str, name: str = "<string>") -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, DOCUMENTED) and ast.get_docstring(node, clean=False) is not None:
            first = node.body[0]
            text = ast.get_docstring(node, clean=False) or ""
            for offset, line in enumerate(text.splitlines()):
                yield first.lineno + offset, line


def issue_mentions(path: Path) -> list[str]:
    """``file:line: mention`` for each issue number in ``path``'s comments and docstrings."""
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [f"{rel}:{line}: {m.group(0)}"
            for line, text in comments_and_docstrings(path.read_text(encoding="utf-8"), str(path))
            for m in ISSUE.finditer(text)]


def sources() -> list[Path]:
    return [*sorted((ROOT / "twinkle_hf").rglob("*.py")), *sorted((ROOT / "scripts").glob("*.py"))]


def test_no_issue_numbers_in_comments_or_docstrings():
    assert [m for path in sources() for m in issue_mentions(path)] == []


def test_the_check_reads_comments_and_docstrings_not_strings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""A module.\n\nIts fit (issue 24)."""\n'
                      'X = "issue 7 and #8, printed"  # see #41\n'
                      "\n\nclass C:\n"
                      '    """As issue-3 asked; &#39; is an entity."""\n'
                      "\n    def f(self):\n"
                      '        """Issues 5 were."""\n'
                      '        return "#12"  # 4 rows, not an issue\n', encoding="utf-8")
    assert issue_mentions(module) == ["m.py:4: #41", "m.py:3: issue 24", "m.py:8: issue-3", "m.py:11: Issues 5"]
