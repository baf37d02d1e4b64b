"""Benchmark: the status page's first data with a 7-day, 5,000-message window.

    python bench/bench_serve.py [--messages 5000] [--days 7] [--runs 15]

Data: synthetic, written by this script (our own sentences about deploys, reviews and a long
day): 5,000 human messages from three speakers, each answered by the agent (10,000 lines),
spread over 7 days, in a generic JSONL transcript of a temporary workspace, with a small
SCRATCHPAD.md and the example's assembly window (the last 6 hours, 60 messages). The mood
history holds the week, as a week of assemblies leaves it: every message scored once (timed).
Nothing is downloaded.

What is measured, over real HTTP against `assemble serve`'s server (uvicorn in this process):
- **page first data**: what a page needs before it can draw: the page itself, `/api/now` and
  `/api/mood?hours=168` (every message of the 7 days on the chart). First request after the
  server starts (cold: lazy imports, first queries) and warm (median of --runs).
- the two ways to get the mood of the window, in one run:
  **history**: the API's way, a query of the mood history (`.scratchpad/mood.sqlite`), which
  holds each message's mood scored once; vs **re-scoring**: reading the transcripts' window
  and scoring every human message again with the mood model, as a page without the history
  would per request (`read_recent` + `MoodModel.score_many` on a fresh model + the window).
Target: page first data under 200 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assembler.config.files import load_config
from assembler.file.codec import compose
from assembler.hosts.registry import HOSTS

NOW = datetime(2026, 3, 9, 23, 0, tzinfo=UTC)
SPEAKERS = ("ray", "priya", "sam")
OPENINGS = (
    "can you check why the {thing} failed again",
    "WHY is the {thing} still broken?? this is the third time today",
    "ok that fixed the {thing}, thanks a lot",
    "what does the {thing} do when the disk is full?",
    "ugh, the {thing} is flaky again, I just want it green",
    "nice, the {thing} looks good now. great work",
    "long day. I'm tired, let's leave the {thing} for tomorrow",
    "hmm, not sure I follow the {thing} change, can you explain",
    "urgent: the {thing} is down in prod, need a fix asap",
    "the {thing} review can wait until Monday",
)
THINGS = ("deploy", "migration", "helm chart", "release job", "backup", "rate limiter", "build")


def write_workspace(folder: Path, humans: int, days: int, seed: int = 7) -> int:
    """Write the synthetic workspace; return how many human messages it has."""
    messages = humans * 2
    rng = random.Random(seed)
    (folder / "transcripts").mkdir(parents=True)
    span = timedelta(days=days).total_seconds()
    lines = []
    humans = 0
    for i in range(messages):
        at = NOW - timedelta(seconds=span * (1 - i / messages)) + timedelta(seconds=1)
        human = i % 2 == 0
        if human:
            humans += 1
            text = rng.choice(OPENINGS).format(thing=rng.choice(THINGS))
            entry = {"role": "user", "content": f"{text} (#{i})", "speaker": rng.choice(SPEAKERS)}
        else:
            entry = {"role": "assistant", "content": f"On it: looking at step {i}."}
        entry["timestamp"] = at.isoformat().replace("+00:00", "Z")
        lines.append(json.dumps(entry))
    (folder / "transcripts" / "chat.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["transcripts/chat.jsonl"]\n'
        'lookback = "6h"\nmax_messages = 60\n'
        '[time]\ntimezone = "UTC"\n[memory]\nenabled = false\n'
    )
    meta = {
        "updated": NOW.isoformat(),
        "expires": (NOW + timedelta(minutes=30)).isoformat(),
        "tokens": {"auto": 400, "agent": 100, "total": 500, "caps": {"total": 2600}},
    }
    body = "# SCRATCHPAD.md\n\n## Emotional Context\n- **Primary:** tired (0.50)\n"
    (folder / "SCRATCHPAD.md").write_text(compose(meta, body))
    return humans


def get(url: str, token: str) -> tuple[float, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return (time.perf_counter() - started) * 1000, body


def first_data(base: str, token: str, hours: int) -> tuple[float, dict[str, float], int]:
    """Return the page's first data time (ms), each request's time, and the chart's points."""
    times = {}
    times["page"], _ = get(f"{base}/mood", token)
    times["now"], _ = get(f"{base}/api/now", token)
    times["mood"], body = get(f"{base}/api/mood?hours={hours}", token)
    points = sum(len(s["points"]) for s in json.loads(body)["speakers"])
    return sum(times.values()), times, points


