"""The package's shape: modules a person can hold in mind, importing each other in one direction."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "assembler"
MAX_LINES = 1000


def modules() -> dict[str, Path]:
    return {path.stem: path for path in sorted(PACKAGE.glob("*.py"))}


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Given a module's file, return the package's modules it imports anywhere: at the top,
    inside functions, under `if TYPE_CHECKING:`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from assembler import x` imports the module x when there is one.
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "assembler" and len(parts) > 1 and parts[1] in known:
                found.add(parts[1])
    found.discard(path.stem)
    return found


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

    assert graph["cli"], "the reader found no import at all"
    assert cycles(graph) == []


def test_no_module_of_the_package_is_over_a_thousand_lines() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
    }

    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}
