"""The `assemble` command: parses flags, calls one core function, prints the result.

Heavy modules are imported inside the commands that need them, so light commands
(`show`, `check`, `config`) start fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from assembler import __version__
from assembler.errors import AssemblerError

if TYPE_CHECKING:
    from assembler.config import Config
    from assembler.recall import OpenMemory

log = logging.getLogger("assembler")

EXIT_USER_ERROR = 1
EXIT_UNEXPECTED = 3
EXIT_INTERRUPTED = 130

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
    _add_now(group, suppress=suppress)


def _add_now(parser: argparse.ArgumentParser | Any, *, suppress: bool) -> None:
    parser.add_argument(
        "--now",
        metavar="ISO-8601",
        default=argparse.SUPPRESS if suppress else None,
        help="the clock for this run, e.g. 2026-03-02T23:25:00+11:00 (for reproducible runs); "
        "without an offset it is read in the configured time zone",
    )


OBS_HELP = "park large tool outputs and read them back in slices"
OBS_DESCRIPTION = """\
Large observations (seed 002): `put` parks a tool output whose JSON is over
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


def _add_obs_command(obs: argparse.ArgumentParser) -> None:
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

TOOL_DESCRIPTION = """\
Carry out a scratchpad tool call (seed 004): {"action": "write|append|read|clear",
"section": ..., "content": ...}, given as JSON (or - for stdin), and print the answer as
JSON: {"ok", "message", "data"}. A mistaken or refused call exits 1 after the answer.
With --session, the call is seed 000's {"content", "mode": "replace|append"} on main.

example:
  assemble tool '{"action": "append", "section": "findings", "content": "Port 8080"}'
"""


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


