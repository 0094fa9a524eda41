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
    MetadataValue,
    MonthlyPartitionsDefinition,
    OpDefinition,
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


def in_duckdb_pool(defs: Sequence[AssetsDefinition], pool: str = DUCKDB_POOL) -> list[AssetsDefinition]:
    """``defs`` unchanged, once checked: every asset / asset-check op that requires a DuckDB resource
    (:data:`DUCKDB_RESOURCE_KEYS`) declares the concurrency ``pool`` (Dagster's public ``pool=`` argument on
    ``@asset`` / ``@multi_asset`` / ``@asset_check`` / ``@dbt_assets``), and no other op claims it. Applied
    once, where Definitions are assembled (``leaf_live/definitions.py``), so a new DuckDB asset that forgets
    ``pool=`` fails at load instead of opening the file beside another writer.

    Raises ``ValueError`` naming the op and its pool for a DuckDB op outside ``pool``, an op in ``pool`` that
    opens no DuckDB resource, or a DuckDB step backed by a graph (a graph's ops would each need the pool;
    none exists today).
    """
    for ad in defs:
        op = ad.node_def
        opens_db = bool(set(ad.required_resource_keys) & DUCKDB_RESOURCE_KEYS)
        if opens_db and not isinstance(op, OpDefinition):
            raise ValueError(f"{op.name}: graph-backed DuckDB steps need the pool on each op")
        op_pool = getattr(op, "pool", None)
        if opens_db and op_pool != pool:
            raise ValueError(f"{op.name}: pool {op_pool!r}, but it opens DuckDB (needs pool={pool!r})")
        if not opens_db and op_pool == pool:
            raise ValueError(f"{op.name}: in pool {pool!r} but opens no DuckDB resource")
    return list(defs)


# Metadata key listing the registered tables an asset writes (comma-separated): the dbt translator maps a
# dbt source to the assets that write its table (assets/dbt_marts.py).
TABLES_KEY = "leaf_live/tables"


def process_workers(requested: int) -> int:
    """Worker processes a step may start for its own pool (ARIMA chains, statsforecast ``n_jobs``, where -1
    means every core): the ``requested`` count, or 1 inside a daemonic process. A Celery prefork child (the
    production profile's executor worker) is daemonic and may not have children (``AssertionError:
    daemonic processes are not allowed to have children``): there the step fits in its own process and the
    parallelism comes from the executor fanning out steps and partitions (issue 20 item 1)."""
    import multiprocessing

    if requested != 1 and multiprocessing.current_process().daemon:  # statsforecast: -1 = every core
        return 1
    return requested


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
    *,
    keep_unanswered: bool = False,
) -> dict[str, int]:
    """Replace the partitions in ``keys`` with their rows of ``frame`` (empty slices delete stale rows), all
    in one transaction (``storage.replace_partition`` with the list of keys): a run's range is written whole
    or, on an error, not at all.

    Rows of ``frame`` outside ``keys`` raise :class:`leaf_live.core.storage.StorageError` before any write.
    Returns rows written per key. Inside a partitioned asset's run, each key's count is recorded on that
    partition's materialization (``dagster/row_count`` and ``rows``), so a single-run backfill shows every
    month's own count, not the run's total. Several tables of one step: :func:`write_tables`.
    ``keep_unanswered`` (source tables): a key the frame has no row for keeps its stored rows.
    """
    return write_tables(con, {table: frame}, keys, extra_where, keep_unanswered=keep_unanswered)[table]


def write_tables(
    con: duckdb.DuckDBPyConnection,
    frames: Mapping[str, pl.DataFrame],
    keys: Sequence[str],
    extra_where: Mapping[str, Any] | None = None,
    *,
    then: Sequence[str] = (),
    keep_unanswered: bool = False,
    refuse_removal: Sequence[str] = (),
    also: Sequence[storage.Slice] = (),
) -> dict[str, dict[str, int]]:
    """Replace the partitions ``keys`` of every table in ``frames`` (table -> its rows) in ONE transaction
    (``storage.replace_partitions``), so a step writing several tables that must agree (tasks and their
    outcomes, questions and their price paths) leaves the store either as before or as after, never half
    (also when the process is killed mid-write). ``then``: SQL run in the same transaction after the inserts.
    ``refuse_removal``: tables whose replace fails (:class:`leaf_live.core.storage.WiderReplaceError`, nothing
    written) rather than remove stored rows the new frame does not hold (span-exact reruns). ``also``: slices
    of other tables keyed otherwise (a fit cache by series) written in the same transaction.

    Rows outside ``keys`` raise :class:`leaf_live.core.storage.StorageError` naming the table before any
    write. Returns table -> rows written per key; the first table's counts are recorded on the partitions'
    materializations (as :func:`write_partitions`)."""
    keys = list(dict.fromkeys(keys))
    keyset = set(keys)
    slices, counts = [], {}
    for table, frame in frames.items():
        stray = frame.filter(~pl.col("partition_key").is_in(keys)) if frame.height else frame
        if stray.height:
            raise storage.StorageError(
                f"table {table}: row with partition_key={stray.get_column('partition_key')[0]!r} outside"
                f" this run's partitions {min(keyset)}..{max(keyset)}"
            )
        got = dict(frame.group_by("partition_key").len().iter_rows()) if frame.height else {}
        counts[table] = {k: got.get(k, 0) for k in keys}
        slices.append(
            storage.Slice(
                table,
                frame,
                {"partition_key": keys, **(extra_where or {})},
                keep_unanswered=keep_unanswered,
                refuse_removal=table in refuse_removal,
            )
        )
    refuse_if_run_finished()  # last check before the one transaction: a redelivered step of a dead run
    storage.replace_partitions(con, [*slices, *also], then=then)
    if counts:
        record_partition_rows(next(iter(counts.values())))
    return counts


class RunFinishedError(storage.StorageError):
    """A step of a run the instance already records as finished (failed, succeeded, canceled or canceling)
    tried to write: nothing written."""


FINISHED_RUN_STATUSES = ("SUCCESS", "FAILURE", "CANCELING", "CANCELED")


def refuse_if_run_finished() -> None:
    """Inside a Dagster step, read this run's status from the instance and raise :class:`RunFinishedError`
    (one line: run id, status) when it is finished or being canceled: a Celery step redelivered after its run
    already failed (``task_acks_late``, the broker's visibility timeout, deploy/production/celery.yaml) must
    not rewrite DuckDB and record success inside a FAILED run (issue 20 item 2). Outside a run: no check."""
    context = _current_context()
    if context is None:
        return
    run = context.instance.get_run_by_id(context.run_id)
    if run is not None and run.status.value in FINISHED_RUN_STATUSES:
        raise RunFinishedError(
            f"run {context.run_id}: already {run.status.value}; step {context.op_handle} refuses to write "
            "(a redelivered step of a finished run)"
        )


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

    @asset_check(pool=DUCKDB_POOL, asset=asset, name=name, blocking=True, description=description)
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
