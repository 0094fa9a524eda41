"""The event agents through Dagster against the local wire server (real HTTP, real litellm): the recorded SEER
case imported as recorded/seer rows; the daily LLM job on the 2026-03-25 cutoff with and without events
producing scored forecasts for every task behind the blocking context-leak check; a rematerialized day keeps
its counts; a stored leak fails the check and stops the scores; the weekly retrieval + dual fact-check of one
week x target over the offline store; with no model configured every LLM asset says so and writes nothing."""

import json
import re
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize
from llm_wire_server import WireRequest, provider_env, reply_ok, wire_server  # noqa: F401

from assets.event_agents import (
    RETRIEVAL_PARTITIONS,
    fact_checked_events,
    leaf_llm_forecasts,
    predictability_ratings,
    recorded_events,
    retrieved_events,
)
from assets.event_analyses import event_filter_rates
from leaf_live.core import storage
from leaf_live.definitions import build_definitions
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.recorded_events import read_seer_case
from leaf_live.event.tasks import market_tasks
from resources import LLMResource, default_resources
from sensors.event import event_llm_forecasts_job, event_retrieval_job

GPT, CLAUDE = "openai/gpt-5-search-api@single", "anthropic/claude-sonnet-4-5@single"
DAY = "2026-03-25"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def llm(server, models: str = GPT) -> LLMResource:
    return LLMResource(
        models=models, api_base=server.url, rpm="60000", concurrency="32", timeout_s="5", max_attempts="2"
    )


def _count(db: Path, sql: str) -> list[tuple]:
    with storage.open_db(db) as con:
        return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def seer_db(tmp_path_factory, snapshot_dir) -> Path:
    """A database holding the SEER stocks' prices around the case and the 150 tasks (trend3, trend5 at one
    session, series at three) of the 2026-03-25 cutoff, made by the task science on the stored prices."""
    db = tmp_path_factory.mktemp("agents") / "agents.duckdb"
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
    day = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date() == date(2026, 3, 25)
    tasks = ts.tasks.filter(day)
    outcomes = ts.outcomes.filter(pl.col("task_id").is_in(tasks["task_id"]))
    with storage.open_db(db) as con:
        storage.replace_partition(
            con, "market_prices", prices, {"partition_key": sorted(set(prices["partition_key"]))}
        )
        storage.replace_partition(con, "forecast_tasks", tasks, {"partition_key": [DAY]})
        storage.replace_partition(con, "task_outcomes", outcomes, {"partition_key": [DAY]})
    assert tasks.height == 150 and set(tasks["partition_key"]) == {DAY}
    return db


def respond(req: WireRequest):
    """Series: the last close twice, then 1% lower with events; trends: Strong Down / Down with events,
    Neutral without; predictability: levels 1..5 in turn."""
    text = req.text()
    if "exactly these keys: [" in text:
        ids = json.loads(re.search(r"exactly these keys: (\[.*\])", text).group(1))
        return reply_ok(
            req, "<levels>" + json.dumps({t: (i % 5) + 1 for i, t in enumerate(ids)}) + "</levels>"
        )
    has_events = "Events known by the cutoff:\nN/A" not in text
    if "exactly 3 plain numbers" in text:
        last = float(re.findall(r"(\d{4}-\d\d-\d\d), ([\d.]+)\n\nEvents", text)[-1][1])
        return reply_ok(
            req, f"<prediction>{last:.2f}, {last:.2f}, {last * (0.99 if has_events else 1):.2f}</prediction>"
        )
    five = "Strong Up" in text
    return reply_ok(
        req, f"<prediction>{('Strong Down' if five else 'Down') if has_events else 'Neutral'}</prediction>"
    )


def _run_day(db: Path, snapshot_dir: Path, server) -> object:
    resources = {**default_resources(db=db, snapshot=snapshot_dir), "llm": llm(server)}
    job = build_definitions(resources).resolve_job_def(event_llm_forecasts_job.name)
    return job.execute_in_process(
        partition_key=DAY, run_config=QUIET, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )


