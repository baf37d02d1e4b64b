"""Check an OpenClaw release against the host-text catalogue (hosts/openclaw/host_text.py).

Given a version, download it with `npm pack` (into a temporary folder, or `--cache`), find
each catalogue entry's anchors in the release's code, and report which entries it has and which
it lacks; with `--json`, also the files and the text around each anchor, to compare releases.

    python scripts/openclaw_host_text.py 2026.9.6
    python scripts/openclaw_host_text.py --package clawdbot 2026.1.24 --json out.json
    python scripts/openclaw_host_text.py --tarball /tmp/openclaw-2026.9.6.tgz

A maintainer's tool: not run by the tests (it needs the npm registry).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assembler.hosts.openclaw.host_text import CATALOGUE, HostText, has

_CODE_SUFFIXES = (".js", ".mjs", ".cjs")
# How much text after an anchor is kept to tell a release's wording from another's.
_SNIPPET = re.compile(rb"[^`\"'\n]{0,200}")


def pack(package: str, version: str, folder: Path) -> Path:
    """Given a package, a version and a folder, download the release's tarball into the folder
    with `npm pack` and return its path. Raise RuntimeError if npm fails."""
    done = subprocess.run(
        ["npm", "pack", f"{package}@{version}", "--silent", "--pack-destination", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    names = done.stdout.split()
    if done.returncode != 0 or not names:
        raise RuntimeError(f"npm pack {package}@{version} failed: {done.stderr.strip()}")
    return folder / names[-1]


def code_files(tarball: Path) -> Iterator[tuple[str, bytes]]:
    """Given a release's tarball, yield the path and bytes of each of its code files (not its
    bundled node_modules, not type declarations)."""
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            name = member.name
            if not member.isfile() or not name.endswith(_CODE_SUFFIXES):
                continue
            if "/node_modules/" in name:
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                yield name.removeprefix("package/"), handle.read()


def scan(tarball: Path) -> dict[str, dict[str, Any]]:
    """Given a release's tarball, return for each catalogue entry the files its anchors are in
    and the distinct texts that follow them."""
    found: dict[str, dict[str, Any]] = {e.name: {"files": set(), "texts": set()} for e in CATALOGUE}
    owners: dict[bytes, list[str]] = {}
    for host_text in CATALOGUE:
        for anchor in host_text.code_anchors:
            owners.setdefault(anchor.encode(), []).append(host_text.name)
    # One pass over each file for all anchors, longest first so none hides a longer one.
    needles = re.compile(b"|".join(re.escape(a) for a in sorted(owners, key=len, reverse=True)))
    for name, data in code_files(tarball):
        for match in needles.finditer(data):
            tail = _SNIPPET.match(data, match.end())
            text = (match.group(0) + (tail.group(0) if tail else b"")).decode("utf-8", "replace")
            for owner in owners[match.group(0)]:
                report = found[owner]
                report["files"].add(name)
                if len(report["texts"]) < 20:
                    report["texts"].add(text)
    return {
        key: {"files": sorted(value["files"]), "texts": sorted(value["texts"])}
        for key, value in found.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", nargs="?", help="the release to check, e.g. 2026.9.6")
    parser.add_argument("--package", default="openclaw", help="npm package (openclaw, clawdbot)")
    parser.add_argument("--tarball", type=Path, help="a tarball already downloaded")
    parser.add_argument("--cache", type=Path, help="keep the tarball in this folder")
    parser.add_argument("--json", type=Path, help="write the full report to this file")
    args = parser.parse_args(argv)
    if args.tarball is None and args.version is None:
        parser.error("give a version or --tarball")
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.cache or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        tarball = args.tarball or pack(args.package, args.version, folder)
        report = scan(tarball)
    version = args.version or tarball.name.removesuffix(".tgz").partition("-")[2]
    for host_text in CATALOGUE:
        present = bool(report[host_text.name]["files"])
        expected = has(host_text, version) if host_text.first[:1].isdigit() else None
        mark = "has  " if present else "lacks"
        surprise = "" if expected is None or expected == present else "  (catalogue disagrees)"
        print(f"{mark} {host_text.name:32} {_where(host_text, report)}{surprise}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


def _where(host_text: HostText, report: dict[str, dict[str, Any]]) -> str:
    files = report[host_text.name]["files"]
    return ", ".join(files[:2]) + (f" (+{len(files) - 2})" if len(files) > 2 else "")


if __name__ == "__main__":
    sys.exit(main())
