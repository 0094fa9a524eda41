"""The llm_nowcasts asset through Dagster, against the local OpenAI-format server: the current hour's open
windows get both prompt groups per model, every call lands in llm_calls and every answer in nowcasts;
past hours are refused; with no model configured the asset says so and writes nothing."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import polars as pl
from dagster import DagsterInstance, materialize
from llm_wire_server import WireReply, WireRequest, provider_env, reply_ok, wire_server  # noqa: F401

from assets.macro_nowcasts import llm_nowcasts
from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, get_indicator, indicators_in_group
from resources import default_resources

MODEL = "openai/gpt-5-search-api@single"


def _windows(hour: datetime) -> pl.DataFrame:
    """One open window per indicator (target month = last month), closing in ten days."""
    opens, closes = hour - timedelta(days=5), hour + timedelta(days=10)
    target = date(hour.year, hour.month, 1) - timedelta(days=1)
    rows = []
    for i in INDICATOR_IDS:
        ref = (
            date(target.year, 3 * ((target.month - 1) // 3) + 1, 1)
            if i == "real_gdp_advance"
            else target.replace(day=1)
        )
        rows.append(
            {
                "partition_key": f"{closes:%Y-%m}",
                "indicator_id": i,
                "reference_period": ref,
                "target_month": target.replace(day=1),
                "opens_at": opens,
                "closes_at": closes,
                "release_time_et": "08:30",
                "prompt_group": get_indicator(i).prompt_group,
                "n_issue_hours": 360,
                "available_at": opens,
            }
        )
    return storage.conform("nowcast_windows", pl.DataFrame(rows))


def _answer(req: WireRequest) -> WireReply:
    values = {i: get_indicator(i).guardrail for i in indicators_in_group(req.group)}
    body = {
        i: {"value": round((g.lo + g.hi) / 2 if g.lo > 0 else 1.5, 1), "unit": get_indicator(i).unit}
        for i, g in values.items()
    }
    return reply_ok(req, json.dumps(body))


def _run(db, hour: datetime):
    return materialize(
        [llm_nowcasts],
        resources=default_resources(db=db),
        instance=DagsterInstance.ephemeral(),
        partition_key=f"{hour:%Y-%m-%d-%H:%M}",
    )


def test_current_hour_nowcasts_every_open_window(tmp_path, wire_server, provider_env, monkeypatch):
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    db = tmp_path / "llm.duckdb"
    with storage.open_db(db) as con:
        win = _windows(hour)
        storage.replace_partition(con, "nowcast_windows", win, {"partition_key": win["partition_key"][0]})
    monkeypatch.setenv("LEAF_LIVE_LLM_MODELS", MODEL)
    monkeypatch.setenv("LEAF_LIVE_LLM_API_BASE", wire_server.url)
    monkeypatch.setenv("LEAF_LIVE_LLM_RPM", "6000")
    wire_server.reset(_answer)

    assert _run(db, hour).success
    con = storage.connect_read_only(db)
    try:
        calls = storage.read_table(con, "llm_calls")
        nc = storage.read_table(con, "nowcasts")
    finally:
        con.close()
    # one call per prompt group, both answered; 16 nowcasts, all valid, issued within this hour's run
    assert (
        calls.height == 2
        and set(calls["status"]) == {"ok"}
        and set(calls["prompt_group"]) == {"output_core", "demand_sectoral"}
    )
    assert nc.height == 16 and nc["valid"].all() and set(nc["indicator_id"]) == set(INDICATOR_IDS)
    assert set(nc["model_id"]) == {MODEL} and set(nc["producer"]) == {"llm_nowcasts"}
    assert not nc["after_release"].any()
    assert set(nc["raw_response_id"]) <= set(calls["call_id"])  # every answer has its stored raw response
    assert len(wire_server.requests) == 2

    # the same hour again replaces, never duplicates
    assert _run(db, hour).success
    con = storage.connect_read_only(db)
    try:
        assert con.execute("SELECT count(*) FROM nowcasts").fetchall()[0][0] == 16
        assert con.execute("SELECT count(*) FROM llm_calls").fetchall()[0][0] == 2
    finally:
        con.close()


def test_past_hours_are_refused_and_no_models_means_nothing(tmp_path, wire_server, provider_env, monkeypatch):
    db = tmp_path / "llm.duckdb"
    past = datetime(2026, 4, 1, 14, 0, tzinfo=UTC)
    with storage.open_db(db) as con:
        win = _windows(past)
        storage.replace_partition(con, "nowcast_windows", win, {"partition_key": win["partition_key"][0]})
    wire_server.reset(_answer)
    # no model configured: the run succeeds, says so, calls nothing
    result = _run(db, past)
    assert result.success
    mat = result.asset_materializations_for_node("llm_nowcasts")[0]
    assert "no LLM models configured" in str(mat.metadata["status"].value)
    # a configured model, but the hour is in the past: refused, nothing called or written
    monkeypatch.setenv("LEAF_LIVE_LLM_MODELS", MODEL)
    monkeypatch.setenv("LEAF_LIVE_LLM_API_BASE", wire_server.url)
    assert _run(db, past).success
    assert wire_server.requests == []
    con = storage.connect_read_only(db)
    try:
        assert con.execute("SELECT count(*) FROM nowcasts").fetchall()[0][0] == 0
    finally:
        con.close()
