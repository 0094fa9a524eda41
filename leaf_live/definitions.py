"""Dagster ``Definitions`` for the leaf_live code location (the only dagster import in leaf_live/).

Assembled from ``assets/``, ``resources/`` and ``sensors/``. Resources come from the environment:
``LEAF_LIVE_DB``, ``LEAF_LIVE_SNAPSHOT``, ``LEAF_LIVE_TRANSPORT`` (see ``leaf_live.core.settings``);
``leaf-live run`` builds the same definitions around the resources its flags name
(:func:`build_definitions`) and executes :data:`MAIN_JOB` from them (always in-process).

Deployment profile (README "Deployment"): ``LEAF_LIVE_EXECUTOR=in_process`` (default, the embedded profile)
or ``celery`` (production: steps go to ``dagster-celery`` workers, configured by the YAML at
``LEAF_LIVE_CELERY_CONFIG``, default ``deploy/production/celery.yaml``). Either way every step that opens
DuckDB is in the concurrency pool ``duckdb`` (declared by ``pool=`` on its decorator; checked here once by
:func:`assets.common.in_duckdb_pool`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from dagster import AssetSelection, Definitions, ExecutorDefinition, define_asset_job, in_process_executor

from assets.common import in_duckdb_pool
from assets.dbt_marts import DBT_ASSETS, DBT_EVENT_ASSETS
from assets.event_agents import EVENT_AGENT_ASSETS, EVENT_AGENT_CHECKS
from assets.event_analyses import EVENT_ANALYSIS_ASSETS
from assets.event_data import EVENT_DATA_ASSETS, EVENT_DATA_CHECKS
from assets.event_scoring import EVENT_SCORING_ASSETS, EVENT_SCORING_CHECKS
from assets.event_tasks import EVENT_TASK_ASSETS, EVENT_TASK_CHECKS
from assets.macro_analyses import MACRO_ANALYSIS_ASSETS, MACRO_ANALYSIS_CHECKS
from assets.macro_checks import MACRO_CHECKS
from assets.macro_nowcasts import MACRO_NOWCAST_ASSETS, MACRO_NOWCAST_CHECKS, nowcast_windows
from assets.macro_releases import (
    MACRO_RELEASE_ASSETS,
    MACRO_RELEASE_CHECKS,
    announcement_returns,
    release_calendar,
    releases,
)
from assets.macro_scoring import MACRO_SCORING_ASSETS, MACRO_SCORING_CHECKS
from assets.participation import PARTICIPATION_ASSETS
from assets.reports import build_report_assets
from leaf_live.core.settings import Settings, SettingsError, get_settings
from leaf_live.process import prepare_process
from resources import default_resources
from resources.dbt import dbt_resource
from sensors import living_service

# the code location's entry point: the no-network switches and the log redaction, before Dagster builds
# an instance (importing leaf_live itself changes nothing)
prepare_process()

_TRACK_ASSETS = [
    *MACRO_RELEASE_ASSETS,
    *MACRO_NOWCAST_ASSETS,
    *MACRO_SCORING_ASSETS,
    *MACRO_ANALYSIS_ASSETS,
    *DBT_ASSETS,
]
_EVENT_TRACK_ASSETS = [
    *EVENT_DATA_ASSETS,
    *EVENT_TASK_ASSETS,
    *EVENT_SCORING_ASSETS,
    *DBT_EVENT_ASSETS,  # event_board, after event_rankings (in the event jobs, not the main job)
    *EVENT_AGENT_ASSETS,
    *EVENT_ANALYSIS_ASSETS,
]
# The report figures and the site follow every asset (both tracks) that writes a table they read
# (assets/reports.py).
REPORT_ASSETS = build_report_assets([*_TRACK_ASSETS, *_EVENT_TRACK_ASSETS])
# in_duckdb_pool: every asset and check that opens the DuckDB file (db or dbt resource) is in the pool of 1.
MACRO_ASSETS = in_duckdb_pool([*_TRACK_ASSETS, *REPORT_ASSETS])
EVENT_ASSETS = in_duckdb_pool(_EVENT_TRACK_ASSETS)
EVENT_CHECKS = in_duckdb_pool(
    [*EVENT_DATA_CHECKS, *EVENT_TASK_CHECKS, *EVENT_SCORING_CHECKS, *EVENT_AGENT_CHECKS]
)
ALL_ASSETS = [*MACRO_ASSETS, *EVENT_ASSETS, *in_duckdb_pool(PARTICIPATION_ASSETS)]
# Every check is blocking: a failure stops what is downstream of its asset in the same run.
ALL_CHECKS = [
    *in_duckdb_pool(
        [
            *MACRO_RELEASE_CHECKS,
            *MACRO_NOWCAST_CHECKS,
            *MACRO_SCORING_CHECKS,
            *MACRO_ANALYSIS_CHECKS,
            *MACRO_CHECKS,
        ]
    ),
    *EVENT_CHECKS,
]
# Assets the main job materializes: the macro track from recorded or public data, then the dbt marts, the
# report figures and the site (LLM calls run on their own hourly schedule). The event track's assets have
# daily and per-question partitions, which one run cannot mix with release months: `leaf-live run` executes
# its three jobs (sensors/event.py) first, so the figures and the site read both tracks' tables.
MAIN_ASSETS = [
    a for a in MACRO_ASSETS if "llm_nowcasts" not in {k.to_user_string() for k in a.keys}
]  # multi-assets have several keys

MAIN_JOB = "leaf_live_main"
main_job = define_asset_job(
    MAIN_JOB,
    selection=AssetSelection.assets(*MAIN_ASSETS),
    description="Materialize the benchmark graph from the configured sources (see `leaf-live run`).",
)

# The monthly release stage for a span of release months: one run per span (single-run backfill policy), the
# run a backfill of these assets launches. Its checks run beside the downstream steps, so a multi-worker
# executor has several DuckDB steps ready at once (the pool serialises them).
release_months_job = define_asset_job(
    "macro_release_months",
    selection=AssetSelection.assets(release_calendar, releases, announcement_returns, nowcast_windows),
    description=(
        "Release calendar, first releases, announcement-window returns and nowcast windows for a span "
        "of release months (tags dagster/asset_partition_range_start/end), with their checks. Needs "
        "indicator_catalog materialized (the main job does; the guardrail check reads it)."
    ),
)


def celery_executor_config(path: str | Path) -> dict[str, Any]:
    """The ``execution: config:`` block of a dagster-celery YAML (the file ``dagster-celery worker start -y``
    reads), so the run coordinator and the workers use one broker, backend and Celery settings.
    Raises :class:`SettingsError` naming ``LEAF_LIVE_CELERY_CONFIG`` for a missing or malformed file."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"LEAF_LIVE_CELERY_CONFIG={p}: cannot read the Celery config: {exc}") from None
    config = (doc.get("execution") or {}).get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise SettingsError(f"LEAF_LIVE_CELERY_CONFIG={p}: expected an `execution: config:` mapping")
    return config


def run_executor(settings: Settings) -> ExecutorDefinition:
    """The executor of every job in this code location: in-process (embedded profile) or Celery with the
    broker/backend/Celery settings of ``settings.celery_config`` (production profile)."""
    if settings.executor == "celery":
        from dagster_celery import celery_executor

        return celery_executor.configured(celery_executor_config(settings.celery_config), name="celery")
    return in_process_executor


def build_definitions(resources: dict | None = None, settings: Settings | None = None) -> Definitions:
    """The code location's ``Definitions`` bound to ``resources`` (default: from the environment,
    :func:`resources.default_resources`), plus the dbt CLI resource unless ``resources`` names one, with the
    executor of ``settings.executor`` (default: ``LEAF_LIVE_EXECUTOR``, :func:`run_executor`)."""
    settings = settings or get_settings()
    resources = dict(resources if resources is not None else default_resources(settings=settings))
    resources.setdefault("dbt", dbt_resource())
    service = living_service(settings)  # sensors and schedules: STOPPED unless LEAF_LIVE_SCHEDULES=on
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[main_job, release_months_job, *service.jobs],
        schedules=service.schedules,
        sensors=service.sensors,
        resources=resources,
        executor=run_executor(settings),
    )


defs = build_definitions()
