"""Tests for assembler/routing.py: sensitivity findings, complexity, tiers, and no leaks."""

from __future__ import annotations

import dataclasses
import random
import string

import pytest

from assembler.assembly.routing import RoutingHint, route
from assembler.config.schema import DEFAULT_TIERS
from assembler.errors import ConfigError
from assembler.redact import Finding, scan

# Fake secrets are assembled at run time so that no scanner mistakes this file for a leak.
_rng = random.Random(7)


def _random(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value):
            return value


AWS_KEY = "AKIA" + "Q3EGRT5XK2MZ7WPL"
GITHUB_TOKEN = "gh" + "p_" + _random(36)
OPENAI_KEY = "sk-" + "proj-" + _random(40)
ANTHROPIC_KEY = "sk-" + "ant-api03-" + _random(48)
SLACK_TOKEN = "xo" + "xb-" + "2731984650-5839201746-" + _random(24)
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + "." + "eyJ" + "zdWIiOiJyYXkifQ" + "." + _random(43)
GENERIC_TOKEN = _random(40)
STRIPE_KEY = "sk_" + "live_" + _random(24)
AWS_SECRET = _random(12) + "/" + _random(14) + "/" + _random(12)
DB_PASSWORD = "Tr0ub4dor-" + _random(6)
PRIVATE_KEY_BODY = _random(64)
PRIVATE_KEY = (
    "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n"
    f"{PRIVATE_KEY_BODY}\n{_random(64)}\n"
    "-----END OPENSSH " + "PRIVATE KEY-----"
)

SECRET_CASES = [
    (f"the key is {AWS_KEY}, don't lose it", AWS_KEY, "AWS access key"),
    (f"my stripe key is {STRIPE_KEY} please rotate it", STRIPE_KEY, "Stripe secret key"),
    (f"and the secret {AWS_SECRET}, fix the s3 upload", AWS_SECRET, "AWS secret key"),
    (f"export GITHUB_TOKEN={GITHUB_TOKEN}", GITHUB_TOKEN, "GitHub token"),
    (f"OPENAI_API_KEY={OPENAI_KEY}", OPENAI_KEY, "OpenAI/Anthropic API key"),
    (f"use {ANTHROPIC_KEY} for the eval run", ANTHROPIC_KEY, "OpenAI/Anthropic API key"),
    (f"slack bot token: {SLACK_TOKEN}", SLACK_TOKEN, "Slack token"),
    (f"curl -H 'Cookie: session={JWT}' ...", JWT, "JWT"),
    (f"here's the deploy key\n{PRIVATE_KEY}", PRIVATE_KEY_BODY, "private key block"),
    (f"db password = {DB_PASSWORD}", DB_PASSWORD, "password assignment"),
    (f"DATABASE_URL=postgres://api:{DB_PASSWORD}@pg-prod-1/api", DB_PASSWORD, "password in URL"),
    (f"Authorization: Bearer {GENERIC_TOKEN}", GENERIC_TOKEN, "bearer token"),
    (f"webhook signing value: {GENERIC_TOKEN}", GENERIC_TOKEN, "generic high-entropy token"),
]  # fmt: skip


def _dump(hint: RoutingHint) -> str:
    return repr(dataclasses.asdict(hint))


def _leaks(secret: str, hint: RoutingHint, window: int = 8) -> list[str]:
    dump = _dump(hint)
    return [
        secret[i : i + window]
        for i in range(len(secret) - window + 1)
        if secret[i : i + window] in dump
    ]


# --- sensitivity ---------------------------------------------------------------------------


def test_plain_technical_conversation_is_low_sensitivity_with_no_findings() -> None:
    hint = route(["why is the api pod restarting?", "It runs out of memory; raise the limit."])
    assert hint.sensitivity == "low"
    assert hint.findings == []
    assert hint.sensitivity_reason == "no secrets or PII detected"


@pytest.mark.parametrize(("text", "secret", "label"), SECRET_CASES)
def test_each_kind_of_secret_is_found_under_its_label(text: str, secret: str, label: str) -> None:
    hint = route([text])
    assert [f.label for f in hint.findings] == [label]
    assert hint.findings[0].kind == "secret"
    assert hint.sensitivity == "high"


