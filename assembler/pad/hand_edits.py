"""Hand edits of SCRATCHPAD.md: what an agent or a person changed in the file since the last
render goes to the journal before the next one, so that nothing typed into the file is lost.

A section whose text differs from the hash recorded at the render is written to the journal, one
whose markers are gone is cleared, one added between new markers is written. A section changed
both in the file and through the journal is merged line by line against the render it started
from, or, when the changes overlap, kept as the journal has it with the file's text saved under
`.scratchpad/conflicts/`. Text typed outside the sections' markers is appended to section main,
or saved there too. A dry run imports nothing: this is the step before a render that writes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.clock import aware
from assembler.errors import AssemblerError, Problem, SectionError
from assembler.file.codec import (
    auto_hash,
    auto_part,
    body_hash,
    decode_sections,
    find_agent_region,
    owned_lines,
    parse_loosely,
    region_lines,
    text_hash,
)
from assembler.file.records import (
    RenderRecord,
    closest_record,
    file_record,
    read_assembly_state,
    rendered_body,
    same_frontmatter,
)
from assembler.fsutil import (
    Snapshot,
    fsync_folder,
    open_nofollow,
    read_regular,
    real_dir,
    write_all,
)
from assembler.pad.journal import DEFAULT_SECTION, SectionState
from assembler.pad.sections import ExternalEntries, Scratchpad, scratchpad_for
from assembler.section_names import NAME_RULE, is_valid_section_name
from assembler.tokens import clip

if TYPE_CHECKING:
    from assembler.config.schema import Config

CONFLICTS_DIR: Final = "conflicts"
AUTO_EDIT_NAME: Final = "auto-part"  # the conflict file of text typed into the auto part


INVALID_NAME: Final = "unnamed-section"  # the conflict file name of a section badly named


STRAY_NAME: Final = "outside-markers"  # the conflicts file name of text that could not be kept


@dataclass
class FileSync:
    """What `sync_file_edits` found in SCRATCHPAD.md and did about it."""

    edited: bool = False  # the body changed since the last render
    written: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # kept in the journal; file text saved
    merged: list[str] = field(default_factory=list)  # changed in both, the changes combined
    auto_edited: bool = False  # the auto part was changed by hand (it is regenerated)
    auto_saved: str | None = None  # where the lines typed into the auto part were kept
    # Sections whose edit in the file lost to a newer journal write: (name, where it was kept).
    set_aside: list[tuple[str, str]] = field(default_factory=list)
    # Text typed outside the sections' markers: {"appended_to": "main", "tokens": n}, or
    # {"saved": path, "why": reason} when it could not be appended.
    stray: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)  # for `degraded`
    failure: str | None = None  # why the journal could not take the edits (none were)
    at: datetime | None = None  # when the file was edited (its mtime)
    # The previous render's agent region and hashes, carried over when the journal is down.
    region: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any] | None:
        """Return the frontmatter's `file_edits`, or None when the file was not edited."""
        if not self.edited:
            return None
        return {
            "at": self.at.isoformat(timespec="seconds") if self.at else None,
            "imported": self.written,
            "cleared": self.cleared,
            "conflicts": self.conflicts,
            "merged": self.merged,
            "stray": self.stray,
            "auto_overwritten": self.auto_edited,
            "auto_saved": self.auto_saved,
        }

    def notice(self, now: datetime) -> dict[str, Any] | None:
        """Given the clock, return the template's `stray` notice (what became of the text typed
        outside the markers, and when it was typed), or None when there was none.
        """
        if self.stray is None and not self.set_aside:
            return None
        at = self.at.astimezone(aware(now).tzinfo) if self.at else aware(now)
        return {
            "appended_to": None,
            "saved": None,
            "why": None,
            **(self.stray or {}),
            "at": f"{at:%H:%M}",
            "set_aside": [{"section": name, "saved": path} for name, path in self.set_aside],
        }


