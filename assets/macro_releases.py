"""Macro track, foundation stage: catalog -> release calendar -> first releases -> announcement-window
returns -> surprise scales -> timestamp-group surprise events (LiveMacroEval §3.6, App. K.1).

Wiring only: the science is in ``leaf_live.macro.sources`` and ``leaf_live.macro.scoring.surprises``.
Monthly assets use the single-run backfill policy: one run materializes any range of release months,
their rows replaced month by month in one transaction.
"""

from datetime import UTC, datetime

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    TimeWindowPartitionMapping,
    asset,
    asset_check,
)

from assets.common import (
    DUCKDB_POOL,
    RELEASE_MONTHS,
    SINGLE_RUN,
    run_partition_keys,
    table_metadata,
    write_partitions,
)
from leaf_live.core import storage
from leaf_live.core.pit import shift_month_key
from leaf_live.core.settings import parse_clock
from leaf_live.core.sources import check_facts_kept
from leaf_live.macro.catalog import catalog_frame
from leaf_live.macro.scoring import surprises
from resources import LeafLiveDB, ReleaseCalendarResource, WindowPricesResource

# The first-release rule looks back at earlier months (a GDP third estimate lands ~3 months after the
# advance); 12 months covers every revision in the panel.
FIRST_RELEASE_LOOKBACK_MONTHS = 12
# a published release of the calendar: its actual must come back unchanged on every reload (a corrected
# release time is not a lost release)
FACT_KEY, FACT = ("source", "indicator_id", "period_label"), "stored release"


