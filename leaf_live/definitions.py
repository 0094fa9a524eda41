"""Dagster ``Definitions`` for the leaf_live code location (the only dagster import in leaf_live/).

Assembled from ``assets/``, ``resources/`` and ``sensors/``. Resources come from the environment:
``LEAF_LIVE_DB``, ``LEAF_LIVE_SNAPSHOT``, ``LEAF_LIVE_TRANSPORT`` (see ``leaf_live.core.settings``);
``leaf-live run`` builds the same definitions around the resources its flags name
(:func:`build_definitions`) and executes :data:`MAIN_JOB` from them.
"""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

import leaf_live  # noqa: F401  (sets the no-network switches before dagster/litellm start)
from assets.dbt_marts import DBT_ASSETS
from assets.macro_analyses import MACRO_ANALYSIS_ASSETS, MACRO_ANALYSIS_CHECKS
from assets.macro_checks import MACRO_CHECKS
from assets.macro_nowcasts import MACRO_NOWCAST_ASSETS, MACRO_NOWCAST_CHECKS
from assets.macro_releases import MACRO_RELEASE_ASSETS, MACRO_RELEASE_CHECKS
from assets.macro_scoring import MACRO_SCORING_ASSETS, MACRO_SCORING_CHECKS
from resources import default_resources
from resources.dbt import dbt_resource
from sensors import JOBS, SCHEDULES

ALL_ASSETS = [*MACRO_RELEASE_ASSETS, *MACRO_NOWCAST_ASSETS, *MACRO_SCORING_ASSETS, *MACRO_ANALYSIS_ASSETS, *DBT_ASSETS]
# Every check is blocking: a failure stops what is downstream of its asset in the same run.
ALL_CHECKS = [*MACRO_RELEASE_CHECKS, *MACRO_NOWCAST_CHECKS, *MACRO_SCORING_CHECKS, *MACRO_ANALYSIS_CHECKS, *MACRO_CHECKS]
# Assets the main job materializes: everything that runs from recorded or public data, ending with the dbt
# marts (LLM calls run on their own hourly schedule).
MAIN_ASSETS = [a for a in ALL_ASSETS if "llm_nowcasts" not in {k.to_user_string() for k in a.keys}]  # multi-assets have several keys

MAIN_JOB = "leaf_live_main"
main_job = define_asset_job(
    MAIN_JOB,
    selection=AssetSelection.assets(*MAIN_ASSETS),
    description="Materialize the benchmark graph from the configured sources (see `leaf-live run`).",
)


def build_definitions(resources: dict | None = None) -> Definitions:
    """The code location's ``Definitions`` bound to ``resources`` (default: from the environment,
    :func:`resources.default_resources`), plus the dbt CLI resource unless ``resources`` names one."""
    resources = dict(resources if resources is not None else default_resources())
    resources.setdefault("dbt", dbt_resource())
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[main_job, *JOBS],
        schedules=SCHEDULES,
        resources=resources,
        # One process writes the DuckDB file at a time.
        executor=in_process_executor,
    )


defs = build_definitions()
