"""Check a release of Codex against the catalogue of its host texts (for maintainers; no test
runs it).

    python scripts/codex_host_text.py 0.172.0            # fetch it with npm pack and check it
    python scripts/codex_host_text.py --text codex.txt [0.172.0]   # text already taken out

A release is fetched with `npm pack` into a temporary folder (never into the repository):
`@openai/codex@<version>-linux-x64` where npm has that platform package, else the main
package (older releases carry every platform's binary). The Linux x86-64 binary's text is read
with `strings`; a release without one (the TypeScript CLI of early 2025) is read as its
JavaScript. The report names each entry of `assembler/hosts/codex/host_text.py` whose probe
the release's code holds and each it lacks, and marks SURPRISE where that is not what the
catalogue says of the release (a release newer than the catalogue is taken to write what its
newest release writes): a catalogue to update, and a test to add (the release goes into
`VERSIONS`). Texts of the release that look like the host's but are in no entry
(`<tag_name>` openers) are listed too, to be read by hand: the binary does not say which
role a text is written as.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assembler.hosts.codex.host_text import CATALOGUE, VERSIONS, HostText, version_key, written_in

PACKAGE = "@openai/codex"
NPM_TIMEOUT_S = 900
# The Linux x86-64 binary, wherever a release's package put it.
_BINARY = re.compile(
    r"x86_64-unknown-linux-musl(?:/(?:bin|codex))?/codex$|/codex-x86_64-unknown-linux-musl$"
)
# Less JavaScript than this is only the launcher (`bin/codex.js`), not the TypeScript CLI.
_LAUNCHER_BYTES = 100_000
_OPENER = re.compile(r"<([a-z][a-z0-9]*(?:_[a-z0-9]+)+)>")


def package_spec(version: str) -> str:
    """Given a version, return what to `npm pack`: its Linux x86-64 platform package where npm
    has one, else the main package."""
    listed = subprocess.run(
        ["npm", "view", PACKAGE, "versions", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=NPM_TIMEOUT_S,
    )
    versions = json.loads(listed.stdout)
    if f"{version}-linux-x64" in versions:
        return f"{PACKAGE}@{version}-linux-x64"
    if version not in versions:
        raise SystemExit(f"{PACKAGE}@{version} is not on npm; `npm view {PACKAGE} versions`")
    return f"{PACKAGE}@{version}"


def release_text(version: str) -> str:
    """Given a version, fetch its package into a temporary folder and return its code's text:
    the binary's `strings`, or the JavaScript of a release without a binary."""
    with tempfile.TemporaryDirectory(prefix="codex-host-text-") as folder:
        packed = subprocess.run(
            ["npm", "pack", package_spec(version), "--pack-destination", folder, "--silent"],
            capture_output=True,
            text=True,
            check=True,
            timeout=NPM_TIMEOUT_S,
        )
        tarball = Path(folder) / packed.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as archive:
            members = archive.getmembers()
            binary = next((m for m in members if _BINARY.search(m.name)), None)
            if binary is None:
                scripts = [m for m in members if m.name.endswith((".js", ".mjs", ".cjs"))]
                if sum(member.size for member in scripts) < _LAUNCHER_BYTES:
                    # 0.142.1 and 0.153.1: the launcher names a platform package npm lacks.
                    raise SystemExit(f"{PACKAGE}@{version}: no binary of it is on npm")
                return "\n".join(_member_text(archive, member) for member in scripts)
            archive.extract(binary, folder, filter="data")
        found = subprocess.run(
            ["strings", "-n", "5", str(Path(folder) / binary.name)],
            capture_output=True,
            check=True,
            timeout=NPM_TIMEOUT_S,
        )
        return found.stdout.decode("latin-1")


def _member_text(archive: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    extracted = archive.extractfile(member)
    return extracted.read().decode("utf-8", "replace") if extracted is not None else ""


def check(text: str) -> tuple[list[HostText], list[HostText], list[str]]:
    """Given a release's text, return the entries it holds, those it lacks, and the tagged
    openers in it that no entry names."""
    found = [entry for entry in CATALOGUE if entry.evidence in text]
    lacking = [entry for entry in CATALOGUE if entry.evidence not in text]
    known = {entry.opens for entry in CATALOGUE}
    unknown = sorted({f"<{tag}>" for tag in _OPENER.findall(text)} - known)
    return found, lacking, unknown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", nargs="?", help="a release of @openai/codex, e.g. 0.171.0")
    parser.add_argument("--text", type=Path, help="check this file of a release's text instead")
    args = parser.parse_args(argv)
    if args.text is not None:
        text = args.text.read_text(encoding="latin-1")
    elif args.version:
        text = release_text(args.version)
    else:
        parser.error("give a version, or --text FILE")
    found, lacking, unknown = check(text)
    expected = set(written_in(_known(args.version))) if args.version else None
    for entry in found:
        print(f"found    {entry.kind:28} {entry.evidence!r}{_mark(entry, expected, True)}")
    for entry in lacking:
        print(
            f"lacking  {entry.kind:28} {entry.evidence!r} (catalogue: {_span(entry)})"
            f"{_mark(entry, expected, False)}"
        )
    if unknown:
        print("tagged openers in no entry (read which role Codex writes them as):")
        print("  " + " ".join(unknown))
    return 0


def _known(version: str) -> str:
    """Given a version, return it, or the newest the catalogue knows when it is newer."""
    newest = VERSIONS[-1].version
    return newest if version_key(version) > version_key(newest) else version


def _mark(entry: HostText, expected: set[HostText] | None, found: bool) -> str:
    if expected is None or (entry in expected) == found:
        return ""
    return "  SURPRISE"


def _span(entry: HostText) -> str:
    return f"{entry.first} to {entry.last or 'now'}"


if __name__ == "__main__":
    raise SystemExit(main())