def file_edits(rendered: Mapping[str, str], found: Mapping[str, str]) -> dict[str, str | None]:
    """Given the agent sections as rendered and as found in the file now, return the edits.

    A section whose text differs is mapped to the new text, one that is gone to None; the
    result is what `Scratchpad.import_file_edits` takes.
    """
    edits: dict[str, str | None] = {n: t for n, t in found.items() if rendered.get(n) != t}
    edits.update({name: None for name in rendered if name not in found})
    return edits


def import_into_journal(
    config: Config,
    *,
    now: datetime,
    seen: Snapshot,
    external: Sequence[ExternalEntries] = (),
) -> tuple[FileSync, list[Problem]]:
    """Given a loaded config, the clock, SCRATCHPAD.md as just read and the scratchpad entries
    the hosts' sessions hold, journal the hand edits of the file (when the config asks for it)
    and the newest of each host's entries; return what the file sync found and the problems.

    This is the step before a render that writes: a dry run skips it. Nothing here raises for
    bad data; when the journal cannot take the edits, `FileSync.failure` says why and the
    render carries the file's agent region over unchanged (a later run imports it).
    """
    try:
        pad = scratchpad_for(config, now=lambda: now)
    except AssemblerError as error:  # a broken tokens.counter is reported by the auto part
        sync = region_of(seen, config.state_dir)
        sync.failure = str(error)
        return sync, [kept_problem(error)]
    degraded: list[Problem] = []
    sync = FileSync()
    try:
        if config.agent.import_edits:
            sync = sync_file_edits(pad, config.output_path, seen)
        degraded += sync.problems
        if sync.failure is not None:
            raise SectionError(sync.failure)
        for entries in external:
            if entries.entries:
                pad.import_external_entries(entries)
    except (SectionError, OSError) as error:
        if sync.region is None and not sync.hashes:
            sync = region_of(seen, config.state_dir)
        sync.failure = str(error)
        degraded.append(kept_problem(error))
    return sync, degraded


def kept_problem(error: Exception) -> Problem:
    """Given why the journal could not be read or written, return the problem a render reports
    when it shows the previous render's agent sections instead."""
    why = f"{error}; the agent sections of the previous render were kept as they were"
    return Problem("agent sections", why, "sections")


def region_of(seen: Snapshot, state_dir: Path) -> FileSync:
    """Given SCRATCHPAD.md as read and the state folder, return its agent region and the hashes
    recorded at its render, importing nothing (what a render carries over when the journal is
    unavailable)."""
    sync = FileSync()
    if seen.data is None:
        return sync
    record, body = read_record(seen.data, state_dir)
    sync.region = find_agent_region(body)
    if record is not None:
        sync.hashes = dict(record.agent_sections)
    return sync


def read_record(data: bytes, state_dir: Path) -> tuple[RenderRecord | None, str]:
    """Given the file's bytes and the state folder, return the record of the render the file
    came from (None when it cannot be known, see `file_record`) and the file's body."""
    frontmatter, meta, body = parse_loosely(data)
    state = read_assembly_state(state_dir)
    record = file_record(state, frontmatter, body, meta)
    if record is None and len(same := same_frontmatter(state, frontmatter)) > 1:
        # Renders of one second share their frontmatter: take the one the file is closest to.
        record = closest_record(state_dir, same, body)
    return record, body


