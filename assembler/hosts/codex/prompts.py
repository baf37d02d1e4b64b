"""Codex's custom prompts: what `/prompts:<name> ARGS` sends as the human's message.

A custom prompt is a Markdown file in `$CODEX_HOME/prompts/` (top level, `.md`). When the human
runs it, Codex sends the file's body (its YAML frontmatter left out) as the user's message,
verbatim after placeholder expansion: `$1`..`$9` the positional arguments, `$ARGUMENTS` all of
them joined by a space, `$NAME` a `NAME=value` argument; `$$` and a placeholder with no value
stay as written. The rollout then holds the whole expansion as if the human had typed it, and
only the arguments are theirs.

So the prompts of the Codex home a rollout lies in (`<home>/sessions/YYYY/MM/DD/`, or
`<home>/archived_sessions/`) are read, each made a pattern (the body's text literal, its
whitespace runs any whitespace, each placeholder any text), and a user message that is wholly
one expansion is the human's arguments, or the command itself (`/prompts:<name>`) when they
gave none. The folder is read once per change of its files; at most MAX_PROMPTS files of at
most MAX_PROMPT_BYTES each, regular files only; an unreadable or non-UTF-8 file is skipped.
A body with too little text of its own (`$ARGUMENTS` alone) would match anything and is not
used. The prompts are only matched against: nothing of them is shown or sent anywhere.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Final

MAX_PROMPTS: Final = 200
MAX_PROMPT_BYTES: Final = 64 * 1024
# The body's own text (placeholders and whitespace aside) a prompt needs to be matched on.
MIN_LITERAL_CHARS: Final = 40
PROMPTS_PREFIX: Final = "/prompts:"

# codex-rs custom prompts: `$$`, `$1`..`$9`, `$ARGUMENTS`, and named `$[A-Z][A-Z0-9_]*`.
_PLACEHOLDER = re.compile(r"\$(?:\$|[1-9]|[A-Z][A-Z0-9_]*)")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class CustomPrompt:
    """One prompt file: its name and the pattern of its expansions."""

    name: str
    pattern: re.Pattern[str]


def codex_home_of(source: str) -> Path | None:
    """Given a rollout's path, return the Codex home it lies in, or None when it lies in no
    sessions folder (a rollout configured by hand elsewhere)."""
    path = PurePath(source)
    parents = path.parents
    if len(parents) > 4 and parents[3].name == "sessions":
        return Path(parents[4])
    if len(parents) > 1 and parents[0].name == "archived_sessions":
        return Path(parents[1])
    return None


def prompts_for(source: str) -> tuple[CustomPrompt, ...]:
    """Given a rollout's path, return the custom prompts of its Codex home (none when it has
    no prompts folder)."""
    home = codex_home_of(source)
    if home is None:
        return ()
    folder = home / "prompts"
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return ()
    listing: list[tuple[str, int, int]] = []
    for entry in entries:
        if len(listing) >= MAX_PROMPTS:
            break
        if not entry.name.endswith(".md"):
            continue
        try:
            info = entry.stat()  # a link to a file counts as the file, as for Codex
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_PROMPT_BYTES:
            listing.append((entry.name, info.st_mtime_ns, info.st_size))
    return _read_prompts(str(folder), tuple(listing))


@lru_cache(maxsize=16)
def _read_prompts(
    folder: str, listing: tuple[tuple[str, int, int], ...]
) -> tuple[CustomPrompt, ...]:
    """The prompts of a folder as listed (names, times, sizes: the key of the cache)."""
    found: list[CustomPrompt] = []
    for name, _, _ in listing:
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                raw = handle.read(MAX_PROMPT_BYTES + 1)
            body = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        pattern = _pattern(_FRONTMATTER.sub("", body, count=1))
        if pattern is not None:
            found.append(CustomPrompt(name[: -len(".md")], pattern))
    return tuple(found)


def _pattern(body: str) -> re.Pattern[str] | None:
    """Given a prompt's body, return the pattern of its expansions, or None when the body has
    too little text of its own to tell an expansion from anything else."""
    body = body.strip()
    pieces: list[str] = []
    literal = 0
    position = 0
    for match in _PLACEHOLDER.finditer(body):
        text = body[position : match.start()]
        literal += len(_SPACE.sub("", text))
        pieces.append(_literal(text))
        if match.group(0) == "$$":
            pieces.append(re.escape("$$"))
        else:
            pieces.append(r"(.*?)")
        position = match.end()
    rest = body[position:]
    literal += len(_SPACE.sub("", rest))
    pieces.append(_literal(rest))
    if literal < MIN_LITERAL_CHARS:
        return None
    return re.compile(r"\s*" + "".join(pieces) + r"\s*", re.DOTALL)


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in _SPACE.split(text))


def human_part(text: str, prompts: tuple[CustomPrompt, ...]) -> str | None:
    """Given a user message's text and the custom prompts, return the human's part of it when
    it is wholly one prompt's expansion (the arguments, or `/prompts:<name>` when none was
    given); None when it is no expansion."""
    for prompt in prompts:
        match = prompt.pattern.fullmatch(text)
        if match is None:
            continue
        given: list[str] = []
        for value in match.groups():
            value = value.strip()
            if value and value not in given and not _PLACEHOLDER.fullmatch(value):
                given.append(value)
        return " ".join(given) if given else PROMPTS_PREFIX + prompt.name
    return None
