"""The package is a house with a room per stage: every import points down the one-way flow.

settings -> data -> prompts -> models -> runtime -> engine -> metrics -> formulations -> outputs, the shapes every
stage shares at the package root below them all, and the entry points on top. Imports are read from
the source with ``ast`` (at module level and inside functions alike; nothing is imported), so a
late import cannot hide a circle. Inside the package, code imports a name from the module that defines it, never
through a folder's ``__init__`` (a face for users), so that every arrow is seen here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "twinkle_hf"
# rank of each room, lowest first; a module may import its own room (no circle) or a lower one
LAYERS = (
    {"errors", "schema", "version", "lazy"},  # shapes and helpers every stage shares
    {"settings"}, {"data"}, {"prompts"}, {"models"}, {"runtime"}, {"engine"}, {"metrics"}, {"formulations"},
    {"outputs"},
    {"evaluation", "dry_run", "callback", "compare", "sweep", "cli", "cli_flags", "shard_run", "merge"},  # entry points
)
MAX_LINES = 300


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_graph(root: Path) -> tuple[dict[str, set[str]], set[str]]:
    """{module: the package's modules it imports}, and the package names (folders with an __init__)."""
    files = sorted(root.rglob("*.py"))
    known = {module_name(root, f) for f in files}
    packages = {module_name(root, f) for f in files if f.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for f in files:
        me = module_name(root, f)
        here = me if f.name == "__init__.py" else me.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names] or [base]
            else:
                continue
            for name in names:
                while name and name not in known:  # a module, a package, or a name inside one
                    name = name.rpartition(".")[0]
                if name and name != me:
                    found.add(name)
        graph[me] = found
    return graph, packages


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = stack[stack.index(v):]
                del stack[stack.index(v):]
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def room(module: str) -> str:
    """The first-level folder (or root module) a module lives in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(room(m), set()).update(room(d) for d in deps if room(d) != room(m))
    return out


def rank(module: str) -> int:
    if module == PACKAGE.name:
        return len(LAYERS)  # the package's own face, above everything
    for i, layer in enumerate(LAYERS):
        if room(module) in layer:
            return i
    raise AssertionError(f"{module} belongs to no stage: place it in LAYERS (tests/test_layers.py) and "
                         f"in docs/design.md's folder map")


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], set[str]]:
    return read_graph(PACKAGE)


def test_no_import_circle_between_modules(graph):
    assert circles(graph[0]) == []


def test_no_import_circle_between_folders(graph):
    assert circles(folder_graph(graph[0])) == []


def test_imports_point_down(graph):
    modules = graph[0]
    upward = [f"{m} -> {d}" for m, deps in modules.items() for d in deps
              if m != PACKAGE.name and rank(d) > rank(m)]
    assert upward == []


def test_code_imports_modules_not_faces(graph):
    """Only the faces themselves (and the package's own) lean on a folder's __init__."""
    modules, packages = graph
    through_face = [f"{m} -> {d}" for m, deps in modules.items() for d in deps
                    if d in packages and m not in packages]
    assert through_face == []


def test_rooms_are_small_and_real():
    modules = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "scripts").glob("*.py")]  # the scripts too
    too_long = {str(f.relative_to(PACKAGE.parent)): n for f in modules
                if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert too_long == {}
    folders = [d for d in PACKAGE.iterdir() if (d / "__init__.py").is_file()]
    assert len(folders) >= 5
    lonely = [d.name for d in folders if len([f for f in d.glob("*.py") if f.name != "__init__.py"]) < 2]
    assert lonely == []


def test_the_checks_can_fail(tmp_path):
    """A package with a circle through a late import and an upward import is caught."""
    pkg = tmp_path / "pkg"
    for folder in ("settings", "engine"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "settings" / "config.py").write_text("def f():\n    from ..engine.run import g\n")
    (pkg / "engine" / "run.py").write_text("from ..settings import config\n")
    modules, _ = read_graph(pkg)
    assert modules["pkg.settings.config"] == {"pkg.engine.run"}
    assert modules["pkg.engine.run"] == {"pkg.settings.config"}
    assert circles(modules) == [["pkg.engine.run", "pkg.settings.config"]]
    assert circles(folder_graph(modules)) == [["engine", "settings"]]