def sync_file_edits(pad: Scratchpad, path: Path, seen: Snapshot | None = None) -> FileSync:
    """Given the scratchpad and SCRATCHPAD.md, import hand edits of its agent sections.

    The file counts as edited when its body no longer matches the hash recorded at its render
    (see `read_record`; a file saved with CRLF line ends throughout is read as LF), or when
    that render is not known. A section whose text differs from the hash
    recorded at the render is written to the journal (source `file-edit`), one whose markers
    are gone is cleared, one added between new markers is written. When the journal changed
    the same section since the render, the journal wins and the file's text is saved under
    `.scratchpad/conflicts/`. Text typed outside the sections' markers (see `stray_lines`) is
    appended to section main, or saved under `.scratchpad/conflicts/` when it does not fit or
    the region's markers are gone. A file whose region markers are gone imports no section
    (the sections stay). `seen` is the file as the caller read it (else it is read here), so
    that the caller can check before replacing the file that nobody wrote to it since.
    Problems never raise: they are returned for `degraded`.
    """
    sync = FileSync()
    try:
        snapshot = seen if seen is not None else read_regular(path)
    except OSError as error:
        sync.problems.append(
            Problem("hand edits", f"cannot read {path} ({error}); edits not imported", "hand edits")
        )
        return sync
    if snapshot.data is None:
        return sync
    mtime = datetime.fromtimestamp(snapshot.mtime or 0).astimezone()
    state_dir = pad.journal.path.parent
    record, body = read_record(snapshot.data, state_dir)
    recorded = record.agent_sections if record is not None else None
    sync.region = find_agent_region(body)
    if record is not None:
        sync.hashes = dict(record.agent_sections)
    if record is not None and record.body_sha256 == body_hash(body) and not record.agent_carried:
        return sync
    sync.edited, sync.at = True, mtime
    rendered = rendered_body(state_dir, record)
    stray = stray_lines(body, rendered)
    found_stray = stray_text(body, stray)
    # Text added after the auto part is no edit of it, even where no region follows it.
    dropped = set(stray)
    without = "\n".join(line for i, line in enumerate(body.split("\n")) if i not in dropped)
    if record is not None and record.auto_sha256 not in ("", auto_hash(without)):
        sync.auto_edited = True
        _keep_auto_edit(pad, sync, without, rendered, mtime)
    if record is None:
        sync.problems.append(
            Problem(
                "hand edits",
                f"the render {path} came from is not known (its frontmatter was edited, or "
                f"{state_dir.name}/last-assembly.json is missing or unreadable); agent sections "
                "were compared with the journal instead (the lines of both kept where they "
                "share any) and no section was cleared",
                "hand edits",
            )
        )
    if sync.region is None:
        if isinstance(recorded, Mapping) and not recorded:
            # The last render showed no agent sections: text added after it is the agent's.
            if found_stray:
                _keep_stray(pad, sync, found_stray, mtime, None)
            return sync
        sync.auto_edited = True
        sync.problems.append(
            Problem(
                "hand edits",
                f"the agent-section markers are gone from {path}; nothing imported and no "
                "section cleared (clear sections with 'assemble pad clear')",
                "hand edits",
            )
        )
        if found_stray:
            _keep_stray(pad, sync, found_stray, mtime, "the agent-section markers are gone")
        return sync
    try:
        base = decode_sections(rendered) if rendered is not None else {}
        _import_sections(pad, sync, decode_sections(sync.region), recorded, mtime, base)
    except (SectionError, OSError) as error:
        sync.failure = str(error)
        if found_stray:  # the journal is down: the text goes aside before the file is rewritten
            _keep_stray(pad, sync, found_stray, mtime, str(error))
        return sync
    if found_stray:
        _keep_stray(pad, sync, found_stray, mtime, None)
    return sync


