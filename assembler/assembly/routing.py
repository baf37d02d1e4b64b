"""Routing hint: how sensitive the recent conversation is, how complex the task, and which tier.

Sensitivity comes from the secret and personal-data findings of `assembler.redact`, which
report what kind of thing was seen and how many distinct values, never the value itself: the
hint ends up in SCRATCHPAD.md, which is injected into every turn.

Complexity comes from keywords (architecture and design words weigh more than debugging and
deploy words, which weigh more than greetings), weighted towards the newest messages, and is
pushed up by long messages and many code blocks. Small-talk words count only in a message that
is small talk: a short one with few other words, where the word is not part of a phrase that
means something else ("last night"). The hint says it in plain words: "complex: a design or
architecture task with 3 code blocks", "simple: a short question". The tier follows the
complexity, except that a secret in the conversation sends it to the `high-sensitivity` tier
(local-only by default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from assembler.config.schema import DEFAULT_TIERS, TIER_KEYS
from assembler.errors import ConfigError
from assembler.redact import Finding, scan_where

LEVELS: tuple[str, ...] = ("low", "medium", "high")

# Keywords per complexity level, matched case-insensitively on word boundaries. A trailing `*`
# matches any word that starts with the stem ("deploy*" matches deployed, deploying); phrases
# are matched as written. Low-level words only count in short messages (a "thanks" at the end
# of a long design discussion says nothing about the task).
# fmt: off
DEFAULT_COMPLEXITY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "high": (
        "architecture", "architect*", "re-architect*", "design*", "redesign*", "migration*",
        "migrate*", "refactor*", "rewrite", "security review", "security audit", "threat model*",
        "scalability", "trade-off*", "tradeoff*", "data model*",
    ),
    "medium": (
        "debug*", "fix*", "error*", "deploy*", "fail*", "broken", "crash*", "bug", "bugs",
        "exception*", "traceback", "stack trace", "timeout*", "timed out", "rollback",
        "roll back", "outage", "incident*", "troubleshoot*", "investigate", "not working",
    ),
    "low": (
        "hi", "hello", "hey", "thanks", "thank you", "thx", "cheers", "good morning",
        "good night", "night", "morning", "how are you", "ok", "okay", "cool", "nice", "lol",
        "bye",
    ),
}
# fmt: on

# How much one keyword hit of each level weighs: architecture words are rarer and say more.
LEVEL_WEIGHTS: dict[str, float] = {"high": 1.5, "medium": 1.0, "low": 0.75}
RECENCY_DECAY = 0.7  # the newest message weighs 1, the one before 0.7, then 0.49, ...
MAX_HITS_PER_MESSAGE = {"high": 3, "medium": 3, "low": 1}  # one message cannot dominate
SHORT_MESSAGE_CHARS = 120  # low-level words and short questions only count below this
SHORT_QUESTION_CHARS = 80
LONG_MESSAGE_CHARS = 2500  # one message this long pushes complexity up a level
LONG_WINDOW_CHARS = 10_000  # so does this much text in the window
MANY_CODE_BLOCKS = 3  # so do this many fenced code blocks in the window

# What the hint says, in plain words: the level, then what the window is mostly about.
PLAIN_LEVELS = {"high": "complex", "medium": "moderate", "low": "simple"}
_LEVEL_TOPICS = {
    "high": "a design or architecture task",
    "medium": "debugging or deploy work",
    "low": "small talk",
}

# Phrases in which a small-talk word is no small talk: "last night" says when, not goodnight.
NOT_SMALL_TALK = (
    "last night", "at night", "every night", "night shift", "friday night", "saturday night",
    "this morning", "tomorrow morning", "yesterday morning", "in the morning", "morning standup",
    "ok to", "okay to", "is ok", "is okay", "not ok", "not okay", "looks ok", "nice to have",
    "cool down", "cooldown",
)  # fmt: skip
# A message with more words than this besides its small talk is about something else.
SMALL_TALK_MAX_WORDS = 4


@dataclass
class RoutingHint:
    """What the Routing Hint section says, and why (`explain`, for `--explain`)."""

    sensitivity: str  # "low" | "medium" | "high"
    sensitivity_reason: str
    findings: list[Finding]
    complexity: str  # "low" | "medium" | "high"
    complexity_reason: str
    tier: str
    explain: list[str] = field(default_factory=list)


# --- detectors -----------------------------------------------------------------------------


def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    stem = keyword.rstrip("*")
    words = r"\s+".join(re.escape(w) for w in stem.split())
    tail = r"[\w-]*" if keyword.endswith("*") else ""
    return re.compile(rf"(?<![\w-]){words}{tail}(?![\w-])", re.IGNORECASE)


def _keyword_table(
    complexity_keywords: Mapping[str, Sequence[str]] | None,
) -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """Given the user's keywords per level (None: the defaults), return the compiled table. A
    level the user gives replaces that level's defaults. Raise ConfigError on an unknown level
    or an empty keyword."""
    table: dict[str, Sequence[str]] = dict(DEFAULT_COMPLEXITY_KEYWORDS)
    for level, words in (complexity_keywords or {}).items():
        if level not in LEVELS:
            raise ConfigError(
                f"At 'routing.complexity_keywords.{level}': unknown level; use high, medium or low"
            )
        if isinstance(words, str):
            raise ConfigError(
                f"At 'routing.complexity_keywords.{level}': expected a list of words, got a string"
            )
        for word in words:
            if not word.strip("* "):
                raise ConfigError(
                    f"At 'routing.complexity_keywords.{level}': empty keyword {word!r}; remove it"
                )
        table[level] = words
    return {level: [(w.rstrip("*"), _keyword_pattern(w)) for w in table[level]] for level in LEVELS}


def _assess_complexity(
    texts: Sequence[str],
    table: Mapping[str, Sequence[tuple[str, re.Pattern[str]]]],
    lengths: Sequence[int] | None = None,
) -> tuple[str, str, list[str]]:
    """Given texts (newest last), the keyword table and optionally the whole messages' lengths
    (when the texts are clipped), return the complexity level, its reason and the explain
    lines."""
    scores = dict.fromkeys(LEVELS, 0.0)
    hits: dict[str, dict[str, int]] = {level: {} for level in LEVELS}
    n = len(texts)
    for i, text in enumerate(texts):
        weight = RECENCY_DECAY ** (n - 1 - i)
        short = len(text.strip()) < SHORT_MESSAGE_CHARS
        for level in LEVELS:
            if level == "low" and not short:
                continue
            found = _small_talk(text, table[level]) if level == "low" else _hits(text, table[level])
            for word, count in found.items():
                hits[level][word] = hits[level].get(word, 0) + count
            seen = len(found)
            scores[level] += weight * LEVEL_WEIGHTS[level] * min(seen, MAX_HITS_PER_MESSAGE[level])
        stripped = text.strip()
        if (
            0 < len(stripped) < SHORT_QUESTION_CHARS
            and stripped.endswith("?")
            and not any(p.search(text) for lv in ("high", "medium") for _, p in table[lv])
        ):
            hits["low"]["short question"] = hits["low"].get("short question", 0) + 1
            scores["low"] += weight * LEVEL_WEIGHTS["low"]

    explain = [
        "complexity scores (newest message weighs 1, decay "
        f"{RECENCY_DECAY}): " + ", ".join(f"{lv} {scores[lv]:.2f}" for lv in reversed(LEVELS))
    ]
    explain += [f"{lv} words: {_top_hits(hits[lv], 6)}" for lv in reversed(LEVELS) if hits[lv]]
    if any(scores.values()):
        # Ties go to the higher level: better to over- than under-provision.
        level = max(reversed(LEVELS), key=lambda lv: scores[lv])
        topic = _LEVEL_TOPICS[level]
        if level == "low" and set(hits["low"]) == {"short question"}:
            topic = "a short question"
    else:
        level = "low"
        topic = "no task named"

    pushes = []
    sizes = [len(t) for t in texts]
    if lengths is not None:
        sizes = [max(size, length) for size, length in zip(sizes, lengths, strict=True)]
    longest = max(sizes, default=0)
    total = sum(sizes)
    blocks = sum(t.count("```") for t in texts) // 2
    if longest >= LONG_MESSAGE_CHARS or total >= LONG_WINDOW_CHARS:
        pushes.append(
            f"long messages ({longest} chars max, {total} in all)"
            if longest >= LONG_MESSAGE_CHARS
            else f"a lot of text ({total} chars)"
        )
    if blocks >= MANY_CODE_BLOCKS:
        pushes.append(f"{blocks} code blocks")
    for push in pushes:
        raised = LEVELS[min(LEVELS.index(level) + 1, len(LEVELS) - 1)]
        explain.append(f"complexity pushed up by {push}: {level} -> {raised}")
        level = raised
    reason = f"{PLAIN_LEVELS[level]}: {topic}"
    if pushes:
        reason += " with " + " and ".join(p.split(" (")[0] for p in pushes)
    return level, reason, explain


def _hits(text: str, words: Sequence[tuple[str, re.Pattern[str]]]) -> dict[str, int]:
    """Given a message and a level's keywords, return how often each one occurs in it."""
    found = {word: len(pattern.findall(text)) for word, pattern in words}
    return {word: count for word, count in found.items() if count}


