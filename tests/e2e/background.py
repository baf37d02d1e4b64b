"""An end-to-end flow run in a thread beside other tests: a host's run is mostly waiting (on
its own start, the model, a Gateway's idle minute), so two flows on their own HOMEs, mocks and
Gateways overlap well even on 2 cores.

    @pytest.fixture(scope="module")
    def flow(hosts, tmp_path_factory):
        with in_background(run_flow, hosts, tmp_path_factory.mktemp("flow")) as future:
            yield future            # the test that checks it: future.result()

`run_flow(hosts, root, environ, *more)` gets `environ`, a copy of the environment taken in
the tests' thread when the fixture starts: the tests running meanwhile move HOME in
`os.environ` (the autouse `isolated_home`), so a flow must never read it, and should give
every process it starts an environment of its own (`home_env`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

XDG_NAMES = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def home_env(home: Path) -> dict[str, str]:
    """What the autouse `isolated_home` fixture sets, for a HOME of the flow's own: HOME and
    the folders the program derives from the environment, all under `home`."""
    return {"HOME": str(home), **{name: str(home / name.lower()) for name in XDG_NAMES}}


@contextmanager
def in_background(
    flow: Callable[..., T], hosts: Any, root: Path, *more: Any
) -> Iterator[Future[T]]:
    """Start `flow(hosts, root, environ, *more)` in a thread; yield its future; on the way out
    wait for it to end (its failure is the checking test's to report)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ASSEMBLER_")}
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(flow, hosts, root, environ, *more)
