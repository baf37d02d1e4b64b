"""`assemble systemd`: the systemd user units installed or removed."""

from __future__ import annotations

import argparse

from assembler.cli.common import load
from assembler.config.files import user_config_dir
from assembler.daemon.systemd import install_units, uninstall_units


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
