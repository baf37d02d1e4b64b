"""Benchmark: one daemon for every workspace (`assemble daemon --all`) next to one daemon per
workspace (`assemble daemon --workspace W` each): their resident memory and the latency of the
Claude Code hook that asks them for the block with the prompt counted.

The data, written by this script (nothing is downloaded): N synthetic workspaces (default 10)
in a temp folder, each about a made-up project of its own: MEMORY.md and three memory/*.md
notes of a few paragraphs, a generic JSONL transcript (`chat/session.jsonl`, twelve messages)
and an `assembler.toml` that reads it whole (`lookback = "none"`). The memory search is on with
the default config: the bundled embedding model (all-MiniLM-L6-v2, its ONNX export made by
`make setup`), so the point of one process, one copy of the models, is measured.

HOME, ASSEMBLER_STATE_HOME and XDG_* point into the temp folder, so nothing of the user's is
read or touched; $SCRATCHPAD_ASSEMBLER_MODELS is passed on as it is (the export is found where
`make setup` made it). The workspaces are registered in `<state>/workspaces.json`
(`register_workspace`), which `--all` serves.

In one run, each way on fresh copies of the same workspaces:
(a) `assemble daemon --all`: one process for all of them;
(b) one `assemble daemon --workspace W` per workspace.
Each is ready once every workspace's SCRATCHPAD.md exists and a hook prompt of each was answered
by its daemon. Then the resident memory: the sum of VmRSS (/proc/PID/status) over the daemon
processes and their children (PSS from /proc/PID/smaps_rollup beside it: the ten processes
share their libraries' pages, which RSS counts in each); then `assemble hook claude-code
--workspace W` is run --prompts times per workspace (in turn: workspace 1, 2, ..., 1, 2, ...),
each a UserPromptSubmit event whose prompt names a task of its own, and the whole subprocess's
wall time is taken. The hook's output names that task only when the daemon answered with the
prompt counted (within the default 150 ms budget), so the answers are counted too.

Targets (printed, not asserted): one daemon <= 300 MiB for ten workspaces; the hook's latency
unchanged: median and p90 each <= +100 ms over the ten daemons'.

    python bench/bench_fleet.py [--workspaces 10] [--prompts 10] [--verbose] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import IO

try:
    from assembler.memory.embeddings import BUNDLED_MODEL_ID, bundled_export_folder
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.memory.embeddings import BUNDLED_MODEL_ID, bundled_export_folder
from assembler.memory.export import MODELS_ENV
from assembler.memory.onnx_embedder import is_export

RSS_TARGET_MIB = 300.0
LATENCY_TARGET_MS = 100.0
NOTES_PER_WORKSPACE = 4  # MEMORY.md and three memory/*.md
ASSEMBLE = Path(sys.executable).parent / "assemble"

# One made-up project per workspace: who, what, its parts, a recurring problem, a place.
THEMES: tuple[tuple[str, str, str, tuple[str, ...], str, str], ...] = (
    (
        "Kim",
        "a bakery in Leeds",
        "the oven controller",
        ("Modbus bridge", "proofing cabinet", "sourdough order form", "flour mill"),
        "the Modbus link drops when the flour mill starts",
        "the back kitchen",
    ),
    (
        "Oskar",
        "a bike-share scheme in Malmö",
        "the dock telemetry",
        ("LoRa gateway", "battery report", "rebalancing van", "dock firmware"),
        "docks on the harbour side stop reporting after rain",
        "the depot by the harbour",
    ),
    (
        "Amara",
        "an orchid greenhouse in Accra",
        "the humidity sensors",
        ("misting pump", "sensor mesh", "shade cloth motor", "grower dashboard"),
        "the mesh loses nodes when the misting pump runs",
        "greenhouse three",
    ),
    (
        "Teodor",
        "a community radio station in Cluj",
        "the playout server",
        ("jingle library", "stream encoder", "studio mixer", "night schedule"),
        "the encoder stutters at the top of every hour",
        "studio B",
    ),
    (
        "Marisol",
        "a ferry ticket office in Valparaíso",
        "the ticket kiosks",
        ("receipt printer", "fare table", "card reader", "tide timetable"),
        "the card reader times out when the fog horn test runs",
        "the pier office",
    ),
    (
        "Hiroshi",
        "a sake brewery in Niigata",
        "the fermentation logger",
        ("tank thermometers", "rice polishing log", "koji room", "bottling line"),
        "tank seven reads two degrees warm after every wash",
        "the koji room",
    ),
    (
        "Ingrid",
        "a ski lift operator in Tromsø",
        "the lift status board",
        ("wind sensor", "chairlift brake log", "lift pass scanner", "avalanche bulletin"),
        "the wind sensor freezes and reports zero in a storm",
        "the top station",
    ),
    (
        "Dev",
        "a spice wholesaler in Kochi",
        "the warehouse scales",
        ("pallet scanner", "cardamom grading sheet", "dehumidifier", "export invoices"),
        "the scales drift when the dehumidifier cycles",
        "godown two",
    ),
    (
        "Lucia",
        "a puppet theatre in Palermo",
        "the stage lighting desk",
        ("DMX dimmers", "cue sheet", "fog machine", "ticket app"),
        "the dimmers flicker when the fog machine heats up",
        "the main stage",
    ),
    (
        "Nnamdi",
        "a solar mini-grid in Jos",
        "the inverter monitor",
        ("battery bank", "meter tokens", "panel washer rota", "grid dashboard"),
        "the inverter reports a fault at dusk on cloudy days",
        "the control hut",
    ),
)
ASKS = (
    "can you {verb} the {part} for {tag}?",
    "please {verb} the {part} before lunch ({tag})",
    "next: {verb} the {part}, it is {tag}",
    "ok, time to {verb} the {part} — {tag}",
)
VERBS = ("recalibrate", "rewire", "document", "test", "reset", "inspect", "patch", "label")


def _percentile(values: Sequence[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# -- the workspaces ----------------------------------------------------------------------


def write_workspace(folder: Path, index: int, now: datetime) -> None:
    """Write one synthetic workspace: its notes, its transcript and its config."""
    who, org, system, parts, problem, place = THEMES[index % len(THEMES)]
    round_ = f" (copy {index // len(THEMES) + 1})" if index >= len(THEMES) else ""
    (folder / "memory").mkdir(parents=True)
    (folder / "chat").mkdir()
    (folder / "MEMORY.md").write_text(
        f"# MEMORY.md — what I know about {who}{round_}\n\n"
        f"## {who}\n"
        f"- {who} looks after {system} at {org}, mostly alone, and answers from {place}.\n"
        f"- Likes the command first and the explanation after; hates long preambles.\n"
        f"- The recurring pain: {problem}.\n\n"
        f"## Decisions\n"
        f"- The {parts[0]} stays on its own power supply since the last outage.\n"
        f"- Changes to the {parts[1]} go through a written note in memory/ first.\n"
    )
    for n, part in enumerate(parts[:3]):
        (folder / "memory" / f"{part.replace(' ', '-')}.md").write_text(
            f"# The {part}\n\n"
            f"The {part} at {org} was set up by {who} two winters ago and has been patched "
            f"since. It sits in {place}, next to the {parts[(n + 1) % len(parts)]}.\n\n"
            f"When it misbehaves the first thing to check is whether {problem}; the log "
            f"for the {part} keeps a week, so look at yesterday's lines before restarting.\n\n"
            f"Open question {n + 1}: whether the {part} should move off {system} entirely, "
            f"which {who} wants to decide after the next quiet week.\n"
        )
    said = [
        f"morning! {problem} again, can you look",
        f"Looking at the {parts[0]} log now.",
        f"thanks. also the {parts[1]} needs a check",
        f"Noted, I'll check the {parts[1]} after the {parts[0]}.",
        f"any idea why {system} is slow today?",
        f"The {parts[2]} is retrying every few seconds; that is most of the load.",
        f"ugh, ok. can we make the {parts[2]} back off",
        "Done: it now backs off up to a minute between tries.",
        "great, that helps a lot",
        f"Anything else for {place} today?",
        f"let's write down what we learned about the {parts[3]}",
        f"I'll add a note on the {parts[3]} to memory.",
    ]
    lines = []
    for i, text in enumerate(said):
        at = now - timedelta(minutes=2 * (len(said) - i))
        role = "user" if i % 2 == 0 else "assistant"
        stamp = at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        lines.append(json.dumps({"role": role, "content": text, "timestamp": stamp}))
    (folder / "chat" / "session.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat/*.jsonl"]\nlookback = "none"\n'
    )


def make_workspaces(parent: Path, count: int) -> list[Path]:
    """Write `count` workspaces under `parent`; return their folders."""
    now = datetime.now(UTC)
    folders = [parent / f"ws{i + 1:02d}" for i in range(count)]
    for i, folder in enumerate(folders):
        write_workspace(folder, i, now)
    return folders


def bench_env(root: Path) -> dict[str, str]:
    """Return the environment of every process started here: HOME, the state folder and
    XDG_* inside `root`; the models' folder (if set) and PATH as they are; nothing else."""
    home = root / "home"
    runtime = root / "runtime"
    for folder in (home, runtime):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "ASSEMBLER_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    if MODELS_ENV in os.environ:
        env[MODELS_ENV] = os.environ[MODELS_ENV]
    return env


