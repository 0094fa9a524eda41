"""The project's Dagster event log storage (``dagster_home/dagster.yaml``): Dagster's own run-sharded SQLite
event log with one change in how it talks to SQLite, so recording a run's events costs milliseconds, not
minutes.

Why: ``leaf-live run`` materializes about 1,200 release-month partitions, each with its own materialization
event (per-partition row counts in the UI). Dagster's ``SqliteEventLogStorage`` opens a new SQLAlchemy engine
and connection for every write (``NullPool``), so each event recompiles its SQL statements and every commit
syncs the write-ahead log to disk: about 50 ms wall (5 ms CPU) per event on this machine, 2 to 3 minutes per
run.

What changes (nothing about what is stored; same files, same tables, same schema migrations):

* one pooled engine per shard (the ``index`` shard and the few most recent run shards), so connections and
  compiled statements are reused;
* ``PRAGMA synchronous=NORMAL`` on every connection: with SQLite's write-ahead log (Dagster turns it on) a
commit
  no longer waits for the disk; the database stays consistent after a crash, only the last transactions before
  a power loss can be lost (SQLite documentation, "WAL mode"), acceptable for a run log that can be rerun;
* :meth:`PooledSqliteEventLogStorage.store_event_batch` writes a batch in one transaction per shard (Dagster's
  base class stores the events one by one). Dagster hands a step's per-partition materializations and a run's
  planned events over as one batch when ``DAGSTER_EVENT_BATCH_SIZE`` is set, which ``leaf_live`` does.

``leaf-live run`` opens its instance with :func:`pooled_instance`: the instance its ``dagster.yaml``
describes, with this storage in place of Dagster's default SQLite event log on the same directory (the UI,
``dagster dev`` and ``DagsterInstance.from_config`` read the same files with Dagster's own class); an instance
configured with another storage (PostgreSQL in the production profile) is left as it is. The other supported
levers are used too: ``leaf_live`` sets Dagster's ``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS`` so a
single-run backfill plans each asset with one event instead of one per partition, and
``DAGSTER_EVENT_BATCH_SIZE`` so events reach the storage in batches. ``benchmarks/event_log.py`` measures the
difference against Dagster's default storage.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage, create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

# run shards kept open besides the index: a process writes one run at a time
OPEN_SHARDS = 4
# how Dagster names its default SQLite storages in an InstanceRef
DEFAULT_UNIFIED = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")
DEFAULT_SQLITE = {
    ("dagster._core.storage.event_log", "SqliteEventLogStorage"),
    ("dagster._core.storage.event_log.sqlite.sqlite_event_log", "SqliteEventLogStorage"),
}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """:class:`dagster._core.storage.event_log.SqliteEventLogStorage` with one pooled engine per shard,
    ``synchronous=NORMAL`` and batched writes (module docstring); the same config (``base_dir``) and files.
    :func:`pooled_instance` puts it in place of an instance's default SQLite event log."""

    def __init__(self, base_dir: str, inst_data: Any = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        # during store_event_batch: the open transaction per shard, the thread writing the batch, its exit
        # stack
        self._held: dict[str, Connection] | None = None
        self._held_thread: int | None = None
        self._held_stack: ExitStack | None = None
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> PooledSqliteEventLogStorage:
        # the base class's config (base_dir); its from_config_value builds the base class itself
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        engine = create_engine(
            self.conn_string_for_shard(shard), connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        self._engines[shard] = engine
        while (
            len(self._engines) > OPEN_SHARDS + 1
        ):  # the index shard is used on every asset event: stays recent
            self._engines.popitem(last=False)[1].dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:  # the base class's, without the per-call engine
        if self._held is not None and self._held_thread == threading.get_ident():
            conn = self._held.get(shard)
            if conn is None:  # first use of this shard in the batch: its transaction stays open to the end
                assert self._held_stack is not None
                conn = self._held_stack.enter_context(self._engine(shard).connect())
                self._held_stack.enter_context(conn.begin())
                self._held[shard] = conn
            yield conn
            return
        with self._db_lock:
            with self._engine(shard).connect() as conn:
                with conn.begin():
                    yield conn

    def store_event_batch(self, events: Sequence[Any]) -> None:
        """Store ``events`` (``EventLogEntry``) as :meth:`store_event` stores each, in one transaction per
        shard (the run's shard, the index): committed together at the end, rolled back together when one fails
        (Dagster then falls back to storing them one by one)."""
        if len(events) <= 1:
            for e in events:
                self.store_event(e)
            return
        with self._db_lock:
            self._held, self._held_thread = {}, threading.get_ident()
            try:
                with ExitStack() as stack:
                    self._held_stack = stack
                    for e in events:
                        self.store_event(e)
            finally:  # leaving the stack committed (or rolled back) and closed every held connection
                self._held = self._held_thread = self._held_stack = None

    def dispose(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
        super().dispose()


def pooled_instance(home: str | Path) -> DagsterInstance:
    """The Dagster instance of the directory ``home`` (its ``dagster.yaml``), with
    :class:`PooledSqliteEventLogStorage` in place of Dagster's default SQLite event log (same ``base_dir``,
    same files); any other configured event log storage is kept. Raises what ``DagsterInstance.from_config``
    raises.
    """
    ref = InstanceRef.from_dir(str(home))
    data, unified = ref.event_storage_data, ref.storage_data
    default_unified = unified is None or (unified.module_name, unified.class_name) == DEFAULT_UNIFIED
    if default_unified and data is not None and (data.module_name, data.class_name) in DEFAULT_SQLITE:
        # the default SQLite storage is a bundle of the run, event log and schedule storages on the same
        # directories as the separate defaults the ref also holds: use those, with the pooled event log
        ref = ref._replace(
            storage_data=None,
            event_storage_data=ConfigurableClassData(
                __name__, PooledSqliteEventLogStorage.__name__, data.config_yaml
            ),
        )
    return DagsterInstance.from_ref(ref)
