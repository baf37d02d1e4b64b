"""Cutting tables out of a TOML file with every other line left as it was: comments, order,
spacing. Python reads TOML (tomllib) but writes none, and a rewrite from the parsed value
would lose the user's comments; so a table goes by its lines, from its `[header]` to the next
header, and the cut is checked by parsing: the result must read as the file did without those
tables, else nothing is cut.

    text = without_tables(text, [("mcp_servers", "scratchpad")])   # raise TableCutError

A table written another way (inline, `scratchpad = { ... }`, or by dotted keys) has no header
line of its own: the check fails and the caller names the table for the user to delete.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Collection
from typing import Any

TablePath = tuple[str, ...]


class TableCutError(ValueError):
    """The tables could not be cut line by line so that the rest reads as it did."""


def without_tables(text: str, paths: Collection[TablePath]) -> str:
    """Given a TOML document and the key paths of tables in it, return the document without
    them (nor the tables under them): each one's header line and the lines after it up to the
    next header go, but for the comments and blank lines just before that header (the next
    table's). Raise TableCutError if the result would not parse to the document's value
    without those tables (a table without a header line of its own, a header-like line inside
    a multi-line value), and tomllib.TOMLDecodeError if the document is not TOML."""
    value = tomllib.loads(text)
    out: list[str] = []
    held: list[str] = []  # comments and blank lines inside a table being cut
    cutting = False
    for line in text.splitlines(keepends=True):
        path = header_path(line)
        if path is not None:
            if cutting:
                _keep(out, held)
            held = []
            cutting = any(path[: len(cut)] == cut for cut in paths)
            if not cutting:
                out.append(line)
        elif not cutting:
            out.append(line)
        elif not line.strip() or line.lstrip().startswith("#"):
            held.append(line)
        else:
            held = []  # a key of the table: it goes, and the comments above it with it
    if cutting:  # the file ended in a cut table: no blank lines left where it stood
        _keep(out, held)
        while out and not out[-1].strip():
            out.pop()
    result = "".join(out)
    expected = copy.deepcopy(value)
    for path in paths:
        _delete(expected, path)
    try:
        left = tomllib.loads(result)
    except tomllib.TOMLDecodeError as error:
        raise TableCutError(f"the rest would not be TOML ({error})") from None
    if _pruned(left) != _pruned(expected):
        raise TableCutError("a table has no header line of its own, or a value looks like one")
    return result


def header_path(line: str) -> TablePath | None:
    """Given a line, return the key path of the table (or array of tables) its header names,
    quoted keys read as TOML reads them; None when it is no header."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        node: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while True:
        if isinstance(node, list) and len(node) == 1:  # [[array.of.tables]]
            node = node[0]
        if not isinstance(node, dict) or len(node) != 1:
            break
        key, node = next(iter(node.items()))
        path.append(key)
    return tuple(path) if path and node == {} else None


def _keep(out: list[str], held: list[str]) -> None:
    """Keep the comments and blank lines that close a cut table (the next table's), without a
    second blank line where the cut one stood."""
    while held and not held[0].strip() and (not out or not out[-1].strip()):
        held = held[1:]
    out.extend(held)


def _delete(value: dict[str, Any], path: TablePath) -> None:
    node: Any = value
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _pruned(value: Any) -> Any:
    """The value without empty tables: a table that only held the ones cut goes with them."""
    if isinstance(value, dict):
        kept = {key: _pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item != {}}
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value
