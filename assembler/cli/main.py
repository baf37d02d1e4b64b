"""The `assemble` command: its flags, the table of its sub-commands (`COMMANDS`), the
top-level error handler, and the dispatch to each sub-command's module
(`assembler/cli/commands/NAME.py`), where it calls one core function and prints the result.

A command imports only its own module, and its parser is built without the other commands'
(see `build_parser`), so light commands (`show`, `check`, `pad`, the hook) start fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assembler import __version__
from assembler.cli.common import EXIT_INTERRUPTED, EXIT_UNEXPECTED, EXIT_USER_ERROR
from assembler.config.files import user_log_dir
from assembler.errors import AssemblerError
from assembler.hosts import registry

DESCRIPTION = """\
Assemble SCRATCHPAD.md, the working memory of an LLM agent: the human's mood and what the
session is about (from the recent transcripts), a response strategy, the memories that bear
on it, today's notes, the time of day and a routing hint, stamped with a TTL; plus the
sections the agent writes for itself, kept across runs under a token budget.

common uses:
  assemble --once                 assemble once (heartbeat, cron, debugging)
  assemble --once --dry-run       print the file instead of writing it
  assemble daemon                 keep the file fresh (on changes and on a schedule)
  assemble check                  exit 0 if SCRATCHPAD.md is fresh, 1 if stale, 2 if missing
  assemble show --format prefix   the block a host prepends to each message
  assemble pad append --section findings "Port is 8080"   the agent's own notes
  assemble search "the rollout keeps crashing"   search the memory
  assemble obs put big-output.json   park a large tool output, read it back in slices
  assemble mood "WHY is it failing again"   score texts with the mood model
"""


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    # Sub-commands accept the global options too; SUPPRESS keeps them from overwriting a value
    # given before the sub-command's name.
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("workspace")
    group.add_argument(
        "-w",
        "--workspace",
        metavar="PATH",
        default=default,
        help="the agent workspace (default: $ASSEMBLER_WORKSPACE, else the current folder)",
    )
    group.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        default=default,
        help="read this config file alone (default: $ASSEMBLER_CONFIG, else "
        "~/.config/scratchpad-assembler/config.toml with the workspace's .scratchpad/config.toml "
        "or assembler.toml over it; the workspace's may not name code or outside places)",
    )
    verbosity = parser.add_argument_group("logging")
    verbosity.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if suppress else 0,
        help="more log output on stderr (-vv for debug)",
    )
    verbosity.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="only errors on stderr",
    )


def _add_once_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("assembly (--once)")
    group.add_argument(
        "--dry-run",
        action="store_true",
        default=default(False),
        help="print the file instead of writing it",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print a machine-readable summary of the run",
    )
    group.add_argument(
        "--explain",
        action="store_true",
        default=default(False),
        help="also print why each value is what it is",
    )
    group.add_argument(
        "--transcripts",
        metavar="GLOB",
        action="append",
        default=default(None),
        help="read these transcripts instead of the configured sources (repeatable; relative "
        "to the current folder; one that matches no file is an error)",
    )
    group.add_argument(
        "--no-daemon",
        action="store_true",
        default=default(False),
        help="assemble in this process even when a daemon serves the workspace (by default "
        "--once asks it: its models and index are loaded, so it answers in a fraction of the time)",
    )
    _add_now(group, suppress=suppress)


def _add_now(parser: argparse.ArgumentParser | Any, *, suppress: bool) -> None:
    parser.add_argument(
        "--now",
        metavar="ISO-8601",
        default=argparse.SUPPRESS if suppress else None,
        help="the clock for this run, e.g. 2026-03-02T23:25:00+11:00 (for reproducible runs); "
        "without an offset it is read in the configured time zone",
    )


def _once_arguments(once: argparse.ArgumentParser) -> None:
    _add_once_options(once, suppress=True)


SHOW_DESCRIPTION = (
    "Print SCRATCHPAD.md: as written (md), as JSON with its frontmatter and body, or as\n"
    "the block hosts prepend to each message (prefix): the auto part while the file is\n"
    "fresh, and the agent's sections as they are now, as written (no markers), even when\n"
    "the file is stale; empty when there is neither. With --fresh-only, a stale file\n"
    "prints nothing and exits 1."
)


def _show_arguments(show: argparse.ArgumentParser) -> None:
    show.add_argument("--format", choices=("md", "prefix", "json"), default="md")
    show.add_argument("--json", action="store_true", help="the same as --format json")
    show.add_argument(
        "--explain",
        action="store_true",
        help="after the file, what its last assembly measured: tokens against the caps, the "
        "sources read, the memory, what the caps dropped, what failed and why",
    )
    show.add_argument(
        "--fresh-only",
        action="store_true",
        help="print nothing and exit 1 when the file has expired",
    )
    _add_now(show, suppress=True)


CHECK_DESCRIPTION = (
    "For heartbeat scripts and monitoring: prints one line saying which, and exits\n"
    "0 (fresh), 1 (stale) or 2 (missing or unreadable, also when the workspace or the\n"
    "config is wrong). Where a host's hook ran, a line per session says how many of its\n"
    "turns carried the block, by the host's own record of what the hook added; exit 4\n"
    "when the file is fresh but the newest turn got no block (a missed delivery: is the\n"
    "hook still in the host's settings? `assemble doctor` says which link broke).\n"
    "--explain adds a line per missed turn: when, and why, as far as the records tell."
)


def _check_arguments(check: argparse.ArgumentParser) -> None:
    _add_now(check, suppress=True)
    check.add_argument(
        "--explain", action="store_true", help="say which turns missed the block and why"
    )


PAD_DESCRIPTION = """\
The agent's own sections of SCRATCHPAD.md (goal, findings, artifacts, errors, main, or a
custom name such as api-notes), kept in .scratchpad/sections.jsonl across runs and restarts
and shown after the auto-generated part. Over a cap, `write` is truncated and says both
sizes; `append` is refused and leaves the section as it was. A refused call exits 1 after
printing why. TEXT `-` reads stdin (one trailing newline dropped).

