"""What `assemble --once` prints, as data (`OnceOutput`), made from an assembly
(`once_output`) wherever it ran: in the CLI's own process, or in the daemon that served the
run, which sends it back over its socket (`daemon.control`), so the output is byte for byte
the same whoever assembled."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assembler.assembly.cap import Assembly

LogLine = tuple[int, str, str]  # level, logger name, message


@dataclass
class OnceOutput:
    """What `assemble --once` prints: its log records (a served run's; a cold run's went out as
    they came), stdout, the warnings logged after it, the `assemble: error:` lines on stderr;
    the exit code is 1 when there are errors (a transcript that could not be read)."""

    stdout: str
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    log: list[LogLine] = field(default_factory=list)


def once_output(assembly: Assembly, *, as_json: bool, explain: bool, dry_run: bool) -> OnceOutput:
    """Given an assembly and --once's --json, --explain and --dry-run, return what --once
    prints: the summary as JSON, the file (dry run), or the line saying what was written, with
    the reasons after it; then the warnings, and an error per transcript that failed (the file
    is still written and says so, but the exit code tells cron and heartbeat scripts)."""
    measured = assembly.measured
    meta = measured.to_json()  # what --json and --explain print
    out: list[str] = []
    if as_json:
        summary = {
            "path": str(assembly.path),
            "written": assembly.written,
            **{k: meta[k] for k in ("updated", "expires", "ttl_minutes", "tokens", "sources")},
            **{k: meta[k] for k in ("messages_read", "sections", "dropped", "degraded")},
            "agent_omitted": meta["agent_omitted"],
            "mood": mood_summary(assembly),
        }
        if explain:
            summary["explain"] = assembly.explain()
        out.append(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    else:
        if dry_run:
            out.append(assembly.text)
        elif assembly.written:
            tokens = measured.tokens
            out.append(
                f"wrote {assembly.path} ({tokens.auto}/{tokens.caps.auto} tokens, "
                f"{measured.messages_read} messages read, valid until {meta['expires']})\n"
            )
        else:
            out.append(
                f"not written: {assembly.path} kept changing while it was rendered; run again\n"
            )
        if explain:
            out.append("\nWhy:\n")
            out += [f"  {line}\n" for line in [*assembly.explain(), *recorded_lines(meta)]]
    warnings = [f"{warning}" for warning in assembly.transcripts.warnings]
    # A failed transcript is said on stderr as an error, with the exit code.
    warnings += [
        f"degraded: {p.what}: {p.why}" for p in assembly.degraded if p.kind != "transcript"
    ]
    errors = [f"{s.error}" for s in assembly.transcripts.sources if s.error]
    return OnceOutput("".join(out), warnings, errors)


def recorded_lines(meta: dict[str, Any]) -> list[str]:
    """Given an assembly's record, return the diagnostics the frontmatter no longer carries,
    as --explain lines: the token counts and what became of hand edits of the file."""
    tokens = meta["tokens"]
    caps = tokens["caps"]
    lines = [
        f"tokens: {tokens['total']}/{caps['total']} in all (frontmatter {tokens['frontmatter']}, "
        f"auto {tokens['auto']}/{caps['auto']}, agent {tokens['agent']}/{caps['agent']})"
    ]
    if meta.get("memory"):
        memory = meta["memory"]
        lines.append(
            f"memory: {memory['chunks']} chunks ({memory['embedded']} embedded), "
            f"{memory['hits']} shown"
        )
    lines += [
        f"agent section {entry['section']}: {entry['left_out']} of {entry['tokens']} tokens "
        "left out"
        for entry in meta.get("agent_omitted", [])
    ]
    if (edits := meta.get("file_edits")) is not None:
        lines.append("hand edits: " + json.dumps(edits, ensure_ascii=False))
    return lines


def mood_summary(assembly: Assembly) -> dict[str, Any] | None:
    """Given an assembly, return its mood as --json shows it, or None without one."""
    if assembly.mood is None:
        return None
    return {
        **assembly.mood.combined.summary(),
        "speakers": sorted(assembly.mood.speakers),
    }
