"""The agent part of one render: the agent's and the subsystems' sections as SCRATCHPAD.md
shows them, held under the caps (a section over them is shown as a preview with a note that
says how much was left out and how to read it all), and what a render shows when the journal
cannot be read (the previous render's region, unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from assembler.clock import aware
from assembler.errors import AssemblerError, Problem
from assembler.file.codec import (
    REGION_BEGIN,
    REGION_END,
    begin_marker,
    end_marker,
    escape_text,
    heading_shift,
    nest_headings,
    text_hash,
)
from assembler.fsutil import Snapshot
from assembler.pad.hand_edits import FileSync, kept_problem, region_of
from assembler.pad.journal import (
    SectionKind,
    SectionState,
    fold_events,
    in_zone,
    order_key,
    ordered,
    section_title,
)
from assembler.pad.sections import scratchpad_for
from assembler.tokens import TokenCounter, truncate_to_tokens

if TYPE_CHECKING:
    from assembler.config.schema import Config

# Below this many tokens a preview says too little to be worth its note; only the note stays.
_MIN_PREVIEW: Final = 16


AgentRender = Callable[[Mapping[str, Any]], str]


def read_command(name: str) -> str:
    """Given a section name, return the command that prints its full text."""
    return f"assemble pad read --section {name}"


@dataclass(frozen=True)
class ShownSection:
    """One section as the agent part of SCRATCHPAD.md shows it (the template's context)."""

    name: str
    title: str
    kind: SectionKind
    text: str  # escaped: the whole text, or a preview when `omitted`
    plain: str  # the same, as written (for listings that are never parsed back)
    tokens: int  # of the whole text
    shown_tokens: int  # of the text shown
    source: str
    expires: datetime | None
    # Only a section shown whole sits between markers: a hand edit of a preview would cut
    # off the text that was left out.
    editable: bool
    begin: str
    end: str
    read_command: str
    # When it was last written, relative to the render's clock ("3h ago"); "" when unknown.
    age: str = ""
    # Written before the session the render reads began: the agent should check it still
    # holds before acting on it (the heading says so).
    stale: bool = False

    @property
    def omitted(self) -> bool:
        return self.shown_tokens < self.tokens

    @property
    def left_out(self) -> int:
        return self.tokens - self.shown_tokens


@dataclass
class AgentPart:
    """The agent part of one render: its Markdown, its real token count, what it left out."""

    text: str
    tokens: int
    sections: list[ShownSection] = field(default_factory=list)
    # The frontmatter's record of the sections shown whole: name -> text_hash of the text.
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def omitted(self) -> list[ShownSection]:
        """Return the sections that are not shown whole."""
        return [s for s in self.sections if s.omitted]


def written_ago(updated: datetime, now: datetime) -> str:
    """Given when a section was last written and the render's clock, return how long ago,
    coarsely ("just now", "25m ago", "3h ago", "2d ago"): a coarse age changes the block
    hosts compare less often."""
    delta = aware(now) - aware(updated)
    if delta < timedelta(minutes=1):
        return "just now"
    minutes = delta // timedelta(minutes=1)
    if minutes < 60:
        return f"{minutes}m ago"
    if minutes < 24 * 60:
        return f"{minutes // 60}h ago"
    return f"{minutes // (24 * 60)}d ago"


def shown_section(
    state: SectionState,
    limit: int | None,
    count: TokenCounter,
    now: datetime | None = None,
    session_start: datetime | None = None,
) -> ShownSection:
    """Given a section, the tokens it may show (None: all), a counter, the render's clock
    (None: no age shown) and when the current session began (None: not known), return it as
    shown: whole, or a preview of the first `limit` tokens (nothing below a few tokens), and
    `stale` when it was last written before the session began. Its own headings are shown
    nested below the section's heading (see `nest_headings`; the begin marker records by how
    much, so an import of a hand edit gets the text back as written)."""
    tokens = count(state.content)
    text = state.content
    if limit is not None and tokens > limit:
        text = truncate_to_tokens(state.content, limit, count) if limit >= _MIN_PREVIEW else ""
    shown = tokens if text is state.content else count(text)
    shift = heading_shift(state.content)
    nested = nest_headings(text, shift)
    return ShownSection(
        name=state.name,
        title=section_title(state.name),
        kind=state.kind,
        text=escape_text(nested),
        plain=nested,
        tokens=tokens,
        shown_tokens=shown,
        source=state.source,
        expires=state.expires,
        editable=state.kind == "agent" and text is state.content,
        begin=begin_marker(state.name, shift),
        end=end_marker(state.name),
        read_command=read_command(state.name),
        age=written_ago(state.updated, now) if now is not None else "",
        stale=session_start is not None and aware(state.updated) < aware(session_start),
    )


def agent_context(
    sections: Sequence[ShownSection],
    *,
    markers: bool = True,
    stray: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Given the sections to show, whether they sit between markers (the file) or not (plain
    listings and the prefix block), and what became of text typed outside the markers (see
    `FileSync.notice`), return the context of `agent_sections.md.j2`.
    """
    return {
        "sections": list(sections),
        "markers": markers,
        "stray": dict(stray) if stray else None,
        "region_begin": REGION_BEGIN,
        "region_end": REGION_END,
    }


def plan_agent_part(
    states: Mapping[str, SectionState],
    *,
    render: AgentRender,
    count: TokenCounter,
    agent_cap: int,
    limit: int,
    markers: bool = True,
    stray: Mapping[str, Any] | None = None,
    now: datetime | None = None,
    session_start: datetime | None = None,
) -> AgentPart:
    """Given the folded sections, a renderer, a counter, the caps, the clock each section's
    age is told from (None: no ages) and when the session the render reads began (None: not
    known; a section written before it says so), return the agent part.

    With `markers` (the file) the sections sit between their markers, escaped, under the
    region's intro and the `stray` notice; without (the prefix block), as written. The agent
    sections' text is held to `agent_cap` (as `assemble pad` counts it) and the
    rendered part, markup included, to `limit` tokens. Nothing is cut silently: over a cap the
    largest section still shown whole becomes a preview (or, below a few tokens, no text), and
    its note says how much was left out and the command that prints it all. Sections come in
    display order.
    """
    states_in_order = ordered(states.values())
    limits: dict[str, int | None] = {s.name: None for s in states_in_order}

    def build() -> tuple[list[ShownSection], str]:
        shown = [
            shown_section(s, limits[s.name], count, now, session_start) for s in states_in_order
        ]
        return shown, render(agent_context(shown, markers=markers, stray=stray))

    shown, text = build()
    # Each round cuts one section (never back up), so this ends; the bound is a safety net.
    for _ in range(4 * len(states_in_order) + 4):
        agent_over = sum(s.shown_tokens for s in shown if s.kind == "agent") - agent_cap
        region_over = count(text) - limit
        if agent_over <= 0 and region_over <= 0:
            break
        pool = [s for s in shown if s.shown_tokens > 0 and (region_over > 0 or s.kind == "agent")]
        if not pool:
            break  # only the notes are left; the frontmatter shows the part is over
        victim = max(pool, key=lambda s: (s.shown_tokens, order_key(states[s.name])))
        # A new note costs some tokens of its own; take them too, in one go.
        note = 0 if victim.omitted else 40
        excess = max(agent_over, region_over + note if region_over > 0 else 0)
        limits[victim.name] = max(victim.shown_tokens - excess, 0)
        shown, text = build()
    hashes = {s.name: text_hash(states[s.name].content) for s in shown if s.editable}
    return AgentPart(text, count(text), shown, hashes)


def encode_sections(states: Iterable[SectionState], *, heading_level: int = 2) -> str:
    """Given section states, return the agent region: each as a heading and its marked text
    (its own headings nested below, as a render shows them).

    Sections come in display order; the region ends with a newline.
    """
    blocks = [
        f"{'#' * heading_level} {section_title(s.name)}\n"
        f"{begin_marker(s.name, heading_shift(s.content))}\n"
        f"{escape_text(nest_headings(s.content, heading_shift(s.content)))}\n{end_marker(s.name)}"
        for s in ordered(states)
    ]
    inner = "\n\n".join(blocks) + "\n" if blocks else ""
    return f"{REGION_BEGIN}\n{inner}{REGION_END}\n"


@dataclass
class AgentInputs:
    """The agent sections one render shows, and what happened on the way to them."""

    states: dict[str, SectionState] | None  # None: the journal could not be read
    sync: FileSync
    degraded: list[Problem] = field(default_factory=list)
    now: datetime | None = None  # the render's clock, for the times the file shows


def read_agent_inputs(
    config: Config, *, now: datetime, seen: Snapshot, sync: FileSync | None = None
) -> AgentInputs:
    """Given a loaded config, the clock, SCRATCHPAD.md as read and what importing its edits
    found (None: nothing was imported, as on a dry run), return the sections to render, as the
    journal folds them now. Reads only.

    When the journal cannot be read (or could not take the edits), the file's agent region is
    carried over unchanged, so a render loses nothing.
    """
    sync = sync if sync is not None else region_of(seen, config.state_dir)
    if sync.failure is not None:
        return AgentInputs(None, sync, [])
    try:
        pad = scratchpad_for(config, now=lambda: now)
        read = pad.journal.read()
    except (AssemblerError, OSError) as error:
        if sync.region is None and not sync.hashes:
            sync = region_of(seen, config.state_dir)
        return AgentInputs(None, sync, [kept_problem(error)])
    moment = aware(now)
    states = in_zone(fold_events(read.events, moment), moment)
    degraded = []
    if read.bad_lines:
        quarantine = pad.journal.quarantine_path.name
        plural = "s" if read.bad_lines != 1 else ""
        degraded.append(
            Problem(
                "sections journal",
                f"{read.bad_lines} unreadable line{plural} in {pad.journal.path} skipped "
                f"(kept there, and moved to {quarantine} when the journal is compacted)",
                "sections",
            )
        )
    return AgentInputs(states, sync, degraded, moment)


def carried_part(sync: FileSync, count: TokenCounter) -> AgentPart:
    """Given the previous render's region (the journal being unavailable), return it as the
    agent part, unchanged, so that no agent text is lost by the new render.
    """
    text = "" if sync.region is None else f"{REGION_BEGIN}\n{sync.region}\n{REGION_END}\n"
    return AgentPart(text, count(text), [], dict(sync.hashes))


def render_agent_part(
    inputs: AgentInputs,
    *,
    render: AgentRender,
    count: TokenCounter,
    agent_cap: int,
    limit: int,
    session_start: datetime | None = None,
) -> AgentPart:
    """Given the gathered sections and when the session the render reads began (None: not
    known), return the agent part (see `plan_agent_part`), or the previous render's region
    unchanged when the journal could not be read.
    """
    if inputs.states is None:
        return carried_part(inputs.sync, count)
    return plan_agent_part(
        inputs.states,
        render=render,
        count=count,
        agent_cap=agent_cap,
        limit=limit,
        stray=inputs.sync.notice(inputs.now) if inputs.now is not None else None,
        now=inputs.now,
        session_start=session_start,
    )
