"""What Codex itself writes into a `user` message: the catalogue of the host's texts, taken from
Codex's released code on npm (`@openai/codex`: the Linux x86-64 binary of each release, read
with `strings`), never from sample transcripts.

Each entry says how a content item of Codex's opens (`opens`, after leading white space), a
sample as Codex writes it, the first and last release whose code holds it (`probe`, else
`opens`, found in the binary's text; `absent`: releases between the two that lack it), and
where in Codex's source (codex-rs, for orientation) it is written. `turns.py` drops an item
that opens with one of them. `VERSIONS` lists every release from the oldest whose rollouts the
reader reads to the newest on npm, and whether its binary was read; one not read lies between
two read releases that hold the same entries. `scripts/codex_host_text.py` checks a new
release against this.

The oldest release read is the first whose rollouts are `{"timestamp", "type", "payload"}`
lines (`session_meta` first, then `response_item`, `event_msg`, ...): 0.29 and before wrote
bare response items, which `CodexReader` does not claim.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class HostText:
    """One text Codex writes into a user message in the human's place."""

    kind: str  # what it is: "environment_context", "turn_aborted", ...
    opens: str  # how the content item's text begins (after leading white space)
    sample: str  # the whole item, as Codex writes it
    first: str  # the first release whose code holds it
    last: str | None  # the last one; None: still in the newest release read
    where: str  # where Codex writes it (codex-rs source, and when)
    # Releases between the two whose code lacks it (the compaction summary of 0.57 and 0.58).
    absent: tuple[str, ...] = ()
    # The text looked for in a release's code to tell whether it holds the entry.
    probe: str = ""
    # Where the human's own words follow in the same item (Codex's IDE context), else None.
    words_after: str | None = None

    @property
    def evidence(self) -> str:
        return self.probe or self.opens


@dataclass(frozen=True, slots=True)
class Release:
    """One release of `@openai/codex` in the range the reader reads."""

    version: str
    # Its binary was read. False: npm holds no binary of it (0.142.1 and 0.153.1 name platform
    # packages that were never published), and it lies between two read releases that hold the
    # same entries.
    read: bool


# The oldest release whose rollouts the reader reads, and the first whose user messages name
# each content item's provenance (`internal_chat_message_metadata_passthrough`).
OLDEST: Final = "0.34.0"
PROVENANCE_SINCE: Final = "0.142.0"

_ENVIRONMENT_SAMPLE = """<environment_context>
  <cwd>/home/dev/api</cwd>
  <shell>bash</shell>
  <current_date>2026-11-20</current_date>
  <timezone>Europe/Berlin</timezone>
</environment_context>"""
_ENVIRONMENT_SAMPLE_PLAIN = """<environment_context>
  <cwd>/home/dev/api</cwd>
  <shell>bash</shell>
</environment_context>"""
_ENVIRONMENT_SAMPLE_OLD = """<environment_context>
  <cwd>/home/dev/api</cwd>
  <approval_policy>on-request</approval_policy>
  <sandbox_mode>workspace-write</sandbox_mode>
  <network_access>restricted</network_access>
  <shell>bash</shell>
</environment_context>"""
_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking"
    " process. You also have access to the state of the tools that were used by that language"
    " model. Use this to build on the work that has already been done and avoid duplicating work."
    " Here is the summary produced by the other language model, use the information in this"
    " summary to assist with your own analysis:"
)

