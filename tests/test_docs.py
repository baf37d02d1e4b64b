"""The README and docs/: every relative link leads somewhere, the README stays a page a
newcomer reads (the reference lives in docs/), and the docs' lists of the hosts are the
registry's."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from assembler.hosts import registry

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_or_folder_of_the_project(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if not t.startswith(("http", "#"))]
    missing = [t for t in targets if not (page.parent / t.split("#", 1)[0]).exists()]
    assert missing == []


def test_the_readme_is_short_and_links_every_reference_page() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 250
    linked = {(REPO / t).resolve() for t in LINK.findall(text) if t.startswith("docs/")}
    assert set(PAGES[1:]) <= linked


def _host_tables() -> ModuleType:
    """The script that writes the docs' lists of the hosts (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("host_tables", REPO / "scripts/host_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_lists_of_the_hosts_are_what_the_registry_gives() -> None:
    assert _host_tables().problems(REPO) == []


def test_a_host_added_to_the_registry_alone_fails_the_docs_check_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tables = _host_tables()
    added = registry.Plugin("another", "its setup's entry", "assembler.hosts.codex")
    monkeypatch.setattr(registry, "PLUGINS", [*registry.PLUGINS, added])

    found = tables.problems(REPO)

    assert [line.split(":")[0] for line in found] == [
        "docs/commands.md",
        "docs/configuration.md",
        "docs/transcripts.md",
    ]
    assert all(line.endswith("rewrite it with: python scripts/host_tables.py") for line in found)


def test_a_list_of_the_hosts_is_rewritten_between_its_markers_and_nothing_else() -> None:
    tables = _host_tables()
    text = "A | <!-- hosts formats: begin -->`old`<!-- end --> | B\n"

    assert tables.rewritten(text, {"formats": "`auto`, `new`"}) == (
        "A | <!-- hosts formats: begin -->`auto`, `new`<!-- end --> | B\n"
    )
    with pytest.raises(KeyError, match="'formats'"):
        tables.rewritten(text, {"setup": ""})
