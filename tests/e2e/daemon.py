"""`assemble daemon` for the end-to-end tests: a real process serving a workspace, ready once it
said READY=1 on a notify socket of the test's (as systemd is told), so that no test races its
start.

    with RunningDaemon(workspace, folder, env) as daemon:
        ...  # the hosts' hooks and plugins find its socket in the workspace's state folder
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path

from assembler.daemon.systemd import assemble_executable

READY_WAIT_S = 120.0
STOP_WAIT_S = 60.0


class RunningDaemon:
    """`assemble daemon -w WORKSPACE -v` (no workspace: `assemble daemon --all -v`), its log in
    `folder/daemon.log`."""

    def __init__(self, workspace: Path | None, folder: Path, env: Mapping[str, str]) -> None:
        self.workspace = workspace
        self.folder = folder
        self.env = dict(env)
        self.log_path = folder / "daemon.log"

    def __enter__(self) -> RunningDaemon:
        address = str(self.folder / "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(address)
        self.notify.settimeout(READY_WAIT_S)
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [str(assemble_executable()), "daemon", *self._serving(), "-v"],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env={**self.env, "NOTIFY_SOCKET": address},
        )
        try:
            while b"READY=1" not in self.notify.recv(4096):
                pass
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.returncode = self.process.wait(timeout=STOP_WAIT_S)
        self.log.close()
        self.notify.close()

    def _serving(self) -> list[str]:
        return ["--all"] if self.workspace is None else ["-w", str(self.workspace)]

    def log_text(self) -> str:
        return self.log_path.read_text()
