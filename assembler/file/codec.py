"""SCRATCHPAD.md as bytes: its frontmatter, the markers that carry the agent sections through
it, the hashes that tell a hand edit, reading and composing the whole file, and the block hosts
prepend to each message. Every other module reads and writes the file through this one; the
records of renders and assemblies kept in the state folder are `records.py`'s.

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
(`last-assembly.json`, see `records.write_assembly_state`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from assembler.clock import fresh_until
from assembler.errors import FileTooLargeError, ScratchpadError, UnsafePathError
from assembler.fsutil import read_regular, read_state_file

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
_UPDATED = re.compile(r"^updated:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Page:
    """What the hosts' block is made from: the file's `updated` and `expires`, and its body."""

    updated: datetime
    expires: datetime
    body: str

    def fresh_until(self, ttl: timedelta, now: datetime) -> datetime | None:
        """Until when the page is fresh (`clock.fresh_until`); None: never."""
        return fresh_until(self.updated, self.expires, ttl, now)

    def is_fresh(self, now: datetime, ttl: timedelta) -> bool:
        until = self.fresh_until(ttl, now)
        return until is not None and now < until


def quick_read(text: str) -> tuple[Page, str] | None:
    """Given the file's text, return its page and its frontmatter, or None if they cannot be
    found without a YAML parser (regular expressions find `updated` and `expires`: right only
    for a frontmatter this program wrote, see `rendered_frontmatter`)."""
    frontmatter, body = split_frontmatter(text)
    if frontmatter is None:
        return None
    expires, updated = _EXPIRES.search(frontmatter), _UPDATED.search(frontmatter)
    if expires is None or updated is None:
        return None
    until, made = parse_time(expires.group(1)), parse_time(updated.group(1))
    return None if until is None or made is None else (Page(made, until, body), frontmatter)


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

    @property
    def page(self) -> Page:
        return Page(self.updated, self.expires, self.body)

    def is_fresh(self, now: datetime, ttl: timedelta) -> bool:
        return self.page.is_fresh(now, ttl)


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
    tells a later run that the file was edited is kept apart, see `records.RenderRecord`)."""
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


def prefix_block(pad: ScratchpadFile, now: datetime, ttl: timedelta) -> str:
    """Given a parsed SCRATCHPAD.md, the clock and the TTL configured, return the block hosts
    prepend to each message, or '' when it is not fresh (a stale scratchpad is worse than none).
    """
    return body_prefix(pad.body) if pad.is_fresh(now, ttl) else ""


# --------------------------------------------------------------------------------------------
# The copy of the last render in the state folder (`records.remember_render` writes it): what
# tells `read_page` that the file's frontmatter is one this program wrote.
# --------------------------------------------------------------------------------------------

RENDERED_NAME: Final = "rendered.md"


def rendered_path(state_dir: Path) -> Path:
    """Given the state folder, return where the copy of the last SCRATCHPAD.md written is kept."""
    return state_dir / RENDERED_NAME


def rendered_frontmatter(state: Path) -> str | None:
    """Given the state folder, return the frontmatter of the copy of the last render, or None
    when there is no readable copy."""
    try:
        data = read_state_file(rendered_path(state)).data
        copy = data.decode("utf-8") if data is not None else ""
    except (OSError, UnicodeDecodeError):
        return None
    return split_frontmatter(copy)[0]


def read_page(path: Path, state_dir: Path | None) -> Page | None:
    """Given the path of SCRATCHPAD.md and the state folder (None: not known), return the
    file's page, or None when it is missing, unreadable or broken. A frontmatter
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
    if found is not None and state_dir is not None and found[1] == rendered_frontmatter(state_dir):
        return found[0]
    try:
        pad = read_scratchpad(path)
    except ScratchpadError:
        return None
    return pad.page
