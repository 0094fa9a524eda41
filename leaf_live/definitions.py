"""Dagster ``Definitions`` for the leaf_live code location (the only dagster import in leaf_live/).

Assembled from ``assets/``, ``resources/`` and ``sensors/``. Resources come from the environment:
``LEAF_LIVE_DB``, ``LEAF_LIVE_SNAPSHOT``, ``LEAF_LIVE_TRANSPORT`` (see ``leaf_live.settings``).
"""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job

import leaf_live  # noqa: F401  (sets the no-network switches before dagster/litellm start)
from assets.macro_releases import MACRO_RELEASE_ASSETS, MACRO_RELEASE_CHECKS
from resources import default_resources

ALL_ASSETS = [*MACRO_RELEASE_ASSETS]
ALL_CHECKS = [*MACRO_RELEASE_CHECKS]

# The main job: everything that runs from recorded or public data (no LLM calls).
main_job = define_asset_job(
    "leaf_live_main",
    selection=AssetSelection.assets(*ALL_ASSETS),
    description="Materialize the benchmark graph from the configured sources (see `leaf-live run`).",
)

defs = Definitions(
    assets=ALL_ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[main_job],
    resources=default_resources(),
)
