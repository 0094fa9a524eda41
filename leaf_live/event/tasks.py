"""Forecast tasks at cutoffs (LEAF §3.1, §4.1, App. C.1) with frozen input bundles, and their outcomes.

A task is one target x cutoff x horizon x task kind (``series``: the path of values; ``trend3``/``trend5``:
the App. C.1 class; ``event``: P(YES)). Its bundle holds exactly the rows with ``available_at <= cutoff``
(:func:`leaf_live.core.pit.known_by`) that the task may see, serialized as canonical JSON (sorted keys, no
spaces) with its SHA-256; outcomes go to a separate frame (``task_outcomes``) that forecasters never get.

Sampling (the authors' generator in BennyTMT/SEER ``generate_prediction_sample``, which reproduces §4.1's
counts): cutoff days run every :data:`~leaf_live.event.catalog.CUTOFF_STEP_DAYS` calendar days from the span
start; the series is restricted to the span, and a cutoff is used when it is a session of the target
(markets), has ``lookback`` steps of the span before it and ``h`` steps of the span after it.

* Markets (daily closes): cutoff = the session close of day T (16:00 / 17:00 New York, ``available_at`` of the
  bar); lookback = the closes of sessions T-14..T (15 values, as in the authors' samples); horizon h = the
  next h sessions. Trend: ROC = (x_{T+h} - x_T) / x_T (App. C.1: x_T the last observed close, x_{T+h} the
  close h sessions later).
* Mid caps (monthly): cutoff = the last session of month m; lookback = the sessions after the last session of
  month m-3 (3 months); horizon = the last session of month m+h (3 or 6 months); ROC as above, +/-5% / +/-15%.
  A month counts only when the series reaches into the following month (so it is complete).
* Weather / electricity (hourly): cutoff = local midnight ending day d in the target's time zone; lookback =
  the 336 hourly values of the 14 days before; horizon = the next h x 24 values. A gap of at most
  :data:`MAX_FILL_HOURS` hours is filled by linear interpolation (the bundle lists the filled hours; a filled
  value is knowable when the next real observation is), e.g. the hour a daylight-saving fall-back leaves
  empty in the Open-Meteo archive; windows with longer gaps give no task. Trend: weather dT = min over the
  horizon hours - min over the last 24 h (the previous day's minimum); electricity dL = max over the horizon -
  max over the last 24 h (daily peaks).
* Events: cutoffs at 100%, 80%, ..., 10% of the time to resolution left: t_f = resolve - f (resolve - open)
  (§4.1), so they exist only once the question has resolved: an event task's ``partition_key`` is its
  question id (series and trend tasks: the UTC cutoff day); the bundle holds the question and the YES-price
  path known by t_f (the last price of each UTC day, plus the latest), ``last_value`` the latest market price
  (NULL when the data has none yet).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event import catalog
from leaf_live.event.catalog import CLASSES_3, CLASSES_5, Target, TrendThresholds

HOURS_PER_DAY = 24
MAX_FILL_HOURS = 2


class TaskError(ValueError):
    """Inputs cannot make tasks (missing columns, bad span); the message names the input and value."""


@dataclass(frozen=True)
class TaskSet:
    tasks: pl.DataFrame  # forecast_tasks rows
    outcomes: pl.DataFrame  # task_outcomes rows

    @staticmethod
    def concat(sets: Sequence[TaskSet]) -> TaskSet:
        ts = [s.tasks for s in sets if s.tasks.height]
        os_ = [s.outcomes for s in sets if s.outcomes.height]
        return TaskSet(
            pl.concat(ts, how="vertical") if ts else empty_frame("forecast_tasks"),
            pl.concat(os_, how="vertical") if os_ else empty_frame("task_outcomes"),
        )


# ------------------------------------------------------------------------------------------------
# labels and bundles
# ------------------------------------------------------------------------------------------------


def trend_label(change: float, th: TrendThresholds, n_classes: int) -> str:
    """App. C.1 class of a change: 5 classes Strong Up (> strong), Up (neutral, strong], Neutral [-neutral,
    neutral], Down [-strong, -neutral), Strong Down (< -strong); 3 classes Up / Neutral / Down at +/-neutral.
    """
    if n_classes == 3:
        return "Up" if change > th.neutral else ("Down" if change < -th.neutral else "Neutral")
    if n_classes != 5:
        raise TaskError(f"n_classes must be 3 or 5, got {n_classes}")
    if change > th.strong:
        return "Strong Up"
    if change > th.neutral:
        return "Up"
    if change >= -th.neutral:
        return "Neutral"
    if change >= -th.strong:
        return "Down"
    return "Strong Down"


def classes_for(kind: str) -> tuple[str, ...]:
    return CLASSES_3 if kind == "trend3" else CLASSES_5


def freeze_bundle(obj: dict) -> tuple[str, str]:
    """Canonical JSON text of a bundle (sorted keys, compact separators, timestamps as ISO strings) and its
    SHA-256 hex digest: the exact bytes a forecaster is given and the hash stored with its forecast."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default, allow_nan=False)
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_default(v: object) -> str:
    if isinstance(v, datetime):
        return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    raise TypeError(f"not JSON serializable: {v!r}")


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _task_id(domain: str, target: str, kind: str, horizon: str, cutoff: datetime) -> str:
    return f"{domain}/{target}/{kind}/{horizon}/{_iso(cutoff)}"


