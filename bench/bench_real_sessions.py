"""Benchmark: the real assembly replayed on real session transcripts, at labelled points.

    python bench/bench_real_sessions.py [--data PATH] [--points FILE ...] [-v] [--only ID]

Reads (never copies) the real Claude Code, OpenClaw and Codex session files of the development
data, by default `../shared/data/real-sessions` next to the repo (see its SOURCES.md), at the
replay points of three label sets in `bench/data/real_sessions/` (see the README beside them:
what each label means, how the labels were made and how the sessions were split):
`blind.jsonl`, moments of sessions nobody writing the rules had read, labelled and committed
before the rules changed, reported first and apart, their failures never listed (`-v` and
`--only` leave them out); `tuning.jsonl` and `points.jsonl`, whose failures were read. For
each point a temporary workspace gets a config of its own, outside the workspace, that
points `transcripts.sources` at the session file (its absolute path: the `.deleted.` archives
are read because they are named), with the memory off and `time.timezone` unset;
`assembler.assembly.pipeline.run_once(..., dry_run=True)` assembles the file as it would have
been at the point's `now` (nothing stamped after it is read), through the real readers and
the real assembly, and the auto part of the rendered text is scored:

- **working on**: the Working on line holds at least `task_min` of the label's `task` keys
  (each key a "|"-separated list of alternatives, matched case-insensitively as substrings).
  For a point without a task (`task: null`: greetings, a heartbeat or cron turn, a finished
  task) it is right when there is no Working on line ("nothing identified", "Nothing known
  yet") or the line says the task is finished; at a point where the human closed the task
  (`finished: true`) a line saying so, or no line, is right too.
- **part of day** (points whose transcript shows the human's zone): the Time Context's part of
  the day, or its hour, falls in the label's part (morning 05-12, afternoon 12-17, evening
  17-22, night 22-05). A Time Context that says its zone is a guess counts wrong there; at
  the points whose zone is not shown, how many say so is printed apart.
- **no host text**: no line of the auto part holds the hosts' plumbing (`PLUMBING`: metadata
  blocks, envelopes and stamps, cron, heartbeat and relay prompts, command wrappers...).
- **no zone claimed** (points whose transcript does not show the zone): no Time Context, or
  one that says the human's zone is unknown.
- **mood**: the primary mood is the label's (no mood section counts as neutral); and the same
  on the points where the label says the mood is clearly shown (`mood_clear`).
- **strategy (clear)**: on those points, the How to answer line follows a rule of the label's
  kind (`KINDS`: pressed, worried, low, lost, positive).
- **no false alarm** (points labelled neutral): no mood and no strategy shown.

Each auto line is then judged right, wrong, harmful (wrong in a way that changes how the model
answers), no news (true, but what the model does or knows without it) or unjudged, with its
tokens (`_judge_lines`); headings, the title and blank lines are overhead and the frontmatter
is counted apart. The report gives the share of wrong and harmful lines and the share of the
auto part's tokens that are right.

The machine's own zone is set to `--machine-tz` (UTC by default) for the run, so that the
figures do not depend on where the benchmark runs: the assembler, like a server, does not live
in the human's zone. A point whose assembly raises counts wrong on every metric and is listed.
Without the data folder it prints `skipped: ...` and exits 0.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from assembler.hosts.registry import HOSTS

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "real-sessions"
LABELS = REPO / "bench" / "data" / "real_sessions"
DEFAULT_POINTS = LABELS / "points.jsonl"
# The label sets, in the order they are reported: the blind split first (labelled before the
# rules were changed, its failures never listed), then the sets whose failures were read.
DEFAULT_SETS: tuple[Path, ...] = (LABELS / "blind.jsonl", LABELS / "tuning.jsonl", DEFAULT_POINTS)
SPLITS: tuple[str, ...] = ("blind", "tuning", "development")
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# What the hosts write around or in place of the human's words: none of it belongs in an auto
# line (plain substrings, case-sensitive, then patterns).
PLUMBING: tuple[str, ...] = (
    "[Bootstrap",
    "Wake up, my friend",
    "System (untrusted)",
    "System: [",
    "[System Message]",
    "[Queued messages",
    "Queued #",
    "<command-",
    "<local-command",
    "Caveat: The messages below",
    "[Request interrupted",
    "<system-reminder>",
    "This session is being continued",
    "Conversation info",
    "untrusted metadata",
    "(untrusted, for context)",
    "[message_id:",
    "[cron:",
    "A cron job",
    "HEARTBEAT",
    "A new session was started",
    "Pre-compaction memory flush",
    "GatewayRestart",
    "Exec completed",
    "Stats: runtime",
    "sessionKey agent:",
    "NO_REPLY",
    "[[reply_to",
    "(in C:\\",
)
CHANNELS = "Discord|Telegram|WhatsApp|Signal|Slack|WebChat|iMessage"
PLUMBING_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("envelope stamp", re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d")),
    ("channel header", re.compile(rf"\[(?:{CHANNELS}) [^\]]*\d\d:\d\d")),
)
# Turns the hosts write in the human's place, by how they start (after an optional stamp), and
# where the human's words start after a block of "System: [...]" relay lines: the benchmark's
# own reading of the files, independent of the readers it checks (see `_host_segments`).
HOST_TURNS: tuple[str, ...] = (
    "A cron job",
    "[System Message]",
    "[cron:",
    "[OpenClaw ",
    "Read HEARTBEAT",
    "A new session was started",
    "Pre-compaction memory flush",
    "Wake up, my friend",
    "GatewayRestart",
    "Please forward this",
)
STAMP = re.compile(r"\A\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d \d\d:\d\d[^\]]*\]\s*")
AFTER_RELAY = re.compile(
    rf"\n\n(?=Conversation info \(untrusted|\[(?:{CHANNELS}) |\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d)"
)
FENCED = re.compile(r"```json\n.*?```", re.DOTALL)
# The Active Context lines that quote the human's (or a summary's) words.
QUOTING = ("working on", "last topic", "last task")
# The label's parts of the day, and the words a Time Context may use for them (longest first).
PARTS: dict[str, range | tuple[range, range]] = {
    "morning": range(5, 12),
    "afternoon": range(12, 17),
    "evening": range(17, 22),
    "night": (range(22, 24), range(0, 5)),
}
PART_WORDS: tuple[tuple[str, str], ...] = (
    ("late night", "night"),
    ("early morning", "morning"),
    ("late morning", "morning"),
    ("late evening", "evening"),
    ("early evening", "evening"),
    ("late afternoon", "afternoon"),
    ("morning", "morning"),
    ("afternoon", "afternoon"),
    ("evening", "evening"),
    ("midnight", "night"),
    ("night", "night"),
)
GUESS = re.compile(r"guess|unknown|not known|assum|uncertain|not sure", re.IGNORECASE)
# A line the program marks as finished: by its label, or by a parenthesis of its own (the
# human's sentence itself may say "completed" about anything).
FINISHED_LABEL = re.compile(r"finish|done|closed|last task|previous task", re.IGNORECASE)
FINISHED_NOTE = re.compile(r"\([^()]*\b(?:finished|done|closed|completed)\b[^()]*\)", re.I)
NO_TASK = re.compile(r"nothing identified|nothing known", re.IGNORECASE)
ITEM = re.compile(r"^- \*\*(?P<label>[^*]+):\*\* ?(?P<text>.*)$")
HOUR = re.compile(r"\b(\d{1,2}):\d\d\b")
METRICS: tuple[str, ...] = (
    "working on",
    "part of day",
    "no zone claimed",
    "no host text",
    "mood",
    "mood (clear)",
    "strategy (clear)",
    "no false alarm",
)
# The kinds of answer a mood calls for: a strategy is of the right kind when its mood is of the
# label's kind, and harmful when it is of the other valence (a warm "match their energy" for an
# anxious human).
KINDS: dict[str, str] = {
    "frustrated": "pressed",
    "urgent": "pressed",
    "anxious": "worried",
    "sad": "low",
    "tired": "low",
    "confused": "lost",
    "happy": "positive",
    "grateful": "positive",
    "curious": "positive",
}
NEGATIVE = frozenset(m for m, kind in KINDS.items() if kind != "positive")
# How each auto line of a file is judged (see `_judge_lines`), and the classes of the report.
CLASSES: tuple[str, ...] = ("right", "wrong", "harmful", "no news", "unjudged", "overhead")


@dataclass
class Line:
    """One line of the auto part: its section, its item's label (None: not an item) and text."""

    section: str
    label: str | None
    text: str
    line: str


