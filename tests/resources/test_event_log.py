"""The project's SQLite event log (resources/event_log.py, the instance leaf-live run records in): a
single-run backfill's per-month materializations are stored as Dagster stores them (same records and files,
readable by Dagster's own class and queries), in batches of one transaction per shard, with
synchronous=NORMAL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    AssetRecordsFilter,
    BackfillPolicy,
    DagsterInstance,
    Definitions,
    MaterializeResult,
    MonthlyPartitionsDefinition,
    asset,
    define_asset_job,
)
from dagster_shared.check import CheckError

from resources.event_log import PooledSqliteEventLogStorage, pooled_instance

ROOT = Path(__file__).resolve().parents[2]
MONTHS = MonthlyPartitionsDefinition(start_date="2010-01", fmt="%Y-%m")


@asset(partitions_def=MONTHS, backfill_policy=BackfillPolicy.single_run())
def monthly(context):
    for k in context.partition_keys:
        context.add_asset_metadata({"rows": int(k[5:])}, partition_key=k)
    return MaterializeResult()


@pytest.fixture
def instance(tmp_path):
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", tmp_path / "dagster.yaml")
    inst = pooled_instance(tmp_path)
    yield inst
    inst.dispose()


def test_pooled_instance_keeps_the_default_files_and_other_storages(tmp_path, instance):
    # same directories as Dagster's default instance of that dagster.yaml: the UI reads what a run writes
    plain = DagsterInstance.from_config(str(tmp_path))
    try:
        assert type(plain.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert instance.event_log_storage._base_dir == plain.event_log_storage._base_dir
        assert instance.run_storage._conn_string == plain.run_storage._conn_string
    finally:
        plain.dispose()
    # an instance with another event log (here: in memory, as a stand-in for PostgreSQL) is left as it is
    other = tmp_path / "other"
    other.mkdir()
    (other / "dagster.yaml").write_text(
        "event_log_storage:\n  module: dagster._core.storage.event_log\n  class: InMemoryEventLogStorage\n"
    )
    inst = pooled_instance(other)
    try:
        assert type(inst.event_log_storage).__name__ == "InMemoryEventLogStorage"
    finally:
        inst.dispose()


def test_backfill_materializations_are_stored_in_batches(instance, monkeypatch):
    import os

    from leaf_live.process import prepare_process

    prepare_process()  # the batch size the CLI runs with

    assert int(os.environ["DAGSTER_EVENT_BATCH_SIZE"]) >= 197  # a whole release-month span in one batch
    storage = instance.event_log_storage
    assert isinstance(storage, PooledSqliteEventLogStorage)
    batches = []
    real = PooledSqliteEventLogStorage.store_event_batch

    def spy(self, events):
        batches.append(len(events))
        return real(self, events)

    monkeypatch.setattr(PooledSqliteEventLogStorage, "store_event_batch", spy)
    job = Definitions(assets=[monthly], jobs=[define_asset_job("j", selection=[monthly])]).resolve_job_def(
        "j"
    )
    res = job.execute_in_process(
        instance=instance,
        tags={
            "dagster/asset_partition_range_start": "2010-01",
            "dagster/asset_partition_range_end": "2010-12",
        },
    )
    assert res.success
    assert 12 in batches  # the step's 12 materializations arrived as one batch
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("monthly")), limit=50
    ).records
    got = sorted((r.partition_key, r.asset_materialization.metadata["rows"].value) for r in recs)
    assert got == [(f"2010-{m:02d}", m) for m in range(1, 13)]
    # Dagster's per-partition status reads the same index
    assert instance.get_materialized_partitions(AssetKey("monthly")) == {
        f"2010-{m:02d}" for m in range(1, 13)
    }
    with storage.index_connection() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL


def test_a_failing_batch_stores_nothing(instance):
    from dagster import AssetMaterialization
    from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
    from dagster._core.events.log import EventLogEntry

    storage = instance.event_log_storage

    def entry(k: str) -> EventLogEntry:
        ev = DagsterEvent(
            DagsterEventType.ASSET_MATERIALIZATION.value,
            "j",
            event_specific_data=StepMaterializationData(AssetMaterialization("x", partition=k)),
        )
        return EventLogEntry(
            error_info=None, level=20, user_message="", run_id="r1", timestamp=1.0e9, dagster_event=ev
        )

    with pytest.raises(CheckError):
        storage.store_event_batch([entry("a"), entry("b"), "not an event"])
    assert storage.get_logs_for_run("r1") == []
    assert instance.get_materialized_partitions(AssetKey("x")) == set()
    storage.store_event_batch([entry("a"), entry("b")])
    assert len(storage.get_logs_for_run("r1")) == 2
    assert instance.get_materialized_partitions(AssetKey("x")) == {"a", "b"}