_NOT_SMALL_TALK = [_keyword_pattern(phrase) for phrase in NOT_SMALL_TALK]


_WORD = re.compile(r"[\w'’-]+")


def _small_talk(text: str, words: Sequence[tuple[str, re.Pattern[str]]]) -> dict[str, int]:
    """Given a short message and the small-talk keywords, return those it is made of: none
    when a keyword is part of a phrase that means something else ("last night") or when the
    message says more than a few other words ("ok, run the replay for the failed payments")."""
    for pattern in _NOT_SMALL_TALK:
        text = pattern.sub(" ", text)
    found = _hits(text, words)
    if not found:
        return {}
    rest = text
    for word, pattern in words:
        if word in found:
            rest = pattern.sub(" ", rest)
    return found if len(_WORD.findall(rest)) <= SMALL_TALK_MAX_WORDS else {}


def _top_hits(counts: Mapping[str, int], limit: int) -> str:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return ", ".join(f"{word} ×{count}" for word, count in top)


# --- the hint ------------------------------------------------------------------------------


def _plural(label: str, count: int) -> str:
    if count == 1:
        return label
    return label + ("es" if label.endswith(("s", "sh", "ch", "x")) else "s")


def _describe(findings: Iterable[Finding], kind: str) -> str:
    return ", ".join(f"{f.count} {_plural(f.label, f.count)}" for f in findings if f.kind == kind)


