"""The one LLM call path: litellm ``acompletion`` with retries, a requests-per-minute limit, bounded
async fan-out, usage, cost and a record of every call.

Source: LiveMacroEval §3.4 and App. D (two web-search calls per model and hour), DESIGN.md principle 6
("every LLM call stores model, prompt hash, request time, raw response, validity, usage and cost;
re-scoring never re-calls a model").

Configuration (environment variables, resolved by ``leaf_live.core.settings`` and parsed by
:func:`load_llm_config`; the ``llm`` Dagster resource receives them as ``EnvVar``s):

| variable                        | meaning                                                          | default
|
|---------------------------------|------------------------------------------------------------------|---------|
| ``LEAF_LIVE_LLM_MODELS``         | comma list of ``provider/model@design`` (single, team, plugin)   | empty
= no LLM runs |
| ``LEAF_LIVE_LLM_API_BASE``       | override of every provider's base URL (a proxy, a local server)  |
provider default |
| ``LEAF_LIVE_LLM_RPM``            | requests per minute per model (shared by concurrent calls)       | 60 |
| ``LEAF_LIVE_LLM_CONCURRENCY``    | calls in flight at once (all models)                             | 8 |
| ``LEAF_LIVE_LLM_TIMEOUT_S``      | wall-clock limit of one attempt, seconds                         | 300 |
| ``LEAF_LIVE_LLM_MAX_ATTEMPTS``   | attempts per call (first try + retries)                          | 5 |
| ``LEAF_LIVE_LLM_MAX_TOKENS``     | output token limit per call                                      | 8192 |
| ``LEAF_LIVE_LLM_WEB_SEARCH``     | ``1`` / ``0``: give the model its provider's web-search tool     | 1 |

API keys are read by litellm from the providers' standard variables (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``, ...). This module never reads, stores or logs them; error
texts and stored responses pass through :func:`leaf_live.core.redaction.redact` anyway.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import hashlib
import json
import math
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import polars as pl

from leaf_live.core.redaction import redact
from leaf_live.core.settings import SettingsError
from leaf_live.core.storage import AVAILABLE_AT as _AVAILABLE_AT
from leaf_live.core.storage import PARTITION_KEY as _PARTITION_KEY
from leaf_live.core.storage import Table, col, conform, polars_schema


@functools.cache
def _litellm():
    """litellm, imported on first use: importing it costs about 2.3 s, and most commands (status, sql,
    scores, the schema registry) never call a model."""
    import litellm  # its no-download switch is set by the entry point (leaf_live.process.prepare_process)

    litellm.suppress_debug_info = True  # no "Give Feedback" banners in run logs
    _install_answer_cleaning()
    return litellm


# ---------------------------------------------------------------------------------------------
# Citation fields of a provider answer, cleaned before litellm converts it
# ---------------------------------------------------------------------------------------------

# A provider may send a citation field as JSON null, or a list holding nulls or wrong types (Gemini's
# ``groundingMetadata: {"groundingChunks": null}``, a null Anthropic ``citations`` item): null means absent
# (protobuf's JSON mapping, and what the providers document for optional fields). litellm's converters
# iterate these fields unguarded, so such an answer -- paid for, with its text intact -- would be recorded
# as a failed call. Each shape below is what a converter reads; an entry of the wrong type is dropped (a
# list item that others point to by position becomes ``{}`` so the positions hold).
_STR, _INT, _NUM = "str", "int", "num"
_POSITIONAL = "positional"
_GEMINI_GROUNDING: dict[str, Any] = {
    "webSearchQueries": [_STR],
    "groundingChunks": [
        {
            "web": {"uri": _STR, "title": _STR, "domain": _STR},
            "retrievedContext": {"uri": _STR, "title": _STR},
        },
        _POSITIONAL,
    ],
    "groundingSupports": [
        {
            "segment": {"startIndex": _INT, "endIndex": _INT, "partIndex": _INT, "text": _STR},
            "groundingChunkIndices": [_INT],
            "confidenceScores": [_NUM],
        }
    ],
}
_GEMINI_CITATIONS: dict[str, Any] = {
    "citations": [{"startIndex": _INT, "endIndex": _INT, "uri": _STR, "title": _STR, "license": _STR}],
    "citationSources": [{"startIndex": _INT, "endIndex": _INT, "uri": _STR, "license": _STR}],
}
_GEMINI_URL_CONTEXT: dict[str, Any] = {"urlMetadata": [{"retrievedUrl": _STR, "urlRetrievalStatus": _STR}]}
_CITATION_ITEM: dict[str, Any] = {"url": _STR, "title": _STR, "cited_text": _STR}
_OPENAI_ANNOTATION: dict[str, Any] = {
    "url_citation": {"url": _STR, "title": _STR, "start_index": _INT, "end_index": _INT}
}
_DROP = object()


def _shaped(value: Any, shape: Any) -> Any:
    """``value`` fitted to ``shape`` (a scalar kind, ``{key: shape}`` or ``[item shape(, _POSITIONAL)]``):
    nulls and entries of the wrong type removed, keys outside the shape kept with their nulls removed;
    ``_DROP`` when ``value`` itself does not fit."""
    if value is None:
        return _DROP
    if shape == _STR:
        return value if isinstance(value, str) else _DROP
    if shape in (_INT, _NUM):
        ok = isinstance(value, int) or (shape == _NUM and isinstance(value, float))
        return value if ok and not isinstance(value, bool) else _DROP
    if isinstance(shape, dict):
        if not isinstance(value, Mapping):
            return _DROP
        out = {}
        for k, v in value.items():
            v = _shaped(v, shape[k]) if k in shape else _without_nulls(v)
            if v is not _DROP:
                out[k] = v
        return out
    if not isinstance(value, list):
        return _DROP
    items = [_shaped(v, shape[0]) for v in value]
    if _POSITIONAL in shape[1:]:
        return [{} if v is _DROP else v for v in items]
    return [v for v in items if v is not _DROP]


def _without_nulls(value: Any) -> Any:
    if value is None:
        return _DROP
    if isinstance(value, Mapping):
        return {k: w for k, v in value.items() if (w := _without_nulls(v)) is not _DROP}
    if isinstance(value, list):
        return [w for v in value if (w := _without_nulls(v)) is not _DROP]
    return value


def clean_answer_citations(api: str, body: Any) -> Any:
    """A provider's response body (parsed JSON) with its citation fields made convertible: for ``api``
    ``"gemini"`` the candidates' ``groundingMetadata`` / ``citationMetadata`` / ``urlContextMetadata``, for
    ``"anthropic"`` the content blocks' ``citations`` and web-search result lists, for ``"openai"`` the
    messages' ``annotations``. Null or ill-typed entries are removed (a null field is an absent one), so
    an answer without usable citations converts as an answer with zero citations. Other fields and other
    bodies are returned unchanged; never raises."""
    if not isinstance(body, Mapping):
        return body
    body = dict(body)
    if api == "gemini" and isinstance(body.get("candidates"), list):
        cands = []
        for cand in body["candidates"]:
            if isinstance(cand, Mapping):
                cand = dict(cand)
                for key, shape in (
                    ("groundingMetadata", _GEMINI_GROUNDING),
                    ("citationMetadata", _GEMINI_CITATIONS),
                    ("urlContextMetadata", _GEMINI_URL_CONTEXT),
                ):
                    if key in cand:
                        v = cand.pop(key)
                        v = _shaped(v, [shape]) if isinstance(v, list) else _shaped(v, shape)
                        if v is not _DROP:
                            cand[key] = v
            cands.append(cand)
        body["candidates"] = cands
    elif api == "anthropic" and isinstance(body.get("content"), list):
        blocks = []
        for block in body["content"]:
            if isinstance(block, Mapping):
                block = dict(block)
                if "citations" in block:
                    v = _shaped(block.pop("citations"), [_CITATION_ITEM])
                    if v is not _DROP:
                        block["citations"] = v
                if block.get("type") == "web_search_tool_result" and isinstance(block.get("content"), list):
                    block["content"] = _shaped(block["content"], [_CITATION_ITEM])
            blocks.append(block)
        body["content"] = blocks
    elif api == "openai" and isinstance(body.get("choices"), list):
        choices = []
        for choice in body["choices"]:
            if isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping):
                msg = dict(choice["message"])
                if "annotations" in msg:
                    v = _shaped(msg.pop("annotations"), [_OPENAI_ANNOTATION])
                    if v is not _DROP:
                        msg["annotations"] = v
                choice = {**choice, "message": msg}
            choices.append(choice)
        body["choices"] = choices
    return body


def _install_answer_cleaning() -> None:
    """Run :func:`clean_answer_citations` on each provider body where litellm starts converting it (its
    Gemini, Anthropic and OpenAI-compatible response converters). A converter litellm renamed is left
    as it is (tests/core/test_llm.py then fails on the null-grounding answers)."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.llms.base_llm.chat.transformation import BaseConfig
    from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import VertexGeminiConfig

    def wrap(cls: type, name: str, api: str, arg: str) -> None:
        fn = cls.__dict__.get(name)
        if fn is None or getattr(fn, "_leaf_cleaned", False):
            return

        @functools.wraps(fn)
        def cleaned(self, *args, **kwargs):
            if arg in kwargs:
                kwargs[arg] = clean_answer_citations(api, kwargs[arg])
            elif args:
                args = (clean_answer_citations(api, args[0]), *args[1:])
            return fn(self, *args, **kwargs)

        cleaned._leaf_cleaned = True  # type: ignore[attr-defined]
        setattr(cls, name, cleaned)

    wrap(
        VertexGeminiConfig,
        "_transform_google_generate_content_to_openai_model_response",
        "gemini",
        "completion_response",
    )
    wrap(AnthropicConfig, "transform_parsed_response", "anthropic", "completion_response")
    wrap(BaseConfig, "transform_parsed_response_dict", "openai", "parsed_response")


