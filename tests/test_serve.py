"""The status page's HTTP side (assembler/serve.py, assembler/serve_data.py), through
Starlette's test client: the guard, the JSON API and the watcher."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest
from serve_workspace import HOSTILE, LINES, NOW, append_line, make_status_workspace
from starlette.testclient import TestClient

from assembler.assembly.log import AssemblyLog, log_path
from assembler.cli.main import main
from assembler.config.schema import Config
from assembler.mood.history import history_path
from assembler.observations.store import store_for
from assembler.serve.app import (
    MAX_EVENT_STREAMS,
    StatusServer,
    accepts_ip_hosts,
    allowed_hosts,
    create_app,
    host_name,
    is_loopback,
)
from assembler.serve.data import MAX_MARKDOWN_CHARS, MAX_RUN_RECORD_CHARS

TOKEN = "test-token-123"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return make_status_workspace(tmp_path / "ws")


@pytest.fixture
def client(config: Config) -> Iterator[TestClient]:
    moment = {"now": NOW}
    app = create_app(config, clock=lambda: moment["now"], token=TOKEN, poll_seconds=60)
    with TestClient(app, base_url="http://127.0.0.1:8765") as test_client:
        app.state.watcher.ready.wait(10)
        test_client.app_state = app.state  # type: ignore[attr-defined]
        test_client.moment = moment  # type: ignore[attr-defined]
        yield test_client


def api(client: TestClient, path: str) -> dict:
    response = client.get(path, headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_request_without_the_token_or_with_a_wrong_one_is_refused_with_401(
    client: TestClient,
) -> None:
    assert client.get("/api/now").status_code == 401
    assert client.get("/api/now?token=wrong").status_code == 401
    assert client.get("/static/vendor/chart.umd.min.js").status_code == 401
    assert client.get(f"/api/now?token={TOKEN}").status_code == 200


def test_a_foreign_host_header_is_refused_even_with_the_token(client: TestClient) -> None:
    response = client.get(f"/api/now?token={TOKEN}", headers={"host": "evil.example:8765"})

    assert response.status_code == 400
    assert (
        client.get(f"/api/now?token={TOKEN}", headers={"host": "localhost:8765"}).status_code == 200
    )
    assert client.get(f"/api/now?token={TOKEN}", headers={"host": "[::1]:8765"}).status_code == 200


def test_a_page_opened_with_the_token_sets_a_cookie_and_drops_the_token_from_the_url(
    client: TestClient,
) -> None:
    first = client.get(f"/mood?token={TOKEN}", follow_redirects=False)

    assert first.status_code == 303
    assert first.headers["location"] == "/mood"
    assert "httponly" in first.headers["set-cookie"].lower()
    page = client.get("/mood")
    assert page.status_code == 200
    assert 'data-page="mood"' in page.text
    assert "/static/vendor/chart.umd.min.js" in page.text


def test_every_response_carries_a_script_policy_that_allows_only_our_own_files(
    client: TestClient,
) -> None:
    for response in (client.get("/api/now"), client.get(f"/api/now?token={TOKEN}")):
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert response.headers["referrer-policy"] == "no-referrer"


def test_now_gives_the_file_rendered_without_its_html_and_the_time_left(
    client: TestClient,
) -> None:
    data = api(client, "/api/now")

    file = data["file"]
    assert (file["fresh"], file["left"]) == (True, "30m")
    assert "<h2>Emotional Context</h2>" in file["html"]
    assert "<script>" not in file["html"] and "&lt;script&gt;" in file["html"]
    assert "<img" not in file["html"] and "&lt;img" in file["html"]
    assert 'href="javascript' not in file["html"]
    assert HOSTILE in file["markdown"]
    assert data["daemon"] == {"running": False, "pid": None}


def test_now_says_stale_once_the_clock_passes_the_expiry(client: TestClient) -> None:
    client.moment["now"] = NOW + timedelta(minutes=45)  # type: ignore[attr-defined]

    file = api(client, "/api/now")["file"]

    assert (file["fresh"], file["expired_ago"]) == (False, "15m")


def test_mood_has_one_point_per_human_message_per_speaker(client: TestClient) -> None:
    data = api(client, "/api/mood?hours=24")

    points = {s["name"]: s["points"] for s in data["speakers"]}
    assert data["messages"] == len(LINES)
    assert {name: len(p) for name, p in points.items()} == {"ray": 5, "sam": 2}
    assert points["ray"][1]["text"] == LINES[1][2]
    assert points["ray"][1]["primary"] == "frustrated"
    assert points["ray"][1]["valence"] < 0 < points["ray"][3]["valence"]
    assert sum(p["moved"] for p in points["ray"]) == 3
    assert data["strategy"]["rule"]
    assert set(data["window"]["speakers"]) == {"ray", "sam"}


def test_mood_with_a_shorter_window_leaves_out_the_older_messages(client: TestClient) -> None:
    data = api(client, "/api/mood?hours=1")

    times = [p["at"] for s in data["speakers"] for p in s["points"]]
    assert len(times) == 2
    assert all(datetime.fromisoformat(t) >= NOW - timedelta(hours=1) for t in times)


def test_mood_with_hours_that_are_no_number_is_a_400_saying_what_to_give(
    client: TestClient,
) -> None:
    response = client.get(f"/api/mood?hours=abc&token={TOKEN}")

    assert response.status_code == 400
    assert "give a number of hours" in response.json()["error"]


def test_sections_give_each_section_with_its_size_cap_age_and_history(client: TestClient) -> None:
    data = api(client, "/api/sections")

    by_name = {s["name"]: s for s in data["sections"]}
    assert list(by_name) == ["goal", "findings"]
    assert by_name["goal"]["content"] == "Fix the failing prod deploy"
    assert by_name["goal"]["age"] == "30m"
    assert by_name["findings"]["tokens"] > 0
    assert by_name["findings"]["cap"] is None  # held by the agent part's cap alone
    assert [e["action"] for e in by_name["findings"]["history"]] == ["append"]
    assert data["agent_tokens"] == sum(s["tokens"] for s in data["sections"])


def test_observations_list_the_parked_outputs_with_size_and_expiry(client: TestClient) -> None:
    [entry] = api(client, "/api/observations")["entries"]

    assert entry["executor"] == "fs_read"
    assert entry["size_bytes"] > 6000
    assert entry["expires_in"] == "1h"


def test_memory_shows_the_queries_and_says_when_no_assembly_was_logged(
    client: TestClient,
) -> None:
    data = api(client, "/api/memory")

    assert data["source"]["kind"] == "history"
    assert data["queries"][0].startswith("long day")
    assert data["dropped"] == ["relevant_memories: an old note"]


def test_memory_shows_the_hits_of_the_last_logged_assembly_with_their_parts(
    client: TestClient, config: Config
) -> None:
    hit = {"path": "MEMORY.md", "start_line": 1, "end_line": 4, "score": 0.5, "snippet": "x"}
    hit |= {"vector": 0.61, "bm25": 0.3, "recency": 1.0}
    record = {"memory": {"queries": ["the deploy"], "hits": [hit], "explain": [], "chunks": 9}}
    other = hit | {"path": "memory/old.md", "start_line": 3, "end_line": 9}
    record["memory"]["hits"].append(other)
    dropped = ["daily_context: y", "relevant_memories: `memory/old.md:3-9` - z"]
    with AssemblyLog(log_path(config.state_dir)) as runs:
        runs.add(NOW, "change", 0.07, record | {"dropped": dropped})

    data = api(client, "/api/memory")

    assert data["source"]["kind"] == "assembly" and data["source"]["reason"] == "change"
    assert data["hits"][0]["vector"] == 0.61
    assert [h["in_file"] for h in data["hits"]] == [True, False]
    assert data["dropped"] == dropped
    assert api(client, "/api/now")["runs"][0]["ms"] == 70.0


def test_a_new_transcript_line_reaches_the_mood_history_on_the_next_look(
    client: TestClient, config: Config
) -> None:
    watcher = client.app_state.watcher  # type: ignore[attr-defined]
    before = watcher.version
    append_line(config.workspace, 170, "sam", "all green now, good night everyone")

    changed = watcher.check()

    assert "transcripts" in changed and "mood" in changed
    assert watcher.version == before + 1
    points = {s["name"]: s["points"] for s in api(client, "/api/mood")["speakers"]}
    assert points["sam"][-1]["text"] == "all green now, good night everyone"
    assert watcher.check() == []


def test_hosts_other_than_loopback_are_recognised_and_allowed_only_when_bound() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert host_name("[::1]:8765") == "::1" and host_name("LocalHost:80") == "localhost"
    assert "192.168.1.5" in allowed_hosts("192.168.1.5")
    assert "192.168.1.5" not in allowed_hosts("127.0.0.1")


def test_serve_with_a_port_in_use_says_so_and_exits_1(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--workspace", str(config.workspace), "--port", str(port)])

    assert code == 1
    assert f"Cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_an_old_workspace_still_fills_the_history_and_mood_offers_its_latest_day(
    config: Config,
) -> None:
    later = NOW + timedelta(days=30)
    app = create_app(config, clock=lambda: later, token=TOKEN, poll_seconds=60)
    with TestClient(app, base_url="http://127.0.0.1:8765") as old:
        app.state.watcher.ready.wait(10)

        empty = api(old, "/api/mood")
        latest = empty["latest"]
        shown = api(old, f"/api/mood?until={latest.replace('+', '%2B')}")

    assert empty["messages"] == 0
    assert datetime.fromisoformat(latest) == NOW - timedelta(minutes=30)  # the last line's time
    assert shown["messages"] == len(LINES)
    assert shown["end"] == latest


def test_mood_with_an_until_without_offset_is_a_400(client: TestClient) -> None:
    response = client.get(f"/api/mood?until=2026-03-02T12:00:00&token={TOKEN}")

    assert response.status_code == 400
    assert "offset" in response.json()["error"]


def test_a_scratchpad_that_is_a_link_out_of_the_workspace_is_not_read(
    config: Config, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(
        "---\nupdated: 2026-03-02T12:00:00Z\nexpires: 2026-03-02T13:00:00Z\n---\nSECRET"
    )
    config.output_path.unlink()
    config.output_path.symlink_to(secret)
    app = create_app(config, clock=lambda: NOW, token=TOKEN, poll_seconds=60)

    with TestClient(app, base_url="http://127.0.0.1:8765") as linked:
        file = api(linked, "/api/now")["file"]

    assert "symbolic link" in file["error"] or "link" in file["error"]
    assert "SECRET" not in str(file)


def test_serve_refuses_a_mood_history_that_is_a_link_and_exits_1(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere.sqlite"
    (config.state_dir / "mood.sqlite").symlink_to(outside)

    code = main(["serve", "--workspace", str(config.workspace), "--port", "0"])

    assert code == 1
    assert "link" in capsys.readouterr().err
    assert not outside.exists()


def test_serve_on_an_address_other_machines_reach_warns_before_it_listens(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(
            ["serve", "-w", str(config.workspace), "--host", "0.0.0.0", "--port", str(port)]
        )

    err = capsys.readouterr().err
    assert code == 1
    assert "warning: serving on 0.0.0.0, reachable from other machines" in err


def guarded(config: Config, bind: str) -> TestClient:
    """A test client of the app as `StatusServer` sets it up for the address `bind`."""
    app = create_app(
        config,
        clock=lambda: NOW,
        token=TOKEN,
        hosts=allowed_hosts(bind),
        ip_hosts=accepts_ip_hosts(bind),
        poll_seconds=60,
    )
    return TestClient(app, base_url="http://127.0.0.1:8765")


def status_of(client: TestClient, host: str) -> int:
    return client.get(f"/api/now?token={TOKEN}", headers={"host": host}).status_code


def test_bound_to_every_interface_the_page_answers_to_ip_addresses_but_not_to_names(
    config: Config,
) -> None:
    with guarded(config, "0.0.0.0") as client:
        assert status_of(client, "0.0.0.0:8765") == 200
        assert status_of(client, "192.168.1.5:8765") == 200  # the machine's LAN address
        assert status_of(client, "[fe80::1]:8765") == 200
        assert status_of(client, "evil.example:8765") == 400
        assert status_of(client, "192.168.1.5.evil.example") == 400


def test_bound_to_loopback_the_page_refuses_other_ip_addresses(config: Config) -> None:
    with guarded(config, "127.0.0.1") as client:
        assert status_of(client, "192.168.1.5:8765") == 400
        assert status_of(client, "127.0.0.1:8765") == 200


def test_a_host_header_that_only_starts_with_a_loopback_address_is_refused(
    client: TestClient,
) -> None:
    assert host_name("[::1].evil.com") == ""
    assert host_name("localhost:80.evil.com") == ""
    assert status_of(client, "[::1].evil.com") == 400
    assert status_of(client, "[::1].evil.com:8765") == 400
    assert status_of(client, "[::1]") == 200


@pytest.mark.parametrize(
    ("bind", "shown"),
    [("0.0.0.0", "127.0.0.1"), ("127.0.0.2", "127.0.0.2"), ("127.0.0.1", "localhost")],
)
def test_the_printed_url_opens_the_page(config: Config, bind: str, shown: str) -> None:
    from http.cookiejar import CookieJar
    from urllib.request import HTTPCookieProcessor, build_opener

    server = StatusServer(config, host=bind, port=0, clock=lambda: NOW, poll_seconds=60)
    server.start()
    try:
        # As a browser: the printed URL sets the cookie and redirects to the page.
        with build_opener(HTTPCookieProcessor(CookieJar())).open(server.url, timeout=10) as page:
            status, text = page.status, page.read().decode()
    finally:
        server.stop()

    assert server.url.startswith(f"http://{shown}:{server.port}/?token=")
    assert status == 200
    assert 'data-page="now"' in text


def test_serve_on_every_interface_prints_a_url_that_works_and_says_others_reach_it(
    config: Config, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(StatusServer, "run", lambda self: self.socket.close())

    code = main(["serve", "-w", str(config.workspace), "--host", "0.0.0.0", "--port", "0"])

    out = capsys.readouterr().out
    assert code == 0
    assert "http://127.0.0.1:" in out and "0.0.0.0" not in out
    assert "also reachable from other machines" in out


def test_the_redirect_that_drops_the_token_stays_on_this_server(client: TestClient) -> None:
    response = client.get(
        f"http://127.0.0.1:8765//evil.example/x?token={TOKEN}", follow_redirects=False
    )

    assert response.status_code == 303
    assert response.headers["location"] == "/evil.example/x"


def test_mood_with_an_until_too_early_for_its_span_is_a_400_naming_until(
    client: TestClient,
) -> None:
    response = client.get(f"/api/mood?until=0001-01-01T00:00:00%2B00:00&token={TOKEN}")

    assert response.status_code == 400
    assert response.json()["error"].startswith("until=")


def test_a_transcript_change_is_seen_in_a_workspace_whose_path_has_glob_characters(
    tmp_path: Path,
) -> None:
    make_status_workspace(tmp_path / "ws")  # what the unescaped pattern `w[s]` would match
    odd = make_status_workspace(tmp_path / "w[s]")
    app = create_app(odd, clock=lambda: NOW, token=TOKEN, poll_seconds=60)
    with TestClient(app, base_url="http://127.0.0.1:8765"):
        watcher = app.state.watcher
        watcher.ready.wait(10)
        append_line(odd.workspace, 170, "sam", "all green now, good night everyone")

        changed = watcher.check()

    assert "transcripts" in changed
    watched = [name for name, _ in watcher.signatures()["transcripts"]]
    assert watched == [str(odd.workspace / "transcripts" / "chat.jsonl")]


def test_pages_carry_an_inline_icon_and_favicon_is_no_404(client: TestClient) -> None:
    page = client.get(f"/mood?token={TOKEN}")

    assert '<link rel="icon" href="data:,">' in page.text
    assert client.get("/favicon.ico").status_code == 200


# -- Large input: every answer is bounded, whatever the agent left in the state folder ----------


def test_now_renders_only_the_first_32_kib_of_a_huge_block_and_says_so(
    client: TestClient, config: Config
) -> None:
    # Pathological emphasis: markdown-it took 32 s on 1.4 MB of it.
    text = config.output_path.read_text(encoding="utf-8")
    config.output_path.write_text(text + "*a **b " * 200_000, encoding="utf-8")

    file = api(client, "/api/now")["file"]

    assert file["markdown_cut"] is True
    assert file["markdown_length"] > 1_400_000
    assert len(file["markdown"]) <= MAX_MARKDOWN_CHARS
    assert "## Emotional Context" in file["markdown"]
    assert "Cut: the first 32 KiB of 1.3 MiB are shown" in file["html"]
    assert len(file["html"]) < 4 * MAX_MARKDOWN_CHARS


def test_now_of_an_ordinary_file_is_not_cut(client: TestClient) -> None:
    file = api(client, "/api/now")["file"]

    assert file["markdown_cut"] is False
    assert file["markdown_length"] == len(file["markdown"])
    assert "Cut:" not in file["html"]


def _log_runs(config: Config, records: list[dict[str, Any]]) -> None:
    with AssemblyLog(log_path(config.state_dir)) as runs:
        for index, record in enumerate(records):
            runs.add(NOW + timedelta(seconds=index), "interval", 0.01 * (index + 1), record)


def test_now_lists_the_runs_a_page_at_a_time_and_leaves_out_a_huge_record(
    client: TestClient, config: Config
) -> None:
    records: list[dict[str, Any]] = [{"messages_read": index} for index in range(12)]
    records[9] = {"messages_read": 9, "dropped": ["x" * 1000] * (MAX_RUN_RECORD_CHARS // 1000)}
    _log_runs(config, records)

    first = api(client, "/api/now?limit=5")
    second = api(client, f"/api/now?limit=5&before={first['runs_next']}")
    third = api(client, f"/api/now?limit=5&before={second['runs_next']}")

    assert [r.get("messages_read") for r in first["runs"]] == [11, 10, None, 8, 7]
    huge = first["runs"][2]
    assert huge["too_large"] is True and "dropped" not in huge and huge["reason"] == "interval"
    assert [r["messages_read"] for r in second["runs"]] == [6, 5, 4, 3, 2]
    assert [r["messages_read"] for r in third["runs"]] == [1, 0]
    assert third["runs_next"] is None
    assert len(api(client, "/api/now")["runs"]) == 10  # the default page


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=ten", "before=x", "limit=1.5"])
def test_now_with_a_bad_limit_or_cursor_is_a_400_naming_it(client: TestClient, query: str) -> None:
    response = client.get(f"/api/now?{query}&token={TOKEN}")

    assert response.status_code == 400
    assert response.json()["error"].startswith(query.split("=")[0] + "=")


def _add_moods(config: Config, count: int, at: datetime) -> None:
    """Rows as an agent could write them straight into the history: `count` messages said at
    the same moment (ties the paging must not lose or repeat), labels missing."""
    fixed = {"speaker": "ray", "session_id": "s", "source": "t", "length": 9}
    fixed |= {"primary_label": "happy", "primary_score": 0.5, "secondary_label": None}
    fixed |= {"secondary_score": 0.0, "valence": 0.2, "arousal": 0.3, "compound": 0.0}
    fixed |= {"scores": "{}", "scorer": ""}
    with sqlite3.connect(history_path(config.state_dir)) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(moods)")]
        for i in range(count):
            row = fixed | {"id": f"forged{i}", "at": at.timestamp(), "text": f"message {i}"}
            connection.execute(
                f"INSERT INTO moods ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                [row[name] for name in columns],
            )


def test_mood_gives_a_page_of_the_newest_points_and_a_cursor_to_the_older_ones(
    client: TestClient, config: Config
) -> None:
    _add_moods(config, 25, NOW - timedelta(minutes=1))

    pages = [api(client, "/api/mood?hours=24&limit=10")]
    while pages[-1]["next"] is not None:
        cursor = pages[-1]["next"]
        pages.append(api(client, f"/api/mood?hours=24&limit=10&before={cursor}"))

    ids = [p["id"] for page in pages for s in page["speakers"] for p in s["points"]]
    assert [page["shown"] for page in pages] == [10, 10, 10, 2]
    assert len(ids) == len(set(ids)) == 25 + len(LINES)
    assert {page["messages"] for page in pages} == {25 + len(LINES)}
    newest = {p["id"] for s in pages[0]["speakers"] for p in s["points"]}
    assert newest <= {f"forged{i}" for i in range(25)}
    # The window's mood is the same whichever page is shown.
    assert len({json.dumps(page["window"], sort_keys=True) for page in pages}) == 1
    assert pages[0]["window"]["messages"] == 25 + len(LINES)  # all within the lookback


@pytest.mark.parametrize("query", ["limit=0", "limit=20001", "limit=x", "before=nope"])
def test_mood_with_a_bad_limit_or_cursor_is_a_400(client: TestClient, query: str) -> None:
    response = client.get(f"/api/mood?{query}&token={TOKEN}")

    assert response.status_code == 400
    assert response.json()["error"].startswith(query.split("=")[0] + "=")


def test_observations_are_listed_a_page_at_a_time(client: TestClient, config: Config) -> None:
    with store_for(config, clock=lambda: NOW) as store:
        for index in range(4):
            store.put({"ok": True, "content": f"{index} " + "y" * 6000}, executor="fs_read")

    first = api(client, "/api/observations?limit=3")
    rest = api(client, f"/api/observations?limit=3&offset={first['next_offset']}")

    assert (first["total"], len(first["entries"]), first["next_offset"]) == (5, 3, 3)
    assert (len(rest["entries"]), rest["next_offset"]) == (2, None)
    ids = [e["scratchpad_id"] for e in first["entries"] + rest["entries"]]
    assert len(set(ids)) == 5


def _open_stream(port: int, token: str) -> tuple[socket.socket, int]:
    """Open /api/events on a raw connection; return it (left open) and the answer's status."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(
        f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n" not in head:
        chunk = connection.recv(1024)
        if not chunk:
            break
        head += chunk
    return connection, int(head.split(b" ")[1])


def test_event_streams_beyond_the_cap_are_refused_and_the_api_still_answers(
    config: Config,
) -> None:
    server = StatusServer(
        config, port=0, clock=lambda: NOW, poll_seconds=60, token=TOKEN, max_streams=3
    )
    server.start()
    opened: list[socket.socket] = []
    try:
        statuses = []
        for _ in range(4):
            connection, status = _open_stream(server.port, TOKEN)
            opened.append(connection)
            statuses.append(status)
        request = Request(
            f"http://127.0.0.1:{server.port}/api/now", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urlopen(request, timeout=10) as answer:
            now_status = answer.status
        # A page closed: its place is free again once the server has seen it go.
        opened.pop(0).close()
        reopened = 503
        for _ in range(200):
            connection, reopened = _open_stream(server.port, TOKEN)
            opened.append(connection)
            if reopened == 200:
                break
            server.app.state.watcher.ready.wait(0.05)  # the server notices the close
    finally:
        for connection in opened:
            connection.close()
        server.stop()

    assert statuses == [200, 200, 200, 503]
    assert now_status == 200
    assert reopened == 200
    assert MAX_EVENT_STREAMS == 32  # the cap of `assemble serve`