@dataclass
class Shown:
    """What the auto part of one rendered file says, as far as the metrics read it."""

    auto: str
    working_on: str | None  # the Working on line's text (None: no line)
    working_label: str = ""
    time_lines: list[str] = field(default_factory=list)
    time_label: str | None = None  # "Local time", "Server time", ... (None: no time item)
    primary: str | None = None
    unclear_mood: bool = False  # the "no clear emotion — answer as usual" line
    strategy: str | None = None  # the mood whose rule the How to answer line follows
    quoted: list[str] = field(default_factory=list)  # Active Context lines that quote words
    lines: list[Line] = field(default_factory=list)
    frontmatter: str = ""


@dataclass
class Result:
    """One point's scores: metric -> right (absent: the metric does not apply)."""

    point: dict[str, Any]
    scores: dict[str, bool]
    shown: Shown | None
    plumbing: list[str]
    error: str | None = None
    says_guess: bool = False
    classes: dict[str, tuple[int, int]] = field(default_factory=dict)  # class -> (lines, tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the real-sessions folder")
    parser.add_argument(
        "--points",
        type=Path,
        action="append",
        help="a label file (repeatable; default: the blind, tuning and development sets)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list the failing points (not the blind's)"
    )
    parser.add_argument("--only", metavar="ID", help="replay one point, print the whole file")
    parser.add_argument("--machine-tz", default="UTC", help="the machine's own zone for the run")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="TREE",
        help="a copy of another version (`git archive REV | tar -x -C TREE`) whose assembly "
        "replays the same points in another process, reported beside this one's",
    )
    args = parser.parse_args()
    if not args.data.is_dir():
        print(
            f"skipped: no real session transcripts at {args.data} (put the real-sessions folder "
            "of the shared development data there, or pass --data PATH)"
        )
        return 0
    files = [f for f in (args.points or DEFAULT_SETS) if f.is_file()]
    if not files:
        print(f"skipped: no replay points at {', '.join(map(str, args.points or DEFAULT_SETS))}")
        return 0
    points = [point for path in files for point in _load_points(path)]
    if args.only:
        points = [p for p in points if p["id"] == args.only]
        if not points:
            print(f"no point {args.only!r} in {', '.join(map(str, files))}")
            return 2
        if points[0]["split"] == "blind":
            print(f"{args.only} is a blind point: its file and failures are not shown")
            return 2
    missing = sorted({p["file"] for p in points if not (args.data / p["file"]).is_file()})
    points = [p for p in points if (args.data / p["file"]).is_file()]
    _isolate(args.machine_tz)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-real-") as folder:
        show = bool(args.only)
        results = [_replay(point, args.data, Path(folder), show=show) for point in points]
    seconds = time.perf_counter() - started
    if args.only:
        _print_one(results[0])
        return 0
    baseline = None
    if args.baseline is not None:
        baseline = _baseline_results(args.baseline.resolve(), points, args.data, args.machine_tz)
    _report(results, args, files, missing, seconds, baseline)
    return 0


