"""The status page in a real headless Chromium (Debian's package, driven by Playwright): the
pages load and draw, the mood chart has one point per human message, a new transcript line
reaches the open page without a reload, and the guard refuses requests without the token or
through a foreign host name. Skipped, saying why, where no Chromium is installed (`make setup`
installs it where it can)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_workspace import LINES, NOW, append_line, make_status_workspace

from assembler.serve.app import StatusServer

pytestmark = pytest.mark.browser

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path() -> str | None:
    """Return the Chromium to drive: $ASSEMBLER_CHROMIUM, else the first one on PATH."""
    explicit = os.environ.get("ASSEMBLER_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need Playwright: pip install -e '.[dev]'")
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium found: apt-get install chromium (make setup does, as root)")
    from playwright.sync_api import Error as PlaywrightError

    with sync_playwright() as playwright:
        # --no-sandbox: CI containers run as root; --disable-gpu: there is no GPU, and the
        # software GPU process is one more thing to crash. The resolver rule sends a foreign
        # name to our server, as a DNS rebinding attack would.
        options = {
            "executable_path": executable,
            "args": [
                "--no-sandbox",
                "--disable-gpu",
                "--host-resolver-rules=MAP evil.example 127.0.0.1",
            ],
        }
        # Chromium now and then dies at start on a loaded machine (SIGTRAP before the first
        # page); that is the browser's start, not the page under test, so it gets one more try.
        # A second failure fails the tests with the browser's own log.
        try:
            launched = playwright.chromium.launch(**options)
        except PlaywrightError:
            launched = playwright.chromium.launch(**options)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatusServer]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            patch.setenv(name, str(home / name.lower()))
        config = make_status_workspace(tmp_path_factory.mktemp("serve") / "ws")
        status = StatusServer(config, port=0, clock=lambda: NOW, poll_seconds=0.2)
        status.start()
        yield status
        status.stop()


@pytest.fixture
def page(browser: Any, server: StatusServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(5000)
    yield tab
    context.close()


def open_page(page: Any, server: StatusServer, path: str) -> None:
    page.goto(server.url)  # sets the cookie
    page.goto(f"http://localhost:{server.port}{path}")


def valence_points(page: Any) -> int:
    return int(
        page.evaluate(
            "() => window.statusChart ? window.statusChart.data.datasets"
            ".filter(d => d.kind === 'valence').reduce((n, d) => n + d.data.length, 0) : -1"
        )
    )


def test_the_now_page_loads_the_file_and_runs_no_script_from_the_workspace(
    page: Any, server: StatusServer
) -> None:
    page.goto(server.url)

    page.wait_for_selector("#now-file h2")
    assert page.url == f"http://localhost:{server.port}/"  # the token left the address bar
    assert "Emotional Context" in page.inner_text("#now-file")
    assert "<script>window.__pwned = 1</script>" in page.inner_text("#now-file")
    assert page.evaluate("() => window.__pwned") is None
    assert "fresh" in page.inner_text("#now-cards")


def test_the_mood_chart_has_one_point_per_human_message_in_the_window(
    page: Any, server: StatusServer
) -> None:
    open_page(page, server, "/mood")

    page.wait_for_function("() => window.statusChart !== undefined")
    assert valence_points(page) == len(LINES)
    speakers = page.evaluate("() => window.statusChart.data.datasets.map(d => d.speaker)")
    assert sorted(set(speakers)) == ["ray", "sam"]


def test_clicking_a_point_shows_its_message(page: Any, server: StatusServer) -> None:
    open_page(page, server, "/mood")
    page.wait_for_function("() => window.statusChart !== undefined")

    where = page.evaluate(
        "() => { const c = window.statusChart; const i = c.data.datasets.findIndex("
        "d => d.speaker === 'ray' && d.kind === 'valence'); const p = c.getDatasetMeta(i).data[1];"
        " const r = c.canvas.getBoundingClientRect(); return [r.left + p.x, r.top + p.y]; }"
    )
    page.mouse.click(where[0], where[1])

    page.wait_for_selector("#mood-text")
    assert page.inner_text("#mood-text") == LINES[1][2]


def test_a_new_transcript_line_appears_on_the_chart_without_a_reload(
    page: Any, server: StatusServer
) -> None:
    open_page(page, server, "/mood")
    page.wait_for_function("() => window.statusChart !== undefined")
    before = valence_points(page)
    page.evaluate("() => { window.__sameDocument = true; }")

    append_line(server.app.state.status.config.workspace, 175, "ray", "all green, good night")

    page.wait_for_function(
        f"() => window.statusChart.data.datasets.filter(d => d.kind === "
        f"'valence').reduce((n, d) => n + d.data.length, 0) === {before + 1}"
    )
    assert page.evaluate("() => window.__sameDocument") is True


def test_a_request_without_the_token_is_refused_with_401(
    browser: Any, server: StatusServer
) -> None:
    context = browser.new_context()
    try:
        response = context.new_page().goto(f"http://localhost:{server.port}/mood")
        assert response.status == 401
    finally:
        context.close()


def test_a_page_reached_through_a_foreign_host_name_is_refused(
    page: Any, server: StatusServer
) -> None:
    response = page.goto(f"http://evil.example:{server.port}/?token={server.token}")

    assert response.status == 400
    assert "local Host" in page.inner_text("body")


def test_the_deliveries_page_loads_and_says_when_no_hook_served_yet(
    page: Any, server: StatusServer
) -> None:
    open_page(page, server, "/deliveries")
    page.wait_for_selector("#deliveries-empty:not([hidden])")
    assert "No hook has served a prompt here yet" in page.inner_text("#deliveries-empty")
    assert page.locator("#deliveries-table tbody tr").count() == 0
