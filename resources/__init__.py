"""Dagster resources (wiring only; science is in leaf_live/): the DuckDB store, the LLM call path and one
client resource per source (snapshot | live, chosen in :func:`default_resources`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import duckdb
from dagster import EnvVar
from dagster_duckdb import DuckDBResource
from pydantic import Field

import leaf_live.event  # noqa: F401  (registers the event tables)
import leaf_live.macro  # noqa: F401  (registers the macro tables first: the registry's order is the README's)
from leaf_live.core import storage
from leaf_live.core.settings import Settings, get_settings
from resources.clock import ClockResource, clock_resource
from resources.llm import LLMResource, llm_resource
from resources.secrets import register_environment_secrets
from resources.sources import (
    DailyPricesResource,
    EventMarketsResource,
    EventSearchResource,
    FedNowcastsResource,
    FredMdResource,
    FredResource,
    GridLoadResource,
    PredictionMarketsResource,
    RealTimeGdpResource,
    RecordedEventsResource,
    RecordedNowcastsResource,
    ReleaseCalendarResource,
    SourceResource,
    WeatherResource,
    WindowPricesResource,
    source_resources,
)


class LeafLiveDB(DuckDBResource):
    """The project's DuckDB file (``LEAF_LIVE_DB``), opened in UTC with every registered table created, and
    where the submission service's inbox lives (``inbox``: ``LEAF_LIVE_INBOX``, a PostgreSQL URL or a SQLite
    file; empty = the file beside the database, :func:`leaf_live.service.inbox.inbox_location`).

    DuckDB has one writer at a time, so runs that write use the in-process executor. A step's connection is
    opened by :func:`leaf_live.core.storage.connect` on the file's real path (one file, whatever the
    spelling); while another process holds the file (a reader paging ``leaf-live sql`` output, another
    writer), it is retried for ``connect_wait_s`` seconds (bounded backoff), then the step fails with one line
    naming the holder. The connection is closed when the step's block exits, also when it raises, so a failed
    step never leaves the file open in this process.
    """

    connect_wait_s: float = Field(
        default=60.0,
        description="seconds a step waits for another process to release the DuckDB file before it fails",
    )
    inbox: str = ""

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        register_environment_secrets()  # this step's process hides the environment's secrets it stores
        if self.database == ":memory:":
            con = duckdb.connect(":memory:", config=dict(self.connection_config))
            con.execute("SET TimeZone='UTC'")
            storage.ensure_tables(con)
        else:
            con = storage.connect(self.database, wait_s=self.connect_wait_s)
        try:
            yield con
        finally:
            con.close()


def default_resources(
    db: str | Path | None = None, snapshot: str | Path | None = None, *, settings: Settings | None = None
) -> dict:
    """Every resource, from the settings (``leaf_live.core.settings.get_settings``): the DuckDB file
    (``LEAF_LIVE_DB`` or ``db``) with its inbox (``LEAF_LIVE_INBOX``), the LLM resource (``LEAF_LIVE_LLM_*``
    as ``EnvVar``s), the clock of the sensors and schedules (``LEAF_LIVE_CLOCK``; the snapshot sources replay
    the recording at it) and the source clients, snapshot or live by ``LEAF_LIVE_TRANSPORT``. Passing
    ``snapshot`` selects the snapshot clients on that directory."""
    register_environment_secrets()
    s = settings or get_settings()
    if snapshot is not None:
        s = replace(s, snapshot_dir=Path(snapshot), transport="snapshot")
    return {
        "db": LeafLiveDB(
            database=str(Path(db) if db is not None else s.db_path),
            # an EnvVar: a URL with a password never shows in the run's config
            inbox=EnvVar("LEAF_LIVE_INBOX") if s.inbox else "",
        ),
        "llm": llm_resource(s),
        "clock": clock_resource(s),
        **source_resources(s),
    }


__all__ = [
    "ClockResource",
    "DailyPricesResource",
    "EventMarketsResource",
    "EventSearchResource",
    "RecordedEventsResource",
    "GridLoadResource",
    "WeatherResource",
    "FedNowcastsResource",
    "FredMdResource",
    "FredResource",
    "LLMResource",
    "LeafLiveDB",
    "PredictionMarketsResource",
    "RealTimeGdpResource",
    "RecordedNowcastsResource",
    "ReleaseCalendarResource",
    "SourceResource",
    "WindowPricesResource",
    "default_resources",
    "register_environment_secrets",
    "source_resources",
]