def _baseline_results(
    tree: Path, points: list[dict[str, Any]], data: Path, machine_tz: str
) -> list[Result]:
    """Replay the points with another version's code (`tree`) in another process: this
    benchmark's scoring, that version's assembly."""
    script = (
        "import sys, json, tempfile\n"
        f"sys.path[:0] = [{str(tree)!r}, {str(Path(__file__).parent)!r}]\n"
        "import assembler, bench_real_sessions as bench\n"
        "from pathlib import Path\n"
        f"assert Path(assembler.__file__).is_relative_to({str(tree)!r}), assembler.__file__\n"
        f"bench._isolate({machine_tz!r})\n"
        "points = json.loads(sys.stdin.read())\n"
        "with tempfile.TemporaryDirectory(prefix='bench-real-base-') as folder:\n"
        f"    found = [bench._replay(p, Path({str(data.resolve())!r}), Path(folder), show=False)\n"
        "             for p in points]\n"
        "print(json.dumps([[r.scores, r.classes, r.plumbing, r.error] for r in found]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(points),
        capture_output=True,
        text=True,
        cwd=tree,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the baseline in {tree} failed:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.splitlines()[-1])
    return [
        Result(
            point, scores, None, plumbing, error, classes={k: tuple(v) for k, v in classes.items()}
        )
        for point, (scores, classes, plumbing, error) in zip(points, rows, strict=True)
    ]


