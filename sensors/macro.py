"""Macro track of the living service (wiring only): the release-landed sensor and the hourly nowcast schedule.

:func:`release_landed_sensor` polls the release calendar (resource ``calendar``: the live export, or the
snapshot replayed at the ``clock``) for first releases that have landed -- scheduled time passed, actual at
the source -- and are not stored in ``releases`` yet (``leaf_live.macro.landing``), and requests the release
month's partition of :data:`release_landing_job`: ``release_calendar`` -> ``releases`` and everything
downstream (windows, returns, surprise events, nowcasts, scores, analyses, dbt marts; not the hourly LLM
nowcasts). Every release is requested exactly once: the sensor cursor (stored by Dagster with the sensor's
state, so it survives a daemon restart) holds the releases requested in the look-back span.

:func:`llm_nowcast_tick` is the hourly nowcast schedule's evaluation: the hour's partition of
``llm_nowcasts_hourly`` when a nowcast window is open at that hour and models are configured, else a
``SkipReason`` saying which.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import duckdb
from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    schedule,
    sensor,
)

from assets.common import RELEASE_MONTHS
from assets.macro_nowcasts import llm_nowcasts, nowcast_windows
from assets.macro_releases import release_calendar, releases
from assets.macro_scoring import DEFAULT_MODES
from leaf_live.core import storage
from leaf_live.core.llm import no_models_message
from leaf_live.core.pit import UTC, et_month_key, shift_month_key
from leaf_live.macro.landing import LANDING_LOOKBACK, landing_status, watched_months
from leaf_live.macro.windows import open_windows
from resources import ClockResource, LeafLiveDB, LLMResource, ReleaseCalendarResource
from sensors.priority import priority_tags

LANDING_JOB = "macro_release_landed"
# release_calendar and everything downstream of it on release months (the hourly LLM nowcasts have their own
# schedule and partitions; everything else downstream is monthly or unpartitioned).
release_landing_job = define_asset_job(
    LANDING_JOB,
    tags=priority_tags(LANDING_JOB),
    selection=AssetSelection.assets(release_calendar).downstream() - AssetSelection.assets(llm_nowcasts),
    description=(
        "A landed release's month: release calendar, first releases and everything downstream (windows, "
        "announcement returns, surprise events, nowcasts, scores, analyses, dbt marts). Requested by "
        "release_landed_sensor, once per release."
    ),
)
LANDING_SENSOR_INTERVAL_S = 300
RELEASES_TAG = "leaf_live/releases"

WINDOWS_JOB = "macro_windows_ahead"
# A month's calendar and windows before any of its releases lands: a window opens on the 25th of its target
# month, so the hourly nowcasts need it stored before its release month's first landing.
windows_ahead_job = define_asset_job(
    WINDOWS_JOB,
    tags=priority_tags(WINDOWS_JOB),
    selection=AssetSelection.assets(release_calendar, releases, nowcast_windows),
    description=(
        "A release month's calendar, the first releases landed so far and the nowcast windows (landed and "
        "scheduled releases), ahead of its landings. Requested by windows_ahead_sensor, once per month."
    ),
)
WINDOWS_SENSOR_INTERVAL_S = 3600

# the hourly nowcast job (one partition per UTC hour); its schedule ticks five minutes past each hour
llm_nowcast_job = define_asset_job(
    "llm_nowcasts_hourly", tags=priority_tags("llm_nowcasts_hourly"), selection=[llm_nowcasts]
)


T = TypeVar("T")


class DatabaseBusy(RuntimeError):
    """The DuckDB file is held by a writing process; the tick retries at the next interval."""


def read_stored(db: LeafLiveDB, read: Callable[[duckdb.DuckDBPyConnection], T]) -> T | None:
    """``read(con)`` on a read-only connection to the project database; ``None`` when the file does not exist
    yet. Raises :class:`DatabaseBusy` while another process holds the write lock (a run is writing)."""
    path = Path(db.database)
    if not path.exists():
        return None
    try:
        con = storage.connect_read_only(path)
    except (duckdb.IOException, duckdb.ConnectionException, storage.DatabaseLockedError) as exc:
        # another process holds the write lock (the storage layer's DatabaseLockedError, naming it), or this
        # process has it open for writing (ConnectionException): the tick skips, the next one retries
        raise DatabaseBusy(f"{path}: held by a writer ({exc}); retrying at the next tick") from None
    try:
        return read(con)
    finally:
        con.close()


def _load_cursor(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    doc = json.loads(text)
    return dict(doc.get("requested", {}))


def _dump_cursor(requested: dict[str, str], at: datetime) -> str:
    # entries older than the look-back can never be due again: pruned, so the cursor stays small
    keep = {k: t for k, t in requested.items() if datetime.fromisoformat(t) > at - LANDING_LOOKBACK}
    return json.dumps(
        {"requested": dict(sorted(keep.items())), "evaluated_at": at.isoformat()}, sort_keys=True
    )


def landing_run_config(months: list[str]) -> dict:
    """Run config of a landing run: the scores re-evaluate only the evaluation modes whose span holds a landed
    month (a live release never rescores the frozen backtest); the other assets run with their defaults."""
    modes = [
        m
        for m in DEFAULT_MODES
        if any(m["first_month"] <= k and (m["last_month"] is None or k <= m["last_month"]) for k in months)
    ]
    return {"ops": {"macro_scores": {"config": {"modes": modes}}}}


def release_landed(
    context: SensorEvaluationContext, clock: ClockResource, calendar: ReleaseCalendarResource, db: LeafLiveDB
) -> SensorResult | SkipReason:
    """One evaluation of :func:`release_landed_sensor` (module docstring)."""
    at = clock.now()
    requested = _load_cursor(context.cursor)
    cal_months, land_months = watched_months(at)
    try:
        stored = read_stored(
            db,
            lambda con: storage.read_table(
                con, "releases", f"partition_key IN ({', '.join('?' for _ in land_months)})", land_months
            ),
        )
    except DatabaseBusy as exc:
        return SkipReason(str(exc))
    if stored is None:
        stored = storage.empty_frame("releases").select("indicator_id", "release_at")
    cal = calendar.client().calendar(months=cal_months)
    landed, pending = landing_status(cal, stored, requested, at)
    waiting = (
        f"; {pending.height} due but not at the source yet: {', '.join(pending['key'].to_list()[:5])}"
        if pending.height
        else ""
    )
    if landed.height == 0:
        return SensorResult(
            skip_reason=SkipReason(
                f"{at:%Y-%m-%d %H:%M}Z: no release landed since the last request "
                f"(watching {land_months[0]}..{land_months[-1]}){waiting}"
            ),
            cursor=_dump_cursor(requested, at),
        )
    runs = []
    for (month,), group in landed.group_by("partition_key", maintain_order=True):
        keys = group["key"].to_list()
        runs.append(
            RunRequest(
                run_key=f"{month}/{keys[-1]}",
                partition_key=month,
                run_config=landing_run_config([month]),
                tags={RELEASES_TAG: ",".join(keys)},
            )
        )
        requested.update({k: t.isoformat() for k, t in zip(keys, group["release_at"].to_list())})
    context.log.info(f"{landed.height} release(s) landed: {', '.join(landed['key'].to_list())}{waiting}")
    return SensorResult(run_requests=runs, cursor=_dump_cursor(requested, at))


def windows_ahead(context: SensorEvaluationContext, clock: ClockResource) -> SensorResult | SkipReason:
    """One evaluation of :func:`windows_ahead_sensor`: the clock's ET release month and the next one (when it
    is a partition already), each requested once (cursor: the months requested, the last 12 kept)."""
    at = clock.now()
    done = json.loads(context.cursor) if context.cursor else []
    existing = set(
        RELEASE_MONTHS.get_partition_keys()
    )  # what the instance accepts now (not the simulated clock)
    month = et_month_key(at)
    todo = [m for m in (month, shift_month_key(month, 1)) if m in existing and m not in done]
    if not todo:
        return SkipReason(
            f"{at:%Y-%m-%d %H:%M}Z: the windows of {month} and the next month were requested already "
            "(or the next month is not a partition yet)"
        )
    return SensorResult(
        run_requests=[RunRequest(run_key=f"windows/{m}", partition_key=m) for m in todo],
        cursor=json.dumps(sorted({*done, *todo})[-12:]),
    )


def nowcast_hour(t: datetime) -> datetime:
    """The UTC hour holding the instant ``t`` (the partition an hourly tick at ``t`` nowcasts)."""
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def llm_nowcast_tick(
    context: ScheduleEvaluationContext, clock: ClockResource, db: LeafLiveDB, llm: LLMResource
) -> RunRequest | SkipReason:
    """One tick of :func:`llm_nowcast_schedule` (module docstring)."""
    t = clock.simulated() or context.scheduled_execution_time or clock.now()
    hour = nowcast_hour(t)
    key = hour.strftime("%Y-%m-%d-%H:%M")
    message = no_models_message(llm.config())
    if message:
        return SkipReason(f"hour {key}: {message}")
    try:
        windows = read_stored(
            db, lambda con: storage.read_table(con, "nowcast_windows", "closes_at > ?", [hour])
        )
    except DatabaseBusy as exc:
        return SkipReason(str(exc))
    n = 0 if windows is None else open_windows(windows, hour).height
    if n == 0:
        return SkipReason(f"hour {key}: no nowcast window is open (nothing to nowcast)")
    return RunRequest(run_key=key, partition_key=key, tags={"leaf_live/open_windows": str(n)})


def build_release_landed_sensor(status: DefaultSensorStatus):
    return sensor(
        name="release_landed_sensor",
        job=release_landing_job,
        minimum_interval_seconds=LANDING_SENSOR_INTERVAL_S,
        default_status=status,
        description=(
            "Requests a landed release's month (release calendar, releases and everything downstream) once"
            " per release: polls the calendar for first releases whose time has passed and whose actual is at"
            " the source but not stored. Cursor: the releases requested in the last 31 days."
        ),
    )(release_landed)


def build_windows_ahead_sensor(status: DefaultSensorStatus):
    return sensor(
        name="windows_ahead_sensor",
        job=windows_ahead_job,
        minimum_interval_seconds=WINDOWS_SENSOR_INTERVAL_S,
        default_status=status,
        description=(
            "Stores the current and the next release month's calendar and nowcast windows (scheduled releases"
            " included) once per month, so a window is open for the hourly nowcasts before its release lands."
        ),
    )(windows_ahead)


def build_llm_nowcast_schedule(status: DefaultScheduleStatus):
    return schedule(
        name="llm_nowcasts_hourly_schedule",
        job=llm_nowcast_job,
        cron_schedule="5 * * * *",
        execution_timezone="UTC",
        default_status=status,
        description=(
            "Five minutes past every hour: the hour's LLM nowcasts when a nowcast window is open and models "
            "are configured (LEAF_LIVE_LLM_MODELS); otherwise the tick is skipped with the reason."
        ),
    )(llm_nowcast_tick)
