"""`assemble launchd`: the macOS launchd user agent installed or removed."""

from __future__ import annotations

import argparse

from assembler.cli.common import load
from assembler.config.files import user_config_dir
from assembler.daemon.launchd import Ran, install_agent, uninstall_agent
from assembler.daemon.systemd import named_config
from assembler.errors import AssemblerError


def _print_ran(ran: list[Ran]) -> None:
    for step in ran:
        print(f"ran {step.line}" + (" (it was not loaded)" if step.not_loaded else ""))


def run(args: argparse.Namespace) -> int:
    if args.launchd_command == "uninstall":
        removed = uninstall_agent()
        if removed.kept:
            print(
                f"kept {removed.plist} (not written by assemble launchd install; its agent is "
                "left alone)"
            )
            return 0
        _print_ran(removed.ran)
        if removed.removed:
            print(f"removed {removed.plist}")
        else:
            print(f"no agent of ours in {removed.plist.parent}")
        if removed.to_run:
            print("launchctl is not on PATH; stop what still runs with:")
            print("".join(f"  {line}\n" for line in removed.to_run), end="")
        return 0
    if args.all:
        if args.workspace is not None:
            raise AssemblerError(
                "assemble launchd install --all serves every workspace: leave out --workspace "
                "(or leave out --all for the agent of one workspace)"
            )
        named = named_config(args.config)
        installed = install_agent(
            workspace=None,
            config=named,
            config_home=None if named else user_config_dir(),
            force=args.force,
        )
    else:
        config = load(args)
        installed = install_agent(
            workspace=config.workspace,
            # As `assemble systemd install`: a file named with --config or $ASSEMBLER_CONFIG is
            # named to the agent too; else the user's config folder is pinned.
            config=config.source if config.explicit else None,
            config_home=None if config.explicit else user_config_dir(),
            force=args.force,
        )
    print(f"{'wrote' if installed.written else 'unchanged'} {installed.plist}")
    print(f"its log: {installed.log}")
    _print_ran(installed.ran)
    if installed.to_run:
        print("launchctl is not on PATH; on the Mac, load and start it with")
        print("(bootout says 'No such process' when no agent was loaded yet):")
        print("".join(f"  {line}\n" for line in installed.to_run), end="")
    else:
        print("the daemon runs now, and again at every login")
    return 0
