"""The LLM call path: configuration, RPM limiter, backoff, retries against a failing or slow local server
(real litellm over real HTTP on 127.0.0.1), failure records, secrets never stored."""

from __future__ import annotations

import asyncio
import json
import random
import re
import socket
from datetime import UTC, date, datetime

import polars as pl
import pytest
from llm_wire_server import (  # noqa: F401 (fixtures)
    WireReply,
    WireRequest,
    anthropic_error,
    anthropic_message,
    gemini_generate_content,
    openai_chat_completion,
    openai_error,
    provider_env,
    reply_ok,
    wire_server,
)

from leaf_live.core.llm import (
    clean_answer_citations,
    extract_citations,
    is_retryable,
    llm_calls_frame,
    redact_secrets,
    retry_after_seconds,
    web_search_params,
)
from leaf_live.core.settings import SettingsError
from leaf_live.macro.agents import (
    LLMClient,
    LLMConfig,
    ModelSpec,
    RateLimiter,
    RetryPolicy,
    hour_targets,
    load_llm_config,
)
from leaf_live.macro.agents.nowcast_agent import run_nowcast_hour_sync
from leaf_live.macro.catalog import get_indicator, indicators_in_group

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def cfg(server_url: str, **kw) -> LLMConfig:
    base = dict(
        api_base=server_url,
        rpm=60000,
        max_concurrency=8,
        timeout_s=5.0,
        max_attempts=3,
        backoff_base_s=0.01,
        backoff_max_s=1.0,
        max_tokens=500,
    )
    base.update(kw)
    return LLMConfig(**base)


def call(config: LLMConfig, model: str = "openai/gpt-5-search-api@single"):
    async def go():
        client = LLMClient(
            config, retry=RetryPolicy(config.max_attempts, config.backoff_base_s, config.backoff_max_s, 0.0)
        )
        return await client.complete(ModelSpec.parse(model), MSGS, prompt_group="output_core")

    return asyncio.run(go())


def sequence(*replies):
    """Responder that plays ``replies`` in order (the last one repeats); each is a WireReply or a content
    string to answer with in the request's wire format."""
    state = {"i": 0}

    def responder(req: WireRequest) -> WireReply:
        r = replies[min(state["i"], len(replies) - 1)]
        state["i"] += 1
        return r if isinstance(r, WireReply) else reply_ok(req, r)

    return responder


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def test_config_from_environment():
    c = load_llm_config(
        {
            "LEAF_LIVE_LLM_MODELS": (
                "openai/gpt-5-search-api@single, anthropic/claude-sonnet-4-5@team,gemini/gemini-2.5-pro"
            ),
            "LEAF_LIVE_LLM_API_BASE": "http://127.0.0.1:9999",
            "LEAF_LIVE_LLM_RPM": "120",
            "LEAF_LIVE_LLM_WEB_SEARCH": "0",
        }
    )
    assert [m.model_id for m in c.models] == [
        "openai/gpt-5-search-api@single",
        "anthropic/claude-sonnet-4-5@team",
        "gemini/gemini-2.5-pro@single",
    ]
    assert [m.litellm_model for m in c.models][1] == "anthropic/claude-sonnet-4-5"
    assert c.api_base == "http://127.0.0.1:9999" and c.rpm == 120.0 and c.web_search is False
    assert load_llm_config({}).models == ()


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"LEAF_LIVE_LLM_MODELS": "gpt-5"}, "'gpt-5'"),
        ({"LEAF_LIVE_LLM_MODELS": "openai/gpt-5@swarm"}, "'swarm'"),
        ({"LEAF_LIVE_LLM_MODELS": "openai/gpt-5,openai/gpt-5@single"}, "listed twice"),
        ({"LEAF_LIVE_LLM_RPM": "fast"}, "LEAF_LIVE_LLM_RPM='fast'"),
        ({"LEAF_LIVE_LLM_RPM": "0"}, "rpm=0.0: must be a finite number > 0"),
        ({"LEAF_LIVE_LLM_MAX_ATTEMPTS": "0"}, "max_attempts=0"),
        ({"LEAF_LIVE_LLM_WEB_SEARCH": "maybe"}, "LEAF_LIVE_LLM_WEB_SEARCH='maybe'"),
    ],
)
def test_bad_config_names_variable_and_value(env, needle):
    with pytest.raises(SettingsError, match=None) as exc:
        load_llm_config(env)
    assert needle in str(exc.value)


