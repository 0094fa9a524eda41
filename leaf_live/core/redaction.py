"""The one redaction rule for secrets: every text that may be stored or logged (LLM raw responses and error
texts, source URLs and errors, log records) passes through :func:`redact` first.

What is replaced by ``***`` (DESIGN.md, Conventions: "secrets ... never stored, never logged"):

- the exact values registered with :func:`set_secret_values`, wherever they appear: the wiring
  (``resources.secrets.register_environment_secrets``) registers the value of every environment variable whose
  name holds ``KEY``, ``SECRET``, ``TOKEN``, ``PASSWORD``, ``PASSWD`` or ``CREDENTIAL`` (selected by the pure
  :func:`secret_values_of`; this module never reads the environment itself);
- provider keys by their shape, of any length past the prefix (``sk-`` from 8 random-looking characters on):
  OpenAI ``sk-...`` / ``sk-proj-...``,
  Anthropic ``sk-ant-...``, OpenRouter ``sk-or-...``, Google ``AIza...``, xAI ``xai-...``, Groq ``gsk_...``,
  Perplexity ``pplx-...``, Hugging Face ``hf_...``, GitHub ``ghp_...`` / ``github_pat_...``, Slack
  ``xox?-...``, AWS access key ids (``AKIA...``, ``ASIA...`` and the other IAM prefixes), a bare 40-character
  AWS secret access key (mixed case and a digit), Azure AI services keys (84 characters with the ``JQQJ99``
  signature), JSON web tokens and PEM private key blocks;
- values next to a secret name: ``aws_secret_access_key = ...`` (the 40-character AWS secret key),
  ``aws_session_token``, ``api_key`` / ``x-api-key`` / ``x-goog-api-key``, ``access_token``,
  ``client_secret``, ``password``, ``ocp-apim-subscription-key`` (Azure's header, whose value is a bare
  32-hex key: outside such a context 32 hex digits are ids, e.g. ``llm_calls.call_id``),
  ``NAME_API_KEY=...`` / ``NAME_TOKEN=...`` / ``NAME_SECRET=...`` /
  ``NAME_PASSWORD=...``, in ``key=value``, ``key: value`` and JSON form;
- ``Authorization:`` header values (``Bearer``, ``Basic``, ``Token``) and bare ``Bearer <token>``;
- URL query parameters that carry credentials (``api_key=``, ``key=``, ``token=``, ``access_token=``,
  ``signature=``, AWS presigned ``X-Amz-*``) and the password of ``scheme://user:password@host``.

Prose stays intact: a shape rule needs the token to look random (a digit, mixed case, or a length no word
reaches), so ``risk-adjusted``, ``sk-learn``, ``task-force``, ``Bearer bonds`` or ``key=value pairs`` pass.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping

MASK = "***"

# ---------------------------------------------------------------------------------------------
# Exact secret values (registered by the wiring; never read from the environment here)
# ---------------------------------------------------------------------------------------------

SECRET_NAME_PARTS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
MIN_SECRET_LEN = 8  # shorter values ("abc", "false") would blank ordinary words everywhere
_NOT_SECRET = re.compile(r"(?i)(?:[+-]?\d+(?:\.\d+)?|true|false|yes|no|on|off|none|null)")
_SECRETS: tuple[str, ...] = ()


def secret_values_of(environ: Mapping[str, str]) -> list[str]:
    """The values of ``environ`` that are secrets: every variable whose name (any case) holds one of
    :data:`SECRET_NAME_PARTS`, with a value of at least :data:`MIN_SECRET_LEN` characters that is not a
    number, a switch word (``true``, ``off``, ...) or an absolute file path (``/run/secrets/key``: a path
    names where a secret lives, and blanking it would blank ordinary paths). Longest first, no duplicates."""
    out = set()
    for name, value in environ.items():
        upper = name.upper()
        if not any(part in upper for part in SECRET_NAME_PARTS):
            continue
        v = (value or "").strip()
        if len(v) < MIN_SECRET_LEN or _NOT_SECRET.fullmatch(v) or v.startswith(("/", "~")):
            continue
        out.add(v)
        if v != value and value and len(value) >= MIN_SECRET_LEN:
            out.add(value)
    return sorted(out, key=lambda x: (-len(x), x))


def set_secret_values(values: Iterable[str]) -> None:
    """Register the exact secret values :func:`redact` hides by default (replacing the previous set), e.g.
    ``set_secret_values(secret_values_of(os.environ))`` in the wiring. Values shorter than
    :data:`MIN_SECRET_LEN` are ignored."""
    global _SECRETS
    _SECRETS = tuple(
        sorted({v for v in values if v and len(v) >= MIN_SECRET_LEN}, key=lambda x: (-len(x), x))
    )


def secret_values() -> tuple[str, ...]:
    """The registered exact secret values (longest first)."""
    return _SECRETS


def looks_random(token: str, long_word: int = 16) -> bool:
    """True when ``token`` looks like a credential rather than a word: at least 8 characters and a digit,
    mixed case, a character words do not contain (``._~+/=``), or ``long_word`` characters or more."""
    if len(token) < 8:
        return False
    body = token.replace("-", "").replace("_", "")
    return (
        any(c.isdigit() for c in token)
        or (any(c.isupper() for c in body) and any(c.islower() for c in body))
        or any(c in "._~+/=" for c in token)
        or len(token) >= long_word
    )


# Shape rules: the whole match is a secret when ``looks_random`` accepts it (prefix included).
_SHAPES: tuple[tuple[re.Pattern[str], int], ...] = (
    # OpenAI / Anthropic / OpenRouter / DeepSeek style; \b keeps "risk-adjusted" (no boundary before "sk").
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), 40),
    # short sk- keys: 8+ characters past the prefix with a digit and a letter ("sk-learn" has no digit)
    (re.compile(r"\bsk-(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{8,}"), 0),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), 0),  # Google API keys
    (
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)[A-Z0-9]{16}\b"),
        0,
    ),  # AWS key ids
    (re.compile(r"\b(?:xai|pplx)-[A-Za-z0-9]{20,}"), 0),
    (re.compile(r"\b(?:gsk|hf|ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"), 0),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"), 0),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), 0),  # JWT
    # Azure AI services / OpenAI keys (84 characters, the JQQJ99 signature at 52)
    (re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9]{26}(?:==)?(?![A-Za-z0-9])"), 0),
    # a bare AWS secret access key: exactly 40 of base64's characters with upper case, lower case and a digit,
    # not glued to a domain, file name or other token (a URL path after "example.com" never matches)
    (
        re.compile(
            r"(?<![A-Za-z0-9/+=._%\-])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*\d)"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=._%\-])"
        ),
        0,
    ),
)
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S)

_SECRET_NAMES = (
    r"aws_secret_access_key|secret_access_key|secretaccesskey|aws_session_token|sessiontoken|"
    r"x-amz-security-token|x-goog-api-key|x-api-key|api[_\-]?key|access[_\-]?token|refresh[_\-]?token|"
    r"id[_\-]?token|auth[_\-]?token|client[_\-]?secret|secret[_\-]?key|password|passwd|"
    r"ocp-apim-subscription-key|subscription[_\-]?key"
)
# name, separator, value. ``=`` glued to a value is an assignment (any value is a secret); after ``:`` or
# spaces the value must look random, so documentation like "api-key: required" stays readable.
_NAMED = re.compile(
    rf"(?i)(?<![A-Za-z0-9])((?:{_SECRET_NAMES})[\"']?)(\s*[=:]\s*[\"']?|=)([A-Za-z0-9._~+/=\-]{{4,}})"
)
_ENV_NAMED = re.compile(
    r"\b([A-Z][A-Z0-9_]*(?:_API_KEY|_TOKEN|_SECRET|_SECRET_KEY|_PASSWORD|_ACCESS_KEY|_ACCESS_KEY_ID))"
    r"([\"']?\s*[=:]\s*[\"']?)([^\s\"',;&]+)"
)
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)((?:bearer|basic|token|apikey|digest)\s+)?([^\s\"',;]+)"
)
_BEARER = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=\-]+)")
_URL_PARAM = re.compile(
    r"(?i)([?&;](?:api[_\-]?key|apikey|key|token|access_token|auth|client_secret|sig|signature|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|password)=)([^&#\s\"'<>]+)"
)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s]*:)([^@/\s]+)(@)")


def _glued(sep: str) -> bool:
    """``name=value`` or ``name = "value"``: an assignment, whatever the value looks like."""
    return sep.lstrip().startswith("=") and not sep.endswith((" ", "\t"))


def _named(m: re.Match[str]) -> str:
    name, sep, value = m.groups()
    return f"{name}{sep}{MASK}" if _glued(sep) or looks_random(value) else m.group(0)


def _auth_header(m: re.Match[str]) -> str:
    head, scheme, value = m.group(1), m.group(2) or "", m.group(3)
    if value == MASK or not (scheme or looks_random(value)):
        return m.group(0)
    return f"{head}{scheme}{MASK}"


def redact(text: str | None, secrets: Iterable[str] | None = None) -> str | None:
    """``text`` with every secret-shaped value replaced by ``***`` (module docstring lists the rules).

    ``secrets``: exact values to hide (default: those registered with :func:`set_secret_values`).
    ``None`` stays ``None``. Idempotent:
    ``redact(redact(t)) == redact(t)``.
    """
    if text is None:
        return None
    if not text:
        return text
    for value in sorted(secret_values() if secrets is None else secrets, key=len, reverse=True):
        if value and len(value) >= MIN_SECRET_LEN:
            text = text.replace(value, MASK)
    text = _PEM.sub(MASK, text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    text = _URL_PARAM.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{MASK}" if looks_random(m.group(2)) else m.group(0), text)
    text = _NAMED.sub(_named, text)
    text = _ENV_NAMED.sub(_named, text)
    for pat, long_word in _SHAPES:
        text = pat.sub(lambda m, n=long_word or 16: MASK if looks_random(m.group(0), n) else m.group(0), text)
    return text


# ---------------------------------------------------------------------------------------------
# Stored frames
# ---------------------------------------------------------------------------------------------

# What any rule above needs to see before it can match (case-insensitive literals), so a frame's text
# columns are scanned by one vectorized regex and only the candidate values go through :func:`redact`.
# tests/core/test_redaction.py checks that every corpus text :func:`redact` changes is a candidate.
_TRIGGERS = (
    "sk-", "aiza", "akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "apka", "aroa",
    "xai-", "pplx-", "gsk_", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "eyj",
    "jqqj9", "private key", "://", "key", "token", "secret", "password", "passwd", "auth", "bearer", "sig",
    "x-amz",
)  # fmt: skip


_RUST_META = set("\\.+*?()|[]{}^$#&-~")


def _rust_escape(text: str) -> str:
    """``text`` as a literal in a Rust (polars) regex."""
    return "".join("\\" + c if c in _RUST_META else c for c in text)


def candidate_pattern(secrets: Iterable[str] | None = None) -> str:
    """A regex (Rust/polars syntax, no look-around) matching every text :func:`redact` may change: one of the
    rules' trigger words, a 40-character base64 run (the bare AWS secret shape) or one of the exact secret
    values (default: the registered ones)."""
    values = secret_values() if secrets is None else tuple(secrets)
    parts = [_rust_escape(t) for t in _TRIGGERS] + ["[A-Za-z0-9/+]{40}"]
    exact = [_rust_escape(v) for v in values if v and len(v) >= MIN_SECRET_LEN]
    pattern = "(?i)(?:" + "|".join(parts) + ")"
    return pattern + ("|(?:" + "|".join(exact) + ")" if exact else "")


def redact_frame(frame, secrets: Iterable[str] | None = None):
    """``frame`` (a polars DataFrame) with :func:`redact` applied to every text (``String``) column: the one
    pass every stored row goes through (``leaf_live.core.storage`` calls it before each write). Only values
    matching :func:`candidate_pattern` are redacted, each distinct value once; other columns and values are
    returned unchanged (same dtypes, same order)."""
    import polars as pl

    values = secret_values() if secrets is None else tuple(secrets)
    pattern = None
    out = []
    changed = False
    for name, dtype in frame.schema.items():
        s = frame.get_column(name)
        if dtype == pl.String and s.len() and s.null_count() < s.len():
            pattern = pattern or candidate_pattern(values)
            distinct = s.drop_nulls().unique()
            hits = distinct.filter(distinct.str.contains(pattern))
            mapping = {v: r for v in hits.to_list() if (r := redact(v, values)) != v}
            if mapping:
                s = s.replace(list(mapping), list(mapping.values()))
                changed = True
        out.append(s)
    return pl.DataFrame(out) if changed else frame


# ---------------------------------------------------------------------------------------------
# Logs
# ---------------------------------------------------------------------------------------------

_installed = False


def install_log_redaction() -> None:
    """Redact every Python log record at creation (message, arguments and traceback text), for every
    logger of the process: Dagster's run logs (``context.log``, stored in the event log), litellm, httpx,
    Celery. Installs a :func:`logging.setLogRecordFactory` wrapper once; calling again does nothing."""
    global _installed
    if _installed:
        return
    base = logging.getLogRecordFactory()
    formatter = logging.Formatter()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = base(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed format string fails at emit, as it would without us
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(formatter.formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
    _installed = True


__all__ = [
    "MASK",
    "MIN_SECRET_LEN",
    "SECRET_NAME_PARTS",
    "candidate_pattern",
    "install_log_redaction",
    "looks_random",
    "redact",
    "redact_frame",
    "secret_values",
    "secret_values_of",
    "set_secret_values",
]