examples:
  assemble pad write --section goal "Fix the failing prod deploy"
  assemble pad append --section findings "Port is 8080"
  assemble pad read --section findings
  assemble pad clear --section errors
"""


def _pad_arguments(pad: argparse.ArgumentParser) -> None:
    actions = pad.add_subparsers(dest="pad_command", metavar="ACTION", required=True)
    helps = {
        "write": "replace a section's text (truncated to its cap, saying so)",
        "append": "add a line to a section (refused if over its cap)",
        "read": "print a section's text exactly as written, or all sections",
        "clear": "erase a section, or every agent section",
    }
    for name, help_text in helps.items():
        sub = actions.add_parser(name, help=help_text, description=help_text)
        _add_common(sub, suppress=True)
        default = "main" if name in ("write", "append") else "all sections"
        sub.add_argument("-s", "--section", metavar="S", help=f"the section (default: {default})")
        if name in ("write", "append"):
            sub.add_argument("text", nargs="?", metavar="TEXT|-", help="the text, or - for stdin")
        sub.add_argument("--json", action="store_true", help="print the answer as JSON")


TOOL_DESCRIPTION = """\
Carry out a call of the sectioned scratchpad tool: {"action": "write|append|read|clear",
"section": ..., "content": ...}, given as JSON (or - for stdin), and print the answer as
JSON: {"ok", "message", "data"}. A mistaken or refused call exits 1 after the answer.
With --session, the call is the whole-notepad tool's {"content", "mode":
"replace|append"} on section main.

example:
  assemble tool '{"action": "append", "section": "findings", "content": "Port 8080"}'
"""


def _tool_arguments(tool: argparse.ArgumentParser) -> None:
    tool.add_argument("call", metavar="JSON|-", help="the call as a JSON object, or - for stdin")
    tool.add_argument(
        "--session", action="store_true", help="the call is {content, mode} on section main"
    )


SECTION_DESCRIPTION = (
    "Sections that other programs write, such as Proactive Alerts: shown after the agent's\n"
    "sections until their TTL runs out; the agent cannot change them.\n\n"
    "examples:\n"
    '  assemble section set proactive-alerts --ttl 2h --source calendar "Standup at 10:30"\n'
    "  assemble section rm proactive-alerts"
)


class _TrailingTextParser(argparse.ArgumentParser):
    """A parser whose optional TEXT may also come after the options (`NAME --ttl 2h TEXT`).

    Python 3.11's argparse gives up an optional positional once an option separates it from
    the positional before it, and reports the word as unrecognized; it is taken back here.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        lone = len(extras) == 1 and (extras[0] == "-" or not extras[0].startswith("-"))
        if lone and getattr(parsed, "text", "") is None:
            parsed.text = extras.pop()
        return parsed, extras


