"""Shared wiring for assets: partitions definitions, the Dagster metadata an asset shows for the tables it
writes (column schemas from the one schema registry, ``leaf_live.core.storage``), writing a run's
partitions through the one partition-replace helper (``leaf_live.core.storage.replace_partition``), the
DuckDB concurrency pool every step that opens the database runs in (:func:`in_duckdb_pool`), and the
blocking SQL checks of both tracks (:func:`sql_check`, :func:`unique_key_check`)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb
import polars as pl
from dagster import (
    AssetCheckResult,
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    BackfillPolicy,
    DagsterInvariantViolationError,
    In,
    MetadataValue,
    MonthlyPartitionsDefinition,
    OpDefinition,
    Out,
    TableColumn,
    TableColumnConstraints,
    TableConstraints,
    TableSchema,
    asset_check,
)

from leaf_live.core import progress, storage
from resources import LeafLiveDB

# backfill_policy is marked beta in Dagster 1.13; the single-run policy is what lets one run backfill
# 197 months without 197 process start-ups.
warnings.filterwarnings(
    "ignore", message=r".*(backfill_policy|allow_nonexistent_upstream_partitions|execution_type).*beta.*"
)

# Release months, America/New_York calendar (release times are defined there), 2010-01 onward; the current
# month is included (end_offset=1) because releases land every month before it closes. Keys stay YYYY-MM.
RELEASE_MONTHS = MonthlyPartitionsDefinition(
    start_date="2010-01", fmt="%Y-%m", end_offset=1, timezone="America/New_York"
)
SINGLE_RUN = BackfillPolicy.single_run()

# DuckDB allows one process with the file open for writing (and no reader in another process meanwhile), so
# every step that opens it -- assets and asset checks that take the `db` resource, dbt on the same file --
# runs in this Dagster concurrency pool. Its limit is 1 (`concurrency: pools: default_limit: 1` in the
# instance's dagster.yaml); under the Celery executor the pool is what keeps two workers off the file at once.
DUCKDB_POOL = "duckdb"
DUCKDB_RESOURCE_KEYS = frozenset({"db", "dbt"})


def _op_in_pool(op: OpDefinition, pool: str) -> OpDefinition:
    # OpDefinition.with_replaced_properties keeps the pool but cannot set it; same copy, pool replaced.
    return OpDefinition.dagster_internal_init(
        name=op.name,
        ins={d.name: In.from_definition(d) for d in op.input_defs},
        outs={d.name: Out.from_definition(d) for d in op.output_defs},
        compute_fn=op.compute_fn,
        config_schema=op.config_schema,
        description=op.description,
        tags=op.tags,
        required_resource_keys=op.required_resource_keys,
        code_version=op._version,  # what with_replaced_properties passes (the public `version` is deprecated)
        retry_policy=op.retry_policy,
        version=None,
        pool=pool,
    )


def in_duckdb_pool(defs: Sequence[AssetsDefinition], pool: str = DUCKDB_POOL) -> list[AssetsDefinition]:
    """``defs`` with every asset / asset-check op that requires a DuckDB resource
    (:data:`DUCKDB_RESOURCE_KEYS`) assigned to the concurrency ``pool``; the others unchanged. Applied once,
    where Definitions are assembled (``leaf_live/definitions.py``), so an asset module never has to remember
    it.

    Raises ``ValueError`` for a DuckDB op already in another pool, or one backed by a graph (a graph's ops
    would each need the pool; none exists today).
    """
    out = []
    for ad in defs:
        if not (set(ad.required_resource_keys) & DUCKDB_RESOURCE_KEYS):
            out.append(ad)
            continue
        op = ad.node_def
        if not isinstance(op, OpDefinition):
            raise ValueError(f"{ad.node_def.name}: graph-backed DuckDB steps need the pool on each op")
        if op.pool not in (None, pool):
            raise ValueError(f"{op.name}: already in pool {op.pool!r}, but it opens DuckDB (pool {pool!r})")
        out.append(
            ad
            if op.pool == pool
            else ad.__class__(**{**ad.get_attributes_dict(), "node_def": _op_in_pool(op, pool)})
        )
    return out


# Metadata key listing the registered tables an asset writes (comma-separated): the dbt translator maps a
# dbt source to the assets that write its table (assets/dbt_marts.py).
TABLES_KEY = "leaf_live/tables"


def table_schema(name: str) -> TableSchema:
    """Dagster column schema of registered table ``name``: every column with its DuckDB type, meaning/unit and
    NOT NULL flag; the primary key and partition columns as table constraints. Raises
    :class:`leaf_live.core.storage.StorageError` for an unknown table."""
    t = storage.get_table(name)
    other = [f"grain: {t.grain}"]
    if t.primary_key:
        other.append(f"primary key ({', '.join(t.primary_key)})")
    if t.partition_by:
        other.append(f"replaced by slice ({', '.join(t.partition_by)})")
    return TableSchema(
        columns=[
            TableColumn(
                c.name, c.type, description=c.doc, constraints=TableColumnConstraints(nullable=c.nullable)
            )
            for c in t.columns
        ],
        constraints=TableConstraints(other=other),
    )


def table_metadata(table: str, *also: str) -> dict[str, Any]:
    """Definition metadata of an asset that writes registered ``table`` (and the tables in ``also``): the
    column schema the Dagster UI shows on the asset page (``dagster/column_schema``), the schemas of the
    other tables it writes, and :data:`TABLES_KEY`."""
    meta: dict[str, Any] = {"dagster/column_schema": table_schema(table)}
    for other in also:
        meta[f"columns of {other}"] = table_schema(other)
    meta[TABLES_KEY] = MetadataValue.text(", ".join((table, *also)))
    return meta


def asset_tables(metadata: Mapping[str, Any]) -> list[str]:
    """The tables an asset writes, read back from its :func:`table_metadata` (empty if it has none)."""
    value = metadata.get(TABLES_KEY)
    text = getattr(value, "value", value)
    return [t.strip() for t in text.split(",")] if text else []


def table_writers(assets: Sequence) -> dict[str, list[AssetKey]]:
    """Registered table -> keys of the assets (``AssetsDefinition`` list) that write it, from their specs'
    :func:`table_metadata`."""
    out: dict[str, list[AssetKey]] = {}
    for a in assets:
        for spec in a.specs:
            for table in asset_tables(spec.metadata):
                out.setdefault(table, []).append(spec.key)
    return out


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
    """Replace the partitions in ``keys`` with their rows of ``frame`` (empty slices delete stale rows), all
    in one transaction (``storage.replace_partition`` with the list of keys): a run's range is written whole
    or, on an error, not at all.

    Rows of ``frame`` outside ``keys`` raise :class:`leaf_live.core.storage.StorageError` before any write.
    Returns rows written per key. Inside a partitioned asset's run, each key's count is recorded on that
    partition's materialization (``dagster/row_count`` and ``rows``), so a single-run backfill shows every
    month's own count, not the run's total.
    """
    keys = list(dict.fromkeys(keys))
    keyset = set(keys)
    stray = frame.filter(~pl.col("partition_key").is_in(keys)) if frame.height else frame
    if stray.height:
        raise storage.StorageError(
            f"table {table}: row with partition_key={stray.get_column('partition_key')[0]!r} outside this"
            f" run's partitions {min(keyset)}..{max(keyset)}"
        )
    counts = dict(frame.group_by("partition_key").len().iter_rows()) if frame.height else {}
    storage.replace_partition(con, table, frame, {"partition_key": keys, **(extra_where or {})})
    written = {k: counts.get(k, 0) for k in keys}
    record_partition_rows(written)
    return written


def _current_context() -> AssetExecutionContext | None:
    try:
        return AssetExecutionContext.get()
    except DagsterInvariantViolationError:
        return None  # outside a Dagster run (tests, scripts)


@contextmanager
def step_progress(
    what: str, total: int, unit: str = "items", *, log_every_s: float = 15.0
) -> Iterator[progress.Task]:
    """A progress task of the current step (:func:`leaf_live.core.progress.task`: ``leaf-live run`` shows it
    as a bar with counts and ETA) whose counts also go to the step's Dagster log: at the start, at least every
    ``log_every_s`` seconds while it advances, and at the end. Yields the task; pass ``task.advance`` to the
    science as its ``progress`` callback."""
    context = _current_context()
    name = what
    last = [time.monotonic()]

    def log(task: progress.Task, event: str) -> None:
        if task is not current[0] or context is None:
            return
        now = time.monotonic()
        if event == "advance" and (now - last[0] < log_every_s or task.done >= task.total):
            return
        last[0] = now
        eta = task.eta()
        tail = f", {task.elapsed:.0f} s" + (
            f", ETA {eta:.0f} s" if event == "advance" and eta is not None else ""
        )
        context.log.info(f"{name}: {task.done}/{task.total} {unit}{tail if event != 'start' else ''}")

    current: list[progress.Task | None] = [None]
    unsubscribe = progress.subscribe(log)
    try:
        with progress.task(name, total, unit) as t:
            current[0] = t
            log(t, "start")
            yield t
    finally:
        unsubscribe()


def record_partition_rows(written: Mapping[str, int]) -> None:
    """Record rows written per partition key on the current asset's materialization events (partition-scoped
    metadata overrides run-wide metadata of the same name). No-op outside a partitioned asset's run."""
    try:
        context = AssetExecutionContext.get()
    except DagsterInvariantViolationError:
        return  # called outside a Dagster run (tests, scripts)
    if not (context.has_partition_key or context.has_partition_key_range):
        return
    in_run = set(context.partition_keys)
    for key, n in written.items():
        if key in in_run:
            context.add_asset_metadata({"dagster/row_count": n, "rows": n}, partition_key=key)


