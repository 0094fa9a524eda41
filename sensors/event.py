"""Event-track jobs, sensors and schedules (wiring only).

The event assets have three partitionings, so three jobs: the daily sources and series/trend tasks
(:data:`event_days_job`, UTC days), the prediction-market questions and their event tasks
(:data:`event_questions_job`, one dynamic partition per question), and the unpartitioned forecasts and
scores (:data:`event_scores_job`, gated by the blocking task checks re-evaluated over the whole store).
``leaf-live run`` executes them in that order from the snapshot. The agent jobs (issue 11) are
:data:`event_retrieval_job` (week x target), :data:`event_llm_forecasts_job` (UTC day of the cutoffs) and
:data:`event_analyses_job` (unpartitioned), for schedules to run.

Living service (``clock`` resource gives "now"; the snapshot sources replay the recording at it):

* :func:`event_questions_tick` (``event_questions_sensor``) adds a partition for every new question of the
  configured source and requests its run, and requests a question's run again once its resolution lands at the
  source while the store still holds it unresolved -- once per question (cursor: the resolutions requested).
* :func:`event_days_tick` (``event_days_sensor``) requests each daily source's partition of a UTC day once the
  clock passes the day's end plus the source's publication lag (``PUBLICATION_LAG`` of each source module),
  once per source and day (cursor: the last day requested per source).
* :func:`event_days_schedule_tick` (daily ingestion, 06:00 UTC) requests yesterday's partition of the daily
  sources and tasks unless every daily asset already has it; :func:`event_forecasts_tick` (daily, 07:00 UTC)
  runs the baseline forecasts and scores when tasks exist; :func:`llm_forecasts_tick` (daily, 07:30 UTC) the
  LLM forecasts of yesterday's cutoffs; :func:`weekly_retrieval_tick` (Mondays 05:00 UTC) retrieval and
  fact-checking of every target for the week that ended.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

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

from assets.dbt_marts import dbt_event_marts
from assets.event_agents import (
    QUESTION_RETRIEVAL_PARTITIONS,
    RETRIEVAL_TARGETS,
    RETRIEVAL_WEEKS,
    context_leaks_check,
    event_bundles,
    fact_checked_events,
    leaf_llm_forecasts,
    predictability_ratings,
    question_fact_checked_events,
    question_retrieved_events,
    recorded_events,
    retrieved_events,
)
from assets.event_analyses import EVENT_ANALYSIS_ASSETS
from assets.event_data import (
    EVENT_QUESTIONS,
    electricity_load,
    leaf_targets,
    market_prices,
    prediction_markets,
    question_keys,
    weather_hourly,
)
from assets.event_scoring import event_rankings, leaf_forecasts, leaf_scores
from assets.event_tasks import TASK_GATE_CHECKS, event_tasks, forecast_tasks
from leaf_live.core import storage
from leaf_live.core.llm import no_models_message
from leaf_live.core.pit import UTC, days_complete
from leaf_live.event.agents.retrieval import question_weeks
from leaf_live.event.sources import electricity as load_source
from leaf_live.event.sources import markets as price_source
from leaf_live.event.sources import weather as weather_source
from leaf_live.event.sources.prediction_markets import resolutions_landed
from resources import ClockResource, EventMarketsResource, LeafLiveDB, LLMResource
from sensors.macro import DatabaseBusy, read_stored
from sensors.priority import priority_tags

event_days_job = define_asset_job(
    "leaf_live_event_days",
    tags=priority_tags("leaf_live_event_days"),
    selection=[market_prices, weather_hourly, electricity_load, forecast_tasks],
    description="Event track: daily sources and the series/trend tasks of a range of days.",
)
event_questions_job = define_asset_job(
    "leaf_live_event_questions",
    tags=priority_tags("leaf_live_event_questions"),
    selection=[leaf_targets, prediction_markets, event_tasks],
    description=(
        "Event track: the target catalog, prediction-market questions (price paths, resolutions) and their "
        "event tasks."
    ),
)
event_scores_job = define_asset_job(
    "leaf_live_event_scores",
    tags=priority_tags("leaf_live_event_scores"),
    selection=AssetSelection.assets(leaf_forecasts, leaf_scores, event_rankings, dbt_event_marts)
    | AssetSelection.checks(*TASK_GATE_CHECKS),
    description=(
        "Event track: baseline forecasts of every stored task and the scores of every model, after the "
        "blocking point-in-time checks on the stored tasks, then the stored boards (event_rankings and the "
        "dbt model event_board with its tests)."
    ),
)

# Issue 18: recorded events (the SEER case) and the with-events bundle of every stored task, in leaf-live run
# after the daily tasks and before the scores; the analyses after the scores.
event_recorded_job = define_asset_job(
    "leaf_live_event_recorded",
    tags=priority_tags("leaf_live_event_recorded"),
    selection=[recorded_events, event_bundles],
    description=(
        "Event track: the recorded SEER case (fact-checked events, label checks, its selective picks) and "
        "the with-events bundle of every stored task."
    ),
)

# Issue 11: the agents. Weekly retrieval + dual fact-check of every target (week x target partitions), and the
# daily LLM forecasts of the day's cutoffs with their blocking leak check, then the scores of every model.
event_retrieval_job = define_asset_job(
    "leaf_live_event_retrieval",
    tags=priority_tags("leaf_live_event_retrieval"),
    selection=[retrieved_events, fact_checked_events],
    description="Event track: the retrieval agent and the dual fact-check for a week x target (LEAF §3.2).",
)
event_question_retrieval_job = define_asset_job(
    "leaf_live_event_question_retrieval",
    tags=priority_tags("leaf_live_event_question_retrieval"),
    selection=[question_retrieved_events, question_fact_checked_events],
    partitions_def=QUESTION_RETRIEVAL_PARTITIONS,
    description=(
        "Event track: the retrieval agent and the dual fact-check for a week x prediction-market question"
        " (LEAF C.2.5, weekly per question)."
    ),
)
event_llm_forecasts_job = define_asset_job(
    "leaf_live_event_llm_forecasts",
    tags=priority_tags("leaf_live_event_llm_forecasts"),
    selection=AssetSelection.assets(
        leaf_llm_forecasts, predictability_ratings, leaf_scores, event_rankings, dbt_event_marts
    )
    | AssetSelection.checks(context_leaks_check),
    description=(
        "Event track: the LLM forecasters with and without events and the predictability ratings for the "
        "cutoffs of a UTC day, the blocking context-leak check, then the scores of every model and the "
        "stored boards (event_rankings, the dbt model event_board)."
    ),
)
event_analyses_job = define_asset_job(
    "leaf_live_event_analyses",
    tags=priority_tags("leaf_live_event_analyses"),
    selection=AssetSelection.assets(*EVENT_ANALYSIS_ASSETS),
    description=(
        "Event track: Table 2 filter rates and costs, predictability levels, alpha-consistency, living-data "
        "and fact-check ablations from the stored rows."
    ),
)

# daily source asset -> its publication lag after the UTC day's end
DAILY_SOURCES = {
    market_prices.key: price_source.PUBLICATION_LAG,
    weather_hourly.key: weather_source.PUBLICATION_LAG,
    electricity_load.key: load_source.PUBLICATION_LAG,
}
DAYS_LOOKBACK = timedelta(days=7)  # the first tick (no cursor) catches up at most this far back
# a requested day not materialized is asked again after 1 h, 2 h, 4 h, ... (at most a day), for two weeks
RETRY_FIRST_WAIT, RETRY_MAX_WAIT, RETRY_HORIZON = timedelta(hours=1), timedelta(days=1), timedelta(days=14)
DAILY_ASSETS = [market_prices.key, weather_hourly.key, electricity_load.key, forecast_tasks.key]


def event_questions_tick(
    context: SensorEvaluationContext,
    clock: ClockResource,
    event_markets: EventMarketsResource,
    db: LeafLiveDB,
) -> SensorResult:
    """One evaluation of ``event_questions_sensor`` (module docstring)."""
    at = clock.now()
    data = event_markets.client().load()
    keys = question_keys(data.questions)
    have = set(context.instance.get_dynamic_partitions(EVENT_QUESTIONS.name))
    new = [k for k in keys if k not in have]
    requested = json.loads(context.cursor)["resolved"] if context.cursor else []
    try:
        stored = read_stored(db, lambda con: storage.read_table(con, "prediction_markets"))
    except DatabaseBusy as exc:
        return SensorResult(skip_reason=SkipReason(str(exc)), cursor=context.cursor)
    if stored is None:
        stored = data.questions.clear().select("question_id", "resolve_at")
    landed = resolutions_landed(data, stored, requested, at)
    # a question's first run already stores its resolution when both arrive in one tick
    landed = landed.filter(landed["question_id"].is_in(keys) & ~landed["question_id"].is_in(new))
    runs = [RunRequest(run_key=f"listed/{k}", partition_key=k) for k in new]
    runs += [
        RunRequest(run_key=f"resolved/{q}", partition_key=q, tags={"leaf_live/resolved_at": t.isoformat()})
        for q, t in landed.iter_rows()
    ]
    cursor = json.dumps(
        {"resolved": sorted({*requested, *landed["question_id"].to_list()}), "evaluated_at": at.isoformat()}
    )
    if not runs:
        return SensorResult(
            skip_reason=SkipReason(
                f"{at:%Y-%m-%d %H:%M}Z: no new question and no resolution landed "
                f"({len(keys)} questions known)"
            ),
            cursor=cursor,
        )
    return SensorResult(
        dynamic_partitions_requests=[EVENT_QUESTIONS.build_add_request(new)] if new else [],
        run_requests=runs,
        cursor=cursor,
    )


def retry_wait(attempt: int) -> timedelta:
    """Wait before asking a source again for a day its ``attempt``-th run did not materialize (incomplete at
    the source, or failed): 1 h, 2 h, 4 h, ... at most :data:`RETRY_MAX_WAIT`."""
    return min(RETRY_FIRST_WAIT * 2 ** (attempt - 1), RETRY_MAX_WAIT)


def event_days_tick(context: SensorEvaluationContext, clock: ClockResource) -> SensorResult:
    """One evaluation of ``event_days_sensor`` (module docstring): request each daily source's newly complete
    days once, then ask again, with an increasing wait (:func:`retry_wait`), for every requested day that is
    still not materialized (a day the source answered only in part fails its run, see
    ``assets.event_data.write_days``), until it is or it is older than :data:`RETRY_HORIZON`. The cursor
    holds the last day requested per source and, under ``"retry"``, ``{source: {day: [attempts, next]}}``."""
    at = clock.now()
    last = json.loads(context.cursor) if context.cursor else {}
    runs, cursor = [], dict(last)
    retry: dict[str, dict[str, list]] = {k: dict(v) for k, v in last.get("retry", {}).items()}
    asked_again = 0
    for key, lag in DAILY_SOURCES.items():
        name = key.to_user_string()
        first = (
            (date.fromisoformat(last[name]) + timedelta(days=1))
            if name in last
            else (at - DAYS_LOOKBACK).date()
        )
        pending = retry.setdefault(name, {})
        if pending:
            done = context.instance.get_materialized_partitions(key)
            for day, (attempts, due) in sorted(pending.items()):
                if day in done or date.fromisoformat(day) < (at - RETRY_HORIZON).date():
                    del pending[day]
                elif at >= datetime.fromisoformat(due):
                    runs.append(
                        RunRequest(
                            run_key=f"{name}/{day}/retry{attempts}",
                            partition_key=day,
                            asset_selection=[key],
                            tags={"leaf_live/attempt": str(attempts + 1)},
                        )
                    )
                    pending[day] = [attempts + 1, (at + retry_wait(attempts + 1)).isoformat()]
                    asked_again += 1
        for day in days_complete(at, lag, first):
            runs.append(
                RunRequest(run_key=f"{name}/{day}", partition_key=day.isoformat(), asset_selection=[key])
            )
            cursor[name] = day.isoformat()
            pending[day.isoformat()] = [1, (at + retry_wait(1)).isoformat()]
    cursor["retry"] = {k: v for k, v in retry.items() if v}
    text = json.dumps(cursor, sort_keys=True)
    if not runs:
        waiting = sum(len(v) for v in cursor["retry"].values())
        return SensorResult(
            skip_reason=SkipReason(
                f"{at:%Y-%m-%d %H:%M}Z: no day newly complete at any daily source and no retry due "
                f"(last requested: { {k: v for k, v in cursor.items() if k != 'retry'} or 'none' }; "
                f"{waiting} days waiting to be asked again)"
            ),
            cursor=text,
        )
    if asked_again:
        context.log.info(f"asking again for {asked_again} days not materialized yet")
    return SensorResult(run_requests=runs, cursor=text)


def event_days_schedule_tick(
    context: ScheduleEvaluationContext, clock: ClockResource
) -> RunRequest | SkipReason:
    """Daily ingestion: yesterday's (UTC) partition of the daily sources and tasks, unless every daily asset
    has it materialized already (e.g. by ``event_days_sensor`` and an earlier tick)."""
    t = clock.simulated() or context.scheduled_execution_time or clock.now()
    day = (t.astimezone(UTC) - timedelta(days=1)).date().isoformat()
    missing = [
        k.to_user_string() for k in DAILY_ASSETS if day not in context.instance.get_materialized_partitions(k)
    ]
    if not missing:
        return SkipReason(f"day {day}: every daily asset is materialized already (nothing to ingest)")
    return RunRequest(
        run_key=f"daily/{day}", partition_key=day, tags={"leaf_live/missing": ",".join(missing)}
    )


def event_forecasts_tick(
    context: ScheduleEvaluationContext, clock: ClockResource, db: LeafLiveDB
) -> RunRequest | SkipReason:
    """Daily event forecasts: the baselines (and any forecaster of ``leaf_forecasts``) and the scores, when
    tasks are stored."""
    try:
        n = read_stored(db, lambda con: con.execute("SELECT count(*) FROM forecast_tasks").fetchone()[0])
    except DatabaseBusy as exc:
        return SkipReason(str(exc))
    tasks = 0 if n is None else int(n)
    if tasks == 0:
        return SkipReason("no forecast task is stored yet (nothing to forecast)")
    day = (
        (clock.simulated() or context.scheduled_execution_time or clock.now())
        .astimezone(UTC)
        .date()
        .isoformat()
    )
    return RunRequest(run_key=f"forecasts/{day}", tags={"leaf_live/tasks": str(tasks)})


def llm_forecasts_tick(
    context: ScheduleEvaluationContext, clock: ClockResource, db: LeafLiveDB, llm: LLMResource
) -> RunRequest | SkipReason:
    """Daily LLM event forecasts: yesterday's (UTC) partition of ``leaf_live_event_llm_forecasts`` (the tasks
    whose cutoff falls on that day, with and without events), when models are configured and such tasks are
    stored.
    """
    t = clock.simulated() or context.scheduled_execution_time or clock.now()
    day = (t.astimezone(UTC) - timedelta(days=1)).date()
    message = no_models_message(llm.config())
    if message:
        return SkipReason(f"day {day}: {message}")
    try:
        n = read_stored(
            db,
            lambda con: con.execute(
                "SELECT count(*) FROM forecast_tasks WHERE CAST(cutoff AS DATE) = ?", [day]
            ).fetchone()[0],
        )
    except DatabaseBusy as exc:
        return SkipReason(str(exc))
    if not n:
        return SkipReason(f"day {day}: no forecast task has its cutoff on this day (nothing to forecast)")
    return RunRequest(
        run_key=f"llm_forecasts/{day}", partition_key=day.isoformat(), tags={"leaf_live/tasks": str(n)}
    )


def weekly_retrieval_tick(
    context: ScheduleEvaluationContext, clock: ClockResource, llm: LLMResource
) -> list[RunRequest] | SkipReason:
    """Weekly event retrieval (LEAF §3.2): every target's partition of the week (Monday..Sunday) that ended
    before the tick, when models are configured."""
    t = (clock.simulated() or context.scheduled_execution_time or clock.now()).astimezone(UTC)
    monday = t.date() - timedelta(days=t.weekday() + 7)
    message = no_models_message(llm.config())
    if message:
        return SkipReason(f"week of {monday}: {message}")
    if monday.isoformat() not in RETRIEVAL_WEEKS.get_partition_keys(current_time=t):
        return SkipReason(
            f"week of {monday}: not a retrieval week (weeks start {RETRIEVAL_WEEKS.start:%Y-%m-%d})"
        )
    return [
        RunRequest(run_key=f"retrieval/{monday}|{target}", partition_key=f"{monday}|{target}")
        for target in RETRIEVAL_TARGETS
    ]


def weekly_question_retrieval_tick(
    context: ScheduleEvaluationContext, clock: ClockResource, db: LeafLiveDB, llm: LLMResource
) -> list[RunRequest] | SkipReason:
    """Weekly retrieval per prediction-market question: the ``<Monday>|<question_id>`` partition of the week
    that ended for every stored question open during it (``retrieval.question_weeks``), when models are
    configured."""
    t = (clock.simulated() or context.scheduled_execution_time or clock.now()).astimezone(UTC)
    monday = t.date() - timedelta(days=t.weekday() + 7)
    message = no_models_message(llm.config())
    if message:
        return SkipReason(f"week of {monday}: {message}")
    if monday.isoformat() not in RETRIEVAL_WEEKS.get_partition_keys(current_time=t):
        return SkipReason(
            f"week of {monday}: not a retrieval week (weeks start {RETRIEVAL_WEEKS.start:%Y-%m-%d})"
        )
    try:
        rows = read_stored(
            db,
            lambda con: con.execute(
                "SELECT question_id, open_at, resolve_at FROM prediction_markets"
            ).fetchall(),
        )
    except DatabaseBusy as exc:
        return SkipReason(str(exc))
    # a stored question has its partition (prediction_markets is written per question partition)
    open_ = [q for q, o, r in rows or [] if question_weeks(o, r, [monday], now=t)]
    if not open_:
        return SkipReason(f"week of {monday}: no stored question was open during the week")
    return [
        RunRequest(run_key=f"question_retrieval/{monday}|{q}", partition_key=f"{monday}|{q}") for q in open_
    ]


def build_event_sensors(status: DefaultSensorStatus) -> list:
    return [
        sensor(
            name="event_questions_sensor",
            job=event_questions_job,
            minimum_interval_seconds=3600,
            default_status=status,
            description=(
                "Adds a question partition for every new question of the event_markets source in the LEAF "
                "categories and requests its run; requests it again once when its resolution lands."
            ),
        )(event_questions_tick),
        sensor(
            name="event_days_sensor",
            job=event_days_job,
            minimum_interval_seconds=900,
            default_status=status,
            description=(
                "Requests each daily source's UTC-day partition once the clock passes the day's end plus "
                "the source's publication lag (prices 1 h, load 2 h, weather 6 h), once per source and day."
            ),
        )(event_days_tick),
    ]


def build_event_schedules(status: DefaultScheduleStatus) -> list:
    """The event track's schedules (module docstring)."""
    return [
        schedule(
            name="event_days_daily_schedule",
            job=event_days_job,
            cron_schedule="0 6 * * *",
            execution_timezone="UTC",
            default_status=status,
            description=(
                "Daily ingestion at 06:00 UTC: yesterday's prices, weather, load and series/trend tasks, "
                "skipped when all are materialized."
            ),
        )(event_days_schedule_tick),
        schedule(
            name="event_forecasts_daily_schedule",
            job=event_scores_job,
            cron_schedule="0 7 * * *",
            execution_timezone="UTC",
            default_status=status,
            description=(
                "Daily baseline event forecasts and scores at 07:00 UTC, skipped while no task is stored."
            ),
        )(event_forecasts_tick),
        schedule(
            name="event_llm_forecasts_daily_schedule",
            job=event_llm_forecasts_job,
            cron_schedule="30 7 * * *",
            execution_timezone="UTC",
            default_status=status,
            description=(
                "Daily LLM event forecasts at 07:30 UTC for the tasks whose cutoff was yesterday, "
                "skipped without models or tasks."
            ),
        )(llm_forecasts_tick),
        schedule(
            name="event_retrieval_weekly_schedule",
            job=event_retrieval_job,
            cron_schedule="0 5 * * 1",
            execution_timezone="UTC",
            default_status=status,
            description=(
                "Weekly event retrieval and fact-checking, Mondays 05:00 UTC: every target of the week "
                "that ended; skipped without models."
            ),
        )(weekly_retrieval_tick),
        schedule(
            name="event_question_retrieval_weekly_schedule",
            job=event_question_retrieval_job,
            cron_schedule="15 5 * * 1",
            execution_timezone="UTC",
            default_status=status,
            description=(
                "Weekly event retrieval and fact-checking per prediction-market question, Mondays 05:15 UTC:"
                " every stored question open during the week that ended; skipped without models."
            ),
        )(weekly_question_retrieval_tick),
    ]


EVENT_JOBS = [
    event_days_job,
    event_questions_job,
    event_scores_job,
    event_recorded_job,
    event_retrieval_job,
    event_question_retrieval_job,
    event_llm_forecasts_job,
    event_analyses_job,
]
