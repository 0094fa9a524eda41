"""Event track (LEAF), task stage: forecast tasks at cutoffs with their frozen input bundles and, kept apart,
their outcomes (LEAF §3.1, §4.1, App. C.1).

Wiring only: the science is ``leaf_live.event.tasks`` (sampling, labels, bundles built from rows with
``available_at <=`` the cutoff) and ``leaf_live.event.pipeline`` (the spans). Two assets write the two task
tables, each its own slices:

* ``forecast_tasks``: series and trend tasks of markets, mid caps, weather and load, one daily partition per
  UTC cutoff day (single-run backfill). The spans (:class:`EventSpansConfig`) fix the cutoff grid: the
  authors' every-other-day cutoffs from each span's start, look-back and horizon inside the span.
* ``event_tasks``: the six §4.1 cutoffs of each resolved question, one partition per question (their cutoffs
  are fractions of the time to resolution, so they exist once the question resolves).

Blocking checks refuse a bundle holding a row knowable after its cutoff (``tasks.bundle_leaks``), a task
key that repeats under another id, and a task without exactly one outcome; a failure stops the forecasts
and scores of the run.
"""

from datetime import date

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetDep,
    AssetExecutionContext,
    Config,
    MetadataValue,
    TimeWindowPartitionMapping,
    asset,
    asset_check,
)
from pydantic import Field

from assets.common import (
    DUCKDB_POOL,
    SAMPLE,
    SINGLE_RUN,
    run_partition_keys,
    sql_check,
    table_metadata,
    unique_key_check,
    write_tables,
)
from assets.event_data import (
    EVENT_DAYS,
    EVENT_QUESTIONS,
    electricity_load,
    market_prices,
    prediction_markets,
    result,
    weather_hourly,
)
from leaf_live.core import storage
from leaf_live.event import tasks
from leaf_live.event.pipeline import Spans, series_tasks, source_days
from resources import LeafLiveDB

GROUP = "event"
_DEFAULT = Spans()
# a cutoff day reads its look-back (mid caps: 3 months) before and its horizon (mid caps: 6 months) after
INPUT_DAYS = TimeWindowPartitionMapping(
    start_offset=-100, end_offset=190, allow_nonexistent_upstream_partitions=True
)


class EventSpansConfig(Config):
    """Task spans, inclusive, as ``YYYY-MM-DD`` (defaults: the snapshot's closest to LEAF's,
    ``pipeline.Spans``)."""

    markets_start: str = Field(
        default=_DEFAULT.markets[0].isoformat(),
        description="large caps and commodities: first cutoff span day",
    )
    markets_end: str = Field(
        default=_DEFAULT.markets[1].isoformat(), description="large caps and commodities: last span day"
    )
    mid_cap_start: str = Field(
        default=_DEFAULT.mid_cap_months[0].isoformat(), description="mid caps: first month (its first day)"
    )
    mid_cap_end: str = Field(
        default=_DEFAULT.mid_cap_months[1].isoformat(), description="mid caps: last month (its first day)"
    )
    weather_start: str = Field(
        default=_DEFAULT.weather[0].isoformat(), description="weather: first local span day"
    )
    weather_end: str = Field(
        default=_DEFAULT.weather[1].isoformat(), description="weather: last local span day"
    )
    electricity_start: str = Field(
        default=_DEFAULT.electricity[0].isoformat(), description="electricity: first local span day"
    )
    electricity_end: str = Field(
        default=_DEFAULT.electricity[1].isoformat(), description="electricity: last local span day"
    )
    replace_wider: bool = Field(
        default=False,
        description=(
            "allow the run to remove stored tasks of its day partitions that these spans no longer build"
            " (leaf-live run --replace-wider); off: such a run fails before writing"
        ),
    )
    case_days: list[str] = Field(
        default=[d.isoformat() for d in _DEFAULT.case_days],
        description="recorded case cutoff days: large-cap tasks of the case's 50 stocks at that close only",
    )

    def spans(self) -> Spans:
        """The science's :class:`~leaf_live.event.pipeline.Spans`; raises :class:`ValueError` naming the
        field."""
        return spans_from_fields(self.model_dump())


