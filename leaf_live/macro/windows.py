"""Nowcast windows: when each (indicator, reference period) is nowcast, and which nowcasts came too late.

LiveMacroEval Sec. 3.4: "for each target indicator, [the prediction window] opens in the final week of the
reference month and closes at the scheduled official release" (e.g. March CPI from the end of March, hourly,
through the release on April 10). The paper's runner started every job at 00:00 America/New_York on the 25th
of the target month (``LiveMacro/config/jobs.json``: ``start_at`` 2026-03-25T00:00:00-04:00, interval 3600 s);
quarterly real GDP is a target of the quarter's last month (2026Q1 -> March 2026). Nowcasts issued at or after
the release timestamp are kept but flagged ``after_release`` and never scored (Sec. 3.4, App. E).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl

from leaf_live.core.pit import (
    ET,
    UTC,
    et_month_key,
    first_per_period,
    flag_at_or_after,
    require_columns,
    require_tz_aware,
)
from leaf_live.core.storage import conform, empty_frame
from leaf_live.macro.catalog import get_indicator

OPEN_DAY = 25  # the paper's jobs start on the 25th, 00:00 ET
ONE_HOUR = timedelta(hours=1)


class WindowError(ValueError):
    """A release row cannot define a window; the message names the row, field and value."""


def target_month(indicator_id: str, reference_period: date) -> date:
    """Month whose 25th opens the window: the reference month, or the last month of a quarter for quarterly
    indicators (2026-01-01 = 2026Q1 -> 2026-03-01). Raises :class:`WindowError` if ``reference_period`` is
    not the first day of a month (of a quarter for quarterly indicators)."""
    ind = get_indicator(indicator_id)
    if reference_period.day != 1:
        raise WindowError(
            f"{indicator_id}: reference_period {reference_period} is not the first day of a month"
        )
    if ind.frequency == "quarterly":
        if reference_period.month not in (1, 4, 7, 10):
            raise WindowError(
                f"{indicator_id}: reference_period {reference_period} is not the first day of a quarter"
            )
        return date(reference_period.year, reference_period.month + 2, 1)
    return reference_period


def window_open(indicator_id: str, reference_period: date, open_day: int = OPEN_DAY) -> datetime:
    """UTC instant the window opens: ``open_day`` 00:00 America/New_York of :func:`target_month`."""
    tm = target_month(indicator_id, reference_period)
    return datetime(tm.year, tm.month, open_day, tzinfo=ET).astimezone(UTC)


def _hours_between(opens_at: datetime, closes_at: datetime) -> int:
    # full hours t = opens_at + k h with t < closes_at
    span = closes_at - opens_at
    return max(0, -(-span // ONE_HOUR))


def nowcast_windows(releases: pl.DataFrame, *, open_day: int = OPEN_DAY) -> pl.DataFrame:
    """Build the ``nowcast_windows`` frame from scheduled releases.

    ``releases`` holds one row per (indicator_id, reference_period) with ``indicator_id`` (catalog id),
    ``reference_period`` (Date, first day of the period; quarter start for GDP) and ``release_at``
    (tz-aware datetime; the scheduled release). Other columns are ignored, so the ``releases`` and
    ``release_calendar`` tables can be passed directly (deduplicated first).

    Each window opens at 00:00 America/New_York on day ``open_day`` (default 25) of the target month
    (:func:`target_month`) and closes at ``release_at`` (LiveMacroEval Sec. 3.4). ``partition_key`` is the
    release month in ET (YYYY-MM); ``available_at`` = ``opens_at``.

    Raises :class:`WindowError` naming the row (0-based frame row), field and value for: a missing column, an
    unknown indicator, a naive ``release_at``, a reference period that is not a period start, a release at or
    before the window opens, or two rows for the same (indicator_id, reference_period).
    """
    need = ("indicator_id", "reference_period", "release_at")
    require_columns(releases, need, "releases", WindowError)
    require_tz_aware(releases, "release_at", "releases", WindowError)
    if not 1 <= open_day <= 28:
        raise WindowError(f"open_day={open_day}: expected a day that exists in every month (1..28)")
    seen: dict[tuple[str, date], int] = {}
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(releases.select(need).iter_rows(named=True)):
        ind_id, ref, rel = r["indicator_id"], r["reference_period"], r["release_at"]
        try:
            ind = get_indicator(ind_id)
        except KeyError as exc:
            raise WindowError(f"releases row {i}, field indicator_id={ind_id!r}: {exc}") from None
        if ref is None or rel is None:
            raise WindowError(
                f"releases row {i}: reference_period={ref!r}, release_at={rel!r} must both be set"
            )
        key = (ind_id, ref)
        if key in seen:
            raise WindowError(
                f"releases row {i}: second release for indicator_id={ind_id!r}, reference_period={ref} "
                f"(first at row {seen[key]}); windows need one scheduled release per period"
            )
        seen[key] = i
        try:
            tm = target_month(ind_id, ref)
        except WindowError as exc:
            raise WindowError(f"releases row {i}, field reference_period={ref}: {exc}") from None
        opens_at = datetime(tm.year, tm.month, open_day, tzinfo=ET).astimezone(UTC)
        closes_at = rel.astimezone(UTC)
        if closes_at <= opens_at:
            raise WindowError(
                f"releases row {i}, field release_at={closes_at.isoformat()}: {ind_id} {ref} is released at"
                f" or before its window opens ({opens_at.isoformat()})"
            )
        rel_et = closes_at.astimezone(ET)
        rows.append(
            {
                "partition_key": et_month_key(closes_at),
                "indicator_id": ind_id,
                "reference_period": ref,
                "target_month": tm,
                "opens_at": opens_at,
                "closes_at": closes_at,
                "release_time_et": f"{rel_et.hour:02d}:{rel_et.minute:02d}",
                "prompt_group": ind.prompt_group,
                "n_issue_hours": _hours_between(opens_at, closes_at),
                "available_at": opens_at,
            }
        )
    if not rows:
        return empty_frame("nowcast_windows")
    out = pl.DataFrame(rows).with_columns(
        pl.col(c).cast(pl.Datetime("us", "UTC")) for c in ("opens_at", "closes_at", "available_at")
    )
    return conform("nowcast_windows", out).sort("closes_at", "indicator_id")


def scheduled_releases(calendar: pl.DataFrame, releases: pl.DataFrame) -> pl.DataFrame:
    """Scheduled first releases that have not landed: what a live window closes on before its value exists.

    ``calendar`` is a ``release_calendar`` frame; a row without ``actual`` is scheduled, not released (the
    live calendar's empty A). ``releases`` holds the stored first releases (``indicator_id``,
    ``reference_period``). Returns ``indicator_id``, ``reference_period``, ``release_at`` for every
    (indicator, period) that has a scheduled row with a reference period, is not a source-marked revision, and
    has no stored first release: the earliest scheduled row per period (so a GDP period whose advance estimate
    has landed gets no window from its second estimate; LiveMacroEval App. K.1's first-release rule). Feed the
    result, stacked on the first releases, to :func:`nowcast_windows`. Raises :class:`WindowError` naming a
    missing column."""
    need = ("indicator_id", "reference_period", "release_at", "actual", "marked_revision")
    require_columns(calendar, need, "release_calendar", WindowError)
    require_columns(releases, ("indicator_id", "reference_period"), "releases", WindowError)
    keys = ["indicator_id", "reference_period"]
    due = calendar.filter(
        pl.col("actual").is_null()
        & pl.col("reference_period").is_not_null()
        & ~pl.col("marked_revision").fill_null(False)
    ).join(releases.select(keys).unique(), on=keys, how="anti")
    return first_per_period(due, keys).select(*keys, "release_at")


def _as_utc(value: Any, field: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise WindowError(f"window field {field}={value!r}: expected a tz-aware datetime")
    return value.astimezone(UTC)


def hourly_issue_times(window: Mapping[str, Any], step: timedelta = ONE_HOUR) -> list[datetime]:
    """Issue times of one window: ``opens_at + k * step`` for k = 0, 1, ... while strictly before
    ``closes_at`` (UTC datetimes). ``window`` is a mapping with ``opens_at`` and ``closes_at`` (e.g. a row of
    :func:`nowcast_windows` from ``frame.row(i, named=True)``).

    Steps are taken in UTC, so across a daylight-saving change the wall-clock hours in New York skip or
    repeat exactly as the paper's hourly scheduler did (no 02:00 run on 2026-03-08). The last issue time
    of a window closing 08:30 ET is 08:00 ET; of one closing 10:00 ET, 09:00 ET (strictly before release).
    Raises :class:`WindowError` for naive or missing timestamps or a non-positive step.
    """
    if step <= timedelta(0):
        raise WindowError(f"step={step}: must be positive")
    opens_at = _as_utc(window.get("opens_at"), "opens_at")
    closes_at = _as_utc(window.get("closes_at"), "closes_at")
    n = max(0, -(-(closes_at - opens_at) // step))
    return [opens_at + k * step for k in range(n)]


def mark_after_release(nowcasts: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Set ``after_release = issued_at >= closes_at`` on a nowcast frame, by (indicator_id,
    reference_period).

    ``nowcasts`` holds at least ``indicator_id, reference_period, issued_at`` (tz-aware) and may hold
    ``after_release``; ``windows`` holds ``indicator_id, reference_period, closes_at`` (a
    :func:`nowcast_windows` frame). Rows with no window keep their ``after_release`` (False when the column
    is new): their release is not scheduled yet, so they cannot be after it. Row order and every other column
    are kept. Raises :class:`WindowError` for missing columns or duplicate windows.
    """
    require_columns(nowcasts, ("indicator_id", "reference_period", "issued_at"), "nowcasts", WindowError)
    require_columns(windows, ("indicator_id", "reference_period", "closes_at"), "windows", WindowError)
    w = windows.select("indicator_id", "reference_period", pl.col("closes_at").alias("_closes_at"))
    dup = w.group_by("indicator_id", "reference_period").len().filter(pl.col("len") > 1)
    if dup.height:
        raise WindowError(f"windows: more than one window for {dup.row(0)[:2]}")
    base = (
        nowcasts
        if "after_release" in nowcasts.columns
        else nowcasts.with_columns(pl.lit(False).alias("after_release"))
    )
    out = base.with_row_index("_row").join(w, on=["indicator_id", "reference_period"], how="left")
    out = out.with_columns(
        pl.when(pl.col("_closes_at").is_not_null())
        .then(flag_at_or_after(pl.col("issued_at"), pl.col("_closes_at")))
        .otherwise(pl.col("after_release"))
        .alias("after_release")
    )
    return out.sort("_row").drop("_row", "_closes_at").select(base.columns)


def open_windows(windows: pl.DataFrame, at: datetime) -> pl.DataFrame:
    """The ``nowcast_windows`` rows open at the instant ``at`` (tz-aware): ``opens_at <= at < closes_at``
    (Sec. 3.4: a window closes at the scheduled release). The hourly nowcast run issues one nowcast per open
    window; an hour with none has nothing to do. Raises :class:`WindowError` for a naive ``at``."""
    if at.tzinfo is None:
        raise WindowError(f"at={at!r}: give a time zone (UTC)")
    return windows.filter((pl.col("opens_at") <= at) & (pl.col("closes_at") > at))


def betting_windows(
    indicator_id: str,
    reference_period: date,
    releases: pl.DataFrame,
    *,
    open_day: int = OPEN_DAY,
) -> list[tuple[str, datetime]]:
    """The target-month windows that bet on one market (LiveMacroEval App. O, "Setup": each indicator's
    betting timeline runs "across the February and March target windows ... Real GDP is reported quarterly,
    so both windows target the same Q1 2026 advance estimate").

    A monthly job of target month m (opening ``open_day`` 00:00 America/New_York of m) nowcasts the period
    holding m (``recorded_nowcasts``: a quarterly variable maps a month to its quarter). So a monthly market
    has one window, its own month's; a quarterly market has one per month of its quarter whose window opens
    after the previous quarter's first release (a job opened while the previous quarter was unreleased still
    bets on that one: the January 2026 job opened 2026-01-25, before the delayed 2025Q4 advance estimate of
    2026-02-20, so 2026Q1 is bet from the February and March windows). When the previous quarter's release is
    not in ``releases`` only the quarter's last month is used (the nowcast window, :func:`target_month`).

    ``releases``: ``indicator_id``, ``reference_period``, ``release_at`` (tz-aware; the first row per period
    counts). Returns ``[(label, opens_at UTC), ...]`` sorted by ``opens_at``, label ``"YYYY-MM window"`` (the
    target month): the segments of Table 13. Raises :class:`WindowError` for a reference period that is not a
    period start or a missing column.
    """
    require_columns(releases, ("indicator_id", "reference_period", "release_at"), "releases", WindowError)
    last = target_month(indicator_id, reference_period)
    months = [last]
    if get_indicator(indicator_id).frequency == "quarterly":
        y, m = reference_period.year, reference_period.month - 3
        prev = date(y - 1, m + 12, 1) if m < 1 else date(y, m, 1)
        rel = releases.filter(
            (pl.col("indicator_id") == indicator_id) & (pl.col("reference_period") == prev)
        )["release_at"]
        if rel.len():
            prev_at = rel.min()
            months = [
                date(reference_period.year, reference_period.month + k, 1)
                for k in range(3)
                if datetime(reference_period.year, reference_period.month + k, open_day, tzinfo=ET) > prev_at
            ] or [last]
    return [
        (f"{tm:%Y-%m} window", datetime(tm.year, tm.month, open_day, tzinfo=ET).astimezone(UTC))
        for tm in months
    ]
