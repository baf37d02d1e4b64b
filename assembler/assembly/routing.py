"""Routing hint: how sensitive the recent conversation is, how complex the task, and which tier.

Sensitivity comes from detectors for secrets (API keys, tokens, private keys, passwords) and
personal data (email addresses, phone numbers, card numbers, IBANs, US SSNs). Findings report
what kind of thing was seen and how many distinct values, never the value itself: the hint ends
up in SCRATCHPAD.md, which is injected into every turn.

Complexity comes from keywords (architecture and design words weigh more than debugging and
deploy words, which weigh more than greetings), weighted towards the newest messages, and is
pushed up by long messages and many code blocks. Small-talk words count only in a message that
is small talk: a short one with few other words, where the word is not part of a phrase that
means something else ("last night"). The hint says it in plain words: "complex: a design or
architecture task with 3 code blocks", "simple: a short question". The tier follows the
complexity, except that a secret in the conversation sends it to the `high-sensitivity` tier
(local-only by default).

The detectors aim at few false positives on ordinary technical text: git SHAs, UUIDs, digests,
pod names, version numbers, timestamps and IP addresses are not findings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from assembler.config.schema import DEFAULT_TIERS, TIER_KEYS
from assembler.errors import ConfigError

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


@dataclass(frozen=True)
class Finding:
    """One kind of sensitive content seen in the window: `kind` "secret" or "pii", a label such
    as "AWS access key", and the number of distinct values (the values are never kept)."""

    kind: str
    label: str
    count: int


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

Validator = Callable[[re.Match[str]], bool]
Normalizer = Callable[[str], str]


@dataclass(frozen=True)
class _Detector:
    kind: str
    label: str
    pattern: re.Pattern[str]
    group: int = 0  # the group holding the value (for counting distinct values)
    valid: Validator | None = None
    normalize: Normalizer | None = None


_PLACEHOLDER_WORDS = frozenset(
    "password passwd secret token redacted placeholder example changeit required optional "
    "undefined null none true false string hidden masked".split()
)
_PLACEHOLDER_PARTS = ("redacted", "example", "placeholder", "your_", "your-", "xxxx", "****")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_SNAKE_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# A plain word ("token: expired", "Password: incorrect") is log or prose, not a password.
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]+")


def _is_placeholder(value: str) -> bool:
    """Given the value of a `password = ...` style assignment, return True if it is a reference
    or placeholder (an environment variable, a template, a dotted name, masked text) rather
    than a literal secret."""
    lowered = value.lower()
    return (
        value[0] in "$<{%/~.![(*#&@"
        or len(set(value)) == 1
        or lowered in _PLACEHOLDER_WORDS
        or any(part in lowered for part in _PLACEHOLDER_PARTS)
        or bool(_DOTTED_NAME.fullmatch(value))
        or bool(_CONSTANT_NAME.fullmatch(value))
        or bool(_SNAKE_NAME.fullmatch(value))
        or bool(_PLAIN_WORD.fullmatch(value))
    )


def _assignment_value_ok(match: re.Match[str]) -> bool:
    return not _is_placeholder(match.group(2))


def _url_password_ok(match: re.Match[str]) -> bool:
    return not _is_placeholder(match.group(1))


def _mixed(text: str) -> bool:
    """Given text, return True if it has digits, upper case and lower case letters."""
    return (
        any(c.isdigit() for c in text)
        and any(c.isupper() for c in text)
        and any(c.islower() for c in text)
    )


def _api_key_ok(match: re.Match[str]) -> bool:
    # Real keys are random; "sk-learn-compatible-wrapper" is a package name.
    return _mixed(match.group(1))


def _shannon_entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _char_class(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2 if char.islower() else 3


def _looks_random(match: re.Match[str]) -> bool:
    """Given a long run of token characters, return True if it looks like a random key rather
    than an identifier, a hex hash (git SHA, digest, UUID) or a kebab/camel-case name.

    The run is split on `-` and `_`; its longest piece must be 20+ characters that mix upper
    case, lower case and digits, switch between those classes often (random text switches on
    about 60% of characters, camelCase words on about 30%) and have high entropy."""
    token = match.group(0).rstrip("=")
    piece = max(re.split(r"[-_]", token), key=len)
    if len(piece) < 20 or re.fullmatch(r"[0-9a-fA-F]+", piece):
        return False
    if not _mixed(piece):
        return False
    switches = sum(_char_class(a) != _char_class(b) for a, b in pairwise(piece))
    return switches / (len(piece) - 1) >= 0.4 and _shannon_entropy(piece) >= 3.8


def _looks_random_base64(match: re.Match[str]) -> bool:
    """Given a 40-character run of base64 characters with a '/' or '+' in it, return True if it
    looks random: mixed case and digits, high entropy (a path like `src/components/...` is
    neither)."""
    token = match.group(0)
    letters = token.replace("/", "").replace("+", "")
    return _mixed(letters) and _shannon_entropy(token) >= 4.0 and token.count("/") <= 4


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = int(char)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9]|2)|35")


def _card_ok(match: re.Match[str]) -> bool:
    raw = match.group(0)
    digits = re.sub(r"\D", "", raw)
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits):
        return False
    groups = re.split(r"[ -]", raw)
    # Separators, when present, must cut the usual groups (4-4-4-4, or Amex 4-6-5).
    if len(groups) > 1 and [len(g) for g in groups] not in (
        [4, 4, 4, 4],
        [4, 6, 5],
        [4, 4, 4, 4, 3],
    ):
        return False
    return len(set(digits)) > 1 and _luhn_ok(digits)


_IBAN_LENGTHS = {
    "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "EE": 20,
    "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IS": 26,
    "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15,
    "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "AE": 23, "SA": 24,
    "TR": 26, "IL": 23, "BR": 29,
}  # fmt: skip


def _iban_ok(match: re.Match[str]) -> bool:
    iban = re.sub(r"\s", "", match.group(0)).upper()
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


_NON_PERSONAL_DOMAINS = re.compile(
    r"(?:^|\.)(?:example\.(?:com|org|net)|localhost|users\.noreply\.github\.com)$"
    r"|\.(?:example|test|invalid|local|localdomain|internal|lan|home|svc|cluster\.local)$",
    re.IGNORECASE,
)
_NON_PERSONAL_LOCALS = frozenset({"git", "noreply", "no-reply", "donotreply", "do-not-reply"})


def _email_ok(match: re.Match[str]) -> bool:
    local, _, domain = match.group(0).rpartition("@")
    return local.lower() not in _NON_PERSONAL_LOCALS and not _NON_PERSONAL_DOMAINS.search(domain)


def _phone_ok(match: re.Match[str]) -> bool:
    return 8 <= len(re.sub(r"\D", "", match.group(0))) <= 15


def _digits_only(value: str) -> str:
    return re.sub(r"\D", "", value)


def _compact_upper(value: str) -> str:
    return re.sub(r"\s", "", value).upper()


_SECRET_KEYWORDS = (
    r"password|passwd|passphrase|pwd|secret[_-]?access[_-]?key|secret[_-]?key|client[_-]?secret"
    r"|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?token"
    r"|token"
)

# Order matters: each detector's matches are blanked out before the next one runs, so a key
# counts once, as its most specific kind, and its digits are not read again as a card number.
_BUILTIN_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "secret",
        "private key block",
        re.compile(
            # The body is base64 plus PEM headers ("Proc-Type: 4,ENCRYPTED"); it cannot run
            # past a "-----" so a BEGIN without an END costs linear time, not quadratic.
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[A-Za-z0-9+/=\s:,.]|-(?!----))*"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
    ),
    _Detector(
        "secret",
        "AWS access key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    _Detector(
        "secret",
        "GitHub token",
        re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})"
        ),
    ),
    _Detector(
        "secret",
        "OpenAI/Anthropic API key",
        re.compile(
            r"(?<![A-Za-z0-9_-])sk-(?:ant-[a-z]+\d*-|proj-|svcacct-|admin-)?"
            r"([A-Za-z0-9_-]{20,})(?![A-Za-z0-9_-])"
        ),
        valid=_api_key_ok,
    ),
    _Detector(
        "secret",
        "Stripe secret key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9_])"),
    ),
    _Detector(
        "secret",
        # 40 base64 characters: what AWS issues as the secret beside an access key id. Read
        # as random only when a '/' or '+' splits it (else the generic detector sees it whole).
        "AWS secret key",
        re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9]*[/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        valid=_looks_random_base64,
    ),
    _Detector(
        "secret",
        "Slack token",
        re.compile(r"(?<![A-Za-z0-9.])(?:xoxe\.)?xox[abprse]-\d+-[A-Za-z0-9-]{8,}"),
    ),
    _Detector(
        "secret",
        "JWT",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        ),
    ),
    _Detector(
        "secret",
        "password in URL",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+-]{0,30}://[^\s:/@]{1,256}:([^\s@/]{3,256})@[^\s/]+"),
        group=1,
        valid=_url_password_ok,
    ),
    _Detector(
        "secret",
        "bearer token",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"),
        group=1,
    ),
    _Detector(
        "secret",
        "password assignment",
        re.compile(
            rf"(?i)(?<![A-Za-z0-9])({_SECRET_KEYWORDS})(?![A-Za-z0-9])[\"']?\s*(?::=|=>|:|=)\s*"
            r"[\"']?([^\s\"'`,;()\[\]{}<>]{6,})"
        ),
        group=2,
        valid=_assignment_value_ok,
    ),
    _Detector(
        "secret",
        "generic high-entropy token",
        re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9+_-]{32,}={0,2}(?![A-Za-z0-9+/=_.-])"),
        valid=_looks_random,
    ),
    _Detector(
        "pii",
        "email address",
        re.compile(
            # Bounded parts (the RFC 5321 limits) keep a long run without an "@" linear.
            r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@"
            r"[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"
        ),
        valid=_email_ok,
        normalize=str.lower,
    ),
    _Detector(
        "pii",
        "IBAN",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
        valid=_iban_ok,
        normalize=_compact_upper,
    ),
    _Detector(
        "pii",
        "credit card number",
        re.compile(r"(?<![\d.-])\d{4}(?:[ -]?\d{2,7}){2,4}(?![\d.-])"),
        valid=_card_ok,
        normalize=_digits_only,
    ),
    _Detector(
        "pii",
        "US SSN",
        re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"),
        normalize=_digits_only,
    ),
    _Detector(
        "pii",
        "phone number",
        re.compile(
            # International (+61 412 345 678), North American ((555) 123-4567, 555-123-4567),
            # Australian (0412 345 678, (02) 9876 5432). Separators are required between
            # groups, so bare numbers (ids, timestamps) are not phone numbers.
            r"(?<![\w+.:/-])(?:"
            r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,5}"
            r"|\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}"
            r"|04\d{2} ?\d{3} ?\d{3}"
            r"|\(0[2378]\) ?\d{4} ?\d{4}"
            r")(?![\w.:/-])"
        ),
        valid=_phone_ok,
        normalize=_digits_only,
    ),
)


def _compile_extra(patterns: Sequence[str]) -> list[_Detector]:
    """Given the user's extra secret patterns, return their detectors. Raise ConfigError if a
    pattern is not a valid regular expression or matches the empty string."""
    detectors = []
    for n, pattern in enumerate(patterns, 1):
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise ConfigError(
                f"At 'routing.extra_secret_patterns': {pattern!r} is not a valid regular "
                f"expression ({error}); fix or remove it"
            ) from error
        if compiled.fullmatch(""):
            raise ConfigError(
                f"At 'routing.extra_secret_patterns': {pattern!r} matches the empty string, so it "
                "would match everywhere; make it match the secret itself"
            )
        detectors.append(_Detector("secret", f"custom secret pattern #{n}", compiled))
    return detectors


def scan(texts: Sequence[str], *, extra_secret_patterns: Sequence[str] = ()) -> list[Finding]:
    """Given texts, return a Finding per kind of secret or personal data seen in them, with the
    number of distinct values, secrets first. Raise ConfigError if an extra pattern is invalid."""
    found, _ = _scan(texts, _compile_extra(extra_secret_patterns))
    return found


def _scan(
    texts: Sequence[str], extra: Sequence[_Detector]
) -> tuple[list[Finding], dict[str, list[int]]]:
    """Given texts and the extra detectors, return the findings and, per label, the 1-based
    positions of the messages it was seen in."""
    detectors = (*_BUILTIN_DETECTORS[:1], *extra, *_BUILTIN_DETECTORS[1:])
    values: dict[tuple[str, str], set[str]] = {}
    where: dict[str, list[int]] = {}
    for position, text in enumerate(texts, 1):
        remaining = text
        for detector in detectors:
            remaining = _apply(detector, remaining, position, values, where)
    order = {d.label: i for i, d in enumerate(detectors)}
    findings = [
        Finding(kind, label, len(seen))
        for (kind, label), seen in sorted(values.items(), key=lambda kv: order[kv[0][1]])
    ]
    return findings, where


def _apply(
    detector: _Detector,
    text: str,
    position: int,
    values: dict[tuple[str, str], set[str]],
    where: dict[str, list[int]],
) -> str:
    """Record the detector's valid matches in `text` and return the text with them blanked."""
    spans = []
    for match in detector.pattern.finditer(text):
        if match.end() == match.start() or (detector.valid and not detector.valid(match)):
            continue
        value = match.group(detector.group) or match.group(0)
        if detector.normalize:
            value = detector.normalize(value)
        values.setdefault((detector.kind, detector.label), set()).add(value)
        positions = where.setdefault(detector.label, [])
        if not positions or positions[-1] != position:
            positions.append(position)
        spans.append(match.span())
    return _blanked(text, spans)


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Given a text and non-overlapping spans in order, return it with the spans blanked.

    The result is built once: rebuilding the string per span costs the square of the matches
    (a pasted log full of e-mail addresses took minutes).
    """
    if not spans:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces.append(text[done:start])
        pieces.append(" " * (end - start))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def redact(text: str, *, extra_secret_patterns: Sequence[str] = ()) -> str:
    """Given a text, return it with every secret and piece of personal data the detectors find
    replaced by `[redacted <kind>]` (e.g. `[redacted GitHub token]`); for a `key=value` secret
    only the value goes. Raise ConfigError if an extra pattern is invalid.
    """
    detectors = (*_BUILTIN_DETECTORS[:1], *_compile_extra(extra_secret_patterns))
    detectors = (*detectors, *_BUILTIN_DETECTORS[1:])
    remaining = text
    spans: list[tuple[int, int, str]] = []
    for detector in detectors:
        found: list[tuple[int, int]] = []
        for match in detector.pattern.finditer(remaining):
            if match.end() == match.start() or (detector.valid and not detector.valid(match)):
                continue
            group = detector.group if match.group(detector.group) else 0
            found.append(match.span(group))
        spans.extend((start, end, detector.label) for start, end in found)
        # Blank them, as the scan does, so that no later detector matches inside them.
        remaining = _blanked(remaining, found)
    # Built once, like `_blanked`: one piece per span, not one copy of the text per span.
    pieces: list[str] = []
    done = 0
    for start, end, label in sorted(spans):
        if start < done:
            continue  # inside a span already redacted
        pieces.append(f"{text[done:start]}[redacted {label}]")
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


# --- complexity ----------------------------------------------------------------------------


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
    findings, where = _scan(texts, _compile_extra(extra_secret_patterns))

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
