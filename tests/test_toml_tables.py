"""Tests of assembler/hosts/toml_tables.py: tables cut out of TOML line by line, the rest kept
byte for byte, and no cut at all when the rest would not read as it did."""

from __future__ import annotations

import tomllib

import pytest

from assembler.hosts.toml_tables import TableCutError, header_path, without_tables

DOCUMENT = """\
model = "gpt-5.5"  # mine

[features]
hooks = true

[hooks.state."/h/hooks.json:session_start:0:0"]
trusted_hash = "sha256:aa"

[hooks.state.'/h/hooks.json:user_prompt_submit:0:0']
# a comment inside the table goes with it
trusted_hash = "sha256:bb"

# the linter, my own
[mcp_servers.lint]
command = "lint-mcp"

[mcp_servers.scratchpad]
command = "/opt/assemble"
args = [
  "mcp", "--workspace",
  "/w",
]

[mcp_servers.scratchpad.env]
A = "1"
"""
OURS = [
    ("hooks", "state", "/h/hooks.json:session_start:0:0"),
    ("hooks", "state", "/h/hooks.json:user_prompt_submit:0:0"),
    ("mcp_servers", "scratchpad"),
]


def test_the_tables_and_those_under_them_go_and_every_other_line_stays() -> None:
    left = without_tables(DOCUMENT, OURS)

    assert left == (
        'model = "gpt-5.5"  # mine\n\n[features]\nhooks = true\n\n'
        '# the linter, my own\n[mcp_servers.lint]\ncommand = "lint-mcp"\n'
    )
    assert tomllib.loads(left) == {
        "model": "gpt-5.5",
        "features": {"hooks": True},
        "mcp_servers": {"lint": {"command": "lint-mcp"}},
    }


def test_a_table_not_there_changes_nothing() -> None:
    assert without_tables(DOCUMENT, [("mcp_servers", "other")]) == DOCUMENT


@pytest.mark.parametrize(
    "document",
    [
        # no header line of its own
        'mcp_servers.scratchpad.command = "x"\n',
        'mcp_servers = { scratchpad = { command = "x" } }\n',
        '[mcp_servers]\nscratchpad = { command = "x" }\n',
        # a line of a multi-line string that reads as a header ends the cut too early
        '[mcp_servers.scratchpad]\nnote = """\n[other]\nx = 1\n"""\n[kept]\ny = 2\n',
    ],
)
def test_a_table_that_cannot_be_cut_line_by_line_is_refused(document: str) -> None:
    with pytest.raises(TableCutError):
        without_tables(document, [("mcp_servers", "scratchpad")])


def test_a_document_that_is_not_toml_is_refused() -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        without_tables("[mcp_servers.scratchpad\n", [("mcp_servers", "scratchpad")])


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("[a.b]", ("a", "b")),
        ('  [ a . "b.c" ]  # note', ("a", "b.c")),
        ("[a.'x:y:0:0']", ("a", "x:y:0:0")),
        ("[[servers.list]]", ("servers", "list")),
        ('["a", "b"]', None),  # an array's line
        ("key = 1", None),
        ("[not closed", None),
    ],
)
def test_a_header_line_names_its_table_as_toml_reads_it(
    line: str, path: tuple[str, ...] | None
) -> None:
    assert header_path(line) == path
