"""Write the docs' lists of the hosts from the registry (`assembler/hosts/registry.py`): each
sits in a page of docs/ (or the README) between `<!-- hosts NAME: begin -->` and
`<!-- end -->`, so a host added to the registry reaches the docs when this runs.

    python scripts/host_tables.py           # rewrite them
    python scripts/host_tables.py --check   # exit 1 naming each page whose list differs

The lists (NAME):

- `setup`: the hosts `assemble setup` connects, what it connects, their hook and their page
  (docs/commands.md);
- `sessions`: the hosts whose sessions are read, their formats and where their sessions are
  found (docs/transcripts.md);
- `formats`: what `transcripts.format` may name, inline (docs/configuration.md).

tests/test_docs.py fails while a page's list is not what the registry gives.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from assembler.hosts import registry  # noqa: E402
from assembler.transcripts.hosts import formats  # noqa: E402

COMMAND = "python scripts/host_tables.py"
REGION = re.compile(r"<!-- hosts (?P<name>[a-z]+): begin -->(?P<body>.*?)<!-- end -->", re.DOTALL)


def pages(repo: Path) -> list[Path]:
    """Given the repository's folder, return the pages that may hold a list of the hosts."""
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = [
        f"| {' | '.join(header)} |",
        "|" + "---|" * len(header),
        *(f"| {' | '.join(_cell(c) for c in row)} |" for row in rows),
    ]
    return "\n" + "\n".join(lines) + "\n"


def _code(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def setup_table(docs: Path) -> str:
    """Given the docs folder, return the table of the hosts that have a setup or a hook: its
    name, what `assemble setup NAME` connects, its hook and its page (docs/hosts/NAME.md, where
    there is one)."""
    rows = []
    for plugin in registry.PLUGINS:
        if not (plugin.has("setup") or plugin.has("hook")):
            continue
        page = docs / "hosts" / f"{plugin.name}.md"
        rows.append(
            [
                f"`{plugin.name}`",
                plugin.summary if plugin.has("setup") else "",
                f"`assemble hook {plugin.name}`" if plugin.has("hook") else "none",
                f"[hosts/{page.name}](hosts/{page.name})" if page.exists() else "",
            ]
        )
    header = ["host", "what `assemble setup HOST` connects", "its hook command", "page"]
    return _table(header, rows)


def sessions_table() -> str:
    """Return the table of the hosts whose sessions are read, in the order their formats are
    told apart: each one's formats (`transcripts.format`) and where its sessions are found for
    a workspace when `transcripts.sources` is empty. Raise AttributeError naming a host that
    does not say where (`sessions_at` beside its `formats`)."""
    rows = []
    for plugin in registry.PLUGINS:
        if not plugin.has("host"):
            continue
        host = plugin.load("host").HOST
        if not isinstance(getattr(host, "sessions_at", None), str):
            raise AttributeError(
                f"the host {plugin.name!r} does not say where its sessions are found: give its "
                f"HOST a `sessions_at` line ({plugin.package}.host)"
            )
        rows.append([host.label, _code(host.formats), host.sessions_at])
    header = ["host", "`transcripts.format`", "found by themselves (`transcripts.sources` empty)"]
    return _table(header, rows)


def lists(docs: Path) -> dict[str, str]:
    """Given the docs folder, return each list of the hosts by its NAME, as the registry gives
    it: what goes between its markers."""
    return {
        "setup": setup_table(docs),
        "sessions": sessions_table(),
        "formats": _code(formats(registry.reading_hosts())),
    }


def rewritten(text: str, given: dict[str, str]) -> str:
    """Given a page's text and the lists, return the text with each list between its markers
    replaced. Raise KeyError for markers of a list there is none of."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in given:
            raise KeyError(f"no list of the hosts is named {name!r}; the lists are {list(given)}")
        return f"<!-- hosts {name}: begin -->{given[name]}<!-- end -->"

    return REGION.sub(replace, text)


def problems(repo: Path) -> list[str]:
    """Given the repository's folder, return what is out of date, a line each saying how to
    fix it: each page whose lists differ from the registry's, and each list no page holds."""
    given = lists(repo / "docs")
    found: list[str] = []
    held: set[str] = set()
    for page in pages(repo):
        text = page.read_text(encoding="utf-8")
        held.update(match["name"] for match in REGION.finditer(text))
        if rewritten(text, given) != text:
            found.append(
                f"{page.relative_to(repo)}: a list of the hosts differs from the registry's; "
                f"rewrite it with: {COMMAND}"
            )
    found += [
        f"no page holds the hosts' list {name!r}: put <!-- hosts {name}: begin --><!-- end --> "
        f"where it goes and run {COMMAND}"
        for name in given
        if name not in held
    ]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        found = problems(REPO)
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    given = lists(REPO / "docs")
    for page in pages(REPO):
        text = page.read_text(encoding="utf-8")
        if rewritten(text, given) != text:
            page.write_text(rewritten(text, given), encoding="utf-8")
            print(f"rewrote {page.relative_to(REPO)}")
    left = problems(REPO)
    for line in left:
        print(line, file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