def replace_producer(
    con: duckdb.DuckDBPyConnection, table: str, producer: str, frame: pl.DataFrame
) -> dict[str, int]:
    """Replace every slice ``(producer, partition_key)`` of ``table`` that ``frame`` holds or the table
    held before (a slice the producer no longer emits is emptied), in one transaction. For unpartitioned
    assets that own several partition keys of a shared table (e.g. recorded runs, one key per file; the event
    baselines, one key per model)."""
    old = {
        r[0]
        for r in con.execute(
            f'SELECT DISTINCT partition_key FROM "{table}" WHERE producer = ?', [producer]
        ).fetchall()
    }
    new = set(frame["partition_key"].unique().to_list()) if frame.height else set()
    return write_partitions(con, table, frame, sorted(old | new), extra_where={"producer": producer})


# ---------------------------------------------------------------------------------------------
# blocking SQL checks (both tracks)
# ---------------------------------------------------------------------------------------------

SAMPLE = 3  # offending keys shown in a check's metadata


def sql_check(
    asset, name: str, description: str, violations_sql: str, params: Sequence = (), **extra: str
) -> AssetChecksDefinition:
    """Blocking check ``name`` on ``asset``: passes when ``violations_sql`` (one row per violation, offending
    key columns first; ``params`` bound to its ``?``) returns no row. Metadata: the violation count, the first
    offending rows and ``extra``."""

    @asset_check(asset=asset, name=name, blocking=True, description=description)
    def _check(db: LeafLiveDB) -> AssetCheckResult:
        with db.get_connection() as con:
            rows = con.execute(violations_sql, list(params)).fetchall()
        return AssetCheckResult(
            passed=not rows,
            metadata={
                "violations": len(rows),
                "first": MetadataValue.text(str(rows[:SAMPLE])),
                **{k: MetadataValue.text(v) for k, v in extra.items()},
            },
        )

    return _check


def unique_key_check(
    asset,
    table: str,
    key: Sequence[str],
    *,
    producer: str | None = None,
    where: str | None = None,
    name: str | None = None,
) -> AssetChecksDefinition:
    """At most one row of ``table`` per ``key``, restricted to ``producer``'s slice of a shared table and to
    the SQL condition ``where``; named ``<producer or table>_unique_key`` unless ``name`` is given."""
    cols = ", ".join(f'"{c}"' for c in key)
    conds = (["producer = ?"] if producer else []) + ([f"({where})"] if where else [])
    scope = (f" (rows of {producer})" if producer else "") + (f" where {where}" if where else "")
    return sql_check(
        asset,
        name or f"{producer or table}_unique_key",
        f"One row per ({', '.join(key)}) in {table}{scope}.",
        f'SELECT {cols}, count(*) AS n FROM "{table}" '
        + (f"WHERE {' AND '.join(conds)} " if conds else "")
        + "GROUP BY ALL HAVING n > 1",
        [producer] if producer else [],
        key=", ".join(key),
    )