def register(folders: Sequence[Path], env: dict[str, str]) -> None:
    """List the workspaces in `<state>/workspaces.json`, in a process with the bench's env."""
    code = (
        "import sys; from pathlib import Path\n"
        "from assembler.config.projects import register_workspace\n"
        "for folder in sys.argv[1:]: register_workspace(Path(folder))\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, *map(str, folders)], env=env, check=True, timeout=60
    )


# -- the daemons -------------------------------------------------------------------------


@dataclass
class Daemon:
    """A daemon process started here, and the file its stderr goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]


@dataclass
class Daemons:
    """Every daemon process started here; `stop` ends them, however the run ends."""

    running: list[Daemon] = field(default_factory=list)

    def start(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> Daemon:
        log_path = logs / f"{name}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            [str(ASSEMBLE), "daemon", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group: its children are ended with it
        )
        daemon = Daemon(name, process, log_path, log)
        self.running.append(daemon)
        return daemon

    def stop(self, timeout: float = 60.0) -> dict[str, int | None]:
        """SIGTERM each daemon, wait for them (SIGKILL past `timeout`), and end whatever is
        left in their process groups; return each one's exit status. A Ctrl-C meanwhile is
        ignored: the daemons are stopped first."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return self._stop(timeout)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _stop(self, timeout: float) -> dict[str, int | None]:
        for daemon in self.running:
            if daemon.process.poll() is None:
                _signal(daemon.process.pid, signal.SIGTERM, group=False)
        deadline = time.monotonic() + timeout
        codes: dict[str, int | None] = {}
        for daemon in self.running:
            try:
                daemon.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                print(f"{daemon.name} did not stop within {timeout:.0f} s: killed", flush=True)
                _signal(daemon.process.pid, signal.SIGKILL, group=True)
                daemon.process.wait()
            _signal(daemon.process.pid, signal.SIGKILL, group=True)  # leftovers, if any
            codes[daemon.name] = daemon.process.returncode
            daemon.log.close()
        self.running.clear()
        return codes


