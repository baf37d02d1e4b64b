"""The agent's sections and their caps: `Scratchpad`, the operations agents, the commands and
the subsystems call over the journal, each held to its section's cap and the agent part's.

Calls that an agent can get wrong return an Answer with `ok=False` and a message that says
what to do; only programming errors raise. Over a cap, `write` is truncated and says both
sizes; `append` is refused and leaves the section as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from assembler.clock import aware, local_now, local_time
from assembler.pad.journal import (
    AGENT_SECTIONS,
    DEFAULT_SECTION,
    Event,
    Journal,
    SectionState,
    fold_events,
    journal_path,
    last_changes,
)
from assembler.pad.tool_calls import (
    Answer,
    check_session_args,
    check_session_call,
    check_tool_call,
    example_call,
    mistake,
)
from assembler.section_names import NAME_RULE, is_valid_section_name
from assembler.tokens import TokenCounter, estimate_tokens, get_counter, truncate_to_tokens

if TYPE_CHECKING:
    from assembler.config.schema import Config

DEFAULT_AGENT_CAP: Final = 2000


_NO_CAPS: Mapping[str, int] = MappingProxyType({})

# What a Scratchpad calls after each change it records: with the sections as folded with the
# change (display order) and the time of the change by the Scratchpad's clock.
OnChange = Callable[[Mapping[str, SectionState], datetime], None]


@dataclass(frozen=True)
class ExternalEntry:
    """A scratchpad entry a host keeps in a session (its own scratchpad tool's), with its time."""

    moment: datetime
    text: str


@dataclass(frozen=True)
class ExternalEntries:
    """The scratchpad entries one host's sessions hold: the newest may become section main.
    `source` is recorded in the journal; `what` names an entry in messages."""

    entries: Sequence[ExternalEntry]
    source: str
    what: str


@dataclass(frozen=True)
class _Budget:
    section_cap: int | None  # the section's own cap, if it has one
    others: int  # tokens of the other agent sections
    agent_cap: int

    @property
    def room(self) -> int:
        return self.agent_cap - self.others

    @property
    def limit(self) -> int:
        if self.section_cap is None:
            return self.room
        return min(self.section_cap, self.room)

    @property
    def binding(self) -> Literal["section", "agent part"]:
        if self.section_cap is not None and self.section_cap <= self.room:
            return "section"
        return "agent part"


@dataclass(frozen=True)
class _Stored:
    """What a write or append did, with the numbers the messages need."""

    outcome: Literal["stored", "truncated", "rejected", "no_room", "conflict", "empty"]
    budget: _Budget
    tokens: int = 0  # the section's tokens after the call
    original: int = 0  # tokens of the content given to a write
    current: int = 0  # the section's tokens before an append
    added: int = 0  # how many tokens the append adds
    over: Literal["section", "agent part"] | None = None
    conflict: SectionState | None = None


def _tokens(count: int) -> str:
    """Given a number of tokens, return it for a message: '1 token', '2 tokens'."""
    return f"{count} token" if count == 1 else f"{count} tokens"


class Scratchpad:
    """Agent and subsystem sections over a journal, held to per-section and agent-part caps.

    Calls that an agent can get wrong return an Answer with `ok=False` and a message that says
    what to do; only programming errors raise.
    """

    def __init__(
        self,
        journal: Journal,
        *,
        agent_cap: int = DEFAULT_AGENT_CAP,
        section_caps: Mapping[str, int] = _NO_CAPS,
        count: TokenCounter = estimate_tokens,
        now: Callable[[], datetime] | None = None,
        on_change: OnChange | None = None,
    ) -> None:
        if agent_cap <= 0:
            raise ValueError(f"agent_cap must be positive, got {agent_cap}")
        for name, cap in section_caps.items():
            if cap <= 0:
                raise ValueError(f"the cap of section {name!r} must be positive, got {cap}")
        self.journal = journal
        self.agent_cap = agent_cap
        self.section_caps = dict(section_caps)
        self.count = count
        self.now = now if now is not None else journal.now
        self.on_change = on_change  # called after each change is recorded
        self._read: list[Event] = []  # the events the transaction in progress read

    # -- reading -------------------------------------------------------------------------------

    def state(self) -> dict[str, SectionState]:
        """Return the current sections (agent and live subsystem ones) in display order."""
        return self.journal.fold(aware(self.now()))

    def cap_of(self, section: str) -> int | None:
        """Given a section name, return its own token cap (main: the agent cap), or None."""
        if section in self.section_caps:
            return self.section_caps[section]
        return self.agent_cap if section == DEFAULT_SECTION else None

    def agent_tokens(self, state: Mapping[str, SectionState]) -> int:
        """Given folded sections, return the tokens of the agent part (sum over sections)."""
        return sum(self.count(s.content) for s in state.values() if s.kind == "agent")

    def read(self, section: str | None = None) -> Answer:
        """Given a section name, or None for all, return its text as written.

        One section: `data["content"]` is its text exactly (empty if it has none). All:
        `data["sections"]` maps agent sections to their text, `data["subsystem"]` the live
        subsystem sections, in display order.
        """
        state = self.state()
        total = self.agent_tokens(state)
        if section is None:
            agent = {n: s.content for n, s in state.items() if s.kind == "agent"}
            subsystem = {n: s.content for n, s in state.items() if s.kind == "subsystem"}
            if agent:
                message = (
                    f"{len(agent)} section{'s' if len(agent) != 1 else ''} "
                    f"({total}/{self.agent_cap} tokens used): {', '.join(agent)}."
                )
            else:
                message = "The scratchpad is empty."
            return Answer(
                True,
                message,
                {
                    "action": "read",
                    "sections": agent,
                    "subsystem": subsystem,
                    "tokens": {n: self.count(s.content) for n, s in state.items()},
                    "agent_tokens": total,
                    "agent_cap": self.agent_cap,
                },
            )
        problem = self._check_section(section)
        if problem is not None:
            return problem
        found = state.get(section)
        if found is None:
            present = [n for n, s in state.items() if s.kind == "agent"]
            others = f" Sections with content: {', '.join(present)}." if present else ""
            return Answer(
                True,
                f"Section '{section}' is empty.{others}",
                {"action": "read", "section": section, "content": "", "tokens": 0},
            )
        tokens = self.count(found.content)
        when = f"updated {local_time(found.updated)} by {found.source or 'unknown'}"
        return Answer(
            True,
            f"Section '{section}' ({_tokens(tokens)}, {when})."
            if found.content
            else f"Section '{section}' is empty ({when}).",
            {
                "action": "read",
                "section": section,
                "content": found.content,
                "tokens": tokens,
                "kind": found.kind,
                "updated": found.updated.isoformat(),
                "source": found.source,
                "expires": found.expires.isoformat() if found.expires else None,
            },
        )

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[tuple[datetime, dict[str, SectionState]]]:
        # The caps are checked against the state read under the same lock as the append, so
        # two processes cannot both fit into the same room.
        with self.journal.locked():
            now = aware(self.now())
            # Kept for `_commit`, which folds its events onto them for `on_change` instead of
            # reading the journal again; the lock lets one transaction at a time hold them.
            self._read = self.journal.events()
            try:
                yield now, fold_events(self._read, now)
            finally:
                self._read = []

    def _commit(self, events: Sequence[Event], now: datetime) -> None:
        if not events:
            return  # nothing recorded: no reason to read the journal again for compaction
        self.journal.record_many(events)
        self.journal.compact(now=now)
        if self.on_change is not None:
            self.on_change(fold_events([*self._read, *events], now), now)

    def _budget(self, state: Mapping[str, SectionState], section: str) -> _Budget:
        others = sum(
            self.count(s.content) for s in state.values() if s.kind == "agent" and s.name != section
        )
        return _Budget(self.cap_of(section), others, self.agent_cap)

    def _store(
        self, section: str, content: str, mode: Literal["write", "append"], source: str
    ) -> _Stored:
        with self._transaction() as (now, state):
            budget = self._budget(state, section)
            existing = state.get(section)
            if existing is not None and existing.kind == "subsystem":
                return _Stored("conflict", budget, conflict=existing)
            current_text = existing.content if existing is not None else ""
            current = self.count(current_text)
            if mode == "append":
                if not content:
                    return _Stored("empty", budget, tokens=current, current=current)
                combined = f"{current_text}\n{content}" if current_text else content
                after = self.count(combined)
                over: Literal["section", "agent part"] | None = None
                if budget.section_cap is not None and after > budget.section_cap:
                    over = "section"
                elif budget.others + after > budget.agent_cap:
                    over = "agent part"
                if over is None:
                    self._commit([Event(now, section, "append", content, source)], now)
                return _Stored(
                    "stored" if over is None else "rejected",
                    budget,
                    tokens=after if over is None else current,
                    current=current,
                    added=after - current,
                    over=over,
                )
            original = self.count(content)
            if original <= budget.limit:
                self._commit([Event(now, section, "write", content, source)], now)
                return _Stored("stored", budget, tokens=original, original=original)
            if budget.limit <= 0:
                return _Stored("no_room", budget, tokens=current, original=original)
            kept = truncate_to_tokens(content, budget.limit, self.count)
            self._commit([Event(now, section, "write", kept, source)], now)
            return _Stored(
                "truncated",
                budget,
                tokens=self.count(kept),
                original=original,
                over=budget.binding,
            )

    def _check_section(self, section: object) -> Answer | None:
        if is_valid_section_name(section):
            return None
        return mistake("section-name", f"Section name {section!r} is not valid: {NAME_RULE}.")

    @staticmethod
    def _conflict_message(section: str, owner: SectionState) -> str:
        return (
            f"Section '{section}' is written by a subsystem ({owner.source or 'unknown'}) and "
            f"cannot be changed by an agent; use another section, e.g. "
            f"{example_call('write', 'findings', 'your text')}"
        )

    def _usage(self, result: _Stored) -> str:
        total = result.budget.others + result.tokens
        cap = result.budget.section_cap
        own = f"{result.tokens}/{cap} tokens" if cap is not None else _tokens(result.tokens)
        return f"{own}; agent part {total}/{self.agent_cap} tokens used"

    def _data(self, action: str, section: str, result: _Stored) -> dict[str, Any]:
        return {
            "action": action,
            "section": section,
            "tokens": result.tokens,
            "section_cap": result.budget.section_cap,
            "agent_tokens": result.budget.others + result.tokens,
            "agent_cap": self.agent_cap,
            "truncated": result.outcome == "truncated",
        }

    def write(
        self, content: str, *, section: str = DEFAULT_SECTION, source: str = "agent"
    ) -> Answer:
        """Given text and a section (default main), replace the section's text with it.

        Over the section's cap or the agent-part cap the text is truncated to fit and the
        answer gives both sizes; when the agent part has no room left the write is rejected.
        """
        problem = self._check_section(section)
        if problem is not None:
            return problem
        result = self._store(section, content, "write", source)
        data = self._data("write", section, result)
        budget = result.budget
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(section, result.conflict), data)
        if result.outcome == "no_room":
            return Answer(
                False,
                f"No room for section '{section}': the other agent sections use {budget.others} "
                f"of the {self.agent_cap} token agent part, and the text has "
                f"{_tokens(result.original)}. Clear or shorten another section first.",
                data,
            )
        if result.outcome == "truncated":
            if result.over == "section":
                message = (
                    f"Section '{section}' truncated to {_tokens(result.tokens)}, within its "
                    f"section cap of {budget.limit} (original: {result.original}). Consider "
                    "summarizing."
                )
            else:
                message = (
                    f"Section '{section}' truncated to {_tokens(result.tokens)}, within the "
                    f"{budget.limit} left (original: {result.original}): the agent part cap is "
                    f"{self.agent_cap} tokens and the other sections use {budget.others}. "
                    "Consider summarizing, or clear sections you no longer need."
                )
            return Answer(True, message, data | {"original_tokens": result.original})
        return Answer(True, f"Wrote section '{section}' ({self._usage(result)}).", data)

    def append(
        self, content: str, *, section: str = DEFAULT_SECTION, source: str = "agent"
    ) -> Answer:
        """Given text and a section (default main), add the text as a new line of the section.

        If the result would exceed the section's cap or the agent-part cap the append is
        rejected, the section is left as it was, and the answer gives current, added and cap.
        """
        problem = self._check_section(section)
        if problem is not None:
            return problem
        result = self._store(section, content, "append", source)
        data = self._data("append", section, result)
        budget = result.budget
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(section, result.conflict), data)
        if result.outcome == "empty":
            return Answer(False, "Nothing to append: `content` is empty.", data)
        if result.outcome == "rejected":
            data |= {"current_tokens": result.current, "append_tokens": result.added}
            if result.over == "section":
                message = (
                    f"Append would exceed the {budget.section_cap} token cap of section "
                    f"'{section}' (current: {result.current}, append: {result.added}). Use "
                    "write to rewrite the section, or reduce content."
                )
            else:
                message = (
                    f"Append would exceed the {self.agent_cap} token cap of the agent part "
                    f"(current: {budget.others + result.current}, append: {result.added}). "
                    "Rewrite a section shorter with write, clear sections you no longer need, "
                    "or reduce content."
                )
            return Answer(False, message, data)
        return Answer(True, f"Appended to section '{section}' ({self._usage(result)}).", data)

    def clear(self, section: str | None = None, *, source: str = "agent") -> Answer:
        """Given a section name, or None for all agent sections, erase it.

        Subsystem sections are left alone (they are removed with `remove_section`).
        """
        if section is not None:
            problem = self._check_section(section)
            if problem is not None:
                return problem
        with self._transaction() as (now, state):
            if section is None:
                names = [n for n, s in state.items() if s.kind == "agent"]
                self._commit([Event(now, n, "clear", "", source) for n in names], now)
                if not names:
                    return Answer(
                        True,
                        "The scratchpad was already empty.",
                        {"action": "clear", "cleared": []},
                    )
                plural = "s" if len(names) != 1 else ""
                return Answer(
                    True,
                    f"Cleared {len(names)} section{plural}: {', '.join(names)}.",
                    {"action": "clear", "cleared": names},
                )
            found = state.get(section)
            if found is None:
                return Answer(
                    True,
                    f"Section '{section}' was already empty.",
                    {"action": "clear", "cleared": []},
                )
            if found.kind == "subsystem":
                return Answer(
                    False,
                    self._conflict_message(section, found),
                    {"action": "clear", "cleared": []},
                )
            self._commit([Event(now, section, "clear", "", source)], now)
        return Answer(
            True, f"Cleared section '{section}'.", {"action": "clear", "cleared": [section]}
        )

    def session_tool(
        self, content: object, mode: object = "replace", *, source: str = "agent"
    ) -> Answer:
        """Given the whole-notepad tool's `{content, mode}`, replace or append to section main.

        The budget is main's cap (default: the agent cap), less what the other agent sections
        use. `replace` over budget is truncated, `append` over budget is rejected and main left
        unchanged; the messages say which, and by how much.
        """
        problem = check_session_args(content, mode)
        if problem is not None:
            return problem
        assert isinstance(content, str)
        action: Literal["write", "append"] = "append" if mode == "append" else "write"
        result = self._store(DEFAULT_SECTION, content, action, source)
        budget = result.budget
        mode_name = "append" if action == "append" else "replace"
        data = self._data(mode_name, DEFAULT_SECTION, result) | {"budget": max(budget.limit, 0)}
        shared = ""
        main_cap = self.cap_of(DEFAULT_SECTION)
        if main_cap is not None and budget.limit < main_cap and budget.others:
            shared = (
                f" Other agent sections use {budget.others} of the {self.agent_cap} tokens of "
                "the agent part."
            )
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(DEFAULT_SECTION, result.conflict), data)
        if result.outcome == "empty":
            return Answer(False, "Nothing to append: `content` is empty.", data)
        if result.outcome == "no_room":
            return Answer(
                False,
                f"No room in the scratchpad budget: other agent sections use {budget.others} of "
                f"the {self.agent_cap} tokens of the agent part. Clear or shorten them first.",
                data,
            )
        if result.outcome == "truncated":
            return Answer(
                True,
                f"Scratchpad truncated to {_tokens(result.tokens)}, within its {budget.limit} "
                f"token budget (original: {result.original}). Consider summarizing.{shared}",
                data | {"original_tokens": result.original},
            )
        if result.outcome == "rejected":
            return Answer(
                False,
                f"Append would exceed {budget.limit} token budget (current: {result.current}, "
                f"append: {result.added}). Use mode 'replace' to rewrite, or reduce content."
                f"{shared}",
                data | {"current_tokens": result.current, "append_tokens": result.added},
            )
        verb = "appended" if mode == "append" else "updated"
        return Answer(
            True, f"Scratchpad {verb} ({result.tokens}/{budget.limit} tokens used).{shared}", data
        )

    def session_call(self, args: Mapping[str, Any], *, source: str = "tool") -> Answer:
        """Given the whole-notepad tool's call as a JSON object `{"content", "mode"?}`, carry
        it out.

        A call without `content` is answered naming the keys it has instead (the text put in
        `text`, say) and showing the right call; so is a key the call does not take. Otherwise
        see `session_tool`.
        """
        problem = check_session_call(args)
        if problem is not None:
            return problem
        return self.session_tool(args["content"], args.get("mode", "replace"), source=source)

    # -- the sectioned tool -------------------------------------------------------------------

    def tool_call(self, args: Mapping[str, Any], source: str = "tool") -> Answer:
        """Given the sectioned tool's JSON call `{"action", "section"?, "content"?}`, carry it
        out.

        Each common mistake (missing `content`, `op` instead of `action`, text as the action,
        text in `section`, unknown keys, wrong types, unknown actions) is answered with
        `ok=False`, a message naming the mistake and the right call, and `data["mistake"]`.
        """
        checked = check_tool_call(args)
        if isinstance(checked, Answer):
            return checked
        action, section, content = checked
        if action == "write":
            assert content is not None
            return self.write(content, section=section or DEFAULT_SECTION, source=source)
        if action == "append":
            assert content is not None
            return self.append(content, section=section or DEFAULT_SECTION, source=source)
        if action == "read":
            return self.read(section)
        return self.clear(section, source=source)

    # -- subsystem sections --------------------------------------------------------------------

    def set_section(
        self,
        name: str,
        content: str,
        *,
        ttl: timedelta | None = None,
        source: str = "subsystem",
    ) -> Answer:
        """Given a name, text, a TTL (None: no expiry) and a source, set a subsystem section.

        The section disappears from the folded state when the TTL runs out. Names of agent
        sections are refused, and a configured cap for the name truncates the text.
        """
        problem = self._check_section(name)
        if problem is not None:
            return problem
        if name in AGENT_SECTIONS:
            return mistake(
                "agent-section",
                f"Section '{name}' is an agent section; give the subsystem section its own "
                "name, e.g. 'alerts'.",
            )
        if ttl is not None and ttl.total_seconds() <= 0:
            return mistake("ttl", f"The TTL must be positive, got {ttl}; e.g. 2h.")
        cap = self.section_caps.get(name)
        original = self.count(content)
        kept = content
        if cap is not None and original > cap:
            kept = truncate_to_tokens(content, cap, self.count)
        with self._transaction() as (now, state):
            found = state.get(name)
            if found is not None and found.kind == "agent":
                return mistake(
                    "agent-section",
                    f"Section '{name}' is an agent section (written by "
                    f"{found.source or 'an agent'}); give the subsystem section another name.",
                )
            seconds = ttl.total_seconds() if ttl is not None else None
            self._commit([Event(now, name, "set", kept, source, seconds)], now)
            expires = now + ttl if ttl is not None else None
        tokens = self.count(kept)
        until = f"expires {local_time(expires)}" if expires else "no expiry"
        data: dict[str, Any] = {
            "action": "set",
            "section": name,
            "tokens": tokens,
            "expires": expires.isoformat() if expires else None,
            "truncated": kept != content,
        }
        if kept != content:
            return Answer(
                True,
                f"Section '{name}' truncated to {_tokens(tokens)}, within its section cap of "
                f"{cap} (original: {original}); {until}.",
                data | {"original_tokens": original},
            )
        return Answer(True, f"Section '{name}' set ({_tokens(tokens)}, {until}).", data)

    def remove_section(self, name: str, *, source: str = "subsystem") -> Answer:
        """Given a subsystem section's name, remove it. Agent sections are refused."""
        problem = self._check_section(name)
        if problem is not None:
            return problem
        with self._transaction() as (now, state):
            found = state.get(name)
            if found is None:
                return Answer(True, f"Section '{name}' was not set.", {"removed": False})
            if found.kind == "agent":
                return mistake(
                    "agent-section",
                    f"Section '{name}' is an agent section; clear it with "
                    f"{example_call('clear', name)} or `assemble pad clear --section {name}`.",
                )
            self._commit([Event(now, name, "rm", "", source)], now)
        return Answer(True, f"Removed section '{name}'.", {"removed": True})

    # -- imports -------------------------------------------------------------------------------

    def import_file_edits(
        self, edited: Mapping[str, str | None], source: str = "file-edit"
    ) -> Answer:
        """Given agent sections found in an edited SCRATCHPAD.md (None: deleted), journal them.

        Changed sections get a `write` with the text as found (no cap cuts it: nothing the
        agent wrote is lost), deleted ones a `clear`; unchanged ones nothing. Names that are
        invalid or belong to subsystem sections are skipped. Pass only the sections whose text
        differs from what was rendered (see `file_edits`): a section the render shortened would
        otherwise be imported shortened. `data` lists `written`, `cleared` and `skipped`.
        """
        written: list[str] = []
        cleared: list[str] = []
        skipped: list[str] = []
        with self._transaction() as (now, state):
            events = []
            for name, content in edited.items():
                found = state.get(name)
                if not is_valid_section_name(name) or (
                    found is not None and found.kind == "subsystem"
                ):
                    skipped.append(name)
                elif content is None:
                    if found is not None:
                        events.append(Event(now, name, "clear", "", source))
                        cleared.append(name)
                elif (found is None and content) or (
                    found is not None and found.content != content
                ):
                    events.append(Event(now, name, "write", content, source))
                    written.append(name)
            self._commit(events, now)
        parts = []
        if written:
            parts.append(f"wrote {', '.join(written)}")
        if cleared:
            parts.append(f"cleared {', '.join(cleared)}")
        message = f"Imported edits: {'; '.join(parts)}." if parts else "No edits to import."
        if skipped:
            message += f" Skipped {', '.join(repr(n) for n in skipped)} (not agent sections)."
        return Answer(True, message, {"written": written, "cleared": cleared, "skipped": skipped})

    def import_external_entries(self, external: ExternalEntries) -> Answer:
        """Given the scratchpad entries a host keeps in its sessions, import the newest one as
        section main: written (with its own time) only if its text differs from main's and it
        is newer than main's last change (a write or a clear).
        """
        what = external.what
        if not external.entries:
            return Answer(True, f"No {what}s to import.", {"imported": False})
        newest = max(enumerate(external.entries), key=lambda pair: (pair[1].moment, pair[0]))[1]
        moment, text = newest.moment, newest.text
        with self._transaction() as (now, state):
            main = state.get(DEFAULT_SECTION)
            changed = last_changes(self.journal.events()).get(DEFAULT_SECTION)
            data: dict[str, Any] = {"imported": False, "entry_time": moment.isoformat()}
            if main is not None and main.content == text:
                return Answer(True, "Section main already holds the newest entry.", data)
            if changed is not None and moment <= changed:
                return Answer(
                    True,
                    f"Section main changed at {changed.isoformat()}, after the newest {what} "
                    f"({moment.isoformat()}); kept main.",
                    data,
                )
            self._commit([Event(moment, DEFAULT_SECTION, "write", text, external.source)], now)
        return Answer(
            True,
            f"Imported the {what} of {moment.isoformat()} into section main.",
            data | {"imported": True},
        )


def scratchpad_for(
    config: Config,
    *,
    now: Callable[[], datetime] | None = None,
    on_change: OnChange | None = None,
) -> Scratchpad:
    """Given a loaded config, a clock (default: the local time) and what to call after each
    change is recorded (`OnChange`: the sections as just committed, and the change's time),
    return the workspace's Scratchpad with its caps and counter.
    """
    clock = now if now is not None else local_now
    return Scratchpad(
        Journal(journal_path(config.state_dir), now=clock),
        agent_cap=config.caps.agent,
        section_caps=config.caps.journal_section_caps,
        count=get_counter(config.tokens.counter),
        now=clock,
        on_change=on_change,
    )
