"""Check a released Claude Code against the host-text catalogue: fetch the version with
`npm pack` (its `cli.js`, or the native binary of `@anthropic-ai/claude-code-linux-x64` for
releases that ship one), and report which catalogue entries its code has and which it lacks,
with the `origin.kind` values and the notes (caveat, compaction, interruption) it writes.

    python scripts/claude_code_host_text.py 2.1.332 [--keep DIR]

A maintainer's tool, not run by the tests: it needs npm and the network.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from assembler.hosts.claude_code.host_text import ENTRIES

_PACKAGE = "@anthropic-ai/claude-code"
_NATIVE = "@anthropic-ai/claude-code-linux-x64"
_ORIGIN_KIND = re.compile(r"origin(?:\?\.|\.|:\{)kind(?:===|:)\"([a-z][a-z-]*)\"")
_NOTES = (
    re.compile(r"Caveat: The messages below[^\"`]*"),
    re.compile(r"\[Request interrupted by user[^\"`\]]*\]"),
    re.compile(r"This session is being continued from a previous conversation[^\"`.]*\."),
)


def fetch(version: str, folder: Path) -> str:
    """Given a version and a scratch folder, return the text of its code: `cli.js`, or the
    printable runs of the native binary. Raise RuntimeError if npm cannot fetch it."""
    tarball = _pack(f"{_PACKAGE}@{version}", folder)
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
        if "package/cli.js" in names:
            member = archive.extractfile("package/cli.js")
            assert member is not None
            return member.read().decode("utf-8", "replace")
    tarball.unlink()
    native = _pack(f"{_NATIVE}@{version}", folder)
    with tarfile.open(native) as archive:
        member = archive.extractfile("package/claude")
        assert member is not None
        data = member.read()
    native.unlink()
    # The binary embeds its JavaScript as text; its printable runs are enough to search.
    return "\n".join(run.decode("latin-1") for run in re.findall(rb"[\x09\x20-\x7e]{4,}", data))


def _pack(spec: str, folder: Path) -> Path:
    done = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm pack {spec} failed: {done.stderr.strip()}")
    return folder / done.stdout.strip().splitlines()[-1]


def report(code: str) -> list[str]:
    """Given a release's code, return the report's lines: each entry found or missing, then
    the origin kinds and the notes found."""
    lines = []
    for entry in ENTRIES:
        found = re.search(entry.needle, code) is not None
        lines.append(f"{'found  ' if found else 'missing'} {entry.kind:9} {entry.text}")
    kinds = sorted(set(_ORIGIN_KIND.findall(code)))
    lines.append("origin kinds: " + " ".join(kinds))
    for note in _NOTES:
        for text in sorted(set(note.findall(code))):
            lines.append(f"note: {text}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version")
    parser.add_argument("--keep", type=Path, help="also write the code's text to this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cc-pkgs-") as scratch:
        try:
            code = fetch(args.version, Path(scratch))
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        (args.keep / f"{args.version}.txt").write_text(code, encoding="utf-8")
    print("\n".join(report(code)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