@pytest.mark.parametrize(("text", "secret", "label"), SECRET_CASES)
def test_the_secret_value_appears_nowhere_in_the_hint_not_even_in_explain(
    text: str, secret: str, label: str
) -> None:
    hint = route(["can you check this?", text, "thanks"])
    assert hint.findings, "the secret must be found for this test to mean anything"
    assert secret not in _dump(hint)
    assert _leaks(secret, hint) == []
    assert all(secret[:8] not in line for line in hint.explain)


def test_a_secret_sends_the_tier_to_local_only_whatever_the_complexity() -> None:
    hint = route([f"let's redesign the architecture; staging key is {AWS_KEY}"])
    assert hint.complexity == "high"
    assert hint.tier == DEFAULT_TIERS["high-sensitivity"] == "local-only"
    assert any("overrides complexity high" in line for line in hint.explain)


def test_reason_names_the_kinds_and_how_many_of_each() -> None:
    hint = route(
        [
            f"prod key {AWS_KEY}",
            "mail ray.castellano@bramblecart.com.au and priya.n@gmail.com about it",
        ]
    )
    assert hint.sensitivity_reason == "secret: 1 AWS access key; PII: 2 email addresses"
    assert hint.findings == [
        Finding("secret", "AWS access key", 1),
        Finding("pii", "email address", 2),
    ]


def test_personal_data_without_secrets_is_medium_and_the_tier_follows_complexity() -> None:
    hint = route(["the customer's number is +61 412 345 678, can you fix the export bug?"])
    assert hint.sensitivity == "medium"
    assert hint.sensitivity_reason == "PII: 1 phone number"
    assert hint.complexity == "medium"
    assert hint.tier == "standard"


def test_the_same_value_seen_in_several_messages_counts_once() -> None:
    hint = route([f"key {AWS_KEY}", f"yes that one: {AWS_KEY}", "and ray@bramblecart.com.au twice"])
    assert Finding("secret", "AWS access key", 1) in hint.findings
    assert any("message(s) 1, 2 of 3" in line for line in hint.explain)


def test_card_numbers_are_only_reported_when_the_luhn_check_passes() -> None:
    assert scan(["card 4111 1111 1111 1111 on file"]) == [Finding("pii", "credit card number", 1)]
    assert scan(["card 4111 1111 1111 1112 on file"]) == []
    assert scan(["amex 3782 822463 10005"]) == [Finding("pii", "credit card number", 1)]


def test_ibans_are_only_reported_when_the_checksum_and_length_match() -> None:
    found = scan(["pay GB82 WEST 1234 5698 7654 32 or DE89370400440532013000"])
    assert found == [Finding("pii", "IBAN", 2)]
    assert scan(["pay GB83 WEST 1234 5698 7654 32"]) == []


def test_ssns_and_phone_numbers_in_common_formats_are_pii() -> None:
    found = scan(["ssn 078-05-1120, call (555) 123-4567 or 0412 345 678 or +44 20 7946 0958"])
    assert found == [Finding("pii", "US SSN", 1), Finding("pii", "phone number", 3)]


def test_placeholders_and_references_are_not_password_assignments() -> None:
    texts = [
        "password: ${DB_PASSWORD}",
        'password = os.environ["DB_PASSWORD"]',
        "password: {{ .Values.db.password }}",
        "PGPASSWORD=******** psql service=pg-prod",
        "token = tokenizer.encode(text)",
        "api_key: <your-api-key>",
        "max_tokens=4096, password: str",
        "secret_key = settings.SECRET_KEY",
        "access_token = refresh_access_token",
    ]
    assert scan(texts) == []