def _section_arguments(section: argparse.ArgumentParser) -> None:
    verbs = section.add_subparsers(
        dest="section_command", metavar="ACTION", required=True, parser_class=_TrailingTextParser
    )
    set_ = verbs.add_parser("set", help="set a section's text", description="set a section's text")
    set_.add_argument("name", metavar="NAME")
    set_.add_argument("text", nargs="?", metavar="TEXT|-", help="the text, or - for stdin")
    set_.add_argument("--ttl", metavar="DURATION", help="expire after this long, e.g. 2h")
    set_.add_argument("--source", default="cli", help="who wrote it, e.g. calendar")
    rm = verbs.add_parser("rm", help="remove a section", description="remove a section")
    rm.add_argument("name", metavar="NAME")
    for sub in (set_, rm):
        _add_common(sub, suppress=True)
        sub.add_argument("--json", action="store_true", help="print the answer as JSON")


GUIDANCE_DESCRIPTION = (
    "Print the guidance for the agent's system prompt: the sections, the ways to write\n"
    "them and the token budget (numbers from the config). Hosts add it once per session."
)

MOOD_DESCRIPTION = (
    "Score texts with VADER and the mood model: valence (-1..1), arousal (0..1), and the\n"
    "primary and secondary mood with scores. Texts come as arguments, or one per line on\n"
    "stdin with --stdin (tens of thousands of lines are fine)."
)


def _mood_arguments(mood: argparse.ArgumentParser) -> None:
    mood.add_argument("texts", nargs="*", metavar="TEXT")
    mood.add_argument("--stdin", action="store_true", help="read one text per line from stdin")
    mood.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per text: valence, arousal, primary, secondary, scores, compound",
    )


INDEX_DESCRIPTION = (
    "Index the workspace's memory (MEMORY.md, memory/**/*.md and memory.sources):\n"
    "new and changed files are re-chunked, only new chunks are embedded, deleted files\n"
    "leave the index. Assemblies and searches do this themselves; run it to index ahead."
)


def _index_arguments(index: argparse.ArgumentParser) -> None:
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="re-chunk every file (embeddings of unchanged chunks are kept)",
    )
    index.add_argument("--json", action="store_true", help="print the summary as JSON")


SEARCH_DESCRIPTION = (
    "Search the workspace's memory, after bringing the index up to date. With --stdin,\n"
    "every line is a query and every output line a JSON array of its hits."
)


def _search_arguments(search: argparse.ArgumentParser) -> None:
    search.add_argument("query", nargs="?", metavar="QUERY")
    search.add_argument("-k", type=int, default=5, metavar="N", help="hits to show (default 5)")
    search.add_argument("--json", action="store_true", help="print the hits as a JSON array")
    search.add_argument(
        "--explain", action="store_true", help="show the score parts (vector, BM25, recency)"
    )
    search.add_argument(
        "--stdin",
        action="store_true",
        help="one query per line on stdin; one JSON array of hits per line on stdout",
    )