CATALOGUE: Final[tuple[HostText, ...]] = (
    HostText(
        kind="environment_context",
        opens="<environment_context>",
        sample=_ENVIRONMENT_SAMPLE,
        first="0.20.0",
        last=None,
        where="core environment_context.rs (context/world_state/environment.rs since 0.142): the "
        "session's first user message, and again when the folder, date, zone or network change. "
        "Its fields: cwd, approval_policy, sandbox_mode, network_access, writable_roots, shell "
        "until 0.49; cwd, shell, then current_date and timezone (see CLOCK_FIELDS); network, "
        "subagents, environments and filesystem in later releases.",
    ),
    HostText(
        kind="user_instructions",
        opens="<user_instructions>",
        sample="<user_instructions>\n\nAlways run ruff before committing.\n\n</user_instructions>",
        first="0.20.0",
        last="0.53.0",
        where="core project_doc.rs: the project's AGENTS.md and ~/.codex/AGENTS.md, a user "
        "message at the session's start, before the `# AGENTS.md instructions` header",
    ),
    HostText(
        kind="agents_md",
        opens="# AGENTS.md instructions for ",
        sample="# AGENTS.md instructions for /home/dev/api\n\n<INSTRUCTIONS>\nAlways run ruff."
        "\n</INSTRUCTIONS>",
        first="0.55.0",
        last=None,
        where="core user_instructions.rs (context/user_instructions.rs, world_state/agents_md.rs "
        "since 0.142): the AGENTS.md files of the folder the session runs in",
        probe="# AGENTS.md instructions",
    ),
    HostText(
        kind="agents_md_without_folder",
        opens="# AGENTS.md instructions\n",
        sample="# AGENTS.md instructions\n\n<INSTRUCTIONS>\nAlways run ruff.\n</INSTRUCTIONS>",
        first="0.140.0",
        last=None,
        where="core context/world_state/agents_md.rs: the same block when no single project "
        "folder names it (only ~/.codex/AGENTS.md, or several environments); its start marker "
        "is written without ` for <folder>`",
        probe="# AGENTS.md instructions</INSTRUCTIONS>",
    ),
    HostText(
        kind="agents_md_body",
        opens="<INSTRUCTIONS>",
        sample="<INSTRUCTIONS>\nAlways run ruff.\n</INSTRUCTIONS>",
        first="0.55.0",
        last=None,
        where="the body of the AGENTS.md block, should a content item hold it without its header",
    ),
    HostText(
        kind="turn_aborted",
        opens="<turn_aborted>",
        sample="<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running "
        "unified exec processes were terminated. If any tools/commands were aborted, they may "
        "have partially executed; verify current state before retrying.\n</turn_aborted>",
        first="0.89.0",
        last=None,
        where="core context/turn_aborted.rs: recorded when the human interrupts a turn (Esc)",
    ),
    HostText(
        kind="user_shell_command",
        opens="<user_shell_command>",
        sample="<user_shell_command>\n<command>\nls -la\n</command>\n<result>\nExit code: 0\n"
        "Duration: 0.0100 seconds\nOutput:\ntotal 0\n</result>\n</user_shell_command>",
        first="0.58.0",
        last=None,
        where="core context/user_shell_command.rs: the record of a command the human ran with `!`",
    ),
    HostText(
        kind="subagent_notification",
        opens="<subagent_notification>",
        sample='<subagent_notification>\n{"agent_id":"019a-agent","status":{"completed":"done"}}'
        "\n</subagent_notification>",
        first="0.105.0",
        last=None,
        where="core context/subagent_notification.rs: a sub-agent's report to the parent thread",
    ),
    HostText(
        kind="skill",
        opens="<skill>",
        sample="<skill>\n<name>deploy</name>\n<path>/home/dev/.codex/skills/deploy/SKILL.md</path>"
        "\nRun the deploy script.\n</skill>",
        first="0.72.0",
        last=None,
        where="core context/skill_instructions.rs: the body of a skill the human invoked",
    ),
    HostText(
        kind="external_context",
        opens="<external_",
        sample="<external_ide_selection>def main(): ...</external_ide_selection>",
        first="0.135.0",
        last=None,
        where="core context/fragments.rs (AdditionalContextUserFragment): context a client "
        "or hook adds for the model, one `<external_KEY>` item each",
    ),
    HostText(
        kind="hook_prompt",
        opens="<hook_prompt",
        sample='<hook_prompt hook_run_id="019a-hook">Run the tests before you stop.</hook_prompt>',
        first="0.117.0",
        last=None,
        where="protocol items.rs (HookPromptFragment, written as XML): what a Stop hook asks "
        "the model to do next, as a user message",
        probe="hook_prompt@hook_run_id",
    ),
    HostText(
        kind="ide_context",
        opens="# Context from my IDE setup:",
        sample="# Context from my IDE setup:\n\n## Active file: src/app.py\n\n"
        "## My request for Codex:\n",
        first="0.34.0",
        last=None,
        where="core event_mapping.rs (USER_MESSAGE_BEGIN, since the oldest release read; the "
        "`# Context from my IDE setup:` opening is in the CLI's own code since 0.133): an IDE "
        "client's open files before the human's request, in the same item; Codex shows the "
        "human's message as what follows the marker",
        probe="## My request for Codex:",
        words_after="## My request for Codex:",
    ),
    HostText(
        kind="image_open",
        opens="<image name=",
        sample="<image name=[Image #1]>",
        first="0.87.0",
        last=None,
        where="protocol models.rs: the text item before each image the human attached",
    ),
    HostText(
        kind="image_open_unnamed",
        opens="<image>",
        sample="<image>",
        first="0.168.0",
        last=None,
        absent=("0.169.0",),
        where="protocol models.rs (IMAGE_OPEN_TAG): the text item before an image given by "
        "URL; the binary shows the tag alone only where the compiler kept it as text",
    ),
    HostText(
        kind="image_unreadable",
        opens="Codex could not read the local image at `",
        sample="Codex could not read the local image at `/home/dev/shot.png`: No such file",
        first="0.53.0",
        last=None,
        absent=(
            "0.145.0",
            "0.146.0",
            "0.146.1",
            "0.147.0",
            "0.148.0-alpha.8",
            "0.148.0",
            "0.149.0",
            "0.149.1",
            "0.150.0",
            "0.150.1",
            "0.151.0",
            "0.152.0",
            "0.152.1",
            "0.153.0",
            "0.153.2",
            "0.153.3",
            "0.153.4",
            "0.154.0",
            "0.155.0",
            "0.155.1",
            "0.156.0",
            "0.156.1",
            "0.157.0",
            "0.157.1",
            "0.158.0",
            "0.159.0",
            "0.159.1",
            "0.159.2",
            "0.159.3",
            "0.160.0",
            "0.160.1",
            "0.161.0",
            "0.162.0-alpha.15",
            "0.162.0",
            "0.162.1",
            "0.163.0",
            "0.164.0",
            "0.165.0",
            "0.166.0",
            "0.167.2",
            "0.168.0",
            "0.169.0",
        ),
        where="protocol models.rs (local_image_error_placeholder): in place of an image the "
        "human attached that could not be read",
    ),
    HostText(
        kind="image_close",
        opens="</image>",
        sample="</image>",
        first="0.87.0",
        last=None,
        where="protocol models.rs: the text item after each image the human attached",
    ),
    HostText(
        kind="review_result",
        opens="<user_action>",
        sample="<user_action>\n  <context>User initiated a review task. Here's the full review "
        "output from reviewer model. User may select one or more comments to resolve.</context>"
        "\n  <action>review</action>\n  <results>\n  None.\n  </results>\n</user_action>",
        first="0.39.0",
        last=None,
        where="core tasks/review.rs (exit_review_mode): the outcome of /review, recorded in the "
        "thread that asked for it",
    ),
    HostText(
        kind="review_prompt_changes",
        opens="Review the current code changes (staged, unstaged, and untracked files)",
        sample="Review the current code changes (staged, unstaged, and untracked files) and "
        "provide prioritized findings.",
        first="0.40.0",
        last=None,
        where="review_prompts.rs: the request /review sends the reviewer as its user message",
    ),
    HostText(
        kind="review_prompt_branch",
        opens="Review the code changes against the base branch '",
        sample="Review the code changes against the base branch 'main'. The merge base commit "
        "for this comparison is 1a2b3c. Run `git diff 1a2b3c` to inspect the changes relative to "
        "main. Provide prioritized, actionable findings.",
        first="0.40.0",
        last=None,
        where="core review_prompts.rs: /review against a base branch",
    ),
    HostText(
        kind="review_prompt_commit",
        opens="Review the code changes introduced by commit ",
        sample="Review the code changes introduced by commit 1a2b3c. Provide prioritized, "
        "actionable findings.",
        first="0.40.0",
        last=None,
        where="core review_prompts.rs: /review of one commit",
    ),
    HostText(
        kind="init_prompt",
        opens="Generate a file named AGENTS.md that serves as a contributor guide",
        sample="Generate a file named AGENTS.md that serves as a contributor guide for this "
        "repository.\nYour goal is to produce a clear, concise, and well-structured document.",
        first="0.20.0",
        last=None,
        where="tui prompt_for_init_command.md: what /init sends as the human's message",
    ),
    HostText(
        kind="compaction_summary",
        opens="Another language model started to solve this problem",
        sample=_SUMMARY_PREFIX + "\nThe human asked for an index on the export query.",
        first="0.36.0",
        last=None,
        absent=(
            "0.55.0",
            "0.57.0",
            "0.58.0",
        ),
        where="core compact.rs (SUMMARY_PREFIX): the summary a compaction leaves in the "
        "history, as a user message (and the `compacted` line's message); 0.36 to 0.53 wrote "
        "the same words inside the history bridge, 0.57 and 0.58 the summary alone",
    ),
    HostText(
        kind="compaction_history_bridge",
        opens="You were originally given instructions from a user over one or more turns.",
        sample="You were originally given instructions from a user over one or more turns. Here "
        "were the user messages:\n\nfix the export\n\n" + _SUMMARY_PREFIX + "\nIndex added.",
        first="0.36.0",
        last="0.53.0",
        where="core templates/compact/history_bridge.md: the user message that replaced the "
        "history after a compaction",
    ),
    HostText(
        kind="compaction_prompt",
        opens="You are performing a CONTEXT CHECKPOINT COMPACTION.",
        sample="You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for "
        "another LLM that will resume the task.",
        first="0.55.0",
        last=None,
        where="core templates/compact/prompt.md: what /compact (or the automatic compaction) "
        "sends the model as the user's turn",
    ),
    HostText(
        kind="compaction_prompt_memento",
        opens="You have exceeded the maximum number of tokens, please stop coding and instead "
        "write a short memento message for the next agent.",
        sample="You have exceeded the maximum number of tokens, please stop coding and instead "
        "write a short memento message for the next agent. Your note should:\n- Summarize what "
        "you finished",
        first="0.36.0",
        last="0.53.0",
        where="core prompt_for_compact_command.md: the compaction prompt before the checkpoint one",
    ),
    HostText(
        kind="unified_exec_limit_warning",
        opens="Warning: The maximum number of unified exec processes you can keep open is",
        sample="Warning: The maximum number of unified exec processes you can keep open is 64 and "
        "you currently have 64 processes open.",
        first="0.131.0",
        last=None,
        where="core context (LegacyUnifiedExecProcessLimitWarning): a warning recorded for the "
        "model as a user message",
    ),
    HostText(
        kind="apply_patch_warning",
        opens="Warning: apply_patch was requested via ",
        sample="Warning: apply_patch was requested via exec_command. Use the apply_patch tool "
        "instead of exec_command.",
        first="0.131.0",
        last=None,
        where="core context (LegacyApplyPatchExecCommandWarning): a warning recorded for the "
        "model as a user message",
    ),
)

