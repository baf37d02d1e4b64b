"""SCRATCHPAD.md as bytes: its frontmatter, the markers that carry the agent sections through
it, the hashes that tell a hand edit, reading and composing the whole file, the block hosts
prepend to each message, and the copies of the last renders kept beside it. Every other module
reads and writes the file through this one.

The file is YAML frontmatter between `---` lines, then the Markdown body: the auto part (what
the program assembles), then the agent region. Marker and escape scheme of the agent region
(what `decode_sections` reads):

    <!-- scratchpad:agent-sections begin -->
    ## Findings
    <!-- scratchpad:begin section="findings" -->
    ...the section's text, escaped...
    <!-- scratchpad:end section="findings" -->
    <!-- scratchpad:agent-sections end -->

The text between a section's begin and end lines is exactly its content after escaping, with
the section's own headings shown nested below its heading when the begin line says so
(`headings="+N"`: each ATX heading outside code fences N levels deeper; see `nest_headings`). The
escape works on lines, split at every line boundary that `str.splitlines` knows (so a `\\r` or
U+2028 cannot smuggle a marker past a reader that splits differently). A line is *dangerous* when,
after any leading backslashes, it starts like a marker (`<!-- scratchpad:`, any spacing or case)
or is a frontmatter fence (three or more `-`, then only whitespace). A dangerous line gets one
more leading backslash; decoding removes one backslash from a dangerous line that starts with a
backslash. Every other line, including an ordinary line that starts with a backslash, passes
untouched, so escape then unescape returns any text unchanged. It is also Markdown's own escape:
`\\---` displays as `---` and `\\<!--` shows the text instead of hiding a comment.

Three readers, one per need: `read_scratchpad` parses the whole file (for `check`, `show` and
anything that must agree with them on a broken file); `parse_loosely` gives what an import of
hand edits needs and never fails; `quick_read` finds `expires` and the body without a YAML
parser, for the hook that runs before every prompt.

The frontmatter is what the agent reads, so it stays small: `updated`, `expires`,
`ttl_minutes`, a one-line `source` and, only when something failed, a short `degraded`. What a
run measured and the hashes that tell a hand edit are kept in the state folder
(`last-assembly.json`, see `write_assembly_state`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from assembler.errors import FileTooLargeError, ScratchpadError, UnsafePathError
from assembler.fsutil import (
    atomic_write,
    check_dir,
    load_json,
    read_regular,
    read_state_file,
    real_dir,
    remove_stale_temps,
)

# --------------------------------------------------------------------------------------------
# Frontmatter and body.
# --------------------------------------------------------------------------------------------


def normalise_line_ends(text: str) -> str:
    """Given a file's text, return it with CRLF line ends turned into LF when every line of it
    ends in CRLF (a Windows editor saved it), else unchanged: a lone `\\r` or a `\\r\\n` the agent
    wrote into a section is text, and the rendered file's own line ends are LF.
    """
    lf = text.count("\n")
    if lf and text.count("\r\n") == lf:
        return text.replace("\r\n", "\n")
    return text


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Given a file's text, return its YAML frontmatter (None if it has none) and the body."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 3)
    if end < 0:
        return None, text
    return text[4:end], text[end + 5 :]


def load_meta(yaml_text: str | None) -> dict[str, Any] | None:
    if yaml_text is None:
        return None
    import yaml

    # libyaml's loader when PyYAML was built with it: ten times faster, and a daemon reads
    # the frontmatter on every cycle.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        meta = yaml.load(yaml_text, Loader=loader)  # a safe loader either way
    except yaml.YAMLError:
        return None
    return meta if isinstance(meta, dict) else None


def parse_time(value: object) -> datetime | None:
    """Given a frontmatter value, return it as an aware datetime, or None if it is not one."""
    if isinstance(value, datetime):
        return value if value.tzinfo else None
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def parse_loosely(data: bytes) -> tuple[str | None, dict[str, Any] | None, str]:
    """Given the file's bytes, return its frontmatter's text and fields (None when missing or
    broken) and its body, as an import of hand edits reads them: undecodable bytes replaced,
    CRLF line ends throughout turned into LF. Never raise."""
    # Bytes, decoded here: a text read would turn a lone "\r" in a section into a line end.
    yaml_text, body = split_frontmatter(normalise_line_ends(data.decode("utf-8", "replace")))
    return yaml_text, load_meta(yaml_text), body


_EXPIRES = re.compile(r"^expires:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)


def quick_read(text: str) -> tuple[datetime, str, str] | None:
    """Given the file's text, return its `expires`, body and frontmatter, or None if they
    cannot be found without a YAML parser (a regular expression finds `expires`: right only
    for a frontmatter this program wrote, see `rendered_frontmatter`)."""
    frontmatter, body = split_frontmatter(text)
    match = _EXPIRES.search(frontmatter) if frontmatter is not None else None
    if frontmatter is None or match is None:
        return None
    expires = parse_time(match.group(1))
    return None if expires is None else (expires, body, frontmatter)


# --------------------------------------------------------------------------------------------
# Markers and escaping: the agent sections in the body.
# --------------------------------------------------------------------------------------------

REGION_BEGIN: Final = "<!-- scratchpad:agent-sections begin -->"


REGION_END: Final = "<!-- scratchpad:agent-sections end -->"


# Every line boundary str.splitlines knows; "\r\n" first so it stays one boundary.
_BOUNDARY = re.compile("(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")


_MARKER_LIKE = re.compile(r"\s*<!--\s*scratchpad:", re.IGNORECASE)


_FENCE_LIKE = re.compile(r"-{3,}\s*")


# `headings="+N"` on a begin line: the section's own headings are shown N levels deeper.
_SECTION_MARKER = re.compile(
    r'\s*<!--\s*scratchpad:(begin|end)\s+section\s*=\s*"([^"]*)"'
    r'(?:\s+headings\s*=\s*"\+?([0-5])")?\s*-->\s*',
    re.IGNORECASE,
)


_REGION_MARKER = re.compile(r"\s*<!--\s*scratchpad:agent-sections\s+(begin|end)\s*-->\s*", re.I)


def begin_marker(name: str, nested: int = 0) -> str:
    """Given a section name and how many levels its headings are shown deeper (see
    `nest_headings`), return the line that opens its text."""
    headings = f' headings="+{nested}"' if nested else ""
    return f'<!-- scratchpad:begin section="{name}"{headings} -->'


def end_marker(name: str) -> str:
    """Given a section name, return the line that closes its text."""
    return f'<!-- scratchpad:end section="{name}" -->'


def _dangerous(line: str) -> bool:
    core = line.lstrip("\\")
    return _MARKER_LIKE.match(core) is not None or _FENCE_LIKE.fullmatch(core) is not None


def escape_text(text: str) -> str:
    """Given any text, return it with marker-like and fence-like lines escaped (see module doc)."""
    parts = _BOUNDARY.split(text)
    for index in range(0, len(parts), 2):
        if _dangerous(parts[index]):
            parts[index] = "\\" + parts[index]
    return "".join(parts)


def unescape_text(text: str) -> str:
    """Given text made by `escape_text` (or edited by hand), return the original text."""
    parts = _BOUNDARY.split(text)
    for index in range(0, len(parts), 2):
        if parts[index].startswith("\\") and _dangerous(parts[index]):
            parts[index] = parts[index][1:]
    return "".join(parts)


# The level the agent's own top headings are shown at: below the file's `## <section>`.
NESTED_LEVEL: Final = 3


_HEADING = re.compile(r"(#{1,6})(?=[ \t]|$)")


_CODE_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _heading_lines(parts: Sequence[str]) -> list[int]:
    """Given text split by `_BOUNDARY` (lines at even indices), return the indices of the ATX
    heading lines outside fenced code blocks (a `# comment` in a shell block is no heading)."""
    found: list[int] = []
    fence: str | None = None
    for index in range(0, len(parts), 2):
        line = parts[index]
        opener = _CODE_FENCE.match(line)
        if fence is not None:
            if opener is not None and opener.group(1)[0] == fence[0]:
                closing = opener.group(1)
                if len(closing) >= len(fence) and not line[opener.end() :].strip():
                    fence = None
        elif opener is not None:
            fence = opener.group(1)
        elif _HEADING.match(line):
            found.append(index)
    return found


def _level(heading: str) -> int:
    return len(heading) - len(heading.lstrip("#"))


def heading_shift(text: str) -> int:
    """Given a section's text, return how many levels its headings are shown deeper so that
    the top ones sit at NESTED_LEVEL, below the section's own heading (0 when they already
    do, or when the deepest would go past level 6)."""
    parts = _BOUNDARY.split(text)
    levels = [_level(parts[i]) for i in _heading_lines(parts)]
    if not levels:
        return 0
    return max(0, min(NESTED_LEVEL - min(levels), 6 - max(levels)))


def nest_headings(text: str, shift: int) -> str:
    """Given a section's text and a shift (see `heading_shift`), return it with each heading
    `shift` levels deeper. `unnest_headings` with the same shift returns the text unchanged."""
    if shift <= 0:
        return text
    parts = _BOUNDARY.split(text)
    for index in _heading_lines(parts):
        parts[index] = "#" * shift + parts[index]
    return "".join(parts)


def unnest_headings(text: str, shift: int) -> str:
    """Given a section's text as shown (edited by hand, maybe) and the shift it was shown
    with, return it as written: each heading deeper than the shift `shift` levels higher."""
    if shift <= 0:
        return text
    parts = _BOUNDARY.split(text)
    for index in _heading_lines(parts):
        if _level(parts[index]) > shift:
            parts[index] = parts[index][shift:]
    return "".join(parts)


def find_agent_region(body: str) -> str | None:
    """Given a SCRATCHPAD.md text, return the text inside its agent region, or None if absent.

    The region starts after the last region-begin line (anything quoted above it in the auto
    part is ignored) and ends before the next region-end line, or at the end of the text.
    """
    lines = body.split("\n")
    begin, end = region_lines(lines)
    if begin is None:
        return None
    return "\n".join(lines[begin + 1 : end])


def region_lines(lines: Sequence[str]) -> tuple[int | None, int]:
    """Given a body's lines, return the index of the region-begin line (None if there is none)
    and of the region-end line that closes it (len(lines) if there is none).
    """
    begin = None
    for index, line in enumerate(lines):
        match = _REGION_MARKER.fullmatch(line)
        if match is not None and match.group(1).lower() == "begin":
            begin = index
    if begin is None:
        return None, len(lines)
    for index in range(begin + 1, len(lines)):
        match = _REGION_MARKER.fullmatch(lines[index])
        if match is not None and match.group(1).lower() == "end":
            return begin, index
    return begin, len(lines)


def decode_sections(text: str) -> dict[str, str]:
    """Given a SCRATCHPAD.md text (or just its agent region), return each section's content.

    Only the agent region is read when the text has one. The content of a section is exactly
    what was encoded: unescaped, and with its headings back at the levels written when the
    begin line says they were shown deeper (`headings="+N"`). A section whose end line was
    lost ends at the next marker or the end.
    """
    region = find_agent_region(text)
    sections: dict[str, str] = {}
    name: str | None = None
    shift = 0
    lines: list[str] = []
    for line in (region if region is not None else text).split("\n"):
        match = _SECTION_MARKER.fullmatch(line)
        if match is None:
            if name is not None:
                lines.append(line)
            continue
        if name is not None:
            sections[name] = unnest_headings(unescape_text("\n".join(lines)), shift)
            name = None
        if match.group(1).lower() == "begin":
            name, lines, shift = match.group(2), [], int(match.group(3) or 0)
    if name is not None:
        sections[name] = unnest_headings(unescape_text("\n".join(lines)), shift)
    return sections


def plain_region(region: str) -> str:
    """Given the text inside a file's agent region, return it as written: without the marker
    lines and the notes above the first heading (the intro), section text unescaped.
    """
    kept: list[str] = []
    block: list[str] | None = None  # the escaped lines of the section being read
    for line in region.split("\n"):
        match = _SECTION_MARKER.fullmatch(line)
        if match is not None:
            if block is not None:
                kept.append(unescape_text("\n".join(block)))
            block = [] if match.group(1).lower() == "begin" else None
        elif block is not None:
            block.append(line)
        elif kept or not line.startswith(">"):
            kept.append(line)
    if block is not None:
        kept.append(unescape_text("\n".join(block)))
    return "\n".join(kept).strip()


def owned_lines(lines: Sequence[str]) -> set[int]:
    """Given a body's lines, return the indices of the lines the region's parsing accounts
    for: the region markers, each section's markers and the text between them (as
    `decode_sections` reads it), and a heading right above a begin marker (a section added by
    hand comes with its heading).
    """
    begin, end = region_lines(lines)
    if begin is None:
        return set()
    owned = {begin, end}
    inside = False
    for index in range(begin + 1, end):
        match = _SECTION_MARKER.fullmatch(lines[index])
        if match is None:
            if inside:
                owned.add(index)
            continue
        owned.add(index)
        inside = match.group(1).lower() == "begin"
        if inside and index - 1 > begin and lines[index - 1].startswith("#"):
            owned.add(index - 1)
    return owned


def auto_part(body: str) -> str:
    """Given a SCRATCHPAD.md body, return what precedes its agent region (all, if none)."""
    lines = body.split("\n")
    begin, _ = region_lines(lines)
    return body if begin is None else "\n".join(lines[:begin])


# --------------------------------------------------------------------------------------------
# Hashes: how a later run tells what changed in the file since it was written.
# --------------------------------------------------------------------------------------------


def body_hash(body: str) -> str:
    """Given a body, return the hash `compose` writes as `body_sha256` (a later run compares
    it with the file's body to tell a hand edit)."""
    import hashlib  # here: `check` and `show` read the file without hashing it

    return hashlib.sha256(body.strip().encode("utf-8", "surrogatepass")).hexdigest()


def text_hash(text: str) -> str:
    """Given a section's text, return the short hash the frontmatter records for it."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def auto_hash(body: str) -> str:
    """Given a SCRATCHPAD.md body, return the hash of its auto part (frontmatter `auto_sha256`)."""
    return text_hash(auto_part(body).strip())


# --------------------------------------------------------------------------------------------
# Reading and composing the file.
# --------------------------------------------------------------------------------------------


@dataclass
class ScratchpadFile:
    """A parsed SCRATCHPAD.md."""

    path: Path
    meta: dict[str, Any]
    body: str
    updated: datetime
    expires: datetime

    def is_fresh(self, now: datetime) -> bool:
        return now < self.expires


def read_scratchpad(path: Path) -> ScratchpadFile:
    """Given the path of SCRATCHPAD.md, return it parsed.

    Raise ScratchpadError (with a one-line message) if it is missing, unreadable, a link, or
    has no valid `updated`/`expires`.
    """
    try:
        data = read_regular(path).data
        if data is None:
            raise ScratchpadError(f"{path} does not exist; run 'assemble --once' to create it")
        text = data.decode("utf-8")
    except (UnsafePathError, FileTooLargeError) as error:  # the message says what to do
        raise ScratchpadError(str(error)) from error
    except (OSError, UnicodeDecodeError) as error:
        raise ScratchpadError(f"{path} cannot be read ({error}); check its permissions") from error
    parsed = plain_frontmatter(text)
    if parsed is None:
        parsed = _yaml_frontmatter(path, text)
    meta, content = parsed
    stamps = {key: parse_time(meta.get(key)) for key in ("updated", "expires")}
    for key, value in stamps.items():
        if value is None:
            raise ScratchpadError(
                f"{path} has no valid '{key}' in its frontmatter; run 'assemble --once' to "
                "rewrite it"
            )
    updated, expires = stamps["updated"], stamps["expires"]
    assert updated is not None and expires is not None
    return ScratchpadFile(path, meta, content, updated, expires)


def _yaml_frontmatter(path: Path, text: str) -> tuple[dict[str, Any], str]:
    """Given a file's text, return its frontmatter's fields and its body as python-frontmatter
    reads them. Raise ScratchpadError if the YAML is broken."""
    import frontmatter
    import yaml

    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ScratchpadError(
            f"{path} has broken frontmatter ({where}{problem}); run 'assemble --once' to rewrite it"
        ) from error
    return dict(post.metadata), post.content


# The frontmatter `compose` writes, read without a YAML parser (`plain_frontmatter`): one
# field a line, each a key of ours, a single-quoted string, a plain integer, or a plain text
# that YAML can only read as a string (a space in it; no colon, no '#', no quote; no leading
# indicator), all ASCII.
_PLAIN_KEYS: Final = frozenset({"updated", "expires", "ttl_minutes", "source"})
_PLAIN_FIELD: Final = re.compile(
    r"(?P<key>[a-z_]+): (?:'(?P<quoted>(?:[ -&(-~]|'')*)'|(?P<int>0|[1-9][0-9]{0,17})"
    r"|(?P<plain>[A-Za-z0-9][A-Za-z0-9 ,;()./%+_-]* [A-Za-z0-9 ,;()./%+_-]*[A-Za-z0-9)%.]))"
)


def plain_frontmatter(text: str) -> tuple[dict[str, Any], str] | None:
    """Given a file's text, return its frontmatter's fields and its body as
    `read_scratchpad`'s YAML reader (python-frontmatter) would, when the frontmatter is of the
    simple form `compose` writes (see _PLAIN_FIELD); else None, and the YAML reader decides.
    The light commands (`check`, `show`) then never import a YAML parser."""
    yaml_text, body = split_frontmatter(text)
    if yaml_text is None or "\r" in body:
        return None  # a carriage return: the YAML reader's own line endings decide
    meta: dict[str, Any] = {}
    for line in yaml_text.split("\n"):
        field = _PLAIN_FIELD.fullmatch(line)
        if field is None or field["key"] not in _PLAIN_KEYS or field["key"] in meta:
            return None
        if field["quoted"] is not None:
            meta[field["key"]] = field["quoted"].replace("''", "'")
        elif field["int"] is not None:
            meta[field["key"]] = int(field["int"])
        else:
            meta[field["key"]] = field["plain"]
    return meta, body.strip()


def compose(fields: Mapping[str, Any], body: str) -> str:
    """Given the frontmatter fields and the Markdown body, return the whole file's text (what
    tells a later run that the file was edited is kept apart, see `RenderRecord`)."""
    import frontmatter

    post = frontmatter.Post(body, **fields)
    return str(frontmatter.dumps(post, sort_keys=False)) + "\n"


PREFIX_HEADER = "[Session Scratchpad - your persistent working memory]"


PREFIX_FOOTER = "[End Scratchpad]"


def prefix_text(blocks: Sequence[str]) -> str:
    """Given the blocks to show, return them as the block that hosts prepend to each message
    (between its header and footer lines), or '' when none has any text."""
    shown = [block.strip() for block in blocks if block.strip()]
    if not shown:
        return ""
    return PREFIX_HEADER + "\n" + "\n\n".join(shown) + "\n" + PREFIX_FOOTER + "\n"


def body_prefix(body: str) -> str:
    """Given the body of a rendered SCRATCHPAD.md, return its prefix block: the auto part and
    the agent sections as written (no markers, escapes or editing intro)."""
    region = find_agent_region(body)
    return prefix_text([auto_part(body), plain_region(region) if region is not None else ""])


def prefix_block(pad: ScratchpadFile, now: datetime) -> str:
    """Given a parsed SCRATCHPAD.md, return the block hosts prepend to each message, or ''
    when it is not fresh (a stale scratchpad is worse than none).
    """
    return body_prefix(pad.body) if pad.is_fresh(now) else ""


# --------------------------------------------------------------------------------------------
# The copies of the last renders, kept in the state folder.
# --------------------------------------------------------------------------------------------

RENDERED_NAME: Final = "rendered.md"


RENDERED_DIR: Final = "rendered"  # the copies of the last renders, by body hash


KEPT_RENDERS: Final = 8


def rendered_path(state_dir: Path) -> Path:
    """Given the state folder, return where the copy of the last SCRATCHPAD.md written is kept."""
    return state_dir / RENDERED_NAME


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


def rendered_frontmatter(state: Path) -> str | None:
    """Given the state folder, return the frontmatter of the copy of the last render, or None
    when there is no readable copy."""
    try:
        data = read_state_file(rendered_path(state)).data
        copy = data.decode("utf-8") if data is not None else ""
    except (OSError, UnicodeDecodeError):
        return None
    return split_frontmatter(copy)[0]


def read_page(path: Path, state_dir: Path | None) -> tuple[datetime, str] | None:
    """Given the path of SCRATCHPAD.md and the state folder (None: not known), return the
    file's expiry and body, or None when it is missing, unreadable or broken. A frontmatter
    exactly as the last render wrote it is read with a regular expression (see `quick_read`);
    any other (an edit touched it) is parsed in full, as `check` parses it."""
    try:
        data = read_regular(path).data
        text = data.decode("utf-8") if data is not None else None
    except (OSError, UnicodeDecodeError):
        return None
    if text is None:
        return None
    found = quick_read(text)
    if found is not None and state_dir is not None and found[2] == rendered_frontmatter(state_dir):
        expires, body, _ = found
        return expires, body
    try:
        page = read_scratchpad(path)
    except ScratchpadError:
        return None
    return page.expires, page.body


# --------------------------------------------------------------------------------------------
# The record of the last assembly, kept in the state folder.
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