def _model_arguments(model: argparse.ArgumentParser) -> None:
    model_actions = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    export = model_actions.add_parser(
        "export",
        help="export the bundled embedding model to ONNX for this installation",
        description="Export the bundled all-MiniLM-L6-v2 to ONNX, once per installation, into\n"
        "<sys.prefix>/share/scratchpad-assembler/models (or $SCRATCHPAD_ASSEMBLER_MODELS), and\n"
        "print where. Memory search then runs it with onnxruntime, without torch. torch (with\n"
        "sentence-transformers and onnx: pip install 'scratchpad-assembler[export]') is needed\n"
        "for this step only; `make setup` runs it. An export of the installed weights already\n"
        "there is kept.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("--force", action="store_true", help="export again even if up to date")
    _add_common(export, suppress=True)


OBS_DESCRIPTION = """\
Parked observations: `put` parks a tool output whose JSON is over
observations.threshold_bytes (4096) in .scratchpad/observations.sqlite and prints the
synthetic observation the agent sees instead (scratchpad_id, size, head+tail summary);
`read` prints a slice of it. Entries live observations.ttl (1h) and are visible only in
the turn that stored them; `turn` starts a new turn, `gc` removes expired entries.

examples:
  some-tool | assemble obs put - --step 1 --executor fs_read
  assemble obs read 485d7beae4e144eb --mode tail -n 500
  assemble obs read 485d7beae4e144eb --mode grep --pattern 'ERROR|Traceback' --context 3
  assemble obs read 485d7beae4e144eb --mode lines --start 120 --end 160
"""


def _obs_arguments(obs: argparse.ArgumentParser) -> None:
    actions = obs.add_subparsers(dest="obs_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str, description: str = "") -> argparse.ArgumentParser:
        sub = actions.add_parser(
            name,
            help=help_text,
            description=description or help_text,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(sub, suppress=True)
        _add_now(sub, suppress=True)
        return sub

    def turn_option(sub: argparse.ArgumentParser, what: str) -> None:
        sub.add_argument("--turn", metavar="T", help=f"{what} (default: the current turn)")

    put = action(
        "put",
        "park an observation; print what the agent sees instead, as JSON",
        "Read an observation from FILE (or stdin) and park it if its JSON is over\n"
        "observations.threshold_bytes: print the synthetic observation (scratchpad_id,\n"
        "size_bytes, kind, summary, metadata, _note). A smaller one is not parked and is\n"
        "printed as the observation it was read as: raw input wrapped as\n"
        '{"ok", "content", "path", "bytes", "encoding"} (path only for a FILE; content\n'
        'as {"base64": ...} when binary), a --json-input result as its JSON. With --step it\n'
        "is also recorded whole (not listed by ls) so {{stepN.field}} can refer to it.\n"
        "The input is the tool's raw output (text, or binary if it is not UTF-8), or with\n"
        '--json-input a JSON tool result such as {"ok": true, "content": "..."}.',
    )
    put.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="default: stdin")
    turn_option(put, "the turn it belongs to")
    put.add_argument("--step", type=int, metavar="N", help="the step number, for {{stepN.field}}")
    put.add_argument("--executor", metavar="NAME", help="the tool that produced it")
    put.add_argument("--ttl", metavar="DURATION", help="time to live, e.g. 2h (default: 1h)")
    put.add_argument(
        "--json-input", action="store_true", help="the input is a JSON observation (tool result)"
    )
    put.add_argument("--force", action="store_true", help="park it even under the threshold")

    read = action(
        "read",
        "print a slice of a parked observation",
        "Print a slice of a parked observation exactly as stored (bytes as they are for a\n"
        "binary), or the slice and where it sits in the whole as JSON with --json.\n"
        "Characters are Unicode code points: a slice never splits a character (code\n"
        "point), but can split an emoji made of several (ZWJ sequences, flags). Lines are\n"
        "numbered from 1. A grep that takes too long (a backtracking pattern such as\n"
        "(a|aa)+$) stops with an error.",
    )
    read.add_argument("id", metavar="ID", help="the scratchpad_id")
    turn_option(read, "read as this turn")
    read.add_argument(
        "--any-turn", action="store_true", help="read an entry of any turn (no isolation)"
    )
    read.add_argument(
        "--mode",
        choices=("full", "head", "tail", "range", "lines", "grep"),
        default="head",
        help="head (default), tail, range (--start/--end), lines (--start/--end, 1-based, "
        "inclusive), grep (--pattern), full",
    )
    read.add_argument(
        "-n",
        type=int,
        metavar="N",
        help="characters (bytes) for head/tail/range, default 2000; lines for lines, default 100",
    )
    read.add_argument("--start", type=int, metavar="S", help="range: offset; lines: first line")
    read.add_argument("--end", type=int, metavar="E", help="range: end, exclusive; lines: last")
    read.add_argument("--pattern", metavar="RE", help="grep: a regular expression, per line")
    read.add_argument("--context", type=int, default=2, metavar="N", help="grep: lines around")
    read.add_argument(
        "--max-matches", type=int, default=50, metavar="N", help="grep: matches listed (50)"
    )
    read.add_argument("-i", "--ignore-case", action="store_true", help="grep: ignore case")
    read.add_argument("--json", action="store_true", help="print the slice and its place as JSON")

    ls = action("ls", "list the live parked observations of this turn (or --all)")
    turn_option(ls, "list this turn")
    ls.add_argument("--all", action="store_true", help="every turn")
    ls.add_argument("--json", action="store_true", help="print the entries as a JSON array")

    action("gc", "remove the expired observations now (each turn's start does it too)")

    turn = action(
        "turn",
        "start a new turn: collect expired entries, make T (default: a new id) current",
        "Start a new turn: remove expired entries and make T (default: a new id) the current\n"
        "turn, which put, read and the MCP tools use when no --turn is given. Run it from the\n"
        "host's per-turn hook. Prints the turn id.",
    )
    turn.add_argument("turn_id", nargs="?", metavar="T")

    resolve = action(
        "resolve",
        "replace {{stepN.field}} in a tool call's JSON arguments with the stored values",
        "Read a tool call's JSON arguments from FILE (or stdin) and print them with every\n"
        "{{stepN.field}} replaced by that field of step N's observation in this turn, parked\n"
        "or recorded by `put --step N` (the full content, not the summary).",
    )
    resolve.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="default: stdin")
    turn_option(resolve, "resolve in this turn")


MCP_DESCRIPTION = (
    "Run an MCP server on stdin/stdout for an agent host (Claude Code, any MCP client):\n"
    "tools scratchpad, session_scratchpad, scratchpad_put, scratchpad_read, scratchpad_view,\n"
    "memory_search, and the resource scratchpad://current (the scratchpad as hosts prepend\n"
    "it).\n"
    "`assemble setup claude-code` or `assemble setup mcp` prints how to register it."
)


def _setup_description() -> str:
    # The hosts come from the registry: a new host is listed without a change here.
    return (
        "Print what connects a host to the workspace, with this install's absolute paths:\n"
        + "".join(f"  {p.name:<12} {p.summary}\n" for p in registry.having("setup"))
        + "Nothing of the host's is changed: run or paste what it prints. The workspace folder\n"
        "is created if missing, and assembled once (--no-assemble: not). --remove prints\n"
        "what disconnects the host; --remove --apply does it.\n"
        "--all-projects (Claude Code, Codex): one user-level hook set that serves every\n"
        "project, each session's workspace its git top level (state kept outside the tree);\n"
        "--apply merges it into the host's user settings, --remove --apply takes it out."
    )


def _setup_arguments(setup: argparse.ArgumentParser) -> None:
    setup.add_argument("host", choices=[p.name for p in registry.having("setup")], help="the host")
    setup.add_argument(
        "--remove", action="store_true", help="print what disconnects the host instead"
    )
    setup.add_argument(
        "--apply",
        action="store_true",
        help="with --remove: remove it yourself (settings files edited where an entry is ours; "
        "the host's commands run when its program is on PATH, else printed); with "
        "--all-projects: merge the hooks into the host's user settings",
    )
    setup.add_argument(
        "--all-projects",
        action="store_true",
        help="one hook set in the host's user settings for every project (no --workspace): "
        "each session is served as the project (git top level) it runs in",
    )
    setup.add_argument(
        "--no-assemble",
        action="store_true",
        help="skip the first assembly that setup runs so that the first turn has a file",
    )


DAEMON_DESCRIPTION = (
    "Run until SIGTERM or Ctrl-C: assemble at start, every daemon.interval (within\n"
    "daemon.active_hours, if set), daemon.debounce after the transcripts, the memory files,\n"
    "SCRATCHPAD.md or the sections change, and daemon.refresh_before the file expires.\n"
    "One daemon per workspace (.scratchpad/daemon.lock); the memory index and its model\n"
    "stay loaded. Logs one line per assembly on stderr (journald's format under systemd;\n"
    "-v for debug, -q for errors only). Install it as a service: assemble systemd install\n"
    "--all: one process for every workspace set up on this machine, every agent workspace\n"
    "OpenClaw's config names and every project an all-projects hook announced, with one\n"
    "copy of the models; an idle workspace's index leaves memory until its next event."
)


def _daemon_arguments(daemon: argparse.ArgumentParser) -> None:
    daemon.add_argument(
        "--all",
        action="store_true",
        help="serve every workspace of this user from one process (see above)",
    )
    daemon.add_argument(
        "--transcripts",
        metavar="GLOB",
        action="append",
        default=argparse.SUPPRESS,
        help="read and watch these transcripts instead of the configured sources (repeatable; "
        "relative to the current folder; one that matches no file is an error)",
    )


SERVE_DESCRIPTION = (
    "Serve a status page of the workspace on this machine: the file as the agent reads\n"
    "it and whether it is fresh, the last assemblies, the human's mood over the day (per\n"
    "speaker), the memory search, the agent's sections and the parked observations;\n"
    "it updates itself when they change. Prints the URL to open, which carries a random\n"
    "access token; every request needs it. Runs until Ctrl-C."
)


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0: any)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1; another one is reachable from other "
        "machines and is warned about)",
    )
    _add_now(serve, suppress=True)


