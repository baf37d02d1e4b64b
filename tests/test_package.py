"""The package's shape: a sub-package per subsystem, modules importing each other in one
direction, no module that only hands on another's names, and each host's knowledge in its own
place."""

from __future__ import annotations

import ast
import io
import re
import tokenize
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


def package_of(name: str) -> str:
    """Given a module's dotted name under `assembler`, return its sub-package (`pad` for
    "pad.journal", `hosts` for "hosts.codex.reader"), or the module itself for one at the top
    ("errors")."""
    return name.split(".")[0]


def package_graph() -> dict[str, set[str]]:
    """Who imports whom among the sub-packages (and the modules at the top): an arrow for each
    module of one that imports a module of another, anywhere in it."""
    found = modules()
    graph: dict[str, set[str]] = {package_of(name): set() for name in found}
    for name, path in found.items():
        for other in imported_modules(path, set(found)):
            if package_of(other) != package_of(name):
                graph[package_of(name)].add(package_of(other))
    return graph


def test_no_two_sub_packages_import_each_other_even_through_others() -> None:
    graph = package_graph()

    assert graph["cli"] >= {"assembly", "daemon", "hosts"}, "the reader found no arrows"
    assert cycles(graph) == []


def test_the_host_neutral_packages_never_import_the_hosts() -> None:
    # They are given the hosts they read (`assembler.hosts.registry.HOSTS`, passed in).
    graph = package_graph()

    assert {
        package
        for package in ("transcripts", "context", "assembly", "daemon")
        if "hosts" in graph[package]
    } == set()


def imports_inside_functions(path: Path) -> list[tuple[int, bool]]:
    """Given a module, return each import of the package's own modules inside a function (its
    line), with whether a comment says why: on its line, or on the lines just above it (a
    comment heading the run of imports it belongs to)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[tuple[int, bool]] = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom):
                names = [inner.module or ""] if inner.level == 0 else ["assembler"]
            elif isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            else:
                continue
            if not any(name.split(".")[0] == "assembler" for name in names):
                continue
            above = inner.lineno - 2
            while above >= 0 and re.match(r"\s*(from|import) ", lines[above]):
                above -= 1  # the run of imports this one belongs to
            said = "#" in lines[inner.lineno - 1] or (
                above >= 0 and lines[above].lstrip().startswith("#")
            )
            found.append((inner.lineno, said))
    return found


def test_few_imports_wait_inside_functions_and_each_says_why() -> None:
    found = {
        f"{name}:{line}": said
        for name, path in modules().items()
        for line, said in imports_inside_functions(path)
    }

    assert [where for where, said in found.items() if not said] == []
    assert len(found) < 15, sorted(found)


def test_the_import_counter_sees_a_reason_above_a_run_of_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    # numpy: only when a line is due\n    from assembler.a import b\n"
        "    from assembler.c import d\n    return b\n\n\ndef g():\n"
        "    import json\n    from assembler.e import f\n"
    )

    assert imports_inside_functions(module) == [(3, True), (4, True), (10, False)]


def _definitions(tree: ast.Module) -> list[str]:
    """The names a module defines at its top level (not those it imports)."""
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(node.name)
        elif isinstance(node, ast.Assign):
            found += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id != "__all__"]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append(node.target.id)
    return found


def test_no_module_only_hands_on_names_it_imports() -> None:
    relays = []
    renamed_exports = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        if imports and not _definitions(tree) and path.name != "__main__.py":
            relays.append(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                # `from x import a as a` is the explicit re-export idiom.
                renamed_exports += [f"{name}: {a.name}" for a in node.names if a.asname == a.name]

    assert relays == []
    assert renamed_exports == []


def test_no_class_is_cut_into_halves_with_stubs_for_the_other_half() -> None:
    stubs = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                    stubs.append(f"{name}:{node.lineno}")

    assert stubs == []


HOST_NAMES = re.compile(r"openclaw|claude|\bpi\b", re.IGNORECASE)
# The one host name the core still carries: a key of the user's config file, which is the
# user's interface and stays as it is.
CONFIG_KEYS_NAMING_A_HOST = {"config.schema": 1}


def _host_names_in_code(path: Path) -> int:
    """Given a module, return how often a host's name occurs in its code: names and strings,
    not comments or docstrings."""
    text = path.read_text(encoding="utf-8")
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    count = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if token.type in (tokenize.NAME, tokenize.STRING):
            count += len(HOST_NAMES.findall(token.string))
    return count


def test_a_hosts_name_appears_in_code_only_under_its_host_module_and_the_cli() -> None:
    found = {
        name: count
        for name, path in modules().items()
        if not name.startswith(("hosts.", "cli.")) and (count := _host_names_in_code(path)) > 0
    }

    assert found == CONFIG_KEYS_NAMING_A_HOST


def test_the_host_name_counter_sees_names_and_strings_but_not_comments(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""About OpenClaw."""\n# Claude Code writes this\nopenclaw_files = ["claude-code"]\n'
    )

    assert _host_names_in_code(module) == 2
