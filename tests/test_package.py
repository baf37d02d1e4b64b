"""The package's shape: a sub-package per subsystem, modules importing each other in one
direction, no module that only hands on another's names, and each host's knowledge in its own
place."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "assembler"


def modules() -> dict[str, Path]:
    """The package's modules by dotted name under `assembler` ("cli.main", "errors")."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Given a module's file, return the package's modules it imports anywhere: at the top,
    inside functions, under `if TYPE_CHECKING:`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from assembler.x import y` imports the module x.y when there is one.
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] != "assembler":
                continue
            dotted = ".".join(parts[1:])
            # The deepest module the name reaches: `assembler.pad.journal.Journal` is pad.journal.
            while dotted and dotted not in known:
                dotted = dotted.rpartition(".")[0]
            if dotted:
                found.add(dotted)
    this = next((name for name in known if PACKAGE / name.replace(".", "/") == path.parent), None)
    found.discard(_name_of(path))
    if this is not None and path.name == "__init__.py":
        found.discard(this)
    # A module's own packages run before it; importing them is no arrow back.
    stem = _name_of(path)
    return {name for name in found if not stem.startswith(name + ".")}


def _name_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Given who imports whom, return the groups of modules that import each other in a loop
    (Tarjan's strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_loop_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert cycles(graph) == [["a", "b", "c"]]


def test_the_package_imports_no_module_that_imports_it_back_even_inside_a_function() -> None:
    found = modules()
    graph = {name: imported_modules(path, set(found)) for name, path in found.items()}

    assert graph["cli.main"], "the reader found no import at all"
    assert cycles(graph) == []