def test_web_search_params_per_provider():
    c = LLMConfig(search_context_size="high", max_searches=7)
    assert web_search_params(ModelSpec("openai", "gpt-5-search-api"), c) == {
        "web_search_options": {"search_context_size": "high"}
    }
    assert web_search_params(ModelSpec("anthropic", "claude-sonnet-4-5"), c) == {
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 7}]
    }
    assert web_search_params(ModelSpec("gemini", "gemini-2.5-pro"), c) == {"tools": [{"googleSearch": {}}]}
    assert web_search_params(ModelSpec("ollama", "qwen3"), c) == {}
    off = LLMClient.__new__(LLMClient)
    off.config = LLMConfig(web_search=False)
    assert "tools" not in off.request_kwargs(ModelSpec("anthropic", "claude-sonnet-4-5"), True)


def test_extract_citations_all_provider_shapes():
    dump = {
        "choices": [
            {
                "message": {
                    # OpenAI search models; Gemini grounding arrives in this shape through litellm
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url_citation": {"url": "https://www.bls.gov/cpi", "title": "CPI"},
                        },
                        {
                            "type": "url_citation",
                            "url_citation": {"url": "https://www.bls.gov/cpi", "title": "dup"},
                        },
                    ],
                    "provider_specific_fields": {  # Anthropic, as litellm surfaces it
                        "citations": [
                            [
                                {
                                    "type": "web_search_result_location",
                                    "url": "https://www.bea.gov/gdp",
                                    "title": "GDP",
                                }
                            ]
                        ],
                        "web_search_results": [
                            {
                                "type": "web_search_tool_result",
                                "content": [
                                    {
                                        "type": "web_search_result",
                                        "url": "https://www.census.gov/nrc",
                                        "title": "NRC",
                                    },
                                    {
                                        "type": "web_search_result",
                                        "url": "https://www.bea.gov/gdp",
                                        "title": "GDP again",
                                    },
                                ],
                            }
                        ],
                    },
                }
            }
        ]
    }
    assert extract_citations(dump) == [
        {"url": "https://www.bls.gov/cpi", "title": "CPI"},
        {"url": "https://www.bea.gov/gdp", "title": "GDP"},
        {"url": "https://www.census.gov/nrc", "title": "NRC"},
    ]
    assert extract_citations(None) == [] and extract_citations({"choices": []}) == []


# ---------------------------------------------------------------------------------------------
# Limiter and backoff (deterministic clocks)
# ---------------------------------------------------------------------------------------------


def test_rate_limiter_spaces_starts_at_rpm():
    now = [100.0]
    waits = []

    async def fake_sleep(s):
        waits.append(s)

    lim = RateLimiter(rpm=600, clock=lambda: now[0], sleep=fake_sleep)
    starts = []
    for _ in range(5):  # five callers arriving together
        starts.append(now[0] + lim.reserve())
    assert starts == pytest.approx([100.0, 100.1, 100.2, 100.3, 100.4])
    now[0] = 200.0  # idle for long: no credit is banked beyond the burst
    assert lim.reserve() == 0.0 and lim.reserve() == pytest.approx(0.1)
    burst = RateLimiter(rpm=60, burst=3, clock=lambda: 0.0)
    assert [burst.reserve() for _ in range(5)] == pytest.approx([0.0, 0.0, 0.0, 1.0, 2.0])
    asyncio.run(lim.acquire())
    assert waits == [pytest.approx(0.2)]
    with pytest.raises(ValueError, match="rpm=0"):
        RateLimiter(0)


