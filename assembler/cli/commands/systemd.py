"""`assemble systemd`: the systemd user units installed or removed."""

from __future__ import annotations

import argparse

from assembler.cli.common import load
from assembler.config.files import user_config_dir
from assembler.daemon.systemd import Installed, install_units, named_config, uninstall_units
from assembler.errors import AssemblerError


def run(args: argparse.Namespace) -> int:
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
    if args.all:
        return _install_all(args)
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
    _print_installed(installed)
    return 0


def _install_all(args: argparse.Namespace) -> int:
    if args.workspace is not None:
        raise AssemblerError(
            "assemble systemd install --all serves every workspace: leave out --workspace (or "
            "leave out --all for the units of one workspace)"
        )
    config = named_config(args.config)
    installed = install_units(
        timer=args.timer,  # refused: the daemon of every workspace has no timer
        workspace=None,
        config=config,
        config_home=None if config else user_config_dir(),
        force=args.force,
    )
    _print_installed(installed)
    print(
        "the service may write your home folder and the workspaces set up outside it now; for "
        "one set up outside it later, run assemble systemd install --all --force again"
    )
    return 0


def _print_installed(installed: Installed) -> None:
    for path in installed.written:
        print(f"wrote {path}")
    for path in installed.unchanged:
        print(f"unchanged {path}")
    print(f"enable and start with:\n  {installed.enable_command}")
    print("run it without a login session too: loginctl enable-linger $USER")
