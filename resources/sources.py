"""Source-client resources: for every source, one Dagster resource per implementation of its client interface
(snapshot | live), and the one place that picks which (:func:`source_resources`).

Both tracks use the same pattern (see ``leaf_live.core.sources``): the science module of a source defines a
client interface with a ``<Source>Snapshot`` and a ``<Source>Live`` implementation; here each implementation
gets a :class:`SourceResource` subclass whose fields are its configuration and whose
:meth:`~SourceResource.build` constructs the client; :data:`SOURCES` maps the resource key to ``(snapshot,
live)`` builders from
:class:`~leaf_live.core.settings.Settings`. An asset declares the key with the interface's resource base
class and calls ``.client()``; it never sees a transport name.

Adding a source: write its snapshot and live clients next to its parser (e.g. the event track's
``SnapshotDailyPrices`` / ``LiveDailyPrices`` in ``leaf_live/event/sources/markets.py``), add ``class
<Source>Resource(SourceResource)`` with two subclasses here (fields = constructor arguments; ``build`` returns
the client), and one entry in :data:`SOURCES`. The event track's sources are the last six entries.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dagster import ConfigurableResource, EnvVar
from pydantic import Field, PrivateAttr

from leaf_live.core.settings import Settings
from leaf_live.event.docstore import DocumentStore  # noqa: E402

# after the macro sources: importing a track registers its tables, macro first (the README's order)
from leaf_live.event.sources import electricity as event_load  # noqa: E402
from leaf_live.event.sources import markets as event_prices  # noqa: E402
from leaf_live.event.sources import prediction_markets as event_markets  # noqa: E402
from leaf_live.event.sources import recorded_events  # noqa: E402
from leaf_live.event.sources import weather as event_weather  # noqa: E402
from leaf_live.macro.sources import (
    fed_nowcasts,
    fred,
    fred_md,
    futures,
    polymarket,
    realtime_gdp,
    recorded_nowcasts,
    releases,
)
from resources.clock import simulated_instant


class SourceResource(ConfigurableResource):
    """Base of every source-client resource: :meth:`client` returns the science client, built once per
    resource instance (one per run) by the implementation's :meth:`build`."""

    _client: Any = PrivateAttr(default=None)

    def build(self) -> Any:
        raise NotImplementedError

    def client(self) -> Any:
        if self._client is None:
            self._client = self.build()
        return self._client


def _path(value: str | None) -> str:
    if not value:
        raise ValueError("this source reads recorded files: set snapshot_dir (LEAF_LIVE_SNAPSHOT)")
    return value


# --- release calendar ---------------------------------------------------------------------------

_CALENDAR_SOURCES = Field(
    default=list(releases.DEFAULT_SOURCES),
    description="calendar sources to load (add 'forexfactory' for the second consensus source)",
)


class ReleaseCalendarResource(SourceResource):
    """Release calendar client (:class:`leaf_live.macro.sources.releases.ReleaseCalendarClient`)."""

    calendar_sources: list[str] = _CALENDAR_SOURCES


