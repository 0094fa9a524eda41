"""The recorded SEER case through storage, bundles and with/without-events LLM forecasts against the local
server (scored with event/scoring), and the analyses reproduced by hand on small constructed cases."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest
from llm_wire_server import WireRequest, provider_env, reply_ok, wire_server  # noqa: F401

from leaf_live.core.llm import LLMClient, LLMConfig, ModelSpec, RetryPolicy, llm_calls_frame
from leaf_live.core.storage import conform, connect, empty_frame, read_table, replace_partition
from leaf_live.event import analyses, scoring
from leaf_live.event.agents.factcheck import fact_check_events
from leaf_live.event.agents.forecasters import (
    LLMForecaster,
    context_leaks,
    discard_report,
    events_for_task,
    llm_partition_key,
    rate_predictability,
)
from leaf_live.event.dedup import find_merges
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.recorded_events import case_checks, read_seer_case, seer_events
from leaf_live.event.tasks import market_tasks

GPT, CLAUDE = "openai/gpt-5-search-api@single", "anthropic/claude-sonnet-4-5@single"


@pytest.fixture(scope="module")
def seer(snapshot_dir):
    case = read_seer_case(snapshot_dir)
    prices = to_market_prices(
        SnapshotDailyPrices(snapshot_dir).daily_bars(case.tickers, date(2026, 2, 20), date(2026, 4, 10))
    )
    ts = market_tasks(
        prices,
        "large_cap",
        case.tickers,
        date(2026, 3, 5),
        date(2026, 4, 4),
        series_horizons=(3,),
        trend_horizons=(1,),
    )
    day = lambda c: c.dt.convert_time_zone("America/New_York").dt.date()  # noqa: E731
    tasks = ts.tasks.filter(day(pl.col("cutoff")) == case.cutoff)
    outcomes = ts.outcomes.filter(pl.col("task_id").is_in(tasks["task_id"]))
    return case, prices, tasks, outcomes


def client(server, **kw) -> LLMClient:
    c = LLMConfig(
        api_base=server.url,
        rpm=60000,
        max_concurrency=32,
        timeout_s=5.0,
        max_attempts=2,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        max_tokens=8192,
        **kw,
    )
    return LLMClient(c, retry=RetryPolicy(2, 0.01, 0.05, 0.0))


def test_seer_case_parses_and_agrees_with_our_prices(seer, tmp_path):
    case, prices, tasks, outcomes = seer
    assert case.cutoff == date(2026, 3, 25) and len(case.blocks) == 50
    assert sum(len(b.events) for b in case.blocks) == 3873
    assert all(len(b.closes) == 15 for b in case.blocks)
    retrieved, kept = seer_events(case)
    assert retrieved.height == 3871  # PROVENANCE: 2 exact repeats within a stock
    assert (
        retrieved["weekend"].sum() == 235 and kept["kept"].all() and set(kept["check_mode"]) == {"recorded"}
    )
    assert not retrieved["description"].str.contains(r"\[").any()
    assert retrieved["event_date"].max() == date(2026, 3, 25) and retrieved["event_date"].min() == date(
        2026, 3, 6
    )
    assert set(retrieved["available_at"]) == {datetime(2026, 3, 25, 20, tzinfo=UTC)}
    adbe = retrieved.filter(pl.col("target_id") == "ADBE")
    assert adbe.height == 149
    chk = case_checks(case, prices)
    # the realised next-day labels our trend5 tasks compute agree with the file's for all 50 stocks
    assert chk["agree"].sum() == 50 and chk["our_label"].null_count() == 0
    assert chk.filter(pl.col("file_label") == "Strong Down").height == 16
    # closes agree to within 0.7% (dividend-adjusted basis; MCD, TXN and GS differ most)
    assert chk["max_rel_diff"].max() < 0.007 and chk["max_rel_diff"].median() < 0.0004
    assert chk.sort("max_rel_diff")["target_id"][-1] == "MCD"
    # storage round trip of the recorded rows
    con = connect(tmp_path / "t.duckdb")
    for pk, g in retrieved.group_by("partition_key"):
        replace_partition(con, "retrieved_events", g, {"partition_key": pk[0]})
    assert read_table(con, "retrieved_events").height == 3871
    merges = find_merges(retrieved)
    assert merges.height > 500 and merges["similarity"].min() >= 0.6
    m_adbe = merges.filter(pl.col("target_id") == "ADBE")
    ceo = adbe.filter(
        pl.col("description").str.contains("Narayen")
        & pl.col("description").str.contains("(?i)step|transition|successor|depart")
    )
    assert ceo.height == 26 and ceo.join(m_adbe, on="event_id").height == 17


def test_with_and_without_events_run_on_the_seer_cutoff(seer, wire_server, provider_env):
    case, prices, tasks, outcomes = seer
    _, kept = seer_events(case)
    assert tasks.height == 150  # 50 stocks x (trend3, trend5 at 1 session, series at 3 sessions)

    def respond(req: WireRequest):
        text = req.text()
        has_events = "Events known by the cutoff:\nN/A" not in text
        if "exactly 3 plain numbers" in text:
            last = float(re.findall(r"(\d{4}-\d\d-\d\d), ([\d.]+)\n\nEvents", text)[-1][1])
            return reply_ok(
                req,
                f"Reasoning.\n<prediction>{last:.2f}, {last:.2f},"
                f" {last * (0.99 if has_events else 1):.2f}</prediction>",
            )
        five = "Strong Up" in text
        return reply_ok(
            req,
            f"<prediction>{('Strong Down' if five else 'Down') if has_events else 'Neutral'}</prediction>",
        )

    wire_server.reset(respond)
    c = client(wire_server)
    ts_f = LLMForecaster(c, ModelSpec.parse(GPT), context_kind="ts")
    ev_f = LLMForecaster(c, ModelSpec.parse(GPT), context_kind="events", events=kept)

    async def both():  # both variants concurrently on one client
        return await asyncio.gather(ts_f.run(tasks), ev_f.run(tasks))

    (f_ts, tr_ts), (f_ev, tr_ev) = asyncio.run(both())
    forecasts = pl.concat([f_ts, f_ev])
    assert forecasts.height == 300 and forecasts["valid"].all() and (forecasts["n_valid_trials"] == 3).all()
    assert tr_ts.height == 450 and set(forecasts["partition_key"]) == {
        llm_partition_key(tasks["cutoff"][0])
    } == {"llm:2026-03-25"}
    # each call used the 4,096-token budget and no web search
    bodies = [r.body for r in wire_server.requests]
    assert len(bodies) == 900 and {b.get("max_tokens", b.get("max_completion_tokens")) for b in bodies} == {
        4096
    }
    assert not any("web_search_options" in b or "tools" in b for b in bodies)
    # the frozen contexts: ts has none; events hold only events dated on or before the cutoff day and known by
    # it
    ctx = [json.loads(x) for x in f_ev["context"]]
    assert all(len(x["events"]) > 0 for x in ctx)
    assert max(e["date"] for x in ctx for e in x["events"]) == "2026-03-25"
    assert min(e["date"] for x in ctx for e in x["events"]) >= "2026-03-12"  # the 14-day look-back
    assert context_leaks(forecasts, tasks, kept).height == 0
    assert all(json.loads(x)["events"] == [] for x in f_ts["context"])
    meta = f_ev.filter(pl.col("task_id").str.contains("/META/trend5/1d/"))
    assert len(json.loads(meta["context"][0])["events"]) == len(
        events_for_task(kept, "META", tasks["cutoff"][0])
    )
    # a leaked context is caught by the blocking check
    bad = f_ev.head(1).with_columns(
        pl.lit(json.dumps({"events": [{"event_id": "x", "date": "2026-03-26"}], "rule": ""})).alias("context")
    )
    assert context_leaks(bad, tasks).height == 1
    # scored for every task
    scores = scoring.score_forecasts(tasks, outcomes, forecasts)
    per = scores.group_by("model_id").agg(pl.col("task_id").n_unique())
    assert dict(per.iter_rows()) == {f"{GPT}:ts": 150, f"{GPT}:events": 150}
    acc = scores.filter(pl.col("metric") == "accuracy", pl.col("task_kind") == "trend5")
    by = dict(acc.group_by("model_id").agg(pl.col("value").sum()).iter_rows())
    assert by[f"{GPT}:events"] == 16.0  # Strong Down every time: the file's 16 Strong Down labels
    neutral = (
        outcomes.join(tasks.select("task_id", "task_kind"), on="task_id")
        .filter(pl.col("task_kind") == "trend5", pl.col("label") == "Neutral")
        .height
    )
    assert by[f"{GPT}:ts"] == neutral == 11
    mape_ts = scores.filter(pl.col("metric") == "dlv", pl.col("model_id") == f"{GPT}:ts")["value"]
    assert mape_ts.max() < 0.02  # % distance: the last close repeated to 2 decimals (<= 0.005 / 25 USD)
    assert discard_report(pl.concat([tr_ts, tr_ev]))["discarded"].to_list() == [False, False]
    calls = llm_calls_frame(c.records, "llm:2026-03-25")
    assert set(calls["role"]) == {"forecaster"} and set(tr_ev["call_id"]) <= set(calls["call_id"])


def test_invalid_trials_are_kept_with_reasons_and_the_discard_rule(wire_server, provider_env, seer):
    _, _, tasks, _ = seer
    t = tasks.filter(pl.col("task_kind") == "trend3").head(4)
    answers = [
        "<prediction>Up</prediction>",
        "<prediction>Sideways</prediction>",
        "I'm sorry, I cannot help.",
        "<prediction>Down</prediction>",
    ]
    # task j (in order of first arrival) gets answers 3j, 3j+1, 3j+2 of the cycle: each task at least one
    # valid trial whatever order the concurrent calls arrive in (a shared iterator let one task draw three
    # invalid ones)
    seen: dict[str, list[int]] = {}
    lock = threading.Lock()

    def respond(req: WireRequest):
        with lock:
            slot = seen.setdefault(req.text(), [len(seen), 0])
            k = 3 * slot[0] + slot[1]
            slot[1] += 1
        return reply_ok(req, answers[k % 4])

    wire_server.reset(respond)
    f, tr = asyncio.run(LLMForecaster(client(wire_server), ModelSpec.parse(GPT)).run(t))
    assert tr.height == 12 and tr.filter(~pl.col("valid")).height == 6
    codes = sorted({r.split(":")[0] for r in tr["invalid_reason"].drop_nulls()})
    assert codes == ["bad_class", "refusal"]
    rep = discard_report(tr)
    assert rep["invalid_share"][0] == 0.5 and rep["discarded"][0]
    assert f["valid"].all() and f["n_valid_trials"].sum() == 6


def test_fact_check_storage_on_recorded_events(seer, wire_server, provider_env):
    case, _, _, _ = seer
    retrieved, _ = seer_events(case)
    sample = retrieved.filter(pl.col("target_id") == "LIN").head(6)
    dates = {r["description"][:40]: r["event_date"] for r in sample.iter_rows(named=True)}

    def respond(req: WireRequest):
        text = req.text()
        for k, d in dates.items():
            if k in text:
                return reply_ok(req, f"<factual>True</factual><date>{d}</date>")
        return reply_ok(req, "<factual>False</factual><date>N/A</date>")

    wire_server.reset(respond)
    checks, kept = asyncio.run(
        fact_check_events(client(wire_server), ModelSpec.parse(GPT), ModelSpec.parse(CLAUDE), sample)
    )
    assert kept["kept"].all() and kept.height == 6 and checks.height == 12
    assert (kept["event_date"] == kept["claimed_date"]).all()
    rates = analyses.filter_rates(sample, kept)
    assert rates.row(0, named=True)["filter_rate"] == 0.0 and rates["n_kept"][0] == 6


# ------------------------------------------------------------------------------------------------
# analyses by hand
# ------------------------------------------------------------------------------------------------

T0 = datetime(2026, 3, 2, 21, tzinfo=UTC)


def _scores(rows):
    base = {
        "partition_key": "m",
        "domain": "large_cap",
        "task_kind": "trend3",
        "horizon": "1d",
        "metric": "accuracy",
        "available_at": T0,
    }
    return conform(
        "leaf_scores", pl.DataFrame([{**base, **r} for r in rows], schema=empty_frame("leaf_scores").schema)
    )


def test_filter_rates_and_costs_by_hand():
    ret = pl.DataFrame(
        {
            "retriever": ["r"] * 5,
            "domain": ["large_cap"] * 4 + ["weather"],
            "target_id": ["A", "A", "B", "B", "nyc"],
            "valid": [True, True, True, False, True],
            "event_id": ["e1", "e2", "e3", "x", "e4"],
            "call_id": ["c1", "c1", "c2", "c2", "c3"],
            "available_at": [T0] * 5,
        }
    )
    chk = pl.DataFrame(
        {
            "retriever": ["r"] * 4,
            "domain": ["large_cap"] * 3 + ["weather"],
            "target_id": ["A", "A", "B", "nyc"],
            "event_id": ["e1", "e2", "e3", "e4"],
            "event_date": [date(2026, 3, 1)] * 4,
            "kept": [True, False, False, True],
            "drop_reason": [None, "date_mismatch", "merged", None],
            "available_at": [T0] * 4,
        }
    )
    fr = analyses.filter_rates(ret, chk).sort("domain")
    lc = fr.row(0, named=True)
    assert (lc["n_events"], lc["n_checked"], lc["n_kept"], lc["n_merged"], lc["n_entities"]) == (
        3,
        2,
        1,
        1,
        2,
    )
    assert lc["filter_rate"] == 0.5 and json.loads(lc["drop_reasons"]) == {"date_mismatch": 1}
    calls = pl.DataFrame(
        {
            "call_id": ["c1", "c2", "c3", "k1", "k2"],
            "total_tokens": [1000, 1000, 500, 300, 700],
            "cost_usd": [0.01, 0.01, 0.005, 0.003, 0.007],
            "status": ["ok"] * 5,
            "available_at": [T0] * 5,
        }
    )
    checks = pl.DataFrame({"event_id": ["e1", "e1"], "call_id": ["k1", "k2"]})
    rc = analyses.retrieval_costs(calls, ret, checks, chk).sort("domain").row(0, named=True)
    assert (
        rc["total_tokens"] == 3000
        and rc["tokens_per_kept_event"] == 3000.0
        and rc["tokens_per_event"] == 1000.0
    )
    assert math.isclose(rc["cost_per_kept_event"], 0.03)


def test_predictability_accuracy_by_hand():
    cut = [T0, T0 + timedelta(days=2)]
    tasks = pl.DataFrame({"task_id": [f"t{i}" for i in range(6)], "cutoff": [cut[0]] * 3 + [cut[1]] * 3})
    tg = ["A", "B", "C"] * 2
    # day 1: A level 1 wrong, B level 5 right, C level 5 wrong; day 2: A level 1 right, B level 5 right, C 3
    # right
    sc = _scores(
        [
            {"model_id": "m@single:events", "task_id": f"t{i}", "target_id": tg[i], "value": v}
            for i, v in enumerate([0.0, 1.0, 0.0, 1.0, 1.0, 1.0])
        ]
    )
    rt = pl.DataFrame(
        {
            "model_id": ["r@single"] * 6,
            "context_kind": ["events"] * 6,
            "cutoff": tasks["cutoff"],
            "target_id": tg,
            "level": [1, 5, 5, 1, 5, 3],
            "valid": [True] * 6,
            "available_at": [T0] * 6,
        }
    )
    out = analyses.predictability_accuracy(rt, sc, tasks).sort("level")
    # level 1: day means 0 and 1 -> 50; level 3: 100; level 5: day means 0.5 and 1 -> 75
    assert out["accuracy"].to_list() == [50.0, 100.0, 75.0] and out["n"].to_list() == [2, 1, 3]
    r = out["level_correlation"][0]
    assert math.isclose(r, 0.5)  # corr([1,3,5], [50,100,75]) = 50 / sqrt(8 * 1250)


def test_alpha_contexts_and_consistency_by_hand():
    d = date(2026, 3, 2)
    evs = pl.DataFrame(
        {
            "event_id": [f"p{i}" for i in range(5)] + [f"n{i}" for i in range(5)] + ["late"],
            "target_id": ["A"] * 11,
            "event_date": [d - timedelta(days=i) for i in range(10)] + [d + timedelta(days=1)],
            "description": ["x"] * 11,
            "sentiment": ["Positive"] * 5 + ["Negative"] * 5 + ["Positive"],
            "kept": [True] * 11,
        }
    )
    tasks = pl.DataFrame({"task_id": ["up", "down", "flat"], "target_id": ["A"] * 3, "cutoff": [T0] * 3})
    outs = pl.DataFrame({"task_id": ["up", "down", "flat"], "change": [0.01, -0.02, 0.0]})
    ctx = analyses.alpha_contexts(evs, tasks, outs, n_events=5)
    for a in analyses.ALPHAS:
        up, down = ctx[a]["up"], ctx[a]["down"]
        k = round(a * 5)
        assert (
            sum(e["sentiment"] == "Positive" for e in up) == k
            and sum(e["sentiment"] == "Negative" for e in down) == k
        )
        assert "flat" not in ctx[a] and all(e["event_id"] != "late" for e in up + down)
    assert analyses.alpha_contexts(evs, tasks, outs, n_events=5)[0.4] == ctx[0.4]  # seeded
    other = analyses.alpha_contexts(
        evs.with_columns(pl.lit("B").alias("target_id")), tasks, outs, n_events=5, other_target={"A": "B"}
    )
    assert len(other[1.0]["up"]) == 5
    # error falls linearly with alpha for the target, not for the other target
    rows = []
    for a in analyses.ALPHAS:
        rows += [
            {
                "model_id": f"m@single:alpha={a}",
                "task_id": f"t{j}",
                "target_id": "A",
                "value": float(j < a * 10),
            }
            for j in range(10)
        ]
        rows += [
            {
                "model_id": f"m@single:other_alpha={a}",
                "task_id": f"t{j}",
                "target_id": "A",
                "value": float(j % 2),
            }
            for j in range(10)
        ]
    tab = analyses.alpha_consistency(_scores(rows)).sort("variant", "alpha")
    tgt = tab.filter(pl.col("variant") == "target")
    assert [round(x, 6) for x in tgt["mean_error"]] == [1.0, 0.8, 0.6, 0.4, 0.2, 0.0]
    assert math.isclose(tgt["correlation"][0], -1.0)
    assert tab.filter(pl.col("variant") == "other_target")["correlation"].null_count() == 6  # constant error


def test_living_data_and_fact_check_ablations_by_hand():
    old, new = datetime(2023, 6, 1, 20, tzinfo=UTC), datetime(2025, 11, 3, 21, tzinfo=UTC)
    tasks = pl.DataFrame({"task_id": [f"t{i}" for i in range(8)], "cutoff": [old] * 4 + [new] * 4})
    sc = _scores(
        [
            {"model_id": "m", "task_id": f"t{i}", "target_id": "A", "value": v}
            for i, v in enumerate([1, 1, 1, 0, 1, 0, 0, 0])
        ]
    )
    liv = analyses.living_data_ablation(
        sc, tasks, (date(2023, 1, 2), date(2024, 6, 2)), (date(2025, 10, 1), date(2026, 4, 5))
    )
    r = liv.row(0, named=True)
    assert (r["accuracy_before"], r["accuracy_after"], r["relative_improvement_pct"]) == (75.0, 25.0, 200.0)
    sc2 = _scores(
        [
            {
                "model_id": "m@single:events",
                "task_id": "t0",
                "target_id": "Q",
                "value": 0.0,
                "task_kind": "event",
                "metric": "brier",
            },
            {
                "model_id": "m@single:events_unfiltered",
                "task_id": "t0",
                "target_id": "Q",
                "value": 0.0064,
                "task_kind": "event",
                "metric": "brier",
            },
        ]
    )
    fc = conform(
        "leaf_forecasts",
        pl.DataFrame(
            [
                {
                    "producer": "llm_forecasts",
                    "partition_key": "llm:x",
                    "model_id": "m@single:events_unfiltered",
                    "task_id": "t0",
                    "bundle_hash": "h",
                    "issued_at": T0,
                    "valid": True,
                    "context": json.dumps({"events": [{"event_id": "leak"}, {"event_id": "ok"}]}),
                    "available_at": T0,
                }
            ],
            schema=empty_frame("leaf_forecasts").schema,
        ),
    )
    chk = pl.DataFrame({"event_id": ["leak", "ok"], "drop_reason": ["after_cutoff", None]})
    ab = analyses.fact_check_ablation(sc2, fc, chk).row(0, named=True)
    assert ab["n"] == 1 and ab["n_leaked_events"] == 1 and math.isclose(ab["inflation"], 0.0064)


BEFORE, AFTER = (date(2023, 1, 2), date(2024, 6, 2)), (date(2025, 10, 1), date(2026, 4, 5))


def test_analyses_run_or_refuse_with_one_line():
    old, new = datetime(2023, 6, 1, 20, tzinfo=UTC), datetime(2025, 11, 3, 21, tzinfo=UTC)
    tasks = pl.DataFrame({"task_id": [f"t{i}" for i in range(8)], "cutoff": [old] * 4 + [new] * 4})
    # the baseline b is scored in both spans, the LLM m only in the live span: b's row only, m named
    sc = _scores(
        [
            {"model_id": "b", "task_id": f"t{i}", "target_id": "A", "value": v}
            for i, v in enumerate([1, 1, 0, 0, 1, 0, 0, 0])
        ]
        + [
            {"model_id": "m@single:events", "task_id": f"t{i}", "target_id": "A", "value": 1.0}
            for i in range(4, 8)
        ]
    )
    out, st = analyses.living_data_run(sc, tasks, BEFORE, AFTER)
    assert out.select("model_id", "accuracy_before", "accuracy_after", "relative_improvement_pct").rows() == [
        ("b", 50.0, 25.0, 100.0)
    ]
    assert (st.status, st.rows) == ("ran", 1)
    assert st.reason.endswith("not compared (no before-span forecasts): m@single:events")
    assert "4 before / 4 after scores" in st.reason
    # a group scored before only (mid caps at 6 months: no live-span task) is named, not a row
    extra = _scores(
        [
            {
                "model_id": "b",
                "task_id": "t8",
                "target_id": "M",
                "domain": "mid_cap",
                "horizon": "6mo",
                "value": 1.0,
            }
        ]
    )
    t9 = pl.concat([tasks, pl.DataFrame({"task_id": ["t8"], "cutoff": [old]})])
    out2, st2 = analyses.living_data_run(pl.concat([sc, extra]), t9, BEFORE, AFTER)
    assert out2.height == 1 and "; scored in one span only: mid_cap trend3 6mo;" in st2.reason
    # nothing before the training cut-offs: refused, with the spans and the stored cutoffs in one line
    out, st = analyses.living_data_run(sc.filter(pl.col("task_id") >= "t4"), tasks, BEFORE, AFTER)
    assert out.height == 0 and st.status == "refused" and st.rows == 0
    assert st.reason == (
        "no scored trend task has its cutoff in the before span (before 2023-01-02..2024-06-02, after"
        " 2025-10-01..2026-04-05; scored trend cutoffs 2025-11-03..2025-11-03)"
    )
    # no alpha contexts, no unfiltered contexts: refused, naming what is missing
    out, st = analyses.alpha_consistency_run(sc)
    assert out.height == 0 and st.status == "refused" and "alpha=<a> or other_alpha=<a>" in st.reason
    out, st = analyses.fact_check_ablation_run(sc, empty_frame("leaf_forecasts"), pl.DataFrame())
    assert st.status == "refused" and st.reason.startswith(
        "missing scored forecasts with context events_unfiltered; the unfiltered contexts in leaf_forecasts:"
    )
    with pytest.raises(ValueError, match="expected one non-empty line"):
        analyses.AnalysisStatus("x", "ran", "a\nb")
    with pytest.raises(ValueError, match="status='done'"):
        analyses.AnalysisStatus("x", "done", "r")
    # the report: rows where an analysis ran, "not materialized: <reason>" everywhere else
    liv, liv_st = analyses.living_data_run(sc, tasks, BEFORE, AFTER)
    fc_st = analyses.fact_check_ablation_run(sc, empty_frame("leaf_forecasts"), pl.DataFrame())[1]
    status = analyses.status_frame([liv_st, fc_st], T0)
    assert status.select("partition_key", "status", "rows").rows() == [
        ("living_data_ablation", "ran", 1),
        ("fact_check_ablation", "refused", 0),
    ]
    text = analyses.render_report(
        {
            "living_data_ablation": liv,
            "fact_check_ablation": empty_frame("fact_check_ablation"),
            "alpha_consistency": empty_frame("alpha_consistency"),
        },
        status,
    )
    assert "| b | large_cap | trend3 | 1d | 50.000 | 25.000 | 4 | 4 | 100.000 |" in text
    assert f"not materialized: {fc_st.reason}" in text
    assert "not materialized: alpha_consistency holds no rows and no status was recorded" in text
    assert "not materialized: the event_filter_rates asset has not run on this database" in text
    sections = text.split("\n## ")[1:]
    assert len(sections) == 5 and all("| b |" in x or "not materialized: " in x for x in sections)


def test_the_living_data_before_span_from_the_stored_closes(snapshot_dir):
    from leaf_live.event import catalog, pipeline

    lo = pipeline.LIVING_BEFORE[0] - pipeline.LIVING_MARGIN_BEFORE
    hi = pipeline.LIVING_BEFORE[1] + pipeline.LIVING_MARGIN_AFTER
    syms = [t.symbol for t in (*catalog.LARGE_CAPS, *catalog.MID_CAPS)]
    prices = to_market_prices(SnapshotDailyPrices(snapshot_dir).daily_bars(syms, lo, hi))
    ts = pipeline.living_before_tasks(prices)
    t = ts.tasks
    day = t["cutoff"].dt.convert_time_zone("America/New_York").dt.date()
    assert day.min() >= date(2023, 1, 2) and day.max() <= date(2024, 6, 2)
    assert set(t.select("domain", "horizon").unique().rows()) <= {
        ("large_cap", "1d"),
        ("large_cap", "2d"),
        ("mid_cap", "3mo"),
        ("mid_cap", "6mo"),
    }
    assert set(t["task_kind"]) == {"trend3", "trend5"}
    # one AAPL task by hand: the 1-session trend from the cutoff's close to the next session's
    a = t.filter(pl.col("target_id") == "AAPL", pl.col("horizon") == "1d", pl.col("task_kind") == "trend3")
    px = prices.filter(pl.col("symbol") == "AAPL").sort("session_date")
    first = a.sort("cutoff").row(0, named=True)
    c = px.filter(pl.col("available_at") == first["cutoff"])
    nxt = px.filter(pl.col("session_date") > c["session_date"][0]).row(0, named=True)
    roc = (nxt["close"] - c["close"][0]) / c["close"][0]
    th = catalog.TREND_THRESHOLDS["large_cap"]
    from leaf_live.event.tasks import trend_label

    label = ts.outcomes.filter(pl.col("task_id") == first["task_id"])["label"][0]
    assert label == trend_label(roc, th, 3)
    tk, sc = pipeline.living_before_scores(prices, statistical=())
    assert tk.height == t.height
    acc = sc.filter(pl.col("metric") == "accuracy")
    assert set(acc["model_id"]) == {"baseline/last-value", "baseline/hist-mean"}
    assert acc.height == 2 * t.height
    # last value predicts no move: its accuracy is the share of Flat labels
    lv = acc.filter(pl.col("model_id") == "baseline/last-value").join(
        ts.outcomes.select("task_id", "label"), on="task_id"
    )
    assert lv["value"].mean() == pytest.approx((lv["label"] == "Neutral").mean())
    assert lv["value"].mean() > 0


def test_predictability_rater_against_the_server(seer, wire_server, provider_env):
    _, _, tasks, outcomes = seer
    tk = tasks.filter(pl.col("task_kind") == "trend3")

    def respond(req: WireRequest):
        ids = json.loads(re.search(r"exactly these keys: (\[.*\])", req.text()).group(1))
        return reply_ok(
            req, "<levels>" + json.dumps({t: (i % 5) + 1 for i, t in enumerate(ids)}) + "</levels>"
        )

    wire_server.reset(respond)
    rt = asyncio.run(rate_predictability(client(wire_server), ModelSpec.parse(CLAUDE), tk))
    assert rt.height == 50 and rt["valid"].all() and sorted(rt["level"].unique().to_list()) == [1, 2, 3, 4, 5]
    assert len(wire_server.requests) == 1