def _load_points(path: Path) -> list[dict[str, Any]]:
    """Given a label file, return its points, each with its `split` (the development set's
    points name none)."""
    points = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    for point in points:
        point.setdefault("split", "development")
    return points


def _isolate(machine_tz: str) -> None:
    """Keep the run away from the user's config and state, and fix the machine's zone."""
    home = Path(tempfile.mkdtemp(prefix="bench-real-home-"))
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        if name == "XDG_CACHE_HOME" and name in os.environ:
            continue  # the models' download cache stays where it is
        os.environ[name] = str(home / name.lower())
    for name in ("ASSEMBLER_CONFIG", "ASSEMBLER_CONFIG_HOME"):
        os.environ.pop(name, None)
    os.environ["TZ"] = machine_tz
    time.tzset()


def _replay(point: dict[str, Any], data: Path, folder: Path, *, show: bool) -> Result:
    """Given a point, assemble the file at its `now` from its session file and score it."""
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    workspace = folder / f"ws-{point['id']}"
    workspace.mkdir()
    config_file = folder / f"config-{point['id']}.toml"
    source = glob.escape(str((data / point["file"]).resolve()))
    config_file.write_text(
        f"[transcripts]\nsources = [{json.dumps(source)}]\n\n[memory]\nenabled = false\n",
        encoding="utf-8",
    )
    now = datetime.fromisoformat(point["now"].replace("Z", "+00:00"))
    try:
        config = load_config(workspace, config_file)
        assembly = run_once(config, now=now, dry_run=True, hosts=HOSTS)
    except Exception as error:  # a crash is a result of the benchmark
        if show:
            traceback.print_exc()
        where = _where(error)
        scores = {m: False for m in METRICS if _applies(m, point)}
        return Result(point, scores, None, [], error=f"{type(error).__name__}: {error}{where}")
    if show:
        print(f"--- {point['id']}: {point['file']} at {point['now']}\n{assembly.text}")
    shown = _read_shown(assembly.text)
    plumbing = _plumbing(shown.auto)
    if _quotes_host(shown.quoted, data / point["file"]):
        plumbing.append("a host turn quoted")
    scores = {
        "working on": _task_right(point, shown),
        "no host text": not plumbing,
        "mood": (shown.primary or "neutral") == point["mood"],
    }
    if point.get("mood_clear"):
        scores["mood (clear)"] = scores["mood"]
    says_guess = any(GUESS.search(line) for line in shown.time_lines)
    if point.get("zone"):
        scores["part of day"] = not says_guess and _part_right(point["part_of_day"], shown)
    else:
        scores["no zone claimed"] = not shown.time_lines or says_guess
    kind = KINDS.get(point["mood"])
    if point.get("mood_clear") and kind is not None:
        scores["strategy (clear)"] = shown.strategy is not None and KINDS[shown.strategy] == kind
    if point["mood"] == "neutral":
        alarm = shown.strategy is not None or (shown.primary or "neutral") != "neutral"
        scores["no false alarm"] = not alarm
    result = Result(point, scores, shown, plumbing, says_guess=says_guess)
    result.classes = _judge_lines(result)
    return result


def _where(error: BaseException) -> str:
    """The innermost frame of the project's code a crash came from, as ` (at module:line)`."""
    tb = error.__traceback__
    place = ""
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if "/assembler/" in path:
            place = f" (at {path.split('/assembler/', 1)[1]}:{tb.tb_lineno})"
        tb = tb.tb_next
    return place


def _applies(metric: str, point: dict[str, Any]) -> bool:
    if metric == "part of day":
        return bool(point.get("zone"))
    if metric == "mood (clear)":
        return bool(point.get("mood_clear"))
    return True


