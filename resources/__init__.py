"""Dagster resources (wiring only; science is in leaf_live/): the DuckDB store, the LLM call path and one
client resource per source (snapshot | live, chosen in :func:`default_resources`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import duckdb
from dagster_duckdb import DuckDBResource

import leaf_live.event  # noqa: F401  (registers the event tables)
import leaf_live.macro  # noqa: F401  (registers the macro tables first: the registry's order is the README's)
from leaf_live.core import storage
from leaf_live.core.settings import Settings, get_settings
from resources.clock import ClockResource, clock_resource
from resources.llm import LLMResource, llm_resource
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


def default_resources(
    db: str | Path | None = None, snapshot: str | Path | None = None, *, settings: Settings | None = None
) -> dict:
    """Every resource, from the settings (``leaf_live.core.settings.get_settings``): the DuckDB file
    (``LEAF_LIVE_DB`` or ``db``), the LLM resource (``LEAF_LIVE_LLM_*`` as ``EnvVar``s), the clock of the
    sensors and schedules (``LEAF_LIVE_CLOCK``; the snapshot sources replay the recording at it) and the
    source clients, snapshot or live by ``LEAF_LIVE_TRANSPORT``. Passing ``snapshot`` selects the snapshot
    clients on that directory."""
    s = settings or get_settings()
    if snapshot is not None:
        s = replace(s, snapshot_dir=Path(snapshot), transport="snapshot")
    return {
        "db": LeafLiveDB(database=str(Path(db) if db is not None else s.db_path)),
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
    "source_resources",
]