def case_day_of(case_days: Sequence[str] = (catalog.SEER_CASE_DAY,)) -> pl.Expr:
    """Polars expression on ``task_id`` / ``domain`` columns: the cutoff day (``YYYY-MM-DD``, UTC) of a
    large-cap task whose cutoff falls on one of ``case_days`` (recorded case days, e.g. the SEER case's
    2026-03-25; ``pipeline.Spans.case_days``), null for every other task. A case day's 50 stocks are a
    sample §4.1 does not have, so boards and §4.1 counts keep them apart."""
    day = pl.col("task_id").str.split("/").list.last().str.slice(0, 10)
    is_case = (pl.col("domain") == "large_cap") & day.is_in(list(case_days))
    return pl.when(is_case).then(day).otherwise(pl.lit(None, pl.Utf8))


class _Builder:
    """Accumulates task and outcome rows; one bundle per (target, cutoff) shared by its tasks."""

    def __init__(self) -> None:
        self.tasks: list[dict] = []
        self.outcomes: list[dict] = []

    def add(
        self,
        *,
        domain: str,
        target: str,
        kind: str,
        horizon: str,
        steps: int,
        frequency: str,
        cutoff: datetime,
        target_times: list[datetime],
        last_value: float | None,
        bundle: tuple[str, str],
        max_avail: datetime | None,
        outcome: dict,
        partition: str | None = None,
        last_value_age_days: float | None = None,
    ) -> None:
        tid = _task_id(domain, target, kind, horizon, cutoff)
        day = partition or cutoff.astimezone(UTC).strftime("%Y-%m-%d")  # the cutoff day unless given
        self.tasks.append(
            {
                "partition_key": day,
                "task_id": tid,
                "domain": domain,
                "target_id": target,
                "task_kind": kind,
                "horizon": horizon,
                "horizon_steps": steps,
                "frequency": frequency,
                "cutoff": cutoff,
                "target_times": target_times,
                "last_value": last_value,
                "last_value_age_days": last_value_age_days,
                "bundle": bundle[0],
                "bundle_hash": bundle[1],
                "max_input_available_at": max_avail,
                "available_at": cutoff,
            }
        )
        self.outcomes.append(
            {
                "partition_key": day,
                "task_id": tid,
                "actual": None,
                "reference": None,
                "change": None,
                "label": None,
                "outcome": None,
                **outcome,
            }
        )

    def result(self) -> TaskSet:
        if not self.tasks:
            return TaskSet(empty_frame("forecast_tasks"), empty_frame("task_outcomes"))
        t = pl.DataFrame(self.tasks, schema=empty_frame("forecast_tasks").schema)
        o = pl.DataFrame(self.outcomes, schema=empty_frame("task_outcomes").schema)
        return TaskSet(conform("forecast_tasks", t), conform("task_outcomes", o))


