"""Macro track, forecasters: nowcast windows and every model that writes the one ``nowcasts`` table
(LLM agents, recorded runs, Fed nowcasts and the consensus). Wiring only; the science is in
``leaf_live.macro.forecasters``, ``leaf_live.macro.agents`` and ``leaf_live.macro.sources``.
"""

import os
from datetime import UTC, datetime, timedelta

import polars as pl
from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetDep,
    AssetExecutionContext,
    Config,
    HourlyPartitionsDefinition,
    MaterializeResult,
    TimeWindowPartitionMapping,
    asset,
    asset_check,
)
from pydantic import Field

from assets.common import (
    DUCKDB_POOL,
    RELEASE_MONTHS,
    SINGLE_RUN,
    process_workers,
    record_partition_rows,
    replace_producer,
    run_partition_keys,
    step_progress,
    table_metadata,
    write_partitions,
    write_tables,
)
from assets.macro_releases import release_calendar, releases
from leaf_live.core import storage
from leaf_live.core.llm import llm_calls_frame, no_models_message
from leaf_live.core.pit import first_per_period
from leaf_live.macro import series_vintages as SV
from leaf_live.macro.agents.nowcast_agent import LLMNowcaster
from leaf_live.macro.forecasters.arima import fit_cache
from leaf_live.macro.forecasters.arima.nowcasts import AutoArima
from leaf_live.macro.forecasters.consensus import consensus_forecasters
from leaf_live.macro.forecasters.published import published_forecasters
from leaf_live.macro.nowcasts import forecast_nowcasts
from leaf_live.macro.windows import nowcast_windows as build_windows
from leaf_live.macro.windows import open_windows, scheduled_releases
from resources import (
    FedNowcastsResource,
    FredMdResource,
    LeafLiveDB,
    LLMResource,
    RealTimeGdpResource,
    RecordedNowcastsResource,
)


def _windows(con) -> pl.DataFrame:
    return storage.read_table(con, "nowcast_windows")


