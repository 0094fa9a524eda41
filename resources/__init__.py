"""Dagster resources: the DuckDB store and the source transports (wiring only; science is in leaf_live/)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
from dagster import ConfigurableResource
from dagster_duckdb import DuckDBResource
from pydantic import Field

import leaf_live.macro  # noqa: F401  (registers the macro tables)
from leaf_live.core import storage
from leaf_live.core.settings import get_settings


class LeafLiveDB(DuckDBResource):
    """The project's DuckDB file (``LEAF_LIVE_DB``), opened in UTC with every registered table created.

    DuckDB has one writer at a time, so runs that write use the in-process executor.
    """

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self.database != ":memory:":
            Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        with super().get_connection() as con:
            con.execute("SET TimeZone='UTC'")
            storage.ensure_tables(con)
            yield con


class SourcesResource(ConfigurableResource):
    """Which transport the source connectors use and where the snapshot files are.

    ``transport='snapshot'`` reads recorded files in each service's own format under ``snapshot_dir``;
    ``'live'`` calls the services (FRED/ALFRED, intraday bars, ...). Consensus has no free live API: in
    live mode ``calendar_file`` must name a calendar export (file path or URL).
    """

    transport: str = Field(description="snapshot | live")
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")
    calendar_sources: list[str] = Field(
        default=["livemacroeval_panel", "livemacroeval_live"],
        description="release-calendar sources to load (add 'forexfactory' for the second consensus source)",
    )
    calendar_file: str | None = Field(default=None, description="live mode: calendar export file or URL")

    @property
    def snapshot_path(self) -> Path | None:
        return Path(self.snapshot_dir) if self.snapshot_dir else None


def default_resources(db: str | Path | None = None, snapshot: str | Path | None = None) -> dict:
    """Resources built from the environment (``LEAF_LIVE_DB``, ``LEAF_LIVE_SNAPSHOT``, ``LEAF_LIVE_TRANSPORT``)."""
    s = get_settings()
    snap = Path(snapshot) if snapshot is not None else s.snapshot_dir
    transport = "snapshot" if snapshot is not None else s.transport
    return {
        "db": LeafLiveDB(database=str(Path(db) if db is not None else s.db_path)),
        "sources": SourcesResource(transport=transport, snapshot_dir=str(snap) if snap else None),
    }
