"""The CLI's `obs` commands: park large tool outputs and read them back in slices."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from assembler.cli.common import load, log, parse_now
from assembler.config.schema import parse_duration
from assembler.errors import AssemblerError
from assembler.observations.store import (
    ObservationStore,
    observation_from_input,
    store_for,
    to_json,
)


def run(args: argparse.Namespace) -> int:
    config = load(args)
    now = parse_now(args.now, config)
    with store_for(config) as store:
        return _OBS_ACTIONS[args.obs_command](store, args, now)


def _read_input(name: str) -> tuple[bytes, str | None]:
    if name == "-":
        return sys.stdin.buffer.read(), None
    try:
        return Path(name).expanduser().read_bytes(), name
    except OSError as error:
        raise AssemblerError(f"{name} cannot be read ({error.strerror}); check the path") from error


def _obs_put(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
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


def _obs_read(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
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
        _write_piece(found.data if found.data is not None else found.text or "")
    return 0


def _write_piece(piece: str | bytes) -> None:
    if isinstance(piece, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(piece)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(piece)


def _obs_ls(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
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


def _obs_gc(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
    report = store.gc(now)
    print(f"removed {report.removed} expired observations ({report.freed_bytes} bytes stored)")
    return 0


def _obs_turn(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
    print(store.start_turn(args.turn_id, now))
    return 0


def _obs_resolve(store: ObservationStore, args: argparse.Namespace, now: datetime) -> int:
    data, path = _read_input(args.file)
    try:
        arguments = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise AssemblerError(
            f"{path or 'stdin'} is not JSON ({error}); give the tool call's arguments as JSON"
        ) from error
    print(to_json(store.resolve_references(arguments, turn=args.turn, now=now)))
    return 0


_OBS_ACTIONS: dict[str, Callable[[ObservationStore, argparse.Namespace, datetime], int]] = {
    "put": _obs_put,
    "read": _obs_read,
    "ls": _obs_ls,
    "gc": _obs_gc,
    "turn": _obs_turn,
    "resolve": _obs_resolve,
}