def _slice_counts(db: Path) -> dict[str, int]:
    q = {
        "forecasts": (
            "SELECT count(*) FROM leaf_forecasts WHERE producer = 'leaf_llm_forecasts' AND partition_key ="
            " 'llm:2026-03-25'"
        ),
        "trials": "SELECT count(*) FROM leaf_forecast_trials WHERE partition_key = 'llm:2026-03-25'",
        "calls": "SELECT count(*) FROM llm_calls WHERE partition_key = 'llm:2026-03-25'",
        "rating_calls": "SELECT count(*) FROM llm_calls WHERE partition_key = 'rating:2026-03-25'",
        "ratings": "SELECT count(*) FROM predictability_ratings WHERE partition_key = 'llm:2026-03-25'",
        "scores": "SELECT count(*) FROM leaf_scores WHERE model_id LIKE 'openai/%'",
    }
    return {k: _count(db, v)[0][0] for k, v in q.items()}


@pytest.fixture(scope="module")
def day_run(seer_db, snapshot_dir, wire_server, tmp_path_factory):
    """The SEER import, then the daily LLM job for 2026-03-25 (one model, ts and events)."""
    mp = pytest.MonkeyPatch()
    for k, v in (
        ("OPENAI_API_KEY", "sk-test-local-0000000000"),
        ("ANTHROPIC_API_KEY", "sk-ant-test-local-0000000000"),
        ("NO_PROXY", "127.0.0.1,localhost"),
        ("no_proxy", "127.0.0.1,localhost"),
    ):
        mp.setenv(k, v)
    mp.delenv("LEAF_LIVE_LLM_MODELS", raising=False)
    db = Path(shutil.copy(seer_db, tmp_path_factory.mktemp("day") / "day.duckdb"))
    imp = materialize(
        [recorded_events],
        resources=default_resources(db=db, snapshot=snapshot_dir),
        instance=DagsterInstance.ephemeral(),
        run_config=QUIET,
    )
    assert imp.success
    wire_server.reset(respond)
    result = _run_day(db, snapshot_dir, wire_server)
    yield {"db": db, "import": imp, "result": result, "requests": len(wire_server.requests), "env": mp}
    mp.undo()


def test_the_seer_case_is_imported_as_recorded_rows_and_its_labels_agree(day_run):
    db = day_run["db"]
    meta = day_run["import"].get_asset_materialization_events()[0].materialization.metadata
    assert meta["events"].value == 3871 and meta["stocks"].value == 50
    assert meta["labels_agree"].value == meta["labels_compared"].value == 50  # every realised label agrees
    assert _count(
        db,
        "SELECT count(*), count(DISTINCT partition_key) FROM retrieved_events WHERE retriever ="
        " 'recorded/seer'",
    ) == [(3871, 50)]
    assert _count(db, "SELECT count(*) FROM fact_checked_events WHERE kept AND check_mode = 'recorded'") == [
        (3871,)
    ]


def test_with_and_without_events_on_the_seer_cutoff_scored_for_every_task(day_run):
    db, result = day_run["db"], day_run["result"]
    assert result.success
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    leak = evals["context_leaks"]
    assert (
        leak.passed and leak.metadata["forecasts_checked"].value == 300 and leak.metadata["leaks"].value == 0
    )
    done = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    # the stored board follows: event_rankings, then the dbt mart event_board every face reads
    assert done == {
        "leaf_llm_forecasts",
        "predictability_ratings",
        "leaf_scores",
        "event_rankings",
        "event_board",
    }
    # 150 tasks x (ts, events), three trials each; 900 forecast calls + 2 rating calls (ts, events) for 50
    # stocks
    counts = _slice_counts(db)
    assert counts.pop("scores") > 300
    assert counts == {"forecasts": 300, "trials": 900, "calls": 900, "rating_calls": 2, "ratings": 100}
    assert day_run["requests"] == 902
    per = dict(
        _count(
            db,
            "SELECT model_id, count(DISTINCT task_id) FROM leaf_scores WHERE model_id LIKE 'openai/%' GROUP"
            " BY 1",
        )
    )
    assert per == {f"{GPT}:ts": 150, f"{GPT}:events": 150}
    acc = dict(
        _count(
            db,
            "SELECT model_id, sum(value) FROM leaf_scores WHERE metric = 'accuracy' AND task_kind = 'trend5' "
            "AND model_id LIKE 'openai/%' GROUP BY 1",
        )
    )
    # always Strong Down with events: the file's 16 Strong Down labels; always Neutral without: the 11 Neutral
    # ones
    assert acc == {f"{GPT}:events": 16.0, f"{GPT}:ts": 11.0}
    # every events context holds SEER events dated 2026-03-12 .. 2026-03-25 (14-day look-back), none later
    ctx = [
        json.loads(c)
        for (c,) in _count(db, "SELECT context FROM leaf_forecasts WHERE model_id LIKE '%:events'")
    ]
    dates = [e["date"] for c in ctx for e in c["events"]]
    assert all(c["events"] for c in ctx) and min(dates) >= "2026-03-12" and max(dates) == "2026-03-25"


