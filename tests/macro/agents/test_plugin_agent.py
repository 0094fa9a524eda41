"""The financial-analysis plug-in design (App. S.1, S.5) end to end: real litellm over real HTTP against the
local OpenAI / Anthropic / Gemini wire-format server (tests/llm_wire_server.py). The model asks for the
plug-in's functions, gets point-in-time data back (nothing published after the call), then answers; every
round is one llm_calls row through the one call path."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest
from llm_wire_server import (  # noqa: F401 (fixtures)
    WireReply,
    WireRequest,
    anthropic_tool_use,
    gemini_function_calls,
    openai_tool_calls,
    provider_env,
    reply_ok,
    tool_results,
    wire_server,
)

from leaf_live.core.llm import LLMConfig, ModelSpec
from leaf_live.macro.agents import hour_targets, run_nowcast_hour_sync
from leaf_live.macro.agents.plugin import MAX_TOOL_ROUNDS, TOOL_NAMES, FinancialDataPlugin
from leaf_live.macro.catalog import get_indicator, indicators_in_group

NOW = datetime(2026, 4, 9, 14, 3, tzinfo=UTC)  # the plug-in's "now": every tool answers as of this instant
HOUR_KEY = "2026-04-09-14:00"
CPI_MAR, CPI_FEB = date(2026, 3, 1), date(2026, 2, 1)
VALUES = {
    "real_gdp_advance": 2.0,
    "industrial_production": 0.4,
    "durable_goods": -1.1,
    "ism_manufacturing": 52.7,
    "cpi": 3.1,
    "ppi": 0.5,
    "pce_price_index": 0.4,
    "nonfarm_payrolls": 178.0,
    "unemployment_rate": 4.3,
    "real_pce": 0.2,
    "retail_sales": 1.7,
    "housing_starts": 1324.0,
    "building_permits": 1386.0,
    "existing_home_sales": 4020.0,
    "new_home_sales": 676.0,
    "ism_services": 53.6,
}


def answer(group: str) -> str:
    return json.dumps(
        {
            i: {"value": VALUES[i], "unit": get_indicator(i).unit, "rationale": "plug-in data"}
            for i in indicators_in_group(group)
        }
    )


def plugin() -> FinancialDataPlugin:
    t = lambda s: datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    releases = pl.DataFrame(
        {
            "indicator_id": ["cpi", "cpi", "cpi"],
            "reference_period": [date(2026, 1, 1), CPI_FEB, CPI_MAR],
            "release_at": [t("2026-02-11 13:30"), t("2026-03-11 12:30"), t("2026-04-10 12:30")],
            "actual": [2.4, 2.4, 3.3],
            "consensus": [2.5, 2.4, 3.4],
        }
    ).with_columns(pl.col("release_at").alias("available_at"))  # March CPI: tomorrow, not yet known
    nowcasts = pl.DataFrame(
        {
            "model_id": ["fed/cleveland-cpi", "fed/cleveland-cpi", "fed/cleveland-cpi", "fed/gdpnow"],
            "indicator_id": ["cpi", "cpi", "cpi", "real_gdp_advance"],
            "reference_period": [CPI_MAR, CPI_MAR, CPI_MAR, date(2026, 1, 1)],
            "issued_at": [
                t("2026-04-08 15:00"),
                t("2026-04-09 14:00"),
                t("2026-04-09 15:00"),
                t("2026-04-08 21:00"),
            ],
            "value": [3.05, 3.12, 3.30, 1.9],
            "valid": [True, True, True, True],
        }
    ).with_columns(pl.col("issued_at").alias("available_at"))
    prices = pl.DataFrame(
        {
            "indicator_id": ["cpi"] * 4,
            "reference_period": [CPI_MAR] * 4,
            "ts": [
                t("2026-04-09 13:00"),
                t("2026-04-09 13:00"),
                t("2026-04-09 15:00"),
                t("2026-04-09 15:00"),
            ],
            "bucket_label": ["2.9%", "≥3.0%"] * 2,
            "price": [0.4, 0.5, 0.1, 0.85],
        }
    )
    return FinancialDataPlugin(
        releases, nowcasts, prices, schedule={("cpi", CPI_MAR): t("2026-04-10 12:30")}, clock=lambda: NOW
    )


def config(server, **kw) -> LLMConfig:
    base = dict(
        api_base=server.url,
        rpm=60000,
        max_concurrency=16,
        timeout_s=5.0,
        max_attempts=2,
        backoff_base_s=0.01,
        backoff_max_s=0.1,
        max_tokens=2000,
    )
    base.update(kw)
    return LLMConfig(**base)


def run(server, model: str, **kw):
    return run_nowcast_hour_sync(
        hour_targets(CPI_MAR),
        partition_key=HOUR_KEY,
        models=[ModelSpec.parse(model)],
        config=config(server),
        clock=lambda: NOW,
        plugin=kw.pop("plugin", plugin()),
        **kw,
    )


ASK = [
    ("latest_releases", {"indicator_id": "cpi", "n": 3}),
    ("fed_nowcasts", {"indicator_id": "cpi"}),
    ("market_distribution", {"indicator_id": "cpi"}),
    ("release_schedule", {"indicator_id": "cpi"}),
]


def _calls(req: WireRequest):
    if req.api == "anthropic":
        return WireReply(200, anthropic_tool_use(ASK, model=req.model, text="Checking the data first."))
    if req.api == "gemini":
        return WireReply(200, gemini_function_calls(ASK, model=req.model))
    return WireReply(200, openai_tool_calls(ASK, model=req.model))


@pytest.mark.parametrize(
    "model", ["openai/gpt-5@plugin", "anthropic/claude-sonnet-4-5@plugin", "gemini/gemini-2.5-pro@plugin"]
)
def test_plugin_agent_calls_point_in_time_tools_then_answers(wire_server, provider_env, model):
    seen: list[list[dict]] = []

    def responder(req: WireRequest) -> WireReply:
        back = tool_results(req)
        if req.group == "output_core" and not back:
            return _calls(req)  # first round of the CPI group: ask for the plug-in's data
        if back:
            seen.append(back)
        return reply_ok(req, answer(req.group))

    wire_server.reset(responder)
    nowcasts, calls = run(wire_server, model)
    # both groups answered: 16 valid rows; output_core took two rounds (tools, then the answer)
    assert nowcasts.height == 16 and nowcasts["valid"].all()
    assert dict(zip(nowcasts["indicator_id"], nowcasts["value"])) == VALUES
    assert calls.height == 3 and set(calls["role"]) == {"analyst"} and set(calls["status"]) == {"ok"}
    core = calls.filter(pl.col("prompt_group") == "output_core").sort("requested_at")
    assert core.height == 2 and core["run_id"].n_unique() == 1
    # the plug-in's functions went over the wire in the provider's format; the answer carries the last round
    first = [r for r in wire_server.requests if r.group == "output_core"][0]
    names = {t.get("function", {}).get("name") or t.get("name") for t in first.body.get("tools", [])}
    if first.api == "gemini":
        # (proto spelling, as litellm sends it; Google Search grounding is dropped: the API does not mix them)
        names = {
            f["name"]
            for t in first.body["tools"]
            for f in t.get("functionDeclarations") or t.get("function_declarations", [])
        }
    assert set(TOOL_NAMES) <= names
    cpi = nowcasts.filter(pl.col("indicator_id") == "cpi").row(0, named=True)
    assert cpi["raw_response_id"] == core["call_id"][1] and cpi["answered_at"] == NOW
    assert cpi["prompt_tokens"] == 2000 and cpi["completion_tokens"] == 400  # both rounds summed
    # what the model got back: only data published before NOW (the March CPI print is tomorrow's; the
    # Cleveland Fed nowcast of 15:00 and the 15:00 prices are later than NOW)
    assert len(seen) == 1 and len(seen[0]) == 4
    out = {}
    for item in seen[0]:
        c = item["content"]
        c = json.loads(c) if isinstance(c, str) else c
        c = c.get("content", c) if isinstance(c, dict) and "as_of" not in c else c
        c = json.loads(c) if isinstance(c, str) else c
        out[next(k for k in ("releases", "nowcasts", "buckets", "scheduled_release_utc") if k in c)] = c
    assert [r["reference_period"] for r in out["releases"]["releases"]] == ["2026-02-01", "2026-01-01"]
    assert out["nowcasts"]["nowcasts"] == [
        {"model_id": "fed/cleveland-cpi", "issued_at": "2026-04-09T14:00:00+00:00", "value": 3.12}
    ]
    assert out["buckets"]["buckets"] == [
        {"bucket_label": "2.9%", "price": 0.4},
        {"bucket_label": "≥3.0%", "price": 0.5},
    ]
    assert out["scheduled_release_utc"]["scheduled_release_utc"] == "2026-04-10T12:30:00+00:00"


def test_plugin_that_never_stops_calling_tools_is_invalid_with_the_reason(wire_server, provider_env):
    wire_server.reset(
        lambda req: _calls(req) if req.group == "output_core" else reply_ok(req, answer(req.group))
    )
    nowcasts, calls = run(wire_server, "openai/gpt-5@plugin")
    core = nowcasts.filter(pl.col("indicator_id").is_in(list(indicators_in_group("output_core"))))
    assert core.height == 9 and not core["valid"].any()
    assert (
        core["invalid_reason"]
        .str.starts_with(f"plugin_no_answer: still calling tools after {MAX_TOOL_ROUNDS} rounds")
        .all()
    )
    assert calls.filter(pl.col("prompt_group") == "output_core").height == MAX_TOOL_ROUNDS
    assert nowcasts.filter(~pl.col("indicator_id").is_in(list(indicators_in_group("output_core"))))[
        "valid"
    ].all()


def test_bad_tool_calls_get_an_error_object_not_an_exception(wire_server, provider_env):
    bad = [
        ("no_such_tool", {"indicator_id": "cpi"}),
        ("latest_releases", {"indicator_id": "ism_services"}),
        ("latest_releases", {"indicator_id": "cpi", "n": 99}),
    ]
    got: list = []

    def responder(req: WireRequest) -> WireReply:
        back = tool_results(req)
        if req.group == "output_core" and not back:
            return WireReply(200, openai_tool_calls(bad, model=req.model))
        got.extend(back)
        return reply_ok(req, answer(req.group))

    wire_server.reset(responder)
    nowcasts, _ = run(wire_server, "openai/gpt-5@plugin")
    assert nowcasts["valid"].all()
    errors = [json.loads(b["content"])["error"] for b in got]
    assert errors[0].startswith("unknown function 'no_such_tool'")
    assert errors[1].startswith(
        "indicator_id='ism_services' is not a variable of this request"
    )  # demand group
    assert errors[2] == "n=99: expected an integer 1..12"
    with pytest.raises(ValueError, match="needs the financial-data plug-in"):
        run(wire_server, "openai/gpt-5@plugin", plugin=None)


def test_plugin_tools_answer_as_of_the_call_time():
    p = plugin()
    refs = {"cpi": CPI_MAR}
    later = FinancialDataPlugin(
        p.releases, p.nowcasts, p.prices, p.schedule, clock=lambda: NOW + timedelta(days=1)
    )
    assert [
        r["actual"] for r in p.call("latest_releases", '{"indicator_id": "cpi", "n": 5}', refs)["releases"]
    ] == [2.4, 2.4]
    assert (
        later.call("latest_releases", {"indicator_id": "cpi", "n": 1}, refs)["releases"][0]["actual"] == 3.3
    )
    assert later.call("fed_nowcasts", {"indicator_id": "cpi"}, refs)["nowcasts"][0]["value"] == 3.30
    assert (
        later.call("market_distribution", {"indicator_id": "cpi"}, refs)["priced_at"]
        == "2026-04-09T15:00:00+00:00"
    )
    early = FinancialDataPlugin(
        p.releases, p.nowcasts, p.prices, p.schedule, clock=lambda: NOW - timedelta(days=2)
    )
    assert early.call("fed_nowcasts", {"indicator_id": "cpi"}, refs)["nowcasts"] == []
    assert early.call("market_distribution", {"indicator_id": "cpi"}, refs)["buckets"] == []
    assert p.call("fed_nowcasts", "not json", refs) == {
        "error": "arguments are not a JSON object: 'not json'"
    }
