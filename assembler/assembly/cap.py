"""The second step: the whole page under its token caps, from the draft and the agent
sections, with what the run measured (nothing is written).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2

from assembler import __version__
from assembler.assembly.draft import Draft
from assembler.assembly.measures import Caps, Frontmatter, Measures, MemoryShown, SourceRead, Tokens
from assembler.assembly.sections import SPARE_PRIORITY, count_of, display_path
from assembler.clock import local_timezone
from assembler.config.schema import Config
from assembler.errors import AssemblerError
from assembler.file.codec import auto_hash, auto_part, body_hash
from assembler.file.codec import compose as compose_file
from assembler.file.records import RenderRecord, render_record
from assembler.file.render import Fitted, Item, Renderer, Section, fit_sections, renderer_for
from assembler.memory.chunks import note_date
from assembler.memory.recall import repeats, superseded
from assembler.pad.agent_part import AgentInputs, render_agent_part
from assembler.redact import redact
from assembler.tokens import TokenCounter, get_counter
from assembler.transcripts.reader import SourceReport

GENERATOR = f"scratchpad-assembler {__version__}"


@dataclass
class Assembly(Draft):
    """Everything one run computed, the file text included; `degraded` holds the problems of
    the agent sections too."""

    path: Path = field(default_factory=Path)
    text: str = ""
    # What the run measured: kept in the state folder's last-assembly.json (see `Measures`).
    measures: Measures | None = None
    record: RenderRecord | None = None  # what tells the next run a hand edit of this file
    state_dir: Path | None = None
    fitted: Fitted = field(default_factory=lambda: Fitted([], [], 0))
    # A hash of what the auto part says apart from its clock lines (see `ready`).
    auto_digest: str = ""
    written: bool = False
    secret_patterns: tuple[str, ...] = ()  # the user's, beside the built-in detectors

    @property
    def measured(self) -> Measures:
        """Return what the run measured (every assembly `cap` returns has it)."""
        assert self.measures is not None, "an assembly is made by `cap`"
        return self.measures

    @property
    def frontmatter(self) -> dict[str, Any]:
        """Return the fields of the file's frontmatter."""
        return self.measured.frontmatter.to_json()

    def explain(self) -> list[str]:
        """Return the reasons behind each value, one line each, for --explain, with secrets
        and personal data redacted as in the file (the lines quote messages and queries)."""
        return [
            redact(line, extra_secret_patterns=self.secret_patterns) for line in self._explain()
        ]

    def _explain(self) -> list[str]:
        lines = [
            f"sources: {s.path} [{s.format}] {s.messages} messages, {s.bad_lines} bad lines"
            + (f", error: {s.error}" if s.error else "")
            for s in self.transcripts.sources
        ]
        lines += [f"warning: {w}" for w in self.transcripts.warnings]
        if self.mood is not None:
            lines += [f"mood: {line}" for line in self.mood.combined.explain]
            for name, state in self.mood.speakers.items():
                lines.append(f"mood[{name}]: {state.primary} {state.primary_score:.2f}")
        if self.strategy is not None:
            lines.append(f"strategy: rule {self.strategy.mood!r} because {self.strategy.reason}")
        lines += [f"active context: {line}" for line in self.active.explain]
        if self.recall is not None:
            lines += [f"memories: {line}" for line in self.recall.result.explain]
        lines += [f"routing: {line}" for line in self.routing.explain]
        lines += [f"budget: dropped {d}" for d in self.fitted.dropped]
        lines += [f"degraded: {p.what}: {p.why}" for p in self.degraded]
        return lines