def test_backoff_is_exponential_capped_and_honours_retry_after():
    p = RetryPolicy(max_attempts=6, base_delay_s=2.0, max_delay_s=30.0, jitter=0.0)
    assert [p.delay(k) for k in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert p.delay(1, retry_after_s=12.5) == 12.5 and p.delay(1, retry_after_s=600) == 30.0
    j = RetryPolicy(base_delay_s=1.0, max_delay_s=100.0, jitter=0.25)
    ds = [j.delay(3, rng=random.Random(s)) for s in range(50)]
    assert all(4.0 <= d <= 5.0 for d in ds) and len(set(ds)) > 1


# ---------------------------------------------------------------------------------------------
# Retries over real HTTP
# ---------------------------------------------------------------------------------------------


def test_500s_then_success_is_retried(wire_server, provider_env):
    wire_server.reset(sequence(openai_error(500, "boom"), openai_error(503, "unavailable"), '{"ok": 1}'))
    res = call(cfg(wire_server.url))
    assert res.ok and res.record.attempts == 3 and res.content == '{"ok": 1}'
    assert len(wire_server.requests) == 3 and res.record.error is None


def test_429_retry_after_is_honoured(wire_server, provider_env):
    wire_server.reset(
        sequence(openai_error(429, "rate limited", "rate_limit_error", {"Retry-After": "0.4"}), '{"ok": 1}')
    )
    res = call(cfg(wire_server.url))
    assert res.ok and res.record.attempts == 2
    first, second = wire_server.requests
    # backoff alone would be 0.01 s: only the server's Retry-After explains the gap
    assert second.received_at - first.received_at >= 0.38


def test_persistent_500_becomes_a_recorded_failure(wire_server, provider_env):
    wire_server.reset(sequence(openai_error(500, "internal error")))
    nowcasts, calls = run_nowcast_hour_sync(
        hour_targets(date(2026, 3, 1))[:1],
        partition_key="2026-04-09-14:00",
        models=[ModelSpec.parse("openai/gpt-5-search-api@single")],
        config=cfg(wire_server.url),
    )
    assert len(wire_server.requests) == 3  # max_attempts
    row = calls.row(0, named=True)
    assert calls.height == 1 and row["status"] == "failed" and row["attempts"] == 3
    assert "InternalServerError (HTTP 500)" in row["error"] and row["response_json"] is None
    assert row["cost_usd"] is None and row["prompt_tokens"] is None
    assert nowcasts.height == 9 and not nowcasts["valid"].any()
    assert nowcasts["invalid_reason"].str.starts_with("call_failed: InternalServerError (HTTP 500)").all()
    assert set(nowcasts["raw_response_id"]) == {row["call_id"]}


def test_slow_server_times_out_and_is_retried(wire_server, provider_env):
    wire_server.reset(sequence(WireReply(200, None, delay_s=1.0)))
    res = call(cfg(wire_server.url, timeout_s=0.3))
    assert not res.ok and res.record.attempts == 3 and len(wire_server.requests) == 3
    assert "Timeout" in res.record.error
    assert res.record.latency_s < 3.0  # each attempt was cut at 0.3 s, not at the server's 1 s


def test_slow_then_fast_recovers(wire_server, provider_env):
    wire_server.reset(sequence(WireReply(200, None, delay_s=1.0), '{"ok": 2}'))
    res = call(cfg(wire_server.url, timeout_s=0.3))
    assert res.ok and res.record.attempts == 2 and res.content == '{"ok": 2}'


def test_anthropic_overloaded_529_is_retried(wire_server, provider_env):
    wire_server.reset(sequence(anthropic_error(529, "overloaded_error", "Overloaded"), '{"ok": 3}'))
    res = call(cfg(wire_server.url), "anthropic/claude-sonnet-4-5@single")
    assert res.ok and res.record.attempts == 2 and res.content == '{"ok": 3}'
    assert [r.api for r in wire_server.requests] == ["anthropic", "anthropic"]


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(wire_server, provider_env, status):
    wire_server.reset(sequence(openai_error(status, "bad request", "invalid_request_error")))
    res = call(cfg(wire_server.url))
    assert not res.ok and res.record.attempts == 1 and len(wire_server.requests) == 1
    assert f"(HTTP {status})" in res.record.error


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-5-search-api@single", "anthropic/claude-sonnet-4-5@single", "gemini/gemini-2.5-pro@single"],
)
def test_connection_refused_is_retried_then_recorded_as_connection_error(provider_env, model):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = call(cfg(f"http://127.0.0.1:{port}"), model)
    assert not res.ok and res.record.attempts == 3
    # litellm wraps a refused connection in InternalServerError/APIConnectionError with a made-up status 500;
    # the record says what happened instead: no server answered.
    assert "(connection error: ConnectionRefusedError)" in res.record.error, res.record.error
    # (the port may itself contain "500", e.g. 50059: look for the status, not the digits)
    assert "HTTP" not in res.record.error.split(":")[0] and not re.search(
        r"\b500\b", res.record.error.replace(str(port), "<port>")
    )


