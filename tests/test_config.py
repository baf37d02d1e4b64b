from __future__ import annotations

import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from assembler.config import (
    Config,
    init_config,
    load_config,
    parse_duration,
    sample_config_path,
    to_toml,
    validate,
)
from assembler.errors import ConfigError, WorkspaceError


def test_defaults_apply_when_no_config_file_exists(workspace: Path) -> None:
    config = load_config(workspace)
    assert config.source is None
    assert config.output.ttl_minutes == 30
    assert config.caps.auto == 500
    assert config.output_path == workspace / "SCRATCHPAD.md"


def test_every_problem_is_reported_at_once_with_its_key(workspace: Path) -> None:
    (workspace / "assembler.toml").write_text(
        '[output]\nttl_minutes = -5\ncolour = "red"\n'
        '[transcripts]\nmax_messages = "many"\nformat = "xml"\n'
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
    assert "At 'transcripts.format': expected one of" in message
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
    from assembler.config import StrategyConfig
    from assembler.sentiment import MOODS

    # Rule names are checked against the default table, so it must follow the labels.
    assert sorted(StrategyConfig().rules) == sorted(MOODS)


def test_config_validate_rejects_what_once_would_reject(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli import main

    (workspace / "assembler.toml").write_text('[output]\ntemplate_dir = "nope"\n')
    assert main(["config", "validate", "--workspace", str(workspace)]) == 1
    assert "At 'output.template_dir'" in capsys.readouterr().err


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
    from assembler.cli import main

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
    from assembler.routing import route

    config = validate(
        {"routing": {"complexity_keywords": {"high": ["kerfuffle"]}}},
        source=None,
        workspace=workspace,
    )
    hint = route(["sort out the kerfuffle"], complexity_keywords=config.routing.complexity_keywords)
    assert hint.complexity == "high"
