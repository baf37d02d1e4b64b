"""Secrets and personal data in text: detectors for secrets (API keys, tokens, private keys,
passwords) and personal data (email addresses, phone numbers, card numbers, IBANs, US SSNs),
the findings they make (what kind, how many distinct values, never the values), and the one
redaction applied where text enters the program (transcript messages, memory chunks) and again
on every output path.

The rule set is detect-secrets' regular-expression plugins (GitLab, SendGrid, Twilio, Discord,
Telegram, Azure storage, Mailchimp, PyPI, Square, ...) plus the project's own detectors for what
they lack or get wrong here: whole private key blocks (the library flags the BEGIN line only),
JSON-escaped key bodies, passwords said in prose in several languages, GCP key ids, dozens of
prefixed tokens (`hf_`, `AIza`, `GOCSPX-`, `hvs.`, ...), `key=value` assignments and random
high-entropy strings. The library's entropy and keyword plugins are not used: on ordinary chat
and documentation they flag one line in ten.

The detectors aim at few false positives on ordinary technical text: git SHAs, UUIDs, digests,
pod names, version numbers, timestamps and IP addresses are not findings. A redaction marker
(`[redacted GitHub token]`) is itself a finding of its kind, so text redacted on the way in
still says what was seen.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import NamedTuple

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


class _Hit(NamedTuple):
    """One value a detector found: its label, the whole match (blanked so that no later
    detector reads it again), the part redaction replaces (the value of a `key=value`, else the
    match) and the value as counted."""

    label: str
    start: int
    end: int
    cut_start: int
    cut_end: int
    value: str


Finder = Callable[[str], Iterator[_Hit]]


@dataclass(frozen=True)
class _Detector:
    kind: str
    labels: tuple[str, ...]  # what it reports, in the order findings are listed
    find: Finder


def _regex(
    kind: str,
    label: str,
    pattern: re.Pattern[str],
    *,
    group: int = 0,
    valid: Validator | None = None,
    normalize: Normalizer | None = None,
    needs: tuple[str, ...] = (),
) -> _Detector:
    """Given a label and a pattern, return a detector of its valid matches; `group` holds the
    value (what is counted and redacted) when it matched. `needs` lists strings one of which
    every match holds (in lower case where they are): a text with none of them is not read."""

    def find(text: str) -> Iterator[_Hit]:
        if needs and not _holds_any(text, needs):
            return
        for match in pattern.finditer(text):
            if match.end() == match.start() or (valid is not None and not valid(match)):
                continue
            part = group if match.group(group) else 0
            value = match.group(part)
            start, end = match.span(part)
            yield _Hit(
                label,
                match.start(),
                match.end(),
                start,
                end,
                normalize(value) if normalize else value,
            )

    return _Detector(kind, (label,), find)


def _holds_any(text: str, needles: tuple[str, ...]) -> bool:
    """Given a text and strings, return True if it holds one of them; a string in lower case
    is looked for in any case. Most messages hold no secret, and a substring search is many
    times faster than a pattern: this spares most detectors most texts."""
    lowered: str | None = None
    for needle in needles:
        if needle.islower():
            lowered = text.lower() if lowered is None else lowered
            if needle in lowered:
                return True
        elif needle in text:
            return True
    return False


_PLACEHOLDER_WORDS = frozenset(
    "password passwd secret token redacted placeholder example changeit required optional "
    "undefined null none true false string hidden masked".split()
)
_PLACEHOLDER_PARTS = ("redacted", "example", "placeholder", "your_", "your-", "xxxx", "****")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_SNAKE_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# A plain word ("token: expired", "Password: incorrect") is log or prose, not a password; a
# camel-case name ("password: SecretStr") is a type or a field; a measure ("pw: 450W") a figure.
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]+")
_CAMEL_NAME = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)+")
_MEASURE = re.compile(
    r"\d+(?:[.,]\d+)?(?:%|[kMG]?(?:W|Hz|V|A|B|iB|b)|[KMGT]i?B|[mnµu]?s|min|h|d|px|em|rem)"
)


def _is_placeholder(value: str) -> bool:
    """Given the value of a `password = ...` style assignment, return True if it is a reference
    or placeholder (an environment variable, a template, a dotted or camel-case name, masked
    or elided text, a measure) rather than a literal secret."""
    lowered = value.lower()
    return (
        value[0] in "$<{%/~.![(*#&@"
        or len(set(value)) == 1
        or value.endswith(("...", "…"))  # an elided example: `?token=3q2V...`
        or lowered in _PLACEHOLDER_WORDS
        or any(part in lowered for part in _PLACEHOLDER_PARTS)
        or bool(_DOTTED_NAME.fullmatch(value))
        or bool(_CONSTANT_NAME.fullmatch(value))
        or bool(_SNAKE_NAME.fullmatch(value))
        or bool(_PLAIN_WORD.fullmatch(value))
        or bool(_CAMEL_NAME.fullmatch(value))
        or bool(_MEASURE.fullmatch(value))
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


# --- private keys --------------------------------------------------------------------------

_KEY_LINE = r"-{{4,5}} ?{0} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{{4,5}}"
_KEY_END = re.compile(_KEY_LINE.format("END"))
# A key's body as pasted: base64 lines, PEM headers ("Proc-Type: 4,ENCRYPTED"), an SSH2
# comment in quotes, and `\n` written out where the key sits in a JSON string (a GCP service
# account file). It cannot run past a "----", so a BEGIN without an END costs linear time.
_KEY_BLOCK = re.compile(
    _KEY_LINE.format("BEGIN") + r"(?:[A-Za-z0-9+/=\s:,.\\\"]|-(?!---))*"
    rf"(?:{_KEY_LINE.format('END')})?"
)
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_MIN_KEY_TAIL = 16  # base64 characters before an END line that make it a key, not a mention


def _key_line_start(text: str, end: int, floor: int) -> int:
    """Given the end of a line of a key's body, return where its base64 starts (not before
    `floor`); a `\\n` written out in a JSON string ends the line before it."""
    start = end
    while start > floor and text[start - 1] in _BASE64_CHARS:
        if text[start - 1] == "n" and start - 2 >= floor and text[start - 2] == "\\":
            break
        start -= 1
    return start


def _line_break_before(text: str, at: int, floor: int) -> int:
    """Given a position, return where the line break just before it starts (a newline, CRLF or
    a written-out `\\n`), or -1 if there is none."""
    if at - 2 >= floor and text[at - 2 : at] == "\\n":
        return at - 2
    if at - 1 >= floor and text[at - 1] in "\r\n":
        return at - 2 if at - 2 >= floor and text[at - 2 : at] == "\r\n" else at - 1
    return -1


def _key_tails(text: str) -> Iterator[_Hit]:
    """Yield the end of each private key whose BEGIN line is not in the text (a clipped paste
    keeps the tail of a key): the base64 lines before an END line, and the line itself. Each
    walk back stops at the previous END line, so the text is read about once."""
    if "PRIVATE KEY" not in text:
        return
    floor = 0
    for match in _KEY_END.finditer(text):
        start = match.start()
        line_end = _line_break_before(text, start, floor)
        if line_end < 0:
            line_end = start  # "...AB==-----END": the body runs into the END line
        while (line_start := _key_line_start(text, line_end, floor)) < line_end:
            start = line_start
            line_end = _line_break_before(text, line_start, floor)
            if line_end < 0:
                break
        body = sum(1 for char in text[start : match.start()] if char in _BASE64_CHARS)
        if body >= _MIN_KEY_TAIL:
            yield _Hit(
                "private key block",
                start,
                match.end(),
                start,
                match.end(),
                text[start : match.end()],
            )
        floor = match.end()


# PuTTY keeps the private part as base64 lines after "Private-Lines: N", then a MAC.
_PUTTY = re.compile(
    r"Private-Lines: ?\d+(?:\r?\n|\\r?\\n)(?:[A-Za-z0-9+/=]+(?:\r?\n|\\r?\\n))*"
    r"(?:Private-(?:MAC|Hash): ?[0-9a-fA-F]+)?"
)
# A GCP service account file names its key by a 40-digit hex id beside the key itself.
_GCP_KEY_ID = re.compile(
    r"(?i)private_key_id\\?[\"']?\s*[:=]\s*\\?[\"']?([0-9a-f]{40})(?![0-9a-f])"
)


# --- tokens with a known prefix --------------------------------------------------------------


def _mixed_case(token: str) -> bool:
    """Given a token, return True if it has upper and lower case letters (random, not a name)."""
    return any(c.isupper() for c in token) and any(c.islower() for c in token)


def _mixed_tail(token: str) -> bool:
    """Given a token, return True if what follows its prefix mixes case and digits."""
    return _mixed(token[token.find("_") + 1 :] if "_" in token else token[4:])


TokenCheck = Callable[[str], bool]
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

# (label, pattern, check, lead): tokens whose prefix says what they are, from the issuers'
# documentation. Each pattern starts with a literal character: joined in one alternation, the
# regular expression engine skips to where one of them starts, so a text is read once for all
# of them, fast. A token whose random part comes first (Azure's "abc8Q~...") is found by what
# follows it, and `lead` (a length and a pattern) checks the characters before.
_PREFIXED: tuple[tuple[str, str, TokenCheck | None, tuple[int, str] | None], ...] = (
    ("Hugging Face token", r"hf_[A-Za-z0-9]{30,40}", _mixed_case, None),
    ("Google API key", r"AIza[0-9A-Za-z_-]{35}", None, None),
    ("Google OAuth client secret", r"GOCSPX-[0-9A-Za-z_-]{28}", None, None),
    ("Google OAuth token", r"ya29\.[0-9A-Za-z_-]{30,}", None, None),
    ("Google OAuth token", r"1//0[0-9A-Za-z_-]{40,}", None, None),
    ("npm token", r"npm_[A-Za-z0-9]{36}", _mixed_tail, None),
    ("HashiCorp Vault token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}", None, None),
    ("age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None, None),
    ("Groq API key", r"gsk_[A-Za-z0-9]{48,}", _mixed_tail, None),
    ("Docker access token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}", None, None),
    ("Grafana token", r"glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}", None, None),
    ("Grafana token", r"glc_[A-Za-z0-9+/]{32,400}={0,2}", None, None),
    ("Postman API key", r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}", None, None),
    ("Linear API key", r"lin_api_[A-Za-z0-9]{40}", None, None),
    ("Notion token", r"ntn_[A-Za-z0-9]{40,50}", None, None),
    ("Notion token", r"secret_[A-Za-z0-9]{43}", _mixed_tail, None),
    ("Sentry token", r"sntry[su]_[A-Za-z0-9+/=_-]{40,}", None, None),
    ("New Relic key", r"NRAK-[A-Z0-9]{27}", None, None),
    ("Supabase token", r"sbp_[0-9a-f]{40}", None, None),
    ("Tailscale key", r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", None, None),
    ("Replicate token", r"r8_[A-Za-z0-9]{37}", None, None),
    ("Perplexity API key", r"pplx-[A-Za-z0-9]{48}", None, None),
    ("xAI API key", r"xai-[A-Za-z0-9]{70,90}", None, None),
    ("OpenRouter API key", r"sk-or-v1-[0-9a-f]{64}", None, None),
    ("Doppler token",
     r"dp\.(?:st|ct|sa|scim|audit|pt)\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,44}", None, None),
    ("Atlassian API token", r"ATATT3[A-Za-z0-9_=-]{100,300}", None, None),
    ("Alibaba Cloud key", r"LTAI[A-Za-z0-9]{12,20}", _mixed_tail, None),
    ("DigitalOcean token", r"do[por]_v1_[0-9a-f]{64}", None, None),
    ("Shopify token", r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}", None, None),
    ("Square token", r"sq0atp-[0-9A-Za-z_-]{22}", None, None),
    ("Databricks token", r"dapi[0-9a-f]{32}(?:-\d)?", None, None),
    ("Stripe webhook secret", r"whsec_[A-Za-z0-9+/=]{32,}", None, None),
    ("Slack token", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}", None, None),
    ("Discord webhook",
     r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
     None, None),
    ("Azure AD client secret", r"Q~[A-Za-z0-9_~.-]{31,34}", None, (4, r"[A-Za-z0-9_~.]{3}\d")),
    ("Airtable token", r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}", None, None),
    ("Figma token", r"figd_[A-Za-z0-9_-]{40}", None, None),
    ("Pulumi token", r"pul-[a-f0-9]{40}", None, None),
    ("Terraform Cloud token", r"\.atlasv1\.[A-Za-z0-9_-]{60,70}", None, (14, r"[A-Za-z0-9]{14}")),
    ("Netlify token", r"nfp_[A-Za-z0-9]{36}", None, None),
    ("Render API key", r"rnd_[A-Za-z0-9]{32}", _mixed_tail, None),
    ("LangSmith API key", r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}", None, None),
    ("Resend API key", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}", _mixed_tail, None),
)  # fmt: skip


def _prefixed() -> _Detector:
    """Return one detector for every `_PREFIXED` token (see there)."""
    alternatives = "|".join(body for _, body, _, _ in _PREFIXED)
    pattern = re.compile(rf"(?:{alternatives})(?![A-Za-z0-9_-])")
    entries = [
        (label, re.compile(body), check, (lead[0], re.compile(lead[1])) if lead else None)
        for label, body, check, lead in _PREFIXED
    ]
    labels = tuple(dict.fromkeys(label for label, _, _, _ in _PREFIXED))

    def find(text: str) -> Iterator[_Hit]:
        for match in pattern.finditer(text):
            token = match.group(0)
            # Which one it is: the first whose pattern is the whole token (only matches pay).
            entry = next((e for e in entries if e[1].fullmatch(token)), None)
            if entry is None:
                continue  # cannot be: the token is what one of them matched
            label, _, check, lead = entry
            start, end = match.span()
            if lead is not None:
                start -= lead[0]
                if start < 0 or not lead[1].fullmatch(text, start, match.start()):
                    continue
            if start > 0 and text[start - 1] in _TOKEN_CHARS:
                continue  # the end of a longer word, not a token of its own
            if check is None or check(token):
                yield _Hit(label, start, end, start, end, text[start:end])

    return _Detector("secret", labels, find)


# --- passwords in prose --------------------------------------------------------------------

# "my password is: X", "Passwort: X", "mot de passe : X", "contraseña es X", "密码是 X". Read on
# the lower-cased text, and every name starts with a literal character: the engine skips to
# where a name starts (a case-insensitive pattern reads every character, five times slower).
_PASSWORD_NAMES = (
    "password|passwort|passwd|passcode|passphrase|pwd|pw|kennwort|mot de passe|mdp|contraseña"
    "|contrasena|senha|wachtwoord|lösenord|losenord|passord|adgangskode|salasana|hasło|haslo"
    "|heslo|jelszó|jelszo|parola d'ordine|şifre|sifre|пароль|密码|密碼|パスワード|비밀번호"
    "|mật khẩu|mat khau|kata sandi"
)
_VALUE_CHARS = r"[^\s\"'`,;()\[\]{}<>“”«»„]"
_SAID_PASSWORD = re.compile(
    rf"(?:{_PASSWORD_NAMES})(?![a-z])\s*"
    r"(?:(?:is|ist|lautet|est|es|era|was|war|è|é|är|er)(?!\w)\s*|[=:：]\s*|[是为為는은は]\s*){1,3}"
    rf"[\"'“«„]?({_VALUE_CHARS}{{3,127}}[^\s\"'`,;()\[\]{{}}<>“”«»„.:?])"
)
_SAID_PASSWORD_ANY_CASE = re.compile(_SAID_PASSWORD.pattern, re.IGNORECASE)
# Whose password: after "my password is", a plain word is the password.
_OWNER = re.compile(
    r"(?i)(?<!\w)(?:my|our|mein|meine|unser|unsere|mon|ma|notre|mi|nuestra|minha|mijn|mia|mio"
    r"|min|mitt)\s+(?:\w+\s+){0,2}$"
)
# ... unless it says how the password is.
_NOT_A_PASSWORD = frozenset(
    "expired incorrect wrong invalid correct required missing empty weak strong changed reset "
    "saved stored set not too the a an still now also same different long short safe secure "
    "hidden secret there here in on at for ok okay fine gone lost blocked locked new old and or "
    "but which that this it stale rotated unknown case sensitive being been was is "
    "falsch abgelaufen ungültig richtig geändert gesperrt faux expiré changé bloqué incorrecto "
    "caducado cambiado errada expirada alterada fout verlopen gewijzigd sbagliata scaduta errato "
    "cambiata".split()
)


def _said_passwords(text: str) -> Iterator[_Hit]:
    """Yield the passwords said in prose: a password's name, "is" or a colon, then a value that
    is no placeholder (see `_is_placeholder`), or after "my password is" a plain word that
    does not say how the password is."""
    lowered = text.lower()
    # A few characters change length in lower case ("İ"): then the slower pattern, on the text.
    pattern = _SAID_PASSWORD if len(lowered) == len(text) else _SAID_PASSWORD_ANY_CASE
    for match in pattern.finditer(lowered if pattern is _SAID_PASSWORD else text):
        start, end = match.span()
        if start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
            continue  # "compassword", "bypass: ..."
        value_start, value_end = match.span(1)
        value = text[value_start:value_end]
        if _is_placeholder(value):
            lowered_value = value.lower()
            owned = _OWNER.search(text, max(0, start - 48), start) is not None
            if not (
                owned
                and _PLAIN_WORD.fullmatch(value)
                and lowered_value not in _NOT_A_PASSWORD
                and lowered_value not in _PLACEHOLDER_WORDS
            ):
                continue
        yield _Hit("password", start, end, value_start, value_end, value)


# --- detect-secrets -------------------------------------------------------------------------

# The library's regular-expression plugins not used, and why: an IP address is no secret (and
# 0.0.0.0 in documentation is not even an address); the npm and JWT patterns backtrack over a
# long run of "//" or "eyJ" (3 s on 40K characters, growing with the square; our own npm and
# JWT detectors cover them); the private key plugin flags only the BEGIN line, and our own
# detector redacts the whole block; the IBM, Cloudant and SoftLayer plugins read any key name
# ("key", "pass") before a value of one length, which our `key=value` detector reads whatever
# the length, and start with a look-behind at every character: together they took longer than
# all the other detectors. Its entropy and keyword plugins are heuristics for source files
# (quoted strings, assignments): on chat text and documentation they flag a line in nine.
_LIBRARY_SKIPPED = frozenset(
    {
        "IPPublicDetector",
        "NpmDetector",
        "JwtTokenDetector",
        "PrivateKeyDetector",
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
    }
)


def _library_label(secret_type: str) -> str:
    """Given a detect-secrets secret type ("Twilio API Key"), return it as our labels read
    ("Twilio API key"): capitalised words after the first lower-cased, acronyms kept."""
    first, *rest = secret_type.split()
    words = [w.lower() if w[:1].isupper() and w[1:].islower() else w for w in rest]
    label = " ".join([first, *words])
    # One value is one credential: the hint says "2 Cloudant credentials", not "credentialses".
    return (
        label.removesuffix("credentials") + "credential" if label.endswith("credentials") else label
    )


def _not_inside_a_word(match: re.Match[str]) -> bool:
    """Given a match of a library pattern (they have no boundaries), return True if it is not
    part of a longer run of letters and digits."""
    text, start, end = match.string, match.start(), match.end()
    return not (start > 0 and text[start - 1].isalnum()) and not (
        end < len(text) and text[end].isalnum()
    )


@cache
def _library() -> tuple[_Detector, ...]:
    """Return detect-secrets' regular-expression plugins, less `_LIBRARY_SKIPPED`, as detectors."""
    # Imported on first use: it takes a tenth of a second, and most commands scan nothing.
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector

    plugins: Mapping[str, type[BasePlugin]] = get_mapping_from_secret_type_to_class()
    detectors: list[_Detector] = []
    for secret_type, plugin in sorted(plugins.items()):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in _LIBRARY_SKIPPED:
            continue
        label = _library_label(secret_type)
        detectors.extend(
            _regex("secret", label, pattern, valid=_not_inside_a_word)
            for pattern in plugin().denylist
        )
    return tuple(detectors)


