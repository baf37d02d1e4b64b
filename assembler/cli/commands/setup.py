"""`assemble setup HOST`: what connects a host to the workspace (or, `--all-projects`, to every
project), or (`--remove`) disconnects it."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from assembler.cli.common import load, parse_now
from assembler.config.files import (
    validate,
)
from assembler.config.projects import register_workspace
from assembler.config.schema import Config
from assembler.daemon.systemd import assemble_executable
from assembler.errors import AssemblerError
from assembler.hosts.removal import Removal, apply_removal
from assembler.hosts.setup import (
    all_projects_apply,
    all_projects_removal,
    all_projects_text,
    first_assembly,
    host_removal,
    removal_text,
    setup_text,
)


def run(args: argparse.Namespace) -> int:
    all_projects = getattr(args, "all_projects", False)
    remove = getattr(args, "remove", False)
    if getattr(args, "apply", False) and not (remove or all_projects):
        raise AssemblerError(
            f"setup {args.host}: --apply goes with --remove (disconnect the host) or "
            "--all-projects (merge its hooks into your settings); without them setup only prints"
        )
    if all_projects:
        return _all_projects(args, remove=remove)
    if remove:
        return _remove_host(args)
    created = _create_workspace(args.workspace)
    config = load(args)
    if created is not None:
        print(f"created the workspace folder {shlex.quote(str(created))}")
    _register(config)
    if not args.no_assemble:
        _first_assembly(config)
    sys.stdout.write(setup_text(args.host, config, assemble_executable()))
    return 0


def _register(config: Config) -> None:
    """List the workspace for `assemble daemon --all`; say so in a line, or why not: the
    setup goes on either way."""
    try:
        new = register_workspace(config.workspace)
    except (AssemblerError, OSError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"not listed for `assemble daemon --all`: {reason}")
        return
    if new:
        print(f"listed {shlex.quote(str(config.workspace))} for `assemble daemon --all`")


def _all_projects(args: argparse.Namespace, *, remove: bool) -> int:
    """`--all-projects`: print (or, `--apply`, merge or take out) the hooks that serve every
    project, in the host's user settings."""
    if args.workspace is not None:
        raise AssemblerError(
            f"setup {args.host}: --all-projects serves every project, --workspace one folder; "
            "give one of them"
        )
    assemble = assemble_executable()
    if remove:
        removal = all_projects_removal(args.host, assemble)
        return _removed(args.host, removal, assemble, apply=args.apply)
    if not args.apply:
        sys.stdout.write(all_projects_text(args.host, assemble))
        return 0
    for line in all_projects_apply(args.host, assemble):
        print(line)
    daemon = shlex.join([str(assemble), "daemon", "--all"])
    service = shlex.join([str(assemble), "systemd", "install", "--all"])
    print(f"next, keep every project's file fresh with one daemon: {daemon}")
    print(f"(as a service: {service}; on macOS, launchd in place of systemd)")
    return 0


def _create_workspace(given: str | None) -> Path | None:
    """Create the folder --workspace names when it does not exist yet (a fresh host makes its
    own only at its first run); return it, or None when there was nothing to create."""
    if given is None:
        return None
    folder = Path(given).expanduser()
    if folder.exists():
        return None
    try:
        folder.mkdir(parents=True)
    except OSError as error:
        raise AssemblerError(
            f"Cannot create the workspace {shlex.quote(str(folder))} "
            f"({error.strerror or error}); create it with: mkdir -p {shlex.quote(str(folder))}"
        ) from error
    return folder.absolute()


def _first_assembly(config: Config) -> None:
    """Assemble once so that the host's first turn finds a file; say so, or why not, in a
    line: the setup text is printed either way."""

    once = shlex.join(["assemble", "--once", "--workspace", str(config.workspace)])
    try:
        path = first_assembly(config, parse_now(None, config))
    except Exception as error:  # the setup text matters more; the user can run it again
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"first assembly failed: {reason}; run {once} to see why")
        return
    print(f"assembled {shlex.quote(str(path))} once, so the first turn has a scratchpad")


def _remove_host(args: argparse.Namespace) -> int:
    assemble = assemble_executable()
    removal = host_removal(args.host, _removal_config(args), assemble)
    return _removed(args.host, removal, assemble, apply=args.apply)


def _removed(host: str, removal: Removal, assemble: Path, *, apply: bool) -> int:
    """Print the removal, or (`apply`) perform it and print what became of each step."""
    if not apply:
        sys.stdout.write(removal_text(host, removal, assemble))
        return 0
    failed = 0
    for outcome in apply_removal(removal):
        print(f"{outcome.status}: {outcome.step.what}: {outcome.detail}")
        failed += outcome.status == "failed"
    for note in removal.notes:
        print(note)
    uninstall = shlex.join([str(assemble), "systemd", "uninstall"])
    print(f"the daemon, if no other host uses it: {uninstall}")
    return 1 if failed else 0


def _removal_config(args: argparse.Namespace) -> Config:
    """The config of the workspace to disconnect; a workspace deleted already is still named
    in the host's settings, so its path alone will do."""
    if args.workspace is not None and not Path(args.workspace).expanduser().exists():
        return validate({}, source=None, workspace=Path(args.workspace).expanduser().absolute())
    return load(args)