def _merge_tiers(tiers: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(DEFAULT_TIERS)
    for key, value in (tiers or {}).items():
        if key not in TIER_KEYS:
            raise ConfigError(
                f"At 'routing.tiers.{key}': unknown level; "
                "use high-sensitivity, high, medium or low"
            )
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"At 'routing.tiers.{key}': expected a tier name, got {value!r}")
        merged[key] = value
    return merged


def route(
    texts: Sequence[str],
    *,
    tiers: Mapping[str, str] | None = None,
    extra_secret_patterns: Sequence[str] = (),
    complexity_keywords: Mapping[str, Sequence[str]] | None = None,
    lengths: Sequence[int] | None = None,
) -> RoutingHint:
    """Given the recent messages (human and assistant, newest last), return the routing hint:
    sensitivity (high on any secret, medium on personal data only, else low), complexity, the
    suggested tier and why. `tiers` and `complexity_keywords` override the defaults per key.
    The texts are read as given: pass `Message.text`, which holds the head and tail of a long
    message, and its whole length in `lengths` (`Message.length`, one per text) so that a long
    message still counts as long. Raise ConfigError if an extra pattern, a tier key or a
    keyword level is invalid, ValueError if `lengths` does not have one length per text."""
    if lengths is not None and len(lengths) != len(texts):
        raise ValueError(f"route: {len(lengths)} lengths for {len(texts)} texts; pass one per text")
    tier_map = _merge_tiers(tiers)
    table = _keyword_table(complexity_keywords)
    findings, where = scan_where(texts, extra_secret_patterns=extra_secret_patterns)

    secrets = _describe(findings, "secret")
    pii = _describe(findings, "pii")
    if secrets:
        sensitivity = "high"
    elif pii:
        sensitivity = "medium"
    else:
        sensitivity = "low"
    parts = [f"secret: {secrets}" if secrets else "", f"PII: {pii}" if pii else ""]
    sensitivity_reason = "; ".join(p for p in parts if p) or "no secrets or PII detected"

    complexity, complexity_reason, explain = _assess_complexity(texts, table, lengths)
    explain[:0] = [
        f"{f.kind} '{f.label}': {f.count} distinct, in message(s) "
        f"{', '.join(map(str, where[f.label]))} of {len(texts)}"
        for f in findings
    ]
    if sensitivity == "high":
        tier = tier_map["high-sensitivity"]
        explain.append(
            f"tier {tier}: a secret was seen, which overrides complexity {complexity} "
            f"({tier_map[complexity]})"
        )
    else:
        tier = tier_map[complexity]
        explain.append(f"tier {tier}: from complexity {complexity}")
        if sensitivity == "medium":
            explain.append("personal data seen: keep it out of tools that leave the machine")
    return RoutingHint(
        sensitivity=sensitivity,
        sensitivity_reason=sensitivity_reason,
        findings=findings,
        complexity=complexity,
        complexity_reason=complexity_reason,
        tier=tier,
        explain=explain,
    )