def cap(config: Config, auto: Draft, agent: AgentInputs) -> Assembly:
    """Given the config, the auto part and the agent sections to show, return the whole file
    under its caps (nothing is written).

    Raise AssemblerError for problems the user must fix (a broken template folder).
    """
    now = auto.now
    started = time.perf_counter()
    tz = local_timezone(config.time.timezone)
    count = get_counter(config.tokens.counter)
    sections = auto.sections
    degraded = [*auto.degraded, *agent.degraded]
    renderer = renderer_for(config)
    expires = now + timedelta(minutes=config.output.ttl_minutes)
    edited_at = agent.sync.at if agent.sync.auto_edited else None
    page = {
        "valid_until": _valid_until(expires, now),
        "ttl_minutes": config.output.ttl_minutes,
        "generator": GENERATOR,
        "auto_notice": _auto_notice(edited_at.astimezone(tz), agent.sync.auto_saved)
        if edited_at
        else "",
        "agent_part": "",
    }
    frontmatter = Frontmatter(
        updated=now.replace(microsecond=0),
        expires=expires.replace(microsecond=0),
        ttl_minutes=config.output.ttl_minutes,
        source=_source_summary(config, auto),
    )
    fields = frontmatter.to_json()
    frontmatter_tokens = count(compose_file(fields, ""))
    try:
        # The frontmatter is read too (hosts that inject the raw file): the total cap holds it.
        header = count(renderer.page(sections=[], **page)) + frontmatter_tokens
        began = auto.active.session_start
        # The agent part comes first: the total cap is met by shrinking the auto part, and the
        # agent part gives way (saying so) only when the auto part is down to its header.
        part = render_agent_part(
            agent,
            render=renderer.agent_part,
            count=count,
            agent_cap=config.caps.agent,
            limit=config.caps.total - header - 1,
            session_start=began,
        )
        page["agent_part"] = part.text
        # The page's own lines (title, validity, blank lines between sections) count towards
        # the auto cap too: fit the sections to what is left, and tighten if still over.
        limit = min(config.caps.auto + part.tokens, config.caps.total)
        room = limit - part.tokens - header
        while True:
            fitted = _fit_without_repeats(
                sections,
                renderer,
                count,
                cap=max(room, 0),
                section_caps=config.caps.sections,
                memories=config.memory.top_k,
            )
            body = renderer.page(sections=fitted.texts, **page)
            if part.text not in body:  # a user template without `agent_part`: keep it anyway
                body = f"{body.rstrip()}\n\n{part.text}"
            excess = count(body) - limit
            if excess <= 0 or not fitted.sections:
                break
            room -= excess
    except jinja2.TemplateError as error:
        where = config.output.template_dir or "the bundled templates"
        raise AssemblerError(
            f"Template error in {where} ({type(error).__name__}: {error}); fix the template"
        ) from error
    auto_tokens = count(auto_part(body))
    read, recall = auto.transcripts, auto.recall
    text = compose_file(fields, body)
    memory = None
    if recall is not None:
        hits = sum(len(s.items) for s in fitted.sections if s.name == "relevant_memories")
        memory = MemoryShown(recall.chunks_total, recall.chunks_embedded, hits)
    measures = Measures(
        frontmatter=frontmatter,
        generator=GENERATOR,
        tokens=Tokens(
            frontmatter=frontmatter_tokens,
            auto=auto_tokens,
            agent=part.tokens,
            total=count(text),
            caps=Caps(config.caps.auto, config.caps.agent, config.caps.total),
        ),
        sources=[_source_read(s, config.workspace) for s in read.sources],
        messages_read=len(read.messages),
        memory=memory,
        sections=[s.name for s in fitted.sections],
        session_start=began,
        dropped=fitted.dropped,
        agent_sections=part.hashes,
        agent_omitted=part.omitted,
        auto_sha256=auto_hash(body),
        body_sha256=body_hash(body),
        degraded=list(degraded),
        stages_ms={**auto.stages, "page": round((time.perf_counter() - started) * 1000, 1)},
        file_edits=agent.sync if agent.sync.edited else None,
        agent_carried=agent.states is None,
    )
    return Assembly(
        **{**vars(auto), "degraded": degraded},
        path=config.output_path,
        text=text,
        measures=measures,
        record=render_record(text, part.hashes, carried=agent.states is None),
        state_dir=config.state_dir,
        fitted=fitted,
        auto_digest=_auto_digest(fitted.sections),
        secret_patterns=tuple(config.routing.extra_secret_patterns),
    )


def _auto_digest(sections: Sequence[Section]) -> str:
    """The hash of what the auto sections say (each line's gist, see `Item`): renders that only
    moved the clock or a score have the same digest, so hosts that send the block once per
    session need not send it again for them."""
    lines = [
        f"{section.name}\x1f{item.label}\x1f{item.text if item.gist is None else item.gist}"
        for section in sections
        for item in section.items
        if item.gist != ""
    ]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def _valid_until(expires: datetime, now: datetime) -> str:
    """When the file expires, as its title says it: the clock time and zone, and the date too
    when that is not today's ("23:55 AEDT", "2026-03-03 00:10 AEDT")."""
    when = f"{expires:%H:%M}" if expires.date() == now.date() else f"{expires:%Y-%m-%d %H:%M}"
    return f"{when} {expires.tzname() or ''}".strip()


def _auto_notice(edited_at: datetime, saved: str | None) -> str:
    """When the auto part was edited by hand, and where what was typed there is kept."""
    return f"{edited_at:%H:%M} (a copy is in {saved})" if saved else f"{edited_at:%H:%M}"


def _source_summary(config: Config, auto: Draft) -> str:
    """Return what the run read, in one line: "2 transcripts, 45 messages; memory 38 chunks"."""
    sources = auto.transcripts.sources
    if not sources:
        read = "no transcripts"
    else:
        failed = sum(1 for source in sources if source.error)
        read = f"{count_of(len(sources), 'transcript')}, "
        read += count_of(len(auto.transcripts.messages), "message")
        read += f" ({failed} unreadable)" if failed else ""
    if auto.recall is not None and auto.recall.chunks_total == 0:
        memory = "no memory notes"
    elif auto.recall is not None:
        memory = f"memory {count_of(auto.recall.chunks_total, 'chunk')}"
    elif config.memory.enabled and config.sections.relevant_memories:
        memory = "memory unavailable"
    else:
        memory = "memory off"
    return f"{read}; {memory}"


