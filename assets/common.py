"""Shared wiring for assets: partitions definitions and writing a run's partitions through the one
partition-replace helper (``leaf_live.core.storage.replace_partition``)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import polars as pl
from dagster import AssetExecutionContext, BackfillPolicy, MonthlyPartitionsDefinition

from leaf_live.core import storage

# backfill_policy is marked beta in Dagster 1.13; the single-run policy is what lets one run backfill
# 197 months without 197 process start-ups.
warnings.filterwarnings("ignore", message=r".*(backfill_policy|allow_nonexistent_upstream_partitions).*beta.*")

# Release months, America/New_York calendar, 2010-01 onward; the current month is included
# (end_offset=1) because releases land every month before it closes.
RELEASE_MONTHS = MonthlyPartitionsDefinition(start_date="2010-01", fmt="%Y-%m", end_offset=1)
SINGLE_RUN = BackfillPolicy.single_run()


def run_partition_keys(context: AssetExecutionContext) -> list[str]:
    """Partition keys this run materializes (one key, or a range under the single-run backfill policy)."""
    if not context.has_partition_key and not context.has_partition_key_range:
        raise ValueError(f"asset {context.asset_key.to_user_string()} needs a partition or partition range")
    return list(context.partition_keys)


def write_partitions(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    keys: Sequence[str],
    extra_where: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Replace each partition in ``keys`` with its rows of ``frame`` (empty slices delete stale rows).

    Rows of ``frame`` outside ``keys`` raise :class:`leaf_live.core.storage.StorageError` before any write.
    Returns rows written per key.
    """
    keyset = set(keys)
    stray = frame.filter(~pl.col("partition_key").is_in(list(keyset))) if frame.height else frame
    if stray.height:
        raise storage.StorageError(
            f"table {table}: row with partition_key={stray.get_column('partition_key')[0]!r} outside this run's "
            f"partitions {min(keyset)}..{max(keyset)}"
        )
    by_key = {k[0]: g for k, g in frame.group_by("partition_key")} if frame.height else {}
    written = {}
    for k in keys:
        part = by_key.get(k, frame.clear())
        written[k] = storage.replace_partition(con, table, part, {"partition_key": k, **(extra_where or {})})
    return written


def replace_producer(
    con: duckdb.DuckDBPyConnection, table: str, producer: str, frame: pl.DataFrame
) -> dict[str, int]:
    """Replace every slice ``(producer, partition_key)`` of ``table`` that ``frame`` holds or the table
    held before (a slice the producer no longer emits is emptied). For unpartitioned assets that own
    several partition keys of a shared table (e.g. recorded runs, one key per file)."""
    old = {r[0] for r in con.execute(f'SELECT DISTINCT partition_key FROM "{table}" WHERE producer = ?', [producer]).fetchall()}
    new = set(frame["partition_key"].unique().to_list()) if frame.height else set()
    by_key = {k[0]: g for k, g in frame.group_by("partition_key")} if frame.height else {}
    return {
        k: storage.replace_partition(con, table, by_key.get(k, frame.clear()), {"producer": producer, "partition_key": k})
        for k in sorted(old | new)
    }