DESIGNS = ("single", "team", "plugin")
ROLES = (
    "single",
    "researcher",
    "verifier",
    "orchestrator",
    "analyst",
    "retriever",
    "checker",
    "forecaster",
    "rater",
)
NO_MODELS_MESSAGE = (
    "no LLM models configured: set LEAF_LIVE_LLM_MODELS, e.g. "
    "'openai/gpt-5-search-api@single,anthropic/claude-sonnet-4-5@team'"
)

# Anthropic's hosted web-search tool (Messages API), passed through litellm unchanged.
ANTHROPIC_WEB_SEARCH_TOOL = "web_search_20250305"


def utc_now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """One configured model: ``provider/model@design`` (DESIGN.md model_id convention).

    ``provider`` is litellm's provider prefix (``openai``, ``anthropic``, ``gemini``, ...); ``model`` the
    provider's model name; ``design`` ``single``, ``team`` (LiveMacroEval App. S.1) or ``plugin`` (the
    financial-analysis plug-in design of S.1/S.5: the model with data tools it calls).
    """

    provider: str
    model: str
    design: str = "single"
    api_base: str | None = None

    def __post_init__(self) -> None:
        if not self.provider or not self.model:
            raise SettingsError(f"model {self.provider}/{self.model}: provider and model must be non-empty")
        if self.design not in DESIGNS:
            raise SettingsError(
                f"model {self.provider}/{self.model}@{self.design}: design must be one of {DESIGNS}"
            )

    @property
    def litellm_model(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self.model}@{self.design}"

    @classmethod
    def parse(cls, text: str, api_base: str | None = None) -> ModelSpec:
        """Parse ``provider/model[@design]`` (design defaults to ``single``).

        Raises :class:`~leaf_live.core.settings.SettingsError` naming the text when it has no provider or an
        unknown design.
        """
        raw = text.strip()
        spec, _, design = raw.partition("@")
        provider, sep, model = spec.partition("/")
        if not sep or not provider or not model:
            raise SettingsError(
                f"LEAF_LIVE_LLM_MODELS entry {raw!r}: expected 'provider/model@design', e.g."
                " 'openai/gpt-5-search-api@single'"
            )
        design = design or "single"
        if design not in DESIGNS:
            raise SettingsError(f"LEAF_LIVE_LLM_MODELS entry {raw!r}: design {design!r} not in {DESIGNS}")
        return cls(provider.strip(), model.strip(), design, api_base)


