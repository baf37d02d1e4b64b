"""`assemble config`: the configuration validated, shown or created."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assembler.cli.common import load
from assembler.config.files import init_config, resolve_workspace, to_toml, user_config_dir
from assembler.errors import ConfigError, TranscriptError
from assembler.hosts import registry
from assembler.transcripts.hosts import check_format


def run(args: argparse.Namespace) -> int:
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