def _plugin(con, windows: pl.DataFrame):
    """The financial-data plug-in of the plugin design (App. S.1/S.5), on the stored tables; every tool
    answers as of the moment it is called (leaf_live.macro.agents.plugin)."""
    from leaf_live.macro.agents.plugin import FinancialDataPlugin

    return FinancialDataPlugin(
        releases=storage.read_table(con, "releases"),
        nowcasts=storage.read_table(con, "nowcasts", "model_id LIKE 'fed/%' AND valid"),
        prices=storage.read_table(con, "prediction_market_prices"),
        schedule={
            (i, r): t
            for i, r, t in windows.select("indicator_id", "reference_period", "closes_at").iter_rows()
        },
    )


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("nowcast_windows"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[releases, release_calendar],
    description=(
        "Nowcast windows per indicator and reference period: open 00:00 ET on the 25th of the target month,"
        " close at the scheduled release (LiveMacroEval §3.4), for every stored first release and every"
        " scheduled release of the calendar that has not landed yet (so live windows are open before their"
        " release). Partition = release month."
    ),
)
def nowcast_windows(context: AssetExecutionContext, db: LeafLiveDB) -> MaterializeResult:
    keys = run_partition_keys(context)
    span = [min(keys), max(keys)]
    with db.get_connection() as con:
        rel = first_per_period(storage.read_table(con, "releases", "partition_key BETWEEN ? AND ?", span))
        cal = storage.read_table(con, "release_calendar", "partition_key BETWEEN ? AND ?", span)
        # every stored first release up to the span: a GDP advance estimate that landed last month means this
        # month's scheduled second estimate is not a window
        landed = storage.read_table(con, "releases", "partition_key <= ?", [span[1]])
        due = scheduled_releases(cal, landed)
        both = pl.concat([rel.select("indicator_id", "reference_period", "release_at"), due])
        win = build_windows(both).filter(pl.col("partition_key").is_in(keys))
        written = write_partitions(con, "nowcast_windows", win, keys)
    return MaterializeResult(metadata={"rows": sum(written.values()), "partitions": len(keys)})


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("nowcasts"),
    deps=[nowcast_windows],
    description=(
        "Nowcasts recorded elsewhere (LiveMacroEval CSV runs; GPT-5 search as "
        "openai/gpt-5-search-api@single), mapped to the catalog's reporting units with the same guardrails; "
        "timestamps America/New_York -> UTC."
    ),
)
def recorded_nowcasts(db: LeafLiveDB, recorded_nowcasts: RecordedNowcastsResource) -> MaterializeResult:
    with db.get_connection() as con:
        windows = _windows(con)
        rows, summaries = recorded_nowcasts.client().load(windows)
        frame = forecast_nowcasts(published_forecasters(rows), windows, producer="recorded_nowcasts")
        written = replace_producer(con, "nowcasts", "recorded_nowcasts", frame)
    valid = int(frame["valid"].sum()) if frame.height else 0
    return MaterializeResult(
        metadata={"rows": sum(written.values()), "valid": valid, "files": len(summaries)}
    )


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("nowcasts"),
    deps=[releases, nowcast_windows],
    description=(
        "Comparators as models: the consensus (terminal value, issued 1 min before release) and each "
        "Fed nowcast (GDPNow, NY Fed, Cleveland CPI, Chicago CHURN) as a step function of publication time."
    ),
)
def comparator_nowcasts(db: LeafLiveDB, fed_nowcasts: FedNowcastsResource) -> MaterializeResult:
    client = fed_nowcasts.client()
    with db.get_connection() as con:
        rel = first_per_period(storage.read_table(con, "releases"))
        missing: dict[str, int] = {}
        fed = client.nowcasts(missing)
        if client.current_only:
            # A live fetch returns each Fed series as published now; keep every earlier stored vintage so the
            # step function of publication time only grows.
            stored = storage.read_table(
                con, "nowcasts", "producer = 'comparator_nowcasts' AND model_id LIKE 'fed/%'"
            ).with_columns(pl.lit(None, pl.Utf8).alias("producer"))
            fed = pl.concat([stored, fed], how="vertical").unique(
                ["model_id", "indicator_id", "reference_period", "issued_at"],
                keep="last",
                maintain_order=True,
            )
        windows = _windows(con)
        frame = forecast_nowcasts(
            [*consensus_forecasters(rel), *published_forecasters(fed)],
            windows,
            producer="comparator_nowcasts",
        )
        written = replace_producer(con, "nowcasts", "comparator_nowcasts", frame)
    models = frame.group_by("model_id").len().sort("model_id").rows()
    return MaterializeResult(
        metadata={
            "rows": sum(written.values()),
            "models": str(models),
            # "." cells of the files read: no row, never a refusal of the file
            "missing_values": sum(missing.values()),
            "missing_values_by_series": str(missing),
        }
    )


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("series_vintages"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    description=(
        "Real-time vintages the auto-ARIMA baseline fits on (App. I), long: the catalog's FRED-MD/QD columns"
        " of every vintage (available at the end of the vintage's month) and real GDP vintages from the"
        " Philadelphia Fed's Real-Time Data Set (extended in the snapshot by approximate vintages from"
        " first/second/third releases). Partition = the vintage's month (the first release month also holds"
        " the 3 months before it)."
    ),
)
def series_vintages(
    context: AssetExecutionContext, db: LeafLiveDB, fred_md: FredMdResource, realtime_gdp: RealTimeGdpResource
) -> MaterializeResult:
    keys = run_partition_keys(context)
    first = RELEASE_MONTHS.get_first_partition_key()
    client = fred_md.client()
    plan = SV.vintage_plan(keys, first, client)
    with step_progress("FRED-MD/QD vintages read", sum(map(len, plan.values())), "vintages") as task:
        rows, report = SV.load_vintage_rows(
            keys, first, fred_md=client, gdp=realtime_gdp.client(), plan=plan, progress=task.advance
        )
    # A partition with a vintage that could not be read keeps its previous rows (e.g. a live vintage not yet
    # published): it is retried by the next run.
    failed = {SV.partition_for(name.split()[1], first) for name in report.unavailable}
    for name, reason in report.unavailable.items():
        context.log.warning(f"series_vintages: {name} not stored: {reason}")
    todo = [k for k in keys if k not in failed]
    missing = {
        name: sum(by.values())
        for name, by in report.missing_values.items()
        if SV.partition_for(name.split()[1], first) in todo
    }
    with db.get_connection() as con:
        written = write_partitions(
            con, "series_vintages", rows.filter(pl.col("partition_key").is_in(todo)), todo
        )
    return MaterializeResult(
        metadata={
            "rows": sum(written.values()),
            "vintages": str(report.vintages),
            "unavailable": str(sorted(report.unavailable)),
            # "." cells of the vintages stored: null (not stored), never a refusal of the file
            "missing_values": sum(missing.values()),
            "missing_values_by_vintage": str(missing),
        }
    )