@dataclass(frozen=True)
class LLMConfig:
    """Models and call-path limits (see the module table for the environment variables)."""

    models: tuple[ModelSpec, ...] = ()
    api_base: str | None = None
    rpm: float = 60.0
    max_concurrency: int = 8
    timeout_s: float = 300.0
    max_attempts: int = 5
    backoff_base_s: float = 2.0
    backoff_max_s: float = 60.0
    max_tokens: int = 8192
    web_search: bool = True
    search_context_size: str = "medium"  # OpenAI web_search_options
    max_searches: int = 5  # Anthropic web-search tool max_uses per call

    def __post_init__(self) -> None:
        for name, positive in (
            ("rpm", True),
            ("timeout_s", True),
            ("backoff_base_s", False),
            ("backoff_max_s", False),
        ):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and (v > 0 if positive else v >= 0)):
                raise SettingsError(
                    f"LLM setting {name}={v!r}: must be a finite number {'> 0' if positive else '>= 0'}"
                )
        for name in ("max_concurrency", "max_attempts", "max_tokens", "max_searches"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise SettingsError(f"LLM setting {name}={v!r}: must be an integer >= 1")
        if self.search_context_size not in ("low", "medium", "high"):
            raise SettingsError(
                f"LLM setting search_context_size={self.search_context_size!r}: low | medium | high"
            )

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_attempts, self.backoff_base_s, self.backoff_max_s)


def _env_number(env: Mapping[str, str], name: str, default: float, kind: type) -> Any:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return kind(raw.strip())
    except ValueError:
        raise SettingsError(
            f"{name}={raw!r}: expected {'an integer' if kind is int else 'a number'}"
        ) from None


def load_llm_config(env: Mapping[str, str]) -> LLMConfig:
    """Parse :class:`LLMConfig` from ``LEAF_LIVE_LLM_*`` variables (name -> text; absent = default; see the
    module table), e.g. ``leaf_live.core.settings.get_settings().llm`` or the ``llm`` resource's fields.

    Raises :class:`~leaf_live.core.settings.SettingsError` naming the variable and value on bad input.
    API keys are not read here (litellm reads the providers' own variables at call time).
    """
    api_base = (env.get("LEAF_LIVE_LLM_API_BASE") or "").strip() or None
    models_raw = env.get("LEAF_LIVE_LLM_MODELS", "")
    models = tuple(ModelSpec.parse(m) for m in models_raw.split(",") if m.strip())
    ids = [m.model_id for m in models]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SettingsError(f"LEAF_LIVE_LLM_MODELS={models_raw!r}: model ids listed twice: {dup}")
    web = (env.get("LEAF_LIVE_LLM_WEB_SEARCH") or "1").strip().lower()
    if web not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        raise SettingsError(f"LEAF_LIVE_LLM_WEB_SEARCH={web!r}: expected 1 or 0")
    try:
        return LLMConfig(
            models=models,
            api_base=api_base,
            rpm=_env_number(env, "LEAF_LIVE_LLM_RPM", 60.0, float),
            max_concurrency=_env_number(env, "LEAF_LIVE_LLM_CONCURRENCY", 8, int),
            timeout_s=_env_number(env, "LEAF_LIVE_LLM_TIMEOUT_S", 300.0, float),
            max_attempts=_env_number(env, "LEAF_LIVE_LLM_MAX_ATTEMPTS", 5, int),
            max_tokens=_env_number(env, "LEAF_LIVE_LLM_MAX_TOKENS", 8192, int),
            web_search=web in ("1", "true", "yes", "on"),
        )
    except SettingsError as exc:  # name the environment variable, not the field
        raise SettingsError(f"LEAF_LIVE_LLM_*: {exc}") from None


def no_models_message(config: LLMConfig) -> str | None:
    """``NO_MODELS_MESSAGE`` when no model is configured (the asset logs it and writes nothing), else None."""
    return None if config.models else NO_MODELS_MESSAGE


# ---------------------------------------------------------------------------------------------
# Secrets never leave the process
# ---------------------------------------------------------------------------------------------

# One rule for the whole project (leaf_live.core.redaction); the old name stays for callers.
redact_secrets = redact


def _safe_url(url: str | None) -> str | None:
    """Drop user info and query (which can carry tokens) from a base URL before it is stored."""
    if not url:
        return None
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# ---------------------------------------------------------------------------------------------
# Requests-per-minute limiter and retry policy
# ---------------------------------------------------------------------------------------------


