"""Redaction: which values and shapes are secrets, the forms a program prints them in, and
excerpts cut only after they are redacted. Pure functions, tested in process."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentic_evals import redaction
from pytest_agentic_evals.expectations.output import EXCERPT_BYTES, excerpt
from pytest_agentic_evals.redaction import (
    REDACTED,
    Redactor,
    environment_secrets,
    escape_controls,
    redact,
)

# One of each shape a secret comes in, as a program would print it, and its secret part.
SHAPES = {
    "url password": ("postgres://app:pa55w0rd-x9@db.internal:5432/app", "pa55w0rd-x9"),
    "authorization header": ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    "bearer": ("curl -H 'bearer abcdef123456789'", "abcdef123456789"),
    "token pair": ("GET /cb?token=hunter22zz&x=1", "hunter22zz"),
    "json member": ('{"api_key": "k-778899aabb", "name": "ok"}', "k-778899aabb"),
    "secret-named assignment": ("GH_PAT=pat0123456789abcdef", "pat0123456789abcdef"),
    "github classic": ("ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0"),
    "github fine-grained": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
                            "11ABCDEFG0123456789_abcdef"),
    "sk- key": ("key sk-live-4f9a0b1c2d3e4f5a6b7c used", "4f9a0b1c2d3e4f5a6b7c"),
    "slack": ("xoxb-123456789012-abcdefABCDEF", "123456789012-abcdefABCDEF"),
    "aws access key id": ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "private key": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
                    "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA"),
}


@pytest.mark.parametrize("name", SHAPES)
def test_every_secret_shape_is_redacted_wherever_it_appears(name: str) -> None:
    text, secret = SHAPES[name]
    redacted = redact(f"before {text} after")
    assert secret not in redacted
    assert REDACTED in redacted
    assert redacted.startswith("before ") and redacted.endswith(" after")


def test_a_token_keeps_the_prefix_that_says_what_it_was() -> None:
    assert redact("ghp_" + "x" * 36) == "ghp_" + REDACTED
    assert redact("AKIAIOSFODNN7EXAMPLE") == "AKIA" + REDACTED


def test_ordinary_text_is_left_alone() -> None:
    text = ("stdout_contains: 'hello, Ada' not found in stdout; 2/2 cases passed; "
            "sort_key ok; task-force; https://example.com/path?q=1; NOT_READY")
    assert redact(text) == text


ENV = {
    "GH_PAT": "pat-0123456789abcdef",
    "SERVICE_TOKEN": "tok_live_998877",
    "SIGNING_KEY": "k3y-material-55",
    "APP_SECRET": "s3cr3t-value-77",
    "DB_PASSWORD_PRIMARY": "correct-horse-9",
    "DATABASE_URL": "postgres://app:urlpass-4242@db:5432/app",
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
    "XDG_SESSION_TYPE": "wayland",
    "PWD": "/work/somewhere",
}


def test_which_environment_values_are_secrets(tmp_path: Path) -> None:
    env = {**ENV, "SSH_AUTH_SOCK": str(tmp_path)}  # a path that exists locates, it is no secret
    secrets = set(environment_secrets(env))
    assert secrets == {"pat-0123456789abcdef", "tok_live_998877", "k3y-material-55",
                       "s3cr3t-value-77", "correct-horse-9", "urlpass-4242"}


def test_a_short_value_is_never_replaced_everywhere() -> None:
    # "pass" or "123" would eat ordinary words and figures out of every message.
    assert environment_secrets({"API_TOKEN": "12345", "DB_URL": "pg://u:pass@h/d"}) == []


@pytest.mark.parametrize("form", [
    pytest.param(lambda s: s, id="as is"),
    pytest.param(str.upper, id="upper-cased"),
    pytest.param(str.lower, id="lower-cased"),
    pytest.param(lambda s: base64.b64encode(s.encode()).decode(), id="base64"),
    pytest.param(lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
                 id="base64 url-safe unpadded"),
    pytest.param(lambda s: quote(s, safe=""), id="percent-encoded"),
])
def test_the_forms_a_program_prints_a_secret_in(form: object) -> None:
    secret = "Mixed/Case+Secret=42"
    shown = form(secret)  # type: ignore[operator]
    redactor = Redactor.of_environment({"API_TOKEN": secret})
    assert shown not in redactor.text(f"value: {shown}\n")


@settings(max_examples=60, deadline=None)
@given(prefix=st.binary(max_size=20), suffix=st.binary(max_size=20))
def test_a_secret_inside_a_longer_base64_text_is_redacted(prefix: bytes, suffix: bytes) -> None:
    # An Authorization: Basic header or a base64 blob: the secret at any alignment.
    secret = "user:s3cret-passw0rd-1"
    encoded = base64.b64encode(prefix + secret.encode() + suffix).decode()
    redacted = Redactor([secret]).text(encoded)
    # What is left of the encoding no longer decodes to the secret at any alignment.
    for start in range(4):
        chunk = redacted.replace(REDACTED, "")[start:]
        chunk = chunk[: len(chunk) // 4 * 4]
        try:
            decoded = base64.b64decode(chunk)
        except ValueError:
            continue
        assert secret.encode()[4:-4] not in decoded


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=200))
def test_redacting_twice_changes_nothing(text: str) -> None:
    redactor = Redactor(["sk-live-4f9a0b1c2d3e"])
    once = redactor.text(text + " token=abc123456 sk-live-4f9a0b1c2d3e")
    assert redactor.text(once) == once


def test_a_json_document_is_redacted_value_by_value() -> None:
    document = {"argv": ["curl", "-u", "me:pat-0123456789abcdef"], "n": 3, "ok": True,
                "nested": {"pat-0123456789abcdef": "kept as a key"}}
    redacted = Redactor.of_environment(ENV).tree(document)
    assert redacted["argv"] == ["curl", "-u", "me:" + REDACTED]
    assert redacted["n"] == 3 and redacted["ok"] is True
    assert "pat-0123456789abcdef" in redacted["nested"]
    assert "pat-0123456789abcdef" in document["argv"][2]  # the original is not changed


def test_a_part_with_nothing_to_redact_is_not_copied() -> None:
    # Reports of many trials are redacted at the end of a session: copying them would double
    # the peak memory. Untouched parts stay the same objects; the original is never changed.
    clean = {"stdout": {"head": "ok", "tail": ""}, "problems": [], "trial": 1}
    document = {"clean": clean, "argv": ["curl", "-u", "me:pat-0123456789abcdef"]}
    redacted = Redactor.of_environment(ENV).document(document)
    assert redacted is not document and redacted["clean"] is clean
    assert redacted["argv"] is not document["argv"]
    assert document["argv"][2] == "me:pat-0123456789abcdef"
    assert Redactor.of_environment(ENV).document(clean) is clean


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.sampled_from(["ok", "me:pat-0123456789abcdef", "x token=abc123456",
                                       "PASS", "a" * 600 + " token=abc123456"]) | st.text(),
                      max_size=30))
def test_a_text_seen_before_is_redacted_as_a_fresh_redactor_does(texts: list[str]) -> None:
    """Texts that recur (case names, paths) are redacted once and looked up afterwards: the
    answer never differs from a fresh redactor's, and an unchanged text comes back itself."""
    seasoned = Redactor.of_environment(ENV)
    for text in [*texts, *texts]:
        copy = "".join(list(text))  # equal, but another object than the one first seen
        redacted = seasoned.text(copy)
        assert redacted == Redactor.of_environment(ENV).text(text)
        assert (redacted is copy) == (redacted == text)


