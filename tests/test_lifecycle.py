"""Opening the memory index and keeping it open and in sync (`assembler.memory.lifecycle`)."""

from __future__ import annotations

from pathlib import Path

from assembler.config.files import validate
from assembler.memory.lifecycle import WarmMemory, synced_memory

# --- The warm memory of a daemon that watches the memory files -------------------------------


def test_a_watched_warm_memory_syncs_only_after_files_changed(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    warm = WarmMemory(watched=True)
    assert warm.sync_due
    with synced_memory(config, warm=warm) as index:
        assert index.search("lecture", k=1)[0].path == "MEMORY.md"
    assert not warm.sync_due
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    unwatched = synced_memory(config, warm=warm)  # nobody said a file changed: no sync
    assert (unwatched.report.files_seen, unwatched.report.files_read) == (1, 0)
    assert unwatched.report.chunks_total == 1
    assert unwatched.index.search("tomatoes", k=1) == []
    warm.files_changed()
    synced = synced_memory(config, warm=warm)
    assert (synced.report.files_seen, synced.report.files_changed) == (2, 1)
    assert synced.index.search("tomatoes", k=1)[0].path == "memory/garden.md"
    warm.close()


def test_an_unwatched_warm_memory_syncs_before_every_assembly(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    warm = WarmMemory()
    synced_memory(config, warm=warm)
    (tmp_path / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Tomatoes, not a lecture.\n")
    again = synced_memory(config, warm=warm)
    assert again.report.files_changed == 1
    assert again.index.search("tomatoes", k=1)[0].path == "MEMORY.md"
    warm.close()
