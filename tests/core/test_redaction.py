"""The one redaction rule (leaf_live.core.redaction): a corpus of secret-shaped values that must disappear
and of prose that must stay intact, the same rule on the LLM path, the source URLs and every log record."""

from __future__ import annotations

import logging

import pytest

from leaf_live.core import llm, sources
from leaf_live.core.redaction import MASK, install_log_redaction, looks_random, redact

# Key material as the providers issue it (made-up values with the real prefixes and lengths).
OPENAI_LEGACY = "sk-" + "T3BlbkFJx9Qw2Lr7Vb1Zc4Nd8Mf0Hg6Jk5Sa3Pe" + "8Rt"  # 48 after the prefix
OPENAI_PROJECT = "sk-proj-" + "Ab3_dE6fGh9-" * 13  # 156 after the prefix: "any length"
OPENAI_SHORT = "sk-Zx9Yw8Vu7Ts6Rq5P"  # 16 after the prefix, the shortest shape we accept
ANTHROPIC = "sk-ant-api03-" + "q8Wm2Xn4Yb6Zc-Vd9Ue1Tf3Sg5Rh7Pi0Oj" * 3 + "AA"
GOOGLE = "AIzaSyD3x9" + "k2L7mQ8rT4vW1yZ5bC6nH0jF"  # 39 characters, as issued
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_STS_ID = "ASIAJEXAMPLEXEG2JICE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # 40 characters, base64 alphabet
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

SECRET_CASES = [
    # (text, the secret that must not survive)
    (f"Incorrect API key provided: {OPENAI_LEGACY}. You can find your key at ...", OPENAI_LEGACY),
    (f'{{"error": {{"message": "invalid key {OPENAI_PROJECT}"}}}}', OPENAI_PROJECT[8:40]),
    (f"key={OPENAI_SHORT}", OPENAI_SHORT),
    (f"x-api-key: {ANTHROPIC}", ANTHROPIC[13:60]),
    (f"anthropic said: authentication_error for {ANTHROPIC}", ANTHROPIC[13:60]),
    (
        f"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent?key={GOOGLE}",
        GOOGLE,
    ),
    (f"GEMINI_API_KEY={GOOGLE} python run.py", GOOGLE),
    (f"aws_access_key_id = {AWS_ID}", AWS_ID),
    (f"export AWS_ACCESS_KEY_ID={AWS_STS_ID}", AWS_STS_ID),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f'{{"AccessKeyId": "{AWS_STS_ID}", "SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
    (f"headers={{'authorization': 'Bearer {JWT}'}}", JWT[:40]),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    (f"token {JWT} expired", JWT[:40]),
    (
        "https://api.stlouisfed.org/fred/series/observations?series_id=PAYEMS&api_key=0123456789abcdef0123456789abcdef",
        "0123456789abcdef0123456789abcdef",
    ),
    ("GET /v1/data?access_token=ya29.a0AfH6SMBx-example&page=2", "ya29.a0AfH6SMBx-example"),
    ("redis://:s3cr3t-Pa55@127.0.0.1:6379/0", "s3cr3t-Pa55"),
    ("postgresql+psycopg2://leaf:hunter2xyz@db.internal:5432/dagster", "hunter2xyz"),
    ("FRED_API_KEY=abcdef0123456789abcdef0123456789", "abcdef0123456789abcdef0123456789"),
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 pip install", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    (
        "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/x/y",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7",
    ),
    ('{"api_key": "Zq81-Lm29-Xx77-Aa00", "model": "gpt-5"}', "Zq81-Lm29-Xx77-Aa00"),
    ("client_secret=GOCSPX-1a2B3c4D5e6F7g8H9i0J", "GOCSPX-1a2B3c4D5e6F7g8H9i0J"),
]