TECHNICAL_TEXTS = [
    "merged 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 into main (sha-4f2a9c1)",
    "session 5b0c7e2a-9f4d-4d1e-8a33-6c2f1e7d9a40 and request 0d9e4c1b-7a52-4f3e-b6a8-2e5c9d1f8b37",
    "image registry.bramblecart.internal/api@sha256:"
    "9b1e07d4c3a2f1e0d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a3f2e1d0c9b8a7f6e",
    "api-7d9f8b6c4-x2x9k   0/1   CrashLoopBackOff   5 (71s ago)   5m13s",
    "upgrade from 1.14.2 to 1.14.3 (chart api-1.14.3, app v2.0.76, k8s 1.30.4)",
    "2026-03-02T08:41:05.114Z and Mon Mar  2 21:44:09 2026 and 2026-03-02 14:02:11.482+11",
    "message.timestamp 1772441868836 is Unix milliseconds; pid 48211 and 61877",
    "pg-prod-1 is 10.0.3.17:5432, the lab is 192.168.1.20 and 172.16.4.2, pods in 10.42.0.0/16",
    "git clone git@github.com:bramblecart/api.git; ssh ray@pg-prod-1.internal; "
    "docs say user@example.com",
    "cat /home/ray/src/api/charts/api/templates/cronjob-cleanup.yaml",
    "TestOrderExportHandlesTimezoneOffsets2 and test_append_over_budget_is_rejected_and_kept",
    "secretKeyRef:\n  name: api-db-credentials\n  key: url",
    "/dev/sdb1       1.8T  1.6T  166G  91% /srv",
    "call toolu_01A2b3C4d5E6f7G8h9I0j1K2 returned; msg_01XyZabc and req_011CabcdEFGH",
    "order #1004 total 129.95 for 3 items, ids 100234, 100235, 100236",
    "see src/components/widgets/ButtonGroup/index.tsx and lib/hooks/useScratchpadView.ts",
    "commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the chart",
    "the pk_live_ publishable key prefix is public by design",
]


@pytest.mark.parametrize("text", TECHNICAL_TEXTS)
def test_ordinary_technical_text_has_no_findings(text: str) -> None:
    assert scan([text]) == []


