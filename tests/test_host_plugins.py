"""A host is one package plus one line in the registry (assembler/hosts/registry.py): a fake
host added that way is set up, removed, run as a hook and read, with no other file edited."""

from __future__ import annotations

import io
import json
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assembler.cli.main import main
from assembler.hosts import registry
from assembler.transcripts.hosts import check_format
from assembler.transcripts.read import default_sources, read_recent

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

# The fake host's package, as a new folder under assembler/hosts/ would hold it.
FAKE_HOST = {
    "__init__.py": '"""A host that exists only in a test."""\n',
    "host.py": '''
        """Its sessions: `.fake/*.jsonl` in the workspace, lines {"fake": {"who", "said", "at"}}"""

        from __future__ import annotations

        from pathlib import Path
        from typing import Any

        from assembler.hosts.host import PlainHost
        from assembler.transcripts.message import Message, parse_time
        from assembler.transcripts.reader import Node, Reader, Verdict


        class FakeReader(Reader):
            def node(self, value: object) -> Verdict:
                if not isinstance(value, dict) or not isinstance(value.get("fake"), dict):
                    return "bad"
                return Node(None, None, True, value)

            def take(self, value: dict[str, Any]) -> bool:
                line = value["fake"]
                role = "user" if line["who"] == "human" else "assistant"
                message = Message(role, line["said"], parse_time(line["at"]), self.source)
                return self._said(message) if role == "user" else self._reply(message)


        class FakeHost(PlainHost):
            label = "Fake Host"
            formats = ("fake",)
            reader_class = FakeReader

            def sources(self, workspace: Path, state_dir: Path, environ: Any) -> list[str]:
                folder = workspace / ".fake"
                return [str(path) for path in sorted(folder.glob("*.jsonl"))]

            def claims(self, line: Any) -> str | None:
                return "fake" if "fake" in line else None


        HOST = FakeHost()
    ''',
    "hook.py": '''
        """Its hook: the prompt it was given, said back as the host would take it."""

        from __future__ import annotations

        import json


        def run_hook(stdin: str, *, workspace: str | None, config_path: str | None) -> str:
            event = json.loads(stdin)
            return json.dumps({"context": f"fake block for {event['prompt']} in {workspace}"})
    ''',
    "setup.py": '''
        """Its setup and its removal."""

        from __future__ import annotations

        from pathlib import Path
        from typing import Any

        from assembler.hosts.removal import Removal, SettingsEdit


        def setup_text(config: Any, assemble: Path) -> str:
            return f"connect the fake host to {config.workspace} with {assemble} hook fake-host\\n"


        def removal(config: Any, assemble: Path, environ: Any) -> Removal:
            settings = config.workspace / ".fake" / "settings.json"
            step = SettingsEdit("the fake hook", settings, lambda value: value)
            return Removal("Fake Host", config.workspace, (step,))
    ''',
}


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[registry.Plugin]:
    """The fake host's folder, and its one line in the registry (before the generic reader,
    which reads what no other host claims)."""
    package = tmp_path / "packages" / "fake_host"
    package.mkdir(parents=True)
    for name, text in FAKE_HOST.items():
        (package / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    plugin = registry.Plugin("fake-host", "the fake host's hook", "fake_host")
    monkeypatch.setattr(registry, "PLUGINS", [*registry.PLUGINS[:-1], plugin, registry.PLUGINS[-1]])
    yield plugin
    for name in [name for name in sys.modules if name.startswith("fake_host")]:
        del sys.modules[name]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".fake").mkdir(parents=True)
    return folder


def test_the_fake_host_is_a_choice_of_setup_with_its_summary(
    fake_host: registry.Plugin, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["setup", "--help"])

    assert ended.value.code == 0
    said = capsys.readouterr().out
    assert "fake-host    the fake host's hook" in said
    assert "{openclaw,claude-code,codex,mcp,fake-host}" in said


def test_the_fake_hosts_setup_text_is_printed(
    fake_host: registry.Plugin, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "fake-host", "--workspace", str(ws), "--no-assemble"]) == 0

    assert f"connect the fake host to {ws} with " in capsys.readouterr().out


def test_the_fake_hosts_removal_is_printed(
    fake_host: registry.Plugin, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "fake-host", "--remove", "--workspace", str(ws)]) == 0

    said = capsys.readouterr().out
    assert "delete the fake hook" in said
    assert str(ws / ".fake" / "settings.json") in said


def test_the_fake_hosts_hook_answers_its_event(
    fake_host: registry.Plugin,
    ws: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"prompt": "deploy the api"})))

    assert main(["hook", "fake-host", "--workspace", str(ws)]) == 0

    assert json.loads(capsys.readouterr().out) == {
        "context": f"fake block for deploy the api in {ws}"
    }


def test_the_fake_hosts_sessions_are_found_and_read(fake_host: registry.Plugin, ws: Path) -> None:
    session = ws / ".fake" / "one.jsonl"
    lines = [
        {"fake": {"who": "human", "said": "why is the deploy failing?", "at": "2026-03-02T11:50Z"}},
        {"fake": {"who": "bot", "said": "The image tag is wrong.", "at": "2026-03-02T11:51Z"}},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    hosts = registry.reading_hosts()

    sources = default_sources(hosts, ws, ws / ".scratchpad", {})
    read = read_recent(sources, hosts=hosts, base=ws, now=NOW, max_messages=10, lookback=None)

    assert sources == [str(session)]
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", "why is the deploy failing?"),
        ("assistant", "The image tag is wrong."),
    ]
    assert read.sources[0].format == "fake"
    check_format(hosts, "fake")  # the config may force its format


def test_a_host_without_a_hook_is_no_choice_of_the_hook_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["hook", "openclaw"])

    said = capsys.readouterr().err
    assert "invalid choice: 'openclaw'" in said
    assert "{claude-code,codex}" in said


def test_every_host_of_the_registry_has_a_package_with_at_least_one_part() -> None:
    for plugin in registry.PLUGINS:
        assert any(plugin.has(part) for part in ("host", "setup", "hook")), plugin.name
    assert [host.label for host in registry.reading_hosts()][-1] == "generic JSONL"