PROSE = [
    "risk-adjusted returns beat the task-force estimate; sk-ew is low",
    "we fit it with sk-learn (scikit-learn 1.5.2) and sk-learn-compatible-estimators",
    "Bearer bonds and the bearer instrument market",
    "store it as key=value pairs in the config; the api-key: required field",
    "the AKIA prefix marks an access key id; AIza marks a Google key",
    "authorization: pending review by the committee",
    "payrolls rose 151 thousand (consensus 160) at 08:30 ET, token usage 1,234",
    "http://127.0.0.1:8080/v1/chat/completions?model=gpt-5&stream=false",
    "prompt_hash 3f2a9c0d1e4b5a6978c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3",
    '{"usage": {"prompt_tokens": 812, "completion_tokens": 96}, "finish_reason": "stop"}',
]


@pytest.mark.parametrize(
    "text,secret", SECRET_CASES, ids=[f"secret{i:02d}" for i in range(len(SECRET_CASES))]
)
def test_secret_shapes_are_masked(text, secret):
    out = redact(text, secrets=())
    assert secret not in out and MASK in out, out
    assert redact(out, secrets=()) == out  # idempotent


@pytest.mark.parametrize("text", PROSE, ids=[f"prose{i:02d}" for i in range(len(PROSE))])
def test_prose_stays_intact(text):
    assert redact(text, secrets=()) == text


def test_corpus_size_and_context_kept():
    assert len(SECRET_CASES) + len(PROSE) >= 30
    # the text around a secret survives, so an error still says what went wrong
    assert (
        redact(f"Incorrect API key provided: {OPENAI_LEGACY}. Retry.", secrets=())
        == "Incorrect API key provided: ***. Retry."
    )
    assert redact("aws_secret_access_key = " + AWS_SECRET, secrets=()) == "aws_secret_access_key = ***"
    assert (
        redact("https://x/api?series_id=CPI&api_key=abc123&file_type=json", secrets=())
        == "https://x/api?series_id=CPI&api_key=***&file_type=json"
    )
    assert redact(None) is None and redact("") == ""


def test_environment_secret_values_are_masked_whatever_their_shape(monkeypatch):
    from resources.secrets import register_environment_secrets

    env = {
        "MY_SERVICE_API_KEY": "plainwords",  # no secret shape at all
        "AWS_SECRET_ACCESS_KEY": "bare/40/chars/noprefix/x",
        "PGPASSWORD": "correct horse",
        "github_token": "lowercase-name-value",
        "TOKENIZERS_PARALLELISM": "false",  # a switch, not a secret
        "SSL_KEY_FILE": "/etc/ssl/private/leaf.key",  # a path
        "KEY_RETRIES": "12345678",  # a number
        "SHORT_TOKEN": "abc",  # too short to replace safely everywhere
        "HOME": "plainhome-value",  # not a secret name
    }
    try:
        assert register_environment_secrets(env) == 4
        assert redact("server echoed plainwords back") == "server echoed *** back"
        assert redact("x bare/40/chars/noprefix/x y correct horse z") == "x *** y *** z"
        assert redact("lowercase-name-value") == MASK
        for kept in ("abc def", "false", "/etc/ssl/private/leaf.key", "12345678", "plainhome-value"):
            assert redact(kept) == kept
        monkeypatch.setenv("LEAF_TEST_SECRET", "from-the-environment-1")
        assert redact("from-the-environment-1") == "from-the-environment-1"  # core never reads it
        register_environment_secrets()  # the wiring does
        assert redact("from-the-environment-1") == MASK
    finally:
        register_environment_secrets({})


