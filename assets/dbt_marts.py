"""dbt marts: the dbt project (``dbt_project/``: staging views and the leaderboard marts over the DuckDB file)
as Dagster assets through dagster-dbt, downstream of the assets that write the tables its sources name.

Two assets on the one project and manifest, split by the dbt tag ``event`` (:data:`EVENT_TAG`):
``dbt_marts`` (every model but the event track's: the macro staging views, ``leaderboard``, ``macro_board``)
runs in the macro main job; ``dbt_event_marts`` (the models tagged ``event``: ``event_board``, built from
``event_rankings`` and ``leaf_scores``) runs in the event jobs right after ``event_rankings``. One asset would
put the event assets upstream of the macro marts, and the main job runs before no event job.

A dbt source ``leaf_live.<table>`` maps to every asset whose metadata says it writes ``<table>``
(:func:`assets.common.table_metadata`): ``releases`` -> the ``releases`` asset, ``nowcasts`` -> each of its
producers, ``market_beta_fits`` -> ``market_betas``. ``dbt build`` (views, then the dbt tests, which
dagster-dbt reports as asset checks) runs against the file of the ``db`` resource, passed to the profile
as the ``leaf_live_db`` var. The views live in that file, so analysts query them read-only like any table.
"""

import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dagster import AssetDep, AssetExecutionContext, AssetKey, AssetSpec
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, dbt_assets

from assets.common import DUCKDB_POOL, table_writers
from assets.event_scoring import EVENT_SCORING_ASSETS
from assets.macro_nowcasts import MACRO_NOWCAST_ASSETS
from assets.macro_releases import MACRO_RELEASE_ASSETS
from assets.macro_scoring import MACRO_SCORING_ASSETS
from resources import LeafLiveDB
from resources.dbt import DBT_PROJECT, LeafLiveDbt, prepare_dbt_project

GROUP = "dbt_marts"
EVENT_TAG = "event"  # dbt tag of the event track's models and tests (dbt_project.yml)


class LeafLiveDbtTranslator(DagsterDbtTranslator):
    """dagster-dbt's translator with dbt sources resolved to the assets that write the source's table, and
    every dbt model in group :data:`GROUP`. A source whose table no asset writes is an error (the graph
    would otherwise show a stub the job never materializes)."""

    def __init__(self, writers: Mapping[str, Sequence[AssetKey]]):
        super().__init__(settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True))
        self._writers = {t: list(keys) for t, keys in writers.items()}

    def _source_writers(self, props: Mapping[str, Any]) -> list[AssetKey]:
        table = props["name"]
        if table not in self._writers:
            raise ValueError(
                f"dbt source {props['source_name']}.{table}: no asset writes table {table!r}; "
                f"tables with writers: {sorted(self._writers)}"
            )
        return self._writers[table]

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project) -> AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        props = self.get_resource_props(manifest, unique_id)
        if props["resource_type"] == "source":
            return spec.replace_attributes(key=self._source_writers(props)[0])
        parents = props.get("depends_on", {}).get("nodes", [])
        sources = [p for p in parents if p.startswith("source.")]
        if not sources:
            return spec
        # a source dep stands for every writer of its table, not only the first
        writers = [self._source_writers(self.get_resource_props(manifest, p)) for p in sources]
        deps = [d for d in spec.deps if d.asset_key not in {w[0] for w in writers}]
        for key in dict.fromkeys(k for w in writers for k in w):
            deps.append(AssetDep(key))
        return spec.replace_attributes(deps=deps)

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> "str | None":
        return GROUP


TRANSLATOR = LeafLiveDbtTranslator(
    table_writers(
        [*MACRO_RELEASE_ASSETS, *MACRO_NOWCAST_ASSETS, *MACRO_SCORING_ASSETS, *EVENT_SCORING_ASSETS]
    )
)


def _db_file(db: LeafLiveDB) -> str:
    if db.database == ":memory:":
        raise ValueError("dbt_marts: the db resource is an in-memory database; dbt needs the DuckDB file")
    return str(Path(db.database).resolve())


def _build(context: AssetExecutionContext, dbt: LeafLiveDbt, db: LeafLiveDB) -> Iterator:
    """``dbt build`` of the asset's selected models and their tests on the ``db`` resource's file
    (dagster-dbt adds the asset's ``--select`` / ``--exclude``)."""
    # DuckDB has one writer: the in-process executor runs this step alone, after the writing steps closed
    # their connections, and dbt's own process writes the views.
    with tempfile.TemporaryDirectory(prefix="leaf_live_dbt_") as target:
        args = ["build", "--vars", json.dumps({"leaf_live_db": _db_file(db)})]
        yield from dbt.cli(args, context=context, target_path=Path(target)).stream()


@dbt_assets(
    pool=DUCKDB_POOL,
    manifest=prepare_dbt_project(),
    project=DBT_PROJECT,
    dagster_dbt_translator=TRANSLATOR,
    name="dbt_marts",
    exclude=f"tag:{EVENT_TAG}",
)
def dbt_marts(context: AssetExecutionContext, dbt: LeafLiveDbt, db: LeafLiveDB) -> Iterator:
    """``dbt build`` of the macro track's models (views, marts) and their tests: every model not tagged
    ``event``."""
    yield from _build(context, dbt, db)


@dbt_assets(
    pool=DUCKDB_POOL,
    manifest=prepare_dbt_project(),
    project=DBT_PROJECT,
    dagster_dbt_translator=TRANSLATOR,
    name="dbt_event_marts",
    select=f"tag:{EVENT_TAG}",
)
def dbt_event_marts(context: AssetExecutionContext, dbt: LeafLiveDbt, db: LeafLiveDB) -> Iterator:
    """``dbt build`` of the event track's board (``event_board``, tag ``event``) and its tests, after
    ``event_rankings``."""
    yield from _build(context, dbt, db)


DBT_ASSETS = [dbt_marts]  # the macro main job's
DBT_EVENT_ASSETS = [dbt_event_marts]  # the event jobs' (sensors/event.py, sensors/scores.py)
