"""Secrets and personal data in text: detectors for secrets (API keys, tokens, private keys,
passwords) and personal data (email addresses, phone numbers, card numbers, IBANs, US SSNs),
the findings they make (what kind, how many distinct values, never the values), and the one
redaction every output path applies before text leaves the program.

The detectors aim at few false positives on ordinary technical text: git SHAs, UUIDs, digests,
pod names, version numbers, timestamps and IP addresses are not findings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from assembler.errors import ConfigError


@dataclass(frozen=True)
class Finding:
    """One kind of sensitive content seen in the window: `kind` "secret" or "pii", a label such
    as "AWS access key", and the number of distinct values (the values are never kept)."""

    kind: str
    label: str
    count: int


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
    found, _ = scan_where(texts, extra_secret_patterns=extra_secret_patterns)
    return found


def scan_where(
    texts: Sequence[str], *, extra_secret_patterns: Sequence[str] = ()
) -> tuple[list[Finding], dict[str, list[int]]]:
    """Given texts, return what `scan` returns and, per label, the 1-based positions of the
    texts it was seen in. Raise ConfigError if an extra pattern is invalid."""
    return _scan(texts, _compile_extra(extra_secret_patterns))


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