# A memory line the cap would drop is first cut down to this many characters (its place,
# subject and the start of its line): a shortened answer beats none.
MEMORY_LINE_SHORTEST = 100
# The same for a line of today's note: its clock time and what it starts with.
DAILY_LINE_SHORTEST = 60


def _fit_without_repeats(
    sections: Sequence[Section],
    renderer: Renderer,
    count: TokenCounter,
    *,
    cap: int,
    section_caps: Mapping[str, int],
    memories: int,
) -> Fitted:
    """Given the sections, return them fitted to the caps (see `fit_sections`) with at most
    `memories` memory lines, best first, and none that only repeats a line the fitted file
    shows or states an older fact on the subject of one of its lines (see `_shown_elsewhere`).
    A memory is judged against what is left after the caps: one whose daily-note line the cap
    cut stays. A repeat's place goes to the next (spare) memory, and every change moves what
    fits, so the fit is done again until nothing changes. Under a cap the weakest memory line
    is shortened, then dropped, before a stronger one is touched."""
    repeated: dict[str, tuple[str, str]] = {}  # place of each line left out: (text, why)

    def shown(section: Section) -> Section:
        hits = [i for i in section.items if i.priority < SPARE_PRIORITY]
        kept = [i for i in hits if _place(i.text) not in repeated]
        spares = [
            i
            for i in section.items
            if i.priority >= SPARE_PRIORITY and _place(i.text) not in repeated
        ]
        kept = [*kept, *spares[: len(hits) - len(kept)]]
        # Best first: an item's priority is its hit's rank by relevance (`memories_section`);
        # a spare line in a repeat's place ranks where its relevance puts it. Sorted before
        # the count is held to `memories`, so that the lines left out are the weakest.
        kept.sort(key=lambda item: item.priority % SPARE_PRIORITY)
        kept = kept[:memories]
        items = tuple(replace(item, priority=3 + rank) for rank, item in enumerate(kept))
        return replace(section, items=items)

    while True:
        current = [shown(s) if s.name == "relevant_memories" else s for s in sections]
        current = [s for s in current if s.items]
        fitted = fit_sections(
            current,
            renderer,
            count,
            cap=cap,
            section_caps=section_caps,
            shortest={
                "relevant_memories": MEMORY_LINE_SHORTEST,
                "daily_context": DAILY_LINE_SHORTEST,
            },
        )
        drop = _shown_elsewhere(fitted.sections)
        if not drop:
            fitted.dropped.extend(
                f"relevant_memories: {text[:40]}… ({why})" for text, why in repeated.values()
            )
            return fitted
        for item, why in drop:
            original = next(
                i.text
                for s in sections
                if s.name == "relevant_memories"
                for i in s.items
                if _place(i.text) == _place(item.text)
            )
            repeated[_place(item.text)] = (original, why)


def _place(text: str) -> str:
    """Given a memory line, return where its hit is (its `path:lines`), which no cut changes."""
    return text.split("` ", 1)[0]


def _shown_elsewhere(sections: Sequence[Section]) -> list[tuple[Item, str]]:
    """Return the memory lines of the sections that only repeat another of their lines (see
    `recall.repeats`: the Active Context lines are the human's requests, the others
    statements), or that a newer line of today's note in Daily Context supersedes (see
    `recall.superseded`), each with why."""
    requests = [i.text for s in sections if s.name == "active_context" for i in s.items]
    statements = [
        i.text
        for s in sections
        if s.name not in ("active_context", "relevant_memories")
        for i in s.items
    ]
    daily = next((s for s in sections if s.name == "daily_context"), None)
    today = None
    if daily is not None:
        heading = next((i.text for i in daily.items if i.heading), "")
        today = note_date(heading.split(" ", 1)[0])
    newest = [i.text for i in daily.items if not i.heading] if daily is not None else []
    drop: list[tuple[Item, str]] = []
    for section in sections:
        if section.name != "relevant_memories":
            continue
        for item in section.items:
            line = item.gist if item.gist is not None else item.text.split("` ", 1)[-1]
            path = _place(item.text).lstrip("`").rsplit(":", 1)[0]
            if repeats(line, statements, requests):
                drop.append((item, "already shown"))
            elif today is not None and superseded(line, note_date(path), today, newest):
                drop.append((item, "superseded by a newer line of today"))
            else:
                statements.append(line)  # a later memory may repeat this one
    return drop


def _source_read(source: SourceReport, workspace: Path) -> SourceRead:
    """Given what reading a transcript found, return it as the record keeps it."""
    return SourceRead(
        display_path(Path(source.path), workspace),
        source.format,
        source.messages,
        source.bad_lines,
        source.error or None,
    )
