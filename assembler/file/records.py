"""The records of SCRATCHPAD.md's renders and assemblies, kept in the state folder: the copies
of the last renders (`rendered.md` and `rendered/`, what an import of hand edits merges against)
and `last-assembly.json` (the records that tell a later run a hand edit of the file, and what the
last assembly measured). The file's own bytes are `codec.py`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from assembler.file.codec import auto_hash, body_hash, rendered_path, split_frontmatter
from assembler.fsutil import (
    atomic_write,
    check_dir,
    load_json,
    read_state_file,
    real_dir,
    remove_stale_temps,
)

# --------------------------------------------------------------------------------------------
# The copies of the last renders.
# --------------------------------------------------------------------------------------------

RENDERED_DIR: Final = "rendered"  # the copies of the last renders, by body hash


KEPT_RENDERS: Final = 8


def remember_render(state_dir: Path, text: str) -> bool:
    """Given the state folder and the text of the SCRATCHPAD.md just written, keep a copy.

    The next run compares the file with it to tell what the agent typed from what the program
    rendered. The last KEPT_RENDERS copies are also kept by body hash (`rendered/`), so that an
    edit an agent made on an older copy of the file is still merged against the render it
    started from. Return whether the copy was written; without it the next run still imports
    the sections' edits and keeps the text after the region's end marker, so an error is no
    reason to fail a run whose file was written (nor to wait for the disk: the copies are not
    fsynced).
    """
    try:
        atomic_write(rendered_path(real_dir(state_dir)), text, durable=False)
        folder = real_dir(state_dir / RENDERED_DIR)
        remove_stale_temps(folder)  # each copy has a name of its own, written once
        copy = folder / f"{body_hash(split_frontmatter(text)[1])[:16]}.md"
        atomic_write(copy, text, durable=False)
        copies = sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in copies[KEPT_RENDERS:]:
            old.unlink(missing_ok=True)
    except (OSError, UnicodeError):
        return False
    return True


def rendered_body(state: Path, record: RenderRecord | None) -> str | None:
    """Given the state folder and the record of the render that wrote the file (see
    `file_record`), return that render's body (the last render's copy, else one of the copies
    kept by hash), or None when there is none.
    """
    if record is None:
        return None
    wanted = record.body_sha256
    try:
        check_dir(state)
    except OSError:
        return None
    for path in (rendered_path(state), state / RENDERED_DIR / f"{wanted[:16]}.md"):
        try:
            data = read_state_file(path).data
        except OSError:
            continue
        if data is None:
            continue
        _, body = split_frontmatter(data.decode("utf-8", "replace"))
        if body_hash(body) == wanted:
            return body
    return None


# --------------------------------------------------------------------------------------------
# The record of the last assembly.
# --------------------------------------------------------------------------------------------

ASSEMBLY_NAME: Final = "last-assembly.json"


ASSEMBLY_VERSION: Final = 1


# A record larger than this is not one this program wrote: it is not read.
MAX_ASSEMBLY_BYTES: Final = 4 << 20


@dataclass(frozen=True)
class RenderRecord:
    """What a later run needs to tell the hand edits of the file one render wrote: its
    frontmatter as written, the hash of its body and of its auto part, the hash of each agent
    section shown whole, and whether the agent region was carried over without being imported
    (the journal was down: the next run imports it even if nobody edits the file)."""

    frontmatter: str
    body_sha256: str
    auto_sha256: str
    agent_sections: dict[str, str] = field(default_factory=dict)
    agent_carried: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "frontmatter": self.frontmatter,
            "body_sha256": self.body_sha256,
            "auto_sha256": self.auto_sha256,
            "agent_sections": dict(self.agent_sections),
            "agent_carried": self.agent_carried,
        }

    @classmethod
    def from_dict(cls, value: object) -> RenderRecord | None:
        """Given a record as read from the state file (untrusted: the agent can write there),
        return it, or None when it is not one this program writes."""
        if not isinstance(value, Mapping):
            return None
        fields = [value.get(key) for key in ("frontmatter", "body_sha256", "auto_sha256")]
        sections = value.get("agent_sections")
        carried = value.get("agent_carried", False)
        if not all(isinstance(f, str) for f in fields) or not isinstance(carried, bool):
            return None
        if not isinstance(sections, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in sections.items()
        ):
            return None
        frontmatter, body_sha, auto_sha = (str(f) for f in fields)
        return cls(frontmatter, body_sha, auto_sha, dict(sections), carried)


def render_record(text: str, agent_sections: Mapping[str, str], *, carried: bool) -> RenderRecord:
    """Given the text of a rendered file, the hashes of its agent sections shown whole and
    whether its agent region was carried over, return the record of the render."""
    frontmatter, body = split_frontmatter(text)
    return RenderRecord(
        frontmatter or "", body_hash(body), auto_hash(body), dict(agent_sections), carried
    )


@dataclass
class AssemblyState:
    """`last-assembly.json`: the records of the last renders written (`renders`, newest first:
    the file holds the first, or an edit of it; an agent's editor may still hold an older
    one), the record of a render about to replace the file (`pending`: only between the two
    writes around the swap, or after a crash between them), and what the last assembly
    measured (`diagnostics`)."""

    renders: list[RenderRecord] = field(default_factory=list)
    pending: RenderRecord | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def current(self) -> RenderRecord | None:
        """The record of the last render written, or None."""
        return self.renders[0] if self.renders else None


def assembly_state_path(state_dir: Path) -> Path:
    """Given the state folder, return where the record of the last assembly is kept."""
    return state_dir / ASSEMBLY_NAME


def write_assembly_state(state_dir: Path, state: AssemblyState, *, durable: bool = True) -> None:
    """Given the state folder and the record, write it atomically (the last KEPT_RENDERS
    renders), fsynced unless not `durable`. Raise OSError (an UnsafePathError for a link) if
    the state folder cannot be written."""
    data = {
        "version": ASSEMBLY_VERSION,
        "renders": [record.to_dict() for record in state.renders[:KEPT_RENDERS]],
        "pending": state.pending.to_dict() if state.pending is not None else None,
        "diagnostics": state.diagnostics,
    }
    text = json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n"
    data_bytes = text.encode("utf-8", "surrogatepass")
    atomic_write(assembly_state_path(real_dir(state_dir)), data_bytes, durable=durable)


def read_assembly_state(state_dir: Path) -> AssemblyState | None:
    """Given the state folder, return the record of the last assembly, or None when it is
    missing, unreadable, a link, too large or not what this version writes. Never raise: the
    agent can write the state folder, so the record is a hint, never an authority (a record
    that is not one this program writes is left out)."""
    try:
        path = assembly_state_path(state_dir)
        data = read_state_file(path, limit=MAX_ASSEMBLY_BYTES).data
        value: Any = load_json(data) if data is not None else None
    except (OSError, ValueError):  # a pipe, a link, too large or too deep: not ours
        return None
    if not isinstance(value, dict) or value.get("version") != ASSEMBLY_VERSION:
        return None
    renders = value.get("renders")
    records = [RenderRecord.from_dict(r) for r in renders] if isinstance(renders, list) else []
    diagnostics = value.get("diagnostics")
    return AssemblyState(
        [r for r in records[:KEPT_RENDERS] if r is not None],
        RenderRecord.from_dict(value.get("pending")),
        diagnostics if isinstance(diagnostics, dict) else {},
    )


def last_diagnostics(state_dir: Path, body: str) -> tuple[dict[str, Any], bool]:
    """Given the state folder and the file's body, return what the last assembly measured
    (sources, tokens, sections, dropped, degraded, memory; {} when unknown) and whether the
    file is still the one it wrote."""
    state = read_assembly_state(state_dir)
    if state is None:
        return {}, False
    current = state.current
    return state.diagnostics, current is not None and current.body_sha256 == body_hash(body)


def file_record(
    state: AssemblyState | None, frontmatter: str | None, body: str, meta: Mapping[str, Any] | None
) -> RenderRecord | None:
    """Given the record of the last assembly, the file's frontmatter text, its body and its
    parsed frontmatter, return the record of the render the file came from, or None when that
    cannot be known (then a hand-edit import compares with the journal and clears nothing).

    The file came from the newest render whose frontmatter it has (the last render's, an older
    one an agent's editor still held), or from the render before a pending one (a run stopped
    between its two writes around the swap). It is unedited when its body hash is that
    render's; an edit back to an older render's body is still an edit. An edited file is an
    edit of that render when only one record has its frontmatter; two renders of one second
    are not told apart (None). A file whose frontmatter was edited is matched by its body
    hash alone. A file written by an earlier version, which kept the hashes in its
    frontmatter, is read from there when there is no record at all.
    """
    records: list[RenderRecord] = []
    if state is not None:
        records = ([state.pending] if state.pending else []) + state.renders
    if not records:
        return _earlier_record(frontmatter, meta)
    digest = body_hash(body)
    same = [r for r in records if r.frontmatter == (frontmatter or "")]
    if not same:
        return next((r for r in records if r.body_sha256 == digest), None)
    newest = same[:2] if state is not None and same[0] is state.pending else same[:1]
    for record in newest:
        if record.body_sha256 == digest:
            return record
    return same[0] if len(same) == 1 else None


def closest_record(
    state_dir: Path, candidates: Sequence[RenderRecord], body: str
) -> RenderRecord | None:
    """Given the state folder, the records of renders that share the file's frontmatter (renders
    of one second) and the file's body, return the one the file is an edit of: the render whose
    kept copy differs from the body in the fewest lines (an edit changes a few lines of the
    render it started from; the next render changes others). None when no copy is kept or two
    are equally close."""
    import difflib  # here: only an import of hand edits compares renders

    lines = body.split("\n")
    scored: list[tuple[int, RenderRecord]] = []
    for record in candidates:
        rendered = rendered_body(state_dir, record)
        if rendered is not None:
            matcher = difflib.SequenceMatcher(None, rendered.split("\n"), lines, autojunk=False)
            same_lines = sum(block.size for block in matcher.get_matching_blocks())
            scored.append((len(lines) + len(rendered.split("\n")) - 2 * same_lines, record))
    scored.sort(key=lambda pair: pair[0])
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    return scored[0][1]


def same_frontmatter(state: AssemblyState | None, frontmatter: str | None) -> list[RenderRecord]:
    """Given the record of the last assembly and the file's frontmatter text, return the
    records of the renders that wrote that frontmatter (pending first, then newest first)."""
    if state is None:
        return []
    records = ([state.pending] if state.pending else []) + state.renders
    return [r for r in records if r.frontmatter == (frontmatter or "")]


def _earlier_record(frontmatter: str | None, meta: Mapping[str, Any] | None) -> RenderRecord | None:
    """The record an earlier version kept in the frontmatter (body_sha256, auto_sha256,
    agent_sections, agent_carried), or None."""
    if meta is None or not isinstance(meta.get("body_sha256"), str):
        return None
    return RenderRecord.from_dict(
        {
            "frontmatter": frontmatter or "",
            "body_sha256": meta.get("body_sha256"),
            "auto_sha256": meta.get("auto_sha256", ""),
            "agent_sections": meta.get("agent_sections", {}),
            "agent_carried": meta.get("agent_carried", False),
        }
    )