NEAR_MISSES = [
    "login failed, token: expired",
    "Password: incorrect (attempt 3 of 5)",
    "pip install sk-learn-compatible-pipeline-wrapper",
    "xoxo-gossip-girl-fans-forever",
    "DATABASE_URL=postgres://api:****@pg-prod-1/api",
    "see https://grafana.bramblecart.internal:3000/d/api-latency?orgId=1&from=now-6h",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_text_that_merely_resembles_a_secret_has_no_findings(text: str) -> None:
    assert scan([text]) == []


def test_a_random_value_assigned_to_any_name_is_a_generic_token() -> None:
    assert scan([f"SIGNING_SECRET={GENERIC_TOKEN}"]) == [
        Finding("secret", "generic high-entropy token", 1)
    ]


@pytest.mark.parametrize(
    "unit", ["a%", "x@a.", "a.", "1 ", "+1 ", "ab://", "-----BEGIN RSA PRIVATE KEY-----"]
)
def test_pathological_input_is_scanned_to_the_end_without_false_findings(unit: str) -> None:
    # Inputs that make a backtracking pattern quadratic (tens of seconds at this size); the
    # time each takes is measured by bench/bench_redact.py, where it is linear in the size.
    text = unit * (200_000 // len(unit))
    key_header = unit.startswith("-----BEGIN")
    assert scan([text]) == ([Finding("secret", "private key block", 1)] if key_header else [])


def test_secrets_come_before_personal_data_in_the_findings() -> None:
    found = scan(["ray@bramblecart.com.au", f"key {AWS_KEY}"])
    assert [f.kind for f in found] == ["secret", "pii"]


# --- extra patterns ------------------------------------------------------------------------


def test_an_extra_secret_pattern_counts_as_a_secret_under_a_numbered_label() -> None:
    hint = route(
        ["the vault token is hvs.CAESIJ1x2y3z"], extra_secret_patterns=[r"hvs\.[A-Za-z0-9]{10,}"]
    )
    assert hint.findings == [Finding("secret", "custom secret pattern #1", 1)]
    assert hint.tier == "local-only"
    assert "hvs.CAESIJ" not in _dump(hint)


def test_an_invalid_extra_pattern_raises_config_error_naming_pattern_and_regex_error() -> None:
    with pytest.raises(ConfigError) as caught:
        route(["anything"], extra_secret_patterns=[r"ok-[a-z]+", r"(unclosed"])
    message = str(caught.value)
    assert "'(unclosed'" in message
    assert "missing )" in message
    assert "routing.extra_secret_patterns" in message


def test_an_extra_pattern_that_matches_the_empty_string_is_rejected() -> None:
    with pytest.raises(ConfigError, match="matches the empty string"):
        route(["anything"], extra_secret_patterns=["x*"])


# --- complexity ----------------------------------------------------------------------------


def test_architecture_and_refactor_talk_is_high_complexity_on_the_advanced_tier() -> None:
    hint = route(["should we refactor the billing module?", "Let's sketch the architecture first."])
    assert hint.complexity == "high"
    assert hint.tier == "advanced"
    assert hint.complexity_reason == "complex: a design or architecture task"
    assert any("refactor ×1" in line for line in hint.explain)  # the counts, for --explain


def test_debugging_and_deploy_talk_is_medium_complexity_on_the_standard_tier() -> None:
    hint = route(["the deploy is failing again", "Which error do you see in the logs?"])
    assert hint.complexity == "medium"
    assert hint.tier == "standard"
    assert hint.complexity_reason == "moderate: debugging or deploy work"


def test_greetings_and_short_questions_are_low_complexity_on_the_fast_tier() -> None:
    hint = route(["hey", "Hi Ray!", "what's the time in London?"])
    assert hint.complexity == "low"
    assert hint.tier == "fast"
    assert hint.complexity_reason == "simple: small talk"
    assert route(["what's the time in London?"]).complexity_reason == "simple: a short question"


def test_no_task_signals_at_all_is_low_complexity() -> None:
    hint = route(["the weather is grey today"])
    assert (hint.complexity, hint.complexity_reason) == ("low", "simple: no task named")


def test_an_empty_window_is_low_everything() -> None:
    hint = route([])
    assert (hint.sensitivity, hint.complexity, hint.tier) == ("low", "low", "fast")


def test_the_newest_messages_weigh_more_than_older_ones() -> None:
    design = "let's redesign the data model"
    debug = ["the deploy failed", "fix the error in the job", "still failing"]
    assert route([design, *debug]).complexity == "medium"
    assert route([*debug, design]).complexity == "high"


def test_greeting_words_inside_a_long_message_are_not_small_talk() -> None:
    long_message = "ok so " + "the scheduler runs every ten minutes and reads the queue " * 4
    assert len(long_message) > 120
    assert route([long_message]).complexity_reason == "simple: no task named"


@pytest.mark.parametrize(
    "message",
    [
        "the replay from last night failed for 3 payments",
        "ok, run the replay for the three failed payments now",
        "is it ok to restart the worker?",
        "this morning the queue was empty",
    ],
)
def test_a_small_talk_word_inside_a_phrase_or_a_real_request_is_not_small_talk(
    message: str,
) -> None:
    hint = route([message])
    assert not any(line.startswith("low words: ") and "short" not in line for line in hint.explain)
    assert "small talk" not in hint.complexity_reason


@pytest.mark.parametrize("message", ["night", "ok that did it, thanks", "good night!", "cheers"])
def test_a_message_that_is_only_small_talk_counts_as_small_talk(message: str) -> None:
    assert route([message]).complexity_reason == "simple: small talk"


def test_stems_match_inflections_but_short_words_match_whole_words_only() -> None:
    assert route(["it deployed, then crashed"]).complexity == "medium"
    assert route(["check the history of this"]).complexity_reason == "simple: no task named"


def test_many_code_blocks_push_complexity_up_one_level() -> None:
    block = "```\nkubectl get pods\n```"
    hint = route([f"the deploy failed {block}", block, block])
    assert hint.complexity == "high"
    assert hint.complexity_reason == "complex: debugging or deploy work with 3 code blocks"
    assert any("medium -> high" in line for line in hint.explain)


def test_a_very_long_message_pushes_complexity_up_one_level() -> None:
    hint = route(["hello", "x " * 1500])
    assert hint.complexity == "medium"
    assert hint.complexity_reason == "moderate: small talk with long messages"


def test_custom_keywords_replace_the_defaults_of_that_level_only() -> None:
    keywords = {"high": ["capacity plan*"]}
    assert route(["a capacity planning review"], complexity_keywords=keywords).complexity == "high"
    assert (
        route(["refactor it"], complexity_keywords=keywords).complexity_reason
        == "simple: no task named"
    )
    assert route(["fix it"], complexity_keywords=keywords).complexity == "medium"


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"urgent": ["now"]}, "routing.complexity_keywords.urgent"),
        ({"high": "design"}, "expected a list of words"),
        ({"low": ["*"]}, "empty keyword"),
    ],
)
def test_bad_complexity_keywords_raise_config_error(
    keywords: dict[str, list[str] | str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        route(["hi"], complexity_keywords=keywords)


# --- tiers ---------------------------------------------------------------------------------


def test_custom_tiers_override_the_defaults_key_by_key() -> None:
    tiers = {"medium": "claude-sonnet", "high-sensitivity": "ollama/qwen"}
    assert route(["fix the failing deploy"], tiers=tiers).tier == "claude-sonnet"
    assert route(["hello"], tiers=tiers).tier == "fast"
    assert route([f"key {AWS_KEY}"], tiers=tiers).tier == "ollama/qwen"


def test_an_unknown_tier_key_raises_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"routing\.tiers\.urgent"):
        route(["hi"], tiers={"urgent": "fast"})


def test_redact_replaces_each_value_with_its_kind_and_keeps_the_rest() -> None:
    from assembler.redact import redact

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # assembled: see the top
    text = (
        f"export GITHUB_TOKEN={token} then "
        "password=hunter2xyz and call +1 415 555 0137, ticket internal-7731"
    )
    clean = redact(text, extra_secret_patterns=[r"internal-\d{4}"])
    assert clean == (
        "export GITHUB_TOKEN=[redacted GitHub token] then "
        "password=[redacted password assignment] and call [redacted phone number], "
        "ticket [redacted custom secret pattern #1]"
    )
    assert redact("the deploy of api 1.14.3 failed at 10:30") == (
        "the deploy of api 1.14.3 failed at 10:30"
    )


# --- long texts: linear in their matches, long by their whole length ----------------------------


def test_scanning_and_redacting_many_matches_finds_and_redacts_every_one() -> None:
    from assembler.redact import redact

    # 4 MB of addresses: rebuilding the text once per match took 40 s to scan, minutes to
    # redact; bench/bench_redact.py measures that both are linear in the matches.
    text = " ".join(f"user{i}@mail{i % 97}.com" for i in range(200_000))
    found = scan([text])
    clean = redact(text)
    assert found == [Finding("pii", "email address", 200_000)]
    assert clean.count("[redacted email address]") == 200_000
    assert "@" not in clean


def test_a_clipped_long_message_still_counts_as_long_by_its_whole_length() -> None:
    clipped = "the scheduler reads the queue " * 300  # what a reader keeps of a 2 MB paste
    hint = route(["hello", clipped], lengths=[5, 2_000_000])
    assert any("long messages (2000000 chars max, 2000005 in all)" in x for x in hint.explain)
    assert hint.complexity == "medium"


def test_lengths_must_be_one_per_text() -> None:
    with pytest.raises(ValueError, match="2 lengths for 1 texts"):
        route(["hello"], lengths=[5, 6])


# --- the rule set: detect-secrets' plugins and our own detectors ----------------------------------

MORE_TECHNICAL_TEXTS = [
    "pw: 450W under load",
    "password: SecretStr",
    "password: Optional[str] = None",
    "the password field is required",
    "Passwort: falsch",
    "my password is expired, can you reset it?",
    "the password is incorrect",
    "passwords: 3 of 5 rotated",
    "cache key-5f4dcc3b5aa765d61d8327deb882cf99 evicted",
    "TASK-1234 and ACME-7 and SKU 99812",
    "security group SG.1 and SG.web allow 443",
    "1772441868:start_worker_process_main_loop",
    "pip install hf_transfer and set HF_HUB_ENABLE_HF_TRANSFER=1",
    "the AIza prefix means a Google key; hvs. a Vault token",
    "npm_config_cache=/tmp/npm and npm_lifecycle_event=build",
    "docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/db",
    'Error: password authentication failed for user "api"',
    "kubectl create secret generic api-db --from-literal=password=$DB_PASSWORD",
    "mot de passe oublié ? cliquez ici",
    "contraseña incorrecta",
    "[redacted <kind>] is what the template shows",
    "sk-learn is not a key and secret_sauce_recipe_v2 is a file",
    "the END PRIVATE KEY line closes a PEM block",
    "-----END PRIVATE KEY-----",
    "the dashboard is at http://localhost:8765/?token=3q2V...",
    "bind to 0.0.0.0:8080 and 203.0.113.7",
]


@pytest.mark.parametrize("text", MORE_TECHNICAL_TEXTS)
def test_text_near_the_new_detectors_has_no_findings(text: str) -> None:
    assert scan([text]) == []


@pytest.mark.parametrize(
    ("text", "password"),
    [
        ("my password is: hunter2!x", "hunter2!x"),
        ("my new password is sunshine", "sunshine"),
        ("pw: Blue-Fox-42", "Blue-Fox-42"),
        ("Das Passwort lautet Sommer2024!", "Sommer2024!"),
        ("mot de passe : Soleil#77", "Soleil#77"),
        ("mi contraseña es: Gato-99x", "Gato-99x"),
        ("密码是 abc123xyz", "abc123xyz"),
        ("senha: Brasil@2024.", "Brasil@2024"),
    ],
)
def test_a_password_said_in_prose_is_found_and_only_it_is_redacted(
    text: str, password: str
) -> None:
    from assembler.redact import redact

    assert scan([text]) == [Finding("secret", "password", 1)]
    clean = redact(text)
    assert password not in clean and "[redacted password]" in clean
    assert clean.replace("[redacted password]", password) == text


def test_a_redaction_marker_counts_as_its_kind_as_many_times_as_one_text_holds_it() -> None:
    found = scan(
        [
            "key [redacted AWS access key] and [redacted AWS access key], mail [redacted email "
            "address]",
            "again [redacted AWS access key]",
            "[redacted custom secret pattern #1]",
        ]
    )
    assert found == [
        Finding("secret", "AWS access key", 2),
        Finding("secret", "custom secret pattern #1", 1),
        Finding("pii", "email address", 1),
    ]
    hint = route(["my password is: [redacted password] please deploy"])
    assert hint.sensitivity == "high" and hint.findings == [Finding("secret", "password", 1)]


def test_the_word_after_a_redacted_value_is_not_read_as_the_value() -> None:
    # Blanked text must not let "password is:" reach past the marker to the next word.
    assert scan(["token: [redacted Google API key] Xyz123abc"]) == [
        Finding("secret", "Google API key", 1)
    ]


def test_a_private_key_is_redacted_whole_in_pem_json_and_from_its_end_alone() -> None:
    from assembler.redact import redact

    body = [_random(64) for _ in range(6)]
    begin, end = "-----BEGIN PRIVATE " + "KEY-----", "-----END PRIVATE " + "KEY-----"
    pem = "\n".join([begin, *body, end])
    escaped = '{"private_key": "' + "\\n".join([begin, *body, end]) + '\\n"}'
    tail_only = "...the end of it:\n" + "\n".join([*body[3:], end]) + "\nthanks"
    for text in (pem, escaped, tail_only):
        clean = redact(text)
        assert not any(line[:16] in clean for line in body), clean
        assert scan([text]) == [Finding("secret", "private key block", 1)]
    assert redact(tail_only) == "...the end of it:\n[redacted private key block]\nthanks"


def test_a_key_redacted_with_keep_lines_keeps_the_lines_after_it_where_they_were() -> None:
    from assembler.redact import redact

    text = "# Keys\n\n" + PRIVATE_KEY + "\n\nafter the key\n"
    clean = redact(text, keep_lines=True)
    assert clean.count("\n") == text.count("\n")
    assert clean.split("\n").index("after the key") == text.split("\n").index("after the key")
    assert PRIVATE_KEY_BODY not in clean


def test_library_labels_read_as_ours() -> None:
    token = "SG." + _random(22) + "." + _random(43)
    assert scan([f"sendgrid {token}"]) == [Finding("secret", "SendGrid API key", 1)]
    hint = route([f"use {token}", f"and {token[:-1]}X"])
    assert hint.sensitivity_reason == "secret: 2 SendGrid API keys"


@pytest.mark.parametrize(
    "unit",
    [
        "eyJ",
        "//",
        "hf_",
        "AIza.",
        "Q~",
        "pw: ",
        "my password is ",
        "-----END PRIVATE KEY-----\n",
        "A\\n",
        "[redacted ",
        "xoxb-1-,",
        "1234567890:",
        "private_key_id: ",
    ],
)
def test_inputs_that_could_make_the_new_detectors_backtrack_are_scanned_to_the_end(
    unit: str,
) -> None:
    # How long each takes is measured by bench/bench_redact.py (linear in the size).
    text = unit * (100_000 // len(unit))
    assert scan([text]) == []