def _cutoff_days(start: date, end: date, step: int) -> list[date]:
    return [start + timedelta(days=k) for k in range(0, (end - start).days + 1, step)]


# ------------------------------------------------------------------------------------------------
# markets: daily closes
# ------------------------------------------------------------------------------------------------


def market_tasks(
    prices: pl.DataFrame,
    domain: str,
    symbols: Sequence[str],
    start: date,
    end: date,
    *,
    series_horizons: Sequence[int] = catalog.SERIES_HORIZONS_DAYS,
    trend_horizons: Sequence[int] | None = None,
    lookback: int = catalog.LOOKBACK_DAYS,
    step_days: int = catalog.CUTOFF_STEP_DAYS,
) -> TaskSet:
    """Series and trend tasks on daily closes for ``symbols`` over the span ``[start, end]`` (module doc).

    ``prices``: ``market_prices`` rows (symbol, session_date, close, available_at). ``trend_horizons``
    defaults to 1, 2, 3, 7 sessions for large caps and 3, 7 otherwise. Raises :class:`TaskError` for missing
    columns or an unknown domain."""
    pit.require_columns(
        prices, ["symbol", "session_date", "close", "available_at"], "market_prices", TaskError
    )
    if domain not in catalog.TREND_THRESHOLDS:
        raise TaskError(f"domain {domain!r} has no trend thresholds")
    th = catalog.TREND_THRESHOLDS[domain]
    if trend_horizons is None:
        trend_horizons = (
            (*catalog.LARGE_CAP_EXTRA_TREND_HORIZONS_DAYS, *series_horizons)
            if domain == "large_cap"
            else tuple(series_horizons)
        )
    b = _Builder()
    days = set(_cutoff_days(start, end, step_days))
    span = prices.filter(pl.col("session_date").is_between(start, end)).sort("symbol", "session_date")
    for sym in symbols:
        s = span.filter(pl.col("symbol") == sym)
        if s.height == 0:
            continue
        dates = s["session_date"].to_list()
        closes = s["close"].to_list()
        avail = s["available_at"].to_list()
        for t, d in enumerate(dates):
            if d not in days or t < lookback:
                continue
            cutoff = avail[t]
            seen = pit.known_by(s, cutoff).tail(lookback + 1)  # the rows a forecaster may see, T-14..T
            bundle = freeze_bundle(
                {
                    "domain": domain,
                    "target": sym,
                    "cutoff": cutoff,
                    "frequency": "session",
                    "unit": "USD",
                    "series": [
                        [dd.isoformat(), float(c)] for dd, c in zip(seen["session_date"], seen["close"])
                    ],
                }
            )
            last = float(seen["close"][-1])
            max_av = seen["available_at"].max()
            for h in sorted(set(series_horizons) | set(trend_horizons)):
                if t + h >= len(dates):
                    continue
                tt = avail[t + 1 : t + h + 1]
                fut = [float(c) for c in closes[t + 1 : t + h + 1]]
                done = avail[t + h]
                if h in series_horizons:
                    b.add(
                        domain=domain,
                        target=sym,
                        kind="series",
                        horizon=f"{h}d",
                        steps=h,
                        frequency="session",
                        cutoff=cutoff,
                        target_times=tt,
                        last_value=last,
                        bundle=bundle,
                        max_avail=max_av,
                        outcome={"actual": fut, "reference": last, "available_at": done},
                    )
                if h in trend_horizons:
                    roc = (fut[-1] - last) / last
                    for n, kind in ((3, "trend3"), (5, "trend5")):
                        b.add(
                            domain=domain,
                            target=sym,
                            kind=kind,
                            horizon=f"{h}d",
                            steps=h,
                            frequency="session",
                            cutoff=cutoff,
                            target_times=[tt[-1]],
                            last_value=last,
                            bundle=bundle,
                            max_avail=max_av,
                            outcome={
                                "actual": [fut[-1]],
                                "reference": last,
                                "change": roc,
                                "label": trend_label(roc, th, n),
                                "available_at": done,
                            },
                        )
    return b.result()


