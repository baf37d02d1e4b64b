"""The README and docs/: every relative link leads somewhere, and the README stays a page a
newcomer reads (the reference lives in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
