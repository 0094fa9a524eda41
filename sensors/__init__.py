"""The living service (wiring only): jobs, sensors and schedules of both tracks.

One switch, ``LEAF_LIVE_SCHEDULES`` (read in ``leaf_live.core.settings``): ``off`` (the offline default)
leaves every sensor and schedule STOPPED, ``on`` makes them all start RUNNING when the code location loads
under a Dagster daemon (``dagster dev``). :func:`living_service` builds them for a settings object;
``definitions.py`` adds them to the code location.

Sensors: ``release_landed_sensor`` and ``windows_ahead_sensor`` (macro, sensors/macro.py),
``event_questions_sensor`` and ``event_days_sensor`` (sensors/event.py). Schedules:
``llm_nowcasts_hourly_schedule``, ``event_days_daily_schedule``, ``event_forecasts_daily_schedule``,
``event_llm_forecasts_daily_schedule`` and ``event_retrieval_weekly_schedule``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DefaultScheduleStatus, DefaultSensorStatus

from leaf_live.core.settings import Settings
from sensors.event import EVENT_JOBS, build_event_schedules, build_event_sensors
from sensors.macro import (
    build_llm_nowcast_schedule,
    build_release_landed_sensor,
    build_windows_ahead_sensor,
    llm_nowcast_job,
    release_landing_job,
    windows_ahead_job,
)
from sensors.participation import build_participation_sensors, submission_store_job
from sensors.scores import SCORE_JOBS

JOBS = [llm_nowcast_job, release_landing_job, windows_ahead_job, *SCORE_JOBS.values(), *EVENT_JOBS]
JOBS.append(submission_store_job)  # issue 21: accepted submissions into the store


@dataclass(frozen=True)
class LivingService:
    jobs: list
    sensors: list
    schedules: list


def living_service(settings: Settings) -> LivingService:
    """Every sensor and schedule, RUNNING by default when ``settings.schedules_on``
    (``LEAF_LIVE_SCHEDULES=on``), else STOPPED, with the jobs they target."""
    on = settings.schedules_on
    sensor_status = DefaultSensorStatus.RUNNING if on else DefaultSensorStatus.STOPPED
    schedule_status = DefaultScheduleStatus.RUNNING if on else DefaultScheduleStatus.STOPPED
    return LivingService(
        jobs=list(JOBS),
        sensors=[
            build_release_landed_sensor(sensor_status),
            build_windows_ahead_sensor(sensor_status),
            *build_event_sensors(sensor_status),
            *build_participation_sensors(sensor_status),
        ],
        schedules=[build_llm_nowcast_schedule(schedule_status), *build_event_schedules(schedule_status)],
    )
