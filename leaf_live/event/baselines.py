"""Baseline forecasters of the event track, all through the one forecaster contract
(:class:`leaf_live.core.forecaster.Forecaster`: ``model_id`` + ``forecast(tasks) -> leaf_forecasts rows``).

Every forecaster reads only a task's frozen bundle (never its outcome) and issues at the cutoff.

* :class:`LastValue` (``baseline/last-value``, §4.1 LVB): markets repeat the last close; weather and load
  repeat the previous 24 hours across the horizon.
* :class:`HistoricalMean` (``baseline/hist-mean``, §4.1 HMB): markets predict the mean of the look-back
  closes; weather and load the hour-of-day mean over the preceding 14 days (position mod 24 from the cutoff).
* :class:`StatsForecastBaselines`: statsforecast AutoETS, AutoTheta, AutoARIMA (``baseline/auto-ets``,
  ``baseline/auto-theta``, ``baseline/auto-arima``) fitted in ONE ``StatsForecast.forecast`` call per
  frequency over every distinct bundle series, with 80% / 95% prediction intervals stored as the 0.025,
  0.1, 0.9, 0.975 quantiles. Hourly series use season 24 (AutoETS restricted to additive error and season,
  AutoARIMA with the approximation and p, q <= 2, P, Q <= 1, to keep a 336-hour fit near 0.1 s and 0.5 s);
  daily closes season 1 with the default searches.
* For trend tasks every series model answers with its implied class: markets ROC = (yhat_{T+h} - x_T) / x_T;
  weather min(yhat over the horizon) - min(last 24 h); load max(...) - max(...), classed by App. C.1.
* :class:`MarketPrice` (``market/polymarket``): an event task's YES price at the cutoff, where the data has
one.
* :class:`BaseRate` (``baseline/base-rate``): the share of YES among same-category questions resolved before
  the cutoff, (k + 1) / (n + 2) (Laplace; 0.5 with none).
* :class:`Constant` (``baseline/always-0.5``): P(YES) = 0.5, the ForecastBench reference that fixes the
  difficulty-adjusted scale.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event import catalog
from leaf_live.event.tasks import trend_label

QUANTILE_LEVELS = {"0.025": ("lo", 95), "0.1": ("lo", 80), "0.9": ("hi", 80), "0.975": ("hi", 95)}
_TASK_COLS = [
    "task_id",
    "domain",
    "task_kind",
    "horizon",
    "horizon_steps",
    "frequency",
    "cutoff",
    "bundle",
    "bundle_hash",
]


# columns the writing stage sets (the producer slice it owns), as for the macro nowcasts
WRITER_COLUMNS = ("producer",)


def _rows_frame(rows: list[dict]) -> pl.DataFrame:
    """``leaf_forecasts`` rows with ``producer`` NULL: the writing stage stamps it (science never names a
    stage)."""
    if not rows:
        return empty_frame("leaf_forecasts")
    f = pl.DataFrame(
        rows,
        schema={
            "model_id": pl.Utf8,
            "task_id": pl.Utf8,
            "bundle_hash": pl.Utf8,
            "issued_at": pl.Datetime("us", "UTC"),
            "valid": pl.Boolean,
            "invalid_reason": pl.Utf8,
            "point": pl.List(pl.Float64),
            "quantiles": pl.Utf8,
            "predicted_class": pl.Utf8,
            "probability": pl.Float64,
        },
    )
    f = f.with_columns(pl.col("model_id").alias("partition_key"), pl.col("issued_at").alias("available_at"))
    schema = empty_frame("leaf_forecasts").schema
    f = f.with_columns(
        pl.lit(None, dtype=schema[c]).alias(c) for c in schema if c not in f.columns
    )  # LLM-only columns
    return conform("leaf_forecasts", f.select(list(schema)), deferred=WRITER_COLUMNS)


def path_forecasts(
    model_id: str,
    tasks: pl.DataFrame,
    paths: dict[str, np.ndarray],
    quantiles: dict[str, dict[str, np.ndarray]] | None = None,
) -> pl.DataFrame:
    """``leaf_forecasts`` rows of a series model for the series and trend tasks of ``tasks``, from one point
    path per bundle hash (at least the task's ``horizon_steps`` long) and optional quantile paths
    (``{"0.025": path, "0.1": ..., "0.9": ..., "0.975": ...}``); trend tasks get the implied App. C.1 class.
    Tasks whose bundle has no path are left out. The shared tail of every series forecaster here and of the
    foundation models (:mod:`leaf_live.event.tsfm`)."""
    return _rows_frame(_path_rows(model_id, _series_tasks(tasks), paths, quantiles))


def series_inputs(tasks: pl.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, str]]:
    """The distinct bundle series of the series and trend tasks: (bundle hash -> values, bundle hash -> the
    most horizon steps any of its tasks asks, bundle hash -> frequency ``session`` | ``hour``)."""
    ts = _series_tasks(tasks)
    values: dict[str, np.ndarray] = {}
    freq: dict[str, str] = {}
    for t in ts:
        if t["bundle_hash"] not in values:
            values[t["bundle_hash"]] = bundle_values(t["bundle"])
            freq[t["bundle_hash"]] = t["frequency"]
    return values, _max_steps(ts), freq


def _row(model_id: str, task: dict, **kw: object) -> dict:
    return {
        "model_id": model_id,
        "task_id": task["task_id"],
        "bundle_hash": task["bundle_hash"],
        "issued_at": task["cutoff"],
        "valid": True,
        "invalid_reason": None,
        "point": None,
        "quantiles": None,
        "predicted_class": None,
        "probability": None,
        **kw,
    }


def bundle_values(bundle: str) -> np.ndarray:
    """The numeric series of a bundle (``series`` = [[time, value], ...]) as a float array."""
    return np.asarray([v for _, v in json.loads(bundle)["series"]], dtype=float)


def implied_class(task: dict, history: np.ndarray, path: np.ndarray) -> str:
    """App. C.1 class implied by a point path for a trend task (module doc). ``history`` is the bundle series,
    ``path`` the point forecast for the task's horizon steps."""
    domain = task["domain"]
    th = catalog.TREND_THRESHOLDS[domain]
    n = 3 if task["task_kind"] == "trend3" else 5
    if domain == "weather":
        change = float(path.min() - history[-24:].min())
    elif domain == "electricity":
        change = float(path.max() - history[-24:].max())
    else:
        change = float((path[-1] - history[-1]) / history[-1])
    return trend_label(change, th, n)


def _series_tasks(tasks: pl.DataFrame) -> list[dict]:
    pit.require_columns(tasks, _TASK_COLS, "forecast_tasks")
    return (
        tasks.filter(pl.col("task_kind").is_in(["series", "trend3", "trend5"])).select(_TASK_COLS).to_dicts()
    )


def _path_rows(
    model_id: str,
    tasks: Iterable[dict],
    paths: dict[str, np.ndarray],
    quantiles: dict[str, dict[str, np.ndarray]] | None = None,
) -> list[dict]:
    """Rows for series and trend tasks from a point path per bundle hash (long enough for every task)."""
    rows = []
    hist_cache: dict[str, np.ndarray] = {}
    for t in tasks:
        p = paths.get(t["bundle_hash"])
        if p is None:
            continue
        steps = int(t["horizon_steps"])
        path = p[:steps]
        if t["task_kind"] == "series":
            q = None
            if quantiles is not None and t["bundle_hash"] in quantiles:
                q = json.dumps(
                    {k: [float(x) for x in v[:steps]] for k, v in quantiles[t["bundle_hash"]].items()},
                    sort_keys=True,
                )
            rows.append(_row(model_id, t, point=[float(x) for x in path], quantiles=q))
        else:
            if t["bundle_hash"] not in hist_cache:
                hist_cache[t["bundle_hash"]] = bundle_values(t["bundle"])
            rows.append(
                _row(
                    model_id,
                    t,
                    predicted_class=implied_class(t, hist_cache[t["bundle_hash"]], path),
                    point=[float(path[-1])],
                )
            )
    return rows


def _max_steps(tasks: Sequence[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tasks:
        out[t["bundle_hash"]] = max(out.get(t["bundle_hash"], 0), int(t["horizon_steps"]))
    return out


def _naive_forecast(
    model_id: str,
    tasks: pl.DataFrame,
    hourly: Callable[[np.ndarray, int], np.ndarray],
    daily: Callable[[np.ndarray, int], np.ndarray],
) -> pl.DataFrame:
    """Rows of a naive rule applied once per bundle: ``hourly(y, steps)`` or ``daily(y, steps)`` gives the
    path."""
    ts = _series_tasks(tasks)
    steps = _max_steps(ts)
    paths: dict[str, np.ndarray] = {}
    for t in ts:
        h = t["bundle_hash"]
        if h not in paths:
            rule = hourly if t["frequency"] == "hour" else daily
            paths[h] = rule(bundle_values(t["bundle"]), steps[h])
    return _rows_frame(_path_rows(model_id, ts, paths))


def _hour_of_day_means(y: np.ndarray, steps: int) -> np.ndarray:
    k = len(y) // 24 * 24
    profile = y[len(y) - k :].reshape(-1, 24).mean(axis=0)  # hour-of-day means, aligned to the cutoff
    return np.resize(profile, steps)


class LastValue:
    """§4.1 LVB (module doc)."""

    model_id = "baseline/last-value"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return _naive_forecast(
            self.model_id,
            tasks,
            lambda y, n: np.resize(y[-24:], n),  # the previous 24 hours again
            lambda y, n: np.full(n, y[-1]),
        )


class HistoricalMean:
    """§4.1 HMB (module doc)."""

    model_id = "baseline/hist-mean"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return _naive_forecast(self.model_id, tasks, _hour_of_day_means, lambda y, n: np.full(n, y.mean()))


def _sf_models(season: int, which: Sequence[str]) -> list:
    from statsforecast.models import AutoARIMA, AutoETS, AutoTheta

    out = []
    for name in which:
        if name == "AutoETS":
            # hourly: additive error and season, trend chosen by AICc (the full ZZZ search is 3x slower)
            out.append(AutoETS(season_length=season, model="AZA") if season > 1 else AutoETS())
        elif name == "AutoTheta":
            out.append(AutoTheta(season_length=season))
        elif name == "AutoARIMA":
            out.append(
                AutoARIMA(season_length=season, approximation=True, max_p=2, max_q=2, max_P=1, max_Q=1)
                if season > 1
                else AutoARIMA()
            )
        else:
            raise ValueError(f"unknown statsforecast model {name!r}; use AutoETS, AutoTheta, AutoARIMA")
    return out


SF_MODEL_IDS = {
    "AutoETS": "baseline/auto-ets",
    "AutoTheta": "baseline/auto-theta",
    "AutoARIMA": "baseline/auto-arima",
}


def statsforecast_paths(
    series: dict[str, np.ndarray], horizon: int, season: int, models: Sequence[str], n_jobs: int = 1
) -> dict[str, tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]]:
    """One ``StatsForecast.forecast`` call over every series (id -> values) with ``horizon`` steps and 80/95%
    levels. Returns model -> (id -> point path, id -> {quantile: path})."""
    import pandas as pd
    from statsforecast import StatsForecast

    ids = list(series)
    df = pd.DataFrame(
        {
            "unique_id": np.repeat(ids, [len(series[i]) for i in ids]),
            "ds": np.concatenate([np.arange(len(series[i])) for i in ids]),
            "y": np.concatenate([series[i] for i in ids]),
        }
    )
    sf = StatsForecast(models=_sf_models(season, models), freq=1, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fc = sf.forecast(df=df, h=horizon, level=[80, 95])
    fc = pl.from_pandas(fc.reset_index() if "unique_id" not in fc.columns else fc)
    out = {}
    for m in models:
        pts, qs = {}, {}
        for uid, g in fc.group_by("unique_id", maintain_order=True):
            g = g.sort("ds")
            pts[uid[0]] = g[m].to_numpy()
            qs[uid[0]] = {q: g[f"{m}-{side}-{lvl}"].to_numpy() for q, (side, lvl) in QUANTILE_LEVELS.items()}
        out[m] = (pts, qs)
    return out


class StatsForecastBaselines:
    """statsforecast AutoETS / AutoTheta / AutoARIMA over all bundles in one call per frequency (module doc).

    ``forecast`` returns the rows of every model together (a model_id per model); :meth:`forecasters` gives
    one contract object per model for code that wants them separately."""

    model_id = "baseline/statsforecast"

    def __init__(
        self, models: Sequence[str] = ("AutoETS", "AutoTheta", "AutoARIMA"), n_jobs: int = 1
    ) -> None:
        self.models = tuple(models)
        self.n_jobs = n_jobs

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        ts = _series_tasks(tasks)
        steps = _max_steps(ts)
        rows: list[dict] = []
        for freq, season in (("session", 1), ("hour", 24)):
            group = [t for t in ts if t["frequency"] == freq]
            if not group:
                continue
            series = {}
            for t in group:
                if t["bundle_hash"] not in series:
                    series[t["bundle_hash"]] = bundle_values(t["bundle"])
            horizon = max(steps[h] for h in series)
            result = statsforecast_paths(series, horizon, season, self.models, self.n_jobs)
            for m in self.models:
                pts, qs = result[m]
                rows.extend(_path_rows(SF_MODEL_IDS[m], group, pts, qs))
        return _rows_frame(rows)


CONFORMAL_NAIVE = "ConformalNaive"  # the name that opts it in through ``statistical`` (default_forecasters)
CONFORMAL_MAX_WINDOWS = 5


class ConformalNaive:
    """Last value with statsforecast's conformal prediction intervals (``baseline/last-value-conformal``).

    LVB gives no interval; statsforecast's ``ConformalIntervals`` builds one from the model's own errors on
    ``n_windows`` rolling origins inside the look-back (split conformal, Stankeviciute et al. 2021 as
    implemented in statsforecast). Daily series tasks only: the point path is LVB's (the last close repeated,
    statsforecast ``Naive``), the 80% / 95% intervals are stored as the 0.025 / 0.1 / 0.9 / 0.975 quantiles,
    one ``StatsForecast.forecast`` call per horizon with ``n_windows = min(5, (n - 1) // h)`` for the
    shortest series n (15 closes: 5 windows at 1-2 sessions, 4 at 3, 2 at 7). Horizons with fewer than 2
    windows get no row; hourly series (336 hours, 168-hour horizon) have room for 1 window, so none.
    About 0.2 s CPU per 400 series."""

    model_id = "baseline/last-value-conformal"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        import pandas as pd
        from statsforecast import StatsForecast
        from statsforecast.models import Naive
        from statsforecast.utils import ConformalIntervals

        ts = [t for t in _series_tasks(tasks) if t["task_kind"] == "series" and t["frequency"] == "session"]
        rows: list[dict] = []
        for h in sorted({int(t["horizon_steps"]) for t in ts}):
            group = [t for t in ts if int(t["horizon_steps"]) == h]
            series = {t["bundle_hash"]: bundle_values(t["bundle"]) for t in group}
            n_windows = min(CONFORMAL_MAX_WINDOWS, (min(len(y) for y in series.values()) - 1) // h)
            if n_windows < 2:
                continue
            ids = list(series)
            df = pd.DataFrame(
                {
                    "unique_id": np.repeat(ids, [len(series[i]) for i in ids]),
                    "ds": np.concatenate([np.arange(len(series[i])) for i in ids]),
                    "y": np.concatenate([series[i] for i in ids]),
                }
            )
            model = Naive(alias="cn", prediction_intervals=ConformalIntervals(h=h, n_windows=n_windows))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fc = StatsForecast(models=[model], freq=1).forecast(df=df, h=h, level=[80, 95])
            fc = pl.from_pandas(fc.reset_index() if "unique_id" not in fc.columns else fc)
            pts, qs = {}, {}
            for uid, g in fc.group_by("unique_id", maintain_order=True):
                g = g.sort("ds")
                pts[uid[0]] = g["cn"].to_numpy()
                qs[uid[0]] = {
                    q: g[f"cn-{side}-{lvl}"].to_numpy() for q, (side, lvl) in QUANTILE_LEVELS.items()
                }
            rows.extend(_path_rows(self.model_id, group, pts, qs))
        return _rows_frame(rows)


class MarketPrice:
    """The YES price at the cutoff (``last_value`` of an event task), where the data has one."""

    model_id = "market/polymarket"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        pit.require_columns(
            tasks, ["task_id", "task_kind", "cutoff", "bundle_hash", "last_value"], "forecast_tasks"
        )
        ev = tasks.filter(pl.col("task_kind") == "event", pl.col("last_value").is_not_null())
        return _rows_frame(
            [_row(self.model_id, t, probability=float(t["last_value"])) for t in ev.to_dicts()]
        )


class Constant:
    """P(YES) = ``p`` for every event task."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p={p} outside [0, 1]")
        self.p = p
        self.model_id = f"baseline/always-{p:g}"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        ev = tasks.filter(pl.col("task_kind") == "event")
        return _rows_frame([_row(self.model_id, t, probability=self.p) for t in ev.to_dicts()])


class BaseRate:
    """Point-in-time category base rate (module doc).

    ``resolutions``: one row per resolved question with ``category``, ``outcome`` (0/1) and ``available_at``
    (when the outcome became known), e.g. :func:`resolutions_frame`. ``tasks`` must carry ``target_id``
    (question id) and the bundle (for the category)."""

    model_id = "baseline/base-rate"

    def __init__(self, resolutions: pl.DataFrame) -> None:
        pit.require_columns(
            resolutions, ["question_id", "category", "outcome", "available_at"], "resolutions"
        )
        self.res = resolutions.sort("available_at")

    def rate(self, category: str, at: datetime, exclude: str | None = None) -> float:
        known = pit.known_by(self.res, at, strict=True).filter(pl.col("category") == category)
        if exclude is not None:
            known = known.filter(pl.col("question_id") != exclude)
        return (float(known["outcome"].sum()) + 1.0) / (known.height + 2.0)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        ev = tasks.filter(pl.col("task_kind") == "event")
        rows = []
        for t in ev.to_dicts():
            cat = json.loads(t["bundle"]).get("category", "other")
            rows.append(
                _row(self.model_id, t, probability=self.rate(cat, t["cutoff"], exclude=t["target_id"]))
            )
        return _rows_frame(rows)


def resolutions_frame(questions: pl.DataFrame, path: pl.DataFrame) -> pl.DataFrame:
    """(question_id, category, outcome, available_at) of every resolved question: the input of
    :class:`BaseRate`."""
    res = path.filter(pl.col("kind") == "resolution").select(
        "question_id", pl.col("price").alias("outcome"), "available_at"
    )
    return res.join(questions.select("question_id", "category"), on="question_id")


def reusable_rows(
    stored: pl.DataFrame, tasks: pl.DataFrame, model_ids: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split the work of forecasters whose rows depend only on a task's frozen bundle (statsforecast paths).

    ``stored``: ``leaf_forecasts`` rows; ``tasks``: ``forecast_tasks`` rows (``task_id``, ``bundle_hash``);
    ``model_ids``: the models to reuse. Returns ``(reused, todo)``: the stored rows of ``model_ids`` for every
    task whose stored rows of all those models carry its current ``bundle_hash`` (valid or invalid alike), and
    the tasks that still need a forecast (new tasks, changed bundles, a model added). Same columns as the
    inputs; nothing is reused when ``model_ids`` is empty."""
    if not model_ids or stored.is_empty():
        return stored.head(0), tasks
    rows = stored.filter(pl.col("model_id").is_in(list(model_ids)))
    current = rows.join(tasks.select("task_id", "bundle_hash"), on=["task_id", "bundle_hash"], how="semi")
    complete = (
        current.group_by("task_id")
        .agg(pl.col("model_id").n_unique().alias("_n"))
        .filter(pl.col("_n") == len(set(model_ids)))
        .select("task_id")
    )
    return (current.join(complete, on="task_id", how="semi"), tasks.join(complete, on="task_id", how="anti"))


def default_forecasters(
    resolutions: pl.DataFrame,
    *,
    statistical: Sequence[str] = ("AutoETS", "AutoTheta", "AutoARIMA"),
    n_jobs: int = 1,
) -> list:
    """The baselines the main job runs: LVB, HMB, statsforecast models, market price, base rate, always
    0.5; ``"ConformalNaive"`` in ``statistical`` adds :class:`ConformalNaive` (opt-in)."""
    out: list = [LastValue(), HistoricalMean()]
    conformal = CONFORMAL_NAIVE in statistical
    statistical = [s for s in statistical if s != CONFORMAL_NAIVE]
    if statistical:
        out.append(StatsForecastBaselines(statistical, n_jobs=n_jobs))
    if conformal:
        out.append(ConformalNaive())
    out += [MarketPrice(), BaseRate(resolutions), Constant(0.5)]
    return out
