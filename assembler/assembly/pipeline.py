"""One whole assembly, its steps in order: `draft` (the auto part, `assembly.draft`), `cap`
(the page under its caps, `assembly.cap`), `write` (compare and swap, `assembly.write`),
`publish` (the ready block, `assembly.publish`).

`run_once()` runs them all, as `assemble --once` and each daemon cycle do; with `dry_run` it
stops after `cap` and writes nothing. `run_for_prompt()` is a run with a prompt not yet in any
transcript counted, for the daemon's answer to a host's hook (nothing about it is written).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from assembler.assembly.cap import Assembly, cap
from assembler.assembly.draft import Draft, draft, memory_for
from assembler.assembly.hosts import Hosts, section_entries
from assembler.assembly.publish import publish
from assembler.assembly.write import read_output, write_if_unchanged
from assembler.config.schema import Config
from assembler.errors import Problem
from assembler.file.records import remember_render
from assembler.fsutil import Snapshot
from assembler.memory.lifecycle import WarmMemory
from assembler.mood.history import KeptHistory
from assembler.pad.agent_part import read_agent_inputs
from assembler.pad.hand_edits import import_into_journal
from assembler.transcripts.message import Message

# How often a write is tried again when SCRATCHPAD.md changed while it was being rendered.
WRITE_ATTEMPTS = 3


def run_once(
    config: Config,
    *,
    hosts: Hosts,
    now: datetime,
    dry_run: bool = False,
    transcript_globs: Sequence[str] | None = None,
    memory: WarmMemory | None = None,
    moods: KeptHistory | None = None,
) -> Assembly:
    """Given the config, the hosts whose sessions are read and the clock, assemble and (unless
    `dry_run`) write SCRATCHPAD.md and publish its ready block.
    `memory` and `moods` keep the index and the mood history open for the next run (the
    daemon's).

    Before the render, hand edits of the file and the newest scratchpad entry each host keeps
    in its sessions go to the journal. The file is replaced only if it still holds what was
    read before the render: when it changed meanwhile (an agent editing it), the edits are
    imported and the page capped again, up to WRITE_ATTEMPTS times; after that it is left as
    it is (not `written`, and `degraded` says why) for the next run.

    A dry run writes nothing: the agent sections are the journal's, hand edits of the file not
    yet imported, and the memory index searched is a temporary copy brought up to date with the
    memory files (see `lifecycle.memory_copy`).
    Raise AssemblerError if the file cannot be written, or for problems the user must fix (a
    broken template folder).
    """
    if dry_run:
        memory_copy = memory_for(config, dry_run=True)
        auto = draft(
            config, hosts=hosts, now=now, memory=memory_copy, transcript_globs=transcript_globs
        )
        return _cap_as_read(config, auto)
    auto = draft(
        config,
        hosts=hosts,
        now=now,
        memory=memory_for(config, warm=memory),
        transcript_globs=transcript_globs,
        remember_moods=True,
        moods=moods,
    )
    external = section_entries(hosts, config, auto.transcripts.sources, auto.now)
    assembly: Assembly | None = None
    late: bytes | None = None
    for _ in range(WRITE_ATTEMPTS):
        seen, problems = read_output(config)
        if late is not None:
            # Written into the old file between the check and the swap: import it too.
            import_into_journal(config, now=auto.now, seen=Snapshot(late, time.time()))
            late = None
        sync, imported = import_into_journal(config, now=auto.now, seen=seen, external=external)
        agent = read_agent_inputs(config, now=auto.now, seen=seen, sync=sync)
        agent.degraded[:0] = [*problems, *imported]
        assembly = cap(config, auto, agent)
        replaced = write_if_unchanged(assembly, config, seen)
        if replaced.done:
            # The next run tells the agent's text typed in the file from what this one wrote.
            remember_render(config.state_dir, assembly.text)
            publish(config, assembly)
            if replaced.late is None:
                return assembly
            late = replaced.late
    assert assembly is not None
    if not assembly.written:
        assembly.degraded.append(
            Problem(
                "write",
                f"{config.output_path} changed while it was rendered, "
                f"{WRITE_ATTEMPTS} times; left as it is (the next run imports the edits)",
                "write",
            )
        )
    elif late is not None:  # the last write's own late edit: into the journal, for next time
        import_into_journal(config, now=auto.now, seen=Snapshot(late, time.time()))
    return assembly


def run_for_prompt(
    config: Config,
    *,
    hosts: Hosts,
    now: datetime,
    prompt: Message,
    memory: WarmMemory | None = None,
    transcript_globs: Sequence[str] | None = None,
    moods: KeptHistory | None = None,
) -> Assembly:
    """Given the config, the hosts, the clock and a prompt the host is about to send, return
    the assembly with the prompt counted as the newest human message (see `draft.with_prompt`):
    its mood, task, strategy and memory queries. Nothing is written about the prompt: the file
    and the ready block stay as they are (the transcript line the host writes is what the next
    run reads), and the mood history keeps only the transcripts' messages. The memory index is
    the workspace's (kept warm by `memory`), synced as a run syncs it.
    """
    auto = draft(
        config,
        hosts=hosts,
        now=now,
        memory=memory_for(config, warm=memory),
        transcript_globs=transcript_globs,
        remember_moods=True,
        prompt=prompt,
        moods=moods,
    )
    return _cap_as_read(config, auto)


def _cap_as_read(config: Config, auto: Draft) -> Assembly:
    """Given the config and the draft, return the assembly with the agent sections as the
    journal and SCRATCHPAD.md hold them now, importing nothing."""
    seen, problems = read_output(config)
    agent = read_agent_inputs(config, now=auto.now, seen=seen)
    agent.degraded[:0] = problems
    return cap(config, auto, agent)