def _import_sections(
    pad: Scratchpad,
    sync: FileSync,
    found: Mapping[str, str],
    recorded: object,
    mtime: datetime,
    base: Mapping[str, str] | None = None,
) -> None:
    """Given the sections found in the edited file, the hashes recorded at the render and the
    sections as rendered (`base`, from the copy of the last render, when there is one),
    journal the edits (see `sync_file_edits`) and record them in `sync`.

    A section changed both in the file and through the journal since the render is merged
    line by line against what was rendered (`merge_texts`) when the changes do not overlap;
    only when they do is the journal kept and the file's text saved aside.
    """
    with pad.journal.locked():
        state = pad.state()
        edits: dict[str, str | None] = {}
        for name, content in found.items():
            if not is_valid_section_name(name):
                # A marker typed by hand with a bad name: its text is kept aside, and the name
                # is never used to build a path.
                if content.strip():
                    saved = _save_conflict(pad, name, content, mtime)
                    sync.problems.append(
                        Problem(
                            "hand-added section",
                            f"{clip(name, 40)!r} is not a valid section name "
                            f"({NAME_RULE}); its text was saved in {saved}",
                            "hand edits",
                        )
                    )
                continue
            old = state.get(name)
            if isinstance(recorded, Mapping):
                shown = recorded.get(name)
                changed = shown != text_hash(content)
                # The journal moved on since the render too (a pad call): both changed.
                journal_moved = (old is None and shown is not None) or (
                    old is not None and text_hash(old.content) != shown
                )
            else:
                changed = old is None or old.content != content
                journal_moved = old is not None and old.updated > mtime
            if not changed or (old is not None and old.content == content):
                continue
            merged = _merged(name, old, content, recorded, base)
            if merged is None and not isinstance(recorded, Mapping) and not journal_moved:
                # The render the file came from is not known: what the file lacks may be news
                # of the journal's, not a deletion. Keep the lines of both.
                merged = _union(old, content)
            if merged is not None:
                if merged != (old.content if old is not None else None):
                    edits[name] = merged
                    sync.merged.append(name)
                continue
            if journal_moved or (old is not None and old.kind == "subsystem"):
                saved = _save_conflict(pad, name, content, mtime)
                sync.conflicts.append(name)
                sync.set_aside.append((name, _shown_path(saved)))
                sync.problems.append(
                    Problem(
                        f"hand edit of section {name}",
                        f"the section also changed through the journal since the last "
                        f"render; the journal's text was kept and the file's saved in {saved}",
                        "hand edits",
                    )
                )
                continue
            edits[name] = content
        if isinstance(recorded, Mapping):
            for name, digest in recorded.items():
                old = state.get(str(name))
                if name in found or old is None or old.kind != "agent":
                    continue
                if text_hash(old.content) == digest:
                    edits[str(name)] = None
                else:
                    sync.conflicts.append(str(name))
                    sync.problems.append(
                        Problem(
                            f"hand edit of section {name}",
                            "deleted from the file but changed through the journal since "
                            "the last render; the journal's text was kept",
                            "hand edits",
                        )
                    )
        answer = pad.import_file_edits(edits)
    sync.written = list(answer.data["written"])
    sync.cleared = list(answer.data["cleared"])


def _merged(
    name: str,
    old: SectionState | None,
    content: str,
    recorded: object,
    base: Mapping[str, str] | None,
) -> str | None:
    """Given a section changed in the file while the journal changed it too, return the two
    changes combined, or None when they cannot be (no rendered text to merge against, a
    subsystem section, overlapping changes)."""
    if old is None or old.kind != "agent" or not base or not isinstance(recorded, Mapping):
        return None
    rendered = base.get(name)
    if rendered is None or text_hash(rendered) != recorded.get(name):
        return None
    if text_hash(old.content) == recorded.get(name):
        return None  # only the file changed: a plain edit, not a merge
    return merge_texts(rendered, old.content, content)


def _union(old: SectionState | None, content: str) -> str | None:
    """Given a section as the journal has it and as found in the file, with no render to tell
    which side changed what, return every line of both, in order (None: no such section in
    the journal, or the two cannot be combined so)."""
    if old is None or old.kind != "agent":
        return None
    ours, theirs = old.content.split("\n"), content.split("\n")
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    common = [line for m in matcher.get_matching_blocks() for line in ours[m.a : m.a + m.size]]
    if not common:
        return None
    return merge_texts("\n".join(common), old.content, content)


