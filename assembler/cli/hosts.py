"""The CLI's commands that connect agent hosts and install the program: `hook` (run by a host
before each prompt), `mcp` (whose host waits for it to answer), `setup`, `systemd` and
`config`. Each command imports the core module it calls when it runs, so the hook and the MCP
server load only their own."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from assembler.cli.common import load, read_stdin
from assembler.config.files import init_config, resolve_workspace, to_toml, user_config_dir


def _cmd_hook(args: argparse.Namespace) -> int:
    from assembler.hosts.claude_code.hook import run_claude_code_hook

    output = run_claude_code_hook(
        read_stdin("hook claude-code"), workspace=args.workspace, config_path=args.config
    )
    sys.stdout.write(output)
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from assembler.hosts.mcp.server import serve

    serve(load(args))
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    from assembler.daemon.systemd import assemble_executable
    from assembler.hosts.setup import setup_text

    sys.stdout.write(setup_text(args.host, load(args), assemble_executable()))
    return 0


def _cmd_systemd(args: argparse.Namespace) -> int:
    from assembler.daemon.systemd import install_units

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
