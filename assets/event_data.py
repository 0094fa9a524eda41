"""Event track (LEAF), data stage: targets, daily prices, hourly weather, hourly electricity load (daily
partitions) and prediction-market questions with their price paths (one dynamic partition per question).

Wiring only: the science is in ``leaf_live.event.catalog`` and ``leaf_live.event.sources``; each source is a
resource (``daily_prices``, ``weather``, ``grid_load``, ``event_markets``: snapshot or live, chosen in
``resources.sources.source_resources``). Daily assets use the single-run backfill policy: one run reads the
source once for any range of days and replaces the range's partitions in one transaction. Question partitions
are added from the source's question list (:func:`register_questions`: ``leaf-live run`` and the
``event_questions_sensor``) for the three LEAF categories (App. C.2.5).
"""

from collections.abc import Sequence
from datetime import date, timedelta

import polars as pl
from dagster import (
    AssetExecutionContext,
    DagsterInstance,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    asset,
)

from assets.common import (
    DUCKDB_POOL,
    SINGLE_RUN,
    run_partition_keys,
    table_metadata,
    unique_key_check,
    write_partitions,
    write_tables,
)
from leaf_live.core import storage
from leaf_live.core.sources import incomplete_days
from leaf_live.event import catalog
from leaf_live.event.pipeline import targets_frame
from leaf_live.event.sources.markets import to_market_prices
from resources import DailyPricesResource, EventMarketsResource, GridLoadResource, LeafLiveDB, WeatherResource

GROUP = "event"
# UTC days (a bar's session date, an hour's start date, a task's cutoff day) from the first EIA-930 winter on;
# today is included (end_offset=1) because a day's data lands while it runs.
EVENT_DAYS = DailyPartitionsDefinition(start_date="2018-01-01", end_offset=1)
EVENT_QUESTIONS = DynamicPartitionsDefinition(name="event_questions")
MARKET_SYMBOLS = [
    t.symbol
    for t in (*catalog.LARGE_CAPS, *catalog.MID_CAPS, *catalog.COMMODITIES, *catalog.RECORDED_CASE_STOCKS)
]


# the snapshot files label hours in each city's local time (sources.weather); futures trade on days the
# stock exchanges are closed (Thanksgiving) and CBOT grains close on days the others trade, so each group
# has its own session days (core.sources.incomplete_days)
PRICE_CONTEXT = timedelta(days=14)
CITY_ZONES = {c.target_id: c.timezone for c in catalog.CITIES}
EXCHANGE_GROUPS = {
    s: ("stocks" if not s.endswith("=F") else "grain futures" if s.startswith("Z") else "futures")
    for s in MARKET_SYMBOLS
}


def day_span(keys: Sequence[str]) -> tuple[date, date]:
    """First and last day of a run's daily partition keys."""
    return date.fromisoformat(min(keys)), date.fromisoformat(max(keys))


def result(written: dict[str, int], **extra) -> MaterializeResult:
    """Rows written, partitions and the first/last key of a run (plus ``extra`` metadata)."""
    keys = sorted(written)
    meta = {"rows": sum(written.values()), "partitions": len(keys), **extra}
    if keys:
        meta.update(first=keys[0], last=keys[-1])
    return MaterializeResult(metadata=meta)


def write_days(
    db: LeafLiveDB,
    table: str,
    rows: pl.DataFrame,
    keys: Sequence[str],
    *,
    entity: str,
    time_col: str | None = None,
    timezones: dict[str, str] | None = None,
    groups: dict[str, str] | None = None,
    **extra,
) -> MaterializeResult:
    """Replace the run's day partitions of ``table`` with their ``rows`` (rows of other days are dropped: a
    source answers for whole days around the range). A day the source answered nothing for keeps its stored
    rows (an empty answer never replaces good rows).

    A day the source answered only in part (``leaf_live.core.sources.incomplete_days``: 24 hourly rows per
    ``entity`` with ``time_col``, or a close for every ticker still trading) is not written either (its stored
    rows stay), and after the whole days are written the step fails with a :class:`dagster.Failure` naming
    each such day and its count, so the run's partitions are not materialized and the days sensor asks
    again with backoff (``sensors.event.event_days_tick``)."""
    day_rows = rows.filter(pl.col("partition_key").is_in(list(keys)))
    answered = incomplete_days(rows, entity=entity, time_col=time_col, timezones=timezones, groups=groups)
    partial = {day: why for day, why in answered.items() if day in set(keys)}
    whole = day_rows.filter(~pl.col("partition_key").is_in(list(partial)))
    with db.get_connection() as con:
        written = write_partitions(con, table, whole, keys, keep_unanswered=True)
    if partial:
        lines = [f"{table} {day}: {why}" for day, why in partial.items()]
        shown = "; ".join(lines[:5]) + (f"; ... and {len(lines) - 5} more" if len(lines) > 5 else "")
        raise Failure(
            description=(
                f"{len(partial)} of {len(keys)} days incomplete at the source, not stored (stored rows kept;"
                f" {sum(written.values())} rows of the whole days written): {shown}"
            ),
            metadata={"incomplete_days": len(partial), "first_incomplete": min(partial)},
            allow_retries=False,
        )
    return result(written, **extra)


def question_keys(questions: pl.DataFrame) -> list[str]:
    """Question ids of ``prediction_markets`` rows in the LEAF categories (C.2.5), in source order: the
    question partitions (sports, entertainment and crypto-price questions get none)."""
    return questions.filter(pl.col("category").is_in(list(catalog.EVENT_CATEGORIES)))["question_id"].to_list()