def test_rematerializing_the_day_keeps_its_counts(day_run, snapshot_dir, wire_server):
    db = day_run["db"]
    before = _slice_counts(db)
    wire_server.reset(respond)
    assert _run_day(db, snapshot_dir, wire_server).success
    assert _slice_counts(db) == before
    assert _count(db, "SELECT count(*) FROM leaf_forecasts WHERE producer = 'leaf_forecasts'") == [
        (0,)
    ]  # untouched


def test_a_stored_leak_fails_the_blocking_check_and_stops_the_scores(
    day_run, snapshot_dir, wire_server, tmp_path
):
    db = Path(shutil.copy(day_run["db"], tmp_path / "leak.duckdb"))
    with storage.open_db(db) as con:
        row = storage.read_table(con, "leaf_forecasts", "model_id LIKE '%:events'").sort("task_id").head(1)
        ctx = json.loads(row["context"][0])
        ctx["events"].append(
            {
                "event_id": "leak",
                "date": "2026-03-26",
                "description": "the next session's close",
                "sentiment": "Negative",
            }
        )
        leak = row.with_columns(
            pl.lit("llm:2026-03-24").alias("partition_key"),
            pl.lit(json.dumps(ctx)).alias("context"),
            pl.lit("openai/leaky@single:events").alias("model_id"),
        )
        storage.replace_partition(
            con, "leaf_forecasts", leak, {"producer": "leaf_llm_forecasts", "partition_key": "llm:2026-03-24"}
        )
    scores_before = _count(db, "SELECT count(*), sum(value) FROM leaf_scores")
    wire_server.reset(respond)
    result = _run_day(db, snapshot_dir, wire_server)
    assert not result.success
    ev = {e.check_name: e for e in result.get_asset_check_evaluations()}["context_leaks"]
    assert (
        not ev.passed and ev.metadata["leaks"].value == 1 and row["task_id"][0] in ev.metadata["first"].value
    )
    assert "2026-03-26 after the cutoff day 2026-03-25" in ev.metadata["first"].value
    done = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert (
        "leaf_scores" not in done
        and _count(db, "SELECT count(*), sum(value) FROM leaf_scores") == scores_before
    )


WEEK = "2026-03-16|ADBE"  # Monday 2026-03-16 .. Sunday 2026-03-22


def retrieval_and_checks(req: WireRequest):
    """Retrieval: three events citing the recorded documents of the prompt in round 1, nothing new after;
    checkers: both confirm the first, disagree on the second's date, and both date the third after the
    week."""
    text = req.text()
    if "<document id=" in text:
        if "Events already identified" in text:
            return reply_ok(req, "[]")
        ids = re.findall(r'<document id="([0-9a-f]+)" published="([^"]+)"', text)
        evs = [
            {
                "date": d,
                "description": desc,
                "causality": "c",
                "sentiment": s,
                "impact_type": "Direct",
                "sources": [ids[i][0]],
            }
            for i, (d, desc, s) in enumerate(
                [
                    (
                        "2026-03-16",
                        (
                            "Adobe named a successor search committee after CEO Shantanu Narayen said he will"
                            " step down."
                        ),
                        "Negative",
                    ),
                    (
                        "2026-03-18",
                        "Adobe shares fell 3% after Citi cut its price target to $300.",
                        "Negative",
                    ),
                    (
                        "2026-03-20",
                        "Adobe reported record Firefly enterprise subscriptions in its quarterly results.",
                        "Positive",
                    ),
                ]
            )
        ]
        return reply_ok(req, json.dumps(evs))
    if "successor search committee" in text:
        return reply_ok(req, "<reasoning>filings</reasoning><factual>True</factual><date>2026-03-16</date>")
    if "Citi cut its price target" in text:
        d = "2026-03-18" if req.api == "openai" else "2026-03-19"
        return reply_ok(req, f"<reasoning>notes</reasoning><factual>True</factual><date>{d}</date>")
    return reply_ok(
        req, "<reasoning>results came later</reasoning><factual>True</factual><date>2026-03-24</date>"
    )