def test_new_shapes_short_sk_bare_aws_secret_azure():
    azure = "A" * 10 + "b3Cd5Ef7Gh" * 4 + "xY" + "JQQJ99" + "BAACYeBjFXJ3w3AAAEACOGq1w2"
    assert len(azure) == 84
    cases = {
        "short sk key sk-ab12cd34ef in the error": "short sk key *** in the error",
        f"secret {AWS_SECRET} echoed": "secret *** echoed",
        f"azure key {azure}.": "azure key ***.",
        "Ocp-Apim-Subscription-Key: 0123456789abcdef0123456789abcdef": "Ocp-Apim-Subscription-Key: ***",
    }
    for text, want in cases.items():
        assert redact(text, secrets=()) == want
    # ids and hashes stay: a uuid4 hex call id, a git sha, a URL path after a domain, sk-learn
    for kept in (
        "call 0123456789abcdef0123456789abcdef done",
        "commit 3f2a9c0d1e4b5a6978c1d2e3f4a5b6c7d8e9f0a1",
        "https://www.bls.gov/News/Release/2026/Empsit03Payrolls1Release",
        "sk-learn-compat and sk-ew",
    ):
        assert redact(kept, secrets=()) == kept


def test_frame_redaction_candidates_cover_every_rule():
    """Every text the rule changes is a candidate of the vectorized pre-filter, so the stored-frame pass
    (storage writes) redacts exactly what :func:`redact` does."""
    import re

    import polars as pl

    from leaf_live.core.redaction import candidate_pattern, redact_frame

    texts = [t for t, _ in SECRET_CASES] + PROSE + ["the plainwords here", "nothing to see"]
    pat = candidate_pattern(["plainwords"])
    flags = pl.Series(texts).str.contains(pat).to_list()
    for t, hit in zip(texts, flags, strict=True):
        if redact(t, secrets=["plainwords"]) != t:
            assert hit, t
    frame = pl.DataFrame({"text": texts, "n": list(range(len(texts)))})
    out = redact_frame(frame, secrets=["plainwords"])
    assert out["text"].to_list() == [redact(t, secrets=["plainwords"]) for t in texts]
    assert out["n"].to_list() == frame["n"].to_list() and out.schema == frame.schema
    clean = pl.DataFrame({"text": PROSE})
    assert redact_frame(clean, secrets=()) is clean  # nothing to change: the same frame
    assert re.compile(r"x").pattern  # (re imported for the pattern check above)


def test_looks_random():
    assert looks_random("Zq81Lm29") and looks_random("abcdefghijklmnop") and looks_random("ya29.a0Af")
    assert (
        not looks_random("required")
        and not looks_random("learn-compat")
        and looks_random("learn-compatible")
        and not looks_random("abc1")
    )


def test_llm_and_sources_use_the_one_rule():
    text = f"Bearer abcdefghijklmnop and sk-proj-AbC123456789xyzw and ?api_key={GOOGLE}"
    assert llm.redact_secrets(text) == sources.redact(text) == redact(text)
    assert llm.redact_secrets is redact and sources.redact is redact


def test_log_records_are_redacted(caplog):
    install_log_redaction()
    install_log_redaction()  # idempotent
    log = logging.getLogger("leaf_live.test_redaction")
    with caplog.at_level(logging.INFO, logger="leaf_live.test_redaction"):
        log.info("calling %s with key %s", "openai", OPENAI_LEGACY)
        try:
            raise RuntimeError(f"provider refused {AWS_ID}")
        except RuntimeError:
            log.exception("failed")
        log.info("plain %d%%", 5)
    text = caplog.text
    assert OPENAI_LEGACY not in text and AWS_ID not in text and "calling openai with key ***" in text
    assert "provider refused ***" in text and "plain 5%" in text


def test_dagster_run_logs_are_redacted(tmp_path):
    """A key logged through ``context.log`` reaches neither the console nor the stored event log."""
    from dagster import DagsterInstance, asset, materialize

    from leaf_live.process import prepare_process

    prepare_process()  # what an entry point does: installs the log redaction

    @asset
    def leaky(context) -> None:
        context.log.info(f"using {ANTHROPIC} for this run")

    with DagsterInstance.ephemeral() as instance:
        assert materialize([leaky], instance=instance).success
        messages = [e.user_message for e in instance.all_logs(instance.get_runs()[0].run_id)]
    assert any("using *** for this run" in m for m in messages)
    assert not any(ANTHROPIC[13:40] in m for m in messages)
