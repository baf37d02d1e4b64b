"""Secrets a human pastes, and secrets in the memory notes, reach no output and no file: a corpus
of fake secrets of many kinds (assembler/redact.py) goes in through the transcript reader and the
memory index, and every place the program writes or answers from is read for any piece of them:
SCRATCHPAD.md, the ready block (prefix.json), mood.sqlite, assemblies.sqlite, the memory index,
`assemble search`, MCP `memory_search` (through the MCP SDK's own client), the status page's
API (/api/now, /api/mood, /api/memory) and the log. The routing hint still says HIGH, naming
the kind, for each one.

The values are built at run time from random parts (seeded), and the prefixes are written in
two pieces, so that no real-looking secret sits in this file for a scanner to flag.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import random
import sqlite3
import string
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from starlette.testclient import TestClient

import assembler.assembly.draft
from assembler.assembly.routing import route
from assembler.cli.main import main
from assembler.config.files import load_config
from assembler.redact import redact, scan
from assembler.serve.app import create_app
from assembler.transcripts.message import (
    ELISION,
    TEXT_HEAD_CHARS,
    TEXT_TAIL_CHARS,
    message_text,
)

REPO = Path(__file__).resolve().parent.parent
NOW = datetime.fromisoformat("2026-03-02T23:25:00+11:00")
TOKEN = "status-token-for-the-tests"

_rng = random.Random(20261126)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def _random(n: int, alphabet: str = ALNUM) -> str:
    """Return n random characters; from letters and digits, with all three classes in them."""
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if alphabet != ALNUM or (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


@dataclass(frozen=True)
class Secret:
    """One kind of secret: the label its finding has, a message that holds it, and its random
    parts, no piece of which may appear in any output."""

    kind: str
    label: str
    text: str
    values: tuple[str, ...]


def _pem(kind: str, lines: int = 20, newline: str = "\n") -> tuple[str, tuple[str, ...]]:
    body = tuple(_random(64, B64) for _ in range(lines))
    head, tail = f"-----BEGIN {kind}PRIV", "ATE KEY-----"
    end = f"-----END {kind}PRIV" + "ATE KEY-----"
    return head + tail + newline + newline.join(body) + newline + end, body


def _corpus() -> list[Secret]:
    cases: list[Secret] = []

    def add(kind: str, label: str, text: str, *values: str) -> None:
        cases.append(Secret(kind, label, text, values))

    upper = string.ascii_uppercase + string.digits
    v = _random(16, upper)
    add("AWS access key", "AWS access key", f"the key is AK{'IA'}{v} for the bucket", v)
    v = f"{_random(12)}/{_random(14)}+{_random(12)}"
    add("AWS secret key", "AWS secret key", f"and the secret {v} for the s3 upload", v)
    v = _random(36)
    add("GitHub token", "GitHub token", f"export GITHUB_TOKEN=gh{'p_'}{v}", v)
    v = f"{_random(22)}_{_random(59)}"
    add("GitHub fine-grained token", "GitHub token", f"use github{'_pat_'}{v}", v)
    v = _random(20)
    add("GitLab token", "GitLab token", f"the CI uses gl{'pat-'}{v} to push", v)
    v = _random(48)
    add("OpenAI key", "OpenAI/Anthropic API key", f"OPENAI_API_KEY=sk-{'proj-'}{v}", v)
    v = _random(90)
    add("Anthropic key", "OpenAI/Anthropic API key", f"the eval key sk-{'ant-api03-'}{v}", v)
    v = _random(24)
    add("Stripe key", "Stripe secret key", f"stripe sk{'_live_'}{v} please rotate", v)
    v = _random(24)
    add("Slack bot token", "Slack token", f"slack xo{'xb-'}2731984650-5839201746-{v}", v)
    t, b, v = _random(8, upper), _random(10, upper), _random(24)
    add(
        "Slack webhook", "Slack token", f"post to https://hooks.slack.com/services/T{t}/B{b}/{v}", v
    )
    v = _random(43, URLSAFE)
    add("JWT", "JWT", f"cookie session=ey{'J'}hbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYXkifQ.{v}", v)
    pem, body = _pem("RSA ")
    add("RSA private key", "private key block", f"here's the deploy key\n{pem}", *body)
    pem, body = _pem("OPENSSH ")
    add("OpenSSH private key", "private key block", f"my ssh key:\n{pem}\nthanks", *body)
    pem, body = _pem("", 25, "\\n")
    key_id = _random(40, HEX)
    gcp = json.dumps(
        {
            "type": "service_account",
            "project_id": "shop-prod",
            "private_key_id": key_id,
            "private_key": "PEM",
            "client_email": "deployer@shop-prod.iam.gserviceaccount.com",
        }
    ).replace('"PEM"', f'"{pem}\\n"')
    add("GCP service account", "private key block", f"the service account: {gcp}", *body, key_id)
    v = _random(40, HEX)
    add("GCP private key id", "GCP private key id", f'"private_key_id": "{v}"', v)
    v = _random(35, URLSAFE)
    add("Google API key", "Google API key", f"maps key AI{'za'}{v}", v)
    v = _random(34, string.ascii_letters)
    add("Hugging Face token", "Hugging Face token", f"HF_TOKEN=h{'f_'}{v}", v)
    a, v = _random(22, URLSAFE), _random(43, URLSAFE)
    add("SendGrid key", "SendGrid API key", f"sendgrid S{'G.'}{a}.{v}", a, v)
    v = _random(32, HEX)
    add("Twilio API key", "Twilio API key", f"twilio S{'K'}{v}", v)
    v = _random(32, HEX)
    add("Twilio account SID", "Twilio API key", f"the sid A{'C'}{v}", v)
    v = _random(36)
    add("npm token", "npm token", f"//registry.npmjs.org/:_authToken=np{'m_'}{v}", v)
    v = _random(80, URLSAFE)
    add("PyPI token", "PyPI token", f"pypi{'-AgEIcHlwaS5vcmc'}{v}", v)
    a, b, c = _random(23), _random(6), _random(27)
    add("Discord bot token", "Discord bot token", f"bot token M{a}.{b}.{c}", a, c)
    v = _random(33, URLSAFE)
    add("Telegram bot token", "Telegram bot token", f"bot 6123456789:A{'A'}{v}", v)
    v = _random(86, B64)
    add(
        "Azure storage key",
        "Azure storage account access key",
        f"DefaultEndpointsProtocol=https;AccountName=shop;Account{'Key='}{v}==",
        v,
    )
    v = _random(32, HEX)
    add("Mailchimp key", "Mailchimp access key", f"mailchimp {v}-us12", v)
    v = _random(64, HEX)
    add("DigitalOcean token", "DigitalOcean token", f"do{'p_v1_'}{v}", v)
    v = _random(32, HEX)
    add("Shopify token", "Shopify token", f"shopify shp{'at_'}{v}", v)
    v = _random(43, URLSAFE)
    add("Square OAuth secret", "Square OAuth secret", f"square sq0{'csp-'}{v}", v)
    v = _random(32, HEX)
    add("Databricks token", "Databricks token", f"dap{'i'}{v}", v)
    v = f"Tr0ub4dor-{_random(6)}"
    add("password in URL", "password in URL", f"DATABASE_URL=postgres://api:{v}@pg-prod-1/api", v)
    v = _random(40)
    add("bearer token", "bearer token", f"Authorization: Bearer {v}", v)
    v = f"Tr0ub4dor-{_random(6)}"
    add("password assignment", "password assignment", f"db password = {v}", v)
    for kind, template in (
        ("password said (en)", "my password is: {}, can you log in"),
        ("pw:", "pw: {}"),
        ("Passwort (de)", "Das Passwort: {}"),
        ("mot de passe (fr)", "mot de passe : {}"),
        ("contraseña (es)", "mi contraseña es: {}"),
        ("senha (pt)", "senha: {}"),
        ("wachtwoord (nl)", "wachtwoord: {}"),
        ("password (it)", "la password è {}"),
    ):
        v = f"{_random(5, string.ascii_letters)}-{_random(4, string.digits)}!"
        add(kind, "password", template.format(v), v)
    v = _random(40)
    add("random token", "generic high-entropy token", f"webhook signing value: {v}", v)
    v = _random(90, URLSAFE)
    add("Vault token", "HashiCorp Vault token", f"VAULT_TOKEN=hv{'s.'}{v}", v)
    v = _random(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
    add("age secret key", "age secret key", f"AGE-SECRET{'-KEY-1'}{v}", v)
    v = _random(28, URLSAFE)
    add("Google OAuth secret", "Google OAuth client secret", f"GOC{'SPX-'}{v}", v)
    v = _random(120, URLSAFE)
    add("Google OAuth token", "Google OAuth token", f"access ya{'29.'}{v}", v)
    v = _random(27, URLSAFE)
    add("Docker token", "Docker access token", f"dckr{'_pat_'}{v}", v)
    a, b = _random(32), _random(8, HEX)
    add("Grafana token", "Grafana token", f"gls{'a_'}{a}_{b}", a)
    a, b = _random(24, HEX), _random(34, HEX)
    add("Postman key", "Postman API key", f"PM{'AK-'}{a}-{b}", a, b)
    v = _random(40)
    add("Linear key", "Linear API key", f"lin{'_api_'}{v}", v)
    v = _random(27, upper)
    add("New Relic key", "New Relic key", f"NR{'AK-'}{v}", v)
    v = _random(40, HEX)
    add("Supabase token", "Supabase token", f"sb{'p_'}{v}", v)
    a, v = _random(3), _random(34, ALNUM + "_~.-")
    add("Azure AD secret", "Azure AD client secret", f"client secret {a}8{'Q~'}{v}", v)
    v = _random(48)
    add("Perplexity key", "Perplexity API key", f"ppl{'x-'}{v}", v)
    v = _random(64, HEX)
    add("OpenRouter key", "OpenRouter API key", f"sk-{'or-v1-'}{v}", v)
    v = _random(43)
    add("Doppler token", "Doppler token", f"dp.{'st.'}prd.{v}", v)
    v = _random(16)
    add("Alibaba key", "Alibaba Cloud key", f"LT{'AI'}{v}", v)
    v = _random(40)
    add("Stripe webhook secret", "Stripe webhook secret", f"wh{'sec_'}{v}", v)
    return cases


CORPUS = _corpus()
KINDS = [pytest.param(secret, id=secret.kind) for secret in CORPUS]
WINDOW = 12  # a piece this long of a random value appears nowhere by chance


def leaks(output: str, secrets: list[Secret] = CORPUS) -> list[str]:
    """Given an output, return the kinds of which a piece of a value appears in it."""
    found = []
    for secret in secrets:
        for value in secret.values:
            pieces = (
                [value]
                if len(value) <= WINDOW
                else [value[i : i + WINDOW] for i in range(0, len(value) - WINDOW + 1, 4)]
            )
            if any(piece in output for piece in pieces):
                found.append(secret.kind)
                break
    return found


def test_the_corpus_has_over_thirty_kinds_with_their_own_labels() -> None:
    assert len(CORPUS) >= 50
    assert len({secret.label for secret in CORPUS}) >= 40


# --- each kind: found, redacted, and still found once redacted ---------------------------------


@pytest.mark.parametrize("secret", KINDS)
def test_each_kind_is_found_under_its_label(secret: Secret) -> None:
    found = scan([secret.text])
    assert secret.label in [f.label for f in found if f.kind == "secret"]


@pytest.mark.parametrize("secret", KINDS)
def test_each_kind_is_redacted_and_the_marker_still_counts_as_its_kind(secret: Secret) -> None:
    clean = redact(secret.text)
    assert leaks(clean, [secret]) == []
    assert f"[redacted {secret.label}]" in clean
    assert redact(clean) == clean  # redacting twice changes nothing
    # What the reader keeps is redacted text: scanning it still says what was there.
    assert {(f.kind, f.label) for f in scan([clean])} == {
        (f.kind, f.label) for f in scan([secret.text])
    }


@pytest.mark.parametrize("secret", KINDS)
def test_the_message_the_reader_keeps_holds_no_secret_and_routes_high(secret: Secret) -> None:
    kept, _ = message_text(f"hey, {secret.text}\nplease deploy with it")
    assert leaks(kept, [secret]) == []
    hint = route([kept])
    assert hint.sensitivity == "high"
    assert secret.label in hint.sensitivity_reason
    assert hint.tier == "local-only"


# --- each kind through a whole assembly ---------------------------------------------------------


def write_transcript(path: Path, lines: list[tuple[float, str, str]]) -> None:
    """Write a generic JSONL transcript of (minutes before NOW, role, text) lines."""
    with path.open("w", encoding="utf-8") as handle:
        for minutes, role, text in lines:
            stamp = (NOW - timedelta(minutes=minutes)).isoformat()
            handle.write(json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n")


CONFIG = (
    '[transcripts]\nsources = ["chat.jsonl"]\nlookback = "24h"\n[time]\ntimezone = "UTC"\n'
    '[memory]\nmodel = "none"\n'
)


@pytest.mark.parametrize("secret", KINDS)
def test_the_file_says_high_sensitivity_naming_the_kind_and_holds_no_secret(
    secret: Secret, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text(CONFIG + "enabled = false\n")
    write_transcript(
        workspace / "chat.jsonl",
        [
            (20, "user", "the deploy of the api keeps failing"),
            (19, "assistant", "Which credentials does it use?"),
            (18, "user", f"these, deploy with them: {secret.text}"),
        ],
    )
    assert main(["--once", "-w", str(workspace), "--now", NOW.isoformat()]) == 0
    capsys.readouterr()
    page = (workspace / "SCRATCHPAD.md").read_text()
    ready = (workspace / ".scratchpad" / "prefix.json").read_text()
    assert "**Content sensitivity:** HIGH" in page
    assert secret.label in page[page.index("## Routing Hint") :]
    assert leaks(page, [secret]) == [] and leaks(ready, [secret]) == []


# --- every kind at once, through every output ---------------------------------------------------


@dataclass
class World:
    """A workspace whose transcript and memory notes hold every kind of the corpus, assembled,
    searched and served, and what each output said."""

    workspace: Path
    home: Path
    outputs: dict[str, str] = field(default_factory=dict)


def _notes() -> str:
    lines = ["# Credentials", ""]
    for secret in CORPUS:
        lines += [f"## {secret.kind}", "", f"The deploy credentials ({secret.kind}): {secret.text}"]
        lines.append("")
    return "\n".join(lines)


def _dump_sqlite(path: Path) -> str:
    """Given a SQLite file, return every row of every table as text (blobs decoded)."""
    rows: list[str] = []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            try:
                found = db.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.DatabaseError:
                continue  # an FTS5 shadow table that only its module reads
            for row in found:
                rows.append(
                    " ".join(
                        c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c)
                        for c in row
                    )
                )
    return "\n".join(rows)


def _written_files(world: World) -> Iterator[Path]:
    """Yield every file the program wrote: all but the inputs (the transcript and notes)."""
    inputs = {"chat.jsonl", "MEMORY.md", "assembler.toml"}
    for root in (world.workspace, world.home):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name not in inputs and "memory" not in path.parts:
                yield path


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def _mcp_search(world: World, query: str) -> str:
    """Ask `assemble mcp` on the world's workspace for `memory_search`, through the SDK."""
    environment = {"HOME": str(world.home)}
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        environment[name] = str(world.home / name.lower())
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "import sys; from assembler.cli.main import main; sys.exit(main())",
            "mcp",
            "--workspace",
            str(world.workspace),
        ],
        env=environment,
        cwd=str(REPO),
    )
    answer: list[str] = []

    async def session() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client:
                result = await client.call_tool("memory_search", {"query": query, "k": 50})
                assert not result.is_error, result
                text = "\n".join(block.text for block in result.content)
                answer.append(text + "\n" + json.dumps(result.structured_content))

    anyio.run(session)
    return answer[0]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("home")
    world = World(tmp_path_factory.mktemp("workspace"), home)
    ws = world.workspace
    (ws / "assembler.toml").write_text(CONFIG)
    (ws / "MEMORY.md").write_text(_notes())
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-03-02.md").write_text(
        "# 2026-03-02\n\n- 21:00 rotated the deploy credentials: "
        + "; ".join(s.text for s in CORPUS[:10])
        + "\n"
    )
    lines: list[tuple[float, str, str]] = []
    for i, secret in enumerate(CORPUS):
        minutes = 600 - 10 * i
        lines.append((minutes, "user", f"here are the deploy credentials: {secret.text}"))
        lines.append((minutes - 1, "assistant", f"Saved, I will use {secret.text} for the deploy."))
    lines.append((2, "user", f"deploy the api with these credentials now: {CORPUS[0].text}"))
    write_transcript(ws / "chat.jsonl", lines)
    records = _Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    out = io.StringIO()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))
            for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
                patch.setenv(name, str(home / name.lower()))
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                assert main(["--once", "-w", str(ws), "--now", NOW.isoformat()]) == 0
                query = "deploy credentials"
                assert main(["search", "-w", str(ws), query, "-k", "50"]) == 0
                world.outputs["search"] = out.getvalue()
                assert main(["search", "-w", str(ws), "--json", query, "-k", "50"]) == 0
                world.outputs["search --json"] = out.getvalue()

                # A bug that puts the messages in an error: the traceback goes to the log file.
                def explode(texts: list[str], **_: Any) -> None:
                    raise RuntimeError("routing failed on: " + " | ".join(texts))

                patch.setattr(assembler.assembly.draft, "route", explode)
                assert main(["--once", "-w", str(ws), "--now", NOW.isoformat()]) == 3
            world.outputs["stdout and stderr"] = out.getvalue()
            world.outputs["MCP memory_search"] = _mcp_search(world, query)
            config = load_config(str(ws))
            app = create_app(config, clock=lambda: NOW, token=TOKEN, poll_seconds=60)
            with TestClient(app, base_url="http://127.0.0.1:8765") as client:
                app.state.watcher.ready.wait(10)
                for path in ("/api/now", "/api/mood?hours=24", "/api/memory"):
                    response = client.get(path, headers={"authorization": f"Bearer {TOKEN}"})
                    assert response.status_code == 200, response.text
                    world.outputs[path] = response.text
    finally:
        root.removeHandler(records)
        root.setLevel(level)
    world.outputs["log records"] = "\n".join(records.lines)
    yield world


