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
* events: every resolved question of the three C.2.5 categories with an open time;
* recorded case days (:attr:`Spans.case_days`, default the SEER case's 2026-03-25): large-cap tasks of every
  stock of the case (:data:`~leaf_live.event.catalog.SEER_BASKET`, 50: the 30 of App. C.2.1 and 20 more) at
  that day's cutoff only, so every stock of the recorded events has its tasks and with-events bundles.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from leaf_live.core.forecaster import run_forecasters
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event import baselines, catalog, scoring, tasks
from leaf_live.event.sources.electricity import SnapshotLoad
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.prediction_markets import SnapshotPredictionMarkets
from leaf_live.event.sources.weather import SnapshotWeather

# AutoARIMA is opt-in: on the snapshot's ~1,700 task series it costs about 5 minutes on 2 shared cores (daily
# 15-close fits ~0.1 s each, hourly season-24 fits ~0.5 s), ETS + Theta together under a minute.
DEFAULT_STATISTICAL = ("AutoETS", "AutoTheta")
BASELINE_PRODUCER = "leaf_forecasts"  # the stage that writes the baselines' slices of leaf_forecasts
ALL_STATISTICAL = ("AutoETS", "AutoTheta", "AutoARIMA")

# LEAF Table 9's "before" span (cutoffs before the models' training cut-offs, Jan 2, 2023 - Jun 2, 2024); the
# snapshot's yfinance_2000_2024-03 closes end 2024-03-08, so the span's tasks end there
LIVING_BEFORE = (date(2023, 1, 2), date(2024, 6, 2))
LIVING_LARGE_CAP_HORIZONS = (1, 2)  # Table 9: large caps short term 1D / 2D, mid caps long term 3M / 6M


@dataclass(frozen=True)
class Spans:
    """Task spans (module doc): cutoff days of large caps and commodities (``markets``), weather and
    electricity, and the month span of mid caps (first days of months). Every bound is inclusive."""

    markets: tuple[date, date] = (date(2025, 10, 1), date(2026, 1, 31))
    mid_cap_months: tuple[date, date] = (date(2024, 10, 1), date(2026, 3, 1))
    weather: tuple[date, date] = (date(2025, 10, 1), date(2026, 1, 31))
    electricity: tuple[date, date] = (date(2018, 12, 1), date(2019, 3, 31))
    case_days: tuple[date, ...] = (date.fromisoformat(catalog.SEER_CASE_DAY),)
    living_before: tuple[date, date] = LIVING_BEFORE

    def __post_init__(self) -> None:
        if not all(isinstance(d, date) for d in self.case_days):
            raise ValueError(f"span case_days={self.case_days!r}: expected dates")
        for name in ("markets", "mid_cap_months", "weather", "electricity", "living_before"):
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
# a case day's tasks read its 14-session look-back (28 calendar days hold it) and 7 sessions after it
CASE_BEFORE, CASE_AFTER = timedelta(days=28), timedelta(days=14)
# the living-data "before" span reads the mid caps' 3-month look-back before it, their 6-month horizon after
LIVING_MARGIN_BEFORE, LIVING_MARGIN_AFTER = timedelta(days=100), timedelta(days=190)


def source_days(spans: Spans = Spans()) -> dict[str, tuple[date, date]]:
    """Days (UTC partition days) each source table must hold for the task spans: ``market_prices`` (markets
    and mid caps), ``weather_hourly``, ``electricity_load``."""
    m = SOURCE_MARGIN
    lo = [
        spans.markets[0],
        spans.mid_cap_months[0],
        spans.living_before[0] - LIVING_MARGIN_BEFORE,
        *(d - CASE_BEFORE for d in spans.case_days),
    ]
    hi = [
        spans.markets[1],
        spans.living_before[1] + LIVING_MARGIN_AFTER,
        spans.mid_cap_months[1] + MID_CAP_TAIL,
        *(d + CASE_AFTER for d in spans.case_days),
    ]
    return {
        "market_prices": (min(lo) - m, max(hi) + m),
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
    cases = {f"case:{d.isoformat()}": (d, d) for d in spans.case_days}
    return {
        **cases,
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
    for d in spans.case_days:
        if wanted(f"case:{d.isoformat()}"):
            sets.append(case_day_tasks(prices, d))
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
    ts = _unique_tasks(tasks.TaskSet.concat(sets))
    if want is None:
        return ts
    return tasks.TaskSet(
        ts.tasks.filter(pl.col("partition_key").is_in(list(want))),
        ts.outcomes.filter(pl.col("partition_key").is_in(list(want))),
    )


def case_day_tasks(
    prices: pl.DataFrame, day: date, symbols: Sequence[str] = catalog.SEER_BASKET
) -> tasks.TaskSet:
    """Large-cap series and trend tasks (1/2/3/7 sessions) of ``symbols`` whose cutoff is the close of ``day``
    (a recorded case's cutoff, :attr:`Spans.case_days`), from ``market_prices`` rows; a stock without the
    14-session look-back or the horizon's sessions gets none for that horizon."""
    ts = tasks.market_tasks(prices, "large_cap", list(symbols), day - CASE_BEFORE, day + CASE_AFTER)
    on_day = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date() == day
    t = ts.tasks.filter(on_day)
    return tasks.TaskSet(t, ts.outcomes.filter(pl.col("task_id").is_in(t["task_id"].to_list())))


def living_before_tasks(prices: pl.DataFrame, before: tuple[date, date] = LIVING_BEFORE) -> tasks.TaskSet:
    """Trend tasks (trend3 and trend5) of LEAF Table 9's "before" span from ``market_prices`` rows: the 30
    App. C.2.1 large caps at 1 / 2 sessions (every-other-day cutoffs, 14-session look-back) and the 40 mid
    caps at 3 / 6 months (month-end cutoffs, 3 months of history), every cutoff day (New York) inside
    ``before`` (inclusive). Built the same way as the live span's tasks (:func:`tasks.market_tasks`,
    :func:`tasks.midcap_tasks`), so a model's before/after accuracies compare like with like. Stocks or
    horizons the data does not cover get no task; empty frames when ``prices`` holds none of the span."""
    lo, hi = before
    large = tasks.market_tasks(
        prices,
        "large_cap",
        [x.symbol for x in catalog.LARGE_CAPS],
        lo - CASE_BEFORE,
        hi + CASE_AFTER,
        series_horizons=(),
        trend_horizons=LIVING_LARGE_CAP_HORIZONS,
    )
    k0 = _month_index(lo) - catalog.MID_CAP_LOOKBACK_MONTHS
    k1 = _month_index(hi) + max(catalog.MID_CAP_HORIZONS_MONTHS)
    mid = tasks.midcap_tasks(
        prices,
        [x.symbol for x in catalog.MID_CAPS],
        date(k0 // 12, k0 % 12 + 1, 1),
        date(k1 // 12, k1 % 12 + 1, 1),
    )
    ts = tasks.TaskSet.concat([large, mid])
    inside = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date().is_between(lo, hi)
    t = ts.tasks.filter(inside)
    return tasks.TaskSet(t, ts.outcomes.filter(pl.col("task_id").is_in(t["task_id"].to_list())))


def living_before_scores(
    prices: pl.DataFrame,
    before: tuple[date, date] = LIVING_BEFORE,
    *,
    statistical: Sequence[str] = (),
    n_jobs: int = 1,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(tasks, scores) of the baselines on :func:`living_before_tasks`: the models that need no call
    (last value, historical mean and the ``statistical`` statsforecast models; none by default: on the
    snapshot's ~24,000 before-span tasks AutoETS costs about 28 s and AutoTheta 48 s CPU, docs/benchmarks.md)
    forecast the "before" span's tasks from their frozen bundles and are scored like the live span's
    (``leaf_scores`` rows). No model can have seen a span before its training, so the baselines' before/after
    gap is the span's own difficulty change: the control the LLM rows of Table 9 are read against."""
    ts = living_before_tasks(prices, before)
    if ts.tasks.height == 0:
        return ts.tasks, empty_frame("leaf_scores")
    fcs = [baselines.LastValue(), baselines.HistoricalMean()]
    if statistical:
        fcs.append(baselines.StatsForecastBaselines(statistical, n_jobs=n_jobs))
    rows = run_forecasters(fcs, ts.tasks, "leaf_forecasts", columns={"producer": BASELINE_PRODUCER})
    return ts.tasks, scoring.score_forecasts(ts.tasks, ts.outcomes, rows)


def _unique_tasks(ts: tasks.TaskSet) -> tasks.TaskSet:
    """One task per id: a case day inside the markets span gives the 30 App. C.2.1 stocks' tasks twice (the
    same id, cutoff and bundle); the first is kept."""
    if ts.tasks.height == 0 or ts.tasks["task_id"].n_unique() == ts.tasks.height:
        return ts
    return tasks.TaskSet(
        ts.tasks.unique("task_id", keep="first", maintain_order=True),
        ts.outcomes.unique("task_id", keep="first", maintain_order=True),
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
    syms = [
        t.symbol
        for t in (*catalog.LARGE_CAPS, *catalog.COMMODITIES, *catalog.MID_CAPS, *catalog.RECORDED_CASE_STOCKS)
    ]
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


# ------------------------------------------------------------------------------------------------
# sample counts beside §4.1's, with the reason of every difference
# ------------------------------------------------------------------------------------------------

CURATED_PER_CATEGORY = 10  # C.2.5: 30 questions across the three categories


def curated_questions(
    questions: pl.DataFrame, path: pl.DataFrame, per_category: int = CURATED_PER_CATEGORY
) -> pl.DataFrame:
    """The curated prediction-market subset beside the full resolved set (LEAF C.2.5 uses 30 "trending"
    questions across economy/business, politics/world and tech/AI). Rule: among the questions that resolved
    (a ``resolution`` row in ``path``), the ``per_category`` per category with the most YES-price
    observations (``trade`` / ``freeze`` rows: the most-traded, i.e. trending, markets), ties broken by
    question id. Returns ``question_id, category, n_prices`` (``per_category`` x 3 rows at most)."""
    resolved = path.filter(pl.col("kind") == "resolution").select("question_id").unique()
    n = (
        path.filter(pl.col("kind") != "resolution")
        .group_by("question_id")
        .agg(pl.len().cast(pl.Int64).alias("n_prices"))
    )
    q = (
        questions.filter(pl.col("category").is_in(list(catalog.EVENT_CATEGORIES)))
        .select("question_id", "category")
        .join(resolved, on="question_id")
        .join(n, on="question_id", how="left")
        .with_columns(pl.col("n_prices").fill_null(0))
        .sort(["category", "n_prices", "question_id"], descending=[False, True, False])
    )
    return q.group_by("category", maintain_order=True).head(per_category)


def _paper_keys() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d, h in catalog.PAPER_SAMPLE_COUNTS:
        out.setdefault(d, []).append(h)
    return out


def sample_count_report(
    counts: pl.DataFrame,
    spans: Spans = Spans(),
    *,
    questions: int = 0,
    curated: int = 0,
    event_tasks: int = 0,
) -> list[str]:
    """Lines of sample counts per domain and horizon beside LEAF §4.1's (in brackets), each domain with the
    reason its count differs (or "= §4.1").

    ``counts``: one row per counted task (``domain, horizon, target_id, case``: ``case`` true for tasks of a
    recorded case day, :attr:`Spans.case_days`, which §4.1 does not have and which are reported apart). The
    counted kind per domain is §4.1's: series tasks, the large caps' 1/2-day trend tasks and the mid caps'
    trend tasks (one kind each, ``trend5``). ``questions`` / ``curated`` / ``event_tasks``: resolved
    questions with tasks, the curated subset (:func:`curated_questions`) and their tasks. Reasons come from
    the data: a horizon whose count is short names the targets with fewer tasks than the fullest one
    (``target ours/most``) and the targets with none."""
    expected = {
        "large_cap": [t.target_id for t in catalog.LARGE_CAPS],
        "mid_cap": [t.target_id for t in catalog.MID_CAPS],
        "commodity": [t.target_id for t in catalog.COMMODITIES],
        "weather": [t.target_id for t in catalog.CITIES],
        "electricity": [t.target_id for t in catalog.ELECTRICITY_AREAS],
    }
    lines = []
    main = counts.filter(~pl.col("case")) if counts.height else counts
    for dom, horizons in _paper_keys().items():
        parts, reasons = [], []
        for h in horizons:
            g = main.filter(pl.col("domain") == dom, pl.col("horizon") == h) if main.height else main
            n = g.height
            paper = catalog.PAPER_SAMPLE_COUNTS[(dom, h)]
            parts.append(f"{h} {n} [{paper}]")
            if n == paper:
                continue
            per = dict(g.group_by("target_id").len().iter_rows()) if n else {}
            most = max(per.values()) if per else 0
            missing = [t for t in expected[dom] if t not in per]
            short = [f"{t} {c}/{most}" for t, c in sorted(per.items()) if c < most]
            why = []
            if missing:
                why.append(
                    f"no tasks for {', '.join(missing)} ({len(missing)} of {len(expected[dom])} targets)"
                )
            if short:
                why.append(f"short series: {', '.join(short)}")
            if not why:
                why.append(
                    f"{len(per)} targets x {most} cutoffs = {n} (the span gives {most} cutoffs per target)"
                )
            reasons.append(f"{h}: " + "; ".join(why))
        lines.append(f"  {dom}: " + "   ".join(parts) + ("   = §4.1" if not reasons else ""))
        lines += [f"      why {r}" for r in reasons]
        if dom == "weather" and reasons:
            lines.append(
                f"      (span {spans.weather[0]} .. {spans.weather[1]}: the snapshot's hourly weather)"
            )
        if dom == "electricity" and reasons:
            lines.append(
                f"      (span {spans.electricity[0]} .. {spans.electricity[1]}: EIA-930 files end 2020-09)"
            )
    case = counts.filter(pl.col("case")) if counts.height else counts
    if case.height:
        by = case.group_by("horizon").len().sort("horizon")
        lines.append(
            f"  recorded case days {', '.join(d.isoformat() for d in spans.case_days)} (not in §4.1): "
            + "   ".join(f"{h} {n}" for h, n in by.iter_rows())
            + f" ({case['target_id'].n_unique()} stocks)"
        )
    lines.append(
        f"  event: {questions} resolved questions of the three C.2.5 categories ({event_tasks} tasks at"
        f" the six §4.1 cutoffs on or after the question's publication); curated subset {curated} [30]:"
        f" the {CURATED_PER_CATEGORY} per category"
        " with the most YES-price observations (pipeline.curated_questions); §4.1 gives no event task count"
    )
    return lines
