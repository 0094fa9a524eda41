"""The event track end to end on plain frames: sources -> tasks -> baseline forecasts -> scores.

Each step is one function (frame in, frame out) so an asset is a thin call; :func:`run_snapshot` chains them
for the recorded snapshot with the spans below, the closest the data allows to LEAF's (Table 2):

* large caps and commodities: cutoffs 2025-10-01 .. 2026-01-31 (LEAF 10.2025-02.2026; this span gives §4.1's
  1,050 / 1,020 / 1,020 / 960 large-cap samples at 1 / 2 / 3 / 7 sessions exactly);
* mid caps: months 2024-10 .. 2026-03 (3 months of history, cutoffs 2025-01 .. 2025-12 at 3 months and
  2025-01 .. 2025-09 at 6 months: §4.1's 12 / 9 per stock); most mid-cap files end 2025-04-04, so few
  stocks have these windows;
* weather: 2025-10-01 .. 2026-01-31 (53 / 51 tasks per city at 3 / 7 days, as §4.1's 530 / 510 for 10
  cities); the snapshot has New York only in that span;
* electricity: the EIA-930 files end 2020-09, so the paper's 12.2025-04.2026 window is taken four winters
  earlier, 2018-12-01 .. 2019-03-31 (52 / 50 per area, §4.1's 156 / 150);
* events: every resolved question of the three C.2.5 categories with an open time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from leaf_live.core.forecaster import run_forecasters
from leaf_live.core.storage import conform
from leaf_live.event import baselines, catalog, scoring, tasks
from leaf_live.event.sources.electricity import SnapshotLoad
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.prediction_markets import SnapshotPredictionMarkets
from leaf_live.event.sources.weather import SnapshotWeather


@dataclass(frozen=True)
class Spans:
    """Task spans (module doc): cutoff days of large caps and commodities (``markets``), weather and
    electricity, and the month span of mid caps (first days of months). Every bound is inclusive."""

    markets: tuple[date, date] = (date(2025, 10, 1), date(2026, 1, 31))
    mid_cap_months: tuple[date, date] = (date(2024, 10, 1), date(2026, 3, 1))
    weather: tuple[date, date] = (date(2025, 10, 1), date(2026, 1, 31))
    electricity: tuple[date, date] = (date(2018, 12, 1), date(2019, 3, 31))

    def __post_init__(self) -> None:
        for name in ("markets", "mid_cap_months", "weather", "electricity"):
            lo, hi = getattr(self, name)
            if not (isinstance(lo, date) and isinstance(hi, date)):
                raise ValueError(f"span {name}={getattr(self, name)!r}: expected two dates")
            if hi < lo:
                raise ValueError(f"span {name}: end {hi} is before start {lo}")
        lo, hi = self.mid_cap_months
        if lo.day != 1 or hi.day != 1:
            raise ValueError(f"span mid_cap_months=({lo}, {hi}): give the first day of each month")
        if _month_index(hi) - _month_index(lo) < catalog.MID_CAP_LOOKBACK_MONTHS + min(
            catalog.MID_CAP_HORIZONS_MONTHS
        ):
            raise ValueError(
                f"span mid_cap_months=({lo}, {hi}): needs {catalog.MID_CAP_LOOKBACK_MONTHS} months of "
                f"history and {min(catalog.MID_CAP_HORIZONS_MONTHS)} of horizon"
            )
        for name in ("markets", "weather", "electricity"):
            lo, hi = getattr(self, name)
            if (hi - lo).days < catalog.LOOKBACK_DAYS + min(catalog.SERIES_HORIZONS_DAYS):
                raise ValueError(
                    f"span {name}=({lo}, {hi}): shorter than the {catalog.LOOKBACK_DAYS}-day look-back "
                    f"plus the {min(catalog.SERIES_HORIZONS_DAYS)}-day horizon"
                )


def _month_index(d: date) -> int:
    return d.year * 12 + d.month - 1


SOURCE_MARGIN = timedelta(days=7)  # UTC vs local days at the span edges (tasks never look outside the span)
MID_CAP_TAIL = timedelta(days=62)  # a month counts once the series reaches the next one (tasks.midcap_tasks)


def source_days(spans: Spans = Spans()) -> dict[str, tuple[date, date]]:
    """Days (UTC partition days) each source table must hold for the task spans: ``market_prices`` (markets
    and mid caps), ``weather_hourly``, ``electricity_load``."""
    m = SOURCE_MARGIN
    return {
        "market_prices": (
            min(spans.markets[0], spans.mid_cap_months[0]) - m,
            max(spans.markets[1], spans.mid_cap_months[1] + MID_CAP_TAIL) + m,
        ),
        "weather_hourly": (spans.weather[0] - m, spans.weather[1] + m),
        "electricity_load": (spans.electricity[0] - m, spans.electricity[1] + m),
    }


def cutoff_days(spans: Spans = Spans()) -> dict[str, tuple[date, date]]:
    """The UTC days on which series and trend tasks of each family can have their cutoff: ``markets`` (large
    caps and commodities, 16:00 / 17:00 New York), ``mid_cap`` (month-end closes, from the first month with
    its look-back), ``weather`` and
    ``electricity`` (local midnight ending a day of the span, so up to the next UTC day)."""
    first_mid, last_mid = spans.mid_cap_months
    k = _month_index(first_mid) + catalog.MID_CAP_LOOKBACK_MONTHS  # the first month with its look-back
    mid_start = date(k // 12, k % 12 + 1, 1)
    mid_end = date(last_mid.year + last_mid.month // 12, last_mid.month % 12 + 1, 1) - timedelta(days=1)
    one = timedelta(days=1)
    return {
        "markets": spans.markets,
        "mid_cap": (mid_start, mid_end),
        "weather": (spans.weather[0], spans.weather[1] + one),
        "electricity": (spans.electricity[0], spans.electricity[1] + one),
    }


def series_tasks(
    prices: pl.DataFrame,
    weather: pl.DataFrame,
    load: pl.DataFrame,
    spans: Spans = Spans(),
    days: Sequence[str] | None = None,
) -> tasks.TaskSet:
    """Series and trend tasks of every market, weather and load family over the spans, from ``market_prices``,
    ``weather_hourly`` and ``electricity_load`` rows; with ``days`` (``YYYY-MM-DD``), only the families whose
    cutoff days (:func:`cutoff_days`) meet them are built and only tasks with those cutoff days kept."""
    fams = cutoff_days(spans)
    want = set(days) if days is not None else None

    def wanted(family: str) -> bool:
        lo, hi = fams[family]
        return want is None or any(lo.isoformat() <= d <= hi.isoformat() for d in want)

    sets = []
    if wanted("markets"):
        sets += [
            tasks.market_tasks(prices, "large_cap", [x.symbol for x in catalog.LARGE_CAPS], *spans.markets),
            tasks.market_tasks(prices, "commodity", [x.symbol for x in catalog.COMMODITIES], *spans.markets),
        ]
    if wanted("mid_cap"):
        sets.append(tasks.midcap_tasks(prices, [x.symbol for x in catalog.MID_CAPS], *spans.mid_cap_months))
    if wanted("weather"):
        sets.append(
            tasks.hourly_tasks(
                weather,
                "weather",
                catalog.CITIES,
                *spans.weather,
                target_col="city",
                time_col="ts",
                value_col="temperature_c",
            )
        )
    if wanted("electricity"):
        sets.append(
            tasks.hourly_tasks(
                load,
                "electricity",
                catalog.ELECTRICITY_AREAS,
                *spans.electricity,
                target_col="area",
                time_col="interval_start",
                value_col="load_mw",
            )
        )
    ts = tasks.TaskSet.concat(sets)
    if want is None:
        return ts
    return tasks.TaskSet(
        ts.tasks.filter(pl.col("partition_key").is_in(list(want))),
        ts.outcomes.filter(pl.col("partition_key").is_in(list(want))),
    )


@dataclass
class EventTables:
    leaf_targets: pl.DataFrame
    market_prices: pl.DataFrame
    weather_hourly: pl.DataFrame
    electricity_load: pl.DataFrame
    prediction_markets: pl.DataFrame
    market_price_path: pl.DataFrame
    forecast_tasks: pl.DataFrame = field(default_factory=pl.DataFrame)
    task_outcomes: pl.DataFrame = field(default_factory=pl.DataFrame)
    leaf_forecasts: pl.DataFrame = field(default_factory=pl.DataFrame)
    leaf_scores: pl.DataFrame = field(default_factory=pl.DataFrame)


def targets_frame() -> pl.DataFrame:
    """``leaf_targets`` rows from the catalog."""
    rows = [
        {
            "domain": t.domain,
            "target_id": t.target_id,
            "name": t.name,
            "group_name": t.group,
            "symbol": t.symbol,
            "latitude": t.latitude,
            "longitude": t.longitude,
            "timezone": t.timezone,
            "unit": t.unit,
            "source_ids": json.dumps(t.source_ids, sort_keys=True),
        }
        for t in catalog.ALL_TARGETS
    ]
    return conform(
        "leaf_targets", pl.DataFrame(rows, schema_overrides={"latitude": pl.Float64, "longitude": pl.Float64})
    )


def load_snapshot(snapshot_dir: str | Path, spans: Spans = Spans()) -> EventTables:
    """Read every event source from the snapshot for the spans (the days of :func:`source_days`)."""
    days = source_days(spans)
    syms = [t.symbol for t in (*catalog.LARGE_CAPS, *catalog.COMMODITIES, *catalog.MID_CAPS)]
    prices = to_market_prices(SnapshotDailyPrices(snapshot_dir).daily_bars(syms, *days["market_prices"]))
    weather = SnapshotWeather(snapshot_dir).hourly(catalog.CITIES, *days["weather_hourly"])
    load = SnapshotLoad(snapshot_dir).hourly_load(catalog.ELECTRICITY_AREAS, *days["electricity_load"])
    pm = SnapshotPredictionMarkets(snapshot_dir).load()
    return EventTables(targets_frame(), prices, weather, load, pm.questions, pm.path)


def build_tasks(t: EventTables, spans: Spans = Spans()) -> tasks.TaskSet:
    """Every task family over the spans (module doc)."""
    return tasks.TaskSet.concat(
        [
            series_tasks(t.market_prices, t.weather_hourly, t.electricity_load, spans),
            tasks.event_tasks(t.prediction_markets, t.market_price_path),
        ]
    )


# AutoARIMA is opt-in: on the snapshot's ~1,700 task series it costs about 5 minutes on 2 shared cores (daily
# 15-close fits ~0.1 s each, hourly season-24 fits ~0.5 s), ETS + Theta together under a minute.
DEFAULT_STATISTICAL = ("AutoETS", "AutoTheta")
BASELINE_PRODUCER = "leaf_forecasts"  # the stage that writes the baselines' slices of leaf_forecasts
ALL_STATISTICAL = ("AutoETS", "AutoTheta", "AutoARIMA")


def run_baselines(
    t: EventTables, *, statistical: Sequence[str] = DEFAULT_STATISTICAL, n_jobs: int = 1
) -> pl.DataFrame:
    """``leaf_forecasts`` rows of every default baseline for ``t.forecast_tasks``."""
    res = baselines.resolutions_frame(t.prediction_markets, t.market_price_path)
    return run_forecasters(
        baselines.default_forecasters(res, statistical=statistical, n_jobs=n_jobs),
        t.forecast_tasks,
        "leaf_forecasts",
        columns={"producer": BASELINE_PRODUCER},
    )


def run_snapshot(
    snapshot_dir: str | Path,
    spans: Spans = Spans(),
    *,
    statistical: Sequence[str] = DEFAULT_STATISTICAL,
    n_jobs: int = 1,
) -> EventTables:
    """Sources, tasks, baseline forecasts and per-task scores from the snapshot."""
    t = load_snapshot(snapshot_dir, spans)
    ts = build_tasks(t, spans)
    t.forecast_tasks, t.task_outcomes = ts.tasks, ts.outcomes
    t.leaf_forecasts = run_baselines(t, statistical=statistical, n_jobs=n_jobs)
    t.leaf_scores = scoring.score_forecasts(t.forecast_tasks, t.task_outcomes, t.leaf_forecasts)
    return t