def test_the_world_holds_every_kind_where_it_is_read(world: World) -> None:
    # The inputs do hold the secrets: else the tests below would prove nothing.
    chat = (world.workspace / "chat.jsonl").read_text()
    notes = (world.workspace / "MEMORY.md").read_text()
    assert set(leaks(chat)) == set(leaks(notes)) == {s.kind for s in CORPUS}


def test_the_file_and_the_ready_block_hold_no_secret_and_say_high(world: World) -> None:
    page = (world.workspace / "SCRATCHPAD.md").read_text()
    ready = (world.workspace / ".scratchpad" / "prefix.json").read_text()
    assert leaks(page) == [] and leaks(ready) == []
    assert "**Content sensitivity:** HIGH" in page
    assert "[redacted " in page  # the latest request quoted a secret: the marker stands there


@pytest.mark.parametrize("name", ["mood.sqlite", "assemblies.sqlite", "index.sqlite"])
def test_the_state_databases_hold_no_secret_in_any_row(world: World, name: str) -> None:
    (path,) = [p for p in _written_files(world) if p.name == name]
    rows = _dump_sqlite(path)
    assert rows.strip()
    assert leaks(rows) == []
    if name != "assemblies.sqlite":
        assert "[redacted " in rows  # the messages and chunks are there, redacted