def merge_texts(base: str, ours: str, theirs: str) -> str | None:
    """Given a text and two changed versions of it, return both changes combined, line by
    line, or None when they touch the same lines differently.

    Lines inserted by both at the same place are combined: when one insertion starts with the
    other (an agent that appended twice, the second time to a copy that had the first) the
    longer one is taken, otherwise ours then those of theirs that ours does not have, so
    nothing either side added is lost or doubled.
    """
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    lines = base.split("\n")
    changes = sorted(
        [(*change, 0) for change in _line_changes(lines, ours.split("\n"))]
        + [(*change, 1) for change in _line_changes(lines, theirs.split("\n"))],
        key=lambda change: (change[0], change[1], change[3]),
    )
    out: list[str] = []
    position = index = 0
    while index < len(changes):
        start, end = changes[index][0], changes[index][1]
        group = [changes[index]]
        index += 1
        # Overlapping changes, or insertions at the same place, are decided together.
        while index < len(changes) and (
            changes[index][0] < end or changes[index][0] == start == end
        ):
            group.append(changes[index])
            end = max(end, changes[index][1])
            index += 1
        out.extend(lines[position:start])
        sides = [[c for c in group if c[3] == side] for side in (0, 1)]
        if not sides[0] or not sides[1]:
            replaced = _apply(lines, start, end, sides[0] or sides[1])
        else:
            mine, yours = (_apply(lines, start, end, side) for side in sides)
            if mine == yours:
                replaced = mine
            elif start != end:
                return None  # both changed the same lines, differently
            elif yours[: len(mine)] == mine:
                replaced = yours
            elif mine[: len(yours)] == yours:
                replaced = mine
            else:
                # A line both inserted here is one edit that reached both sides: once.
                replaced = mine + [line for line in yours if line not in mine]
        out.extend(replaced)
        position = end
    out.extend(lines[position:])
    return "\n".join(out)


def _line_changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """The changes that turn `base` into `other`: (start, end, new lines) over base lines."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def _apply(
    base: list[str], start: int, end: int, changes: Sequence[tuple[int, int, list[str], int]]
) -> list[str]:
    """The lines start..end of base with one side's changes (which never overlap) applied."""
    out: list[str] = []
    position = start
    for change_start, change_end, new, _ in changes:
        out.extend(base[position:change_start])
        out.extend(new)
        position = change_end
    out.extend(base[position:end])
    return out


def stray_lines(body: str, rendered: str | None) -> list[int]:
    """Given a SCRATCHPAD.md body and the body as last rendered (None if unknown), return the
    indices of the body's lines the agent typed outside the sections' markers.

    With the render to compare with, these are the lines added or changed after the auto part
    (edits of the auto part are overwritten, as documented) that no section's markers hold:
    text after the region, between sections, in a subsystem section or a preview. The
    program's own headings and notes are in the render, so they never count. Without it, only
    the lines after the region's end marker count (the program renders nothing there).
    """
    lines = body.split("\n")
    owned = owned_lines(lines)
    if rendered is None:
        begin, end = region_lines(lines)
        candidates: Iterable[int] = range(end + 1, len(lines)) if begin is not None else ()
    else:
        old = rendered.split("\n")
        old_begin, _ = region_lines(old)
        if old_begin is None:  # no region: the auto part ends at its last line of text
            old_begin = max((i + 1 for i, line in enumerate(old) if line.strip()), default=0)
        matcher = difflib.SequenceMatcher(None, old, lines, autojunk=False)
        candidates = [
            j
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if (tag == "insert" and i1 >= old_begin) or (tag == "replace" and i2 > old_begin)
            for j in range(j1, j2)
        ]
    return [j for j in candidates if j not in owned and lines[j].strip()]


def stray_text(body: str, indices: Sequence[int]) -> str:
    """Given a body and the indices of its stray lines, return them as one text: each run of
    stray lines as typed, runs joined by a newline (the blank lines around them dropped).
    """
    lines = body.split("\n")
    runs: list[list[str]] = []
    previous = None
    for index in indices:
        if previous is None or index != previous + 1:
            runs.append([])
        runs[-1].append(lines[index])
        previous = index
    return "\n".join("\n".join(run) for run in runs)