def test_a_real_http_500_is_still_recorded_as_http_500(wire_server, provider_env):
    wire_server.reset(sequence(openai_error(500, "upstream exploded", "server_error")))
    res = call(cfg(wire_server.url, max_attempts=1))
    assert not res.ok and "(HTTP 500)" in res.record.error and "connection error" not in res.record.error


@pytest.mark.parametrize("model", ["openai/gpt-5-search-api@single", "anthropic/claude-sonnet-4-5@single"])
@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", {"unexpected": True}])
def test_garbage_200_bodies_become_recorded_failures(wire_server, provider_env, model, body):
    wire_server.reset(sequence(WireReply(200, body)))
    nowcasts, calls = run_nowcast_hour_sync(
        hour_targets(date(2026, 3, 1))[1:],
        partition_key="2026-04-09-14:00",
        models=[ModelSpec.parse(model)],
        config=cfg(wire_server.url),
    )
    assert calls["status"].to_list() == ["failed"] and calls["attempts"].to_list() == [3]
    assert nowcasts.height == 7 and nowcasts["invalid_reason"].str.starts_with("call_failed:").all()


def test_openai_answer_without_choices_is_an_empty_response(wire_server, provider_env):
    wire_server.reset(
        sequence(
            WireReply(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "gpt-5-search-api",
                    "choices": [],
                },
            )
        )
    )
    nowcasts, calls = run_nowcast_hour_sync(
        hour_targets(date(2026, 3, 1))[1:],
        partition_key="2026-04-09-14:00",
        models=[ModelSpec.parse("openai/gpt-5-search-api@single")],
        config=cfg(wire_server.url),
    )
    assert calls["status"].to_list() == ["ok"]
    assert nowcasts["invalid_reason"].str.starts_with("empty_response:").all()


def test_retryable_classification_and_retry_after_parsing():
    import httpx
    import litellm

    def resp(code, headers=None):
        return httpx.Response(
            code, headers=headers or {}, request=httpx.Request("POST", "http://127.0.0.1/x")
        )

    rl = litellm.RateLimitError("slow", "openai", "m", response=resp(429, {"retry-after": "7"}))
    assert is_retryable(rl) and retry_after_seconds(rl) == 7.0
    ms = litellm.RateLimitError("slow", "openai", "m", response=resp(429, {"retry-after-ms": "250"}))
    assert retry_after_seconds(ms) == 0.25
    dated = litellm.RateLimitError(
        "slow", "openai", "m", response=resp(429, {"retry-after": "Thu, 09 Apr 2026 14:00:30 GMT"})
    )
    assert retry_after_seconds(dated, now=datetime(2026, 4, 9, 14, 0, 0, tzinfo=UTC)) == 30.0
    assert is_retryable(TimeoutError()) and is_retryable(litellm.Timeout("t", "m", "openai"))
    assert not is_retryable(litellm.AuthenticationError("no", "openai", "m"))
    assert not is_retryable(litellm.ContextWindowExceededError("long", "m", "openai"))
    assert not is_retryable(ValueError("bug"))


# ---------------------------------------------------------------------------------------------
# Secrets and records
# ---------------------------------------------------------------------------------------------


def test_keys_never_stored_even_when_the_server_echoes_them(wire_server, provider_env):
    wire_server.reset(
        sequence(
            openai_error(401, "Incorrect API key provided: sk-test-local-0000000000", "invalid_request_error")
        )
    )
    res = call(cfg(wire_server.url))
    assert not res.ok and "sk-test-local" not in res.record.error and "***" in res.record.error
    frame = llm_calls_frame([res.record], "2026-04-09-14:00")
    assert not any("sk-test-local" in str(v) for v in frame.row(0))
    assert redact_secrets("Bearer abcdefghijklmnop and sk-proj-AbC123456789") == "Bearer *** and ***"
    prose = "risk-adjusted view from the task-force: sk-ew is low"
    assert redact_secrets(prose) == prose