def test_weekly_retrieval_and_dual_fact_check_over_the_offline_store(
    wire_server, provider_env, snapshot_dir, tmp_path
):
    assert WEEK in RETRIEVAL_PARTITIONS.get_partition_keys()
    db = tmp_path / "week.duckdb"
    resources = {
        **default_resources(db=db, snapshot=snapshot_dir),
        "llm": llm(wire_server, f"{GPT},{CLAUDE}"),
    }
    job = build_definitions(resources).resolve_job_def(event_retrieval_job.name)

    def run():
        wire_server.reset(retrieval_and_checks)
        r = job.execute_in_process(partition_key=WEEK, run_config=QUIET, instance=DagsterInstance.ephemeral())
        assert r.success
        counts = {
            t: _count(db, f"SELECT count(*) FROM {t}")[0][0]
            for t in ("retrieved_events", "event_merges", "fact_checks", "fact_checked_events", "llm_calls")
        }
        return counts, list(wire_server.requests)

    counts, requests = run()
    # 3 rounds (the last two answer []), 3 events x 2 checkers
    assert counts == {
        "retrieved_events": 3,
        "event_merges": 0,
        "fact_checks": 6,
        "fact_checked_events": 3,
        "llm_calls": 9,
    }
    # the offline prompts hold only ADBE documents published by the end of the week (2026-03-23 00:00 UTC)
    pubs = [
        p
        for r in requests
        for _, p in re.findall(r'<document id="([0-9a-f]+)" published="([^"]+)"', r.text())
    ]
    assert pubs and max(datetime.fromisoformat(p) for p in pubs) <= datetime(2026, 3, 23, tzinfo=UTC)
    assert min(datetime.fromisoformat(p) for p in pubs) >= datetime(
        2026, 3, 16, tzinfo=UTC
    )  # published in the week
    dec = {
        r[0][:20]: r[1:]
        for r in _count(
            db,
            "SELECT description, kept, drop_reason, event_date, checker_a, checker_b "
            "FROM fact_checked_events",
        )
    }
    assert dec["Adobe named a succes"][:3] == (True, None, date(2026, 3, 16))
    assert dec["Adobe shares fell 3%"][:2] == (False, "date_mismatch")
    assert dec["Adobe reported recor"][:2] == (False, "after_cutoff")
    assert dec["Adobe named a succes"][3:] == (GPT, CLAUDE)
    assert _count(db, "SELECT DISTINCT partition_key FROM retrieved_events") == [(WEEK,)]
    assert dict(_count(db, "SELECT partition_key, count(*) FROM llm_calls GROUP BY 1")) == {
        f"retrieval:{WEEK}": 3,
        f"fact_check:{WEEK}": 6,
    }
    # rematerialized: the same counts; Table 2 from the stored rows
    again, _ = run()
    assert again == counts
    assert materialize(
        [event_filter_rates], resources=resources, instance=DagsterInstance.ephemeral()
    ).success
    rate = _count(db, "SELECT retriever, n_events, n_kept, filter_rate FROM event_filter_rates")
    assert rate == [(f"offline/{GPT}", 3, 1, pytest.approx(2 / 3))]


def test_with_no_model_configured_the_llm_assets_say_so_and_write_nothing(
    seer_db, snapshot_dir, tmp_path, monkeypatch
):
    monkeypatch.delenv("LEAF_LIVE_LLM_MODELS", raising=False)
    db = Path(shutil.copy(seer_db, tmp_path / "none.duckdb"))
    resources = {**default_resources(db=db, snapshot=snapshot_dir), "llm": LLMResource()}
    instance = DagsterInstance.ephemeral()
    for assets, key in (
        ([leaf_llm_forecasts, predictability_ratings], DAY),
        ([retrieved_events, fact_checked_events], WEEK),
    ):
        r = materialize(assets, resources=resources, instance=instance, partition_key=key, run_config=QUIET)
        assert r.success
        assert {e.materialization.metadata["status"].value for e in r.get_asset_materialization_events()} == {
            "no model configured"
        }
        logs = [e.user_message for e in instance.all_logs(r.run_id)]
        assert sum("no LLM models configured" in m for m in logs) == len(assets)
    for t in (
        "leaf_forecasts",
        "leaf_forecast_trials",
        "llm_calls",
        "predictability_ratings",
        "retrieved_events",
        "fact_checked_events",
    ):
        assert _count(db, f"SELECT count(*) FROM {t}") == [(0,)], t
    # the whole daily job on an empty database: nothing to forecast, nothing to score, success
    empty = tmp_path / "empty.duckdb"
    job = build_definitions(
        {**default_resources(db=empty, snapshot=snapshot_dir), "llm": LLMResource()}
    ).resolve_job_def(event_llm_forecasts_job.name)
    r = job.execute_in_process(partition_key=DAY, run_config=QUIET, instance=instance)
    assert r.success and _count(empty, "SELECT count(*) FROM leaf_scores") == [(0,)]