def _keep_stray(
    pad: Scratchpad, sync: FileSync, text: str, moment: datetime, why_not: str | None
) -> None:
    """Given text typed outside the markers, append it to section main, or save it under
    `.scratchpad/conflicts/` when `why_not` says it cannot be appended or the append is
    refused; record which in `sync.stray`.
    """
    if why_not is None:
        try:
            current = pad.state().get(DEFAULT_SECTION)
            # A run whose file was not written (a dry run) appended it already: not twice.
            if current is not None and current.content.endswith(text):
                sync.stray = {"appended_to": DEFAULT_SECTION, "tokens": pad.count(text)}
                return
            answer = pad.append(text, section=DEFAULT_SECTION, source="file-edit")
        except (SectionError, OSError) as error:
            why_not = str(error)
        else:
            if answer.ok:
                sync.stray = {"appended_to": DEFAULT_SECTION, "tokens": pad.count(text)}
                return
            why_not = answer.message
    saved = _save_conflict(pad, STRAY_NAME, text, moment)
    sync.stray = {"saved": str(saved), "why": why_not}
    sync.problems.append(
        Problem(
            "text outside the section markers",
            f"not added to section {DEFAULT_SECTION} ({why_not}); saved in {saved}",
            "hand edits",
        )
    )


def _keep_auto_edit(
    pad: Scratchpad, sync: FileSync, body: str, rendered: str | None, moment: datetime
) -> None:
    """The auto part is regenerated, so what was typed into it is overwritten: keep a copy of
    the lines the render did not write under `conflicts/` (`<time>-auto-part.md`), so that
    nothing typed in the file is lost, and say where."""
    known = set(auto_part(rendered).split("\n")) if rendered is not None else set()
    typed = [line for line in auto_part(body).split("\n") if line.strip() and line not in known]
    if not typed:
        return  # only lines removed or reordered: nothing to keep
    try:
        saved = _save_conflict(pad, AUTO_EDIT_NAME, "\n".join(typed) + "\n", moment)
    except OSError as error:
        sync.problems.append(
            Problem(
                "hand edits",
                f"cannot keep the text typed into the auto part ({error})",
                "hand edits",
            )
        )
        return
    sync.auto_saved = _shown_path(saved)


def _shown_path(saved: Path) -> str:
    """A conflict file's path as the file shows it: `.scratchpad/conflicts/<name>`."""
    return f"{saved.parent.parent.name}/{saved.parent.name}/{saved.name}"


def save_conflict(state_dir: Path, name: str, text: str, moment: datetime) -> Path:
    """Given the state folder, a section name, text that could not go into the journal and
    when it was written, save the text under `conflicts/` and return the file's path.

    The file is `<time>-<name>.md`, or `<time>-<name>-<n>.md` when that exists (nothing is
    written over). A name that is not a valid section name (it came from a hand-edited marker)
    never reaches the path: the file is then named `<time>-unnamed-section.md`. Raise OSError
    (UnsafePathError for a link) if the folder cannot be written.
    """
    folder = real_dir(real_dir(state_dir) / CONFLICTS_DIR)
    safe = name if is_valid_section_name(name) else INVALID_NAME
    stem = f"{moment.strftime('%Y%m%dT%H%M%S')}-{safe}"
    data = text.encode("utf-8", "surrogatepass")
    for number in range(1, 10_000):
        path = folder / (f"{stem}.md" if number == 1 else f"{stem}-{number}.md")
        try:
            fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_folder(folder)
        return path
    raise OSError(f"{folder} has 10,000 conflict files named {stem}; clear it out")


def _save_conflict(pad: Scratchpad, name: str, text: str, moment: datetime) -> Path:
    return save_conflict(pad.journal.path.parent, name, text, moment)