def test_concurrent_fan_out_respects_rpm(wire_server, provider_env):
    """12 concurrent calls at 1200 rpm reach the server at least 50 ms apart on average."""
    wire_server.reset(sequence('{"ok": 1}'))
    config = cfg(wire_server.url, rpm=1200, max_concurrency=12)

    async def go():
        client = LLMClient(config)
        from leaf_live.core.llm import CallRequest

        spec = ModelSpec.parse("openai/gpt-5-search-api@single")
        return await client.fan_out([CallRequest(spec, tuple(MSGS)) for _ in range(12)])

    results = asyncio.run(go())
    assert all(r.ok for r in results) and len({r.record.call_id for r in results}) == 12
    t = sorted(r.received_at for r in wire_server.requests)
    assert t[-1] - t[0] >= 11 * 0.05 * 0.9


def test_unknown_model_cost_is_null_not_an_error(wire_server, provider_env):
    wire_server.reset(sequence('{"ok": 1}'))
    res = call(cfg(wire_server.url), "openai/leaf-local-test-model@single")
    assert res.ok and res.record.cost_usd is None
    assert (
        res.record.prompt_tokens == 1000
        and res.record.completion_tokens == 200
        and res.record.total_tokens == 1200
    )
    frame = llm_calls_frame([res.record], "pk")
    assert frame.schema["cost_usd"] == pl.Float64 and frame["cost_usd"][0] is None
    params = json.loads(frame["request_params"][0])
    assert params["model"] == "openai/leaf-local-test-model" and params["max_tokens"] == 500
    assert params["web_search_options"] == {"search_context_size": "medium"}
    assert json.loads(frame["request_messages"][0]) == MSGS


def test_units_in_prompt_match_catalog():
    # guard for the parser's unit aliases: every catalog unit has an alias set containing itself
    from leaf_live.macro.agents.parsing import UNIT_ALIASES

    for group in ("output_core", "demand_sectoral"):
        for i in indicators_in_group(group):
            unit = get_indicator(i).unit.lower()
            assert unit in UNIT_ALIASES and unit in UNIT_ALIASES[unit]


