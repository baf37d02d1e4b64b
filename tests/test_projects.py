"""Projects served by the all-projects setup: a session's project, its state outside the work
tree, what the user's config and the project's marker say, each project's own notes, and the
hooks that serve every project; isolation between projects is a security property."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assembler.config.files import user_state_dir
from assembler.config.projects import (
    OPT_OUT_NAME,
    ProjectNotServed,
    announce,
    announced_projects,
    project_config,
    project_key,
    project_root,
    project_state_dir,
    register_workspace,
    registered_workspaces,
)
from assembler.errors import ConfigError
from assembler.hosts.claude_code.hook import run_hook as claude_code_hook
from assembler.hosts.claude_code.sessions import auto_memory_dir, project_folder_name
from assembler.hosts.codex.hook import run_hook as codex_hook
from assembler.hosts.handoff import HookInputError
from assembler.memory.lifecycle import open_memory

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _repo(folder: Path) -> Path:
    (folder / ".git").mkdir(parents=True)
    return folder


def _user_config(home: Path, text: str) -> None:
    folder = home / "xdg_config_home" / "scratchpad-assembler"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


def _event(cwd: Path, prompt: str, session: str = "s1") -> str:
    return json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "cwd": str(cwd),
            "session_id": session,
            "transcript_path": f"/nowhere/{session}.jsonl",
            "prompt": prompt,
        }
    )


# -- which project a session belongs to ---------------------------------------------------------


def test_a_sessions_project_is_the_git_top_level_of_its_working_folder(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_root(repo / "src" / "deep") == repo.resolve()
    # A worktree's `.git` is a file; it is a top level too.
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")
    assert project_root(worktree) == worktree.resolve()


def test_a_folder_outside_any_repository_is_its_own_project(tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "notes"
    plain.mkdir(parents=True)
    assert project_root(plain) == plain.resolve()


def test_a_link_to_a_project_is_the_project_it_leads_to(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert project_root(link) == repo.resolve()
    assert project_state_dir(project_root(link)) == project_state_dir(repo.resolve())


def test_two_projects_of_the_same_name_get_their_own_state_folders(tmp_path: Path) -> None:
    one, two = _repo(tmp_path / "a" / "app"), _repo(tmp_path / "b" / "app")
    assert project_key(one.resolve()) != project_key(two.resolve())
    assert project_key(one.resolve()).startswith("app-")
    assert project_state_dir(one.resolve()).parent == user_state_dir() / "projects"


# -- the config of a project --------------------------------------------------------------------


def test_a_projects_state_and_file_stay_outside_its_work_tree(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    config = project_config(repo)
    assert config.workspace == repo
    assert config.is_project
    assert config.state_dir == project_state_dir(repo)
    assert config.output_path == config.state_dir / "SCRATCHPAD.md"
    assert repo not in config.state_dir.parents


def test_a_project_that_asks_for_the_file_in_its_tree_gets_it_there(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    (repo / "assembler.toml").write_text('[output]\nin_tree = true\npath = "docs/PAD.md"\n')
    config = project_config(repo)
    assert config.output_path == repo / "docs" / "PAD.md"
    # The state folder does not move with it.
    assert config.state_dir == project_state_dir(repo)


def test_a_projects_config_cannot_put_the_file_in_another_project(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    _repo(tmp_path / "other")
    (repo / "assembler.toml").write_text(
        '[output]\nin_tree = true\npath = "../other/SCRATCHPAD.md"\n'
    )
    with pytest.raises(ConfigError, match=r"output\.path"):
        project_config(repo)


def test_a_projects_config_may_not_say_which_projects_are_served(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    (repo / "assembler.toml").write_text('[projects]\nnotes = "/etc"\ninclude = ["/"]\n')
    with pytest.raises(ConfigError, match="'projects'"):
        project_config(repo)


def test_the_marker_file_opts_a_project_out(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    (repo / OPT_OUT_NAME).write_text("")
    with pytest.raises(ProjectNotServed, match=OPT_OUT_NAME):
        project_config(repo)


def test_the_users_config_excludes_or_includes_projects(
    tmp_path: Path, isolated_home: Path
) -> None:
    kept, dropped = _repo(tmp_path / "kept").resolve(), _repo(tmp_path / "work" / "x").resolve()
    _user_config(isolated_home, f'[projects]\nexclude = ["{tmp_path / "work"}"]\n')
    assert project_config(kept).workspace == kept
    with pytest.raises(ProjectNotServed, match=r"projects\.exclude"):
        project_config(dropped)
    _user_config(isolated_home, f'[projects]\ninclude = ["{kept}"]\n')
    assert project_config(kept).workspace == kept
    with pytest.raises(ProjectNotServed, match=r"projects\.include"):
        project_config(dropped)


def test_a_project_searches_its_own_notes_the_users_and_the_hosts(
    tmp_path: Path, isolated_home: Path
) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    other = _repo(tmp_path / "other").resolve()
    own, shared, host = tmp_path / "own-notes", tmp_path / "shared", tmp_path / "host-memory"
    for folder, text in ((own, "redis port"), (shared, "my editor"), (host, "auto memory")):
        folder.mkdir()
        (folder / "note.md").write_text(f"# Note\n\n{text} lives here.\n")
    (repo / "MEMORY.md").write_text("# Repo\n\nthe repo's own note.\n")
    (other / "MEMORY.md").write_text("# Other\n\nthe other project's secret.\n")
    _user_config(
        isolated_home,
        f'[projects]\nnotes = "{shared}"\n[projects.folders]\n"{repo}" = "{own}"\n',
    )
    config = project_config(repo, host_notes=[host])
    config.memory.model = "none"
    index, _ = open_memory(config)
    try:
        index.sync()
        indexed = {row[0] for row in index._db.execute("SELECT DISTINCT path FROM chunks")}
    finally:
        index.close()
    texts = " ".join(sorted(indexed))
    assert "MEMORY.md" in texts
    assert any("own-notes" in path for path in indexed)
    assert any("shared" in path for path in indexed)
    assert any("host-memory" in path for path in indexed)
    assert not any("other" in path for path in indexed)
    # The other project sees neither this one's folder nor the host's notes of this one.
    other_config = project_config(other)
    assert not any("own-notes" in source for source in other_config.memory.sources)


def test_host_notes_are_left_out_when_the_user_turns_them_off(
    tmp_path: Path, isolated_home: Path
) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    _user_config(isolated_home, "[projects]\nhost_notes = false\n")
    config = project_config(repo, host_notes=[tmp_path / "host-memory"])
    assert not any("host-memory" in source for source in config.memory.sources)


# -- Claude Code's own notes of a project -------------------------------------------------------


def test_claude_codes_project_folder_name_is_made_as_claude_code_makes_it() -> None:
    assert project_folder_name("/home/me/src/my_app.v2") == "-home-me-src-my-app-v2"
    # An astral character is two UTF-16 units: two dashes.
    assert project_folder_name("/a/\N{GRINNING FACE}") == "-a---"
    long = "/" + "x" * 250
    name = project_folder_name(long)
    assert name.startswith("-" + "x" * 199 + "-")
    assert len(name) > 201
    assert name != project_folder_name("/" + "x" * 251)


def test_claude_codes_auto_memory_is_under_its_projects_folder(tmp_path: Path) -> None:
    environ = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    folder = auto_memory_dir(Path("/home/me/app"), environ)
    assert folder == tmp_path / "claude" / "projects" / "-home-me-app" / "memory"


# -- the record a hook leaves for the daemon of every workspace ---------------------------------


def test_an_announced_project_is_found_and_a_copied_record_is_not(tmp_path: Path) -> None:
    one, two = _repo(tmp_path / "one").resolve(), _repo(tmp_path / "two").resolve()
    assert announce(project_config(one), "codex", NOW)
    assert not announce(project_config(one), "codex", NOW)  # once
    assert list(announced_projects()) == [one]
    # A record copied into another key's folder names a project that is not that key's.
    forged = project_state_dir(two)
    forged.mkdir(parents=True)
    (forged / "project.json").write_text((project_state_dir(one) / "project.json").read_text())
    assert list(announced_projects()) == [one]


def test_a_record_naming_a_relative_or_nul_path_is_not_believed(tmp_path: Path) -> None:
    home = user_state_dir() / "projects"
    for name, root in (("rel-0", "relative/path"), ("nul-0", "/tmp/a\x00b")):
        (home / name).mkdir(parents=True)
        (home / name / "project.json").write_text(json.dumps({"root": root}))
    (home / "junk-0").mkdir()
    (home / "junk-0" / "project.json").write_text("[[[")
    assert list(announced_projects()) == []


def test_a_workspace_set_up_by_name_is_registered_once(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    assert register_workspace(folder)
    assert not register_workspace(folder)
    assert registered_workspaces() == [folder.resolve()]


# -- the hooks of the all-projects setup --------------------------------------------------------


@pytest.mark.parametrize("hook", [claude_code_hook, codex_hook], ids=["claude-code", "codex"])
def test_an_all_projects_hook_keeps_each_projects_state_apart(tmp_path: Path, hook: object) -> None:
    one, two = _repo(tmp_path / "one").resolve(), _repo(tmp_path / "two").resolve()
    (one / "src").mkdir()
    run = hook  # type: ignore[assignment]
    for cwd, prompt, session in ((one / "src", "fix the parser", "a"), (two, "ship it", "b")):
        assert run(_event(cwd, prompt, session), workspace=None, config_path=None, now=NOW,
                   all_projects=True) == ""  # fmt: skip
    assert sorted(announced_projects()) == sorted([one, two])
    for repo in (one, two):
        # Nothing of ours in the work tree.
        assert sorted(os.listdir(repo)) == sorted([".git", "src"] if repo == one else [".git"])
    state_one = project_state_dir(one)
    records = " ".join(p.read_text() for p in state_one.rglob("*.json"))
    assert '"b"' not in records and "two" not in records


def test_an_all_projects_hook_adds_nothing_to_an_opted_out_project(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    (repo / OPT_OUT_NAME).write_text("")
    output = claude_code_hook(
        _event(repo, "hello"), workspace=None, config_path=None, now=NOW, all_projects=True
    )
    assert output == ""
    assert not project_state_dir(repo).exists()


def test_an_all_projects_hook_without_a_working_folder_says_what_is_missing() -> None:
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    with pytest.raises(HookInputError, match="cwd"):
        claude_code_hook(event, workspace=None, config_path=None, now=NOW, all_projects=True)


def test_an_all_projects_hook_sends_the_projects_own_block(tmp_path: Path) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.hosts.registry import HOSTS

    one, two = _repo(tmp_path / "one").resolve(), _repo(tmp_path / "two").resolve()
    for repo, task in ((one, "the parser of one"), (two, "the deploy of two")):
        (repo / "chat.jsonl").write_text(
            json.dumps(
                {"role": "user", "content": f"please fix {task}", "timestamp": NOW.isoformat()}
            )
            + "\n"
        )
        (repo / "assembler.toml").write_text(
            '[transcripts]\nsources = ["chat.jsonl"]\nlookback = "none"\n'
            "[memory]\nenabled = false\n"
        )
        run_once(project_config(repo), hosts=HOSTS, now=NOW)
    shown = {}
    for repo in (one, two):
        output = claude_code_hook(
            json.dumps({"hook_event_name": "SessionStart", "source": "clear", "cwd": str(repo),
                        "session_id": repo.name}),
            workspace=None, config_path=None, now=NOW, all_projects=True,
        )  # fmt: skip
        shown[repo.name] = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert "parser of one" in shown["one"] and "deploy of two" not in shown["one"]
    assert "deploy of two" in shown["two"] and "parser of one" not in shown["two"]
    assert not (one / "SCRATCHPAD.md").exists() and not (two / "SCRATCHPAD.md").exists()


# -- a hostile project cannot reach another project's data -------------------------------------


def test_a_nested_repository_is_a_project_of_its_own_for_codex_sessions(
    tmp_path: Path, isolated_home: Path
) -> None:
    from fixtures.codex.lines import rollout_name, session_meta, sessions_folder, user_message

    from assembler.hosts.codex.host import HOST as CODEX

    outer = _repo(tmp_path / "outer").resolve()
    inner = _repo(outer / "vendor" / "inner").resolve()
    folder = sessions_folder(isolated_home, NOW)
    folder.mkdir(parents=True)
    for name, cwd in (("0000-outer", outer / "src"), ("1111-inner", inner)):
        lines = [session_meta(name, str(cwd), NOW), user_message(f"task of {name}", NOW)]
        (folder / rollout_name(name, NOW)).write_text(
            "".join(json.dumps(line) + "\n" for line in lines)
        )
    environ = {"HOME": str(isolated_home)}

    def sources(root: Path) -> str:
        config = project_config(root)
        return " ".join(CODEX.sources(config.workspace, config.state_dir, environ))

    assert "0000-outer" in sources(outer) and "1111-inner" not in sources(outer)
    assert "1111-inner" in sources(inner) and "0000-outer" not in sources(inner)
    # A workspace set up by name keeps reading every session inside it.
    named = " ".join(CODEX.sources(outer, outer / ".scratchpad", environ))
    assert "1111-inner" in named


def test_a_projects_config_cannot_name_another_projects_notes_or_sessions(
    tmp_path: Path,
) -> None:
    repo, other = _repo(tmp_path / "repo").resolve(), _repo(tmp_path / "other").resolve()
    for key in ("memory.sources", "transcripts.sources"):
        table, name = key.split(".")
        (repo / "assembler.toml").write_text(f'[{table}]\n{name} = ["{other}/**/*"]\n')
        with pytest.raises(ConfigError, match="outside the workspace"):
            project_config(repo)
        (repo / "assembler.toml").write_text(f'[{table}]\n{name} = ["../other/**/*"]\n')
        with pytest.raises(ConfigError, match="outside the workspace"):
            project_config(repo)


def test_a_link_in_a_project_to_another_projects_notes_is_not_indexed(tmp_path: Path) -> None:
    repo, other = _repo(tmp_path / "repo").resolve(), _repo(tmp_path / "other").resolve()
    (other / "memory").mkdir()
    (other / "memory" / "secret.md").write_text("# Secret\n\nthe other project's key plan.\n")
    (repo / "memory").mkdir()
    (repo / "memory" / "stolen.md").symlink_to(other / "memory" / "secret.md")
    (repo / "memory" / "all").symlink_to(other / "memory", target_is_directory=True)
    config = project_config(repo)
    config.memory.model = "none"
    index, _ = open_memory(config)
    try:
        report = index.sync()
        texts = [row[0] for row in index._db.execute("SELECT text FROM chunks")]
    finally:
        index.close()
    assert not any("key plan" in text for text in texts)
    assert any("stolen.md" in line for line in report.skipped)


def test_a_projects_state_is_not_its_tree_whatever_its_config_says(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo").resolve()
    (repo / ".scratchpad").mkdir()
    (repo / ".scratchpad" / "config.toml").write_text('[output]\npath = "PAD.md"\n')
    config = project_config(repo)
    assert config.state_dir == project_state_dir(repo)
    assert config.output_path == project_state_dir(repo) / "PAD.md"
    claude_code_hook(_event(repo, "hi"), workspace=None, config_path=None, now=NOW,
                     all_projects=True)  # fmt: skip
    assert sorted(os.listdir(repo / ".scratchpad")) == ["config.toml"]