def _read_shown(text: str) -> Shown:
    """Given a rendered file, return its auto part and the lines the metrics read."""
    from assembler.file.codec import auto_part, split_frontmatter

    _, body = split_frontmatter(text)
    auto = auto_part(body)
    shown = Shown(auto=auto, working_on=None, frontmatter=text[: len(text) - len(body)])
    section = ""
    for line in auto.splitlines():
        if line.startswith("## "):
            section = line[3:].strip().lower()
            shown.lines.append(Line(section, None, "", line))
            continue
        if section.startswith("time"):
            shown.time_lines.append(line)
        item = ITEM.match(line)
        if item is None:
            shown.lines.append(Line(section, None, line, line))
            continue
        label, value = item["label"].strip(), item["text"].strip()
        shown.lines.append(Line(section, label, value, line))
        active = section.startswith("active")
        working = label.lower().startswith(("working on", "last task"))
        if active and working and not NO_TASK.search(value):
            shown.working_on, shown.working_label = value, label
        if active and label.lower().startswith(QUOTING):
            shown.quoted.append(value)
        if section.startswith("emotional") and label.lower() == "primary":
            shown.primary = value.split(" ", 1)[0].strip(",;()").lower()
        if section.startswith("emotional") and label.lower() == "mood":
            shown.unclear_mood = True
        if section.startswith("time") and shown.time_label is None:
            shown.time_label = label
        if section.startswith("response") and label.lower() == "how to answer":
            shown.strategy = _strategy_mood(value)
    return shown


def _strategy_mood(line: str) -> str | None:
    """The mood whose default rule a How to answer line follows (by the rule's style)."""
    from assembler.config.schema import StrategyConfig

    styles = sorted(
        ((rule.style, mood) for mood, rule in StrategyConfig().rules.items()),
        key=lambda pair: -len(pair[0]),
    )
    return next((mood for style, mood in styles if line.startswith(style)), None)


def _task_right(point: dict[str, Any], shown: Shown) -> bool:
    """Whether the Working on line says the labelled task (see the module docstring)."""
    line = shown.working_on
    says_finished = line is not None and bool(
        FINISHED_LABEL.search(shown.working_label) or FINISHED_NOTE.search(line)
    )
    keys: list[str] | None = point.get("task")
    if keys and line is not None and _keys_matched(keys, line) >= max(1, point["task_min"]):
        return True
    if not keys or point.get("finished"):
        return line is None or says_finished
    return False


def _keys_matched(keys: Sequence[str], text: str) -> int:
    folded = text.casefold()
    return sum(any(alt.casefold() in folded for alt in key.split("|") if alt) for key in keys)


def _part_right(label: str | None, shown: Shown) -> bool:
    """Whether the Time Context's part of the day, or its hour, falls in the labelled part."""
    if label is None:
        return False
    text = " ".join(shown.time_lines).lower()
    for word, part in PART_WORDS:
        if word in text:
            if part == label:
                return True
            break
    hour = HOUR.search(text)
    return hour is not None and _part_of_hour(int(hour.group(1))) == label


def _part_of_hour(hour: int) -> str:
    for part, hours in PARTS.items():
        ranges = hours if isinstance(hours, tuple) else (hours,)
        if any(hour in r for r in ranges):
            return part
    return "night"


def _judge_lines(result: Result) -> dict[str, tuple[int, int]]:
    """Given a point's result, return each class's lines and tokens of the file's auto part
    (frontmatter included, as overhead):

    - Working on: right when the task metric is, harmful when it quotes the host's text,
      else wrong; "Nothing known yet" is no news.
    - Primary mood: right when it is the label's; harmful when its valence is the other one
      (a positive mood for a negative label or the reverse); else wrong. The "no clear emotion
      — answer as usual" line: no news on a neutral label (what the model does without it),
      harmful on a clearly shown negative one, else wrong.
    - How to answer: right when its mood is of the label's kind (`KINDS`), harmful when the
      label is neutral or of the other valence, else wrong.
    - Time: a local time is right or wrong by the part of day where the zone is shown, and
      wrong where it is not (a claim nobody can check); a server time, with the human's zone
      unknown, is no news.
    - The routing hint with no Working on line is no news.
    - Headings, the title and blank lines are overhead, and so is the frontmatter (counted
      apart: the hooks' block leaves it out, the raw file has it); every other line
      (trajectories, topics, gaps, the routing hint beside a task) is unjudged.
    """
    from assembler.tokens import estimate_tokens

    point, shown = result.point, result.shown
    classes: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    if shown is None:
        return {}
    tokens["frontmatter"] += estimate_tokens(shown.frontmatter)
    for line in shown.lines:
        verdict = _judge(line, point, shown, result)
        classes[verdict] += 1
        tokens[verdict] += estimate_tokens(line.line + "\n")
    return {name: (classes[name], tokens[name]) for name in (*CLASSES, "frontmatter")}