def test_a_missing_provider_key_is_recorded_as_missing_key_naming_the_variable(
    wire_server, provider_env, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY")
    wire_server.reset(sequence("unused"))
    res = call(cfg(wire_server.url))
    assert not res.ok and res.record.status == "failed"
    assert res.record.error.startswith("missing_key: OPENAI_API_KEY is not set (no request sent)"), (
        res.record.error
    )
    assert "HTTP" not in res.record.error.split(":")[0] and "HTTP 500" not in res.record.error
    assert res.record.attempts == 1 and wire_server.requests == []  # no retry can supply a key


def test_an_unconvertible_200_answer_is_recorded_as_a_conversion_failure(wire_server, provider_env):
    wire_server.reset(sequence(WireReply(200, {"unexpected": True})))
    res = call(cfg(wire_server.url, max_attempts=1))
    assert not res.ok and len(wire_server.requests) == 1
    assert res.record.error.startswith("conversion failure: the provider answered"), res.record.error
    assert "HTTP 500" not in res.record.error and "no 'choices'" in res.record.error


# Citation fields sent as null, or as lists holding nulls and wrong types: the answer is a successful call
# with the citations that remain usable (none, or the one well-formed source), never a failed call.
_B = {"web": {"uri": "https://www.bea.gov/gdp", "title": "GDP"}}
_GEMINI_NULL_GROUNDING = [
    ({"webSearchQueries": ["q"], "groundingChunks": None}, []),
    ({"webSearchQueries": None, "groundingChunks": None, "groundingSupports": None}, []),
    (None, []),
    ("grounded", []),
    ({"groundingChunks": [_B], "groundingSupports": None}, []),
    (
        {
            "groundingChunks": [_B],
            "groundingSupports": [None, {"segment": None, "groundingChunkIndices": None}],
        },
        [],
    ),
    # a null chunk keeps its position: index 1 still names the GDP page after cleaning
    (
        {
            "webSearchQueries": [None, "q"],
            "groundingChunks": [None, _B, {"web": None}, "x"],
            "groundingSupports": [
                {"segment": {"startIndex": 0, "endIndex": 5}, "groundingChunkIndices": [None, 1, "2", [3], 2]}
            ],
        },
        [{"url": "https://www.bea.gov/gdp", "title": "GDP"}],
    ),
]


@pytest.mark.parametrize("grounding,expected", _GEMINI_NULL_GROUNDING)
def test_gemini_answer_with_null_grounding_is_a_successful_call(
    wire_server, provider_env, grounding, expected
):
    body = gemini_generate_content("hello world", model="gemini-2.5-pro")
    body["candidates"][0]["groundingMetadata"] = grounding
    wire_server.reset(sequence(WireReply(200, body)))
    res = call(cfg(wire_server.url, max_attempts=1), "gemini/gemini-2.5-pro@single")
    assert res.ok and res.record.error is None and res.record.attempts == 1, res.record.error
    assert res.content == "hello world" and res.citations == expected
    assert res.record.prompt_tokens == 1000 and res.record.completion_tokens == 200


def _openai_with(annotations):
    body = openai_chat_completion("hello world", model="gpt-5-search-api")
    body["choices"][0]["message"]["annotations"] = annotations
    return body


def _anthropic_with(citations, results):
    body = anthropic_message(
        "the cpi rose",
        model="claude-sonnet-4-5",
        search_results=[{"url": "https://www.bls.gov/cpi", "title": "CPI"}],
        cited_spans=[("cpi", {"url": "https://www.bls.gov/cpi", "title": "CPI"})],
    )
    for block in body["content"]:
        if block.get("citations"):
            block["citations"] = citations
        if block["type"] == "web_search_tool_result":
            block["content"] = results
    return body


_GDP = {"type": "url_citation", "url_citation": {"url": "https://www.bea.gov/gdp", "title": "GDP"}}


@pytest.mark.parametrize(
    "model,body,content,expected",
    [
        ("openai/gpt-5-search-api@single", _openai_with(None), "hello world", []),
        ("openai/gpt-5-search-api@single", _openai_with([None, 5, "x"]), "hello world", []),
        (
            "openai/gpt-5-search-api@single",
            _openai_with([{"type": "url_citation", "url_citation": None}, _GDP]),
            "hello world",
            [{"url": "https://www.bea.gov/gdp", "title": "GDP"}],
        ),
        ("anthropic/claude-sonnet-4-5@single", _anthropic_with(None, None), "the cpi rose", []),
        ("anthropic/claude-sonnet-4-5@single", _anthropic_with([None], [None, 7]), "the cpi rose", []),
        (
            "anthropic/claude-sonnet-4-5@single",
            _anthropic_with(None, [None, {"type": "web_search_result", "url": "https://www.bls.gov/cpi"}]),
            "the cpi rose",
            [{"url": "https://www.bls.gov/cpi", "title": None}],
        ),
    ],
)
def test_null_citation_fields_are_a_successful_call(
    wire_server, provider_env, model, body, content, expected
):
    wire_server.reset(sequence(WireReply(200, body)))
    res = call(cfg(wire_server.url, max_attempts=1), model)
    assert res.ok and res.record.error is None and res.record.attempts == 1, res.record.error
    assert res.content == content and res.citations == expected


def test_clean_answer_citations_never_raises_and_keeps_other_fields():
    rng = random.Random(17)
    junk = [None, 0, 1.5, True, "", "x", [], {}, [None], {"a": None}, [[None]], {"web": None}]
    for _ in range(3000):
        api = rng.choice(["gemini", "anthropic", "openai", "other"])
        shape = {
            "candidates": [{"groundingMetadata": rng.choice(junk), "citationMetadata": rng.choice(junk)}],
            "content": [{"type": "text", "citations": rng.choice(junk)}, rng.choice(junk)],
            "choices": [{"message": {"annotations": [rng.choice(junk), rng.choice(junk)]}}, rng.choice(junk)],
            "usage": {"prompt_tokens": 3, "extra": None},
        }
        out = clean_answer_citations(api, shape)
        assert out["usage"] == {"prompt_tokens": 3, "extra": None}  # fields outside citations untouched
        assert extract_citations(out) == []
    assert clean_answer_citations("gemini", "not json") == "not json"