def test_the_analyses_on_the_day_and_the_fact_check_ablation(day_run, snapshot_dir, wire_server, tmp_path):
    db = Path(shutil.copy(day_run["db"], tmp_path / "ablation.duckdb"))
    resources = {**default_resources(db=db, snapshot=snapshot_dir), "llm": llm(wire_server)}
    defs = build_definitions(resources)
    wire_server.reset(respond)
    # the day again with the unfiltered events beside the fact-checked ones (trend5 only): the day's slice
    # holds what this run's config asks for
    cfg = {
        **QUIET,
        "ops": {
            "leaf_llm_forecasts": {
                "config": {"context_kinds": ["events", "events_unfiltered"], "task_kinds": ["trend5"]}
            }
        },
    }
    r = defs.resolve_job_def(event_llm_forecasts_job.name).execute_in_process(
        partition_key=DAY, run_config=cfg, instance=DagsterInstance.ephemeral()
    )
    assert r.success
    live = {
        "ops": {"living_data_ablation": {"config": {"after_start": "2026-03-01", "after_end": "2026-03-31"}}},
        **QUIET,
    }
    assert (
        defs.resolve_job_def("leaf_live_event_analyses")
        .execute_in_process(run_config=live, instance=DagsterInstance.ephemeral())
        .success
    )
    # the unfiltered SEER events are the kept ones (the source kept them all): no inflation, no leaked event
    ab = _count(
        db,
        "SELECT model_id, metric, n, value_filtered, value_unfiltered, inflation, n_leaked_events "
        "FROM fact_check_ablation",
    )
    assert ab == [(GPT, "accuracy", 50, 0.32, 0.32, 0.0, 0)]
    # living data: every task of the day is in the live span and the store holds no closes of the before span
    # (Table 9's 2023-01-02..2024-06-02): refused in one line, no row with an empty side
    assert _count(db, "SELECT count(*) FROM living_data_ablation") == [(0,)]
    status = dict(
        (a, (s, r, n))
        for a, s, r, n in _count(db, "SELECT analysis, status, reason, rows FROM event_analysis_status")
    )
    assert status["living_data_ablation"] == (
        "refused",
        "no scored trend task has its cutoff in the before span (before 2023-01-02..2024-06-02, after"
        " 2026-03-01..2026-03-31; scored trend cutoffs 2026-03-25..2026-03-25); market_prices holds 0 closes"
        " for 2022-09-24..2024-12-09, too few for a before-span task",
        0,
    )
    assert status["fact_check_ablation"][0] == "ran" and status["fact_check_ablation"][2] == 1
    assert status["alpha_consistency"][0] == "refused"
    assert status["predictability_accuracy"][0] == "ran" and status["event_filter_rates"][0] == "ran"
    # predictability: per level, the share of the level's stocks whose label the forecast hit, by SQL on the
    # stored ratings and outcomes (one cutoff, so the per-day mean is the mean)
    want = dict(
        _count(
            db,
            """
        SELECT r.level, 100 * avg(CASE WHEN o.label = 'Strong Down' THEN 1 ELSE 0 END)
        FROM predictability_ratings r
        JOIN forecast_tasks t ON t.target_id = r.target_id AND t.cutoff = r.cutoff
        JOIN task_outcomes o USING (task_id)
        WHERE r.context_kind = 'events' AND t.task_kind = 'trend5' GROUP BY 1""",
        )
    )
    got = dict(
        _count(
            db,
            f"SELECT level, accuracy FROM predictability_accuracy WHERE model_id = '{GPT}:events' "
            "AND task_kind = 'trend5'",
        )
    )
    assert sorted(got) == [1, 2, 3, 4, 5] and got == pytest.approx(want)
    assert _count(db, "SELECT sum(n) FROM predictability_accuracy WHERE task_kind = 'trend5'") == [(50,)]
    assert _count(db, "SELECT count(*) FROM alpha_consistency") == [(0,)]  # SEER events carry no sentiment