class ArimaConfig(Config):
    first_month: str | None = Field(
        default="2018-01",
        description=(
            "issue ARIMA nowcasts only for windows whose release month is >= this (YYYY-MM; default the"
            " backtest start). Each window's history gets a 52-order AIC grid, so the 2010-2017 windows are"
            " opt-in."
        ),
    )
    last_month: str | None = Field(default=None, description="... and <= this (YYYY-MM; default no bound)")
    workers: int = Field(
        default=0, description="processes fitting series chains in parallel (0 = one per CPU)"
    )


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("nowcasts", "arima_fits"),
    partitions_def=RELEASE_MONTHS,
    backfill_policy=SINGLE_RUN,
    deps=[
        nowcast_windows,
        releases,
        # a window fits on a vintage of earlier months (the nearest earlier one when the wanted one is
        # missing)
        AssetDep(
            series_vintages,
            partition_mapping=TimeWindowPartitionMapping(
                start_offset=-SV.LOOKBACK_MONTHS, allow_nonexistent_upstream_partitions=True
            ),
        ),
    ],
    description=(
        "Auto-ARIMA baseline (App. I) as baseline/auto-arima: one forecast per window, issued at the window"
        " open and held constant; d from the FRED-MD/QD transform code, (p, q) by AIC over p<=12, q<=3,"
        " fitted on the stored vintage (series_vintages) preceding the target month; ISM as AR(1) on the log"
        " level. Each series is fitted as one chain over its vintages; every grid is kept in the arima_fits"
        " cache, so a rerun refits only new histories (or everything after an estimator change)."
    ),
)
def arima_nowcasts(context: AssetExecutionContext, config: ArimaConfig, db: LeafLiveDB) -> MaterializeResult:
    keys = run_partition_keys(context)
    todo = [
        k
        for k in keys
        if (config.first_month is None or k >= config.first_month)
        and (config.last_month is None or k <= config.last_month)
    ]
    if not todo:
        return MaterializeResult(metadata={"rows": 0, "months": 0, "status": "no month in the ARIMA span"})
    with db.get_connection() as con:
        win = storage.read_table(
            con, "nowcast_windows", "partition_key BETWEEN ? AND ?", [min(keys), max(keys)]
        )
        rel = storage.read_table(con, "releases")
        cached = storage.read_table(con, "arima_fits", "estimator_version = ?", [fit_cache.ESTIMATOR_VERSION])
        vintages = SV.VintageStore(storage.read_table(con, "series_vintages"))
    win = win.filter(pl.col("partition_key").is_in(todo))
    # One batch for the whole span: each series is fitted as one chain over its stored vintages, the chains
    # spread over one process pool for the run; cached grids are not refitted.
    workers = process_workers(config.workers or os.cpu_count() or 1)  # 1 inside a Celery prefork child
    with (
        step_progress("histories built", win.height, "windows") as hist,
        step_progress("histories fitted", win.height, "histories") as fits,
    ):
        model = AutoArima(
            vintages,
            rel,
            workers=workers,
            known=fit_cache.grids_from_frame(cached),
            progress={"histories": hist, "fits": fits},
        )
        frame = forecast_nowcasts([model], win, producer="arima_nowcasts")
    new = fit_cache.grids_frame(model.last_batch.fitted_grids()) if model.last_batch else cached.clear()
    with db.get_connection() as con:
        # Months outside [first_month, last_month] keep their rows: they are outside this run's scope.
        # the nowcasts and the fit cache they came from in ONE transaction (issue 17): each series' cache
        # slice is its current-version rows plus the new ones (older versions are dropped)
        fits = [
            storage.Slice(
                "arima_fits",
                pl.concat([cached.filter(pl.col("series_id") == series), rows]),
                {"series_id": series},
            )
            for (series,), rows in new.group_by("series_id", maintain_order=True)
        ]
        written = write_tables(
            con, {"nowcasts": frame}, todo, extra_where={"producer": "arima_nowcasts"}, also=fits
        )["nowcasts"]
    valid = int(frame["valid"].sum()) if frame.height else 0
    return MaterializeResult(
        metadata={
            "rows": sum(written.values()),
            "valid": valid,
            "months": len(todo),
            "grids_fitted": new["content_hash"].n_unique() if new.height else 0,
            "grids_cached": cached["content_hash"].n_unique() if cached.height else 0,
        }
    )


