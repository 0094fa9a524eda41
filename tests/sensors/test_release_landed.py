"""The release-landed sensor on the real snapshot, replayed by a simulated clock (issue 12, "What it must
show").

A release "appears" at the snapshot source when the clock passes its available_at (the calendar replayed at
the clock). The sensor is evaluated the way the daemon evaluates it (``evaluate_tick``), its cursor carried
from tick to tick as Dagster stores it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from dagster import DagsterInstance, build_sensor_context

from leaf_live.core import storage
from leaf_live.core.settings import get_settings
from leaf_live.definitions import build_definitions
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot
from resources import ClockResource, default_resources
from resources.sources import ReleaseCalendarSnapshotResource
from sensors.macro import RELEASES_TAG

MONTH = "2026-02"
# the code location's repository (partitioned run requests are resolved against it) and its sensor
REPO = build_definitions(default_resources(db=":memory:")).get_repository_def()
SENSOR = REPO.get_sensor_def("release_landed_sensor")


def sensor_resources(snapshot_dir, db, at: datetime, known_at: datetime | None = None) -> dict:
    """The sensor's resources as the code location builds them, with the clock (and the snapshot's replay) at
    ``at``; ``known_at`` lets the source lag behind the clock."""
    s = replace(get_settings(), snapshot_dir=snapshot_dir, transport="snapshot", clock=at)
    r = default_resources(db=db, settings=s)
    if known_at is not None:
        r["calendar"] = ReleaseCalendarSnapshotResource(
            snapshot_dir=str(snapshot_dir), known_at=known_at.isoformat()
        )
    return {k: r[k] for k in ("clock", "calendar", "db")}


def tick(instance, snapshot_dir, db, at, cursor, known_at=None):
    ctx = build_sensor_context(
        instance=instance,
        cursor=cursor,
        repository_def=REPO,
        resources=sensor_resources(snapshot_dir, db, at, known_at),
    )
    return SENSOR.evaluate_tick(ctx)


def requested_keys(data) -> list[str]:
    return [k for r in data.run_requests for k in r.tags[RELEASES_TAG].split(",")]


@pytest.fixture(scope="module")
def month_first_releases(snapshot_dir) -> pl.DataFrame:
    # independent of the replay and of the landing rule: the first-release rule on the whole recorded calendar
    cal = ReleaseCalendarSnapshot(snapshot_dir).calendar()
    return first_releases(cal).filter(pl.col("partition_key").is_in(["2026-01", MONTH]))


def test_a_month_of_the_snapshot_requests_every_release_once_and_a_restart_requests_nothing(
    snapshot_dir, tmp_path, month_first_releases
):
    db = tmp_path / "none_stored.duckdb"  # no file: nothing stored yet
    instance = DagsterInstance.ephemeral()
    feb = month_first_releases.filter(pl.col("partition_key") == MONTH)
    assert (
        feb.height == 19
    )  # Feb 2026 first releases of the live file (catch-up 14:59 new home sales included)
    times = sorted(set(feb["release_at"].to_list()))
    # the clock: the month's start, then one minute before and at every release time, then the month's end
    start, end = datetime(2026, 2, 1, 5, tzinfo=UTC), datetime(2026, 3, 1, 4, 59, tzinfo=UTC)
    clock = sorted({start, end, *(t for r in times for t in (r - timedelta(minutes=1), r))})
    cursor, seen, ticks = None, Counter(), []
    for at in clock:
        data = tick(instance, snapshot_dir, db, at, cursor)
        cursor = data.cursor
        keys = requested_keys(data)
        seen.update(keys)
        ticks.append((at, keys, data))
    # the first tick catches up on January (inside the 31-day look-back), every later one on what just landed
    jan = month_first_releases.filter(pl.col("partition_key") == "2026-01")
    assert sorted(ticks[0][1]) == sorted(
        f"{i}@{t:%Y-%m-%dT%H:%MZ}" for i, t in jan.select("indicator_id", "release_at").iter_rows()
    )
    expected = {
        f"{i}@{t:%Y-%m-%dT%H:%MZ}"
        for i, t in month_first_releases.select("indicator_id", "release_at").iter_rows()
    }
    assert set(seen) == expected and set(seen.values()) == {1}  # every release exactly once
    for at, keys, data in ticks[1:]:
        landed_now = {
            f"{i}@{t:%Y-%m-%dT%H:%MZ}"
            for i, t in (
                feb.filter(pl.col("release_at") == at).select("indicator_id", "release_at").iter_rows()
            )
        }
        assert set(keys) == landed_now, at  # requested at the first tick at/after its time, never before
        if keys:
            assert [r.partition_key for r in data.run_requests] == [
                MONTH
            ]  # one run for the month per landing
            assert (
                data.run_requests[0].run_config["ops"]["macro_scores"]["config"]["modes"][0]["name"] == "live"
            )
        else:
            assert "no release landed" in data.skip_message
    # a restart from the stored cursor (a fresh evaluation context, as after a daemon restart): nothing again,
    # whether it resumes mid-month right after a landing or at the month's end or a day later
    mid_at, _, mid = next(t for t in ticks if t[0] == times[8])
    for at, stored_cursor in (
        (mid_at, mid.cursor),
        (mid_at + timedelta(minutes=5), mid.cursor),
        (end, cursor),
        (end + timedelta(days=1), cursor),
    ):
        again = tick(instance, snapshot_dir, db, at, stored_cursor)
        assert again.run_requests == [] and "no release landed" in again.skip_message
    # control: without the cursor (and nothing stored) the month would be requested again
    lost = tick(instance, snapshot_dir, db, end, None)
    since = end - timedelta(days=31)
    assert set(requested_keys(lost)) == {
        f"{i}@{t:%Y-%m-%dT%H:%MZ}"
        for i, t in (
            month_first_releases.filter(pl.col("release_at") > since)
            .select("indicator_id", "release_at")
            .iter_rows()
        )
    }


def test_a_release_past_its_time_is_polled_until_its_value_is_at_the_source(snapshot_dir, tmp_path):
    db = tmp_path / "none_stored.duckdb"
    instance = DagsterInstance.ephemeral()
    # the clock at 2026-02-10 13:31 (retail sales due at 13:30), after everything earlier was requested
    first = tick(instance, snapshot_dir, db, datetime(2026, 2, 10, 13, 29, tzinfo=UTC), None)
    assert "retail_sales@2026-02-10T13:30Z" not in requested_keys(first)
    at = datetime(2026, 2, 10, 13, 31, tzinfo=UTC)
    # the source is late: its calendar still shows the 13:29 state (retail sales scheduled, no actual)
    late = tick(
        instance, snapshot_dir, db, at, first.cursor, known_at=datetime(2026, 2, 10, 13, 29, tzinfo=UTC)
    )
    assert late.run_requests == []
    assert "1 due but not at the source yet: retail_sales@2026-02-10T13:30Z" in late.skip_message
    # the value appears at the source: requested once
    landed = tick(instance, snapshot_dir, db, at + timedelta(minutes=5), late.cursor)
    assert requested_keys(landed) == ["retail_sales@2026-02-10T13:30Z"]
    again = tick(instance, snapshot_dir, db, at + timedelta(minutes=10), landed.cursor)
    assert again.run_requests == []


def test_the_clock_resource_reads_a_fixed_instant_or_the_system_time():
    fixed = ClockResource(at="2026-02-11T14:00:00Z")
    assert fixed.now() == datetime(2026, 2, 11, 14, tzinfo=UTC) and fixed.simulated() == fixed.now()
    live = ClockResource()
    before = datetime.now(UTC)
    assert live.simulated() is None and before <= live.now() <= datetime.now(UTC)


def test_a_tick_while_another_process_writes_the_database_skips_with_the_reason(snapshot_dir, tmp_path):
    """Issue 20 item 2: a sensor tick that meets a database locked by ANOTHER process (a run's writer) skips
    with the reason and requests nothing; the next tick, after the writer is gone, evaluates normally."""
    import subprocess
    import sys

    db = tmp_path / "held.duckdb"
    storage.connect(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
            " sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        instance = DagsterInstance.ephemeral()
        at = datetime(2026, 2, 3, 16, tzinfo=UTC)
        data = tick(instance, snapshot_dir, db, at, None)
        assert data.run_requests == [] and data.skip_message is not None
        assert "held by a writer" in data.skip_message and f"PID {holder.pid}" in data.skip_message
        assert data.cursor is None  # nothing recorded as requested
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    after = tick(DagsterInstance.ephemeral(), snapshot_dir, db, at, None)
    assert after.skip_message is None or "held by a writer" not in after.skip_message


def test_a_clock_file_advances_the_running_sensor_without_rebuilding_anything(snapshot_dir, tmp_path):
    """Issue 20 item 5: with LEAF_LIVE_CLOCK_FILE the resources are built once (as a running daemon holds
    them) and the simulated clock and the snapshot's replay advance when the file is rewritten: retail sales
    (due 2026-02-10 13:30 UTC) is not requested at 13:29 and requested once at 13:31, with no restart."""
    clock_file = tmp_path / "clock"
    clock_file.write_text("2026-02-10T13:29:00Z\n")
    s = replace(
        get_settings(), snapshot_dir=snapshot_dir, transport="snapshot", clock=None, clock_file=clock_file
    )
    built = default_resources(db=tmp_path / "none_stored.duckdb", settings=s)
    resources = {k: built[k] for k in ("clock", "calendar", "db")}
    assert resources["clock"].simulated() == datetime(2026, 2, 10, 13, 29, tzinfo=UTC)

    def tick_with(cursor):
        ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=REPO, resources=resources)
        return SENSOR.evaluate_tick(ctx)

    instance = DagsterInstance.ephemeral()
    before = tick_with(None)
    assert "retail_sales@2026-02-10T13:30Z" not in requested_keys(before)
    clock_file.write_text("2026-02-10T13:31:00Z")  # the operator advances the clock
    assert resources["clock"].now() == datetime(2026, 2, 10, 13, 31, tzinfo=UTC)
    after = tick_with(before.cursor)
    assert requested_keys(after) == ["retail_sales@2026-02-10T13:30Z"]
    assert tick_with(after.cursor).run_requests == []


def test_a_bad_clock_file_is_one_error_naming_it(tmp_path, monkeypatch):
    from leaf_live.core.settings import SettingsError

    path = tmp_path / "clock"
    with pytest.raises(SettingsError, match=r"LEAF_LIVE_CLOCK_FILE .*clock: cannot read the clock file"):
        ClockResource(file=str(path)).now()
    path.write_text("  \n")
    with pytest.raises(SettingsError, match="the clock file is empty"):
        ClockResource(file=str(path)).now()
    path.write_text("2026-02-10 13:31")
    with pytest.raises(SettingsError, match=r"clock='2026-02-10 13:31': give a time zone"):
        ClockResource(file=str(path)).now()
    monkeypatch.setenv("LEAF_LIVE_CLOCK", "2026-02-10T13:31:00Z")
    monkeypatch.setenv("LEAF_LIVE_CLOCK_FILE", str(path))
    with pytest.raises(SettingsError, match="set LEAF_LIVE_CLOCK or LEAF_LIVE_CLOCK_FILE, not both"):
        get_settings()
