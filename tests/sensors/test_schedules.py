"""The living service's switch, schedules and event sensors: what each tick requests, and the reason it gives
when there is nothing to do."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
)

from leaf_live.core import storage
from leaf_live.core.llm import NO_MODELS_MESSAGE
from leaf_live.core.pit import days_complete
from leaf_live.core.settings import SettingsError, get_settings
from leaf_live.event.sources.prediction_markets import (
    SnapshotPredictionMarkets,
    market_data_known_at,
    resolutions_landed,
)
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot
from leaf_live.macro.windows import nowcast_windows
from resources import ClockResource, LeafLiveDB, LLMResource
from sensors import living_service
from sensors.event import (
    event_days_schedule_tick,
    event_days_tick,
    event_forecasts_tick,
    llm_forecasts_tick,
    retry_wait,
    weekly_retrieval_tick,
)
from sensors.macro import llm_nowcast_tick

NAMES = {
    "release_landed_sensor",
    "windows_ahead_sensor",
    "event_questions_sensor",
    "event_days_sensor",
    "submissions_sensor",  # issue 21
    "submissions_rescore_sensor",
    "llm_nowcasts_hourly_schedule",
    "event_days_daily_schedule",
    "event_forecasts_daily_schedule",
    "event_llm_forecasts_daily_schedule",
    "event_retrieval_weekly_schedule",
    "event_question_retrieval_weekly_schedule",
}


def test_every_sensor_and_schedule_is_stopped_by_default_and_running_by_the_one_switch(monkeypatch):
    monkeypatch.delenv("LEAF_LIVE_SCHEDULES", raising=False)
    off = living_service(get_settings())
    assert {d.name for d in [*off.sensors, *off.schedules]} == NAMES
    assert {s.default_status for s in off.sensors} == {DefaultSensorStatus.STOPPED}
    assert {s.default_status for s in off.schedules} == {DefaultScheduleStatus.STOPPED}
    monkeypatch.setenv("LEAF_LIVE_SCHEDULES", "on")
    on = living_service(get_settings())
    assert {s.default_status for s in on.sensors} == {DefaultSensorStatus.RUNNING}
    assert {s.default_status for s in on.schedules} == {DefaultScheduleStatus.RUNNING}
    monkeypatch.setenv("LEAF_LIVE_SCHEDULES", "yes")
    with pytest.raises(SettingsError, match="LEAF_LIVE_SCHEDULES='yes': expected 'on' or 'off'"):
        get_settings()
    monkeypatch.setenv("LEAF_LIVE_SCHEDULES", "off")
    monkeypatch.setenv("LEAF_LIVE_CLOCK", "2026-02-11 14:00")
    with pytest.raises(SettingsError, match="LEAF_LIVE_CLOCK='2026-02-11 14:00': give a time zone"):
        get_settings()


def test_weekly_retrieval_requests_every_target_of_the_week_that_ended():
    from assets.event_agents import RETRIEVAL_TARGETS

    models = LLMResource(models="openai/gpt-5@single")
    monday = datetime(2026, 3, 30, 5, tzinfo=UTC)  # a Monday: the week 2026-03-23 .. 03-29 has ended
    reqs = weekly_retrieval_tick(
        build_schedule_context(scheduled_execution_time=monday), clock=ClockResource(), llm=models
    )
    assert [r.partition_key for r in reqs] == [f"2026-03-23|{t}" for t in RETRIEVAL_TARGETS]
    assert len({r.run_key for r in reqs}) == len(RETRIEVAL_TARGETS) > 0
    skip = weekly_retrieval_tick(
        build_schedule_context(scheduled_execution_time=monday), clock=ClockResource(), llm=LLMResource()
    )
    assert isinstance(skip, SkipReason) and skip.skip_message == f"week of 2026-03-23: {NO_MODELS_MESSAGE}"
    early = weekly_retrieval_tick(
        build_schedule_context(scheduled_execution_time=datetime(2025, 9, 29, 5, tzinfo=UTC)),
        clock=ClockResource(),
        llm=models,
    )
    assert isinstance(early, SkipReason) and "week of 2025-09-22: not a retrieval week" in early.skip_message


@pytest.fixture()
def windows_db(tmp_path, snapshot_dir):
    """A DuckDB file holding the nowcast windows of February 2026's first releases (windows open on the 25th
    of the reference month, 00:00 New York, and close at the release)."""
    rel = first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar(months=["2026-01", "2026-02"]))
    win = nowcast_windows(rel.filter(pl.col("partition_key") == "2026-02"))
    path = tmp_path / "windows.duckdb"
    with storage.open_db(path) as con:
        storage.replace_partition(con, "nowcast_windows", win, {"partition_key": "2026-02"})
    return path, win


def test_the_hourly_nowcast_tick_runs_only_hours_with_an_open_window_and_models(windows_db):
    path, win = windows_db
    db, models = LeafLiveDB(database=str(path)), LLMResource(models="openai/gpt-5@single")

    def tick(at, llm=models):
        return llm_nowcast_tick(
            build_schedule_context(scheduled_execution_time=at), clock=ClockResource(), db=db, llm=llm
        )

    # CPI (released 2026-02-13 13:30 UTC) is open from 2026-01-25 05:00 UTC; at 13:05 every window still open
    # counts
    at = datetime(2026, 2, 13, 13, 5, tzinfo=UTC)
    req = tick(at)
    n_open = win.filter(
        (pl.col("opens_at") <= at.replace(minute=0)) & (pl.col("closes_at") > at.replace(minute=0))
    ).height
    assert isinstance(req, RunRequest) and req.partition_key == "2026-02-13-13:00" and n_open >= 1
    assert req.tags["leaf_live/open_windows"] == str(n_open)
    # after the month's last release (PPI 2026-02-27 13:30 UTC) and before its first window opens: nothing to
    # do
    first_open = win["opens_at"].min()
    for quiet in (datetime(2026, 3, 10, 12, 5, tzinfo=UTC), first_open - timedelta(minutes=55)):
        skip = tick(quiet)
        assert (
            isinstance(skip, SkipReason)
            and "no nowcast window is open (nothing to nowcast)" in skip.skip_message
        )
    skip = tick(at, LLMResource())
    assert isinstance(skip, SkipReason) and skip.skip_message == f"hour 2026-02-13-13:00: {NO_MODELS_MESSAGE}"
    # a simulated clock (LEAF_LIVE_CLOCK) decides the hour instead of the tick time
    sim = llm_nowcast_tick(
        build_schedule_context(scheduled_execution_time=datetime(2026, 3, 10, 12, 5, tzinfo=UTC)),
        clock=ClockResource(at="2026-02-13T13:40:00Z"),
        db=db,
        llm=models,
    )
    assert isinstance(sim, RunRequest) and sim.partition_key == "2026-02-13-13:00"


def test_daily_ingestion_requests_yesterday_until_every_daily_asset_has_it():
    with instance_for_test() as instance:
        _daily_ingestion(instance)


def _daily_ingestion(instance):
    at = datetime(2026, 2, 10, 6, tzinfo=UTC)
    ctx = build_schedule_context(instance=instance, scheduled_execution_time=at)
    req = event_days_schedule_tick(ctx, clock=ClockResource())
    assert isinstance(req, RunRequest) and req.partition_key == "2026-02-09"
    assert req.tags["leaf_live/missing"] == "market_prices,weather_hourly,electricity_load,forecast_tasks"
    for key in ("market_prices", "weather_hourly", "electricity_load", "forecast_tasks"):
        instance.report_runless_asset_event(
            AssetMaterialization(asset_key=AssetKey(key), partition="2026-02-09")
        )
    skip = event_days_schedule_tick(
        build_schedule_context(instance=instance, scheduled_execution_time=at), clock=ClockResource()
    )
    assert isinstance(skip, SkipReason)
    assert (
        skip.skip_message == "day 2026-02-09: every daily asset is materialized already (nothing to ingest)"
    )


def test_daily_forecasts_skip_without_tasks_and_run_with_them(tmp_path, main_run):
    ctx = build_schedule_context(scheduled_execution_time=datetime(2026, 2, 10, 7, tzinfo=UTC))
    skip = event_forecasts_tick(
        ctx, clock=ClockResource(), db=LeafLiveDB(database=str(tmp_path / "empty.duckdb"))
    )
    assert (
        isinstance(skip, SkipReason)
        and skip.skip_message == "no forecast task is stored yet (nothing to forecast)"
    )
    con = storage.connect_read_only(main_run["db"])
    n = con.execute("SELECT count(*) FROM forecast_tasks").fetchone()[0]
    # a UTC day with cutoffs and the count of its tasks, and a day without any
    day, n_day = con.execute(
        "SELECT CAST(cutoff AS DATE) d, count(*) FROM forecast_tasks GROUP BY 1 ORDER BY 1 LIMIT 1"
    ).fetchone()
    con.close()
    db = LeafLiveDB(database=str(main_run["db"]))
    req = event_forecasts_tick(ctx, clock=ClockResource(), db=db)
    assert n > 0 and isinstance(req, RunRequest) and req.tags["leaf_live/tasks"] == str(n)
    assert req.run_key == "forecasts/2026-02-10"
    # the LLM forecasts: yesterday's cutoffs, with models
    models = LLMResource(models="openai/gpt-5@single")
    tick_at = datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC).replace(hour=7, minute=30)
    llm_req = llm_forecasts_tick(
        build_schedule_context(scheduled_execution_time=tick_at), clock=ClockResource(), db=db, llm=models
    )
    assert isinstance(llm_req, RunRequest) and llm_req.partition_key == day.isoformat()
    assert llm_req.tags["leaf_live/tasks"] == str(n_day)
    none_day = llm_forecasts_tick(
        build_schedule_context(scheduled_execution_time=tick_at - timedelta(days=400)),
        clock=ClockResource(),
        db=db,
        llm=models,
    )
    assert (
        isinstance(none_day, SkipReason)
        and "no forecast task has its cutoff on this day" in none_day.skip_message
    )
    no_models = llm_forecasts_tick(
        build_schedule_context(scheduled_execution_time=tick_at),
        clock=ClockResource(),
        db=db,
        llm=LLMResource(),
    )
    assert isinstance(no_models, SkipReason) and no_models.skip_message == f"day {day}: {NO_MODELS_MESSAGE}"


def test_a_day_is_requested_per_source_once_its_end_plus_the_lag_has_passed():
    assert days_complete(datetime(2026, 2, 10, 0, 59, tzinfo=UTC), timedelta(hours=1), date(2026, 2, 8)) == [
        date(2026, 2, 8)
    ]
    assert days_complete(datetime(2026, 2, 10, 1, 0, tzinfo=UTC), timedelta(hours=1), date(2026, 2, 8)) == [
        date(2026, 2, 8),
        date(2026, 2, 9),
    ]
    instance = DagsterInstance.ephemeral()
    cursor = json.dumps(
        {"market_prices": "2026-02-08", "weather_hourly": "2026-02-08", "electricity_load": "2026-02-08"}
    )
    seen = []
    # the clock hour by hour over 2026-02-10: prices of the 9th at 01:00 (1 h lag), load at 02:00, weather at
    # 06:00
    for h in range(24):
        at = datetime(2026, 2, 10, h, tzinfo=UTC)
        data = event_days_tick(
            build_sensor_context(instance=instance, cursor=cursor), clock=ClockResource(at=at.isoformat())
        )
        cursor = data.cursor
        seen += [
            (h, r.asset_selection[0].to_user_string(), r.partition_key)
            for r in data.run_requests
            if "/retry" not in r.run_key  # asked again while not materialized: the backoff test below
        ]
        if not data.run_requests:
            assert "no day newly complete at any daily source" in data.skip_reason.skip_message
    assert seen == [
        (1, "market_prices", "2026-02-09"),
        (2, "electricity_load", "2026-02-09"),
        (6, "weather_hourly", "2026-02-09"),
    ]
    # a restart from the stored cursor requests nothing more that day
    again = event_days_tick(
        build_sensor_context(instance=instance, cursor=cursor), clock=ClockResource(at="2026-02-10T23:00:00Z")
    )
    assert [r for r in again.run_requests if "/retry" not in r.run_key] == []


def test_a_requested_day_not_materialized_is_asked_again_with_backoff_until_it_is():
    instance = DagsterInstance.ephemeral()
    cursor = json.dumps(
        {"market_prices": "2026-02-08", "weather_hourly": "2026-02-09", "electricity_load": "2026-02-09"}
    )
    asked = []  # (minutes after the first request, run_key) of market_prices 2026-02-09
    start = datetime(2026, 2, 10, 1, 0, tzinfo=UTC)  # 2026-02-09's prices are complete (1 h lag)
    for m in range(0, 16 * 60, 15):
        if m == 9 * 60:  # the source had the whole day at last: the 4th run materialized it
            instance.report_runless_asset_event(AssetMaterialization("market_prices", partition="2026-02-09"))
        data = event_days_tick(
            build_sensor_context(instance=instance, cursor=cursor),
            clock=ClockResource(at=(start + timedelta(minutes=m)).isoformat()),
        )
        cursor = data.cursor
        asked += [(m, r.run_key) for r in data.run_requests if r.partition_key == "2026-02-09"]
        if not data.run_requests:
            assert "days waiting to be asked again" in data.skip_reason.skip_message
    # waits of 1 h, 2 h, 4 h between asks; none once materialized
    assert asked == [
        (0, "market_prices/2026-02-09"),
        (60, "market_prices/2026-02-09/retry1"),
        (180, "market_prices/2026-02-09/retry2"),
        (420, "market_prices/2026-02-09/retry3"),
    ]
    assert json.loads(cursor)["retry"] == {}
    assert [retry_wait(n).total_seconds() / 3600 for n in (1, 2, 3, 5, 6, 9)] == [1, 2, 4, 16, 24, 24]


def test_a_question_resolution_lands_once_when_the_clock_passes_it(snapshot_dir):
    data = SnapshotPredictionMarkets(snapshot_dir).load()
    res = data.path.filter(pl.col("kind") == "resolution").sort("available_at", "question_id")
    qid, at = res["question_id"][0], res["available_at"][0]
    before = market_data_known_at(data, at - timedelta(hours=1))
    known = before.questions.filter(pl.col("question_id") == qid)
    # listed before it resolved (or not yet listed); either way the replay shows no resolution yet
    assert known.height == 0 or known["resolve_at"][0] is None
    assert before.path.filter((pl.col("question_id") == qid) & (pl.col("kind") == "resolution")).height == 0
    stored = pl.DataFrame(
        {"question_id": [qid], "resolve_at": [None]},
        schema={"question_id": pl.Utf8, "resolve_at": pl.Datetime("us", "UTC")},
    )
    assert resolutions_landed(before, stored, [], at - timedelta(hours=1)).height == 0
    landed = resolutions_landed(market_data_known_at(data, at), stored, [], at)
    assert qid in landed["question_id"].to_list()
    assert landed.filter(pl.col("question_id") == qid)["resolved_at"][0] == at
    assert (
        qid not in resolutions_landed(data, stored, [qid], at)["question_id"].to_list()
    )  # requested already
    done = stored.with_columns(pl.lit(at).alias("resolve_at"))
    assert qid not in resolutions_landed(data, done, [], at)["question_id"].to_list()  # stored resolved


def test_the_questions_sensor_requests_a_question_again_once_when_its_resolution_lands(
    snapshot_dir, tmp_path
):
    from assets.event_data import EVENT_QUESTIONS, question_keys
    from resources.sources import EventMarketsSnapshotResource
    from sensors.event import event_questions_tick

    data = SnapshotPredictionMarkets(snapshot_dir).load()
    keys = set(question_keys(data.questions))
    res = data.path.filter((pl.col("kind") == "resolution") & pl.col("question_id").is_in(list(keys)))
    # a LEAF-category question listed well before its resolution lands
    listed = data.questions.select("question_id", pl.col("available_at").alias("listed_at"))
    res = res.join(listed, on="question_id").filter(
        pl.col("available_at") - pl.col("listed_at") > timedelta(days=2)
    )
    qid, at = res.sort("available_at", "question_id").select("question_id", "available_at").row(0)
    before = at - timedelta(hours=1)
    # the store holds the question as its run saw it an hour before the resolution: unresolved
    db_path = tmp_path / "questions.duckdb"
    known = market_data_known_at(data, before).questions.filter(pl.col("question_id") == qid)
    assert known.height == 1 and known["resolve_at"][0] is None
    with storage.open_db(db_path) as con:
        storage.replace_partition(con, "prediction_markets", known, {"partition_key": qid})
    instance = DagsterInstance.ephemeral()

    def tick(t, cursor):
        markets = EventMarketsSnapshotResource(snapshot_dir=str(snapshot_dir), known_at=t.isoformat())
        return event_questions_tick(
            build_sensor_context(instance=instance, cursor=cursor),
            clock=ClockResource(at=t.isoformat()),
            event_markets=markets,
            db=LeafLiveDB(database=str(db_path)),
        )

    first = tick(before, None)
    listed_keys = [r.partition_key for r in first.run_requests if r.run_key.startswith("listed/")]
    assert qid in listed_keys and not any(r.run_key == f"resolved/{qid}" for r in first.run_requests)
    instance.add_dynamic_partitions(
        EVENT_QUESTIONS.name, listed_keys
    )  # what the daemon applies from the result
    landed = tick(at, first.cursor)
    mine = [r for r in landed.run_requests if r.run_key == f"resolved/{qid}"]
    assert len(mine) == 1 and mine[0].partition_key == qid
    assert mine[0].tags["leaf_live/resolved_at"] == at.isoformat()
    assert not any(r.run_key.startswith("listed/") for r in landed.run_requests)  # nothing new listed since
    later = tick(at + timedelta(hours=1), landed.cursor)
    assert not any(r.partition_key == qid for r in later.run_requests)  # once


def test_a_tick_while_the_database_is_being_written_skips_and_says_so(windows_db):
    path, _ = windows_db
    writer = storage.connect(path)  # a run holding the file open for writing
    try:
        skip = llm_nowcast_tick(
            build_schedule_context(scheduled_execution_time=datetime(2026, 2, 13, 13, 5, tzinfo=UTC)),
            clock=ClockResource(),
            db=LeafLiveDB(database=str(path)),
            llm=LLMResource(models="openai/gpt-5@single"),
        )
    finally:
        writer.close()
    assert isinstance(skip, SkipReason) and "held by a writer" in skip.skip_message
    assert skip.skip_message.endswith("retrying at the next tick")