# LLM nowcasts run live, hour by hour; the partitions start with the paper's live window.
NOWCAST_HOURS = HourlyPartitionsDefinition(start_date="2025-11-01-00:00", end_offset=1)


@asset(
    pool=DUCKDB_POOL,
    group_name="macro_nowcasts",
    metadata=table_metadata("nowcasts", "llm_calls"),
    partitions_def=NOWCAST_HOURS,
    backfill_policy=SINGLE_RUN,
    # an hour reads every window open at that hour, whatever its (New York) release month: UTC hours map to
    # all release months, not to one by time window
    deps=[AssetDep(nowcast_windows, partition_mapping=AllPartitionMapping())],
    description=(
        "LLM agent nowcasts (App. D prompt, two prompt groups per model per hour, single, team or plugin"
        " design (S.1/S.5: point-in-time financial-data tools), web search per provider) through litellm;"
        " every call logged in llm_calls. Past hours are refused: a nowcast cannot be issued retroactively."
        " With no LEAF_LIVE_LLM_MODELS it does nothing."
    ),
)
def llm_nowcasts(context: AssetExecutionContext, db: LeafLiveDB, llm: LLMResource) -> MaterializeResult:
    config = llm.config()
    message = no_models_message(config)
    if message:
        context.log.warning(message)
        return MaterializeResult(metadata={"status": message})
    client = llm.client()  # one call path and rate limiter for every model call of this run
    now = datetime.now(UTC)
    rows = calls = 0
    with db.get_connection() as con:
        windows = _windows(con)
        for key in run_partition_keys(context):
            hour = datetime.strptime(key, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)
            if hour < now - timedelta(hours=1):
                context.log.warning(f"hour {key} is in the past: LLM nowcasts are never backfilled")
                continue
            open_ = open_windows(windows, hour)
            start = len(client.records)
            plugin = _plugin(con, open_) if any(s.design == "plugin" for s in config.models) else None
            nc = forecast_nowcasts(
                [LLMNowcaster(spec, client, partition_key=key, plugin=plugin) for spec in config.models],
                open_,
                producer="llm_nowcasts",
            )
            lg = llm_calls_frame(client.records[start:], key)
            # The call log first: a nowcast row always has its raw response stored.
            storage.replace_partition(con, "llm_calls", lg, {"partition_key": key})
            storage.replace_partition(con, "nowcasts", nc, {"producer": "llm_nowcasts", "partition_key": key})
            rows, calls = rows + nc.height, calls + lg.height
            record_partition_rows({key: nc.height})
    return MaterializeResult(metadata={"rows": rows, "calls": calls})


@asset_check(
    pool=DUCKDB_POOL,
    asset=comparator_nowcasts,
    description=(
        "Point-in-time: comparator nowcasts flagged after_release exactly when issued at/after release."
    ),
    blocking=True,
)
def comparator_nowcasts_point_in_time(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        bad = con.execute(
            "SELECT count(*) FROM nowcasts n JOIN nowcast_windows w USING (indicator_id, reference_period) "
            "WHERE n.producer = 'comparator_nowcasts' AND n.after_release <> (n.issued_at >= w.closes_at)"
        ).fetchone()[0]
    return AssetCheckResult(passed=bad == 0, metadata={"mismatched": bad})


MACRO_NOWCAST_ASSETS = [
    nowcast_windows,
    recorded_nowcasts,
    comparator_nowcasts,
    series_vintages,
    arima_nowcasts,
    llm_nowcasts,
]
MACRO_NOWCAST_CHECKS = [comparator_nowcasts_point_in_time]