def _add_pad_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    pad = command("pad", "write, append, read or clear the agent's sections", PAD_DESCRIPTION)
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

    tool = command(
        "tool",
        "carry out a JSON scratchpad tool call; answer in JSON",
        TOOL_DESCRIPTION,
    )
    tool.add_argument("call", metavar="JSON|-", help="the call as a JSON object, or - for stdin")
    tool.add_argument(
        "--session", action="store_true", help="the call is {content, mode} on section main"
    )

    section = command(
        "section",
        "set or remove a section written by another program (alerts, calendar)",
        "Sections that other programs write, such as Proactive Alerts: shown after the agent's\n"
        "sections until their TTL runs out; the agent cannot change them.\n\n"
        "examples:\n"
        '  assemble section set proactive-alerts --ttl 2h --source calendar "Standup at 10:30"\n'
        "  assemble section rm proactive-alerts",
    )
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

    command(
        "guidance",
        "print the system-prompt text that tells the agent how to use its scratchpad",
        "Print the guidance for the agent's system prompt: the sections, the ways to write\n"
        "them and the token budget (numbers from the config). Hosts add it once per session.",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of `assemble` and its sub-commands."""
    parser = argparse.ArgumentParser(
        prog="assemble",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--once", action="store_true", help="assemble SCRATCHPAD.md once and exit")
    _add_common(parser, suppress=False)
    _add_once_options(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help_text: str, description: str = "") -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=help_text,
            description=description or help_text,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(sub, suppress=True)
        return sub

    once = command("once", "assemble SCRATCHPAD.md once (the same as --once)")
    _add_once_options(once, suppress=True)

    show = command(
        "show",
        "print SCRATCHPAD.md",
        "Print SCRATCHPAD.md: as written (md), as JSON with its frontmatter and body, or as\n"
        "the block hosts prepend to each message (prefix): the auto part while the file is\n"
        "fresh, and the agent's sections as they are now, as written (no markers), even when\n"
        "the file is stale; empty when there is neither. With --fresh-only, a stale file\n"
        "prints nothing and exits 1.",
    )
    show.add_argument("--format", choices=("md", "prefix", "json"), default="md")
    show.add_argument(
        "--fresh-only",
        action="store_true",
        help="print nothing and exit 1 when the file has expired",
    )
    _add_now(show, suppress=True)

    check = command(
        "check",
        "exit 0 if SCRATCHPAD.md is fresh, 1 if stale, 2 if missing or unreadable",
        "For heartbeat scripts and monitoring: prints one line saying which, and exits\n"
        "0 (fresh), 1 (stale) or 2 (missing or unreadable, also when the workspace or the\n"
        "config is wrong).",
    )
    _add_now(check, suppress=True)

    _add_pad_commands(command)

    mood = command(
        "mood",
        "score texts with the mood model",
        "Score texts with VADER and the mood model: valence (-1..1), arousal (0..1), and the\n"
        "primary and secondary mood with scores. Texts come as arguments, or one per line on\n"
        "stdin with --stdin (tens of thousands of lines are fine).",
    )
    mood.add_argument("texts", nargs="*", metavar="TEXT")
    mood.add_argument("--stdin", action="store_true", help="read one text per line from stdin")
    mood.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per text: valence, arousal, primary, secondary, scores, compound",
    )

    index = command(
        "index",
        "bring the memory index up to date",
        "Index the workspace's memory (MEMORY.md, memory/**/*.md and memory.sources):\n"
        "new and changed files are re-chunked, only new chunks are embedded, deleted files\n"
        "leave the index. Assemblies and searches do this themselves; run it to index ahead.",
    )
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="re-chunk every file (embeddings of unchanged chunks are kept)",
    )
    index.add_argument("--json", action="store_true", help="print the summary as JSON")

    search = command(
        "search",
        "search the memory (hybrid: embeddings + BM25)",
        "Search the workspace's memory, after bringing the index up to date. With --stdin,\n"
        "every line is a query and every output line a JSON array of its hits.",
    )
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

    _add_obs_command(command("obs", OBS_HELP, OBS_DESCRIPTION))
    command(
        "mcp",
        "serve the agent tools over MCP (stdio)",
        "Run an MCP server on stdin/stdout for an agent host (Claude Code, any MCP client):\n"
        "tools scratchpad, session_scratchpad, scratchpad_put, scratchpad_read, scratchpad_view,\n"
        "memory_search, and the resource scratchpad://current (the scratchpad as hosts prepend\n"
        "it).\n"
        "`assemble setup claude-code` or `assemble setup mcp` prints how to register it.",
    )

    setup = command(
        "setup",
        "print the exact commands that connect an agent host to this workspace",
        "Print what connects a host to the workspace, with this install's absolute paths:\n"
        "  claude-code  hooks that add the scratchpad before each prompt, and the MCP tools\n"
        "  openclaw     the plugin that adds it before each prompt, and how to enable it\n"
        "  mcp          the mcpServers entry for Claude Desktop, Cursor and other MCP hosts\n"
        "Nothing is changed: run or paste what it prints.",
    )
    setup.add_argument("host", choices=("claude-code", "openclaw", "mcp"), help="the host")

    daemon = command(
        "daemon",
        "keep SCRATCHPAD.md fresh: assemble on changes and on a schedule",
        "Run until SIGTERM or Ctrl-C: assemble at start, every daemon.interval (within\n"
        "daemon.active_hours, if set), daemon.debounce after the transcripts, the memory files,\n"
        "SCRATCHPAD.md or the sections change, and daemon.refresh_before the file expires.\n"
        "One daemon per workspace (.scratchpad/daemon.lock); the memory index and its model\n"
        "stay loaded. Logs one line per assembly on stderr (journald's format under systemd;\n"
        "-v for debug, -q for errors only). Install it as a service: assemble systemd install",
    )
    daemon.add_argument(
        "--transcripts",
        metavar="GLOB",
        action="append",
        default=argparse.SUPPRESS,
        help="read and watch these transcripts instead of the configured sources (repeatable; "
        "relative to the current folder; one that matches no file is an error)",
    )

    _add_hook_command(commands)

    systemd = command("systemd", "install the systemd user units")
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
        "--force", action="store_true", help="replace unit files that differ from these"
    )
    _add_common(install, suppress=True)

    config = command("config", "validate, show or create the configuration")
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
    return parser


def _add_hook_command(commands: Any) -> None:
    hook = commands.add_parser(
        "hook",
        help="print the fresh scratchpad for an agent host's hook",
        description="For Claude Code's settings.json hooks: reads the hook's JSON from stdin "
        "and, for\nUserPromptSubmit and SessionStart, prints the fresh scratchpad as\n"
        '{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}; nothing when\n'
        "it is stale or missing, or for other events. Nudges a running daemon. The workspace\n"
        "is --workspace, else $ASSEMBLER_WORKSPACE, else the session's cwd. Exits 1 (never 2,\n"
        "which would block the prompt) on bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(hook, suppress=True)
    hook.add_argument("host", choices=("claude-code",), help="the agent host")


def _hook_parser() -> argparse.ArgumentParser:
    """Return a parser of `assemble hook` alone: hooks run before every prompt, and building
    the parsers of all the other sub-commands would cost them tens of milliseconds."""
    parser = argparse.ArgumentParser(prog="assemble")
    _add_common(parser, suppress=False)
    parser.set_defaults(once=False)
    _add_hook_command(parser.add_subparsers(dest="command", metavar="COMMAND"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `assemble` with the given arguments and return its exit code.

    User errors print one line and return 1; Ctrl-C returns 130; anything unexpected writes
    its traceback to the log file and returns 3.
    """
    words = sys.argv[1:] if argv is None else argv
    parser = _hook_parser() if list(words[:1]) == ["hook"] else build_parser()
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
    from assembler.config import user_state_dir

    text = traceback.format_exc()
    try:
        folder = user_state_dir()
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
    handlers: dict[str | None, Callable[[argparse.Namespace], int]] = {
        "once": _cmd_once,
        "show": _cmd_show,
        "check": _cmd_check,
        "mood": _cmd_mood,
        "pad": _cmd_pad,
        "tool": _cmd_tool,
        "section": _cmd_section,
        "guidance": _cmd_guidance,
        "index": _cmd_index,
        "search": _cmd_search,
        "obs": _cmd_obs,
        "mcp": _cmd_mcp,
        "config": _cmd_config,
        "daemon": _cmd_daemon,
        "hook": _cmd_hook,
        "systemd": _cmd_systemd,
        "setup": _cmd_setup,
    }
    if args.command is None and not args.once:
        parser.print_help(sys.stderr)
        print("\nassemble: error: name a COMMAND or pass --once", file=sys.stderr)
        return 2
    return handlers[args.command or "once"](args)


def _load(args: argparse.Namespace) -> Config:
    from assembler.config import load_config

    return load_config(args.workspace, args.config)


def _parse_now(value: str | None, config: Config) -> datetime:
    from assembler.config import local_timezone

    tz = local_timezone(config)
    if value is None:
        return datetime.now(tz)
    try:
        parsed = datetime.fromisoformat(value)
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)
        # A time the clock cannot carry in UTC (year 1 at +14:00) is no time to run at.
        parsed.astimezone(UTC)
    except (ValueError, OverflowError) as error:
        raise AssemblerError(
            f"--now {value!r} is not an ISO-8601 time; write it like 2026-03-02T23:25:00+11:00"
        ) from error
    return parsed