def _result(written: dict[str, int], **extra) -> MaterializeResult:
    keys = sorted(written)
    return MaterializeResult(
        metadata={
            "rows": sum(written.values()),
            "partitions": len(keys),
            "first": keys[0],
            "last": keys[-1],
            **extra,
        }
    )


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("indicator_catalog"),
    description=(
        "The 16 LiveMacroEval indicators: Table 2 title, unit, transformation, "
        "guardrail, theme, prompt group, release slot, agency, FRED ids, FRED-MD tcode, Table 9 beta/SE."
    ),
)
def indicator_catalog(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        n = storage.replace_partition(con, "indicator_catalog", catalog_frame())
    return MaterializeResult(metadata={"rows": n, "dagster/row_count": n})


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("release_calendar"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[indicator_catalog],
    description=(
        "Scheduled releases as each calendar source reported them (actual, consensus, ET time -> UTC), "
        "before the first-release rule. Partition = release month (America/New_York)."
    ),
)
def release_calendar(
    context: AssetExecutionContext, db: LeafLiveDB, calendar: ReleaseCalendarResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    cal = calendar.client().calendar(months=keys)
    cal = cal.filter(pl.col("partition_key").is_in(keys))
    with db.get_connection() as con:
        # before any write: a month the calendar answered nothing for keeps its rows; in the months it
        # answered, no stored release may be lost or changed without a revision marker
        answered = sorted(set(cal["partition_key"].to_list()))
        stored = storage.read_table(con, "release_calendar", "list_contains(?, partition_key)", [answered])
        # point in time: only what the source can know by now must come back (a snapshot replayed at an
        # earlier clock does not yet hold a later release stored by a run at a later clock)
        known = getattr(calendar, "known_at", None)
        as_of = parse_clock(known, name="calendar.known_at") if known else datetime.now(UTC)
        stored = stored.filter(pl.col("available_at") <= as_of)
        check_facts_kept(stored, cal, key=FACT_KEY, value="actual", marker="marked_revision", what=FACT)
        written = write_partitions(con, "release_calendar", cal, keys, keep_unanswered=True)
    return _result(written)


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("releases"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[
        AssetDep(
            release_calendar,
            partition_mapping=TimeWindowPartitionMapping(
                start_offset=-FIRST_RELEASE_LOOKBACK_MONTHS, allow_nonexistent_upstream_partitions=True
            ),
        )
    ],
    description=(
        "Canonical first releases: actual A and consensus C per indicator and reference period "
        "(earliest release per indicator and period label; GDP = advance estimate)."
    ),
)
def releases(context: AssetExecutionContext, db: LeafLiveDB) -> MaterializeResult:
    keys = run_partition_keys(context)
    lo = shift_month_key(min(keys), -FIRST_RELEASE_LOOKBACK_MONTHS)
    with db.get_connection() as con:
        cal = storage.read_table(con, "release_calendar", "partition_key BETWEEN ? AND ?", [lo, max(keys)])
        rel = surprises.first_releases(cal).filter(pl.col("partition_key").is_in(keys))
        written = write_partitions(con, "releases", rel, keys)
    return _result(written)


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("announcement_returns"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[releases],
    description=(
        "E-mini S&P 500 announcement-window log returns r_g = log P(T+30m) - log P(T-5m) per release "
        "timestamp (App. K Eq. 4); windows without prices are kept with status no_prices."
    ),
)
def announcement_returns(
    context: AssetExecutionContext, db: LeafLiveDB, window_prices: WindowPricesResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    with db.get_connection() as con:
        rel = storage.read_table(con, "releases", "partition_key BETWEEN ? AND ?", [min(keys), max(keys)])
        times = rel.select("partition_key", "release_at").unique()
        prices = window_prices.client().window_prices(times)
        ret = surprises.announcement_returns(prices, times).filter(pl.col("partition_key").is_in(keys))
        written = write_partitions(con, "announcement_returns", ret, keys)
    return _result(written)


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("surprise_scales"),
    deps=[releases],
    description=(
        "sigma_i: sample sd (ddof 1) of A - C per indicator over the frozen historical window "
        "Jan 2010 - Oct 2025, every release with A and C (App. K.1 Eq. 3)."
    ),
)
def surprise_scales(db: LeafLiveDB) -> MaterializeResult:
    first, last = surprises.HIST_START.strftime("%Y-%m"), surprises.HIST_END.strftime("%Y-%m")
    with db.get_connection() as con:
        have = {r[0] for r in con.execute("SELECT DISTINCT partition_key FROM releases").fetchall()}
        need = {k for k in RELEASE_MONTHS.get_partition_keys() if first <= k <= last}
        if need - have:
            missing = sorted(need - have)
            raise ValueError(
                f"surprise_scales: sigma is frozen on releases {first}..{last}, but {len(missing)} release"
                f" months are not materialized (first missing: {missing[0]}); backfill `releases` over that"
                " window first"
            )
        rel = storage.read_table(con, "releases")
        scales = surprises.surprise_scales(rel)
        n = storage.replace_partition(con, "surprise_scales", scales)
    return MaterializeResult(metadata={"rows": n, "dagster/row_count": n})


@asset(
    pool=DUCKDB_POOL,
    group_name="macro",
    metadata=table_metadata("surprise_events"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[releases, announcement_returns, surprise_scales],
    description=(
        "Timestamp-group events (App. K.1): releases sharing a timestamp, window return r_g and the "
        "16 standardized surprises S = (A - C)/sigma_i with structural zeros."
    ),
)
def surprise_events(context: AssetExecutionContext, db: LeafLiveDB) -> MaterializeResult:
    keys = run_partition_keys(context)
    with db.get_connection() as con:
        where, params = "partition_key BETWEEN ? AND ?", [min(keys), max(keys)]
        rel = storage.read_table(con, "releases", where, params)
        ret = storage.read_table(con, "announcement_returns", where, params)
        scales = storage.read_table(con, "surprise_scales")
        ev = surprises.timestamp_group_events(rel, ret, scales).filter(pl.col("partition_key").is_in(keys))
        written = write_partitions(con, "surprise_events", ev, keys)
    return _result(written)


@asset_check(
    pool=DUCKDB_POOL,
    asset=releases,
    description="At most one first release per indicator and period label.",
    blocking=True,
)
def releases_first_release_unique(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        dup = con.execute(
            "SELECT indicator_id, period_label, count(*) n FROM releases GROUP BY 1, 2 HAVING n > 1"
        ).fetchall()
    return AssetCheckResult(passed=not dup, metadata={"duplicates": len(dup), "first": str(dup[:3])})


@asset_check(
    pool=DUCKDB_POOL,
    asset=surprise_events,
    description=(
        "Point-in-time: every event is knowable no earlier than its window closes; r_g is present "
        "exactly where the window is usable."
    ),
    blocking=True,
)
def surprise_events_point_in_time(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        early, bad_status = con.execute(
            "SELECT count(*) FILTER (WHERE available_at < release_at), "
            "count(*) FILTER (WHERE (r_g IS NULL) <> (window_status <> 'usable')) FROM surprise_events"
        ).fetchone()
    return AssetCheckResult(
        passed=early == 0 and bad_status == 0, metadata={"early": early, "bad_status": bad_status}
    )


@asset_check(
    pool=DUCKDB_POOL,
    asset=releases,
    blocking=True,  # an unlisted split report would put one report's surprises in two events
    description=(
        "Every release time against its indicator's catalog release slot (America/New_York), the deviations"
        " listed by kind (leaf_live.macro.release_times): known inherited mis-stamps (flagged, not moved:"
        " Table 9 used them as stamped), the live file's catch-up releases stamped a minute early (merged"
        " with the release they overlap into one scoring event), other schedule times. Fails on a split"
        " report: a sibling of the same report (payrolls and the unemployment rate, PCE and real PCE, starts"
        " and permits) stamped at another time that day, not yet listed."
    ),
)
def release_times_match_catalog_slots(db: LeafLiveDB) -> AssetCheckResult:
    from leaf_live.macro.release_times import release_time_deviations

    with db.get_connection() as con:
        rel = storage.read_table(con, "releases")
    dev = release_time_deviations(rel)
    counts = {k: int(n) for k, n in dev.group_by("kind").len().iter_rows()}
    listing = [
        f"{r['release_et']} {r['indicator_id']} (slot {r['slot_et']}): {r['kind']}"
        for r in dev.iter_rows(named=True)
    ]
    split = dev.filter(pl.col("kind") == "split_report")
    return AssetCheckResult(
        passed=split.height == 0,
        metadata={
            "releases": rel.height,
            "deviations": dev.height,
            **{f"n_{k}": v for k, v in sorted(counts.items())},
            "deviations_list": MetadataValue.md("\n".join(f"- {x}" for x in listing) or "none"),
            "unlisted_split_reports": MetadataValue.text(str(split["release_et"].to_list())),
        },
    )


MACRO_RELEASE_ASSETS = [
    indicator_catalog,
    release_calendar,
    releases,
    announcement_returns,
    surprise_scales,
    surprise_events,
]
MACRO_RELEASE_CHECKS = [
    releases_first_release_unique,
    surprise_events_point_in_time,
    release_times_match_catalog_slots,
]
