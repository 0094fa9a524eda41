"""Live windows before their release lands (issue 12 item 2: hourly nowcasts during open windows).

``windows_ahead_sensor`` requests the clock's release month and the next one once each; the requested run
(release_calendar + nowcast_windows) on the snapshot replayed at 2026-02-10 00:00 UTC stores windows for
February's releases that have not landed, so the windows open at that hour are the ones whose release is
still ahead, and the hourly nowcast schedule requests the hour instead of skipping it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import polars as pl
from dagster import AssetKey, DagsterInstance, build_schedule_context, build_sensor_context

from leaf_live.core import storage
from leaf_live.core.settings import get_settings
from leaf_live.definitions import build_definitions
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot
from leaf_live.macro.windows import open_windows
from resources import ClockResource, LeafLiveDB, LLMResource, default_resources
from sensors.macro import WINDOWS_JOB, llm_nowcast_tick

AT = datetime(2026, 2, 10, 0, tzinfo=UTC)


def _resources(snapshot_dir, db, at, **extra):
    s = replace(get_settings(), snapshot_dir=snapshot_dir, transport="snapshot", clock=at, **extra)
    return default_resources(db=db, settings=s)


def test_each_month_is_requested_once_and_a_restart_requests_nothing(snapshot_dir, tmp_path):
    defs = build_definitions(default_resources(db=":memory:"))
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def("windows_ahead_sensor")
    instance = DagsterInstance.ephemeral()

    def tick(at, cursor):
        r = _resources(snapshot_dir, tmp_path / "x.duckdb", at)
        ctx = build_sensor_context(
            instance=instance, cursor=cursor, repository_def=repo, resources={"clock": r["clock"]}
        )
        return sensor.evaluate_tick(ctx)

    first = tick(AT, None)
    assert [(q.partition_key, q.run_key) for q in first.run_requests] == [
        ("2026-02", "windows/2026-02"),
        ("2026-03", "windows/2026-03"),
    ]
    again = tick(datetime(2026, 2, 20, tzinfo=UTC), first.cursor)  # same months: nothing, with the reason
    assert again.run_requests == [] and "requested already" in again.skip_message
    march = tick(datetime(2026, 3, 2, 12, tzinfo=UTC), first.cursor)
    assert [q.partition_key for q in march.run_requests] == ["2026-04"]
    restart = tick(datetime(2026, 3, 2, 13, tzinfo=UTC), march.cursor)  # the stored cursor after a restart
    assert restart.run_requests == []


def test_the_requested_run_stores_windows_that_are_open_before_their_release(snapshot_dir, tmp_path):
    db = tmp_path / "store.duckdb"
    resources = _resources(snapshot_dir, db, AT)
    defs = build_definitions(resources)
    instance = DagsterInstance.ephemeral()
    # the catalog exists in a running deployment (the main job writes it; the releases' guardrail check reads
    # it)
    assert (
        defs.resolve_job_def("leaf_live_main")
        .execute_in_process(asset_selection=[AssetKey("indicator_catalog")], instance=instance)
        .success
    )
    result = defs.resolve_job_def(WINDOWS_JOB).execute_in_process(
        partition_key="2026-02", instance=instance, raise_on_error=False
    )
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    con = storage.connect_read_only(db)
    try:
        windows = storage.read_table(con, "nowcast_windows")
        cal = storage.read_table(con, "release_calendar")
    finally:
        con.close()
    # the stored calendar is the replay: February's releases after the clock have no actual yet
    assert (
        cal.filter(pl.col("release_at") > AT)["actual"].null_count()
        == cal.filter(pl.col("release_at") > AT).height
        > 0
    )
    # every February first release of the recorded calendar has its window, landed or not
    feb = first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar()).filter(
        pl.col("partition_key") == "2026-02"
    )
    assert feb.height == 19
    got = windows.filter(pl.col("partition_key") == "2026-02")
    assert sorted(got.select("indicator_id", "closes_at").rows()) == sorted(
        feb.select("indicator_id", "release_at").rows()
    )
    hour = datetime(2026, 2, 10, 12, tzinfo=UTC)
    now_open = open_windows(got, hour)
    assert now_open.height > 0 and (now_open["closes_at"] > AT).all()
    # the hourly schedule at that hour finds them (a configured model; no call is made by a tick)
    ctx = build_schedule_context(scheduled_execution_time=hour)
    req = llm_nowcast_tick(
        ctx,
        clock=ClockResource(),
        db=LeafLiveDB(database=str(db)),
        llm=LLMResource(models="openai/gpt-5@single"),
    )
    assert (
        req.partition_key == "2026-02-10-12:00" and int(req.tags["leaf_live/open_windows"]) == now_open.height
    )