def _cmd_once(args: argparse.Namespace) -> int:
    from assembler.assemble import run_once

    config = _load(args)
    now = _parse_now(args.now, config)
    globs = _explicit_transcripts(args)
    assembly = run_once(config, now=now, dry_run=args.dry_run, transcript_globs=globs)
    meta = assembly.meta
    if args.json:
        summary = {
            "path": str(assembly.path),
            "written": assembly.written,
            **{k: meta[k] for k in ("updated", "expires", "ttl_minutes", "tokens", "sources")},
            **{k: meta[k] for k in ("messages_read", "sections", "dropped", "degraded")},
            "agent_omitted": meta.get("agent_omitted", []),
            "mood": _mood_summary(assembly),
        }
        if args.explain:
            summary["explain"] = assembly.explain()
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return _report_problems(assembly)
    if args.dry_run:
        sys.stdout.write(assembly.text)
    elif assembly.written:
        tokens = meta["tokens"]
        print(
            f"wrote {assembly.path} ({tokens['auto']}/{tokens['caps']['auto']} tokens, "
            f"{meta['messages_read']} messages read, valid until {meta['expires']})"
        )
    else:
        print(f"not written: {assembly.path} kept changing while it was rendered; run again")
    if args.explain:
        print("\nWhy:")
        for line in assembly.explain():
            print(f"  {line}")
    return _report_problems(assembly)