def _signal(pid: int, sig: signal.Signals, *, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def process_tree(pid: int) -> list[int]:
    """Given a pid, return it and its descendants' (from /proc/PID/task/TID/children)."""
    found = [pid]
    for parent in found:
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    found.extend(int(child) for child in children.read().split())
            except OSError:
                continue
    return found


def _kib(path: str, key: str) -> int:
    try:
        with open(path) as file:
            for line in file:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_s(pid: int) -> float:
    """Given a pid, return its user + system time so far (all its threads), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Memory:
    """Resident memory summed over processes, in MiB, and their CPU time so far."""

    rss: float
    pss: float
    processes: int
    cpu_s: float


def resident(daemons: Sequence[Daemon]) -> Memory:
    """Return the summed VmRSS and PSS of the daemons and their children (and CPU time)."""
    pids = [pid for d in daemons for pid in process_tree(d.process.pid)]
    rss = sum(_kib(f"/proc/{pid}/status", "VmRSS:") for pid in pids)
    pss = sum(_kib(f"/proc/{pid}/smaps_rollup", "Pss:") for pid in pids)
    return Memory(rss / 1024, pss / 1024, len(pids), sum(_cpu_s(pid) for pid in pids))


# -- the hook ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HookRun:
    ms: float
    cpu_ms: float  # the hook process's own user + system time
    answered: bool  # the output names the prompt's task: the daemon answered with it counted
    failed: str | None  # the hook's stderr when it exited non-zero


def run_hook(workspace: Path, prompt: str, phrase: str, env: dict[str, str]) -> HookRun:
    """Run `assemble hook claude-code` for a UserPromptSubmit event in `workspace`, timed."""
    event = json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "cwd": str(workspace),
            "session_id": f"bench-{workspace.name}",
            "transcript_path": str(workspace / "chat" / "session.jsonl"),
            "prompt": prompt,
        }
    )
    command = [str(ASSEMBLE), "hook", "claude-code", "--workspace", str(workspace)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        command, input=event, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    ms = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    failed = (result.stderr.strip() or f"exit {result.returncode}") if result.returncode else None
    return HookRun(ms, cpu * 1000, phrase in result.stdout, failed)


def prompt_for(workspace: Path, index: int, n: int, kind: str = "task") -> tuple[str, str]:
    """Return a prompt for the workspace, and the phrase of it that only this prompt has."""
    parts = THEMES[index % len(THEMES)][3]
    tag = f"{kind} {workspace.name}-{n:02d}"
    ask = ASKS[n % len(ASKS)].format(verb=VERBS[n % len(VERBS)], part=parts[n % 4], tag=tag)
    return ask, tag


# -- one way of serving, measured ---------------------------------------------------------


@dataclass
class Measured:
    label: str
    files_s: float | None = None  # every SCRATCHPAD.md written, after the start
    answering_s: float | None = None  # every workspace's first prompt answered
    settled: Memory | None = None
    after: Memory | None = None
    runs: list[HookRun] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # never served (no file or no answer)
    exits: dict[str, int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # 1-minute load average: start, prompts, end

    @property
    def times(self) -> list[float]:
        return [run.ms for run in self.runs]

    @property
    def answered(self) -> int:
        return sum(run.answered for run in self.runs)


def wait_ready(
    measured: Measured,
    daemons: Sequence[Daemon],
    folders: Sequence[Path],
    env: dict[str, str],
    started: float,
    timeout: float,
) -> None:
    """Wait until every workspace's SCRATCHPAD.md exists, then until each answered a hook's
    prompt (the daemon's answer names the prompt's task); note the workspaces that did not
    within `timeout`, and daemons that ended."""
    deadline = started + timeout
    waiting = set(folders)
    while waiting and time.monotonic() < deadline and _alive(daemons, measured):
        waiting = {folder for folder in waiting if not (folder / "SCRATCHPAD.md").exists()}
        if waiting:
            time.sleep(0.25)
    if not waiting:
        measured.files_s = time.monotonic() - started
    for folder in sorted(waiting):
        measured.missing.append(f"{folder.name}: no SCRATCHPAD.md after {timeout:.0f} s")
    tries = dict.fromkeys(folders, 0)
    unanswered = [folder for folder in folders if folder not in waiting]
    while unanswered and time.monotonic() < deadline and _alive(daemons, measured):
        for folder in list(unanswered):
            prompt, phrase = prompt_for(folder, folders.index(folder), tries[folder], "warm-up")
            tries[folder] += 1
            run = run_hook(folder, prompt, phrase, env)
            if run.failed:
                measured.notes.append(f"{folder.name}: warm-up hook failed: {run.failed}")
            if run.answered:
                unanswered.remove(folder)
        if unanswered:
            time.sleep(0.25)
    if not unanswered and not waiting:
        measured.answering_s = time.monotonic() - started
    for folder in unanswered:
        measured.missing.append(
            f"{folder.name}: no hook prompt answered by its daemon in {tries[folder]} tries"
        )


def _alive(daemons: Sequence[Daemon], measured: Measured) -> bool:
    for daemon in daemons:
        code = daemon.process.poll()
        if code is not None:
            note = f"{daemon.name} ended early (exit {code})"
            if note not in measured.notes:
                measured.notes.append(note)
            return False
    return True


def measure(
    measured: Measured,
    daemons: Sequence[Daemon],
    folders: Sequence[Path],
    env: dict[str, str],
    prompts: int,
    started: float,
    timeout: float,
) -> None:
    wait_ready(measured, daemons, folders, env, started, timeout)
    if not _alive(daemons, measured):
        return
    time.sleep(3)  # the nudged assemblies of the warm-up prompts end
    measured.settled = resident(daemons)
    measured.load.append(os.getloadavg()[0])
    for n in range(prompts):
        for index, folder in enumerate(folders):
            prompt, phrase = prompt_for(folder, index, n)
            run = run_hook(folder, prompt, phrase, env)
            measured.runs.append(run)
            if run.failed and len(measured.notes) < 5:
                measured.notes.append(f"{folder.name}: hook failed: {run.failed}")
    measured.after = resident(daemons)
    measured.load.append(os.getloadavg()[0])


def serve_all(root: Path, args: argparse.Namespace, logs: Path, daemons: Daemons) -> Measured:
    """(a): one `assemble daemon --all` for every workspace."""
    env = bench_env(root)
    folders = make_workspaces(root / "workspaces", args.workspaces)
    register(folders, env)
    measured = Measured("one daemon --all")
    measured.load.append(os.getloadavg()[0])
    started = time.monotonic()
    fleet = daemons.start("fleet", ["--all", *_verbosity(args)], env, logs)
    try:
        measure(measured, [fleet], folders, env, args.prompts, started, args.timeout)
        record = _read_json(Path(env["ASSEMBLER_STATE_HOME"]) / "daemon-all.json")
        if record is not None:
            served = record.get("workspaces", [])
            left = record.get("left_out", [])
            measured.notes.append(
                f"its record (daemon-all.json): {len(served)} served, {len(left)} left out"
                + "".join(f"\n    left out {e.get('workspace')}: {e.get('why')}" for e in left)
            )
    finally:
        measured.exits = daemons.stop()
    if measured.missing:
        measured.notes += _log_lines(logs / "fleet.log", folders, measured.missing)
    return measured


def serve_each(root: Path, args: argparse.Namespace, logs: Path, daemons: Daemons) -> Measured:
    """(b): one `assemble daemon --workspace W` per workspace."""
    env = bench_env(root)
    folders = make_workspaces(root / "workspaces", args.workspaces)
    measured = Measured(f"{len(folders)} daemons")
    measured.load.append(os.getloadavg()[0])
    started = time.monotonic()
    each = [
        daemons.start(folder.name, ["--workspace", str(folder), *_verbosity(args)], env, logs)
        for folder in folders
    ]
    try:
        measure(measured, each, folders, env, args.prompts, started, args.timeout)
    finally:
        measured.exits = daemons.stop()
    for missing in measured.missing:
        name = missing.split(":")[0]
        measured.notes += _log_lines(logs / f"{name}.log", folders, [missing])
    return measured


def _verbosity(args: argparse.Namespace) -> list[str]:
    return ["-v"] if args.verbose else []


def _read_json(path: Path) -> dict[str, list[dict[str, str]]] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _log_lines(log: Path, folders: Sequence[Path], missing: Sequence[str]) -> Iterator[str]:
    """Yield the log's lines about the workspaces not served, its warnings and errors."""
    names = {m.split(":")[0] for m in missing}
    paths = [str(f) for f in folders if f.name in names]
    yield f"from {log}:"
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError as error:
        yield f"    (cannot read it: {error})"
        return
    shown = [
        line
        for line in lines
        if any(p in line for p in paths) or " WARNING " in line or " ERROR " in line
    ]
    for line in shown[-40:] or lines[-20:]:
        yield f"    {line}"


# -- the report --------------------------------------------------------------------------


def report(args: argparse.Namespace, one: Measured, many: Measured, logs: Path | None) -> None:
    export = bundled_export_folder()
    runs = args.workspaces * args.prompts
    print(
        f"data: {args.workspaces} synthetic workspaces (made up by this script: "
        f"{NOTES_PER_WORKSPACE} memory notes each, MEMORY.md + 3 memory/*.md of 3 paragraphs; "
        "a 12-message generic JSONL transcript each, read whole); memory search on with the "
        f"bundled model {BUNDLED_MODEL_ID} (ONNX export in {export}); "
        f"{args.prompts} hook prompts per workspace, {runs} per way"
    )
    for m in (one, many):
        files = f"{m.files_s:.1f} s" if m.files_s is not None else "never"
        answering = f"{m.answering_s:.1f} s" if m.answering_s is not None else "never"
        print(
            f"{m.label}: every SCRATCHPAD.md after {files}, every workspace answering a "
            f"prompt after {answering}; exit status {_exits(m.exits)}; machine load (1-min "
            f"average) at the start, the prompts' start and end: "
            + ", ".join(f"{load:.1f}" for load in m.load)
        )
        for line in m.missing:
            print(f"  NOT SERVED: {line}")
        for note in m.notes:
            print(f"  {note}")
    print(
        "resident memory: sum of VmRSS (/proc/PID/status) over the daemons and their children, "
        "MiB; PSS (smaps_rollup) beside it"
    )
    for when, a, b in (
        ("after every workspace answered", one.settled, many.settled),
        (f"after the {runs} prompts", one.after, many.after),
    ):
        if a is None or b is None:
            print(f"  {when}: not measured")
            continue
        print(
            f"  {when}: one {a.rss:.0f} MiB ({a.processes} process, PSS {a.pss:.0f}) vs "
            f"{len(many.exits)} daemons {b.rss:.0f} MiB ({b.processes} processes, "
            f"PSS {b.pss:.0f}): ratio {b.rss / a.rss:.1f}x (RSS), {b.pss / a.pss:.1f}x (PSS)"
        )
    print(
        "hook latency: whole `assemble hook claude-code` subprocess wall time, ms "
        "(prompt answered by the daemon = its output names the prompt's task)"
    )
    stats: dict[str, tuple[float, float]] = {}
    for m in (one, many):
        if len(m.times) < 2:
            print(f"  {m.label}: not measured")
            continue
        median, p90 = statistics.median(m.times), _percentile(m.times, 90)
        stats[m.label] = (median, p90)
        failed = sum(run.failed is not None for run in m.runs)
        print(
            f"  {m.label + ':':18} median {median:6.1f}, p90 {p90:6.1f}, min {min(m.times):.1f}, "
            f"max {max(m.times):.1f}; answered by the daemon {m.answered}/{len(m.runs)}"
            + (f"; {failed} failed" if failed else "")
        )
        daemon_cpu = ""
        if m.settled is not None and m.after is not None:
            per = (m.after.cpu_s - m.settled.cpu_s) * 1000 / len(m.runs)
            daemon_cpu = f"; the daemons' CPU time {per:.0f} ms per prompt"
        print(
            f"  {'':18} CPU time: the hook process's median "
            f"{statistics.median(r.cpu_ms for r in m.runs):.0f} ms{daemon_cpu}"
        )
    if len(stats) == 2:
        (m1, p1), (m2, p2) = stats[one.label], stats[many.label]
        print(
            f"  difference (one daemon - {len(many.exits)} daemons): median {m1 - m2:+.1f} ms, "
            f"p90 {p1 - p2:+.1f} ms"
        )
    print("targets:")
    if one.settled is not None:
        rss = max(one.settled.rss, one.after.rss if one.after else 0.0)
        verdict = "PASS" if rss <= RSS_TARGET_MIB and not one.missing else "FAIL"
        print(
            f"  one daemon <= {RSS_TARGET_MIB:.0f} MiB for the {args.workspaces} workspaces: "
            f"{verdict} ({rss:.0f} MiB, the larger of the two measurements"
            + (f"; {len(one.missing)} workspaces not served" if one.missing else "")
            + ")"
        )
    else:
        print(f"  one daemon <= {RSS_TARGET_MIB:.0f} MiB: FAIL (not measured)")
    if len(stats) == 2:
        (m1, p1), (m2, p2) = stats[one.label], stats[many.label]
        ok = m1 - m2 <= LATENCY_TARGET_MS and p1 - p2 <= LATENCY_TARGET_MS
        print(
            f"  hook latency unchanged (median and p90 <= +{LATENCY_TARGET_MS:.0f} ms vs the "
            f"{len(many.exits)} daemons): {'PASS' if ok else 'FAIL'} (median {m1 - m2:+.1f} ms, "
            f"p90 {p1 - p2:+.1f} ms)"
        )
    else:
        print(f"  hook latency <= +{LATENCY_TARGET_MS:.0f} ms: FAIL (not measured)")
    if logs is not None:
        print(f"daemon logs: {logs}")


def _exits(codes: dict[str, int | None]) -> str:
    values = sorted({str(code) for code in codes.values()})
    return "/".join(values) if values else "-"


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="See the module's docstring for the data."
    )
    parser.add_argument(
        "--workspaces", type=int, default=10, metavar="N", help="how many (default 10)"
    )
    parser.add_argument(
        "--prompts",
        type=int,
        default=10,
        metavar="N",
        help="hook prompts per workspace and way (default 10)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        metavar="S",
        help="the most seconds each way may take to be ready (default 600)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="run the daemons with -v")
    parser.add_argument(
        "--logs",
        type=Path,
        metavar="DIR",
        help="keep the daemons' stderr in this folder (default: discarded)",
    )
    args = parser.parse_args()
    if args.workspaces < 1 or args.prompts < 1:
        parser.error("--workspaces and --prompts must be at least 1")
    if args.workspaces * args.prompts < 2:
        parser.error("at least two hook runs are needed for a p90")
    export = bundled_export_folder()
    if not is_export(export):
        raise SystemExit(f"no export of the bundled model in {export}: run `make setup` first")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    daemons = Daemons()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as temp:
            try:  # every daemon is stopped before the folder goes, on an error or Ctrl-C too
                logs = args.logs.resolve() if args.logs else Path(temp) / "logs"
                logs.mkdir(parents=True, exist_ok=True)
                one = serve_all(Path(temp) / "a", args, logs, daemons)
                many = serve_each(Path(temp) / "b", args, logs, daemons)
            finally:
                daemons.stop(timeout=30)
    except KeyboardInterrupt as stopped:
        print(f"interrupted ({str(stopped) or 'Ctrl-C'}): every daemon started here is stopped")
        return 130
    report(args, one, many, args.logs and logs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
