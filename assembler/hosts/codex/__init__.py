"""OpenAI's Codex CLI: where it keeps a workspace's sessions (its rollout files), their format,
its hooks and its setup."""