def midcap_tasks(
    prices: pl.DataFrame,
    symbols: Sequence[str],
    first_month: date,
    last_month: date,
    *,
    horizons_months: Sequence[int] = catalog.MID_CAP_HORIZONS_MONTHS,
    lookback_months: int = catalog.MID_CAP_LOOKBACK_MONTHS,
    domain: str = "mid_cap",
) -> TaskSet:
    """Monthly trend tasks for mid caps over the month span ``[first_month, last_month]`` (module doc): cutoff
    months m with m - lookback >= first_month and m + h <= last_month. Raises :class:`TaskError` for missing
    columns."""
    pit.require_columns(
        prices, ["symbol", "session_date", "close", "available_at"], "market_prices", TaskError
    )
    th = catalog.TREND_THRESHOLDS[domain]
    b = _Builder()
    m0, m1 = pit.month_index(first_month), pit.month_index(last_month)
    for sym in symbols:
        s = prices.filter(pl.col("symbol") == sym).sort("session_date")
        if s.height == 0:
            continue
        s = s.with_columns(
            (
                pl.col("session_date").dt.year().cast(pl.Int64) * 12 + pl.col("session_date").dt.month() - 1
            ).alias("mk")
        )
        complete_through = s["mk"].max() - 1  # a month is complete when the series reaches the next one
        month_end = s.group_by("mk").agg(pl.all().sort_by("session_date").last()).sort("mk")
        ends = {r["mk"]: r for r in month_end.iter_rows(named=True)}
        for m in range(m0 + lookback_months, m1 + 1):
            if m not in ends or (m - lookback_months) not in ends or m > complete_through:
                continue
            cut = ends[m]
            cutoff = cut["available_at"]
            floor_date = ends[m - lookback_months]["session_date"]
            seen = pit.known_by(s, cutoff).filter(pl.col("session_date") > floor_date)
            bundle = freeze_bundle(
                {
                    "domain": domain,
                    "target": sym,
                    "cutoff": cutoff,
                    "frequency": "session",
                    "unit": "USD",
                    "series": [
                        [dd.isoformat(), float(c)] for dd, c in zip(seen["session_date"], seen["close"])
                    ],
                }
            )
            last = float(cut["close"])
            for h in horizons_months:
                if m + h > m1 or m + h > complete_through or (m + h) not in ends:
                    continue
                tgt = ends[m + h]
                roc = (float(tgt["close"]) - last) / last
                for n, kind in ((3, "trend3"), (5, "trend5")):
                    b.add(
                        domain=domain,
                        target=sym,
                        kind=kind,
                        horizon=f"{h}mo",
                        steps=int(
                            s.filter(
                                pl.col("session_date").is_between(
                                    cut["session_date"], tgt["session_date"], closed="right"
                                )
                            ).height
                        ),
                        frequency="session",
                        cutoff=cutoff,
                        target_times=[tgt["available_at"]],
                        last_value=last,
                        bundle=bundle,
                        max_avail=seen["available_at"].max(),
                        outcome={
                            "actual": [float(tgt["close"])],
                            "reference": last,
                            "change": roc,
                            "label": trend_label(roc, th, n),
                            "available_at": tgt["available_at"],
                        },
                    )
    return b.result()


# ------------------------------------------------------------------------------------------------
# hourly: weather and electricity
# ------------------------------------------------------------------------------------------------