# What Codex tells the model of the human's clock, since CLOCK_SINCE: elements of the
# environment_context block (`<current_date>2026-11-20</current_date>`, the local date;
# `<timezone>Europe/Berlin</timezone>`, an IANA name), and the same values as fields of each
# `turn_context` rollout line (TurnContextItem). The binary shows the block's format up to
# 0.142.0; later releases build it element by element (world_state/environment.rs), so only
# the source says they still write both.
CLOCK_FIELDS: Final = ("current_date", "timezone")
CLOCK_SINCE: Final = "0.107.0"
# The last release whose environment_context names the sandbox and approval settings (later
# ones tell the model those in a developer message).
PERMISSIONS_LAST: Final = "0.80.0"

VERSIONS: Final[tuple[Release, ...]] = (
    Release("0.34.0", True),
    Release("0.36.0", True),
    Release("0.39.0", True),
    Release("0.40.0", True),
    Release("0.42.0", True),
    Release("0.44.0", True),
    Release("0.45.0", True),
    Release("0.47.0", True),
    Release("0.49.0", True),
    Release("0.50.0", True),
    Release("0.53.0", True),
    Release("0.55.0", True),
    Release("0.57.0", True),
    Release("0.58.0", True),
    Release("0.59.0", True),
    Release("0.60.1", True),
    Release("0.61.0", True),
    Release("0.63.0", True),
    Release("0.64.0", True),
    Release("0.65.0", True),
    Release("0.66.0", True),
    Release("0.72.0", True),
    Release("0.73.0", True),
    Release("0.74.0", True),
    Release("0.75.0", True),
    Release("0.77.0", True),
    Release("0.79.0", True),
    Release("0.80.0", True),
    Release("0.87.0", True),
    Release("0.89.0", True),
    Release("0.90.0", True),
    Release("0.92.0", True),
    Release("0.93.0", True),
    Release("0.94.0", True),
    Release("0.95.0", True),
    Release("0.96.0", True),
    Release("0.97.0", True),
    Release("0.98.0", True),
    Release("0.99.0", True),
    Release("0.100.0", True),
    Release("0.101.0", True),
    Release("0.104.0", True),
    Release("0.105.0", True),
    Release("0.106.0", True),
    Release("0.107.0", True),
    Release("0.110.0", True),
    Release("0.111.0", True),
    Release("0.113.0", True),
    Release("0.114.0", True),
    Release("0.115.0", True),
    Release("0.116.0", True),
    Release("0.117.0", True),
    Release("0.118.0", True),
    Release("0.120.0", True),
    Release("0.121.0", True),
    Release("0.122.0", True),
    Release("0.123.0", True),
    Release("0.124.0", True),
    Release("0.125.0", True),
    Release("0.128.0-alpha.1", True),
    Release("0.128.0", True),
    Release("0.129.0", True),
    Release("0.130.0", True),
    Release("0.131.0", True),
    Release("0.132.0", True),
    Release("0.133.0", True),
    Release("0.134.0", True),
    Release("0.135.0", True),
    Release("0.136.0", True),
    Release("0.137.0", True),
    Release("0.138.0", True),
    Release("0.139.0", True),
    Release("0.140.0", True),
    Release("0.141.0", True),
    Release("0.142.0", True),
    Release("0.142.1", False),
    Release("0.142.2", True),
    Release("0.142.3", True),
    Release("0.142.4", True),
    Release("0.142.5", True),
    Release("0.143.0", True),
    Release("0.144.0", True),
    Release("0.144.1", True),
    Release("0.144.2", True),
    Release("0.144.3", True),
    Release("0.144.4", True),
    Release("0.144.5", True),
    Release("0.144.6", True),
    Release("0.145.0", True),
    Release("0.146.0", True),
    Release("0.146.1", True),
    Release("0.147.0", True),
    Release("0.148.0-alpha.8", True),
    Release("0.148.0", True),
    Release("0.149.0", True),
    Release("0.149.1", True),
    Release("0.150.0", True),
    Release("0.150.1", True),
    Release("0.151.0", True),
    Release("0.152.0", True),
    Release("0.152.1", True),
    Release("0.153.0", True),
    Release("0.153.1", False),
    Release("0.153.2", True),
    Release("0.153.3", True),
    Release("0.153.4", True),
    Release("0.154.0", True),
    Release("0.155.0", True),
    Release("0.155.1", True),
    Release("0.156.0", True),
    Release("0.156.1", True),
    Release("0.157.0", True),
    Release("0.157.1", True),
    Release("0.158.0", True),
    Release("0.159.0", True),
    Release("0.159.1", True),
    Release("0.159.2", True),
    Release("0.159.3", True),
    Release("0.160.0", True),
    Release("0.160.1", True),
    Release("0.161.0", True),
    Release("0.162.0-alpha.15", True),
    Release("0.162.0", True),
    Release("0.162.1", True),
    Release("0.163.0", True),
    Release("0.164.0", True),
    Release("0.165.0", True),
    Release("0.166.0", True),
    Release("0.167.2", True),
    Release("0.168.0", True),
    Release("0.169.0", True),
    Release("0.171.0", True),
)


def version_key(version: str) -> tuple[int, int, int, int]:
    """Given a release's version (`0.171.0`, `0.128.0-alpha.1`), return what orders it among
    the others: an alpha before its release."""
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:-alpha\.(\d+))?", version)
    if found is None:
        raise ValueError(f"{version!r} is not a version of @openai/codex")
    major, minor, patch, alpha = found.groups()
    return int(major), int(minor), int(patch), int(alpha) if alpha else sys.maxsize


def written_in(version: str) -> tuple[HostText, ...]:
    """Given a release, return the catalogue's entries its code writes."""
    at = version_key(version)
    return tuple(
        entry
        for entry in CATALOGUE
        if version_key(entry.first) <= at
        and (entry.last is None or at <= version_key(entry.last))
        and version not in entry.absent
    )


def environment_sample(version: str) -> str:
    """Given a release, return an environment_context block as it writes one."""
    at = version_key(version)
    if at <= version_key(PERMISSIONS_LAST):
        return _ENVIRONMENT_SAMPLE_OLD
    return _ENVIRONMENT_SAMPLE if at >= version_key(CLOCK_SINCE) else _ENVIRONMENT_SAMPLE_PLAIN
