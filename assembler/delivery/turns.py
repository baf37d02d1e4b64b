"""The turns of a session as its host recorded them, set beside what the hooks handed over:
which prompts reached the model with the block, which found the session holding it already,
and which got nothing from us though the hook should have run (a missed delivery).

A host's reader gives a session's `Turn`s: each prompt the human typed, with the digests of
the texts the host's own record says a hook added to that turn (Claude Code's
`hook_additional_context` attachments, Codex's `hooks.additional_context` developer
messages). Only those records count: the agent cannot write them, so a block's text or digest
written anywhere else in the transcript (the agent's reply, a tool's output, a note) is no
receipt.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from assembler.delivery.sent import Sent
from assembler.fsutil import open_regular

# The most of a session file the readers read for its receipts: its newest part.
READ_LIMIT = 16 * 1024 * 1024


def read_tail(path: Path) -> bytes | None:
    """Given a host's session file (a link followed: the host's own folder), return its newest
    `READ_LIMIT` bytes, or None when it is no regular file or cannot be read (never blocking
    on a named pipe)."""
    try:
        fd = open_regular(path, follow_links=True)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            size = handle.seek(0, 2)
            handle.seek(max(size - READ_LIMIT, 0))
            return handle.read(READ_LIMIT)
        except OSError:
            return None


# A hook run belongs to the prompt it came before by this much at most.
HOOK_WINDOW = timedelta(seconds=90)


@dataclass(frozen=True)
class Turn:
    """A prompt the human typed, when the host recorded it, the digests of what hooks added to
    it by the host's own record, and the host's version."""

    at: datetime
    added: tuple[str, ...] = ()
    version: str | None = None  # the host's version that recorded it, where it says


@dataclass(frozen=True)
class Mark:
    """How one turn was served: when, "delivered", "held" or "missed", and for a missed one
    why, as far as the records tell."""

    at: datetime
    state: str
    why: str = ""


@dataclass(frozen=True)
class SessionDeliveries:
    """One session's turns as delivered: `delivered` got the block (or what changed in it),
    `held` ran the hook, which sent nothing (the session holds the current block, or there was
    none), `missed` got nothing though no hook run said there was nothing to send."""

    session: str
    host: str
    turns: int
    delivered: int
    held: int
    missed: int
    last_delivery: datetime | None
    missed_last: int  # how many of the newest turns in a row were missed
    last_turn: datetime
    # The host's version at the last delivery and at the first of the newest missed turns,
    # when they differ: an upgrade that may have changed how hooks are run or recorded.
    upgraded: tuple[str, str] | None = None
    # Each turn, oldest first.
    marks: tuple[Mark, ...] = ()

    @property
    def missed_marks(self) -> list[Mark]:
        """The missed turns, oldest first, each with why."""
        return [mark for mark in self.marks if mark.state == "missed"]

    @property
    def carried(self) -> int:
        """Turns that carried a current block: delivered now, or held from before."""
        return self.delivered + self.held


def session_deliveries(
    host: str, session: str, turns: Sequence[Turn], runs: Sequence[Sent]
) -> SessionDeliveries:
    """Given the host, the session's id, its turns (oldest first, at least one) and the hook
    runs recorded for it, return how each turn was served (see `SessionDeliveries`)."""
    sent = {run.sent for run in runs if run.sent}
    # Each hook run belongs to one prompt, the one nearest to it: a prompt right after another
    # whose hook was taken out between them does not borrow the other's run.
    own: dict[int, list[Sent]] = {}
    for run in runs:
        nearest = min(range(len(turns)), key=lambda index: abs(turns[index].at - run.at))
        own.setdefault(nearest, []).append(run)
    delivered = held = missed = streak = 0
    last: datetime | None = None
    marks: list[Mark] = []
    carried_by: str | None = None  # the host's version of the last turn that carried it
    missed_by: str | None = None  # and of the first of the newest missed ones
    for index, turn in enumerate(turns):
        if any(digest in sent for digest in turn.added):
            delivered, streak, last, carried_by = delivered + 1, 0, turn.at, turn.version
            marks.append(Mark(turn.at, "delivered"))
            continue
        # The prompt's own hook run: the one nearest to it, within the window.
        near = min(own.get(index, []), key=lambda run: abs(run.at - turn.at), default=None)
        if near is not None and abs(near.at - turn.at) <= HOOK_WINDOW and near.sent is None:
            # The hook ran and rightly sent nothing: the session holds the block, or no
            # block was there to send.
            held, streak, carried_by = held + 1, 0, turn.version
            marks.append(Mark(turn.at, "held"))
            continue
        if streak == 0:
            missed_by = turn.version
        missed, streak = missed + 1, streak + 1
        marks.append(Mark(turn.at, "missed", _why_missed(turn, near, carried_by)))
    upgraded = None
    if streak and carried_by and missed_by and carried_by != missed_by:
        upgraded = (carried_by, missed_by)
    return SessionDeliveries(
        session,
        host,
        len(turns),
        delivered,
        held,
        missed,
        last,
        streak,
        turns[-1].at,
        upgraded,
        tuple(marks),
    )


def _why_missed(turn: Turn, near: Sent | None, carried_by: str | None) -> str:
    """Given a missed turn, the hook run nearest to it (None: none) and the host's version of
    the last turn that carried the block, return why it missed, as far as the records tell."""
    if near is None or abs(near.at - turn.at) > HOOK_WINDOW:
        why = (
            "no hook ran for this prompt (the hook is not in the settings the host read, "
            "or the host no longer calls it)"
        )
    elif not turn.added:
        why = (
            "the hook handed the block over, but the host's record of the turn holds nothing "
            "a hook added (the host dropped what the hook printed)"
        )
    else:
        why = (
            "the hook handed the block over, but what the host recorded as added differs "
            "from it (changed on the way: the host cut it, or hid text that looked secret)"
        )
    if carried_by and turn.version and turn.version != carried_by:
        why += f"; the host went from {carried_by} to {turn.version} since it last carried one"
    return why