def hourly_tasks(
    values: pl.DataFrame,
    domain: str,
    targets: Sequence[Target],
    start: date,
    end: date,
    *,
    target_col: str,
    time_col: str,
    value_col: str,
    horizons_days: Sequence[int] = catalog.SERIES_HORIZONS_DAYS,
    lookback_days: int = catalog.LOOKBACK_DAYS,
    step_days: int = catalog.CUTOFF_STEP_DAYS,
) -> TaskSet:
    """Series and trend tasks on hourly values (weather: ``weather_hourly`` with city/ts/temperature_c;
    electricity: ``electricity_load`` with area/interval_start/load_mw) over local days ``[start, end]``.

    Cutoff days d = start + step k with d - (lookback - 1) >= start and d + h <= end; windows must be
    complete. Trend change: min (weather) or max (electricity) over the horizon minus the same over the last
    24 h. Raises :class:`TaskError` for missing columns or a domain other than weather / electricity."""
    pit.require_columns(values, [target_col, time_col, value_col, "available_at"], domain, TaskError)
    if domain not in ("weather", "electricity"):
        raise TaskError(f"hourly tasks are for weather or electricity, got {domain!r}")
    th = catalog.TREND_THRESHOLDS[domain]
    agg = min if domain == "weather" else max
    unit = "degC" if domain == "weather" else "MW"
    b = _Builder()
    n_back = lookback_days * HOURS_PER_DAY
    for tgt in targets:
        s = fill_short_gaps(
            values.filter(pl.col(target_col) == tgt.target_id).sort(time_col), time_col, value_col
        )
        if s.height == 0:
            continue
        zone = ZoneInfo(tgt.timezone)
        times = s[time_col].to_list()
        vals = s[value_col].to_list()
        index = {t: i for i, t in enumerate(times)}
        for d in _cutoff_days(start, end, step_days):
            if (d - start).days < lookback_days - 1:
                continue
            cutoff = datetime.combine(d + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
            first = cutoff - timedelta(hours=n_back)
            i0 = index.get(first)
            if (
                i0 is None
                or i0 + n_back > len(times)
                or times[i0 + n_back - 1] != cutoff - timedelta(hours=1)
            ):
                continue  # lookback incomplete
            seen = pit.known_by(s.slice(i0, n_back), cutoff)
            if seen.height != n_back:
                continue
            bundle = freeze_bundle(
                {
                    "domain": domain,
                    "target": tgt.target_id,
                    "cutoff": cutoff,
                    "frequency": "hour",
                    "unit": unit,
                    "timezone": tgt.timezone,
                    "series": [[_iso(t), float(v)] for t, v in zip(seen[time_col], seen[value_col])],
                    "filled_hours": [_iso(t) for t, f in zip(seen[time_col], seen["filled"]) if f],
                }
            )
            back = [float(v) for v in seen[value_col]]
            last = back[-1]
            ref = agg(back[-HOURS_PER_DAY:])
            for h in horizons_days:
                if (d + timedelta(days=h)) > end:
                    continue
                n_f = h * HOURS_PER_DAY
                j = i0 + n_back
                if (
                    j + n_f > len(times)
                    or times[j + n_f - 1] != cutoff + timedelta(hours=n_f - 1)
                    or times[j] != cutoff
                ):
                    continue  # horizon incomplete
                fut = [float(v) for v in vals[j : j + n_f]]
                tt = times[j : j + n_f]
                done = s["available_at"][j + n_f - 1]
                b.add(
                    domain=domain,
                    target=tgt.target_id,
                    kind="series",
                    horizon=f"{h}d",
                    steps=n_f,
                    frequency="hour",
                    cutoff=cutoff,
                    target_times=tt,
                    last_value=last,
                    bundle=bundle,
                    max_avail=seen["available_at"].max(),
                    outcome={"actual": fut, "reference": ref, "available_at": done},
                )
                change = agg(fut) - ref
                for n, kind in ((3, "trend3"), (5, "trend5")):
                    b.add(
                        domain=domain,
                        target=tgt.target_id,
                        kind=kind,
                        horizon=f"{h}d",
                        steps=n_f,
                        frequency="hour",
                        cutoff=cutoff,
                        target_times=tt,
                        last_value=last,
                        bundle=bundle,
                        max_avail=seen["available_at"].max(),
                        outcome={
                            "actual": [agg(fut)],
                            "reference": ref,
                            "change": change,
                            "label": trend_label(change, th, n),
                            "available_at": done,
                        },
                    )
    return b.result()


def fill_short_gaps(
    s: pl.DataFrame, time_col: str, value_col: str, max_gap: int = MAX_FILL_HOURS
) -> pl.DataFrame:
    """One target's hourly rows on a complete hourly grid: gaps of at most ``max_gap`` hours are filled by
    linear interpolation (``filled`` = True, ``available_at`` = that of the next real row), longer gaps stay
    missing. Returns ``time_col``, ``value_col``, ``available_at``, ``filled``."""
    if s.height == 0:
        return s.select(time_col, value_col, "available_at").with_columns(pl.lit(False).alias("filled"))
    grid = pl.DataFrame(
        {
            time_col: (
                pl.datetime_range(
                    s[time_col].min(), s[time_col].max(), "1h", eager=True, time_zone="UTC"
                ).cast(s.schema[time_col])
            )
        }
    )
    f = grid.join(s.select(time_col, value_col, "available_at"), on=time_col, how="left").sort(time_col)
    miss = f[value_col].is_null()
    run = (miss != miss.shift(1)).cum_sum()
    run_len = pl.DataFrame({"run": run, "miss": miss}).with_columns(pl.len().over("run").alias("n"))["n"]
    fill = miss & (run_len <= max_gap)
    f = f.with_columns(
        pl.col(value_col).interpolate().alias("_interp"),
        pl.col("available_at").fill_null(strategy="backward").alias("_next_av"),
        fill.alias("filled"),
    )
    f = f.with_columns(
        pl.when(pl.col("filled")).then(pl.col("_interp")).otherwise(pl.col(value_col)).alias(value_col),
        pl.when(pl.col("filled"))
        .then(pl.col("_next_av"))
        .otherwise(pl.col("available_at"))
        .alias("available_at"),
    )
    return f.filter(pl.col(value_col).is_not_null()).select(time_col, value_col, "available_at", "filled")


# ------------------------------------------------------------------------------------------------
# events
# ------------------------------------------------------------------------------------------------


# A market price older than this at a cutoff is not "the price at the cutoff" (issue 16): a week is the
# cadence of the question retrieval (weekly, Monday) and of ForecastBench's question-set freezes, so an
# older price predates at least one cycle of news the bundle's events may hold.
PRICE_MAX_AGE_DAYS = 7.0


def price_age_days(cutoff: datetime, observed_at: datetime | None) -> float | None:
    """Age in days (float) of a price observed at ``observed_at`` at the instant ``cutoff`` (both tz-aware);
    None when there is no price. Raises :class:`ValueError` for a naive time (``pit.to_utc``)."""
    if observed_at is None:
        return None
    return (pit.to_utc(cutoff) - pit.to_utc(observed_at)).total_seconds() / 86400.0


def event_tasks(
    questions: pl.DataFrame,
    path: pl.DataFrame,
    *,
    categories: Sequence[str] = catalog.EVENT_CATEGORIES,
    fractions: Sequence[float] = catalog.EVENT_CUTOFF_FRACTIONS,
) -> TaskSet:
    """Event tasks at the §4.1 cutoffs for resolved questions of ``categories`` with an open time.

    ``questions``: ``prediction_markets`` rows; ``path``: ``market_price_path`` rows. The bundle of a cutoff
    holds the question text, background, category, and the YES prices known by the cutoff (last per UTC day
    plus the latest), and the last price's observation time and age (``last_price_age_days``, cutoff minus
    observed_at in days; ``last_price_stale`` when older than :data:`PRICE_MAX_AGE_DAYS`: it is then the last
    price known by the cutoff, not the price at it); the age is also ``forecast_tasks.last_value_age_days``.

    Point in time covers the question itself (issue 16): a cutoff before the question's stored
    ``available_at`` (the question set's publication, for ForecastBench questions) gets no task, since the
    text and background as of that cutoff are not recorded (a market's description can gain clarifications
    later); the question's ``available_at`` enters ``max_input_available_at`` beside the prices', so the
    blocking check sees every component. Raises :class:`TaskError` for missing columns."""
    pit.require_columns(
        questions,
        ["question_id", "question", "category", "open_at", "resolve_at", "available_at"],
        "prediction_markets",
        TaskError,
    )
    pit.require_columns(
        path, ["question_id", "observed_at", "price", "kind", "available_at"], "market_price_path", TaskError
    )
    b = _Builder()
    qs = questions.filter(
        pl.col("category").is_in(list(categories)),
        pl.col("open_at").is_not_null(),
        pl.col("resolve_at").is_not_null(),
        pl.col("resolve_at") > pl.col("open_at"),
    )
    path = path.sort("question_id", "available_at", "observed_at")
    res = path.filter(pl.col("kind") == "resolution")
    outcome = {r["question_id"]: r for r in res.iter_rows(named=True)}
    prices = path.filter(pl.col("kind") != "resolution")
    by_q = {k[0]: g for k, g in prices.group_by("question_id")}
    for q in qs.sort("question_id").iter_rows(named=True):
        qid = q["question_id"]
        if qid not in outcome:
            continue
        o, r = q["open_at"], q["resolve_at"]
        qp = by_q.get(qid, prices.clear())
        for f in fractions:
            cutoff = r - (r - o) * f
            if q["available_at"] > cutoff:
                continue  # the question text is not known by this cutoff: no bundle, no task
            seen = pit.known_by(qp, cutoff)
            daily = (
                seen.with_columns(pl.col("available_at").dt.date().alias("_d"))
                .group_by("_d", maintain_order=True)
                .last()
                .drop("_d")
            )
            last = float(seen["price"][-1]) if seen.height else None
            seen_at = seen["observed_at"][-1] if seen.height else None
            age = price_age_days(cutoff, seen_at)
            bundle = freeze_bundle(
                {
                    "domain": "event",
                    "target": qid,
                    "cutoff": cutoff,
                    "frequency": "event",
                    "question": q["question"],
                    "question_available_at": q["available_at"],
                    "background": q.get("background"),
                    "category": q["category"],
                    "url": q.get("url"),
                    "open_at": o,
                    "series": [[_iso(t), float(p)] for t, p in zip(daily["observed_at"], daily["price"])],
                    "last_price": last,
                    "last_price_observed_at": seen_at,
                    "last_price_age_days": age,
                    "last_price_stale": None if age is None else age > PRICE_MAX_AGE_DAYS,
                }
            )
            oc = outcome[qid]
            b.add(
                domain="event",
                target=qid,
                kind="event",
                horizon=f"{round(f * 100)}%",
                steps=1,
                frequency="event",
                cutoff=cutoff,
                target_times=[r],
                last_value=last,
                bundle=bundle,
                max_avail=max([q["available_at"], *seen["available_at"].to_list()]),
                partition=qid,
                last_value_age_days=age,
                outcome={
                    "outcome": float(oc["price"]),
                    "actual": [float(oc["price"])],
                    "available_at": oc["available_at"],
                },
            )
    return b.result()


def label_shares(outcomes: pl.DataFrame, tasks: pl.DataFrame, kind: str = "trend5") -> pl.DataFrame:
    """Share (%) of each trend class among ``kind`` tasks per (domain, horizon) (App. C.1 Table 6)."""
    t = (
        tasks.filter(pl.col("task_kind") == kind)
        .select("task_id", "domain", "horizon")
        .join(outcomes.select("task_id", "label"), on="task_id")
    )
    n = t.group_by("domain", "horizon").len().rename({"len": "n"})
    return (
        t.group_by("domain", "horizon", "label")
        .len()
        .join(n, on=["domain", "horizon"])
        .with_columns((100.0 * pl.col("len") / pl.col("n")).alias("share_pct"))
        .sort("domain", "horizon", "label")
    )


def bundle_leaks(tasks: pl.DataFrame) -> pl.DataFrame:
    """Tasks whose bundle holds a row knowable after the cutoff (``max_input_available_at > cutoff``): the
    condition a blocking asset check refuses. Empty when every bundle is point-in-time clean."""
    return tasks.filter(pl.col("max_input_available_at") > pl.col("cutoff"))