def test_the_texts_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction, "CACHED_TEXTS", 10)
    redactor = Redactor.of_environment(ENV)
    for number in range(100):
        assert redactor.text(f"line {number}") == f"line {number}"
        assert len(redactor._done) <= 10
    assert redactor.text("me:pat-0123456789abcdef") == "me:" + REDACTED


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.sampled_from(["ok", "pat-0123456789abcdef", "x token=abc123456", "sk-live-4f9a0b1c2d3e"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=4),
    max_leaves=20,
)


def _redact_by_copying(redactor: Redactor, value: object) -> object:
    """Redaction as a full copy: what copy on write must be equal to."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, dict):
        return {key: _redact_by_copying(redactor, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_by_copying(redactor, item) for item in value]
    return value


@settings(max_examples=150, deadline=None)
@given(document=st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=5))
def test_copy_on_write_redacts_as_a_full_copy_does(document: dict[str, object]) -> None:
    redactor = Redactor.of_environment(ENV)
    before = json.dumps(document)
    assert redactor.document(document) == _redact_by_copying(redactor, document)
    assert json.dumps(document) == before  # the original is never changed


SECRET = "sk-live-0123456789abcdefXYZ"


def secret_fragments(text: str, secret: str = SECRET, size: int = 6) -> list[str]:
    """Pieces of the secret that survived in ``text`` (its prefix ``sk-`` aside)."""
    return [secret[i:i + size] for i in range(3, len(secret) - size + 1)
            if secret[i:i + size] in text]


@pytest.mark.parametrize("offset", range(-len(SECRET), 2))
def test_a_secret_across_the_head_cut_is_replaced_whole(tmp_path: Path, offset: int) -> None:
    path = tmp_path / "stdout"
    start = EXCERPT_BYTES + offset
    path.write_bytes(b"a" * start + SECRET.encode() + b"b" * 10_000)
    captured = excerpt(path, Redactor.of_environment({"OPENAI_API_KEY": SECRET}))
    assert captured["truncated"] is True
    assert secret_fragments(captured["head"]) == []
    assert secret_fragments(captured["tail"]) == []


@pytest.mark.parametrize("offset", range(-len(SECRET), 2))
def test_a_secret_across_the_tail_cut_is_replaced_whole(tmp_path: Path, offset: int) -> None:
    path = tmp_path / "stdout"
    path.write_bytes(b"a" * 10_000 + SECRET.encode() + b"b" * (EXCERPT_BYTES + offset))
    captured = excerpt(path, Redactor.of_environment({"OPENAI_API_KEY": SECRET}))
    assert secret_fragments(captured["head"] + captured["tail"]) == []


def test_a_secret_across_the_middle_of_a_short_stream(tmp_path: Path) -> None:
    # Under two excerpts long: head and tail are the whole stream, cut after redaction.
    path = tmp_path / "stdout"
    path.write_bytes(b"a" * (EXCERPT_BYTES - 5) + SECRET.encode() + b"\nend")
    captured = excerpt(path, Redactor.of_environment({"OPENAI_API_KEY": SECRET}))
    assert captured["truncated"] is False
    assert secret_fragments(captured["head"] + captured["tail"]) == []
    assert (captured["head"] + captured["tail"]).endswith(REDACTED + "\nend")
    assert not captured["head"].endswith("[RED")  # the marker is never cut either


def test_excerpts_are_bounded_and_redacted(tmp_path: Path) -> None:
    path = tmp_path / "out"
    body = b"Authorization: Bearer abcdef123456789\n" + b"x" * 100_000 + b"\ntoken=hunter22 end"
    path.write_bytes(body)
    captured = excerpt(path, Redactor.of_environment({"MY_API_KEY": "sk-live-0123456789"}))
    assert captured["bytes"] == len(body)
    assert captured["truncated"] is True
    assert len(captured["head"]) + len(captured["tail"]) < 5000
    assert "abcdef123456789" not in captured["head"]
    assert "hunter22" not in captured["tail"]
    assert REDACTED in captured["head"] and REDACTED in captured["tail"]


def test_a_stream_of_secrets_still_gives_a_bounded_excerpt(tmp_path: Path) -> None:
    # Redaction shrinks the text; the window grows so that no half secret moves into the cut.
    path = tmp_path / "out"
    path.write_bytes((SECRET.encode() + b"\n") * 2000)
    captured = excerpt(path, Redactor([SECRET]))
    assert secret_fragments(captured["head"] + captured["tail"]) == []
    assert len(captured["head"]) <= EXCERPT_BYTES + len(REDACTED)


def test_control_characters_are_escaped_for_the_terminal() -> None:
    assert escape_controls("\x1b[31mred\x00\tnul\n\x7f") == "\\x1b[31mred\\x00\tnul\n\\x7f"
    assert json.loads(json.dumps(escape_controls("é ✓"))) == "é ✓"


SHAPE_FRAGMENTS = ["Authorization: ", "Bearer ", "token=", '"api_key": "', "MY_TOKEN=",
                   "ghp_", "github_pat_", "sk-", "sk_live_", "xoxb-", "AKIA", "AIza", "glpat-",
                   "npm_", "eyJ", ".eyJ", "https://", "user:", "@host",
                   "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
                   "A" * 16, "a1" * 20, "_-" * 20, " ", "\n", "=", ":", "/", '"']


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(SHAPE_FRAGMENTS) | st.text(max_size=6), max_size=12))
def test_the_shapes_are_replaced_as_by_each_pattern_in_turn(pieces: list[str]) -> None:
    # The redactor skips texts in which no shape matches; that must change no result.
    text = "".join(pieces)
    expected = text
    for pattern, replacement in redaction.SHAPES:
        expected = pattern.sub(replacement, expected)
    assert Redactor().text(text) == expected