def test_no_file_the_program_wrote_holds_a_secret_even_in_its_raw_bytes(world: World) -> None:
    written = list(_written_files(world))
    assert any(p.name == "assembler.log" for p in written)
    for path in written:
        raw = path.read_bytes().decode("utf-8", "replace")
        assert leaks(raw) == [], path


@pytest.mark.parametrize("name", ["search", "search --json", "MCP memory_search"])
def test_memory_search_answers_hold_no_secret(world: World, name: str) -> None:
    answer = world.outputs[name]
    assert "MEMORY.md" in answer and "[redacted " in answer
    assert leaks(answer) == []


@pytest.mark.parametrize("path", ["/api/now", "/api/mood?hours=24", "/api/memory"])
def test_the_status_page_api_holds_no_secret(world: World, path: str) -> None:
    answer = world.outputs[path]
    assert leaks(answer) == []
    if path == "/api/now":
        assert "HIGH" in answer


def test_the_log_holds_no_secret(world: World) -> None:
    log = world.home / "xdg_state_home" / "scratchpad-assembler" / "assembler.log"
    text = log.read_text()
    assert "routing failed on: " in text and "[redacted " in text
    assert leaks(text) == []
    assert leaks(world.outputs["log records"]) == []
    assert leaks(world.outputs["stdout and stderr"]) == []


