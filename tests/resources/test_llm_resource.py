"""The LLM resource: LEAF_LIVE_LLM_* reach it as Dagster EnvVars (only those set), are parsed by the one
parser (errors name the variable), and a run gets one call path whose rate limiter every model call shares."""

from __future__ import annotations

import asyncio

import pytest
from dagster import EnvVar

from leaf_live.core.llm import LLMClient, ModelSpec
from leaf_live.core.settings import SettingsError, get_settings
from resources.llm import LLMResource, llm_resource


def test_settings_become_env_vars_and_defaults(monkeypatch):
    for name in (
        "LEAF_LIVE_LLM_MODELS",
        "LEAF_LIVE_LLM_API_BASE",
        "LEAF_LIVE_LLM_RPM",
        "LEAF_LIVE_LLM_CONCURRENCY",
        "LEAF_LIVE_LLM_TIMEOUT_S",
        "LEAF_LIVE_LLM_MAX_ATTEMPTS",
        "LEAF_LIVE_LLM_MAX_TOKENS",
        "LEAF_LIVE_LLM_WEB_SEARCH",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "LEAF_LIVE_LLM_MODELS", "openai/gpt-5-search-api@single,anthropic/claude-sonnet-4-5@team"
    )
    monkeypatch.setenv("LEAF_LIVE_LLM_RPM", "120")
    r = llm_resource(get_settings())
    assert isinstance(r.models, EnvVar) and r.models.env_var_name == "LEAF_LIVE_LLM_MODELS"
    assert isinstance(r.rpm, EnvVar) and r.api_base is None and r.max_tokens is None
    # resolved as Dagster would: the same parser as everywhere, defaults for what is unset
    cfg = LLMResource(
        models="openai/gpt-5-search-api@single,anthropic/claude-sonnet-4-5@team", rpm="120"
    ).config()
    assert [m.model_id for m in cfg.models] == [
        "openai/gpt-5-search-api@single",
        "anthropic/claude-sonnet-4-5@team",
    ]
    assert (cfg.rpm, cfg.max_concurrency, cfg.timeout_s, cfg.max_tokens, cfg.web_search) == (
        120.0,
        8,
        300.0,
        8192,
        True,
    )
    with pytest.raises(SettingsError, match="LEAF_LIVE_LLM_RPM='fast'"):
        LLMResource(rpm="fast").config()


def test_one_client_and_rate_limiter_per_run_across_event_loops():
    r = LLMResource(models="openai/a@single,openai/b@single", rpm="60")
    client = r.client()
    assert isinstance(client, LLMClient) and r.client() is client
    a, b = (ModelSpec.parse(m) for m in ("openai/a@single", "openai/b@single"))

    async def reserve(spec: ModelSpec) -> float:
        return client.limiter(spec).reserve()

    # two loops of the same run (e.g. two hours) share the limiter: the second start of model a waits 1 s
    first = asyncio.run(reserve(a))
    second = asyncio.run(reserve(a))
    other = asyncio.run(reserve(b))
    assert (
        first == 0.0 and 0.5 < second <= 1.0 and other == 0.0
    )  # 60 rpm: 1 s apart, minus the time in between

    async def slot() -> int:
        async with client._slots():
            return client.config.max_concurrency

    assert asyncio.run(slot()) == 8 and asyncio.run(slot()) == 8  # the concurrency bound works in each loop