def _explicit_transcripts(args: argparse.Namespace) -> list[str] | None:
    """Return --transcripts as absolute globs (typed in a shell: relative to its folder), or
    None when not given. Raise TranscriptError if one matches no file."""
    globs = getattr(args, "transcripts", None)
    if not globs:
        return None
    from assembler.transcripts import resolve_explicit_sources

    return resolve_explicit_sources(globs, Path.cwd())


def _report_problems(assembly: Any) -> int:
    """Print what went wrong in a run that still wrote its file; return 1 if a source failed.

    An unreadable transcript does not stop the run (the file is written and says so), but the
    exit code tells cron and heartbeat scripts that something needs fixing.
    """
    for warning in assembly.transcripts.warnings:
        log.warning("%s", warning)
    failed = [s for s in assembly.transcripts.sources if s.error]
    for item in assembly.degraded:
        if not item["what"].startswith("transcript "):
            log.warning("degraded: %s: %s", item["what"], item["why"])
    for source in failed:
        print(f"assemble: error: {source.error}", file=sys.stderr)
    return EXIT_USER_ERROR if failed else 0


def _mood_summary(assembly: Any) -> dict[str, Any] | None:
    if assembly.mood is None:
        return None
    state = assembly.mood.combined
    return {
        "primary": state.primary,
        "primary_score": round(state.primary_score, 3),
        "secondary": state.secondary,
        "valence": round(state.valence, 3),
        "arousal": round(state.arousal, 3),
        "confidence": round(state.confidence, 3),
        "trajectory": state.trajectory,
        "speakers": sorted(assembly.mood.speakers),
    }