SPAN_FIELDS = {
    "markets": ("markets_start", "markets_end"),
    "mid_cap_months": ("mid_cap_start", "mid_cap_end"),
    "weather": ("weather_start", "weather_end"),
    "electricity": ("electricity_start", "electricity_end"),
}


def spans_from_fields(values: dict[str, str]) -> Spans:
    """:class:`Spans` from :class:`EventSpansConfig` fields (missing ones take the defaults). Raises
    :class:`ValueError` naming the field and value for a bad date or span."""
    parsed = {}
    for span, names in SPAN_FIELDS.items():
        bounds = []
        for i, name in enumerate(names):
            text = values.get(name)
            if text is None:
                bounds.append(getattr(_DEFAULT, span)[i])
                continue
            try:
                bounds.append(date.fromisoformat(text))
            except (TypeError, ValueError):
                raise ValueError(f"{name}={text!r}: expected a date YYYY-MM-DD") from None
        parsed[span] = tuple(bounds)
    days = values.get("case_days")
    if days is not None:
        try:
            parsed["case_days"] = tuple(date.fromisoformat(d) for d in days)
        except (TypeError, ValueError):
            raise ValueError(f"case_days={days!r}: expected dates YYYY-MM-DD") from None
    return Spans(**parsed)


def _read_days(con, table: str, first: date, last: date) -> pl.DataFrame:
    return storage.read_table(
        con, table, "partition_key BETWEEN ? AND ?", [first.isoformat(), last.isoformat()]
    )


# rows left without their partner (an outcome without its task or a task without an outcome), e.g. by a
# writer from before the two tables were written in one transaction, killed between them
_ORPHANS = {
    "task_outcomes": "task_id NOT IN (SELECT task_id FROM forecast_tasks)",
    "forecast_tasks": "task_id NOT IN (SELECT task_id FROM task_outcomes)",
}


def write_task_tables(
    con, tasks_frame: pl.DataFrame, outcomes: pl.DataFrame, keys: list[str], *, span_exact: bool = False
) -> tuple[dict[str, int], int]:
    """Write the tasks and their outcomes of partitions ``keys`` in ONE transaction
    (:func:`assets.common.write_tables`), and in that transaction remove rows anywhere in the store left
    without their partner (a store damaged by an older, two-transaction writer), so the store-wide blocking
    check ``tasks_have_one_outcome`` judges a repaired store instead of failing every later run. Returns the
    tasks written per key and the number of orphan rows removed (counted before the write, outside ``keys``
    only those are repairs; inside ``keys`` they are replaced anyway)."""
    storage.ensure_tables(con, ["forecast_tasks", "task_outcomes"])
    repaired = sum(
        con.execute(f"SELECT count(*) FROM {t} WHERE {w}").fetchone()[0] for t, w in _ORPHANS.items()
    )
    written = write_tables(
        con,
        {"forecast_tasks": tasks_frame, "task_outcomes": outcomes},
        keys,
        then=[f"DELETE FROM {t} WHERE {w}" for t, w in _ORPHANS.items()],
        refuse_removal=("forecast_tasks",) if span_exact else (),
    )
    return written["forecast_tasks"], int(repaired)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[
        AssetDep(market_prices, partition_mapping=INPUT_DAYS),
        AssetDep(weather_hourly, partition_mapping=INPUT_DAYS),
        AssetDep(electricity_load, partition_mapping=INPUT_DAYS),
    ],
    metadata=table_metadata("forecast_tasks", "task_outcomes"),
    description=(
        "Series and trend forecast tasks (LEAF §3.1, §4.1, App. C.1) of the large caps (1/2/3/7 sessions),"
        " commodities (3/7), mid caps (3/6 months) and weather / load (3/7 days, hourly), each with its"
        " frozen input bundle (only rows with available_at <= the cutoff) and SHA-256, plus the outcomes"
        " (table task_outcomes, never given to forecasters). Partition = UTC cutoff day; run config = the"
        " task spans."
    ),
)
def forecast_tasks(context: AssetExecutionContext, config: EventSpansConfig, db: LeafLiveDB):
    keys = run_partition_keys(context)
    spans = config.spans()
    days = source_days(spans)
    with db.get_connection() as con:
        inputs = {t: _read_days(con, t, *days[t]) for t in days}
        built = series_tasks(
            inputs["market_prices"], inputs["weather_hourly"], inputs["electricity_load"], spans, days=keys
        )
        # a narrower span over wider day partitions never removes stored tasks unless replace_wider is set
        exact = not config.replace_wider
        written, repaired = write_task_tables(con, built.tasks, built.outcomes, keys, span_exact=exact)
    counts = built.tasks.group_by("domain").len().sort("domain")
    return result(written, by_domain=MetadataValue.json(dict(counts.iter_rows())), repaired_rows=repaired)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_QUESTIONS,
    backfill_policy=SINGLE_RUN,
    deps=[prediction_markets],
    metadata=table_metadata("forecast_tasks", "task_outcomes"),
    description=(
        "Event forecast tasks (LEAF §4.1): each resolved question at 100%, 80%, 60%, 40%, 20% and 10% of its"
        " time to resolution, with the question and the YES-price path known by the cutoff as the frozen"
        " bundle (and the market price at the cutoff where the data has one); outcomes in task_outcomes."
        " Written to forecast_tasks with partition_key = question id. Partition = question id."
    ),
)
def event_tasks(context: AssetExecutionContext, db: LeafLiveDB):
    keys = run_partition_keys(context)
    with db.get_connection() as con:
        where = f"partition_key IN ({', '.join('?' for _ in keys)})"
        questions = storage.read_table(con, "prediction_markets", where, keys)
        path = storage.read_table(con, "market_price_path", where, keys)
        built = tasks.event_tasks(questions, path)
        written, repaired = write_task_tables(con, built.tasks, built.outcomes, keys)
    return result(written, questions_with_tasks=built.tasks["target_id"].n_unique(), repaired_rows=repaired)


