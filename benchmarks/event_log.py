"""Recording a main run's Dagster events in the project's SQLite ``dagster_home``: Dagster's defaults against
the project's setup, on the same run.

A main run (``leaf-live run``) materializes about 1,200 release-month partitions (each partitioned asset once
per release month, one materialization event each, with its row count). The benchmark runs one job of
``--assets`` monthly-partitioned assets that do nothing but report a row count per month, as one single-run
backfill of ``--months`` months (default 6 x 197 = 1,182 materializations), three times, each in a fresh
instance directory (under ``--dir``, default ``build/`` on the project's disk: fsync cost is part of what
differs):

1. ``default``: the project's ``dagster.yaml`` as Dagster opens it (``SqliteEventLogStorage``), planned events
per
   partition, events stored one by one;
2. ``pooled``: the same directory opened with :func:`resources.event_log.pooled_instance`
   (:class:`~resources.event_log.PooledSqliteEventLogStorage`: one pooled engine per shard,
   ``synchronous=NORMAL``), planned events per partition range
   (``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``), events one by one;
3. ``project``: as 2 plus ``DAGSTER_EVENT_BATCH_SIZE`` (a step's materializations written in one transaction):
   what ``leaf-live run`` uses.

Prints wall and CPU seconds of each run, events stored, ratios against ``default``, and checks that every run
stored the same materializations (asset, partition, row count).

Run: ``.venv/bin/python benchmarks/event_log.py [--assets 6] [--months 197] [--dir PATH]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPS = {  # name: (pooled event log, env); every instance directory gets the project's dagster.yaml
    "default": (
        False,
        {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "", "DAGSTER_EVENT_BATCH_SIZE": "0"},
    ),
    "pooled": (
        True,
        {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "1", "DAGSTER_EVENT_BATCH_SIZE": "0"},
    ),
    "project": (
        True,
        {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "1", "DAGSTER_EVENT_BATCH_SIZE": "1000"},
    ),
}


def build_job(n_assets: int, months: int):
    from dagster import (
        BackfillPolicy,
        Definitions,
        MaterializeResult,
        MonthlyPartitionsDefinition,
        asset,
        define_asset_job,
    )

    parts = MonthlyPartitionsDefinition(start_date="2010-01", fmt="%Y-%m")
    keys = parts.get_partition_keys()[:months]

    def make(i: int):
        @asset(
            name=f"bench_{i}",
            partitions_def=parts,
            backfill_policy=BackfillPolicy.single_run(),
            deps=[f"bench_{i - 1}"] if i else [],
        )
        def _a(context):
            for (
                k
            ) in context.partition_keys:  # per-partition row counts, as assets.common.record_partition_rows
                context.add_asset_metadata({"rows": int(k[:4]) + int(k[5:])}, partition_key=k)
            return MaterializeResult()

        return _a

    job = define_asset_job("bench", selection=[f"bench_{i}" for i in range(n_assets)])
    defs = Definitions(assets=[make(i) for i in range(n_assets)], jobs=[job])
    return defs.resolve_job_def("bench"), keys


def run(home: Path, setup: str, n_assets: int, months: int) -> tuple[float, float, list]:
    from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterInstance

    from resources.event_log import pooled_instance

    pooled, env = SETUPS[setup]
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text((ROOT / "dagster_home" / "dagster.yaml").read_text())
    for k, v in env.items():
        if v:
            os.environ[k] = v
        else:
            os.environ.pop(k, None)
    instance = pooled_instance(home) if pooled else DagsterInstance.from_config(str(home))
    job, keys = build_job(n_assets, months)
    t0, c0 = time.perf_counter(), time.process_time()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = job.execute_in_process(
        instance=instance,
        run_config=quiet,
        tags={"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]},
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert result.success
    stored = []
    for i in range(n_assets):
        recs = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(f"bench_{i}")), limit=months + 10
        ).records
        stored += [(i, r.partition_key, r.asset_materialization.metadata["rows"].value) for r in recs]
    events = len(instance.all_logs(result.run_id))
    planned = instance.get_records_for_run(
        result.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED, limit=100000
    ).records
    instance.dispose()
    print(
        f"{setup:<8} {type(instance.event_log_storage).__name__:<28} {wall:7.1f} s wall {cpu:7.1f} s CPU  "
        f"{events} events ({len(planned)} planned, {len(stored)} materializations)",
        flush=True,
    )
    return wall, cpu, sorted(stored)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--assets", type=int, default=6)
    ap.add_argument("--months", type=int, default=197)
    ap.add_argument("--dir", default=None, help="parent folder of the instance directories (default build/)")
    args = ap.parse_args()
    where = Path(args.dir) if args.dir else ROOT / "build"
    where.mkdir(parents=True, exist_ok=True)
    parent = Path(tempfile.mkdtemp(prefix="leaf_live_eventlog_", dir=where))
    try:
        out = {s: run(parent / s, s, args.assets, args.months) for s in SETUPS}
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    ref = out["default"]
    for s, (w, c, stored) in out.items():
        if stored != ref[2] or len(stored) != args.assets * args.months:
            raise SystemExit(f"{s}: stored materializations differ from default's")
        if s != "default":
            print(f"default/{s}: {ref[0] / w:.1f}x wall, {ref[1] / c:.1f}x CPU")
    print(f"every setup stored the same {len(ref[2])} materializations (asset, month, rows)")


if __name__ == "__main__":
    main()
