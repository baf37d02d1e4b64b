"""The Relevant Memories section inside a whole assembly (assembler/assemble.py), on keyword
search alone (`memory.model = "none"`) so that no embedding model is loaded."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.assembly.cap import _fit_without_repeats
from assembler.assembly.pipeline import run_once
from assembler.assembly.sections import MemoryRecall, memories_section
from assembler.config.files import load_config
from assembler.file.render import Renderer, Section
from assembler.hosts.registry import HOSTS
from assembler.memory.recall import RecallResult
from assembler.memory.search import Hit
from assembler.mood.window import MoodReport, MoodState, TrajectoryPoint
from assembler.tokens import estimate_tokens

NOW = datetime.fromisoformat("2026-03-02T23:25:00+11:00")


def write_chat(folder: Path, lines: list[tuple[int, str, str]]) -> None:
    """Write a generic JSONL transcript of (minutes before NOW, role, text) lines."""
    with (folder / "chat.jsonl").open("w") as handle:
        for minutes, role, text in lines:
            stamp = (NOW - timedelta(minutes=minutes)).isoformat()
            handle.write(json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n")


def make_workspace(folder: Path, config: str = 'model = "none"') -> Path:
    (folder / "memory" / "infra").mkdir(parents=True)
    (folder / "memory" / "infra" / "helm.md").write_text(
        "# Helm\n\nThe api chart reads DATABASE_URL from the Secret api-db-credentials.\n"
    )
    (folder / "memory" / "garden.md").write_text("# Garden\n\nTomatoes need staking in May.\n")
    (folder / "memory" / "2026-03-02.md").write_text(
        "# 2026-03-02\n\n- 09:00 standup\n- 21:40 tomatoes planted, staking tomorrow\n"
    )
    write_chat(
        folder,
        [
            (40, "user", "the tomatoes are getting tall, when do they need staking?"),
            (39, "assistant", "In May."),
            (5, "user", "helm says the api-db-credentials Secret is missing for DATABASE_URL"),
        ],
    )
    (folder / "assembler.toml").write_text(
        f'[transcripts]\nsources = ["*.jsonl"]\n[memory]\n{config}\n'
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    return folder


def memories_lines(text: str) -> list[str]:
    body = text.split("## Relevant Memories\n", 1)[1]
    return [line for line in body.split("\n\n", 1)[0].splitlines() if line.startswith("- ")]


def test_the_section_shows_the_current_topic_first_as_path_and_line_range(
    workspace: Path,
) -> None:
    assembly = run_once(load_config(make_workspace(workspace)), now=NOW, hosts=HOSTS, dry_run=True)
    lines = memories_lines(assembly.text)
    # Self-contained: where, the note's subject (its heading), the sentence, quoted.
    assert lines[0] == (
        "- `memory/infra/helm.md:1-3` Helm: “The api chart reads DATABASE_URL from the Secret "
        "api-db-credentials.”"
    )
    memory = assembly.measured.memory
    assert memory is not None and memory.hits == len(lines) and memory.chunks >= 3
    assert "relevant_memories" in assembly.measured.sections


def test_a_hit_that_the_daily_context_already_shows_is_not_repeated(workspace: Path) -> None:
    # The garden note shares one word with its question: weak, shown only without a floor; the
    # section's cap is raised so that both topics' lines fit and only the repeat is left out.
    config = 'model = "none"\nkeyword_floor = 0.0\n[caps.sections]\nrelevant_memories = 160'
    assembly = run_once(
        load_config(make_workspace(workspace, config)), now=NOW, hosts=HOSTS, dry_run=True
    )
    assert "tomatoes planted" in assembly.text.split("## Daily Context", 1)[1]
    assert not any("2026-03-02.md" in line for line in memories_lines(assembly.text))
    # The earlier topic still surfaces from its own note.
    assert any(line.startswith("- `memory/garden.md:") for line in memories_lines(assembly.text))


def test_a_model_that_cannot_load_degrades_to_keyword_search_and_says_why(
    workspace: Path, isolated_home: Path
) -> None:
    # A model folder names code to load: only the user's own config may name one.
    user = isolated_home / "xdg_config_home" / "scratchpad-assembler" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[memory]\nmodel = "/no/such/model"\n')
    config = load_config(make_workspace(workspace, "enabled = true"))
    assembly = run_once(config, now=NOW, hosts=HOSTS, dry_run=True)
    (entry,) = [d for d in assembly.measured.degraded if d.what == "memory search"]
    assert "/no/such/model" in entry.why
    assert "keyword (BM25) search only" in entry.why
    assert memories_lines(assembly.text)[0].startswith("- `memory/infra/helm.md:")


def test_memory_search_turned_off_shows_no_section_and_builds_no_index(workspace: Path) -> None:
    assembly = run_once(
        load_config(make_workspace(workspace, "enabled = false")),
        now=NOW,
        hosts=HOSTS,
        dry_run=True,
    )
    assert "## Relevant Memories" not in assembly.text
    assert assembly.measured.memory is None
    assert not (workspace / ".scratchpad" / "index.sqlite").exists()


def test_secrets_and_addresses_the_human_pasted_never_reach_the_file(workspace: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    write_chat(
        workspace,
        [
            (9, "user", "mail the incident note to ray.tanaka@fastmail.com and internal-7731"),
            (8, "user", f"export GITHUB_TOKEN={token} then run the deploy again"),
        ],
    )
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nenabled = false\n'
        '[routing]\nextra_secret_patterns = ["internal-[0-9]{4}"]\n'
    )
    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS, dry_run=True)
    for secret in (token, "ray.tanaka@fastmail.com", "internal-7731"):
        assert secret not in assembly.text
        assert all(secret not in line for line in assembly.measured.dropped)
    assert "[redacted GitHub token]" in assembly.text  # where it was: in Working on
    assert "Content sensitivity:** HIGH" in assembly.text


def test_a_model_that_fails_on_the_queries_is_reported_and_search_goes_on_by_keywords(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes import FakeEmbedder

    # The sync embeds the three notes in one call; the queries' call is the one that fails.
    monkeypatch.setattr(
        "assembler.memory.lifecycle.LazyEmbedder",
        lambda model, batch_size: FakeEmbedder(fail_after_calls=1),
    )
    assembly = run_once(
        load_config(make_workspace(workspace, 'model = "bundled"')),
        now=NOW,
        hosts=HOSTS,
        dry_run=True,
    )
    (entry,) = [d for d in assembly.measured.degraded if d.what == "memory search"]
    assert "the query could not be embedded" in entry.why
    assert memories_lines(assembly.text)[0].startswith("- `memory/infra/helm.md:")


# --- The caps keep the best memory lines ------------------------------------------------------


def _memory_hit(path: str, score: float, line: str) -> Hit:
    return Hit(path, 1, 9, score, score, score, 1.0, line, f"- {line}\n", path)


def _fitted_memories(hits: list[Hit], cap: int) -> list[str]:
    section = memories_section(MemoryRecall(RecallResult(hits, ["q"]), 10, 10))
    assert section is not None
    fitted = _fit_without_repeats(
        [section],
        Renderer(),
        estimate_tokens,
        cap=1000,
        section_caps={"relevant_memories": cap},
        memories=4,
    )
    return [item.text for s in fitted.sections for item in s.items]


def test_a_cap_never_drops_a_stronger_memory_line_while_keeping_a_weaker_one() -> None:
    # The current topic's weak hit comes first, an earlier topic's exact answer second.
    weak = _memory_hit("memory/helm.md", 0.30, "The chart repo is bramblecart. " * 3)
    best = _memory_hit("memory/db.md", 0.513, "Postgres 16.4 runs on pg-prod-1. " * 3)
    renderer = Renderer()
    one = renderer.section(Section("relevant_memories", "Relevant Memories", ()))
    room = estimate_tokens(one) + estimate_tokens(f"- `memory/db.md:1-9` {best.snippet}")
    lines = _fitted_memories([weak, best], room + 2)
    assert len(lines) == 1 and lines[0].startswith("`memory/db.md:1-9` “Postgres 16.4")


def test_a_memory_line_that_does_not_fit_is_shortened_before_it_is_dropped() -> None:
    best = _memory_hit("memory/db.md", 0.6, "Postgres 16.4 runs on the VM pg-prod-1.")
    second = _memory_hit("memory/ci.md", 0.5, "Deploys are manual, from the laptop. " * 5)
    third = _memory_hit("memory/lab.md", 0.4, "The lab disk alert fires at 85% via ntfy.")
    whole = _fitted_memories([best, second, third], 1000)
    two = Section("relevant_memories", "Relevant Memories", ())
    room = estimate_tokens(Renderer().section(two)) + sum(
        estimate_tokens(f"- {line}") for line in whole[:2]
    )
    lines = _fitted_memories([best, second, third], room - 10)
    # The weakest goes first; the next one is cut at a word, not dropped; the best is whole.
    assert lines[0] == whole[0]
    assert lines[1].startswith("`memory/ci.md:1-9` “Deploys are manual")
    assert lines[1].endswith("…") and len(lines[1]) < len(whole[1])
    assert len(lines) == 2


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.integers(10, 99), min_size=2, max_size=6, unique=True),
    lengths=st.lists(st.integers(1, 6), min_size=6, max_size=6),
    cap=st.integers(10, 200),
)
def test_under_any_cap_the_memory_lines_kept_are_the_best_scoring_ones(
    scores: list[int], lengths: list[int], cap: int
) -> None:
    hits = [
        _memory_hit(f"memory/n{i}.md", score / 100, f"Fact {i} about the staging box. " * size)
        for i, (score, size) in enumerate(zip(scores, lengths, strict=False))
    ]
    lines = _fitted_memories(hits, cap)
    kept = {line.split(":", 1)[0].lstrip("`") for line in lines}
    best_first = [h.path for h in sorted(hits, key=lambda h: -h.score)]
    # Whatever the cap leaves, it is the best few: no weaker line stays in a stronger one's place.
    assert kept == set(best_first[: len(kept)])
    # And in the order of their scores.
    assert [line.split(":", 1)[0].lstrip("`") for line in lines] == best_first[: len(kept)]


def test_when_no_note_bears_on_the_conversation_no_memory_section_is_shown(
    workspace: Path,
) -> None:
    make_workspace(workspace)
    write_chat(
        workspace,
        [
            (6, "user", "can you draft a birthday message for my aunt, she turns ninety"),
            (5, "assistant", "Sure."),
            (1, "user", "make it warmer and mention her garden roses"),
        ],
    )
    for name in ("garden.md", "2026-03-02.md"):
        (workspace / "memory" / name).unlink()  # the notes left are about helm only

    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS, dry_run=True)

    assert "## Relevant Memories" not in assembly.text
    assert assembly.recall is not None and assembly.recall.result.queries  # it did search


# --- Each line of the auto part carries something -------------------------------------------------


def _state(primary: str, confidence: float, **more: Any) -> MoodState:
    fields: dict[str, Any] = {
        "primary": primary,
        "primary_score": 0.44,
        "secondary": "tired",
        "secondary_score": 0.37,
        "valence": -0.13,
        "arousal": 0.35,
        "confidence": confidence,
        "messages": 22,
        "trajectory": "frustrated from 19:47; tired from 23:06; no clear emotion now (since 23:14)",
        "points": [
            TrajectoryPoint(NOW - timedelta(minutes=30), "frustrated", 0.8, -0.5),
            TrajectoryPoint(NOW - timedelta(minutes=19), "tired", 0.6, -0.3),
            TrajectoryPoint(NOW - timedelta(minutes=11), "neutral", 0.6, 0.0),
        ],
    }
    return MoodState(**{**fields, **more})


def _mood_lines(state: MoodState) -> list[str]:
    """The lines of the Emotional Context and Response Strategy sections for a mood state."""
    from assembler.assembly.sections import mood_section, strategy_section
    from assembler.config.schema import StrategyConfig
    from assembler.mood.strategy import choose_strategy

    rules = StrategyConfig()
    strategy = choose_strategy(
        state, rules.rules, min_confidence=rules.min_confidence, fallback=rules.fallback
    )
    sections = [mood_section(MoodReport(state), strategy, NOW), strategy_section(strategy)]
    texts = [Renderer().section(s) for s in sections if s is not None]
    return [line for text in texts for line in text.splitlines() if line.startswith("- ")]


def test_without_a_clear_emotion_mood_and_strategy_are_one_line() -> None:
    (line,) = _mood_lines(_state("neutral", 0.56))
    assert line == "- **Mood:** no clear emotion now (tired at 23:06) — answer as usual"
    # An emotion read too weakly to act on is not known to be right: no line at all.
    assert _mood_lines(_state("frustrated", 0.1)) == []
    # Nor is there a line where the window never showed an emotion: answering as usual is
    # what the model does without one.
    calm = [TrajectoryPoint(NOW - timedelta(minutes=5), "neutral", 0.6, 0.0)]
    assert _mood_lines(_state("neutral", 0.56, points=calm)) == []
    # Nor where the newest reading is the emotion: it has not passed, it is too weak to tell.
    newest = [TrajectoryPoint(NOW - timedelta(minutes=1), "curious", 0.4, 0.1)]
    assert _mood_lines(_state("neutral", 0.56, points=calm + newest)) == []


def test_a_clear_emotion_keeps_its_mood_and_strategy_lines_but_no_repeats() -> None:
    lines = _mood_lines(_state("frustrated", 0.9, secondary="neutral"))
    labels = [line.split(":**", 1)[0].removeprefix("- **") for line in lines]
    assert labels == ["Primary", "Trajectory", "How to answer"]
    # Valence and arousal in the middle of their scales say nothing the mood's name does not.
    assert lines[0] == "- **Primary:** frustrated (0.44; confidence 0.90)"
    # The strategy is one line; "no preamble" is said by the style ("skip preamble") here.
    assert lines[2] == (
        "- **How to answer:** concise — lead with the answer, skip preamble; tone: direct — "
        "no hedging, no 'I think maybe'; verbosity: minimal — they will ask for more if needed"
    )
    # A neutral secondary says nothing; the tired rule's note ends the strategy's one line.
    tired = _mood_lines(_state("tired", 0.9, secondary="neutral"))
    assert [line.split(":**", 1)[0] for line in tired[2:]] == ["- **How to answer"]
    assert tired[2].endswith(
        "; no preamble. Offer to pick this up later; avoid starting big new work."
    )


def test_the_primary_line_names_valence_and_arousal_away_from_the_middle() -> None:
    line = _mood_lines(_state("frustrated", 0.9, valence=-0.6, arousal=0.8))[0]
    assert line == (
        "- **Primary:** frustrated (0.44; negative valence, high arousal; confidence 0.90)"
    )


def test_a_long_trajectory_shows_where_it_began_and_its_newest_steps_without_quotes() -> None:
    from assembler.assembly.sections import TRAJECTORY_CHARS, recent_trajectory

    story = "; ".join(f"step {n} at 2{n % 4}:0{n}" for n in range(9)) + "; tired now (since 23:06)"
    shown = recent_trajectory(story)
    assert shown.startswith("step 0 at 20:00; …; ") and shown.endswith("; tired now (since 23:06)")
    assert len(shown) <= TRAJECTORY_CHARS
    assert recent_trajectory("frustrated now since 19:41") == "frustrated now since 19:41"
    evening = (
        'frustrated from 19:47; urgent at 20:06; eased at 21:14 ("one more for the same PR"); '
        "tired now (since 23:06)"
    )
    assert recent_trajectory(evening) == (
        "frustrated from 19:47; urgent at 20:06; eased at 21:14; tired now (since 23:06)"
    )


def test_lines_that_carry_nothing_are_left_out() -> None:
    from assembler.assembly.routing import RoutingHint
    from assembler.assembly.sections import active_section, routing_section
    from assembler.context.active import ActiveContext

    def active(**more: Any) -> ActiveContext:
        fields: dict[str, Any] = {
            "working_on": "the staging deploy (in api)",
            "last_topic": None,
            "topics": [],
            "session_gap": None,
            "gap_note": "continuous session, no break in the window",
        }
        return ActiveContext(**{**fields, **more})

    section = active_section(active())
    assert section is not None
    # A continuous session, and how many messages were read (the frontmatter's source): no line.
    assert [item.label for item in section.items] == ["Working on"]
    assert active_section(active(working_on=None)) is None  # not "nothing identified"
    paused = active_section(active(session_gap=timedelta(hours=5), gap_note="medium"))
    assert paused is not None and [i.label for i in paused.items] == ["Working on", "Session gap"]

    def hint(complexity: str, tier: str, sensitivity: str = "low") -> RoutingHint:
        return RoutingHint(sensitivity, "why", [], complexity, "why", tier)

    # The default tier, or an ordinary task's complexity alone, says nothing to a router.
    assert routing_section(hint("medium", "standard"), "standard") is None
    assert routing_section(hint("low", "standard"), "standard") is None
    fast = routing_section(hint("low", "fast"), "standard")
    assert fast is not None and [i.label for i in fast.items] == ["Suggested model"]


def test_the_title_is_one_short_line_that_says_when_to_ignore_the_file(workspace: Path) -> None:
    assembly = run_once(load_config(make_workspace(workspace)), now=NOW, hosts=HOSTS, dry_run=True)
    body = assembly.text.split("---\n", 2)[2]
    title = body.strip().splitlines()[0]
    assert title == (
        "# SCRATCHPAD.md — valid until 23:55 AEDT; rewritten each run, your notes go at the end"
    )
    assert body.strip().splitlines()[1] == ""  # one line, then the sections
    assert estimate_tokens(title) <= 25
    # Valid into tomorrow: the date is said too.
    late = run_once(
        load_config(workspace), now=NOW + timedelta(minutes=25), hosts=HOSTS, dry_run=True
    )
    assert "\n# SCRATCHPAD.md — valid until 2026-03-03 00:20 AEDT;" in late.text


# --- The write: compare before replace, never through a link ------------------------------------


def _sections_workspace(folder: Path) -> Path:
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nenabled = false\n'
        '[time]\ntimezone = "UTC"\n'
    )
    return folder


def test_a_hand_edit_landing_while_the_render_runs_is_imported_not_lost(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assembler.assembly.pipeline as module
    from assembler.assembly.pipeline import run_once
    from assembler.pad.sections import scratchpad_for

    config = load_config(_sections_workspace(workspace))
    scratchpad_for(config).write("step 1", section="findings")
    run_once(config, now=NOW, hosts=HOSTS)
    real_cap = module.cap
    calls = []

    def cap_while_the_agent_edits(*args: object, **kwargs: object) -> module.Assembly:
        assembly = real_cap(*args, **kwargs)  # type: ignore[arg-type]
        if not calls:  # the agent's file tool saves its edit just before the render's write
            path = config.output_path
            path.write_text(path.read_text().replace("step 1\n", "step 1\nstep 2 (by hand)\n"))
        calls.append(1)
        return assembly

    monkeypatch.setattr(module, "cap", cap_while_the_agent_edits)
    assembly = run_once(config, now=NOW + timedelta(minutes=1), hosts=HOSTS)

    assert len(calls) == 2 and assembly.written
    assert scratchpad_for(config).read("findings").data["content"] == "step 1\nstep 2 (by hand)"
    assert "step 2 (by hand)" in config.output_path.read_text()


def test_a_file_that_keeps_changing_is_left_as_it_is_and_the_run_says_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assembler.assembly.pipeline as module
    from assembler.assembly.pipeline import WRITE_ATTEMPTS, run_once

    config = load_config(_sections_workspace(workspace))
    run_once(config, now=NOW, hosts=HOSTS)
    real_cap = module.cap

    def cap_while_someone_writes(*args: object, **kwargs: object) -> module.Assembly:
        assembly = real_cap(*args, **kwargs)  # type: ignore[arg-type]
        with config.output_path.open("a") as handle:
            handle.write("another line by hand\n")
        return assembly

    monkeypatch.setattr(module, "cap", cap_while_someone_writes)
    assembly = run_once(config, now=NOW + timedelta(minutes=1), hosts=HOSTS)

    assert not assembly.written
    assert config.output_path.read_text().count("another line by hand") == WRITE_ATTEMPTS
    assert any(d.what == "write" for d in assembly.degraded)


def test_a_dry_run_writes_nothing_and_imports_nothing(workspace: Path) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.pad.journal import journal_path
    from assembler.pad.sections import scratchpad_for

    config = load_config(_sections_workspace(workspace))
    scratchpad_for(config).write("the plan")
    run_once(config, now=NOW, hosts=HOSTS)
    path = config.output_path
    path.write_text(path.read_text().replace("the plan\n", "the plan, edited\n"))
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file()}

    assembly = run_once(config, now=NOW + timedelta(minutes=1), dry_run=True, hosts=HOSTS)

    assert not assembly.written
    assert {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file()} == before
    assert "edited" not in journal_path(config.state_dir).read_text()


def test_an_output_path_that_is_a_link_is_not_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.errors import UnsafePathError

    victim = tmp_path / "victim.md"
    victim.write_text("precious")
    config = load_config(_sections_workspace(workspace))
    config.output_path.symlink_to(victim)
    with pytest.raises(UnsafePathError, match=r"SCRATCHPAD\.md is a symbolic link"):
        run_once(config, now=NOW, hosts=HOSTS)
    assert victim.read_text() == "precious"


def test_an_output_folder_that_links_out_of_the_workspace_is_not_written_to(
    workspace: Path, tmp_path: Path
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.errors import UnsafePathError

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / "out").symlink_to(elsewhere)
    (workspace / "assembler.toml").write_text(
        '[output]\npath = "out/SCRATCHPAD.md"\n[memory]\nenabled = false\n'
    )
    with pytest.raises(UnsafePathError, match="is a link out of the workspace"):
        run_once(load_config(workspace), now=NOW, hosts=HOSTS)
    assert list(elsewhere.iterdir()) == []


def test_a_memory_index_that_cannot_be_opened_degrades_the_section_not_the_run(
    workspace: Path, tmp_path: Path
) -> None:
    from assembler.assembly.pipeline import run_once

    make_workspace(workspace)
    victim = tmp_path / "victim.sqlite"
    victim.write_text("precious")
    (workspace / ".scratchpad").mkdir()
    (workspace / ".scratchpad" / "index.sqlite").symlink_to(victim)

    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS)

    assert assembly.written and victim.read_text() == "precious"
    (entry,) = [d for d in assembly.degraded if d.what == "memory search"]
    assert "index.sqlite is a symbolic link" in entry.why


def test_an_empty_workspace_gets_a_short_file_that_says_nothing_is_known_yet(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "new"
    workspace.mkdir()

    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS, dry_run=True)

    text = assembly.text
    assert "**Nothing known yet:** no transcripts found yet" in text
    for noise in ("Primary", "(0.00)", "Messages read", "Response Strategy", "Routing Hint"):
        assert noise not in text
    # The human's zone is unknown: this machine's clock would tell the model nothing.
    assert "## Time Context" not in text
    assert assembly.frontmatter["source"] == "no transcripts; no memory notes"
    assert assembly.measured.tokens.total < 150


def test_a_transcript_with_nothing_in_the_window_says_so_instead_of_zeros(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    write_chat(workspace, [(60 * 24 * 3, "user", "an old message, days before the clock")])

    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS, dry_run=True)

    assert "**Nothing known yet:** no messages in the window of the 1 transcript read" in (
        assembly.text
    )
    assert "Working on" not in assembly.text and "Routing Hint" not in assembly.text