class RateLimiter:
    """Requests-per-minute limit shared by concurrent callers (generic cell rate algorithm).

    Each :meth:`acquire` reserves the next start slot; slots are ``60 / rpm`` seconds apart, with up to
    ``burst`` starts allowed back to back. Sustained throughput is exactly ``rpm`` when callers keep it
    busy, and never above it over any window longer than ``burst`` slots. Reservation has no ``await``
    between read and write, so it needs no lock inside one event loop.
    """

    def __init__(
        self,
        rpm: float,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        if not (rpm > 0 and math.isfinite(rpm)):
            raise ValueError(f"rpm={rpm!r}: must be a positive finite number")
        if burst < 1:
            raise ValueError(f"burst={burst!r}: must be >= 1")
        self.interval = 60.0 / rpm
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tat: float | None = None  # theoretical arrival time of the next request

    def reserve(self) -> float:
        """Reserve a slot; return the seconds to wait before using it (0 if it is free now)."""
        now = self._clock()
        tat = now if self._tat is None else max(self._tat, now)
        allowed_at = tat - (self.burst - 1) * self.interval
        self._tat = tat + self.interval
        return max(0.0, allowed_at - now)

    async def acquire(self) -> float:
        wait = self.reserve()
        if wait > 0:
            await self._sleep(wait)
        return wait


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: attempt ``k`` (1-based) failing with a retryable error waits
    ``min(max_delay_s, base_delay_s * 2**(k-1))`` seconds, stretched by up to ``jitter`` (fraction), or the
    server's ``Retry-After`` when that is longer (capped at ``max_delay_s``)."""

    max_attempts: int = 5
    base_delay_s: float = 2.0
    max_delay_s: float = 60.0
    jitter: float = 0.25

    def delay(
        self, attempt: int, retry_after_s: float | None = None, rng: random.Random | None = None
    ) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        backoff *= 1.0 + self.jitter * (rng or random).random()
        if retry_after_s is not None and retry_after_s > 0:
            backoff = max(backoff, min(retry_after_s, self.max_delay_s))
        return min(backoff, self.max_delay_s) if self.max_delay_s > 0 else 0.0


@functools.cache
def _error_types() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(retryable, not retryable) exception classes; litellm's are looked up on first use."""
    lm = _litellm()
    retryable = (
        lm.Timeout,
        lm.RateLimitError,
        lm.InternalServerError,
        lm.ServiceUnavailableError,
        lm.BadGatewayError,
        lm.APIConnectionError,
        asyncio.TimeoutError,
        httpx.TransportError,
    )
    not_retryable = (
        lm.AuthenticationError,
        lm.PermissionDeniedError,
        lm.NotFoundError,
        lm.BadRequestError,  # includes context-window and content-policy errors
        lm.UnprocessableEntityError,
    )
    return retryable, not_retryable


def _status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if isinstance(code, int):
        return code
    resp = getattr(exc, "response", None)
    code = getattr(resp, "status_code", None)
    return code if isinstance(code, int) else None


# Causes litellm raises before or after the HTTP exchange with a made-up status (a missing key as HTTP 500, an
# unconvertible 200 answer as HTTP 500 or 422): recognised by their message, recorded by their real cause.
_MISSING_KEY = re.compile(
    r"missing credentials|api[_ ]key.{0,40}(?:not set|missing|must be set|required)", re.I
)
_CONVERSION = re.compile(
    r"error converting to valid response|returned a response with no 'choices'|unable to convert|"
    r"invalid response object",
    re.I,
)


def error_cause(exc: BaseException) -> str | None:
    """``"missing_key"`` when the call never left for want of a provider key, ``"conversion"`` when the
    provider answered (HTTP 200) but litellm could not convert the answer, else None (the HTTP status or
    transport failure is the cause)."""
    text = " ".join(str(e) for e in _cause_chain(exc))
    if _MISSING_KEY.search(text):
        return "missing_key"
    if _CONVERSION.search(text):
        return "conversion"
    return None


def is_retryable(exc: BaseException) -> bool:
    """True for timeouts, connection errors, HTTP 408/409/429 and 5xx (incl. Anthropic's 529); never for a
    missing provider key (:func:`error_cause`), which no retry can supply."""
    if error_cause(exc) == "missing_key":
        return False
    retryable, not_retryable = _error_types()
    if isinstance(exc, not_retryable) and not isinstance(exc, retryable):
        return False
    if isinstance(exc, retryable):
        return True
    code = _status_code(exc)
    return code is not None and (code in (408, 409, 429) or code >= 500)


def retry_after_seconds(exc: BaseException, now: datetime | None = None) -> float | None:
    """The server's ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms`` on an error, if any."""
    headers = None
    for attr in ("litellm_response_headers", "headers"):
        h = getattr(exc, attr, None)
        if h:
            headers = h
            break
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        get = headers.get
    except AttributeError:
        return None
    ms = get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    ra = get("retry-after")
    if not ra:
        return None
    try:
        return float(ra)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - (now or utc_now())).total_seconds())


# ---------------------------------------------------------------------------------------------
# Web search per provider and citations
# ---------------------------------------------------------------------------------------------


def _rfc3339(t: datetime) -> str:
    if t.tzinfo is None:
        raise ValueError(f"search window time {t!r} has no time zone; pass tz-aware UTC times")
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def web_search_params(
    spec: ModelSpec, config: LLMConfig, window: tuple[datetime, datetime] | None = None
) -> dict[str, Any]:
    """litellm keyword arguments that give ``spec`` its provider's hosted web search.

    * ``openai`` (search models such as ``gpt-5-search-api``): ``web_search_options`` (Chat Completions), only
      for models litellm lists as taking it (a plain ``gpt-5`` has no hosted search in Chat Completions, and
      search models take no function tools: the ``plugin`` design on OpenAI runs a non-search model);
    * ``anthropic``: the server tool ``{"type": "web_search_20250305", "name": "web_search", "max_uses": n}``;
    * ``gemini`` / ``vertex_ai``: Google Search grounding ``tools=[{"googleSearch": {}}]``; with ``window``
      (tz-aware start, end) the grounding is restricted to pages of that time range
      (``googleSearch.timeRangeFilter``, RFC 3339 UTC), the only provider search with a date filter; the
      others are restricted by the prompt alone (LEAF §3.2's time-restricted search).

    Other providers get no search tool (``{}``); LiveMacroEval §3.4 lets the agent decide when to search.
    Raises ``ValueError`` for a naive window time.
    """
    p = spec.provider
    if p in ("openai", "azure"):
        try:
            supported = _litellm().get_supported_openai_params(model=spec.model, custom_llm_provider=p) or []
        except Exception:  # an unknown model: send the option and let the provider answer
            supported = ["web_search_options"]
        if "web_search_options" not in supported:
            return {}
        return {"web_search_options": {"search_context_size": config.search_context_size}}
    if p == "anthropic":
        return {
            "tools": [
                {"type": ANTHROPIC_WEB_SEARCH_TOOL, "name": "web_search", "max_uses": config.max_searches}
            ]
        }
    if p in ("gemini", "vertex_ai"):
        if window is not None:
            return {
                "tools": [
                    {
                        "googleSearch": {
                            "timeRangeFilter": {
                                "startTime": _rfc3339(window[0]),
                                "endTime": _rfc3339(window[1]),
                            }
                        }
                    }
                ]
            }
        return {"tools": [{"googleSearch": {}}]}
    return {}