def _judge(line: Line, point: dict[str, Any], shown: Shown, result: Result) -> str:
    """One auto line's class (see `_judge_lines`)."""
    label = (line.label or "").lower()
    if line.label is None:
        return "overhead" if not line.text.strip() or line.line.startswith("#") else "unjudged"
    section = line.section
    mood = point["mood"]
    if section.startswith("active") and label.startswith(("working on", "last task")):
        if NO_TASK.search(line.text):
            return "no news"
        if any(marker in line.text for marker in PLUMBING) or result.plumbing:
            return "harmful"
        return "right" if result.scores["working on"] else "wrong"
    if label.startswith("nothing known"):
        return "no news"
    if section.startswith("emotional") and label == "primary":
        if shown.primary == mood:
            return "right"
        return "harmful" if _opposed(shown.primary, mood) else "wrong"
    if section.startswith("emotional") and label == "mood":
        if mood == "neutral":
            return "no news"  # true, and what the model does without the line
        return "harmful" if point.get("mood_clear") and mood in NEGATIVE else "wrong"
    if section.startswith("response") and label == "how to answer":
        if shown.strategy is not None and shown.strategy == mood:
            return "right"
        if shown.strategy is not None and KINDS.get(mood) == KINDS[shown.strategy]:
            return "right"
        return "harmful" if mood == "neutral" or _opposed(shown.strategy, mood) else "wrong"
    if section.startswith("time"):
        if label.startswith("server"):
            return "no news"
        if not point.get("zone"):
            return "wrong"
        return "right" if result.scores.get("part of day") else "wrong"
    if section.startswith("routing") and shown.working_on is None:
        return "no news"
    return "unjudged"


def _opposed(shown: str | None, label: str) -> bool:
    """Whether a shown mood and a label are of opposite valence (neither neutral)."""
    if shown is None or shown not in KINDS or label not in KINDS:
        return False
    return (shown in NEGATIVE) != (label in NEGATIVE)


def _plumbing(auto: str) -> list[str]:
    """The host-text markers found in the auto part."""
    found = [marker for marker in PLUMBING if marker in auto]
    found += [name for name, pattern in PLUMBING_PATTERNS if pattern.search(auto)]
    return found


_SEGMENTS: dict[Path, tuple[list[str], list[str]]] = {}


def _quotes_host(lines: Sequence[str], path: Path) -> bool:
    """Whether one of the Active Context lines that quote words (Working on, Last topic) quotes
    a turn the host wrote (a cron report, a relay, a tool result, a command's expansion) and
    none of the human's."""
    if path not in _SEGMENTS:
        _SEGMENTS[path] = _host_segments(path)
    host, human = _SEGMENTS[path]
    for line in lines:
        quote = _normal(re.sub(r"\s*\(in [^()]*\)\s*$", "", line).rstrip("…").strip())
        if len(quote) >= 8 and any(quote in h for h in host) and not any(quote in h for h in human):
            return True
    return False