HOOK_DESCRIPTION = (
    "For Claude Code's settings.json and Codex's hooks.json hooks: reads the "
    "hook's JSON from stdin and, for\n"
    "UserPromptSubmit and SessionStart, prints the fresh scratchpad as\n"
    '{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}; nothing when\n'
    "it is stale or missing, or for other events. Nudges a running daemon. The workspace\n"
    "is --workspace, else $ASSEMBLER_WORKSPACE, else the session's cwd; with\n"
    "--all-projects, the project (git top level) of the session's cwd, its state kept\n"
    "outside the tree. Exits 1 (never 2, which would block the prompt) on bad input."
)


def _hook_arguments(hook: argparse.ArgumentParser) -> None:
    hook.add_argument(
        "host", choices=[p.name for p in registry.having("hook")], help="the agent host"
    )
    hook.add_argument(
        "--all-projects",
        action="store_true",
        help="serve the project of the session's working folder (what `assemble setup HOST "
        "--all-projects` writes)",
    )


DOCTOR_DESCRIPTION = (
    "Check, in order, every link that carries the scratchpad to the model: each host set up\n"
    "for the workspace (its hooks in the settings it reads, the program they run), the daemon\n"
    "(alive, answering on its socket), the embedding model (exported, loadable), the memory\n"
    "index (in step with the notes), the file (fresh) and the last delivery (the newest turn\n"
    "carried the block, by the host's own record). A line each; a broken one says the command\n"
    "that fixes it. Exit 0 only when every link holds, else 1."
)