class ReleaseCalendarSnapshotResource(ReleaseCalendarResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")
    calendar_file: str | None = Field(
        default=None, description="calendar export (path or URL) replacing the recorded live-window file"
    )
    known_at: str | None = Field(
        default=None,
        description=(
            "replay the recording as known at this instant "
            "(ISO 8601 with a zone; LEAF_LIVE_CLOCK): later actuals are not released yet"
        ),
    )
    known_at_file: str | None = Field(
        default=None,
        description="file holding that instant, read at each build (LEAF_LIVE_CLOCK_FILE; over known_at)",
    )

    def build(self) -> releases.ReleaseCalendarSnapshot:
        return releases.ReleaseCalendarSnapshot(
            _path(self.snapshot_dir),
            sources=self.calendar_sources,
            calendar_file=self.calendar_file,
            known_at=simulated_instant(self.known_at, self.known_at_file, name="calendar.known_at"),
        )


class ReleaseCalendarLiveResource(ReleaseCalendarResource):
    calendar_file: str | None = Field(
        default=None,
        description=(
            "calendar export, path or URL, in the "
            "LiveMacroEval field_releases format (consensus has no free live API)"
        ),
    )
    archive_dir: str | None = Field(
        default=None,
        description="directory holding the archive calendars (LiveMacroEval panel, ForexFactory)",
    )
    archive_url: str | None = Field(
        default=None,
        description="base URL serving the archive calendars in the snapshot layout (instead of archive_dir)",
    )

    def build(self) -> releases.ReleaseCalendarLive:
        return releases.ReleaseCalendarLive(
            self.calendar_file,
            sources=self.calendar_sources,
            archive_dir=self.archive_dir,
            archive_url=self.archive_url,
        )


# --- announcement-window futures prices -----------------------------------------------------------


class WindowPricesResource(SourceResource):
    """Futures window prices client (:class:`leaf_live.macro.sources.futures.WindowPricesClient`)."""


class WindowPricesSnapshotResource(WindowPricesResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> futures.FuturesSnapshot:
        return futures.FuturesSnapshot(_path(self.snapshot_dir))


class WindowPricesLiveResource(WindowPricesResource):
    symbol: str = Field(
        default="ES=F", description="front-month E-mini symbol of the bar provider (yfinance)"
    )

    def build(self) -> futures.FuturesLive:
        return futures.FuturesLive(symbol=self.symbol)


# --- FRED / ALFRED --------------------------------------------------------------------------------


class FredResource(SourceResource):
    """FRED / ALFRED client (:class:`leaf_live.macro.sources.fred.FredClient`)."""


class FredSnapshotResource(FredResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> fred.FredSnapshot:
        return fred.FredSnapshot(_path(self.snapshot_dir))


class FredLiveResource(FredResource):
    api_key: str | None = Field(
        default=None, description="FRED API key (EnvVar FRED_API_KEY; ALFRED vintages)"
    )
    graph_url: str = Field(default=fred.GRAPH_URL, description="fredgraph.csv host")
    api_url: str = Field(default=fred.API_URL, description="FRED API base URL")

    def build(self) -> fred.FredLive:
        return fred.FredLive(api_key=self.api_key, graph_url=self.graph_url, api_url=self.api_url)


# --- FRED-MD / FRED-QD vintages -------------------------------------------------------------------


class FredMdResource(SourceResource):
    """FRED-MD/QD vintages client (:class:`leaf_live.macro.sources.fred_md.FredMdClient`)."""


class FredMdSnapshotResource(FredMdResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> fred_md.FredMdSnapshot:
        return fred_md.FredMdSnapshot(_path(self.snapshot_dir))


class FredMdLiveResource(FredMdResource):
    base_url: str = Field(
        default=fred_md.DEFAULT_BASE_URL, description="FRED-MD download area (LEAF_LIVE_FRED_MD_BASE_URL)"
    )

    def build(self) -> fred_md.FredMdLive:
        return fred_md.FredMdLive(self.base_url)


# --- real-time GDP vintages (Philadelphia Fed RTDSM) ---------------------------------------------------


class RealTimeGdpResource(SourceResource):
    """Real-time real GDP vintages client
    (:class:`leaf_live.macro.sources.realtime_gdp.RealTimeGdpClient`)."""


class RealTimeGdpSnapshotResource(RealTimeGdpResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> realtime_gdp.RealTimeGdpSnapshot:
        return realtime_gdp.RealTimeGdpSnapshot(_path(self.snapshot_dir))


class RealTimeGdpLiveResource(RealTimeGdpResource):
    base_url: str = Field(
        default=realtime_gdp.DEFAULT_BASE_URL,
        description="folder of the Philadelphia Fed's real-time data files (LEAF_LIVE_PHILLY_RTDSM_URL)",
    )

    def build(self) -> realtime_gdp.RealTimeGdpLive:
        return realtime_gdp.RealTimeGdpLive(self.base_url)


# --- Fed nowcasts ---------------------------------------------------------------------------------


class FedNowcastsResource(SourceResource):
    """Fed nowcast client (:class:`leaf_live.macro.sources.fed_nowcasts.FedNowcastsClient`)."""


class FedNowcastsSnapshotResource(FedNowcastsResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")
    models: list[str] = Field(
        default=list(fed_nowcasts.DEFAULT_SNAPSHOT_MODELS), description="Fed model ids to read"
    )

    def build(self) -> fed_nowcasts.FedNowcastsSnapshot:
        return fed_nowcasts.FedNowcastsSnapshot(_path(self.snapshot_dir), models=self.models)


# model id -> the setting that overrides its live URL
FED_URL_SETTINGS = {
    fed_nowcasts.GDPNOW: "LEAF_LIVE_GDPNOW_URL",
    fed_nowcasts.NYFED: "LEAF_LIVE_NYFED_NOWCAST_URL",
    fed_nowcasts.CLEVELAND: "LEAF_LIVE_CLEVELAND_NOWCAST_URL",
    fed_nowcasts.CHICAGO: "LEAF_LIVE_CHICAGO_CHURN_URL",
    fed_nowcasts.STLOUIS: "LEAF_LIVE_STLENI_URL",
}


class FedNowcastsLiveResource(FedNowcastsResource):
    models: list[str] = Field(default=list(fed_nowcasts.MODEL_IDS), description="Fed model ids to fetch")
    urls: dict[str, str] = Field(
        default={}, description="live URL per Fed model id (default: the banks' public files)"
    )

    def build(self) -> fed_nowcasts.FedNowcastsLive:
        return fed_nowcasts.FedNowcastsLive(
            models=self.models, urls=self.urls, clock=lambda: datetime.now(UTC)
        )


# --- prediction markets ---------------------------------------------------------------------------


class PredictionMarketsResource(SourceResource):
    """Prediction-market client (:class:`leaf_live.macro.sources.polymarket.PredictionMarketClient`)."""


class PolymarketSnapshotResource(PredictionMarketsResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> polymarket.PolymarketSnapshot:
        return polymarket.PolymarketSnapshot(_path(self.snapshot_dir))


class PolymarketLiveResource(PredictionMarketsResource):
    gamma_url: str = Field(default=polymarket.GAMMA_URL, description="Gamma API base URL")
    clob_url: str = Field(default=polymarket.CLOB_URL, description="CLOB API base URL")

    def build(self) -> polymarket.PolymarketLive:
        return polymarket.PolymarketLive(gamma_url=self.gamma_url, clob_url=self.clob_url)


# --- recorded nowcasts (snapshot only) ------------------------------------------------------------


class RecordedNowcastsResource(SourceResource):
    """Nowcasts recorded elsewhere
    (:class:`leaf_live.macro.sources.recorded_nowcasts.RecordedNowcastsSnapshot`): archives with no live
    service, so both modes read them from the snapshot directory."""

    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> recorded_nowcasts.RecordedNowcastsSnapshot:
        return recorded_nowcasts.RecordedNowcastsSnapshot(_path(self.snapshot_dir))


# --- event track: daily prices (stocks, commodity futures) ---------------------------------------


class DailyPricesResource(SourceResource):
    """Daily OHLCV client (:class:`leaf_live.event.sources.markets.DailyPriceSource`)."""


class DailyPricesSnapshotResource(DailyPricesResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> event_prices.SnapshotDailyPrices:
        return event_prices.SnapshotDailyPrices(_path(self.snapshot_dir))


class DailyPricesLiveResource(DailyPricesResource):
    """yfinance (auto-adjusted daily bars)."""

    def build(self) -> event_prices.LiveDailyPrices:
        return event_prices.LiveDailyPrices()


# --- event track: hourly weather ------------------------------------------------------------------


class WeatherResource(SourceResource):
    """Hourly weather client (:class:`leaf_live.event.sources.weather.WeatherSource`)."""


class WeatherSnapshotResource(WeatherResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> event_weather.SnapshotWeather:
        return event_weather.SnapshotWeather(_path(self.snapshot_dir))


class WeatherLiveResource(WeatherResource):
    open_meteo_url: str = Field(
        default=event_weather.OPEN_METEO_ARCHIVE_URL,
        description="Open-Meteo archive base URL (LEAF_LIVE_OPEN_METEO_URL)",
    )
    use_meteostat: bool = Field(
        default=True, description="ask Meteostat first, Open-Meteo for the hours it lacks"
    )

    def build(self) -> event_weather.LiveWeather:
        return event_weather.LiveWeather(self.open_meteo_url, use_meteostat=self.use_meteostat)


# --- event track: electricity load ----------------------------------------------------------------


class GridLoadResource(SourceResource):
    """Hourly electricity load client (:class:`leaf_live.event.sources.electricity.LoadSource`)."""


class GridLoadSnapshotResource(GridLoadResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> event_load.SnapshotLoad:
        return event_load.SnapshotLoad(_path(self.snapshot_dir))


class GridLoadLiveResource(GridLoadResource):
    """gridstatus 5-minute zonal load, averaged to hourly means."""

    def build(self) -> event_load.LiveLoad:
        return event_load.LiveLoad()


# --- event track: prediction-market questions -----------------------------------------------------


class EventMarketsResource(SourceResource):
    """Prediction-market questions, price paths and resolutions
    (:class:`leaf_live.event.sources.prediction_markets.PredictionMarketSource`)."""


class EventMarketsSnapshotResource(EventMarketsResource):
    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")
    known_at: str | None = Field(
        default=None,
        description=(
            "replay the recording as known at this instant "
            "(ISO 8601 with a zone; LEAF_LIVE_CLOCK): later questions and resolutions unseen"
        ),
    )
    known_at_file: str | None = Field(
        default=None,
        description="file holding that instant, read at each build (LEAF_LIVE_CLOCK_FILE; over known_at)",
    )

    def build(self) -> event_markets.SnapshotPredictionMarkets:
        return event_markets.SnapshotPredictionMarkets(
            _path(self.snapshot_dir),
            known_at=simulated_instant(self.known_at, self.known_at_file, name="event_markets.known_at"),
        )


class EventMarketsLiveResource(EventMarketsResource):
    slugs: list[str] = Field(
        default=[], description="Polymarket market slugs to follow (Gamma /markets?slug=)"
    )
    gamma_url: str = Field(default=event_markets.GAMMA_URL, description="Gamma API base URL")
    clob_url: str = Field(default=event_markets.CLOB_URL, description="CLOB API base URL")
    fidelity_min: int = Field(default=60, description="CLOB price-history resolution, minutes")

    def build(self) -> event_markets.LivePolymarket:
        return event_markets.LivePolymarket(
            self.slugs, gamma_url=self.gamma_url, clob_url=self.clob_url, fidelity_min=self.fidelity_min
        )


# --- event track: recorded event transcripts and the retrieval agent's search backend ---------------


class RecordedEventsResource(SourceResource):
    """The recorded SEER case (:func:`leaf_live.event.sources.recorded_events.read_seer_case`): a transcript
    with no live service, so both modes read it from the snapshot directory."""

    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> recorded_events.SeerCase:
        return recorded_events.read_seer_case(_path(self.snapshot_dir))


class EventSearchResource(SourceResource):
    """The retrieval agent's search backend: :meth:`client` is a
    :class:`~leaf_live.event.docstore.DocumentStore` (offline: BM25 over recorded documents, searched at the
    interval's end) or ``None`` (live: each model's own provider web search, restricted to the interval)."""


class EventSearchSnapshotResource(EventSearchResource):
    """BM25 over the recorded SEER case's event texts, each published at the end of its day
    (:func:`leaf_live.event.sources.recorded_events.seer_documents`)."""

    snapshot_dir: str | None = Field(default=None, description="directory of recorded source files")

    def build(self) -> DocumentStore:
        return DocumentStore(
            recorded_events.seer_documents(recorded_events.read_seer_case(_path(self.snapshot_dir)))
        )


class EventSearchLiveResource(EventSearchResource):
    """The provider's web search (OpenAI web search, Anthropic web-search tool, Gemini grounding) through
    litellm."""

    def build(self) -> None:
        return None

    def client(self) -> None:
        return None


# --- the one choice ---------------------------------------------------------------------------------

Builder = Callable[[Settings], SourceResource]


def _snap(s: Settings) -> str | None:
    return str(s.snapshot_dir) if s.snapshot_dir is not None else None


def _clock(s: Settings) -> str | None:
    return s.clock.isoformat() if s.clock is not None else None


def _clock_file(s: Settings) -> str | None:
    return str(s.clock_file) if s.clock_file is not None else None


def _fred_key(s: Settings) -> Any:
    return EnvVar("FRED_API_KEY") if "FRED_API_KEY" in s.secrets_set else None


# resource key -> (snapshot builder, live builder)
SOURCES: dict[str, tuple[Builder, Builder]] = {
    "calendar": (
        lambda s: ReleaseCalendarSnapshotResource(
            snapshot_dir=_snap(s), known_at=_clock(s), known_at_file=_clock_file(s)
        ),
        lambda s: ReleaseCalendarLiveResource(archive_dir=_snap(s)),
    ),
    "window_prices": (
        lambda s: WindowPricesSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: WindowPricesLiveResource(),
    ),
    "fred": (
        lambda s: FredSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: FredLiveResource(api_key=_fred_key(s)),
    ),
    "fred_md": (
        lambda s: FredMdSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: FredMdLiveResource(
            base_url=s.urls.get("LEAF_LIVE_FRED_MD_BASE_URL", fred_md.DEFAULT_BASE_URL)
        ),
    ),
    "realtime_gdp": (
        lambda s: RealTimeGdpSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: RealTimeGdpLiveResource(
            base_url=s.urls.get("LEAF_LIVE_PHILLY_RTDSM_URL", realtime_gdp.DEFAULT_BASE_URL)
        ),
    ),
    "fed_nowcasts": (
        lambda s: FedNowcastsSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: FedNowcastsLiveResource(
            urls={m: s.urls[v] for m, v in FED_URL_SETTINGS.items() if v in s.urls}
        ),
    ),
    "prediction_markets": (
        lambda s: PolymarketSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: PolymarketLiveResource(),
    ),
    "recorded_nowcasts": (
        lambda s: RecordedNowcastsResource(snapshot_dir=_snap(s)),
        lambda s: RecordedNowcastsResource(snapshot_dir=_snap(s)),
    ),
    # event track (LEAF)
    "daily_prices": (
        lambda s: DailyPricesSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: DailyPricesLiveResource(),
    ),
    "weather": (
        lambda s: WeatherSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: WeatherLiveResource(
            open_meteo_url=s.urls.get("LEAF_LIVE_OPEN_METEO_URL", event_weather.OPEN_METEO_ARCHIVE_URL)
        ),
    ),
    "grid_load": (
        lambda s: GridLoadSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: GridLoadLiveResource(),
    ),
    "event_markets": (
        lambda s: EventMarketsSnapshotResource(
            snapshot_dir=_snap(s), known_at=_clock(s), known_at_file=_clock_file(s)
        ),
        lambda s: EventMarketsLiveResource(),
    ),
    "recorded_events": (
        lambda s: RecordedEventsResource(snapshot_dir=_snap(s)),
        lambda s: RecordedEventsResource(snapshot_dir=_snap(s)),
    ),
    "event_search": (
        lambda s: EventSearchSnapshotResource(snapshot_dir=_snap(s)),
        lambda s: EventSearchLiveResource(),
    ),
}


def source_resources(settings: Settings, transport: str | None = None) -> dict[str, SourceResource]:
    """Every source resource, snapshot or live implementation by ``transport`` (default
    ``settings.transport``): the one place the choice is made. Raises :class:`ValueError` for another value.
    """
    mode = transport or settings.transport
    if mode not in ("snapshot", "live"):
        raise ValueError(f"transport={mode!r}: expected 'snapshot' or 'live'")
    return {key: (snap if mode == "snapshot" else live)(settings) for key, (snap, live) in SOURCES.items()}
