"""Benchmark: the tokens a 20-prompt Claude Code session carries in what the hook added, with a
whole copy of the block on every change (before) vs the changes after the first copy (after).

Claude Code keeps what a hook adds in the session's history, so every copy stays in every
later request. The session: a copy of workspace-example/ (its transcripts, memory off),
rendered by `assemble --once`; 20 prompts a minute apart, each a UserPromptSubmit event to the
hook (in-process). Between some prompts the scratchpad changes, as in a working session:
the human says something new and the daemon renders again (prompts 4, 8, 12, 16: the auto
part changes), the agent saves a finding or writes its plan (6, 10, 14, 18: the agent
sections change), the daemon renders with nothing new (2, 20: only the clock moves). Both
ways see the same blocks: "before" is the former rule (the whole block whenever its content
digest changed), "after" what the hook prints now. Tokens are counted with the project's
counter (`tokens.counter`, the default estimate).

    python bench/bench_hook_session_tokens.py [-v: print what the hook sent at each prompt]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.hosts.claude_code.hook import run_hook
from assembler.hosts.handoff import current_block
from assembler.tokens import get_counter

REPO = Path(__file__).resolve().parent.parent
PROMPTS = 20
SAID = {
    4: "the migration still hangs on the index, what is holding the lock?",
    8: "ok the lock is gone. now the deploy of 1.14.4 fails on the helm secret",
    12: "ugh, AGAIN the same secret error. just give me the command",
    16: "green! thanks. write the incident note for tomorrow",
}
SAVED = {
    6: ["pad", "append", "--section", "findings", "- the lock was a psql session idle in tx"],
    10: ["pad", "write", "--section", "plan", "1. fix the helm secret\n2. deploy 1.14.4"],
    14: ["pad", "append", "--section", "findings", "- helm 64 ok after the secret fix"],
    18: ["pad", "append", "--section", "plan", "3. incident note in #incidents"],
}
RENDER_ONLY = {2, 20}


def main() -> None:
    assemble = Path(sys.executable).parent / "assemble"
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        shutil.copytree(REPO / "workspace-example", workspace)
        (workspace / "assembler.toml").write_text(
            '[transcripts]\nsources = ["transcripts/claude-code/*/*.jsonl",\n'
            '  "transcripts/openclaw/*/*/*/*.jsonl", "chat.jsonl"]\n'
            'lookback = "none"\n[memory]\nenabled = false\n'
        )
        (workspace / "chat.jsonl").write_text("")
        config = load_config(workspace)
        # The real clock: `pad` publishes the block with it.
        start = datetime.now(local_timezone(config.time.timezone)).replace(microsecond=0)

        def run(*args: str) -> None:
            argv = [str(assemble), *args, "-w", str(workspace)]
            subprocess.run(argv, check=True, capture_output=True)

        run("--once", "--now", start.isoformat())
        count = get_counter(config.tokens.counter)
        before_tokens = after_tokens = 0
        before_copies = after_copies = deltas = 0
        held_digest = ""
        for turn in range(1, PROMPTS + 1):
            now = start + timedelta(minutes=turn)
            if turn in SAID:
                line = {"role": "user", "content": SAID[turn], "timestamp": now.isoformat()}
                with (workspace / "chat.jsonl").open("a") as chat:
                    chat.write(json.dumps(line) + "\n")
            if turn in SAID or turn in RENDER_ONLY:
                run("--once", "--now", now.isoformat())
            if turn in SAVED:
                run(*SAVED[turn])
            block = current_block(load_config(workspace), now)
            if block.digest != held_digest:  # the former rule: the whole block on a change
                before_tokens += count(block.text)
                before_copies += 1
                held_digest = block.digest
            event = {
                "session_id": "bench-session",
                "transcript_path": str(workspace / "bench-session.jsonl"),
                "cwd": str(workspace),
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"prompt {turn}",
            }
            printed = run_hook(
                json.dumps(event), workspace=str(workspace), config_path=None, now=now
            )
            if printed:
                text = json.loads(printed)["hookSpecificOutput"]["additionalContext"]
                after_tokens += count(text)
                is_delta = text.startswith("[Scratchpad update")
                if "-v" in sys.argv:
                    print(f"--- prompt {turn} ({count(text)} tokens)\n{text}")
                deltas += is_delta
                after_copies += not is_delta
    print(f"data: workspace-example copy, {PROMPTS} prompts, changes at {sorted(SAID)} (said),")
    print(f"      {sorted(SAVED)} (agent sections), {sorted(RENDER_ONLY)} (clock only)")
    print(f"before (whole block on each change): {before_tokens:,} tokens, {before_copies} copies")
    print(
        f"after  (changes after the first copy): {after_tokens:,} tokens, "
        f"{after_copies} whole copies + {deltas} change notes"
    )
    print(f"ratio before/after: {before_tokens / max(after_tokens, 1):.2f}")


if __name__ == "__main__":
    main()
