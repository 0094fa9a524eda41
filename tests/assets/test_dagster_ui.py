"""What the Dagster UI shows: the CLI's run recorded in the instance under the main job's name, per-partition
row counts on each month's materialization, column schemas from the one schema registry on every asset
page, release months declared in America/New_York."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus, RunsFilter

from assets.common import RELEASE_MONTHS, asset_tables, table_writers
from leaf_live.core import storage
from leaf_live.definitions import ALL_ASSETS, MAIN_JOB, defs
from leaf_live.event import schemas as event_schemas
from leaf_live.macro import schemas as macro_schemas


@pytest.fixture(scope="module")
def instance(main_run):
    inst = DagsterInstance.from_config(str(main_run["dagster_home"]))
    yield inst
    inst.dispose()


@pytest.fixture(scope="module")
def run(instance):
    runs = instance.get_runs()
    # the event track's runs of its five jobs (the questions, one per day range, the recorded SEER case and
    # bundles, the forecasts and scores, the analyses), then one run of the main job, not
    # __ephemeral_asset_job__ (its figures and site read both tracks)
    names = [r.job_name for r in reversed(runs)]
    assert names[-1] == MAIN_JOB and names.count(MAIN_JOB) == 1
    assert (
        names[:-1]
        == [
            "leaf_live_event_questions",
            *["leaf_live_event_days"] * (len(names) - 5),
            "leaf_live_event_recorded",
            "leaf_live_event_scores",
            "leaf_live_event_analyses",
        ]
        and len(names) >= 6
    )
    return next(r for r in runs if r.job_name == MAIN_JOB)


def test_the_cli_run_is_recorded_under_the_main_job(run, instance):
    assert run.status == DagsterRunStatus.SUCCESS
    assert run.tags["dagster/asset_partition_range_start"] == "2010-01"
    assert run.tags["dagster/asset_partition_range_end"] == "2026-05"
    assert instance.get_runs(RunsFilter(job_name=MAIN_JOB, statuses=[DagsterRunStatus.SUCCESS])) == [run]
    # every asset of the main job has a materialization from this run, the dbt marts included
    job = defs.resolve_job_def(MAIN_JOB)
    for key in job.asset_layer.executable_asset_keys:
        rec = instance.get_latest_materialization_event(key)
        assert rec is not None and rec.run_id == run.run_id, key.to_user_string()


@pytest.mark.parametrize(
    "asset, table",
    [
        ("releases", "releases"),
        ("surprise_events", "surprise_events"),
        ("nowcast_windows", "nowcast_windows"),
    ],
)
def test_each_month_carries_its_own_row_count(instance, run, main_run, asset, table):
    con = storage.connect_read_only(main_run["db"])
    try:
        counts = dict(con.execute(f"SELECT partition_key, count(*) FROM {table} GROUP BY 1").fetchall())
    finally:
        con.close()
    months = ["2010-01", "2020-06", "2025-11", "2026-05"]
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=months), limit=10
    ).records
    got = {r.partition_key: r.asset_materialization.metadata for r in recs if r.run_id == run.run_id}
    assert sorted(got) == months
    for month, meta in got.items():
        assert meta["dagster/row_count"].value == meta["rows"].value == counts.get(month, 0), month
    assert len({m["rows"].value for m in got.values()}) > 1  # months differ: not one run-wide total
    assert max(m["rows"].value for m in got.values()) < sum(counts.values())
    assert meta["partitions"].value == 197  # run-level facts stay, labelled as such


def _schema_rows(schema) -> list[tuple]:
    return [(c.name, c.type, c.constraints.nullable) for c in schema.columns]


# Assets that write files, not tables: the figures and the site (their pages show the figures and files
# instead).
FILE_ASSETS = {AssetKey("report_figures"), AssetKey("leaderboard_site")}


def test_every_asset_page_shows_its_column_schema(main_run):
    graph = defs.resolve_asset_graph()
    tableless = {
        k
        for k in graph.get_all_asset_keys()
        if "dbt" not in graph.get(k).kinds and not asset_tables(graph.get(k).metadata)
    }
    assert tableless == FILE_ASSETS  # every other asset owns a table and shows its schema
    con = storage.connect_read_only(main_run["db"])
    try:
        for key in graph.get_all_asset_keys() - FILE_ASSETS:
            node = graph.get(key)
            schema = node.metadata.get("dagster/column_schema")
            assert schema is not None, f"{key.to_user_string()} has no column schema"
            described = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                "ORDER BY ordinal_position",
                [key.path[-1] if "dbt" in node.kinds else asset_tables(node.metadata)[0]],
            ).fetchall()
            if "dbt" in node.kinds:
                # dbt models: the enforced contract's columns, the view's actual columns and types
                assert [(c.name, c.type.upper()) for c in schema.columns] == described, key
                continue
            table = storage.get_table(asset_tables(node.metadata)[0])
            assert _schema_rows(schema) == [(c.name, c.type, c.nullable) for c in table.columns], key
            assert [c.name for c in schema.columns] == [d[0] for d in described], key
            assert [c.description for c in schema.columns] == [c.doc for c in table.columns]
    finally:
        con.close()


def test_every_registered_table_has_its_writer_and_multi_table_assets_show_each_schema():
    writers = table_writers(ALL_ASSETS)
    macro_tables = {v.name for v in vars(macro_schemas).values() if isinstance(v, storage.Table)}
    assert len(macro_tables) >= 17 and macro_tables <= set(writers)
    event_tables = {v.name for v in vars(event_schemas).values() if isinstance(v, storage.Table)}
    assert len(event_tables) >= 20 and event_tables <= set(
        writers
    )  # the agents and analyses included (issue 11)
    assert {k.to_user_string() for k in writers["leaf_forecasts"]} == {"leaf_forecasts", "leaf_llm_forecasts"}
    assert {k.to_user_string() for k in writers["retrieved_events"]} == {
        "retrieved_events",
        "recorded_events",
        "question_retrieved_events",  # prediction-market questions as weekly retrieval targets (issue 18)
    }
    assert {k.to_user_string() for k in writers["nowcasts"]} == {
        "recorded_nowcasts",
        "comparator_nowcasts",
        "arima_nowcasts",
        "llm_nowcasts",
    }
    node = defs.resolve_asset_graph().get(AssetKey("market_betas"))
    assert asset_tables(node.metadata) == ["market_betas", "market_beta_fits"]
    fits = storage.get_table("market_beta_fits")
    assert _schema_rows(node.metadata["columns of market_beta_fits"]) == [
        (c.name, c.type, c.nullable) for c in fits.columns
    ]


def test_release_months_are_new_york_months_with_yyyy_mm_keys():
    assert RELEASE_MONTHS.timezone == "America/New_York"
    assert str(RELEASE_MONTHS).startswith("Monthly, starting 2010-01 America/New_York")
    keys = RELEASE_MONTHS.get_partition_keys(current_time=datetime(2026, 5, 31, 12, tzinfo=UTC))
    assert (
        keys[0] == "2010-01" and keys[-1] == "2026-05" and len(keys) == 197
    )  # end_offset=1: the open month too
    w = RELEASE_MONTHS.time_window_for_partition_key("2024-03")
    et = ZoneInfo("America/New_York")
    assert w.start == datetime(2024, 3, 1, tzinfo=et) and w.end == datetime(2024, 4, 1, tzinfo=et)
    assert w.start.astimezone(UTC) == datetime(2024, 3, 1, 5, tzinfo=UTC)  # EST, UTC-5
    # 30 Apr 2026 22:00 in New York is already May in UTC: the open release month is still April
    late_april = datetime(2026, 5, 1, 2, tzinfo=UTC)
    assert RELEASE_MONTHS.get_partition_keys(current_time=late_april)[-1] == "2026-04"
