"""Release landing: which scheduled releases have landed at a clock instant and still need storing.

The living service polls the release calendar (the live export, or the snapshot replayed at the clock:
:func:`leaf_live.macro.sources.releases.calendar_known_at`) and requests the ``releases`` partition of every
release that has landed -- its scheduled time has passed and its actual is at the source -- but is neither
stored nor already requested. "Release" means a first release (LiveMacroEval App. K.1: the universal
first-release rule, :func:`leaf_live.macro.scoring.surprises.first_releases`), so a GDP second estimate never
counts as a landing. Plain functions over polars frames; the sensor in ``sensors/macro.py`` wires them.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

import polars as pl

from leaf_live.core.pit import UTC, et_month_key, month_keys, require_columns, shift_month_key, to_utc
from leaf_live.macro.scoring.surprises import first_releases

# Releases due in this span before the clock are watched; older missing months are backfill work (a release
# that was due before the service started is not a landing).
LANDING_LOOKBACK = timedelta(days=31)
# The first-release rule needs earlier months (a GDP third estimate lands ~3 months after the advance); the
# releases asset reads the same 12 (assets/macro_releases.py FIRST_RELEASE_LOOKBACK_MONTHS).
RULE_LOOKBACK_MONTHS = 12


def release_key(indicator_id: str, release_at: datetime) -> str:
    """Stable identity of one release: ``<indicator_id>@<UTC release time, minutes>`` (e.g.
    ``cpi_yoy@2026-02-11T13:30Z``): the cursor entry and the run tag of the release."""
    return f"{indicator_id}@{to_utc(release_at):%Y-%m-%dT%H:%MZ}"


def watched_months(at: datetime, lookback: timedelta = LANDING_LOOKBACK) -> tuple[list[str], list[str]]:
    """``(calendar_months, landing_months)`` for a clock instant ``at`` (tz-aware): the release months
    (America/New_York, ``YYYY-MM``) a landing can fall in (``at - lookback`` .. ``at``), and those plus the
    :data:`RULE_LOOKBACK_MONTHS` before them that the first-release rule reads."""
    first = et_month_key(to_utc(at) - lookback)
    last = et_month_key(at)
    return month_keys(shift_month_key(first, -RULE_LOOKBACK_MONTHS), last), month_keys(first, last)


def landing_status(
    calendar: pl.DataFrame,
    stored: pl.DataFrame,
    requested: Collection[str],
    at: datetime,
    lookback: timedelta = LANDING_LOOKBACK,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Landed and pending first releases at the clock instant ``at`` (tz-aware).

    ``calendar``: ``release_calendar`` rows as the source shows them at ``at`` (empty ``actual`` = scheduled,
    not yet released) covering :func:`watched_months`; ``stored``: ``releases`` rows already stored (columns
    ``indicator_id``, ``release_at``); ``requested``: :func:`release_key` values already requested.

    Returns ``(landed, pending)``, each with columns ``partition_key`` (release month), ``indicator_id``,
    ``release_at``, ``key``, sorted by release time: ``landed`` = first releases with
    ``at - lookback < release_at <= at``, actual present, neither stored nor requested; ``pending`` =
    scheduled rows in that span whose time has passed but whose actual the source does not show yet (not
    stored). Raises :class:`ValueError` for a naive ``at`` or a missing column.
    """
    if at.tzinfo is None:
        raise ValueError(f"at={at!r}: give a time zone (UTC)")
    require_columns(calendar, ("indicator_id", "release_at", "actual", "partition_key"), "release calendar")
    require_columns(stored, ("indicator_id", "release_at"), "stored releases")
    at = at.astimezone(UTC)
    since = at - lookback
    in_span = (pl.col("release_at") > since) & (pl.col("release_at") <= at)
    have = stored.select("indicator_id", pl.col("release_at").dt.convert_time_zone("UTC")).unique()
    cols = ["partition_key", "indicator_id", "release_at"]

    def keyed(frame: pl.DataFrame) -> pl.DataFrame:
        frame = (
            frame.select(cols)
            .with_columns(pl.col("release_at").dt.convert_time_zone("UTC"))
            .unique()
            .join(have, on=["indicator_id", "release_at"], how="anti")
        )
        keys = [release_key(i, t) for i, t in frame.select("indicator_id", "release_at").iter_rows()]
        return frame.with_columns(pl.Series("key", keys, dtype=pl.Utf8)).sort("release_at", "indicator_id")

    first = first_releases(calendar.filter(pl.col("actual").is_not_null())) if calendar.height else calendar
    landed = keyed(first.filter(in_span))
    landed = landed.filter(~pl.col("key").is_in(list(requested)))
    pending = keyed(calendar.filter(in_span & pl.col("actual").is_null()))
    # a scheduled row whose report landed under another source's row is not pending
    pending = pending.join(
        first.select("indicator_id", pl.col("release_at").dt.convert_time_zone("UTC")),
        on=["indicator_id", "release_at"],
        how="anti",
    )
    return landed, pending
