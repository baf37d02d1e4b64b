"""The mood history: each human message scored once and kept, a window read back from it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from assembler.assembly.log import AssemblyLog, log_path, record_run
from assembler.errors import UnsafePathError
from assembler.hosts.registry import HOSTS
from assembler.mood.history import (
    UNKNOWN_SCORER,
    MoodHistory,
    history_path,
    message_id,
    remembering,
    window_report,
)
from assembler.mood.model import analyze, load_mood_model
from assembler.mood.window import (
    DEFAULT_WINDOW_CALIBRATION,
    MOODS,
    MessageMood,
    WindowCalibration,
)
from assembler.redact import redact
from assembler.transcripts.message import Message

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def message(minutes: float, text: str, speaker: str | None = None, role: str = "user") -> Message:
    return Message(role, text, NOW - timedelta(minutes=minutes), "chat.jsonl", speaker, "s1")  # type: ignore[arg-type]


class CountingModel:
    """The bundled model, counting the texts it is asked to score."""

    def __init__(self) -> None:
        self.model = load_mood_model()
        self.scored: list[str] = []

    @property
    def window_calibration(self) -> WindowCalibration:
        return self.model.window_calibration

    @property
    def version(self) -> str:
        return self.model.version

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        self.scored.extend(texts)
        return self.model.score_many(texts)


class OneMood:
    """A scorer that reads every text as one mood, named `version` (another model, or the same
    model retrained)."""

    window_calibration = DEFAULT_WINDOW_CALIBRATION

    def __init__(self, version: str, mood: str) -> None:
        self.version = version
        self.mood = mood
        self.scored: list[str] = []

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        self.scored.extend(texts)
        scores = dict.fromkeys(MOODS, 0.0)
        scores[self.mood] = 1.0
        return [MessageMood(0.0, 0.5, dict(scores), 0.0, self.mood, 1.0, None, 0.0) for _ in texts]


@pytest.fixture
def history(tmp_path: Path) -> MoodHistory:
    return MoodHistory(history_path(tmp_path / ".scratchpad"))


def test_each_human_message_is_scored_once_however_often_the_window_is_recorded(
    history: MoodHistory,
) -> None:
    window = [message(30, "why is it failing AGAIN"), message(29, "On it.", role="assistant")]
    model = CountingModel()

    first = history.record(window, model)
    second = history.record([*window, message(5, "ok thanks, that worked")], model)

    assert (first, second) == (1, 1)
    assert model.scored == ["why is it failing AGAIN", "ok thanks, that worked"]
    assert history.count() == 2


def test_a_message_keeps_its_id_when_read_again_and_another_text_or_time_changes_it() -> None:
    one = message(10, "deploy failed")

    assert message_id(one) == message_id(message(10, "deploy failed"))
    assert message_id(one) != message_id(message(10, "deploy failed!"))
    assert message_id(one) != message_id(message(11, "deploy failed"))


def test_between_returns_the_window_oldest_first_with_the_stored_mood(
    history: MoodHistory,
) -> None:
    model = load_mood_model()
    history.record([message(m, f"message {m} is fine") for m in (300, 90, 30, 1)], model)

    records = history.between(NOW - timedelta(hours=2), NOW)

    assert [r.text for r in records] == [
        "message 90 is fine",
        "message 30 is fine",
        "message 1 is fine",
    ]
    expected = model.score("message 30 is fine")
    assert records[1].mood.primary == expected.primary
    assert records[1].mood.valence == pytest.approx(expected.valence)
    assert records[1].mood.arousal == pytest.approx(expected.arousal)


def test_the_kept_text_is_redacted_as_the_file_redacts_it(history: MoodHistory) -> None:
    text = "here is the token ghp_abcdefghijklmnopqrstuvwxyz0123456789, deploy it"
    history.record([message(1, text)], load_mood_model())

    [record] = history.between(NOW - timedelta(hours=1), NOW)

    assert record.text == redact(text)
    assert "ghp_" not in record.text


def test_the_mood_of_a_window_from_the_history_is_the_one_the_assembly_computes(
    history: MoodHistory,
) -> None:
    window = [
        message(50, "WHY is it failing AGAIN?? third time today", "ray"),
        message(40, "the chart points at the old secret", "sam"),
        message(20, "ffs. nothing works", "ray"),
        message(2, "ok that did it, thanks a lot!", "ray"),
    ]
    model = load_mood_model()
    history.record(window, model)
    half_life = timedelta(minutes=45)

    stored = window_report(
        history.between(NOW - timedelta(hours=1), NOW),
        now=NOW,
        half_life=half_life,
        calibration=model.window_calibration,
    )
    direct = analyze(window, now=NOW, half_life=half_life, model=model)

    assert stored.combined.primary == direct.combined.primary
    assert stored.combined.trajectory == direct.combined.trajectory
    assert stored.combined.valence == pytest.approx(direct.combined.valence, abs=1e-4)
    assert sorted(stored.speakers) == ["ray", "sam"]


def test_a_history_that_is_not_a_database_is_moved_aside_and_started_anew(tmp_path: Path) -> None:
    path = history_path(tmp_path / ".scratchpad")
    path.parent.mkdir()
    path.write_bytes(b"written by the agent, not a database" * 100)

    with MoodHistory(path) as history:
        history.record([message(1, "hello there, all good")], load_mood_model())
        assert history.count() == 1
    assert path.with_name("mood.sqlite.broken").read_bytes().startswith(b"written by the agent")


def test_a_link_in_place_of_the_history_is_refused(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    state.mkdir()
    outside = tmp_path / "outside.sqlite"
    os.symlink(outside, history_path(state))

    with pytest.raises(UnsafePathError):
        MoodHistory(history_path(state))
    assert not outside.exists()


def test_record_run_logs_the_assembly_and_keeps_its_window_moods(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    config = SimpleNamespace(state_dir=state, routing=SimpleNamespace(extra_secret_patterns=[]))
    assembly = SimpleNamespace(
        now=NOW,
        written=True,
        measured=SimpleNamespace(
            to_json=lambda: {
                "updated": NOW.isoformat(),
                "messages_read": 2,
                "dropped": ["daily_context: x"],
            }
        ),
        recall=None,
        secret_patterns=(),
        transcripts=SimpleNamespace(
            messages=[message(3, "why is it broken"), message(1, "thanks!")]
        ),
        moods_kept=False,
    )

    record_run(config, assembly, "change", 0.075)  # type: ignore[arg-type]

    with AssemblyLog(log_path(state)) as runs:
        [run] = runs.last()
    assert (run.reason, run.seconds, run.record["dropped"]) == (
        "change",
        0.075,
        ["daily_context: x"],
    )
    with MoodHistory(history_path(state)) as history:
        assert history.count() == 2


def test_record_run_leaves_the_history_to_an_assembly_that_kept_its_moods(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    config = SimpleNamespace(state_dir=state, routing=SimpleNamespace(extra_secret_patterns=[]))
    assembly = SimpleNamespace(
        now=NOW,
        written=True,
        measured=SimpleNamespace(to_json=dict),
        recall=None,
        secret_patterns=(),
        transcripts=SimpleNamespace(messages=[message(3, "why is it broken")]),
        moods_kept=True,  # its draft scored the window into the history (see `draft`)
    )

    record_run(config, assembly, "change", 0.05)  # type: ignore[arg-type]

    assert not history_path(state).exists()


def test_record_run_never_raises_when_the_state_folder_is_unusable(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    state.write_text("a file where the folder should be")
    config = SimpleNamespace(state_dir=state, routing=SimpleNamespace(extra_secret_patterns=[]))
    assembly = SimpleNamespace(
        now=NOW,
        measured=SimpleNamespace(to_json=dict),
        recall=None,
        written=True,
        secret_patterns=(),
    )

    record_run(config, assembly, "interval", 0.1)  # type: ignore[arg-type]

    assert state.read_text() == "a file where the folder should be"


def test_each_daemon_assembly_is_logged_and_fills_the_mood_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assembler.config.files import load_config
    from assembler.daemon import service
    from assembler.daemon.service import Daemon

    (tmp_path / "assembler.toml").write_text("[memory]\nenabled = false\n")
    config = load_config(str(tmp_path), None)
    window = [message(3, "why is it broken AGAIN"), message(1, "ok, thanks!")]

    def run_once(config: object, *, now: datetime, **kwargs: object) -> SimpleNamespace:
        # The pipeline itself is tested elsewhere: this is the daemon's cycle around it.
        expires = now + timedelta(minutes=30)
        record = {"messages_read": 2, "expires": expires.isoformat()}
        measured = SimpleNamespace(
            messages_read=2, frontmatter=SimpleNamespace(expires=expires), to_json=lambda: record
        )
        return SimpleNamespace(
            now=now, path=tmp_path / "SCRATCHPAD.md", measured=measured, degraded=[], written=True,
            recall=None, secret_patterns=(), transcripts=SimpleNamespace(messages=window),
            moods_kept=False,
        )  # fmt: skip

    monkeypatch.setattr(service, "run_once", run_once)  # as the daemon calls it
    daemon = Daemon(config, clock=lambda: NOW, hosts=HOSTS)

    daemon._assemble("change")
    daemon._assemble("refresh")

    with AssemblyLog(log_path(config.state_dir)) as runs:
        assert [run.reason for run in runs.last()] == ["refresh", "change"]
        assert runs.last()[0].record["messages_read"] == 2
    with MoodHistory(history_path(config.state_dir)) as history:
        assert history.count() == 2


def test_an_assembly_reads_its_windows_moods_from_the_history_scoring_each_message_once(
    tmp_path: Path,
) -> None:
    from assembler.mood.history import remembering

    state = tmp_path / ".scratchpad"
    model = CountingModel()
    window = [message(40, "why is it failing AGAIN"), message(20, "ok, that worked, thanks")]
    first = analyze(
        window, now=NOW, half_life=timedelta(minutes=20), model=remembering(state, window, model)
    )  # type: ignore[arg-type]
    later = [*window, message(5, "night")]
    second = analyze(
        later, now=NOW, half_life=timedelta(minutes=20), model=remembering(state, later, model)
    )  # type: ignore[arg-type]

    assert model.scored == [m.text for m in later]  # each text once, across both assemblies
    fresh = analyze(later, now=NOW, half_life=timedelta(minutes=20), model=load_mood_model())
    assert second.combined.trajectory == fresh.combined.trajectory
    assert second.combined.primary == fresh.combined.primary
    assert first.combined.messages == 2
    with MoodHistory(history_path(state)) as history:
        assert history.count() == 3


def test_without_a_usable_history_the_window_is_scored_afresh(tmp_path: Path) -> None:
    from assembler.mood.history import remembering

    state = tmp_path / ".scratchpad"
    state.mkdir()
    (state / "mood.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    model = load_mood_model()
    window = [message(10, "why is it failing AGAIN")]
    assert remembering(state, window, model) is model
    assert not (tmp_path / "elsewhere.sqlite").exists()


@pytest.mark.parametrize("session", ["s1", None])
def test_the_same_messages_read_from_a_moved_workspace_are_kept_once(
    history: MoodHistory, session: str | None
) -> None:
    def read_from(folder: str) -> list[Message]:
        source = f"{folder}/transcripts/chat.jsonl"
        return [
            Message("user", text, NOW - timedelta(minutes=m), source, "ray", session)  # type: ignore[arg-type]
            for m, text in ((30, "why is it failing AGAIN"), (5, "ok thanks, that worked"))
        ]

    model = CountingModel()
    history.record(read_from("/home/ray/ws"), model)
    added = history.record(read_from("/mnt/backup/ws-copy"), model)

    assert added == 0
    assert history.count() == 2
    assert len(history.between(NOW - timedelta(hours=1), NOW)) == 2


def test_a_history_of_the_older_schema_is_moved_aside_and_refilled(tmp_path: Path) -> None:
    import sqlite3

    from assembler.mood.history import _SCHEMA

    path = history_path(tmp_path / ".scratchpad")
    path.parent.mkdir()
    old = sqlite3.connect(path)
    old.executescript(_SCHEMA)  # the table is the same; the ids in it were made otherwise
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()

    with MoodHistory(path) as history:
        assert history.record([message(1, "hello there, all good")], load_mood_model()) == 1
    assert path.with_name("mood.sqlite.broken").exists()


# --- another scorer: the history rescores, never mixes ------------------------------------------


def test_moods_another_scorer_gave_are_rescored_when_the_window_is_read_again(
    tmp_path: Path,
) -> None:
    state = tmp_path / ".scratchpad"
    window = [message(40, "the deploy failed"), message(20, "ok, that worked")]
    old, new = OneMood("ngram:old", "frustrated"), OneMood("embedding:new", "happy")
    remembering(state, window, old)

    scorer = remembering(state, [*window, message(5, "night")], new)

    # every message of the window scored by the new scorer, each once; none of the old moods
    assert new.scored == ["the deploy failed", "ok, that worked", "night"]
    assert [m.primary for m in scorer.score_many([m.text for m in window])] == ["happy"] * 2
    with MoodHistory(history_path(state)) as history:
        assert {r.mood.primary for r in history.between(NOW - timedelta(hours=1), NOW)} == {"happy"}
        assert history.moods_of(window, "ngram:old") == {}
        assert history.missing(window, "embedding:new") == []
        assert history.missing(window, "ngram:old") == window


def test_older_rows_of_another_scorer_are_rescored_from_their_kept_text(
    history: MoodHistory,
) -> None:
    secret = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 and it failed"
    old_rows = [message(600, "yesterday's deploy failed"), message(500, secret)]
    history.record(old_rows, OneMood("ngram:old", "frustrated"))
    new = OneMood("embedding:new", "neutral")

    assert history.rescore(new, limit=1) == 1  # the newest first, a batch at a time
    assert new.scored == [redact(secret)]  # what is kept, never the secret
    assert history.rescore(new) == 1
    assert history.rescore(new) == 0
    moods = [r.mood.primary for r in history.between(NOW - timedelta(hours=12), NOW)]
    assert moods == ["neutral", "neutral"]


def test_record_without_rescore_keeps_what_another_scorer_gave(history: MoodHistory) -> None:
    # The assembly log's second try and the status page add what is missing, no more: the
    # assembly's own scorer decides what the window's moods are.
    window = [message(3, "why is it broken")]
    history.record(window, OneMood("embedding:new", "frustrated"))

    assert history.record(window, OneMood("ngram:old", "neutral")) == 0
    assert history.record(window, OneMood("ngram:old", "neutral"), rescore=True) == 1
    [record] = history.between(NOW - timedelta(hours=1), NOW)
    assert record.mood.primary == "neutral"


def test_a_history_of_schema_2_is_upgraded_in_place_and_its_moods_rescored(
    tmp_path: Path,
) -> None:
    import sqlite3

    from assembler.mood.history import _SCHEMA

    path = history_path(tmp_path / ".scratchpad")
    path.parent.mkdir()
    old = sqlite3.connect(path)
    old.executescript(_SCHEMA.replace(",\n    scorer TEXT NOT NULL", ""))  # schema 2's table
    said = message(30, "why is it failing AGAIN")
    scores = '{"frustrated": 1.0}'
    row = (message_id(said), said.timestamp.timestamp(), None, "s1", "chat.jsonl", said.text)  # type: ignore[union-attr]
    old.execute(
        "INSERT INTO moods VALUES (?,?,?,?,?,?,23,'frustrated',1.0,NULL,0.0,-0.5,0.8,-0.4,?)",
        (*row, scores),
    )
    old.execute("PRAGMA user_version = 2")
    old.commit()
    old.close()

    with MoodHistory(path) as history:
        assert history.count() == 1  # kept, not moved aside
        assert history.missing([said]) == []
        assert history.missing([said], "any scorer") == [said]
        [(scorer,)] = history._db.execute("SELECT scorer FROM moods").fetchall()
        assert scorer == UNKNOWN_SCORER
    assert not path.with_name("mood.sqlite.broken").exists()

    model = load_mood_model()
    remembering(tmp_path / ".scratchpad", [said], model)
    with MoodHistory(path) as history:
        [record] = history.between(NOW - timedelta(hours=1), NOW)
        assert record.mood.scores == pytest.approx(model.score(said.text).scores, abs=1e-4)
        assert history.missing([said], model.version) == []


class SureGate(OneMood):
    """A scorer whose moods carry their own P(emotional), as the embedding head's gate gives."""

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        moods = super().score_many(texts)
        return [MessageMood(**{**vars(m), "emotional": 0.875}) for m in moods]