def extract_citations(response: Mapping[str, Any] | None) -> list[dict[str, str | None]]:
    """Cited sources in a litellm response dump, in order, each URL once: ``[{"url", "title"}]``.

    Reads OpenAI ``choices[].message.annotations`` (``url_citation``; Gemini grounding arrives in the same
    form through litellm), Anthropic text-block ``citations`` and ``web_search_tool_result`` results, which
    litellm keeps under ``message.provider_specific_fields``. Null or ill-typed fields count as no
    citations; never raises.
    """
    out: list[dict[str, str | None]] = []
    seen: set[str] = set()

    def add(url: Any, title: Any) -> None:
        if isinstance(url, str) and url.strip() and url not in seen:
            seen.add(url)
            out.append({"url": url, "title": title if isinstance(title, str) else None})

    def mapping(v: Any) -> Mapping[str, Any]:
        return v if isinstance(v, Mapping) else {}

    def items(v: Any) -> list[Any]:  # a null or non-list field is no citations, never an error
        return v if isinstance(v, list) else []

    for choice in items(mapping(response).get("choices")):
        msg = mapping(mapping(choice).get("message"))
        for ann in items(msg.get("annotations")):
            if isinstance(ann, Mapping) and ann.get("type") == "url_citation":
                uc = mapping(ann.get("url_citation"))
                add(uc.get("url"), uc.get("title"))
        psf = mapping(msg.get("provider_specific_fields"))
        for group in items(psf.get("citations")):
            for cit in group if isinstance(group, list) else [group]:
                if isinstance(cit, Mapping):
                    add(cit.get("url"), cit.get("title"))
        for block in items(psf.get("web_search_results")):
            for res in items(mapping(block).get("content")):
                if isinstance(res, Mapping):
                    add(res.get("url"), res.get("title"))
    return out


# ---------------------------------------------------------------------------------------------
# Call records
# ---------------------------------------------------------------------------------------------


def messages_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """Canonical JSON of a message list (sorted keys, no spaces): the bytes the prompt hash covers."""
    return json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def prompt_hash(messages: Sequence[Mapping[str, Any]]) -> str:
    """sha256 hex of :func:`messages_json` (the exact messages sent)."""
    return hashlib.sha256(messages_json(messages).encode("utf-8")).hexdigest()


@dataclass
class CallRecord:
    """One LLM call, success or final failure; one row of ``llm_calls``."""

    call_id: str
    run_id: str | None
    model_id: str
    model: str
    role: str
    prompt_group: str | None
    requested_at: datetime
    completed_at: datetime
    prompt_hash: str
    request_messages: str  # JSON
    request_params: str  # JSON, no secrets
    status: str  # ok | failed
    attempts: int
    latency_s: float
    response_json: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None


@dataclass
class CallResult:
    """A finished call: its record plus what the parser needs (content, finish reason, refusal, citations)."""

    record: CallRecord
    content: str | None = None
    refusal: str | None = None
    citations: list[dict[str, str | None]] = field(default_factory=list)
    response: dict[str, Any] | None = None
    tool_calls: list[dict[str, str]] = field(
        default_factory=list
    )  # [{"id", "name", "arguments" (JSON text)}]

    @property
    def ok(self) -> bool:
        return self.record.status == "ok"


@dataclass(frozen=True)
class CallRequest:
    """Arguments of one :meth:`LLMClient.complete` call (for :meth:`LLMClient.fan_out`)."""

    spec: ModelSpec
    messages: tuple[Mapping[str, Any], ...]
    role: str = "single"
    run_id: str | None = None
    prompt_group: str | None = None
    web_search: bool = True
    max_tokens: int | None = None
    search_window: tuple[datetime, datetime] | None = None


def _usage_int(usage: Mapping[str, Any], key: str) -> int | None:
    v = usage.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _cost(response: Any) -> float | None:
    """litellm's cost of a response in USD; None for models missing from litellm's price map."""
    try:
        c = _litellm().completion_cost(completion_response=response)
    except Exception:  # litellm raises plain Exception for unmapped models
        return None
    return float(c) if c is not None and math.isfinite(float(c)) else None


# Transport failures below HTTP. litellm wraps them in exceptions that carry a made-up status (a refused
# connection arrives as InternalServerError with a synthetic 500 response, a client timeout as 408), so the
# cause chain, not the status, says whether a server answered at all.
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    httpx.ConnectError,
    httpx.NetworkError,
)
_TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (
    asyncio.TimeoutError,
    TimeoutError,
    httpx.TimeoutException,
)


