"""Undoing `assemble setup HOST`, as data each host's setup module gives (`Removal`): commands
of the host's own program, entries of ours to delete from JSON settings files, and tables of
ours to delete from TOML ones.
`assemble setup HOST --remove` prints them; with `--apply`, `apply_removal` performs them where
that is safe:

- a host command runs only when its program is on PATH (else it is printed for the user), and
  only for what a lookup found to be ours when it has one (the host's own JSON answer: the
  cron job that runs this workspace's assembly, not another of the user's jobs);
- a settings file is edited only where an entry is ours (the host's own judge: its `strip`),
  written atomically and only if it still holds what was read (compare before replace); its
  other entries stay as they were;
- a TOML file likewise, its tables of ours cut out line by line (`hosts.toml_tables`), every
  other line kept as it was, comments too; a table of ours it cannot cut so (written inline)
  is left for the user, named.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assembler.errors import AssemblerError
from assembler.fsutil import load_json, read_regular, replace_if_unchanged
from assembler.hosts.toml_tables import TableCutError, TablePath, without_tables

# Settings files are small; one larger than this is not one the setup wrote into.
SETTINGS_MAX_BYTES = 4 * 1024 * 1024
# How long one host command may take (OpenClaw's CLI starts in seconds on a loaded machine).
COMMAND_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class HostCommand:
    """A command of the host's program that removes something of ours.

    With a `lookup` (a command of the host that prints JSON), `--apply` runs the lookup first
    and `pick` says, from its JSON (None when it printed none), which values to run `argv`
    with, in place of `placeholder`: none means nothing of ours is there. Without one, `argv`
    runs once."""

    what: str  # what it removes, one line for the printout
    argv: tuple[str, ...]  # the program first ("openclaw", "claude")
    cwd: Path | None = None  # the folder it must run in (a project's own registration)
    lookup: tuple[str, ...] = ()
    pick: Callable[[Any], list[str]] | None = None
    placeholder: str = ""  # the word of argv that `pick`'s values replace ("<id>")
    # Words in a failed lookup's output that mean "nothing there" (any other failure, e.g. a
    # Gateway not running, leaves the step to the user).
    absent_if: tuple[str, ...] = ()

    def shell_lines(self) -> list[str]:
        """The lines a user runs for this step: the lookup first when its answer goes into the
        command (an id to read off), then the command."""
        lookup = [shlex.join(self.lookup)] if self.placeholder else []
        return [*lookup, self.shell_line()]

    def shell_line(self) -> str:
        """The command as a user types it: quoted for a shell, the placeholder left bare."""
        words = [w if w == self.placeholder else shlex.quote(w) for w in self.argv]
        line = " ".join(words)
        return f"cd {shlex.quote(str(self.cwd))} && {line}" if self.cwd else line


@dataclass(frozen=True)
class SettingsEdit:
    """Entries of ours to delete from a JSON settings file; `strip` returns the file's value
    without them (equal to what it was given when it holds none), never touching the rest."""

    what: str  # which entries, one line for the printout
    path: Path
    strip: Callable[[Any], Any]
    follow_links: bool = False  # only for the user's own file: a project's may be the agent's


@dataclass(frozen=True)
class TomlEdit:
    """Tables of ours to delete from a TOML settings file: `tables` returns, from the file's
    parsed value, the key paths of those that are ours (the host's own judge; [] for none)."""

    what: str  # which tables, one line for the printout
    path: Path
    tables: Callable[[dict[str, Any]], list[TablePath]]
    shown: tuple[str, ...] = ()  # their headers as setup wrote them, for the printout
    follow_links: bool = False  # only for the user's own file


Step = HostCommand | SettingsEdit | TomlEdit


@dataclass(frozen=True)
class Removal:
    """What undoes one host's setup for one workspace (or the all-projects setup, which serves
    every project), in order, and what it leaves (a line each: the daemon, the workspace's own
    files)."""

    host: str  # the host's name as the user knows it ("OpenClaw")
    workspace: Path | None  # None: the all-projects setup
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = ()


Status = Literal["removed", "absent", "manual", "failed"]


@dataclass(frozen=True)
class Outcome:
    """What `--apply` did with one step: removed it, found nothing of ours, left a command for
    the user (its program is not on PATH, or it needs something that is not running), or
    failed; `detail` says which command or file, in one line."""

    step: Step
    status: Status
    detail: str


Runner = Callable[[Sequence[str], Path | None], "subprocess.CompletedProcess[str]"]


def run_command(argv: Sequence[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
    """Run a host command (no shell) and return it finished, its output captured."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def apply_removal(
    removal: Removal,
    *,
    run: Runner = run_command,
    which: Callable[[str], str | None] = shutil.which,
) -> list[Outcome]:
    """Given a host's removal, perform each step that is safe to perform here and return what
    became of each, in order. A failed step does not stop the next."""
    outcomes = []
    for step in removal.steps:
        if isinstance(step, SettingsEdit | TomlEdit):
            outcomes.append(_edit(step))
        else:
            outcomes.append(_command(step, run, which))
    return outcomes


def _command(step: HostCommand, run: Runner, which: Callable[[str], str | None]) -> Outcome:
    by_hand = " then ".join(step.shell_lines())
    program = which(step.argv[0])
    if program is None:
        return Outcome(step, "manual", f"{step.argv[0]} is not on PATH; run: {by_hand}")
    values = [""]
    if step.lookup:
        looked = _run(run, [program, *step.lookup[1:]], step.cwd)
        if isinstance(looked, str):
            return Outcome(step, "manual", f"{looked}; run: {by_hand}")
        if looked.returncode != 0:
            said = looked.stdout + looked.stderr
            if any(words in said for words in step.absent_if):
                return Outcome(step, "absent", "nothing of ours")
            return Outcome(step, "manual", f"{_said(looked)}; run: {by_hand}")
        assert step.pick is not None
        values = step.pick(_json_or_none(looked.stdout))
        if not values:
            return Outcome(step, "absent", "nothing of ours")
    done = []
    for value in values:
        argv = [value if w == step.placeholder and value else w for w in step.argv[1:]]
        finished = _run(run, [program, *argv], step.cwd)
        line = shlex.join([step.argv[0], *argv])
        if isinstance(finished, str):
            return Outcome(step, "failed", f"{line}: {finished}")
        if finished.returncode != 0:
            return Outcome(step, "failed", f"{line}: exit {finished.returncode}: {_said(finished)}")
        done.append(line)
    return Outcome(step, "removed", "; ".join(done))


def _run(
    run: Runner, argv: Sequence[str], cwd: Path | None
) -> subprocess.CompletedProcess[str] | str:
    """Run a command; return it finished, or why it could not run, in a line."""
    try:
        finished = run(argv, cwd)
    except subprocess.TimeoutExpired:
        return f"{Path(argv[0]).name} did not answer within {COMMAND_TIMEOUT_S:.0f} s"
    except OSError as error:
        return f"{Path(argv[0]).name} could not start ({error.strerror or error})"
    return finished


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _said(finished: subprocess.CompletedProcess[str]) -> str:
    """What a failed command said first on stderr (its error; the lines after it are advice),
    else on stdout, at most 300 characters."""
    for stream in (finished.stderr, finished.stdout):
        said = [line.strip() for line in stream.splitlines() if line.strip()]
        if said:
            return said[0][:300]
    return "no output"


def _edit(step: SettingsEdit | TomlEdit) -> Outcome:
    """Given an edit, take ours out of its file, written only if it still holds what was read;
    return what became of it."""
    shown = shlex.quote(str(step.path))
    try:
        before = read_regular(
            step.path, limit=SETTINGS_MAX_BYTES, follow_links=step.follow_links
        ).data
    except (AssemblerError, OSError) as error:
        return Outcome(step, "failed", f"{shown}: {error}; edit it by hand")
    if before is None:
        return Outcome(step, "absent", f"{shown} does not exist")
    if isinstance(step, SettingsEdit):
        edited = _without_entries(step, before, shown)
    else:
        edited = _without_tables(step, before, shown)
    if isinstance(edited, Outcome):
        return edited
    data, done = edited
    try:
        target = step.path.resolve() if step.follow_links else step.path
        replaced = replace_if_unchanged(target, data, before)
    except (AssemblerError, OSError) as error:
        return Outcome(step, "failed", f"{shown}: {error}; edit it by hand")
    if not replaced.done:
        return Outcome(step, "failed", f"{shown} changed while it was edited; run this again")
    return Outcome(step, "removed", done)


def _without_entries(step: SettingsEdit, before: bytes, shown: str) -> tuple[bytes, str] | Outcome:
    """Given a JSON edit and its file's bytes, return the bytes without our entries and what
    was done, or the outcome when the file is not JSON or holds none of ours."""
    try:
        value = load_json(before)
    except (ValueError, UnicodeDecodeError) as error:
        return Outcome(step, "failed", f"{shown} is not JSON ({error}); edit it by hand")
    stripped = step.strip(json.loads(before))  # a copy: `strip` may change what it is given
    if stripped == value:
        return Outcome(step, "absent", f"nothing of ours in {shown}")
    data = (json.dumps(stripped, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return data, f"edited {shown}"


def _without_tables(step: TomlEdit, before: bytes, shown: str) -> tuple[bytes, str] | Outcome:
    """Given a TOML edit and its file's bytes, return the bytes without our tables and what
    was done, or the outcome when the file is not TOML, holds none of ours, or holds one that
    cannot be cut out line by line."""
    try:
        text = before.decode("utf-8")
        ours = step.tables(tomllib.loads(text))
    except (ValueError, UnicodeDecodeError) as error:  # TOMLDecodeError is a ValueError
        return Outcome(step, "failed", f"{shown} is not TOML ({error}); edit it by hand")
    if not ours:
        return Outcome(step, "absent", f"nothing of ours in {shown}")
    named = ", ".join(table_header(table) for table in ours)
    try:
        data = without_tables(text, ours).encode("utf-8")
    except TableCutError as error:
        return Outcome(step, "manual", f"{shown}: {error}; delete by hand: {named}")
    return data, f"edited {shown}: {named}"


def table_header(path: TablePath) -> str:
    """Given a table's key path, return its header as TOML writes it: bare keys bare, others
    quoted (`[hooks.state."/home/ray/.codex/hooks.json:session_start:0:0"]`)."""
    keys = (
        key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False) for key in path
    )
    return "[" + ".".join(keys) + "]"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
