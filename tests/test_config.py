from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from assembler.config.files import init_config, load_config, sample_config_path, to_toml, validate
from assembler.config.schema import Config, parse_duration
from assembler.errors import ConfigError, TranscriptError, WorkspaceError
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import read_recent


def test_defaults_apply_when_no_config_file_exists(workspace: Path) -> None:
    config = load_config(workspace)
    assert config.source is None
    assert config.output.ttl_minutes == 30
    assert config.caps.auto == 350
    assert config.output_path == workspace / "SCRATCHPAD.md"


def test_every_problem_is_reported_at_once_with_its_key(workspace: Path) -> None:
    (workspace / "assembler.toml").write_text(
        '[output]\nttl_minutes = -5\ncolour = "red"\n'
        '[transcripts]\nmax_messages = "many"\nformat = "XML files"\n'
        '[time]\ntimezone = "Mars/Olympus"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    message = str(caught.value)
    assert "5 problems" in message
    assert "At 'output.ttl_minutes': expected a positive number, got -5" in message
    assert message.count("\n") == 5  # a heading line, then one line per problem
    assert "At 'output.colour': unknown key" in message
    assert "At 'transcripts.max_messages': expected an integer, got 'many'" in message
    assert "At 'transcripts.format': expected 'auto' or the name of a transcript format" in message
    assert "At 'time.timezone': expected an IANA time zone" in message
    assert str(workspace / "assembler.toml") in message


def test_unknown_top_level_table_is_an_error() -> None:
    with pytest.raises(ConfigError, match="At 'memroy': unknown key; known keys here: output"):
        validate({"memroy": {}}, source=None, workspace=Path("."))


def test_booleans_are_not_accepted_as_integers() -> None:
    with pytest.raises(ConfigError, match=r"At 'caps\.total': expected an integer, got True"):
        validate({"caps": {"total": True}}, source=None, workspace=Path("."))


def test_malformed_toml_names_the_file_and_the_fix(workspace: Path) -> None:
    (workspace / "assembler.toml").write_text("[output\n")
    with pytest.raises(ConfigError, match=r"assembler.toml is not valid TOML .*fix the syntax"):
        load_config(workspace)


def test_config_is_found_in_documented_order(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    user = isolated_home / "xdg_config_home" / "scratchpad-assembler" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[output]\nttl_minutes = 1\n")
    assert load_config(workspace).output.ttl_minutes == 1
    (workspace / "assembler.toml").write_text("[output]\nttl_minutes = 2\n")
    assert load_config(workspace).output.ttl_minutes == 2
    (workspace / ".scratchpad").mkdir()
    (workspace / ".scratchpad" / "config.toml").write_text("[output]\nttl_minutes = 3\n")
    assert load_config(workspace).output.ttl_minutes == 3
    env_file = tmp_path / "env.toml"
    env_file.write_text("[output]\nttl_minutes = 4\n")
    monkeypatch.setenv("ASSEMBLER_CONFIG", str(env_file))
    assert load_config(workspace).output.ttl_minutes == 4
    flag_file = tmp_path / "flag.toml"
    flag_file.write_text("[output]\nttl_minutes = 5\n")
    assert load_config(workspace, flag_file).output.ttl_minutes == 5


def test_missing_explicit_config_is_an_error_naming_its_origin(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"nope.toml' \(from --config\) does not exist"):
        load_config(workspace, "nope.toml")
    monkeypatch.setenv("ASSEMBLER_CONFIG", "/no/such.toml")
    with pytest.raises(ConfigError, match=r"from \$ASSEMBLER_CONFIG"):
        load_config(workspace)


def test_workspace_comes_from_the_environment_and_must_exist(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_WORKSPACE", str(workspace))
    assert load_config().workspace == workspace.resolve()
    with pytest.raises(WorkspaceError, match="does not exist; create it or pass --workspace"):
        load_config(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(WorkspaceError, match="is a file, not a folder"):
        load_config(tmp_path / "file")


def test_named_tables_extend_the_defaults() -> None:
    config = validate(
        {
            "strategy": {
                "rules": {"tired": {"style": "s", "tone": "t", "verbosity": "v", "preamble": True}}
            },
            "routing": {"tiers": {"low": "tiny"}},
        },
        source=None,
        workspace=Path("."),
    )
    assert config.strategy.rules["tired"].style == "s"
    assert "frustrated" in config.strategy.rules
    assert config.routing.tiers["low"] == "tiny"
    assert config.routing.tiers["high"] == "advanced"


def test_a_rule_missing_a_field_names_it() -> None:
    with pytest.raises(ConfigError, match=r"At 'strategy\.rules\.bored\.tone': required key"):
        validate(
            {"strategy": {"rules": {"bored": {"style": "s", "verbosity": "v", "preamble": True}}}},
            source=None,
            workspace=Path("."),
        )


def test_cross_checks_catch_inconsistent_values() -> None:
    with pytest.raises(ConfigError) as caught:
        validate(
            {
                "caps": {"auto": 900, "total": 800, "sections": {"No pe": 3}},
                "strategy": {"fallback": "zen"},
                "routing": {"extra_secret_patterns": ["(unclosed", "x*"]},
            },
            source=None,
            workspace=Path("."),
        )
    message = str(caught.value)
    assert "At 'caps.auto': 900 is larger than 'caps.total'" in message
    assert "At 'caps.sections.No pe': unknown section" in message
    assert "At 'strategy.fallback': no rule named 'zen'" in message
    assert "'(unclosed' is not a valid regular expression" in message
    assert "'x*' matches the empty string" in message


def test_one_pass_reports_bad_regex_missing_template_folder_and_non_mood_rule_together(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as caught:
        validate(
            {
                "output": {"template_dir": "my-templates", "ttl_minutes": -1},
                "strategy": {
                    "rules": {
                        "angry": {"style": "s", "tone": "t", "verbosity": "v", "preamble": False}
                    }
                },
                "routing": {"extra_secret_patterns": ["(unclosed"]},
                "caps": {"auto": 900, "total": 800, "agent": 700},
            },
            source=None,
            workspace=tmp_path,
        )
    message = str(caught.value)
    assert "has 5 problems" in message
    assert "At 'output.ttl_minutes': expected a positive number" in message
    assert f"At 'output.template_dir': '{tmp_path / 'my-templates'}' is not a folder" in message
    assert "At 'strategy.rules.angry': 'angry' is not a mood" in message
    assert "strategy.fallback = 'angry'" in message  # the other way to make it apply
    assert "At 'routing.extra_secret_patterns': '(unclosed' is not a valid regular" in message
    assert "At 'caps.auto': 900 is larger than 'caps.total'" in message


def test_a_rule_named_as_the_fallback_need_not_be_a_mood(tmp_path: Path) -> None:
    (tmp_path / "my-templates").mkdir()
    rule = {"style": "s", "tone": "t", "verbosity": "v", "preamble": False}
    config = validate(
        {
            "output": {"template_dir": "my-templates"},
            "strategy": {"fallback": "calm", "rules": {"calm": rule}},
        },
        source=None,
        workspace=tmp_path,
    )
    assert config.strategy.rules["calm"].style == "s"


def test_the_default_rules_name_exactly_the_mood_models_labels() -> None:
    from assembler.config.schema import StrategyConfig
    from assembler.mood.window import MOODS

    # Rule names are checked against the default table, so it must follow the labels.
    assert sorted(StrategyConfig().rules) == sorted(MOODS)


def test_config_validate_rejects_what_once_would_reject(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli.main import main

    (workspace / "assembler.toml").write_text('[output]\ntemplate_dir = "nope"\n')
    assert main(["config", "validate", "--workspace", str(workspace)]) == 1
    assert "At 'output.template_dir'" in capsys.readouterr().err


def test_a_format_no_host_writes_is_refused_by_validate_and_by_the_reading(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli.main import main

    (workspace / "assembler.toml").write_text('[transcripts]\nformat = "xml"\n')
    assert main(["config", "validate", "--workspace", str(workspace)]) == 1
    said = capsys.readouterr().err
    assert "At 'transcripts.format': expected one of 'auto', " in said
    assert "got 'xml'" in said
    with pytest.raises(TranscriptError, match=r"At 'transcripts.format': .*got 'xml'"):
        read_recent(
            [],
            hosts=HOSTS,
            base=workspace,
            now=datetime(2026, 3, 2, tzinfo=UTC),
            max_messages=10,
            lookback=None,
            fmt="xml",
        )


def test_a_bad_workspace_from_the_environment_is_blamed_on_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_WORKSPACE", str(tmp_path / "gone"))
    with pytest.raises(WorkspaceError) as caught:
        load_config()
    message = str(caught.value)
    assert "came from $ASSEMBLER_WORKSPACE" in message
    assert "fix or unset $ASSEMBLER_WORKSPACE" in message
    assert "set $ASSEMBLER_WORKSPACE" not in message.replace("unset $", "")
    with pytest.raises(WorkspaceError, match="came from --workspace"):
        load_config(tmp_path / "also-gone")


@pytest.mark.parametrize("problem", ["workspace", "config"])
def test_check_exits_2_with_one_line_when_the_workspace_or_config_is_wrong(
    problem: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from assembler.cli.main import main

    if problem == "workspace":
        monkeypatch.setenv("ASSEMBLER_WORKSPACE", str(workspace / "gone"))
        argv = ["check"]
    else:
        (workspace / "assembler.toml").write_text("[output]\nttl_minutes = -1\npath = 3\n")
        argv = ["check", "--workspace", str(workspace)]

    code = main(argv)

    out = capsys.readouterr().out
    assert code == 2
    assert out.startswith("missing or unreadable: ") and out.count("\n") == 1
    assert ("ASSEMBLER_WORKSPACE" if problem == "workspace" else "output.ttl_minutes") in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("2h", timedelta(hours=2)),
        ("1h30m", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1.5h", timedelta(minutes=90)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "soon", "5", "3w", "h"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration(text)


def test_lookback_none_means_no_limit() -> None:
    config = validate({"transcripts": {"lookback": "none"}}, source=None, workspace=Path("."))
    assert config.transcripts.lookback_delta is None


def test_sample_config_is_valid_and_equals_the_defaults() -> None:
    data = tomllib.loads(sample_config_path().read_text())
    sample = validate(data, source=sample_config_path(), workspace=Path("."))
    assert sample.to_dict() == Config().to_dict()


def test_init_writes_the_sample_and_refuses_to_overwrite(workspace: Path) -> None:
    target = init_config(workspace / "assembler.toml")
    assert target.read_text() == sample_config_path().read_text()
    with pytest.raises(ConfigError, match="already exists; pass --force"):
        init_config(target)
    target.write_text("# mine\n")
    init_config(target, force=True)
    assert target.read_text() == sample_config_path().read_text()


def test_effective_config_round_trips_through_toml() -> None:
    config = validate({"output": {"ttl_minutes": 12}}, source=None, workspace=Path("."))
    again = validate(tomllib.loads(to_toml(config.to_dict())), source=None, workspace=Path("."))
    assert again.to_dict() == config.to_dict()


def test_a_single_problem_is_one_line_naming_the_file(workspace: Path) -> None:
    (workspace / "assembler.toml").write_text("[output]\nttl_minutes = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    assert str(caught.value) == (
        f"{workspace / 'assembler.toml'}: At 'output.ttl_minutes': expected a positive number, "
        "got 0"
    )


def test_complexity_keywords_are_checked_and_reach_the_routing_hint(workspace: Path) -> None:
    with pytest.raises(ConfigError, match=r"complexity_keywords\.huge': unknown level"):
        validate(
            {"routing": {"complexity_keywords": {"huge": ["x"]}}}, source=None, workspace=workspace
        )
    from assembler.assembly.routing import route

    config = validate(
        {"routing": {"complexity_keywords": {"high": ["kerfuffle"]}}},
        source=None,
        workspace=workspace,
    )
    hint = route(["sort out the kerfuffle"], complexity_keywords=config.routing.complexity_keywords)
    assert hint.complexity == "high"


# --- The workspace's config is the agent's: it names no code and no place outside --------------


def _user_config(home: Path, text: str) -> Path:
    path = home / "xdg_config_home" / "scratchpad-assembler" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[tokens]\ncounter = "os:system"\n', "tokens.counter"),
        ('[output]\ntemplate_dir = "tpl"\n', "output.template_dir"),
        ('[memory]\nmodel = "/models/evil"\n', "memory.model"),
        ('[output]\npath = "/tmp/elsewhere/pwned.md"\n', "output.path"),
        ('[output]\npath = "../outside.md"\n', "output.path"),
        ('[daily]\nfolder = "../../etc"\n', "daily.folder"),
        ('[transcripts]\nsources = ["/etc/*"]\n', "transcripts.sources"),
        ('[transcripts]\nsources = ["~/.ssh/*"]\n', "transcripts.sources"),
        ('[memory]\nsources = ["../../*"]\n', "memory.sources"),
    ],
)
def test_a_workspace_config_that_names_code_or_an_outside_place_is_refused(
    workspace: Path, toml: str, key: str, isolated_home: Path
) -> None:
    (workspace / "tpl").mkdir()
    (workspace / "assembler.toml").write_text(toml)
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    message = str(caught.value)
    assert message.startswith(f"{workspace / 'assembler.toml'}: At '{key}': ")
    assert "the agent can edit it" in message and "\n" not in message
    assert (
        str(isolated_home / "xdg_config_home" / "scratchpad-assembler" / "config.toml") in message
    )


def test_the_same_settings_are_accepted_from_the_users_own_config(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "tpl").mkdir()
    _user_config(
        isolated_home,
        '[tokens]\ncounter = "assembler.tokens:count_chars"\n'
        f'[output]\ntemplate_dir = "{tmp_path / "tpl"}"\npath = "{tmp_path / "out.md"}"\n'
        '[transcripts]\nsources = ["~/.openclaw/agents/*/sessions/*.jsonl"]\n',
    )
    config = load_config(workspace)
    assert config.tokens.counter == "assembler.tokens:count_chars"
    assert config.output_path == tmp_path / "out.md"


def test_the_workspace_config_is_read_over_the_users_own(
    workspace: Path, isolated_home: Path
) -> None:
    user = _user_config(
        isolated_home,
        '[transcripts]\nsources = ["~/.claude/projects/x/*.jsonl"]\n[caps]\nauto = 400\n'
        "[strategy.rules.tired]\nstyle = 'brief'\ntone = 'kind'\nverbosity = 'low'\n"
        "preamble = false\n",
    )
    (workspace / "assembler.toml").write_text(
        "[caps]\ntotal = 3000\n[strategy.rules.tired]\ntone = 'gentle'\n"
    )
    config = load_config(workspace)
    assert config.transcripts.sources == ["~/.claude/projects/x/*.jsonl"]
    assert (config.caps.auto, config.caps.total) == (400, 3000)
    assert (config.strategy.rules["tired"].style, config.strategy.rules["tired"].tone) == (
        "brief",
        "gentle",
    )
    assert config.sources == (user, workspace / "assembler.toml")
    assert config.source == workspace / "assembler.toml"


def test_a_problem_is_reported_with_the_file_it_is_in(workspace: Path, isolated_home: Path) -> None:
    user = _user_config(isolated_home, "[caps]\nauto = -1\n")
    (workspace / "assembler.toml").write_text('[tokens]\ncounter = "os:system"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    lines = str(caught.value).splitlines()
    assert lines[0] == "The configuration has 2 problems:"
    assert lines[1].startswith(f"  {user}: At 'caps.auto': expected a positive number")
    assert lines[2].startswith(f"  {workspace / 'assembler.toml'}: At 'tokens.counter':")


def test_a_config_named_with_config_is_still_the_agents_when_it_lies_in_the_workspace(
    workspace: Path,
) -> None:
    inside = workspace / "mine.toml"
    inside.write_text('[tokens]\ncounter = "os:system"\n')
    with pytest.raises(ConfigError, match=r"At 'tokens.counter': 'os:system' names code"):
        load_config(workspace, inside)


def test_a_link_in_place_of_the_workspace_config_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('[tokens]\ncounter = "os:system"\n')
    (workspace / "assembler.toml").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match=r"assembler.toml is a symbolic link; the workspace's"):
        load_config(workspace)


# --- What validate accepts, a run survives -------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("[output]\nttl_minutes = 9999999999\n", "At 'output.ttl_minutes': expected at most"),
        ('[transcripts]\nlookback = "99999999999d"\n', "expected a duration of at most 3650d"),
        ('[daemon]\ninterval = "99999999999999999999999h"\n', "expected a duration of at most"),
        ('[output]\npath = ""\n', "At 'output.path': '' names no file"),
        ('[output]\npath = "."\n', "At 'output.path': '.' is a folder"),
        ('[output]\npath = "memory/"\n', "names no file"),
        ('[output]\npath = ".scratchpad/sections.jsonl"\n', "inside .scratchpad/"),
        ("[memory]\nvector_weight = inf\n", "At 'memory.vector_weight': expected a finite"),
        ("[memory]\nmin_score = nan\n", "expected a finite number"),
        ("[transcripts]\nmax_files = 9223372036854775807\n", "expected at most 1000000000"),
    ],
)
def test_values_that_would_crash_a_run_are_refused_by_validate(
    workspace: Path, toml: str, expected: str
) -> None:
    (workspace / "memory").mkdir()
    (workspace / "assembler.toml").write_text(toml)
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_config(workspace)


# Edge values most of the time, which validate must accept or refuse; plausible ones besides.
_NUMBERS = st.one_of(
    st.sampled_from([1, 2, 23, 10**9, 0.5, 1e-9, 1e9, 1.0]),
    st.integers(min_value=1, max_value=10**9),
    st.floats(min_value=0, max_value=1e9),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
)
_DURATIONS = st.one_of(
    st.sampled_from(["0s", "1s", "none", "", "3650d", "3651d", "99999999999d", "1e400d"]),
    st.from_regex(r"\A[0-9]{1,25}(\.[0-9]{1,3})?[dhms]\Z"),
)
_NUMERIC_KEYS = [
    ("output", "ttl_minutes"),
    ("transcripts", "max_messages"),
    ("transcripts", "max_files"),
    ("memory", "top_k"),
    ("memory", "min_score"),
    ("memory", "vector_weight"),
    ("memory", "recency_weight"),
    ("memory", "recency_half_life_days"),
    ("memory", "query_messages"),
    ("daily", "tail_bytes"),
    ("caps", "total"),
    ("caps", "auto"),
    ("caps", "agent"),
    ("time", "late_night_start"),
    ("observations", "summary_chars"),
]
_DURATION_KEYS = [("transcripts", "lookback"), ("mood", "half_life"), ("daemon", "interval")]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    numbers=st.lists(st.tuples(st.sampled_from(_NUMERIC_KEYS), _NUMBERS), max_size=3),
    durations=st.lists(st.tuples(st.sampled_from(_DURATION_KEYS), _DURATIONS), max_size=2),
)
def test_any_config_that_validates_runs_without_crashing(
    tmp_path_factory: pytest.TempPathFactory,
    numbers: list[tuple[tuple[str, str], object]],
    durations: list[tuple[tuple[str, str], str]],
) -> None:
    from assembler.assembly.pipeline import run_once

    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "chat.jsonl").write_text(
        '{"role":"user","content":"the deploy keeps failing","timestamp":"2026-03-02T12:20:00Z"}\n'
    )
    data: dict[str, dict[str, object]] = {
        "transcripts": {"sources": ["chat.jsonl"]},
        "memory": {"model": "none"},
    }
    for (table, key), value in [*numbers, *durations]:
        data.setdefault(table, {})[key] = value
    try:
        config = validate(data, source=None, workspace=workspace)
    except ConfigError:
        event("refused by validate")
        return
    event("validated and run")
    now = datetime.fromisoformat("2026-03-02T23:25:00+11:00")
    assembly = run_once(config, now=now, hosts=HOSTS)
    assert assembly.written and config.output_path.is_file()