def test_alpha_contexts_through_the_daily_job(day_run, snapshot_dir, wire_server, tmp_path):
    db = Path(shutil.copy(day_run["db"], tmp_path / "alpha.duckdb"))
    with storage.open_db(db) as con:  # SEER events carry no sentiment: give them one, alternating by event id
        con.execute(
            "UPDATE fact_checked_events SET sentiment = CASE WHEN hash(event_id) % 2 = 0 THEN 'Positive' "
            "ELSE 'Negative' END"
        )
    defs = build_definitions({**default_resources(db=db, snapshot=snapshot_dir), "llm": llm(wire_server)})
    wire_server.reset(respond)
    cfg = {
        **QUIET,
        "ops": {
            "leaf_llm_forecasts": {
                "config": {"context_kinds": ["alpha"], "task_kinds": ["trend3"], "trials": 1}
            }
        },
    }
    r = defs.resolve_job_def(event_llm_forecasts_job.name).execute_in_process(
        partition_key=DAY, run_config=cfg, instance=DagsterInstance.ephemeral()
    )
    assert r.success and {e.check_name: e.passed for e in r.get_asset_check_evaluations()}["context_leaks"]
    moved = _count(
        db,
        "SELECT count(*), avg(CASE WHEN o.label = 'Down' THEN 0 ELSE 1 END) FROM forecast_tasks t "
        "JOIN task_outcomes o USING (task_id) WHERE t.task_kind = 'trend3' AND o.change <> 0",
    )[0]
    # six alphas x every trend3 task with a move; each context 5 events, round(5 alpha) of them consistent
    assert _count(db, "SELECT count(*) FROM leaf_forecasts WHERE model_id LIKE '%:alpha=%'") == [
        (6 * moved[0],)
    ]
    ctx = [
        json.loads(c)
        for (c,) in _count(db, f"SELECT context FROM leaf_forecasts WHERE model_id = '{GPT}:alpha=0.6'")
    ]
    assert {len(c["events"]) for c in ctx} == {5} and all(
        e["date"] <= "2026-03-25" for c in ctx for e in c["events"]
    )
    assert (
        defs.resolve_job_def("leaf_live_event_analyses")
        .execute_in_process(run_config=QUIET, instance=DagsterInstance.ephemeral())
        .success
    )
    tab = _count(
        db,
        "SELECT alpha, n, mean_error, correlation FROM alpha_consistency WHERE variant = 'target' ORDER BY"
        " alpha",
    )
    # the local model always answers Down with events: the error is the share of moves that were not Down, at
    # every alpha, so there is no correlation with alpha (None for an exactly constant error, else 0 to
    # rounding)
    assert [a for a, *_ in tab] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0] and moved == (50, pytest.approx(0.38))
    assert all(
        n == moved[0] and e == pytest.approx(moved[1]) and (c is None or abs(c) < 1e-9) for _, n, e, c in tab
    ), tab


QID = "0x00cf5f4a419743e3bbaea3d01537"  # prefix; the full id is read from the snapshot


