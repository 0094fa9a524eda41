"""Event-track jobs and the question sensor (wiring only).

The event assets have three partitionings, so three jobs: the daily sources and series/trend tasks
(:data:`event_days_job`, UTC days), the prediction-market questions and their event tasks
(:data:`event_questions_job`, one dynamic partition per question), and the unpartitioned forecasts and
scores (:data:`event_scores_job`, gated by the blocking task checks re-evaluated over the whole store).
``leaf-live run`` executes them in that order from the snapshot. The agent jobs (issue 11) are
:data:`event_retrieval_job` (week x target), :data:`event_llm_forecasts_job` (UTC day of the cutoffs) and
:data:`event_analyses_job` (unpartitioned), for schedules to run. :func:`event_questions_sensor` adds a
partition for every new question of the configured source and requests its run.
"""

from dagster import (
    AssetSelection,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    define_asset_job,
    sensor,
)

from assets.event_data import (
    EVENT_QUESTIONS,
    electricity_load,
    leaf_targets,
    market_prices,
    prediction_markets,
    question_keys,
    weather_hourly,
)
from assets.event_agents import (
    context_leaks_check,
    fact_checked_events,
    leaf_llm_forecasts,
    predictability_ratings,
    retrieved_events,
)
from assets.event_analyses import EVENT_ANALYSIS_ASSETS
from assets.event_scoring import leaf_forecasts, leaf_scores
from assets.event_tasks import TASK_GATE_CHECKS, event_tasks, forecast_tasks
from resources import EventMarketsResource

event_days_job = define_asset_job(
    "leaf_live_event_days", selection=[market_prices, weather_hourly, electricity_load, forecast_tasks],
    description="Event track: daily sources and the series/trend tasks of a range of days.")
event_questions_job = define_asset_job(
    "leaf_live_event_questions", selection=[leaf_targets, prediction_markets, event_tasks],
    description="Event track: the target catalog, prediction-market questions (price paths, resolutions) and their "
    "event tasks.")
event_scores_job = define_asset_job(
    "leaf_live_event_scores",
    selection=AssetSelection.assets(leaf_forecasts, leaf_scores) | AssetSelection.checks(*TASK_GATE_CHECKS),
    description="Event track: baseline forecasts of every stored task and the scores of every model, after the "
    "blocking point-in-time checks on the stored tasks.")

# Issue 11: the agents. Weekly retrieval + dual fact-check of every target (week x target partitions; a schedule
# built with build_schedule_from_partitioned_job requests every target of the week that just ended), and the daily
# LLM forecasts of the day's cutoffs with their blocking leak check, then the scores of every model.
event_retrieval_job = define_asset_job(
    "leaf_live_event_retrieval", selection=[retrieved_events, fact_checked_events],
    description="Event track: the retrieval agent and the dual fact-check for a week x target (LEAF §3.2).")
event_llm_forecasts_job = define_asset_job(
    "leaf_live_event_llm_forecasts",
    selection=AssetSelection.assets(leaf_llm_forecasts, predictability_ratings, leaf_scores)
    | AssetSelection.checks(context_leaks_check),
    description="Event track: the LLM forecasters with and without events and the predictability ratings for the "
    "cutoffs of a UTC day, the blocking context-leak check, then the scores of every model.")
event_analyses_job = define_asset_job(
    "leaf_live_event_analyses", selection=AssetSelection.assets(*EVENT_ANALYSIS_ASSETS),
    description="Event track: Table 2 filter rates and costs, predictability levels, alpha-consistency, living-data "
    "and fact-check ablations from the stored rows.")


@sensor(job=event_questions_job, minimum_interval_seconds=6 * 3600, default_status=DefaultSensorStatus.STOPPED,
        description="Adds a question partition for every new question of the event_markets source in the LEAF "
        "categories and requests its run.")
def event_questions_sensor(context: SensorEvaluationContext, event_markets: EventMarketsResource) -> SensorResult:
    keys = question_keys(event_markets.client().load().questions)
    have = set(context.instance.get_dynamic_partitions(EVENT_QUESTIONS.name))
    new = [k for k in keys if k not in have]
    return SensorResult(
        dynamic_partitions_requests=[EVENT_QUESTIONS.build_add_request(new)] if new else [],
        run_requests=[RunRequest(partition_key=k) for k in new],
    )


EVENT_JOBS = [event_days_job, event_questions_job, event_scores_job, event_retrieval_job, event_llm_forecasts_job,
              event_analyses_job]
EVENT_SENSORS = [event_questions_sensor]