# --- redaction markers ---------------------------------------------------------------------

# What `redact` puts in place of a value, with a label as the detectors write them ("AWS access
# key", "custom secret pattern #2"); not a template's "[redacted <kind>]".
REDACTION_MARKER = re.compile(r"\[redacted ([A-Za-z0-9][A-Za-z0-9 /#.'-]{0,79})\]")


def _markers(text: str) -> Iterator[_Hit]:
    """Yield the redaction markers in a text as findings of their label. What they stood for is
    gone, so the n-th marker of a label in one text counts as its n-th distinct value: over
    several texts, a label counts as many values as the text with the most of them."""
    if "[redacted " not in text:
        return
    seen: dict[str, int] = {}
    for match in REDACTION_MARKER.finditer(text):
        label = match.group(1)
        seen[label] = seen.get(label, 0) + 1
        start, end = match.span()
        yield _Hit(label, start, end, start, end, f"\x00marker {seen[label]}")


_SECRET_KEYWORDS = (
    r"password|passwd|passphrase|pwd|secret[_-]?access[_-]?key|secret[_-]?key|client[_-]?secret"
    r"|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?token"
    r"|token"
)

# The detectors, in order. Each one's matches are blanked out before the next one runs, so a
# key counts once, as its most specific kind, and its digits are not read again as a card
# number. The user's extra patterns run between the first group and the second.
_FIRST: tuple[_Detector, ...] = (
    _Detector("secret", (), _markers),
    _regex("secret", "private key block", _KEY_BLOCK, needs=("PRIVATE KEY",)),
    _Detector("secret", ("private key block",), _key_tails),
    _regex("secret", "PuTTY private key", _PUTTY, needs=("Private-Lines",)),
    _regex("secret", "GCP private key id", _GCP_KEY_ID, group=1, needs=("private_key_id",)),
)
_SPECIFIC: tuple[_Detector, ...] = (
    _regex(
        "secret",
        "AWS access key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        needs=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    _regex(
        "secret",
        "GitHub token",
        re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})"
        ),
        needs=("gh", "github_pat_"),
    ),
    _prefixed(),
    _regex(
        "secret",
        "OpenAI/Anthropic API key",
        re.compile(
            r"(?<![A-Za-z0-9_-])sk-(?:ant-[a-z]+\d*-|proj-|svcacct-|admin-)?"
            r"([A-Za-z0-9_-]{20,})(?![A-Za-z0-9_-])"
        ),
        valid=_api_key_ok,
        needs=("sk-",),
    ),
    _regex(
        "secret",
        "Stripe secret key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9_])"),
        needs=("k_live_", "k_test_"),
    ),
    _regex(
        "secret",
        # 40 base64 characters: what AWS issues as the secret beside an access key id. Read
        # as random only when a '/' or '+' splits it (else the generic detector sees it whole).
        "AWS secret key",
        re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9]*[/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        valid=_looks_random_base64,
        needs=("/", "+"),
    ),
    _regex(
        "secret",
        "Slack token",
        re.compile(r"(?<![A-Za-z0-9.])(?:xoxe\.)?xox[abprse]-\d+-[A-Za-z0-9-]{8,}"),
        needs=("xox",),
    ),
    _regex(
        "secret",
        "JWT",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        ),
        needs=("eyJ",),
    ),
    _regex(
        "secret",
        "password in URL",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+-]{0,30}://[^\s:/@]{1,256}:([^\s@/]{3,256})@[^\s/]+"),
        group=1,
        valid=_url_password_ok,
        needs=("://",),
    ),
    _regex(
        "secret",
        "bearer token",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"),
        group=1,
        needs=("bearer",),
    ),
)
_ASSIGNMENTS: tuple[_Detector, ...] = (
    _regex(
        "secret",
        "password assignment",
        re.compile(
            rf"(?i)(?<![A-Za-z0-9])({_SECRET_KEYWORDS})(?![A-Za-z0-9])[\"']?\s*(?::=|=>|:|=)\s*"
            r"[\"']?([^\s\"'`,;()\[\]{}<>]{6,})"
        ),
        group=2,
        valid=_assignment_value_ok,
        needs=("pass", "pwd", "secret", "key", "token"),
    ),
    _Detector("secret", ("password",), _said_passwords),
)
_LAST: tuple[_Detector, ...] = (
    _regex(
        "secret",
        "generic high-entropy token",
        re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9+_-]{32,}={0,2}(?![A-Za-z0-9+/=_.-])"),
        valid=_looks_random,
    ),
    _regex(
        "pii",
        "email address",
        re.compile(
            # Bounded parts (the RFC 5321 limits) keep a long run without an "@" linear.
            r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@"
            r"[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"
        ),
        valid=_email_ok,
        normalize=str.lower,
        needs=("@",),
    ),
    _regex(
        "pii",
        "IBAN",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
        valid=_iban_ok,
        normalize=_compact_upper,
    ),
    _regex(
        "pii",
        "credit card number",
        re.compile(r"(?<![\d.-])\d{4}(?:[ -]?\d{2,7}){2,4}(?![\d.-])"),
        valid=_card_ok,
        normalize=_digits_only,
    ),
    _regex(
        "pii",
        "US SSN",
        re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"),
        normalize=_digits_only,
        needs=("-",),
    ),
    _regex(
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


def _detectors(extra: Sequence[_Detector]) -> tuple[_Detector, ...]:
    """Given the user's extra detectors, return every detector in the order they run."""
    return (*_FIRST, *extra, *_SPECIFIC, *_library(), *_ASSIGNMENTS, *_LAST)


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
        detectors.append(_regex("secret", f"custom secret pattern #{n}", compiled))
    return detectors


def _hits(text: str, detectors: Sequence[_Detector]) -> Iterator[_Hit]:
    """Given a text and the detectors, yield what each one finds, in detector order; each one's
    matches are blanked before the next one reads the text."""
    remaining = text
    for detector in detectors:
        found = list(detector.find(remaining))
        if found:
            yield from found
            remaining = _blanked(remaining, [(hit.start, hit.end) for hit in found])


def scan(texts: Sequence[str], *, extra_secret_patterns: Sequence[str] = ()) -> list[Finding]:
    """Given texts, return a Finding per kind of secret or personal data seen in them (a
    redaction marker counts as its kind), with the number of distinct values, secrets first.
    Raise ConfigError if an extra pattern is invalid."""
    found, _ = scan_where(texts, extra_secret_patterns=extra_secret_patterns)
    return found


def scan_where(
    texts: Sequence[str], *, extra_secret_patterns: Sequence[str] = ()
) -> tuple[list[Finding], dict[str, list[int]]]:
    """Given texts, return what `scan` returns and, per label, the 1-based positions of the
    texts it was seen in. Raise ConfigError if an extra pattern is invalid."""
    detectors = _detectors(_compile_extra(extra_secret_patterns))
    kinds: dict[str, str] = {}
    for detector in detectors:
        for label in detector.labels:
            kinds.setdefault(label, detector.kind)
    order = {label: i for i, label in enumerate(kinds)}
    values: dict[str, set[str]] = {}
    where: dict[str, list[int]] = {}
    for position, text in enumerate(texts, 1):
        for hit in _hits(text, detectors):
            values.setdefault(hit.label, set()).add(hit.value)
            positions = where.setdefault(hit.label, [])
            if not positions or positions[-1] != position:
                positions.append(position)
    # A marker of a label no detector reports (an older version's) is a secret: the safe side.
    findings = [
        Finding(kinds.get(label, "secret"), label, len(seen)) for label, seen in values.items()
    ]
    findings.sort(key=lambda f: (f.kind != "secret", order.get(f.label, len(order))))
    return findings, where


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Given a text and non-overlapping spans in order, return it with the spans blanked: a
    space at each end, so that no later match joins what is on either side, and NULs between,
    which no later pattern reads as a word or skips as a space (after "my password is:
    [redacted password]" the next word is not the password).

    The result is built once: rebuilding the string per span costs the square of the matches
    (a pasted log full of e-mail addresses took minutes).
    """
    if not spans:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces.append(text[done:start])
        size = end - start
        pieces.append(" " + "\x00" * (size - 2) + " " if size > 2 else " " * size)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def redact(
    text: str, *, extra_secret_patterns: Sequence[str] = (), keep_lines: bool = False
) -> str:
    """Given a text, return it with every secret and piece of personal data the detectors find
    replaced by `[redacted <kind>]` (e.g. `[redacted GitHub token]`); for a `key=value` secret
    only the value goes. A marker already there stays as it is, so redacting twice changes
    nothing. With `keep_lines`, a value that spanned lines (a private key) leaves its line
    breaks after the marker, so the lines after it keep their numbers. Raise ConfigError if an
    extra pattern is invalid.
    """
    detectors = _detectors(_compile_extra(extra_secret_patterns))
    cuts = sorted((hit.cut_start, hit.cut_end, hit.label) for hit in _hits(text, detectors))
    # Built once, like `_blanked`: one piece per span, not one copy of the text per span.
    pieces: list[str] = []
    done = 0
    for start, end, label in cuts:
        if start < done:
            continue  # inside a span already redacted
        pieces.append(f"{text[done:start]}[redacted {label}]")
        if keep_lines:
            pieces.append("\n" * text.count("\n", start, end))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)
