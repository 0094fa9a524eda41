"""Schedules and sensors (wiring only)."""

from dagster import build_schedule_from_partitioned_job, define_asset_job

from assets.macro_nowcasts import NOWCAST_HOURS, llm_nowcasts

# Every hour, five minutes past, the LLM agents nowcast every open window (the hour's partition).
llm_nowcast_job = define_asset_job("llm_nowcasts_hourly", selection=[llm_nowcasts], partitions_def=NOWCAST_HOURS)
llm_nowcast_schedule = build_schedule_from_partitioned_job(llm_nowcast_job, minute_of_hour=5)

from sensors.event import EVENT_JOBS, EVENT_SENSORS  # noqa: E402
from sensors.scores import SCORE_JOBS  # noqa: E402

SCHEDULES = [llm_nowcast_schedule]
JOBS = [llm_nowcast_job, *SCORE_JOBS.values(), *EVENT_JOBS]
SENSORS = [*EVENT_SENSORS]