def test_prediction_market_questions_are_weekly_retrieval_targets(
    wire_server, provider_env, snapshot_dir, tmp_path
):
    from assets.event_agents import QUESTION_RETRIEVAL_PARTITIONS
    from assets.event_data import EVENT_QUESTIONS
    from leaf_live.event.agents.retrieval import question_weeks
    from leaf_live.event.sources.prediction_markets import SnapshotPredictionMarkets
    from sensors.event import event_question_retrieval_job

    pm = SnapshotPredictionMarkets(snapshot_dir).load()
    q = pm.questions.filter(pl.col("question_id").str.starts_with(QID))
    qid, text = q["question_id"][0], q["question"][0]
    # open 2026-03-30, resolves 2026-04-16: the three weeks it is open, the ones that have ended by "now"
    mondays = [date(2026, 3, 23), date(2026, 3, 30), date(2026, 4, 6), date(2026, 4, 13), date(2026, 4, 20)]
    o, r = q["open_at"][0], q["resolve_at"][0]
    assert (o.date(), r.date()) == (date(2026, 3, 30), date(2026, 4, 16))
    assert question_weeks(o, r, mondays, now=datetime(2026, 12, 1, tzinfo=UTC)) == mondays[1:4]
    assert question_weeks(o, r, mondays, now=datetime(2026, 4, 10, tzinfo=UTC)) == [date(2026, 3, 30)]
    assert question_weeks(None, r, mondays, now=datetime(2026, 12, 1, tzinfo=UTC)) == []

    db = tmp_path / "questions.duckdb"
    with storage.open_db(db) as con:
        storage.replace_partition(con, "prediction_markets", q, {"partition_key": [qid]})
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(EVENT_QUESTIONS.name, [qid])
    key = f"2026-03-30|{qid}"
    assert key in QUESTION_RETRIEVAL_PARTITIONS.get_partition_keys(dynamic_partitions_store=instance)

    def respond(req: WireRequest):
        t = req.text()
        if '"causality"' in t:  # a retrieval round: the same event every round (later rounds: a repeat)
            ev = {
                "date": "2026-03-31",
                "description": "Israel struck targets near Beirut, the army said on March 31.",
                "causality": "raises the chance of further action",
                "sentiment": "Positive",
                "impact_type": "Direct",
                "sources": [],
            }
            return reply_ok(req, json.dumps([ev]))
        return reply_ok(req, "<reasoning>reports</reasoning><factual>True</factual><date>2026-03-31</date>")

    resources = {
        **default_resources(db=db, snapshot=snapshot_dir),
        "llm": llm(wire_server, f"{GPT},{CLAUDE}"),
    }
    job = build_definitions(resources).resolve_job_def(event_question_retrieval_job.name)
    wire_server.reset(respond)
    assert job.execute_in_process(partition_key=key, run_config=QUIET, instance=instance).success
    retrieval = [x for x in wire_server.requests if '"causality"' in x.text()]
    assert retrieval and all(" ".join(text.split()) in " ".join(r.text().split()) for r in retrieval)
    got = _count(
        db,
        "SELECT partition_key, domain, target_id, interval_start, interval_end, valid FROM retrieved_events"
        " WHERE valid",
    )
    assert got and {g[:5] for g in got} == {(key, "event", qid, date(2026, 3, 30), date(2026, 4, 5))}
    kept = _count(db, "SELECT target_id, event_date, kept FROM fact_checked_events")
    assert (qid, date(2026, 3, 31), True) in kept
    assert _count(db, "SELECT DISTINCT partition_key FROM llm_calls ORDER BY 1") == [
        (f"fact_check:{key}",),
        (f"retrieval:{key}",),
    ]
    # the week before it opened: nothing to search, no call, an empty slice
    before = f"2026-03-23|{qid}"
    wire_server.reset(respond)
    res = job.execute_in_process(partition_key=before, run_config=QUIET, instance=instance)
    assert res.success and not wire_server.requests
    meta = res.get_asset_materialization_events()[0].materialization.metadata
    assert meta["skipped"].value == [
        f"question {qid} is not open in the week of 2026-03-23 (opened {o}, resolves {r}) or the week has not"
        " ended"
    ]
    assert _count(db, f"SELECT count(*) FROM retrieved_events WHERE partition_key = '{before}'") == [(0,)]
    # the weekly schedule asks for the question's week once it has ended, and for no week it is closed
    from dagster import SkipReason, build_schedule_context

    from resources import ClockResource, LeafLiveDB
    from sensors.event import weekly_question_retrieval_tick

    def tick(at: datetime):
        return weekly_question_retrieval_tick(
            build_schedule_context(scheduled_execution_time=at),
            clock=ClockResource(),
            db=LeafLiveDB(database=str(db)),
            llm=llm(wire_server),
        )

    assert [x.partition_key for x in tick(datetime(2026, 4, 13, 5, 15, tzinfo=UTC))] == [f"2026-04-06|{qid}"]
    closed = tick(datetime(2026, 4, 27, 5, 15, tzinfo=UTC))
    assert isinstance(closed, SkipReason) and "no stored question was open" in closed.skip_message