def test_a_messages_emotional_mass_is_kept_and_a_window_from_the_history_reads_it(
    history: MoodHistory,
) -> None:
    scorer = SureGate("gate:1", "frustrated")
    window = [message(3, "that is the wrong branch")]
    history.record(window, scorer)

    [record] = history.between(NOW - timedelta(hours=1), NOW)
    assert record.mood.emotional == pytest.approx(0.875)
    assert record.mood.scores == scorer.score_many(["x"])[0].scores  # no extra label
    report = window_report([record], now=NOW, half_life=timedelta(minutes=20))
    # the default calibration: P(emotional now) is the latest message's own mass
    assert report.combined.confidence == pytest.approx(0.875, abs=1e-3)
    assert report.combined.primary == "frustrated"


def test_a_stored_emotional_mass_out_of_range_is_not_trusted(history: MoodHistory) -> None:
    history.record([message(3, "hello there")], SureGate("gate:1", "neutral"))
    with history._lock:
        history._db.execute("UPDATE moods SET scores = ?", ('{"neutral": 1.0, "_emotional": 7}',))
        history._db.commit()
    [record] = history.between(NOW - timedelta(hours=1), NOW)
    assert record.mood.emotional is None
    assert record.mood.scores["neutral"] == 1.0


def test_a_kept_history_stays_open_and_is_opened_again_when_its_file_is_replaced(
    tmp_path: Path,
) -> None:
    from assembler.mood.history import KeptHistory, remembering

    state = tmp_path / ".scratchpad"
    kept = KeptHistory()
    model = OneMood("v1", "joy")
    remembering(state, [message(20, "first")], model, kept=kept)
    opened = kept.history(history_path(state))
    remembering(state, [message(20, "first"), message(10, "second")], model, kept=kept)
    assert kept.history(history_path(state)) is opened  # not opened again
    assert model.scored == ["first", "second"]  # each text once, as with a fresh open

    # The agent puts a link in its place: the kept one is dropped, the link refused.
    moved = history_path(state).rename(tmp_path / "moved.sqlite")
    history_path(state).symlink_to(moved)
    assert remembering(state, [message(5, "third")], model, kept=kept) is model
    history_path(state).unlink()
    remembering(state, [message(5, "third")], model, kept=kept)
    assert kept.history(history_path(state)) is not opened
    with MoodHistory(history_path(state)) as history:
        assert history.count() == 1  # a new file: the history is a cache
    kept.close()


def test_a_kept_history_whose_schema_another_process_changed_is_checked_again(
    tmp_path: Path,
) -> None:
    import sqlite3

    from assembler.mood.history import KeptHistory, remembering

    state = tmp_path / ".scratchpad"
    kept = KeptHistory()
    model = OneMood("v1", "joy")
    remembering(state, [message(20, "first")], model, kept=kept)
    opened = kept.history(history_path(state))
    # The agent adds a trigger of its own through another connection.
    other = sqlite3.connect(history_path(state))
    other.execute("CREATE TRIGGER planted BEFORE INSERT ON moods BEGIN SELECT 1; END")
    other.commit()
    other.close()
    remembering(state, [message(20, "first"), message(10, "second")], model, kept=kept)
    assert kept.history(history_path(state)) is not opened  # opened and checked again
    assert state.joinpath("mood.sqlite.broken").exists()  # not ours: moved aside
    kept.close()