def _doctor_arguments(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--json", action="store_true", help="print the links as JSON")
    _add_now(doctor, suppress=True)


STATUS_DESCRIPTION = (
    "List every workspace known on this machine: those `assemble daemon --all` serves (with\n"
    "whether each is resting), those set up by name and the projects the all-projects hooks\n"
    "announced, each with its file's freshness and the daemon that serves it, if any; and\n"
    "the workspaces left out, with why. Exit 0, or 1 when a served workspace's file is stale\n"
    "or missing."
)


def _status_arguments(status: argparse.ArgumentParser) -> None:
    status.add_argument("--json", action="store_true", help="print it as JSON")
    _add_now(status, suppress=True)


def _systemd_arguments(systemd: argparse.ArgumentParser) -> None:
    systemd_actions = systemd.add_subparsers(
        dest="systemd_command", metavar="ACTION", required=True
    )
    install = systemd_actions.add_parser(
        "install",
        help="write the units to ~/.config/systemd/user and print how to enable them",
        description="Write scratchpad-assembler.service (the daemon), or with --timer\n"
        "scratchpad-assembler-once.service and .timer (an assembly every 10 minutes), to\n"
        "$XDG_CONFIG_HOME/systemd/user, starting this install's assemble on the workspace\n"
        "with the config file in use now (passed as --config by its absolute path).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument(
        "--timer", action="store_true", help="a oneshot service and a timer instead of the daemon"
    )
    install.add_argument(
        "--all",
        action="store_true",
        help="the daemon of every workspace (assemble daemon --all) instead of one workspace's",
    )
    install.add_argument(
        "--force", action="store_true", help="replace unit files that differ from these"
    )
    _add_common(install, suppress=True)
    uninstall = systemd_actions.add_parser(
        "uninstall",
        help="remove the units that install wrote, and print how to stop them",
        description="Remove the units `assemble systemd install` wrote to\n"
        "$XDG_CONFIG_HOME/systemd/user (and the links that enabled them); a unit of the same\n"
        "name that it did not write is kept. Prints the command that stops them.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(uninstall, suppress=True)


def _launchd_arguments(launchd: argparse.ArgumentParser) -> None:
    launchd_actions = launchd.add_subparsers(
        dest="launchd_command", metavar="ACTION", required=True
    )
    install = launchd_actions.add_parser(
        "install",
        help="write the daemon's agent to ~/Library/LaunchAgents and load it",
        description="Write com.scratchpad-assembler.daemon.plist (the daemon, started at login\n"
        "and again after a crash) to ~/Library/LaunchAgents, starting this install's assemble\n"
        "on the workspace with the config file in use now (passed as --config by its absolute\n"
        "path), its log in ~/Library/Logs/scratchpad-assembler; then load it with launchctl\n"
        "(without launchctl on PATH, print the commands that do).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument(
        "--force", action="store_true", help="replace a plist of the same name that differs"
    )
    install.add_argument(
        "--all",
        action="store_true",
        help="the daemon of every workspace (assemble daemon --all) instead of one workspace's",
    )
    _add_common(install, suppress=True)
    uninstall = launchd_actions.add_parser(
        "uninstall",
        help="stop the agent and remove the plist that install wrote",
        description="Stop the agent with launchctl (without launchctl on PATH, print the\n"
        "command) and remove the plist `assemble launchd install` wrote to\n"
        "~/Library/LaunchAgents; a plist of the same name that it did not write is kept, and\n"
        "its agent left alone.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(uninstall, suppress=True)


def _config_arguments(config: argparse.ArgumentParser) -> None:
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    validate = actions.add_parser("validate", help="check the config; exit 1 listing all problems")
    show_config = actions.add_parser("show", help="print the effective config as TOML")
    init = actions.add_parser(
        "init",
        help="write a commented sample config",
        description="Write a commented sample config: the workspace's (the agent can edit it, "
        "so it may not name code or places outside the workspace), or with --user your own, "
        "which applies to every workspace and may name them.",
    )
    where = init.add_mutually_exclusive_group()
    where.add_argument(
        "--path",
        metavar="FILE",
        help="where to write it (default: <workspace>/assembler.toml)",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help="write your own config, ~/.config/scratchpad-assembler/config.toml",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    for sub in (validate, show_config, init):
        _add_common(sub, suppress=True)


@dataclass(frozen=True)
class Command:
    """One sub-command, as `assemble --help` lists it and `assemble NAME` runs it: the
    `run(args)` of its module, `assembler.cli.commands.NAME`."""

    name: str
    help: str  # its line in `assemble --help`
    # What `assemble NAME --help` says (default: the help line); a function when the registry
    # makes it, so that only the run that shows it asks the registry.
    description: str | Callable[[], str] = ""
    # Given its parser (which has the workspace and logging options already), add the rest.
    arguments: Callable[[argparse.ArgumentParser], None] | None = None

    @property
    def module(self) -> str:
        return f"assembler.cli.commands.{self.name}"


# The sub-commands, in the order `assemble --help` lists them: the one place that names them.
COMMANDS: tuple[Command, ...] = (
    Command("once", "assemble SCRATCHPAD.md once (the same as --once)", arguments=_once_arguments),
    Command("show", "print SCRATCHPAD.md", SHOW_DESCRIPTION, _show_arguments),
    Command(
        "check",
        "exit 0 if SCRATCHPAD.md is fresh, 1 if stale, 2 if missing, 4 if it missed the model",
        CHECK_DESCRIPTION,
        _check_arguments,
    ),
    Command(
        "pad", "write, append, read or clear the agent's sections", PAD_DESCRIPTION, _pad_arguments
    ),
    Command(
        "tool",
        "carry out a JSON scratchpad tool call; answer in JSON",
        TOOL_DESCRIPTION,
        _tool_arguments,
    ),
    Command(
        "section",
        "set or remove a section written by another program (alerts, calendar)",
        SECTION_DESCRIPTION,
        _section_arguments,
    ),
    Command(
        "guidance",
        "print the system-prompt text that tells the agent how to use its scratchpad",
        GUIDANCE_DESCRIPTION,
    ),
    Command("mood", "score texts with the mood model", MOOD_DESCRIPTION, _mood_arguments),
    Command("index", "bring the memory index up to date", INDEX_DESCRIPTION, _index_arguments),
    Command(
        "search",
        "search the memory (hybrid: embeddings + BM25)",
        SEARCH_DESCRIPTION,
        _search_arguments,
    ),
    Command(
        "model", "export the embedding model to ONNX (once, at setup)", arguments=_model_arguments
    ),
    Command(
        "obs",
        "park large tool outputs and read them back in slices",
        OBS_DESCRIPTION,
        _obs_arguments,
    ),
    Command("mcp", "serve the agent tools over MCP (stdio)", MCP_DESCRIPTION),
    Command(
        "setup",
        "print the exact commands that connect an agent host to this workspace",
        _setup_description,
        _setup_arguments,
    ),
    Command(
        "daemon",
        "keep SCRATCHPAD.md fresh: assemble on changes and on a schedule",
        DAEMON_DESCRIPTION,
        _daemon_arguments,
    ),
    Command(
        "serve",
        "a local status page: the file, the mood over the day, memory, sections",
        SERVE_DESCRIPTION,
        _serve_arguments,
    ),
    Command(
        "hook",
        "print the fresh scratchpad for an agent host's hook",
        HOOK_DESCRIPTION,
        _hook_arguments,
    ),
    Command(
        "doctor",
        "check every link from the host's setup to the last delivery; say how to fix one",
        DOCTOR_DESCRIPTION,
        _doctor_arguments,
    ),
    Command(
        "status",
        "list the workspaces the daemons serve, each with its freshness",
        STATUS_DESCRIPTION,
        _status_arguments,
    ),
    Command("systemd", "install or uninstall the systemd user units", arguments=_systemd_arguments),
    Command(
        "launchd", "install or uninstall the macOS launchd agent", arguments=_launchd_arguments
    ),
    Command("config", "validate, show or create the configuration", arguments=_config_arguments),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Given `only` (a sub-command's name, or None for all), return the argument parser of
    `assemble` with the top-level options and the sub-commands of `COMMANDS`: all of them, or
    `only` alone, which reads arguments that name it exactly as the full parser does. The full
    parser is dozens of argparse parsers, each looking up its translations on disk: a few
    milliseconds of every light command's start. An `only` that is no sub-command gets the
    full parser, whose error lists the sub-commands."""
    parser = argparse.ArgumentParser(
        prog="assemble",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--once", action="store_true", help="assemble SCRATCHPAD.md once and exit")
    _add_common(parser, suppress=False)
    _add_once_options(parser, suppress=False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in [c for c in COMMANDS if c.name == only] or COMMANDS:
        described = command.description
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=(described() if callable(described) else described) or command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(sub, suppress=True)
        if command.arguments is not None:
            command.arguments(sub)
    return parser


# The top-level options as `_command_word` reads them: those that take a value, and flags.
_VALUE_OPTIONS = frozenset({"-w", "--workspace", "-c", "--config", "--transcripts", "--now"})
_FLAGS = frozenset(
    {"--once", "--dry-run", "--json", "--explain", "--no-daemon"}
    | {"-v", "--verbose", "-q", "--quiet"}
)


def _command_word(words: Sequence[str]) -> str | None:
    """Given the arguments, return the sub-command they name when they name it plainly: the
    first word that is not an option, after top-level options spelled out in full (`-w PATH`,
    `--now=TIME`, `--once`). Return None when something else comes first (help, --version,
    an abbreviated or combined option, `--`) or nothing names a command: the full parser reads
    those, as argparse would read them."""
    value_next = False
    for word in words:
        if value_next:
            value_next = False
        elif word in _VALUE_OPTIONS:
            value_next = True
        elif word in _FLAGS or (word.startswith("--") and word.split("=")[0] in _VALUE_OPTIONS):
            continue
        elif word.startswith("-"):
            return None
        else:
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run `assemble` with the given arguments and return its exit code.

    User errors print one line and return 1; Ctrl-C returns 130; anything unexpected writes
    its traceback to the log file and returns 3.
    """
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_word(words))
    args = parser.parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    try:
        return _dispatch(parser, args)
    except AssemblerError as error:
        print(f"assemble: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("assemble: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away; nothing left to say.
        sys.stderr.close()
        return 0
    except Exception as error:
        where = _log_traceback()
        print(
            f"assemble: unexpected error: {type(error).__name__}: {error} "
            f"(traceback in {where}; please report it)",
            file=sys.stderr,
        )
        return EXIT_UNEXPECTED


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = (
        logging.ERROR if quiet else [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    )
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _log_traceback() -> str:
    text = traceback.format_exc()
    try:
        folder = user_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "assembler.log"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"--- {datetime.now().isoformat()} assemble {' '.join(sys.argv[1:])}\n")
            handle.write(text)
        return str(path)
    except OSError:
        sys.stderr.write(text)
        return "stderr"


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command is None and not args.once:
        parser.print_help(sys.stderr)
        print("\nassemble: error: name a COMMAND or pass --once", file=sys.stderr)
        return 2
    command = args.command or "once"
    return _run(command, args)


def _run(name: str, args: argparse.Namespace) -> int:
    """Given a command's name and its arguments, run it: its module (`Command.module`) is the
    one imported. Together the commands load every stage of the pipeline, and a hook must
    answer within a few tens of milliseconds of the interpreter's start."""
    command = next(c for c in COMMANDS if c.name == name)
    module = importlib.import_module(command.module)
    code: int = module.run(args)
    return code
