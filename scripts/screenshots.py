"""Take the screenshots of the status page in docs/screenshots/ from the demo workspace.

    python scripts/screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]

Copies workspace-example/ (its transcripts, notes and config; not its state) to a temporary
folder, assembles it once at the demo's clock (2026-03-02T23:25:00+11:00, as `make demo`
does; the bundled embedding model loads) and logs that run as the daemon logs its runs,
parks one generated tool output (our own text) so the Observations page has a row, serves the
status page and photographs each page in headless Chromium (Playwright).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from assembler.assembly.log import record_run  # noqa: E402
from assembler.assembly.pipeline import run_once  # noqa: E402
from assembler.config.files import load_config  # noqa: E402
from assembler.observations.store import store_for  # noqa: E402
from assembler.serve.app import StatusServer  # noqa: E402

DEMO_NOW = datetime.fromisoformat("2026-03-02T23:25:00+11:00")
PAGES = ("now", "mood", "memory", "sections", "observations")
LOWEST_POINT = """() => {
  const chart = window.statusChart;
  let best = null;
  chart.data.datasets.forEach((set, i) => {
    if (set.kind !== "valence") return;
    set.data.forEach((point, j) => {
      if (best !== null && point.y >= best.y) return;
      best = { y: point.y, element: chart.getDatasetMeta(i).data[j] };
    });
  });
  const box = chart.canvas.getBoundingClientRect();
  return [box.left + best.element.x, box.top + best.element.y];
}"""


def demo_workspace(folder: Path) -> Path:
    """Copy the example workspace without its state into `folder`; return the copy."""
    target = folder / "workspace-example"
    shutil.copytree(
        REPO / "workspace-example",
        target,
        ignore=shutil.ignore_patterns(".scratchpad", "SCRATCHPAD.md"),
    )
    return target


def park_a_log(config: object) -> None:
    lines = [
        f"2026-03-02T23:{minute:02d}:00 INFO api-7f9c readiness probe ok ({minute} ms)"
        for minute in range(10, 22)
    ]
    lines.append("2026-03-02T23:21:30 ERROR api-7f9c migration 49 waiting for a lock on users")
    text = "\n".join(lines * 20)
    with store_for(config, clock=lambda: DEMO_NOW) as store:  # type: ignore[arg-type]
        store.put({"ok": True, "content": text}, executor="kubectl_logs", step=3, now=DEMO_NOW)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="screenshots-") as temp:
        config = load_config(str(demo_workspace(Path(temp))), None)
        started = time.perf_counter()
        assembly = run_once(config, now=DEMO_NOW)
        record_run(config, assembly, "start", time.perf_counter() - started)
        park_a_log(config)
        server = StatusServer(config, port=0, clock=lambda: DEMO_NOW)
        server.start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=args.chromium, args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                page.goto(server.url)
                for name in PAGES:
                    path = "/" if name == "now" else f"/{name}"
                    page.goto(f"http://localhost:{server.port}{path}")
                    page.wait_for_load_state("networkidle")
                    if name == "mood":
                        page.wait_for_function("() => window.statusChart !== undefined")
                        # Open the most negative message: the evening's frustrated stretch.
                        x, y = page.evaluate(LOWEST_POINT)
                        page.mouse.click(x, y)
                        page.wait_for_selector("#mood-text")
                    page.screenshot(path=str(args.out / f"{name}.png"), full_page=True)
                    print(f"wrote {args.out / f'{name}.png'}")
                browser.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