def _cause_chain(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(chain) < 16:
        chain.append(cur)
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return chain


def transport_failure(exc: BaseException) -> tuple[str, BaseException] | None:
    """``("connection error" | "timeout", the innermost such exception)`` when no HTTP answer came back
    (refused or reset connection, DNS failure, connect/read timeout) anywhere in ``exc``'s cause chain,
    else None. A real HTTP status from a server is never classified here."""
    chain = _cause_chain(exc)
    for kind, types in (("connection error", _CONNECTION_ERRORS), ("timeout", _TIMEOUT_ERRORS)):
        hits = [e for e in chain if isinstance(e, types)]
        if hits:
            return kind, hits[-1]
    if isinstance(exc, _litellm().APIConnectionError):  # litellm's own connection class without a cause
        return "connection error", exc
    return None


def _error_text(exc: BaseException, provider: str | None = None) -> str:
    """``Type (HTTP code): message`` for an HTTP answer; ``Type (connection error: Root): message`` or
    ``Type (timeout: Root)`` when none came back, so a refused connection is never recorded as HTTP 500;
    ``missing_key: OPENAI_API_KEY is not set ...`` and ``conversion failure: ...`` for the causes litellm
    reports with a made-up status (:func:`error_cause`)."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    failure = transport_failure(exc)
    if failure is not None:
        kind, root = failure
        if not msg:
            msg = str(root).strip() or (
                "attempt exceeded the wall-clock timeout" if kind == "timeout" else ""
            )
        label = f"{kind}: {type(root).__name__}" if root is not exc else kind
        text = f"{type(exc).__name__} ({label})" + (f": {msg}" if msg else "")
    elif (cause := error_cause(exc)) == "missing_key":
        name = key_variable(provider) if provider else None
        need = f"{name} is not set" if name else "the provider's API key is not set"
        text = f"missing_key: {need} (no request sent): {msg}"
    elif cause == "conversion":
        text = f"conversion failure: the provider answered but the answer could not be converted: {msg}"
    else:
        code = _status_code(exc)
        text = f"{type(exc).__name__}" + (f" (HTTP {code})" if code else "") + (f": {msg}" if msg else "")
    return redact(text[:1000]) or ""


def replay_key(model_id: str, role: str, prompt_group: str | None, prompt_sha: str) -> tuple:
    """What makes a stored call the answer to a new request (:class:`LLMClient` ``replay``)."""
    return (model_id, role, prompt_group, prompt_sha)


def _fill_result(result: CallResult, dump: Mapping[str, Any]) -> None:
    """The parser's fields of ``result`` (content, refusal, citations, tool calls, finish reason) from a
    response dump (litellm's OpenAI-format ``model_dump``; a live answer or a stored ``response_json``)."""
    choices = dump.get("choices") or []
    first = choices[0] if choices else {}
    msg = first.get("message") or {}
    result.record.finish_reason = first.get("finish_reason")
    content = msg.get("content")
    result.content = content if isinstance(content, str) else None
    refusal = msg.get("refusal")
    result.refusal = refusal if isinstance(refusal, str) and refusal.strip() else None
    result.citations = extract_citations(dump)
    result.response = dict(dump)
    for tc in msg.get("tool_calls") or []:
        fn = (tc or {}).get("function") or {}
        if fn.get("name"):
            args = fn.get("arguments")
            result.tool_calls.append(
                {
                    "id": str(tc.get("id") or ""),
                    "name": str(fn["name"]),
                    "arguments": args if isinstance(args, str) else json.dumps(args or {}),
                }
            )


def token_prices(litellm_model: str) -> tuple[float, float] | None:
    """(USD per input token, USD per output token) of ``litellm_model`` (``provider/model``) from litellm's
    price table (``litellm.model_cost``, the bundled copy: ``LITELLM_LOCAL_MODEL_COST_MAP``), the prices
    :func:`_cost` charges a stored call with; None for a model the table does not price."""
    lm = _litellm()
    try:
        cin, _ = lm.cost_per_token(model=litellm_model, prompt_tokens=1, completion_tokens=0)
        _, cout = lm.cost_per_token(model=litellm_model, prompt_tokens=0, completion_tokens=1)
    except Exception:  # litellm raises plain Exception / BadRequestError for an unmapped model
        return None
    return float(cin), float(cout)


def token_cost(litellm_model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD of one call of ``litellm_model`` with these token counts, by litellm's ``cost_per_token`` (the
    price table :func:`_cost` uses for a stored call); None for an unpriced model."""
    try:
        cin, cout = _litellm().cost_per_token(
            model=litellm_model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:
        return None
    return float(cin) + float(cout)


def records_from_frame(frame: pl.DataFrame) -> list[CallRecord]:
    """``llm_calls`` rows back as :class:`CallRecord` objects (for :class:`LLMClient` ``replay``)."""
    return [CallRecord(**{f: r[f] for f in LLM_CALL_FIELDS}) for r in frame.iter_rows(named=True)]


# the environment variable litellm reads each provider's key from
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
}


def key_variable(provider: str) -> str | None:
    """The environment variable holding ``provider``'s API key (None for a provider not listed)."""
    return KEY_VARIABLES.get(provider)


class LLMClient:
    """The single LLM call path: one client per run (the ``llm`` resource holds it), shared by every model
    call of that run, so the RPM limit and the concurrency bound hold across them.

    ``complete`` never raises for provider or network errors: it returns a :class:`CallResult` whose
    record has ``status='failed'`` and the last error after ``config.max_attempts`` attempts.

    ``replay``: stored ``ok`` records (``llm_calls`` rows, :func:`records_from_frame`) answered again instead
    of calling the provider: a request whose (model_id, role, prompt_group, prompt hash) matches takes the
    oldest unused such record, its call id, timestamps, usage and cost unchanged (identical requests, e.g. the
    trials of a forecast, take one record each), so a rerun after an interruption makes only the calls that
    were not stored. ``budget_usd``: once the cost of the calls this client made (``spent_usd``, USD from
    litellm's price map) reaches it, a further call is not made and returns a failed record with
    ``attempts=0`` and the reason; calls already in flight finish, so the overshoot is at most
    ``max_concurrency`` calls.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        retry: RetryPolicy | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Any] = asyncio.sleep,
        rng: random.Random | None = None,
        replay: Iterable[CallRecord] = (),
        budget_usd: float | None = None,
    ) -> None:
        self.config = config
        self.retry = retry or config.retry
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._limiters: dict[str, RateLimiter] = {}
        self.records: list[CallRecord] = []
        if budget_usd is not None and not (math.isfinite(budget_usd) and budget_usd >= 0):
            raise ValueError(f"budget_usd={budget_usd!r}: must be a finite number >= 0")
        self.budget_usd = budget_usd
        self.spent_usd = 0.0  # cost of the calls this client made (replayed answers cost nothing)
        self.replayed = 0
        self._replay: dict[tuple, list[CallRecord]] = {}
        for r in sorted(replay, key=lambda r: (r.requested_at, r.call_id)):
            if r.status == "ok" and r.response_json is not None:
                self._replay.setdefault(
                    replay_key(r.model_id, r.role, r.prompt_group, r.prompt_hash), []
                ).append(r)

    def _slots(self) -> asyncio.Semaphore:
        """The concurrency bound of the running event loop (a client serves a whole run, which may drive
        several loops one after another; the RPM limiters are loop-free and shared by all of them)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._semaphore is None:
            self._loop, self._semaphore = loop, asyncio.Semaphore(self.config.max_concurrency)
        return self._semaphore

    def limiter(self, spec: ModelSpec) -> RateLimiter:
        """The RPM limiter of one model (shared by all its concurrent calls)."""
        key = spec.litellm_model
        if key not in self._limiters:
            self._limiters[key] = RateLimiter(self.config.rpm, sleep=self._sleep)
        return self._limiters[key]

    def request_kwargs(
        self,
        spec: ModelSpec,
        web_search: bool,
        max_tokens: int | None = None,
        search_window: tuple[datetime, datetime] | None = None,
    ) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": spec.litellm_model,
            "max_tokens": self.config.max_tokens if max_tokens is None else max_tokens,
            "timeout": self.config.timeout_s,
            "max_retries": 0,  # retries happen here, once, with our backoff and records
            "num_retries": 0,
        }
        base = spec.api_base or self.config.api_base
        if base:
            kw["api_base"] = base
        if web_search and self.config.web_search:
            kw.update(web_search_params(spec, self.config, search_window))
        return kw

    async def complete(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, Any]],
        *,
        role: str = "single",
        run_id: str | None = None,
        prompt_group: str | None = None,
        web_search: bool = True,
        max_tokens: int | None = None,
        search_window: tuple[datetime, datetime] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> CallResult:
        """Call ``spec`` with ``messages`` (OpenAI chat format), retrying retryable failures.

        ``tools``: function tools in OpenAI format (``{"type": "function", "function": {...}}``), added to the
        provider's web-search tool; the function calls the model asks for come back in
        ``CallResult.tool_calls`` (litellm translates every provider's tool-use blocks to this form).
        Each attempt waits for a concurrency slot and the model's RPM slot, then runs under a wall-clock
        limit of ``config.timeout_s``. ``max_tokens`` overrides ``config.max_tokens`` for this call (LEAF
        §4.1's 4,096-token forecasting budget); ``search_window`` restricts a provider search that supports
        a date filter (:func:`web_search_params`). Returns a :class:`CallResult`; the record is also appended
        to ``self.records``. Raises only ``ValueError`` for an unknown ``role``, a ``max_tokens`` below 1 or a
        naive window (programming errors).
        """
        if role not in ROLES:
            raise ValueError(f"role={role!r}: expected one of {ROLES}")
        if max_tokens is not None and not (isinstance(max_tokens, int) and max_tokens >= 1):
            raise ValueError(f"max_tokens={max_tokens!r}: must be an integer >= 1")
        msgs = [dict(m) for m in messages]
        kwargs = self.request_kwargs(spec, web_search, max_tokens, search_window)
        if tools:
            kwargs["tools"] = [*kwargs.get("tools", []), *(dict(t) for t in tools)]
        params_doc = {k: v for k, v in kwargs.items() if k not in ("api_base", "max_retries", "num_retries")}
        params_doc["api_base"] = _safe_url(kwargs.get("api_base"))
        key = replay_key(spec.model_id, role, prompt_group, prompt_hash(msgs))
        stored = self._replay.get(key)
        if stored:
            record = stored.pop(0)
            result = CallResult(record=record)
            _fill_result(result, json.loads(record.response_json or "{}"))
            self.replayed += 1
            self.records.append(record)
            return result
        call_id = uuid.uuid4().hex
        requested_at = self._clock()
        t0 = time.monotonic()
        attempts = 0
        last_exc: BaseException | None = None
        response: Any = None
        over_budget: str | None = None
        while attempts < self.retry.max_attempts:
            try:
                async with self._slots():
                    if self.budget_usd is not None and self.spent_usd >= self.budget_usd:
                        over_budget = (
                            f"not called: budget reached ({self.spent_usd:.6f} USD spent of"
                            f" {self.budget_usd:.6f})"
                        )
                        break
                    attempts += 1
                    await self.limiter(spec).acquire()
                    response = await asyncio.wait_for(
                        _litellm().acompletion(messages=msgs, **kwargs), timeout=self.config.timeout_s
                    )
                last_exc = None
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # every provider/network error is recorded, never raised
                last_exc = exc
                if not is_retryable(exc) or attempts >= self.retry.max_attempts:
                    break
                await self._sleep(self.retry.delay(attempts, retry_after_seconds(exc), self._rng))
        completed_at = self._clock()
        record = CallRecord(
            call_id=call_id,
            run_id=run_id,
            model_id=spec.model_id,
            model=spec.litellm_model,
            role=role,
            prompt_group=prompt_group,
            requested_at=requested_at,
            completed_at=completed_at,
            prompt_hash=prompt_hash(msgs),
            request_messages=messages_json(msgs),
            request_params=json.dumps(params_doc, sort_keys=True, default=str),
            status="failed" if last_exc is not None or over_budget is not None else "ok",
            attempts=attempts,
            latency_s=time.monotonic() - t0,
        )
        result = CallResult(record=record)
        if over_budget is not None:
            record.status, record.error = "failed", over_budget
        elif last_exc is not None:
            record.error = _error_text(last_exc, spec.provider)
        else:
            dump = response.model_dump() if hasattr(response, "model_dump") else dict(response)
            record.response_json = redact(json.dumps(dump, default=str, ensure_ascii=False))
            record.response_model = dump.get("model")
            usage = dump.get("usage") or {}
            record.prompt_tokens = _usage_int(usage, "prompt_tokens")
            record.completion_tokens = _usage_int(usage, "completion_tokens")
            record.total_tokens = _usage_int(usage, "total_tokens")
            record.cost_usd = _cost(response)
            self.spent_usd += record.cost_usd or 0.0
            _fill_result(result, dump)
        self.records.append(record)
        return result

    async def complete_request(self, request: CallRequest) -> CallResult:
        return await self.complete(
            request.spec,
            request.messages,
            role=request.role,
            run_id=request.run_id,
            prompt_group=request.prompt_group,
            web_search=request.web_search,
            max_tokens=request.max_tokens,
            search_window=request.search_window,
        )

    async def fan_out(self, requests: Iterable[CallRequest]) -> list[CallResult]:
        """Run many calls concurrently (bounded by ``max_concurrency`` and each model's RPM); results in
        request order."""
        return list(await asyncio.gather(*(self.complete_request(r) for r in requests)))