# --- long pastes: what is cut away still counts -------------------------------------------------


def test_a_key_in_the_middle_of_a_long_paste_still_routes_high() -> None:
    gcp = next(s for s in CORPUS if s.kind == "GCP service account")
    for before, after in ((2000, 3000), (600, 1000), (20, 4000)):
        paste = "log line ok\n" * before + gcp.text + "\n" + "more log\n" * after
        kept, length = message_text(paste)
        assert length == len(paste) and ELISION in kept
        assert leaks(kept, [gcp]) == []
        assert route([kept]).sensitivity == "high", (before, after)


def test_a_cut_never_halves_a_marker_nor_leaves_half_a_token() -> None:
    token = next(s for s in CORPUS if s.kind == "GitHub token")
    for offset in range(-60, 60, 7):
        pad = "x " * ((TEXT_HEAD_CHARS + offset) // 2)
        paste = pad + token.text + " " + "y " * 20_000 + token.text + " " + "z " * 2400
        kept, _ = message_text(paste)
        head, tail = kept.split(ELISION)
        assert leaks(kept, [token]) == []
        assert head.count("[redacted") == head.count("]")
        assert [(f.kind, f.label) for f in route([kept]).findings] == [("secret", "GitHub token")]
        assert len(tail) <= TEXT_TAIL_CHARS + 100