def _host_segments(path: Path) -> tuple[list[str], list[str]]:
    """Given a session file, return the text the host wrote in user turns and tool results, and
    the rest of the user turns' text (the human's words, with their wrappers), whitespace
    normalized. Compaction summaries are in neither: a summary's goal may be quoted."""
    host: list[str] = []
    human: list[str] = []
    for raw in path.read_text("utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        text = "\n".join(t for t in texts if isinstance(t, str))
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        host += [_normal(json.dumps(b.get("content"), ensure_ascii=False)) for b in results]
        if role == "toolResult":
            host.append(_normal(text))
        elif role != "user" or entry.get("isCompactSummary"):
            continue
        elif entry.get("isMeta"):
            host.append(_normal(text))
        else:
            turn_host, turn_human = _split_turn(text)
            host += [_normal(t) for t in turn_host]
            human.append(_normal(turn_human))
    return host, human


def _split_turn(text: str) -> tuple[list[str], str]:
    """Given a user turn's text, return the host's parts of it and the rest."""
    unstamped = STAMP.sub("", text, count=1)
    if unstamped.startswith(HOST_TURNS):
        return [text], ""
    host: list[str] = []
    if unstamped.startswith("System: ["):
        after = AFTER_RELAY.search(unstamped)
        if after is None:
            return [text], ""
        host.append(unstamped[: after.start()])
        unstamped = unstamped[after.end() :]
    blocks = FENCED.findall(unstamped)
    host += [b for b in blocks if '"body"' not in b]  # a chat-history block holds the human's
    return host, unstamped


def _normal(text: str) -> str:
    return " ".join(text.split())


def _host(point: dict[str, Any]) -> str:
    return point["file"].split("/", 1)[0]


def _ratio(right: int, total: int) -> str:
    return f"{right}/{total} ({right / total:.0%})" if total else "-"


def _report(
    results: list[Result],
    args: argparse.Namespace,
    files: list[Path],
    missing: list[str],
    seconds: float,
    baseline: list[Result] | None = None,
) -> None:
    """Print what data was used, then each split's figures (the blind split first, apart from
    the sets whose failures were read), and the failing points of those sets."""
    points = [r.point for r in results]
    sessions = Counter(_host(p) for p in {p["file"]: p for p in points}.values())
    print(
        f"data: {args.data}: {sum(sessions.values())} session files "
        f"({', '.join(f'{n} {h}' for h, n in sorted(sessions.items()))}), read in place"
    )
    for path in files:
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        print(f"labels: {shown}")
    print(
        f"run: run_once(dry_run=True) per point, memory off, time.timezone unset, machine zone "
        f"{args.machine_tz}; {seconds:.1f} s ({1000 * seconds / max(len(results), 1):.0f} ms "
        "a point)"
    )
    if missing:
        print(f"missing session files (their points skipped): {', '.join(missing)}")
    if baseline is not None:
        print(f"baseline: {args.baseline}, the same points replayed with its code")
    for split in SPLITS:
        chosen = [r for r in results if r.point["split"] == split]
        before = [r for r in baseline or () if r.point["split"] == split]
        if chosen:
            _report_split(split, chosen, before or None)
    failing = [
        r
        for r in results
        if r.point["split"] != "blind" and r.error is None and not all(r.scores.values())
    ]
    if args.verbose:
        print("\nfailing points (the blind split's are never listed):")
        for result in failing:
            _print_failure(result)
    elif failing:
        print(f"\n{len(failing)} points of the tuning and development sets fail a metric; -v lists")


def _report_split(split: str, results: list[Result], baseline: list[Result] | None) -> None:
    """Print one split's metrics (per fold where it has folds; beside the baseline's, given
    one), its line classes and errors."""
    points = [r.point for r in results]
    sessions = Counter(_host(p) for p in {p["file"]: p for p in points}.values())
    hosts = Counter(_host(p) for p in points)
    title = {
        "blind": "BLIND split (labelled before the rules changed; failures never read)",
        "tuning": "tuning set (failures read while writing rules)",
        "development": "development set (failures read while writing rules)",
    }[split]
    print(
        f"\n== {title}: {len(points)} points of {sum(sessions.values())} sessions "
        f"({', '.join(f'{n} {h}' for h, n in sorted(hosts.items()))})"
    )
    folds = sorted({p["fold"] for p in points if "fold" in p})
    header = f"{'metric':18} {'all':>16}" + "".join(f" {'fold ' + str(f):>16}" for f in folds)
    print(header + (f" {'baseline':>16}" if baseline else ""))
    for metric in METRICS:
        row = f"{metric:18} {_cell(results, metric, None):>16}"
        row += "".join(f" {_cell(results, metric, f):>16}" for f in folds)
        row += f" {_cell(baseline, metric, None):>16}" if baseline else ""
        print(row)
    for label, scored in (("", results), ("baseline: ", baseline or [])):
        calm = [r.scores["no false alarm"] for r in scored if "no false alarm" in r.scores]
        if calm:
            alarms = len(calm) - sum(calm)
            print(
                f"{label}false alarms: {alarms}/{len(calm)} ({alarms / len(calm):.0%}) of calm "
                "points"
            )
    _report_lines(results)
    if baseline:
        print("baseline: ", end="")
        _report_lines(baseline)
    errors = [r for r in results if r.error]
    if errors:
        kinds = Counter(r.error for r in errors)
        print(f"errors: {len(errors)} points raised (counted wrong on every metric):")
        for kind, n in kinds.most_common():
            print(f"  {n} x {kind}")
    found = Counter(m for r in results for m in r.plumbing)
    if found:
        print("host text in auto lines: " + ", ".join(f"{m!r} x{n}" for m, n in found.items()))


def _report_lines(results: list[Result]) -> None:
    """Print the auto lines and their tokens by class, and the two shares the targets read:
    wrong and harmful among the judged and unjudged lines, right among all the tokens."""
    lines: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for result in results:
        for name, (count, spent) in result.classes.items():
            lines[name] += count
            tokens[name] += spent
    items = sum(lines[c] for c in CLASSES if c != "overhead")
    auto = sum(tokens[c] for c in CLASSES)
    if not auto:
        return
    print(
        "auto lines by class (lines / tokens): "
        + ", ".join(f"{c} {lines[c]} / {tokens[c]}" for c in CLASSES)
        + f"; frontmatter {tokens['frontmatter']} tokens"
    )
    bad = lines["wrong"] + lines["harmful"]
    whole = auto + tokens["frontmatter"]
    print(
        f"wrong + harmful: {bad}/{items} auto lines ({bad / max(items, 1):.1%}); right: "
        f"{tokens['right'] / auto:.1%} of the auto part's tokens ({tokens['right'] / whole:.1%} "
        f"with the frontmatter); no news {tokens['no news'] / auto:.1%}, overhead "
        f"{tokens['overhead'] / auto:.1%}"
    )


def _cell(results: list[Result], metric: str, fold: int | None) -> str:
    scored = [
        r.scores[metric]
        for r in results
        if metric in r.scores and (fold is None or r.point.get("fold") == fold)
    ]
    return _ratio(sum(scored), len(scored))


def _print_failure(result: Result) -> None:
    point, shown = result.point, result.shown
    assert shown is not None
    wrong = [m for m, ok in result.scores.items() if not ok]
    print(f"- {point['id']} ({point['now']}): {', '.join(wrong)}")
    if "working on" in wrong:
        keys = " + ".join(point["task"]) if point.get("task") else "(no task)"
        fin = ", finished" if point.get("finished") else ""
        print(f"    working on: {shown.working_on!r}; label: {keys}{fin}")
    if "part of day" in wrong:
        print(f"    time: {' '.join(shown.time_lines).strip()!r}; label: {point['part_of_day']}")
    if "mood" in wrong or "no false alarm" in wrong:
        clear = ", clear" if point.get("mood_clear") else ""
        print(f"    mood: {shown.primary}; label: {point['mood']}{clear}")
    if "strategy (clear)" in wrong or "no false alarm" in wrong:
        print(f"    strategy: {shown.strategy}; label: {point['mood']}")
    if "no zone claimed" in wrong:
        print(f"    time: {' '.join(shown.time_lines).strip()!r}; the zone is not shown")
    if "no host text" in wrong:
        print(f"    host text: {', '.join(result.plumbing)}")


def _print_one(result: Result) -> None:
    print(f"--- scores of {result.point['id']}")
    if result.error:
        print(f"error: {result.error}")
    for metric, ok in result.scores.items():
        print(f"{metric:16} {'right' if ok else 'WRONG'}")
    if result.shown is not None and not all(result.scores.values()):
        _print_failure(result)
    print(f"label: {json.dumps(result.point, ensure_ascii=False)}")


if __name__ == "__main__":
    raise SystemExit(main())