# ---------------------------------------------------------------------------------------------
# llm_calls frame
# ---------------------------------------------------------------------------------------------

# The table of call records, shared by both tracks: defined here once and registered by each track's schema
# module (the registry accepts the same definition twice), so README order follows the tracks.
LLM_CALLS = Table(
    name="llm_calls",
    doc=(
        "Every LLM call (success or final failure) with its exact request, raw response, usage and cost, so"
        " answers (nowcasts, retrieved events, fact-checks, event-track forecasts) can be re-parsed and"
        " re-scored without calling a model again (DESIGN.md principle 6). API keys are never stored. The raw"
        " response is litellm's OpenAI-format dump (Anthropic blocks under provider_specific_fields)."
    ),
    grain="one row per call_id",
    columns=(
        _PARTITION_KEY,
        col(
            "call_id",
            "VARCHAR",
            "unique id of the call (nowcasts.raw_response_id, retrieved_events.call_id, fact_checks.call_id,"
            " leaf_forecast_trials.call_id)",
            False,
        ),
        col(
            "run_id",
            "VARCHAR",
            "id shared by the calls of one unit of work (a nowcast: model x prompt group x hour, team = 3"
            " calls; a retrieval: target x interval, one call per round)",
        ),
        col("model_id", "VARCHAR", "provider/model@design", False),
        col("model", "VARCHAR", "litellm model string provider/model", False),
        col(
            "role",
            "VARCHAR",
            "single | researcher | verifier | orchestrator (LiveMacroEval App. S.1) | analyst (plug-in"
            " design, one row per tool round, S.5); retriever | checker | forecaster | rater (LEAF §3.2);"
            " agent (a team's registered endpoint called by the submission service)",
            False,
        ),
        col(
            "prompt_group",
            "VARCHAR",
            "macro: output_core | demand_sectoral (App. D); event: retrieval round, fact-check, forecast"
            " kind",
        ),
        col("requested_at", "TIMESTAMPTZ", "first attempt started, UTC", False),
        col("completed_at", "TIMESTAMPTZ", "final answer or final failure, UTC", False),
        col("prompt_hash", "VARCHAR", "sha256 of the canonical JSON of the request messages", False),
        col("request_messages", "VARCHAR", "JSON list of the messages sent", False),
        col(
            "request_params",
            "VARCHAR",
            "JSON of model, max_tokens, timeout, web-search options (no secrets)",
            False,
        ),
        col("response_json", "VARCHAR", "raw response JSON (NULL when the call failed)"),
        col("response_model", "VARCHAR", "model name the provider reported"),
        col("finish_reason", "VARCHAR", "stop | length | content_filter | tool_calls ..."),
        col("status", "VARCHAR", "ok | failed (after the last attempt)", False),
        col(
            "error",
            "VARCHAR",
            "last error type, HTTP status (or 'connection error' / 'timeout' when no HTTP "
            "answer came back) and message, secrets redacted (NULL when ok)",
        ),
        col("attempts", "INTEGER", "attempts made (1 = no retry)", False),
        col("latency_s", "DOUBLE", "seconds from first attempt to final outcome, incl. backoff", False),
        col("prompt_tokens", "INTEGER", "tokens in"),
        col("completion_tokens", "INTEGER", "tokens out"),
        col("total_tokens", "INTEGER", "tokens in + out as the provider reported"),
        col("cost_usd", "DOUBLE", "USD from litellm's price map (NULL for unmapped models or failed calls)"),
        _AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("call_id",),
)

LLM_CALL_FIELDS = (
    "call_id",
    "run_id",
    "model_id",
    "model",
    "role",
    "prompt_group",
    "requested_at",
    "completed_at",
    "prompt_hash",
    "request_messages",
    "request_params",
    "response_json",
    "response_model",
    "finish_reason",
    "status",
    "error",
    "attempts",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
)


def llm_calls_frame(records: Iterable[CallRecord], partition_key: str) -> pl.DataFrame:
    """Call records as a frame conforming to the ``llm_calls`` table (``available_at`` = completion time).

    Raises :class:`~leaf_live.core.storage.StorageError` if a record does not fit the schema.
    """
    rows = []
    for r in records:
        row = {f: getattr(r, f) for f in LLM_CALL_FIELDS}
        row["partition_key"] = partition_key
        row["available_at"] = r.completed_at
        rows.append(row)
    schema = polars_schema("llm_calls")
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return conform("llm_calls", frame)


__all__ = [
    "ANTHROPIC_WEB_SEARCH_TOOL",
    "LLM_CALLS",
    "CallRecord",
    "CallRequest",
    "CallResult",
    "DESIGNS",
    "LLMClient",
    "LLMConfig",
    "ModelSpec",
    "NO_MODELS_MESSAGE",
    "RateLimiter",
    "RetryPolicy",
    "extract_citations",
    "is_retryable",
    "llm_calls_frame",
    "load_llm_config",
    "messages_json",
    "no_models_message",
    "prompt_hash",
    "records_from_frame",
    "redact_secrets",
    "replay_key",
    "token_cost",
    "token_prices",
    "transport_failure",
    "retry_after_seconds",
    "web_search_params",
]