def _bundle_check(asset_def, name: str):
    @asset_check(
        pool=DUCKDB_POOL,
        asset=asset_def,
        name=name,
        blocking=True,
        description=(
            "Point in time: no stored task bundle holds a row knowable after the task's cutoff "
            "(tasks.bundle_leaks: max_input_available_at > cutoff; for event questions the question text's "
            "publication counts beside the prices), over every task in forecast_tasks; the events component "
            "is event_bundles_point_in_time's. "
            "Blocking: a failure stops leaf_forecasts and leaf_scores."
        ),
    )
    def _check(db: LeafLiveDB) -> AssetCheckResult:
        with db.get_connection() as con:
            t = pl.from_arrow(
                con.sql("SELECT task_id, cutoff, max_input_available_at FROM forecast_tasks").arrow()
            )
        leaks = tasks.bundle_leaks(t)
        return AssetCheckResult(
            passed=leaks.height == 0,
            metadata={
                "tasks": t.height,
                "leaking": leaks.height,
                "first": MetadataValue.text(str(leaks.head(SAMPLE).rows())),
            },
        )

    return _check


tasks_have_one_outcome = sql_check(
    forecast_tasks,
    "tasks_have_one_outcome",
    "Every task has exactly one outcome row and every outcome a task "
    "(outcomes are kept apart from the tasks, in task_outcomes).",
    "SELECT coalesce(t.task_id, o.task_id), count(o.task_id) FROM forecast_tasks t FULL JOIN task_outcomes o "
    "USING (task_id) GROUP BY 1 HAVING count(o.task_id) <> 1 OR count(t.task_id) = 0",
)

forecast_tasks_point_in_time = _bundle_check(forecast_tasks, "forecast_tasks_point_in_time")
event_tasks_point_in_time = _bundle_check(event_tasks, "event_tasks_point_in_time")
# one task per target x cutoff x horizon x kind, whatever its id says
task_key_unique = unique_key_check(
    forecast_tasks, "forecast_tasks", ("domain", "target_id", "task_kind", "horizon", "cutoff")
)

EVENT_TASK_ASSETS = [forecast_tasks, event_tasks]
EVENT_TASK_CHECKS = [
    forecast_tasks_point_in_time,
    event_tasks_point_in_time,
    task_key_unique,
    tasks_have_one_outcome,
]
# the checks the scores' run evaluates again over the whole store (blocking: they gate
# leaf_forecasts/leaf_scores)
TASK_GATE_CHECKS = [forecast_tasks_point_in_time, task_key_unique, tasks_have_one_outcome]
