"""The CLI's commands that connect agent hosts and install the program: `hook` (run by a host
before each prompt), `mcp` (whose host waits for it to answer), `setup`, `systemd` and
`config`. Each command imports the core module it calls when it runs, so the hook and the MCP
server load only their own."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from assembler.cli.common import load, parse_now, read_stdin
from assembler.config.files import init_config, resolve_workspace, to_toml, user_config_dir
from assembler.config.schema import Config
from assembler.errors import AssemblerError, ConfigError, TranscriptError
from assembler.hosts import registry


def _cmd_hook(args: argparse.Namespace) -> int:
    hook = registry.plugin(args.host).load("hook")
    output = hook.run_hook(
        read_stdin(f"hook {args.host}"), workspace=args.workspace, config_path=args.config
    )
    sys.stdout.write(output)
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from assembler.hosts.mcp.handshake import answer_first_line

    config = load(args)

    def server() -> ModuleType:  # the MCP SDK's import: while `initialize` is answered
        from assembler.hosts.mcp import server

        return server

    early, module = answer_first_line(server)
    module.serve(config, early)
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    from assembler.daemon.systemd import assemble_executable
    from assembler.hosts.setup import setup_text

    if getattr(args, "remove", False):
        return _remove_host(args)
    created = _create_workspace(args.workspace)
    config = load(args)
    if created is not None:
        print(f"created the workspace folder {shlex.quote(str(created))}")
    if not args.no_assemble:
        _first_assembly(config)
    sys.stdout.write(setup_text(args.host, config, assemble_executable()))
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
    from assembler.hosts.setup import first_assembly

    once = shlex.join(["assemble", "--once", "--workspace", str(config.workspace)])
    try:
        path = first_assembly(config, parse_now(None, config))
    except Exception as error:  # the setup text matters more; the user can run it again
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"first assembly failed: {reason}; run {once} to see why")
        return
    print(f"assembled {shlex.quote(str(path))} once, so the first turn has a scratchpad")


def _remove_host(args: argparse.Namespace) -> int:
    from assembler.daemon.systemd import assemble_executable
    from assembler.hosts.removal import apply_removal
    from assembler.hosts.setup import host_removal, removal_text

    assemble = assemble_executable()
    removal = host_removal(args.host, _removal_config(args), assemble)
    if not args.apply:
        sys.stdout.write(removal_text(args.host, removal, assemble))
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
        from assembler.config.files import validate

        return validate({}, source=None, workspace=Path(args.workspace).expanduser().absolute())
    return load(args)


def _cmd_systemd(args: argparse.Namespace) -> int:
    from assembler.daemon.systemd import install_units, uninstall_units

    if args.systemd_command == "uninstall":
        removed = uninstall_units()
        for path in removed.removed:
            print(f"removed {path}")
        for path in removed.kept:
            print(f"kept {path} (not written by assemble systemd install)")
        if not removed.removed and not removed.kept:
            print(f"no units of ours in {removed.folder}")
        print(f"stop what runs and let systemd forget them:\n  {removed.stop_command}")
        return 0
    config = load(args)
    installed = install_units(
        timer=args.timer,
        workspace=config.workspace,
        # A file named with --config or $ASSEMBLER_CONFIG is named to the service too; else it
        # finds the same files as this command: the user's config folder is pinned.
        config=config.source if config.explicit else None,
        config_home=None if config.explicit else user_config_dir(),
        output_file=config.output_path,
        force=args.force,
    )
    for path in installed.written:
        print(f"wrote {path}")
    for path in installed.unchanged:
        print(f"unchanged {path}")
    print(f"enable and start with:\n  {installed.enable_command}")
    print("run it without a login session too: loginctl enable-linger $USER")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    if args.config_command == "init":
        if args.user:
            target = user_config_dir() / "config.toml"
        elif args.path:
            target = Path(args.path).expanduser()
        else:
            target = resolve_workspace(args.workspace) / "assembler.toml"
        written = init_config(target, force=args.force)
        print(f"wrote {written}; edit it, then run 'assemble config validate'")
        return 0
    config = load(args)
    files = " with ".join(str(path) for path in config.sources)
    if args.config_command == "validate":
        # Here, not at the top: a hook runs this module before every prompt, and reading
        # transcripts is not what it needs.
        from assembler.transcripts.hosts import check_format

        try:  # which formats there are, the hosts say
            check_format(registry.HOSTS, config.transcripts.format)
        except TranscriptError as error:
            raise ConfigError(f"{files or 'the config'}: {error}") from None
        where = f"{files} {'is' if len(config.sources) == 1 else 'are'}"
        where = where if files else "no config file (defaults) is"
        print(f"ok: {where} valid (workspace {config.workspace})")
        return 0
    print(f"# effective config; from {files or 'defaults'}")
    sys.stdout.write(to_toml(config.to_dict()))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "hook": _cmd_hook,
    "mcp": _cmd_mcp,
    "setup": _cmd_setup,
    "systemd": _cmd_systemd,
    "config": _cmd_config,
}