def fill_week(config: object, days: int, messages: int) -> float:
    """Record the week's messages into the mood history, as the assemblies of a week do;
    return the ms it took (each message scored once)."""
    from assembler.mood.history import MoodHistory, history_path
    from assembler.mood.model import load_mood_model
    from assembler.transcripts.read import read_recent

    read = read_recent(
        ["transcripts/chat.jsonl"],
        base=config.workspace,  # type: ignore[attr-defined]
        now=NOW,
        max_messages=messages,
        lookback=timedelta(days=days),
        hosts=HOSTS,
    )
    started = time.perf_counter()
    with MoodHistory(history_path(config.state_dir)) as history:  # type: ignore[attr-defined]
        history.record(read.messages, load_mood_model())
    return (time.perf_counter() - started) * 1000


def rescore(config: object, days: int, messages: int) -> float:
    """Return the ms of the other way: read the window and score it all again."""
    from assembler.mood.model import load_mood_model
    from assembler.mood.window import read_window
    from assembler.transcripts.read import read_recent

    started = time.perf_counter()
    read = read_recent(
        ["transcripts/chat.jsonl"],
        base=config.workspace,  # type: ignore[attr-defined]
        now=NOW,
        max_messages=messages,
        lookback=timedelta(days=days),
        hosts=HOSTS,
    )
    model = load_mood_model(
        Path(__file__).resolve().parent.parent / "assembler" / "mood" / "weights" / "mood_model.npz"
    )  # a fresh model: its cache of recent texts would hide the scoring
    read_window(read.messages, now=NOW, half_life=timedelta(minutes=45), scorer=model, load=None)  # type: ignore[arg-type]
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=5000, help="human messages")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    from assembler.serve.app import StatusServer

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as temp:
        folder = Path(temp) / "ws"
        humans = write_workspace(folder, args.messages, args.days)
        config = load_config(str(folder), None)
        hours = args.days * 24

        fill_ms = fill_week(config, args.days, humans * 2)
        server = StatusServer(config, port=0, clock=lambda: NOW, poll_seconds=3600)
        server.start(timeout=120)  # returns once the watcher looked at the files
        base = f"http://127.0.0.1:{server.port}"
        try:
            cold, cold_parts, points = first_data(base, server.token, hours)
            warm_runs = [first_data(base, server.token, hours) for _ in range(args.runs)]
        finally:
            server.stop()
        rescored = [rescore(config, args.days, humans * 2) for _ in range(3)]

    warm = statistics.median(run[0] for run in warm_runs)
    parts = {k: statistics.median(run[1][k] for run in warm_runs) for k in cold_parts}
    mood_warm = parts["mood"]
    again = statistics.median(rescored)
    print(f"window: {humans} human messages (3 speakers) and as many replies over {args.days} days")
    print(f"chart points in /api/mood?hours={hours}: {points} (one per human message)")
    print(f"recording the week into the mood history (each message scored once): {fill_ms:.0f} ms")
    for label, total, each in (
        ("cold (first requests)", cold, cold_parts),
        (f"warm (median of {args.runs})", warm, parts),
    ):
        print(
            f"page first data, {label}: {total:.1f} ms "
            f"(page {each['page']:.1f}, now {each['now']:.1f}, mood {each['mood']:.1f})"
        )
    print(
        f"mood of the window: history {mood_warm:.1f} ms (HTTP, JSON of {points} points) vs "
        f"re-scoring the transcripts {again:.0f} ms (read + score + window, no HTTP): "
        f"ratio {again / mood_warm:.1f}"
    )
    verdict = "meets" if max(cold, warm) < 200 else "MISSES"
    print(f"target: page first data < 200 ms: {verdict} (cold {cold:.0f} ms, warm {warm:.0f} ms)")
    return 0 if points == humans else 1


if __name__ == "__main__":
    raise SystemExit(main())