def register_questions(instance: DagsterInstance, markets: EventMarketsResource) -> list[str]:
    """Add a partition of :data:`EVENT_QUESTIONS` for every question of the source's list in the LEAF
    categories that has none yet; returns every partition key of the instance (insertion order)."""
    keys = question_keys(markets.client().load().questions)
    have = set(instance.get_dynamic_partitions(EVENT_QUESTIONS.name))
    new = [k for k in keys if k not in have]
    if new:
        instance.add_dynamic_partitions(EVENT_QUESTIONS.name, new)
    return list(instance.get_dynamic_partitions(EVENT_QUESTIONS.name))


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    metadata=table_metadata("leaf_targets"),
    description=(
        "LEAF forecasting targets (App. C.2): 30 large caps, 40 mid caps, 10 commodity "
        "futures, 10 US cities with coordinates, 3 electricity load areas, from leaf_live.event.catalog, and "
        "the 20 other large caps of the recorded SEER case (tasks at its cutoff only)."
    ),
)
def leaf_targets(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        n = storage.replace_partition(con, "leaf_targets", targets_frame())
    return MaterializeResult(metadata={"rows": n})


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[leaf_targets],
    metadata=table_metadata("market_prices"),
    description=(
        "Daily OHLCV bars of the 90 stocks (70 of App. C.2.1, 20 more of the SEER case) and 10 commodity"
        " futures (yfinance live; the yfinance-style snapshot CSVs with their folder precedence and"
        " back-adjusted splice), close on the series' newest basis. available_at = the session close"
        " (16:00 / 17:00 New York). Partition = session date."
    ),
)
def market_prices(
    context: AssetExecutionContext, db: LeafLiveDB, daily_prices: DailyPricesResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    first, last = day_span(keys)
    # read a fortnight before the range too: the tickers trading before a day are the ones it should have
    bars = to_market_prices(daily_prices.client().daily_bars(MARKET_SYMBOLS, first - PRICE_CONTEXT, last))
    return write_days(
        db,
        "market_prices",
        bars,
        keys,
        entity="symbol",
        groups=EXCHANGE_GROUPS,
        symbols=bars["symbol"].n_unique(),
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[leaf_targets],
    metadata=table_metadata("weather_hourly"),
    description=(
        "Hourly 2 m temperature (degC), humidity and wind of the 10 LEAF cities in UTC (Meteostat then"
        " Open-Meteo live; the Open-Meteo snapshot files, degF and local time converted). available_at = the"
        " end of the hour. Partition = UTC date of the hour's start."
    ),
)
def weather_hourly(
    context: AssetExecutionContext, db: LeafLiveDB, weather: WeatherResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    rows = weather.client().hourly(catalog.CITIES, *day_span(keys))
    return write_days(
        db,
        "weather_hourly",
        rows,
        keys,
        entity="city",
        time_col="ts",
        timezones=CITY_ZONES,
        cities=rows["city"].n_unique(),
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[leaf_targets],
    metadata=table_metadata("electricity_load"),
    description=(
        "Hourly electricity load (MW) of New York City, Boston and San Francisco: gridstatus 5-minute "
        "readings averaged per hour (live, App. C.2.4) or the cleaned EIA-930 hour-ending files (snapshot). "
        "available_at = the end of the hour. Partition = UTC date of the hour's start."
    ),
)
def electricity_load(
    context: AssetExecutionContext, db: LeafLiveDB, grid_load: GridLoadResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    rows = grid_load.client().hourly_load(catalog.ELECTRICITY_AREAS, *day_span(keys))
    return write_days(
        db,
        "electricity_load",
        rows,
        keys,
        entity="area",
        time_col="interval_start",
        areas=rows["area"].n_unique(),
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_QUESTIONS,
    backfill_policy=SINGLE_RUN,
    metadata=table_metadata("prediction_markets", "market_price_path"),
    description=(
        "Binary prediction-market questions (Polymarket through the ForecastBench question sets and the FOMC"
        " trade series; Gamma/CLOB live) with their YES-price paths and resolutions (tables"
        " prediction_markets and market_price_path). Partition = question id, one per question of the LEAF"
        " categories (C.2.5)."
    ),
)
def prediction_markets(
    context: AssetExecutionContext, db: LeafLiveDB, event_markets: EventMarketsResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    data = event_markets.client().load()
    questions = data.questions.filter(pl.col("partition_key").is_in(keys))
    path = data.path.filter(pl.col("partition_key").is_in(keys))
    with db.get_connection() as con:
        # the questions and their price paths in ONE transaction (issue 17): a question never without its path
        both = write_tables(con, {"prediction_markets": questions, "market_price_path": path}, keys)
        written, prices = both["prediction_markets"], both["market_price_path"]
    return result(
        written,
        path_rows=sum(prices.values()),
        resolved=int(path.filter(pl.col("kind") == "resolution").height),
    )


EVENT_DATA_ASSETS = [leaf_targets, market_prices, weather_hourly, electricity_load, prediction_markets]
EVENT_DATA_CHECKS = [
    unique_key_check(market_prices, "market_prices", ("symbol", "session_date")),
    unique_key_check(weather_hourly, "weather_hourly", ("city", "ts")),
    unique_key_check(electricity_load, "electricity_load", ("area", "interval_start")),
    unique_key_check(prediction_markets, "prediction_markets", ("question_id",)),
    # a question resolves once: two resolution rows (at different times) would give two outcomes
    unique_key_check(
        prediction_markets,
        "market_price_path",
        ("question_id",),
        where="kind = 'resolution'",
        name="one_resolution_per_question",
    ),
]
