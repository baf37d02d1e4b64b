"""`assemble doctor`: every link of the chain that carries the block to the model, in order,
each with its state and, when it is broken, the one command that fixes it:

1. each host set up here: its hooks in the settings it reads, and the program they run (the
   host's `setup.setup_links`);
2. the daemon: alive (it holds the workspace's lock) and answering on its socket;
3. the embedding model: exported and loadable (when the memory uses the bundled one);
4. the memory index: in step with the notes;
5. the file: fresh;
6. the last delivery: the newest turn of the newest session a hook served carried the block,
   by the host's own record (`assembler.delivery`).

A link that does not apply (no memory, no session yet) is said and does not count.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.daemon.control import NotServed, PromptRequest, ask_prompt
from assembler.daemon.lock import lock_holder
from assembler.delivery.report import delivery_report, describe, has_record
from assembler.errors import AssemblerError
from assembler.file.freshness import check_freshness
from assembler.hosts import registry
from assembler.hosts.links import Link
from assembler.memory.lifecycle import index_path, open_memory

if TYPE_CHECKING:
    from assembler.config.schema import Config

# How long the daemon may take to answer the doctor's prompt.
ANSWER_WAIT_S = 5.0


def chain(
    config: Config, assemble: Path, now: datetime, environ: Mapping[str, str] = os.environ
) -> list[Link]:
    """Given the config, this install's `assemble`, the clock and the environment, return
    every link of the chain, in order (see the module's docstring)."""
    links = _host_links(config, assemble, environ)
    links.append(_daemon_link(config, assemble))
    links += _memory_links(config, assemble)
    result = check_freshness(config.output_path, now, config.output.ttl)
    links.append(
        Link(
            "the file",
            result.code == 0,
            result.message,
            None if result.code == 0 else _command(assemble, "--once", config),
        )
    )
    links.append(_delivery_link(config, links, environ))
    return links


def _command(assemble: Path, verb: str, config: Config, *more: str) -> str:
    if config.is_project:
        return shlex.join([str(assemble), "daemon", "--all"])
    return shlex.join([str(assemble), verb, *more, "--workspace", str(config.workspace)])


def _host_links(config: Config, assemble: Path, environ: Mapping[str, str]) -> list[Link]:
    links: list[Link] = []
    for plugin in registry.having("setup"):
        setup = plugin.load("setup")
        if hasattr(setup, "setup_links"):
            links += setup.setup_links(config, assemble, environ)
    if not links:
        setups = ", ".join(plugin.name for plugin in registry.having("setup"))
        command = shlex.join([str(assemble), "setup", "HOST", "--workspace", str(config.workspace)])
        links.append(
            Link(
                "a host set up for this workspace",
                False,
                "no host's hooks name this workspace and none ran here",
                f"{command} (HOST: {setups})",
            )
        )
    return links


def _daemon_link(config: Config, assemble: Path) -> Link:
    start = (
        _command(assemble, "daemon", config)
        if config.is_project
        else shlex.join([str(assemble), "systemd", "install", "--workspace", str(config.workspace)])
    )
    pid = lock_holder(config.state_dir)
    if pid is None:
        return Link("the daemon", False, "no daemon serves this workspace", start)
    request = PromptRequest("doctor", None, "are you there", 13, round(ANSWER_WAIT_S * 1000))
    try:
        ask_prompt(config.state_dir, request, budget=ANSWER_WAIT_S, pid=pid)
    except NotServed as error:
        return Link(
            "the daemon",
            False,
            f"pid {pid} holds the lock but does not answer on its socket ({error})",
            f"restart it (kill {pid}, then {start})",
        )
    return Link("the daemon", True, f"pid {pid} answers on {config.state_dir / 'daemon.sock'}")


def _memory_links(config: Config, assemble: Path) -> list[Link]:
    if not config.memory.enabled:
        return [Link("the memory", None, "memory.enabled is false")]
    links: list[Link] = []
    if config.memory.model == "bundled":
        # Here, not at the top: the runtime's import costs a second, and only this link needs it.
        from assembler.memory.embeddings import load_embedder

        try:
            embedder = load_embedder(config.memory.model)
            links.append(Link("the embedding model", True, f"{embedder.model_id} loads"))
        except AssemblerError as error:
            fix = shlex.join([str(assemble), "model", "export"])
            links.append(Link("the embedding model", False, str(error).splitlines()[0], fix))
    if not index_path(config).is_file():
        fix = _command(assemble, "index", config)
        return [*links, Link("the memory index", False, "no index yet", fix)]
    try:
        index, _ = open_memory(config, embedder_off=True)
        try:
            behind = index.out_of_step()
        finally:
            index.close()
    except AssemblerError as error:
        fix = _command(assemble, "index", config, "--rebuild")
        return [*links, Link("the memory index", False, str(error).splitlines()[0], fix)]
    if behind:
        shown = ", ".join(behind[:3]) + (f" and {len(behind) - 3} more" if len(behind) > 3 else "")
        fix = _command(assemble, "index", config)
        return [*links, Link("the memory index", False, f"behind the notes: {shown}", fix)]
    return [*links, Link("the memory index", True, "in step with the notes")]


def _delivery_link(config: Config, links: list[Link], environ: Mapping[str, str]) -> Link:
    if not has_record(config.state_dir):
        return Link("the last delivery", None, "no prompt a hook served here yet")
    report = delivery_report(config.workspace, config.state_dir, registry.HOSTS, environ)
    if not report.sessions:
        return Link("the last delivery", None, "no session of a set-up host found yet")
    newest = report.sessions[-1]
    if newest in report.missed:
        broken = next((link for link in links if link.holds is False and link.fix), None)
        fix = broken.fix if broken else "check the host's settings: is the hook still there?"
        return Link("the last delivery", False, describe(newest), fix)
    return Link("the last delivery", True, describe(newest))
