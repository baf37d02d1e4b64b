"""Benchmark: does "Working on" say the human's latest task? The chosen sentence against the old
keyword list, on the project's own conversation set (bench/conversations/working_on.jsonl).

    python bench/bench_working_on.py [--data bench/conversations/working_on.jsonl] [-v]

Each conversation (our own text) is written into its host's real shape in a temporary folder
(OpenClaw session JSONL with compactions and group-chat senders, Claude Code project JSONL
with slash commands, compaction summaries and `summary` title lines, or generic JSONL), read
back through `assembler.transcripts.read.read_recent` at five minutes after its last message, and
given to:

- new: `assembler.context.task.current_task`, the human's latest request;
- old: the key phrases of the window (`context.extract_topics`, recency-weighted, top 3
  joined), or the 'Goal' line of the newest compaction summary when there is one.

Gold, per conversation: the human turns (0-based, the human's own turns only) that belong to
the latest task, an item `[turn, "words"]` where only the sentence of that turn containing
those words does (a turn that closes one task and opens the next), and "summary"/"title"
where the host's newer summary or title is the right answer. A sentence is correct when it
comes from a gold turn (or is a summary where one is gold). The old keyword list is correct
when at least two of its three phrases occur in the gold turns' text (lenient: it is never
a sentence of the human's).

The rules of `assembler/context/task.py` (what is a request, a filler, an outcome, a
sign-off) were written against this set and the real-session development set
(bench/bench_real_sessions.py); see its two-fold figures there.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.hosts.registry import HOSTS

try:
    from assembler.context.active import extract_topics
    from assembler.context.task import TaskChoice, current_task
    from assembler.transcripts.message import Message, Summary
    from assembler.transcripts.read import read_recent
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.context.active import extract_topics
    from assembler.context.task import TaskChoice, current_task
    from assembler.transcripts.message import Message, Summary
    from assembler.transcripts.read import read_recent

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "bench" / "conversations" / "working_on.jsonl"
START = datetime(2026, 3, 5, 9, 0, tzinfo=UTC)
STEP = timedelta(minutes=3)  # between two messages
HALF_LIFE = timedelta(minutes=30)  # the mood half-life the old key phrases were weighted by
TARGET = 0.90


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every choice")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"skipped: no conversation set at {args.data}")
        return 0
    conversations = [json.loads(line) for line in args.data.read_text().splitlines() if line]
    methods: dict[str, list[bool]] = {"new": [], "old": []}
    seconds: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:
        for number, conversation in enumerate(conversations):
            messages, summaries, now = _read(conversation, Path(folder) / f"c{number}")
            humans = [t for role, t in conversation["turns"] if role == "u"]
            for name in methods:
                started = time.perf_counter()
                if name == "old":
                    answer = _old(messages, summaries, now)
                    ok = _old_correct(answer, conversation, humans)
                else:
                    choice = current_task(messages, summaries)
                    answer = choice.working_on or "(nothing)"
                    ok = _correct(choice, messages, conversation, humans)
                seconds[name] += time.perf_counter() - started
                methods[name].append(ok)
                if args.verbose or not ok:
                    mark = "ok  " if ok else "MISS"
                    print(f"  {mark} {name:17} {conversation['id']:32} {answer[:90]!r}")
    shapes = Counter(c["host"] + (" group" if c.get("group") else "") for c in conversations)
    extras = Counter(k for c in conversations for k in ("summary", "title") if k in c)
    print(
        f"\ndata: {args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data}"
        f": {len(conversations)} conversations ({', '.join(f'{n} {s}' for s, n in shapes.items())}"
        f"; {extras['summary']} with a compaction summary, {extras['title']} with a title), "
        "written by the project"
    )
    print("share of conversations whose Working on comes from the latest task (gold):")
    for name, results in methods.items():
        share = sum(results) / len(results)
        ms = 1000 * seconds[name] / len(results)
        print(f"  {name:17} {sum(results):2}/{len(results)} = {share:.0%}  ({ms:.1f} ms each)")
    old = sum(methods["old"]) / len(conversations)
    for name in methods:
        if name != "old":
            new = sum(methods[name]) / len(conversations)
            ratio = f"{new / old:.1f}x" if old else "inf"
            verdict = "meets" if new >= TARGET else "below"
            print(f"ratio {name} / old: {ratio} ({verdict} the {TARGET:.0%} target)")
    return 0


def _correct(
    choice: TaskChoice, messages: Sequence[Message], conversation: dict[str, Any], humans: list[str]
) -> bool:
    gold = conversation["gold"]
    if choice.from_summary:
        return "summary" in gold or "title" in gold
    if choice.message is None or choice.working_on is None:
        return False
    said = messages[choice.message].text
    sentence = choice.working_on.rstrip("…")
    for item in gold:
        if isinstance(item, int) and _same_turn(said, humans[item]):
            return True
        if isinstance(item, list) and _same_turn(said, humans[item[0]]):
            return item[1].lower() in sentence.lower()
    return False


def _same_turn(said: str, written: str) -> bool:
    """Whether a message read back is the turn written (a group chat's name prefix is moved to
    the sender field, a slash command keeps its arguments)."""
    return _plain(said) in _plain(written) or _plain(written) in _plain(said)


def _plain(text: str) -> str:
    text = re.sub(r"^[A-Z][a-z]+: ", "", text)
    return re.sub(r"\s+", " ", text.removeprefix("/")).strip().lower()


def _old(messages: Sequence[Message], summaries: Sequence[Summary], now: datetime) -> str:
    """What the previous release showed as Working on."""
    for summary in reversed(summaries):
        if summary.kind != "compaction":
            continue  # titles were not read then
        match = re.search(r"^#+\s*Goal\s*\n+\s*(?:[-*]\s*)?(.+)$", summary.text, re.M | re.I)
        if match and match.group(1).strip() not in ("...", ""):
            return "GOAL: " + match.group(1).strip()[:120]
    weights = [
        0.5 ** (max((now - m.timestamp).total_seconds(), 0.0) / HALF_LIFE.total_seconds())
        if m.timestamp
        else 1.0
        for m in messages
    ]
    topics = extract_topics([m.text for m in messages], weights, limit=5)
    return ", ".join(t.phrase for t in topics[:3]) or "(nothing)"


def _old_correct(answer: str, conversation: dict[str, Any], humans: list[str]) -> bool:
    gold = conversation["gold"]
    if answer.startswith("GOAL: "):
        return "summary" in gold
    turns = [
        item if isinstance(item, int) else item[0]
        for item in gold
        if item not in ("summary", "title")
    ]
    text = " ".join(humans[i] for i in turns).lower()
    phrases = [p.strip().lower() for p in answer.split(",") if p.strip()]
    return bool(phrases) and sum(p in text for p in phrases) >= min(2, len(phrases))


# --------------------------------------------------------------------------------------------
# Writing a conversation in its host's shape, and reading it back.
# --------------------------------------------------------------------------------------------


def _read(
    conversation: dict[str, Any], folder: Path
) -> tuple[list[Message], list[Summary], datetime]:
    folder.mkdir(parents=True)
    host = conversation["host"]
    path = folder / f"{uuid.uuid5(uuid.NAMESPACE_URL, conversation['id'])}.jsonl"
    lines = {"openclaw": _openclaw, "claude-code": _claude, "generic": _generic}[host](conversation)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    now = START + STEP * len(conversation["turns"]) + timedelta(minutes=5)
    read = read_recent(
        [str(path)], base=folder, now=now, max_messages=60, lookback=timedelta(hours=6), hosts=HOSTS
    )
    return read.messages, read.summaries, now


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _at(index: int) -> datetime:
    return START + STEP * index


def _openclaw(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    session = str(uuid.uuid5(uuid.NAMESPACE_DNS, conversation["id"]))
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": session,
            "timestamp": _iso(START - STEP),
            "cwd": "/home/ray/.openclaw/workspace",
        }
    ]
    parent: str | None = None
    summary = conversation.get("summary")
    for index, (role, text) in enumerate(conversation["turns"]):
        key = f"{index:08x}"
        message: dict[str, Any] = {
            "role": "user" if role == "u" else "assistant",
            "content": [{"type": "text", "text": text}],
            "timestamp": math.floor(_at(index).timestamp() * 1000),
        }
        entry: dict[str, Any] = {
            "type": "message",
            "id": key,
            "parentId": parent,
            "timestamp": _iso(_at(index)),
            "message": message,
        }
        if conversation.get("group") and role == "u":
            name, _, words = text.partition(": ")
            entry["senderName"] = name
            message["content"] = [{"type": "text", "text": words}]
        lines.append(entry)
        parent = key
        if summary is not None and summary["after"] == index:
            compaction = f"c{index:07x}"
            lines.append(
                {
                    "type": "compaction",
                    "id": compaction,
                    "parentId": parent,
                    "timestamp": _iso(_at(index) + timedelta(seconds=30)),
                    "summary": summary["text"],
                    "firstKeptEntryId": key,  # the newest message stays, the rest is summarised
                    "tokensBefore": 150_000,
                }
            )
            parent = compaction
    return lines


def _claude(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    session = str(uuid.uuid5(uuid.NAMESPACE_DNS, conversation["id"]))
    common = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ray/src/project",
        "sessionId": session,
        "version": "2.0.31",
        "gitBranch": "main",
    }
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    summary = conversation.get("summary")
    if summary is not None and summary["after"] == -1:
        boundary = str(uuid.uuid5(uuid.NAMESPACE_OID, conversation["id"] + "boundary"))
        lines.append(
            {
                **common,
                "parentUuid": None,
                "logicalParentUuid": str(uuid.uuid4()),
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "uuid": boundary,
                "timestamp": _iso(START - STEP),
            }
        )
        key = str(uuid.uuid5(uuid.NAMESPACE_OID, conversation["id"] + "summary"))
        lines.append(
            {
                **common,
                "parentUuid": boundary,
                "type": "user",
                "isCompactSummary": True,
                "message": {"role": "user", "content": summary["text"]},
                "uuid": key,
                "timestamp": _iso(START - STEP / 2),
            }
        )
        parent = key
    keys: list[str] = []
    for index, (role, text) in enumerate(conversation["turns"]):
        key = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{conversation['id']}/{index}"))
        keys.append(key)
        if role == "u":
            if text.startswith("/"):
                name, _, rest = text[1:].partition(" ")
                text = (
                    f"<command-message>{name}</command-message>\n"
                    f"<command-name>/{name}</command-name>\n<command-args>{rest}</command-args>"
                )
            body: dict[str, Any] = {"role": "user", "content": text}
        else:
            body = {
                "model": "claude-sonnet-4-5",
                "id": f"msg_{index:04d}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            }
        lines.append(
            {
                **common,
                "parentUuid": parent,
                "type": "user" if role == "u" else "assistant",
                "message": body,
                "uuid": key,
                "timestamp": _iso(_at(index)),
            }
        )
        parent = key
    title = conversation.get("title")
    if title is not None:
        lines.append(
            {"type": "summary", "summary": title["text"], "leafUuid": keys[title["after"]]}
        )
    return lines


def _generic(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user" if role == "u" else "assistant", "content": text, "timestamp": _iso(_at(i))}
        for i, (role, text) in enumerate(conversation["turns"])
    ]


if __name__ == "__main__":
    sys.exit(main())