def _cmd_show(args: argparse.Namespace) -> int:
    from assembler.render import read_scratchpad

    config = _load(args)
    now = _parse_now(args.now, config)
    if args.format == "prefix":
        from assembler.sections import prefix_for

        # The fresh auto part with the agent sections as they are now (not as last rendered).
        block = prefix_for(config, now, fresh_only=args.fresh_only)
        if block is None:
            return 1
        sys.stdout.write(block)
        return 0
    pad = read_scratchpad(config.output_path)
    fresh = pad.is_fresh(now)
    if args.fresh_only and not fresh:
        return 1
    if args.format == "json":
        document = {
            "path": str(pad.path),
            "fresh": fresh,
            "updated": pad.updated.isoformat(),
            "expires": pad.expires.isoformat(),
            "frontmatter": pad.meta,
            "body": pad.body,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(pad.path.read_text(encoding="utf-8"))
    return 0


def _read_text(value: str | None, what: str) -> str:
    """Return TEXT, or stdin for `-` (without the one newline a shell pipe adds)."""
    if value is None:
        raise AssemblerError(f"{what}: give the TEXT, or - to read it from stdin")
    if value != "-":
        return value
    text = read_stdin(what)
    return text[:-1] if text.endswith("\n") else text


def read_stdin(what: str) -> str:
    """Return all of stdin as text. Raise AssemblerError if it is not UTF-8: a replacement
    character in place of the bytes would be stored as if the agent had written it."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of stdin (in-process callers): text already
        return sys.stdin.read()
    return _decoded(buffer.read(), what)


def _decoded(data: bytes, what: str, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"line {line} of stdin" if line is not None else "stdin"
        raise AssemblerError(
            f"{what}: {where} is not UTF-8 text (byte {error.object[error.start]:#04x} at "
            f"offset {error.start}); convert it to UTF-8"
        ) from error


def _answer(answer: Any, as_json: bool) -> int:
    """Print a scratchpad answer (JSON, else its message); return 1 if the call was refused."""
    if as_json:
        print(answer.to_json())
    elif answer.ok:
        print(answer.message)
    else:
        print(f"assemble: {answer.message}", file=sys.stderr)
    return 0 if answer.ok else EXIT_USER_ERROR


def _cmd_pad(args: argparse.Namespace) -> int:
    from assembler.sections import DEFAULT_SECTION, listing_for, scratchpad_for

    config = _load(args)
    pad = scratchpad_for(config, refresh_ready=True)
    action = args.pad_command
    if action in ("write", "append"):
        text = _read_text(args.text, f"pad {action}")
        store = pad.write if action == "write" else pad.append
        section = DEFAULT_SECTION if args.section is None else args.section
        return _answer(store(text, section=section, source="cli"), args.json)
    if action == "clear":
        return _answer(pad.clear(args.section, source="cli"), args.json)
    answer = pad.read(args.section)
    if args.json or not answer.ok:
        return _answer(answer, args.json)
    if args.section is not None:
        sys.stdout.write(answer.data["content"])  # exactly as written, nothing added
        if not answer.data["content"]:
            print(answer.message, file=sys.stderr)  # else an empty section looks like a failure
    elif answer.data["sections"] or answer.data["subsystem"]:
        sys.stdout.write(listing_for(config, pad.state()))
    else:
        print(answer.message, file=sys.stderr)
    return 0


def _cmd_tool(args: argparse.Namespace) -> int:
    from assembler.sections import parse_call, scratchpad_for

    call = parse_call(read_stdin("tool") if args.call == "-" else args.call)
    if call.ok:
        pad = scratchpad_for(_load(args), refresh_ready=True)
        args_ = call.data["call"]
        answer = pad.session_call(args_) if args.session else pad.tool_call(args_)
    else:
        answer = call
    print(answer.to_json())
    return 0 if answer.ok else EXIT_USER_ERROR


def _cmd_section(args: argparse.Namespace) -> int:
    from assembler.config import parse_duration
    from assembler.sections import scratchpad_for

    pad = scratchpad_for(_load(args), refresh_ready=True)
    if args.section_command == "rm":
        return _answer(pad.remove_section(args.name, source="cli"), args.json)
    ttl = None
    if args.ttl is not None:
        try:
            ttl = parse_duration(args.ttl)
        except ValueError as error:
            raise AssemblerError(f"--ttl: {error}") from error
    text = _read_text(args.text, "section set")
    return _answer(pad.set_section(args.name, text, ttl=ttl, source=args.source), args.json)


def _cmd_guidance(args: argparse.Namespace) -> int:
    from assembler.sections import guidance_for

    sys.stdout.write(guidance_for(_load(args)))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from assembler.errors import ConfigError, WorkspaceError
    from assembler.render import check_freshness

    try:
        config = _load(args)
    except (WorkspaceError, ConfigError) as error:
        # Monitoring reads 1 as "stale"; a file that cannot even be located is "missing" (2).
        lines = str(error).splitlines()
        print(f"missing or unreadable: {' '.join(line.strip() for line in lines)}")
        return 2
    result = check_freshness(config.output_path, _parse_now(args.now, config))
    print(result.message)
    return result.code


def _cmd_mood(args: argparse.Namespace) -> int:
    from assembler.sentiment import load_mood_model

    if not args.texts and not args.stdin:
        raise AssemblerError("mood: give TEXT arguments or pass --stdin with one text per line")
    model = load_mood_model()
    for batch in _batches(args.texts, sys.stdin if args.stdin else None):
        for mood in model.score_many(batch):
            if args.json:
                record = {
                    "valence": round(mood.valence, 4),
                    "arousal": round(mood.arousal, 4),
                    "primary": mood.primary,
                    "secondary": mood.secondary,
                    "scores": {k: round(v, 4) for k, v in mood.scores.items()},
                    "compound": mood.compound,
                }
                sys.stdout.write(json.dumps(record) + "\n")
            else:
                second = f", {mood.secondary} {mood.secondary_score:.2f}" if mood.secondary else ""
                sys.stdout.write(
                    f"valence {mood.valence:+.2f}  arousal {mood.arousal:.2f}  "
                    f"{mood.primary} {mood.primary_score:.2f}{second}\n"
                )
    return 0


def _batches(texts: Sequence[str], stream: TextIO | None, size: int = 2048) -> Iterator[list[str]]:
    """Yield the texts in batches, so stdin of any length is scored without holding it all."""
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])
    if stream is None:
        return
    batch: list[str] = []
    buffer = getattr(stream, "buffer", None)
    lines = (
        (_decoded(raw, "--stdin", number) for number, raw in enumerate(buffer, start=1))
        if buffer is not None
        else iter(stream)
    )
    for line in lines:
        batch.append(line.rstrip("\r\n"))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _cmd_index(args: argparse.Namespace) -> int:
    from assembler.recall import synced_memory

    config = _load(args)
    with _ProgressBars() as bars:
        memory = synced_memory(config, rebuild=args.rebuild, progress=bars.update)
    memory.index.close()
    report = memory.report
    summary = {
        "files_seen": report.files_seen,
        "files_changed": report.files_changed,
        "files_removed": report.files_removed,
        "chunks_total": report.chunks_total,
        "chunks_embedded": report.chunks_embedded,
        "chunks_reused": report.chunks_reused,
        "skipped": report.skipped,
        "degraded": memory.degraded,
        "seconds": round(report.seconds, 3),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for warning in report.skipped:
        log.warning("%s", warning)
    _log_degraded(memory)
    print(
        f"indexed {report.files_seen} files ({report.files_changed} changed, "
        f"{report.files_removed} removed): {report.chunks_total} chunks, "
        f"{report.chunks_embedded} embedded, {report.chunks_reused} reused, "
        f"in {report.seconds:.2f} s"
    )
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from assembler.recall import hit_record, index_options, shown_hit, synced_memory

    if args.k <= 0:
        raise AssemblerError(f"-k {args.k}: give a positive number of hits")
    if (args.query is None) == (not args.stdin):
        raise AssemblerError("search: give one QUERY, or pass --stdin with one query per line")
    config = _load(args)
    memory = synced_memory(config)
    _log_degraded(memory)
    options = index_options(config)
    patterns = config.routing.extra_secret_patterns
    with memory.index as index:
        if args.stdin:
            for batch in _batches([], sys.stdin, size=256):
                for hits in index.search_many(batch, k=args.k, **options):
                    records = [
                        hit_record(shown_hit(h, patterns), explain=args.explain) for h in hits
                    ]
                    sys.stdout.write(json.dumps(records))
                    sys.stdout.write("\n")
            return 0
        hits = [shown_hit(h, patterns) for h in index.search(args.query, k=args.k, **options)]
        if index.search_degraded:
            log.warning("degraded: %s", index.search_degraded)
    if args.json:
        print(json.dumps([hit_record(h, explain=args.explain) for h in hits], indent=2))
        return 0
    if not hits:
        print("no memories matched")
    for rank, hit in enumerate(hits, start=1):
        line = f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line}  {hit.score:.3f}"
        if args.explain:
            parts = [f"vector {_part(hit.vector)}", f"bm25 {_part(hit.bm25)}"]
            if hit.recency != 1.0:
                parts.append(f"recency x{hit.recency:.2f}")
            line += f"  ({', '.join(parts)})"
        print(line)
        print(f"   {hit.snippet}")
    return 0


def _log_degraded(memory: OpenMemory) -> None:
    # Keyword search alone is a warning only when the user did not choose it.
    if memory.degraded:
        level = logging.INFO if memory.chosen else logging.WARNING
        log.log(level, "degraded: %s", memory.degraded)


def _part(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class _ProgressBars:
    """tqdm bars on stderr, one per stage, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.bars: dict[str, Any] = {}

    def __enter__(self) -> _ProgressBars:
        return self

    def update(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is None:
            from tqdm import tqdm

            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="", leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    def __exit__(self, *exc: object) -> None:
        for bar in self.bars.values():
            bar.close()


def _cmd_obs(args: argparse.Namespace) -> int:
    from assembler.observations import store_for

    config = _load(args)
    now = _parse_now(args.now, config)
    with store_for(config) as store:
        return _OBS_ACTIONS[args.obs_command](store, args, now)


def _read_input(name: str) -> tuple[bytes, str | None]:
    if name == "-":
        return sys.stdin.buffer.read(), None
    try:
        return Path(name).expanduser().read_bytes(), name
    except OSError as error:
        raise AssemblerError(f"{name} cannot be read ({error.strerror}); check the path") from error


def _obs_put(store: Any, args: argparse.Namespace, now: datetime) -> int:
    from assembler.config import parse_duration
    from assembler.observations import observation_from_input, to_json

    data, path = _read_input(args.file)
    observation = observation_from_input(data, path=path, json_input=args.json_input)
    try:
        ttl = parse_duration(args.ttl) if args.ttl else None
    except ValueError as error:
        raise AssemblerError(f"--ttl: {error}") from error
    result = store.put(
        observation,
        turn=args.turn,
        step=args.step,
        executor=args.executor,
        ttl=ttl,
        force=args.force,
        now=now,
    )
    print(to_json(result))
    return 0


def _obs_read(store: Any, args: argparse.Namespace, now: datetime) -> int:
    from assembler.observations import to_json

    options = {"turn": args.turn, "any_turn": args.any_turn, "now": now}
    if args.mode == "full" and not args.json:
        # Block by block: a 50 MB observation goes to stdout without being held whole.
        entry = store.get(args.id, **options)
        for piece in store.stream(entry):
            _write_piece(piece)
        return 0
    found = store.read(
        args.id,
        args.mode,
        n=args.n,
        start=args.start,
        end=args.end,
        pattern=args.pattern,
        context=args.context,
        max_matches=args.max_matches,
        ignore_case=args.ignore_case,
        **options,
    )
    log.info("%s", found.position())
    if args.json:
        print(to_json(found.to_dict()))
    elif args.mode == "grep":
        print(found.text if found.text else f"no line matches {args.pattern!r}")
    else:
        _write_piece(found.data if found.data is not None else found.text)
    return 0


def _write_piece(piece: str | bytes) -> None:
    if isinstance(piece, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(piece)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(piece)


def _obs_ls(store: Any, args: argparse.Namespace, now: datetime) -> int:
    from assembler.observations import to_json

    entries = store.entries(turn=args.turn, all_turns=args.all, now=now)
    if args.json:
        print(to_json([entry.to_dict() for entry in entries]))
        return 0
    if not entries:
        print("no parked observations" + ("" if args.all else " in this turn (--all: any turn)"))
    for entry in entries:
        step = "-" if entry.step is None else str(entry.step)
        left = max(0, int((entry.expires - now).total_seconds() // 60))
        first = entry.summary.split("\n", 1)[0][:60]
        print(
            f"{entry.id}  turn {entry.turn_id}  step {step}  {entry.executor or '-'}  "
            f"{entry.kind} {entry.size_bytes} bytes  expires in {left} min  {first}"
        )
    return 0


def _obs_gc(store: Any, args: argparse.Namespace, now: datetime) -> int:
    report = store.gc(now)
    print(f"removed {report.removed} expired observations ({report.freed_bytes} bytes stored)")
    return 0


def _obs_turn(store: Any, args: argparse.Namespace, now: datetime) -> int:
    print(store.start_turn(args.turn_id, now))
    return 0


def _obs_resolve(store: Any, args: argparse.Namespace, now: datetime) -> int:
    from assembler.observations import to_json

    data, path = _read_input(args.file)
    try:
        arguments = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise AssemblerError(
            f"{path or 'stdin'} is not JSON ({error}); give the tool call's arguments as JSON"
        ) from error
    print(to_json(store.resolve_references(arguments, turn=args.turn, now=now)))
    return 0


_OBS_ACTIONS: dict[str, Callable[[Any, argparse.Namespace, datetime], int]] = {
    "put": _obs_put,
    "read": _obs_read,
    "ls": _obs_ls,
    "gc": _obs_gc,
    "turn": _obs_turn,
    "resolve": _obs_resolve,
}


def _cmd_mcp(args: argparse.Namespace) -> int:
    from assembler.mcp_server import serve

    serve(_load(args))
    return 0


def _cmd_daemon(args: argparse.Namespace) -> int:
    from assembler.daemon import configure_logging, run_daemon

    config = _load(args)
    globs = _explicit_transcripts(args)
    configure_logging(args.verbose, args.quiet)
    run_daemon(config, transcript_globs=globs)
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    from assembler.hooks import run_claude_code_hook

    output = run_claude_code_hook(
        read_stdin("hook claude-code"), workspace=args.workspace, config_path=args.config
    )
    sys.stdout.write(output)
    return 0


def _cmd_systemd(args: argparse.Namespace) -> int:
    from assembler.config import user_config_dir
    from assembler.units import install_units

    config = _load(args)
    installed = install_units(
        timer=args.timer,
        workspace=config.workspace,
        # A file named with --config or $ASSEMBLER_CONFIG is named to the service too; else it
        # finds the same files as this command: the user's config folder is pinned.
        config=config.source if config.explicit else None,
        config_home=None if config.explicit else user_config_dir(),
        output_file=config.output_path,
        force=args.force,
    )
    for path in installed.written:
        print(f"wrote {path}")
    for path in installed.unchanged:
        print(f"unchanged {path}")
    print(f"enable and start with:\n  {installed.enable_command}")
    print("run it without a login session too: loginctl enable-linger $USER")
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    from assembler.setup import setup_text
    from assembler.units import assemble_executable

    sys.stdout.write(setup_text(args.host, _load(args), assemble_executable()))
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    from assembler import config as config_module

    if args.config_command == "init":
        if args.user:
            target = config_module.user_config_dir() / "config.toml"
        elif args.path:
            target = Path(args.path).expanduser()
        else:
            target = config_module.resolve_workspace(args.workspace) / "assembler.toml"
        written = config_module.init_config(target, force=args.force)
        print(f"wrote {written}; edit it, then run 'assemble config validate'")
        return 0
    config = _load(args)
    files = " with ".join(str(path) for path in config.sources)
    if args.config_command == "validate":
        where = f"{files} {'is' if len(config.sources) == 1 else 'are'}"
        where = where if files else "no config file (defaults) is"
        print(f"ok: {where} valid (workspace {config.workspace})")
        return 0
    print(f"# effective config; from {files or 'defaults'}")
    sys.stdout.write(config_module.to_toml(config.to_dict()))
    return 0
