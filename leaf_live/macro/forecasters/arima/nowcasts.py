"""Auto-ARIMA nowcasts (LiveMacroEval App. I): one forecast per nowcast window, issued at the window open,
from the history the vintage preceding the target month holds (:mod:`.histories`), fitted by the AIC grid
(:mod:`.estimator`), converted to the catalog's reporting transformation."""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from functools import partial

import numpy as np
import polars as pl

from leaf_live.core.pit import (
    UTC, et_month_key, et_month_start, month_index, month_start_of_index, period_index, require_columns,
)
from leaf_live.core.sources import SourceError
from leaf_live.core.storage import empty_frame
from leaf_live.macro.catalog import Indicator, get_indicator
from leaf_live.macro.forecasters.arima.estimator import MIN_OBS, P_MAX, Q_MAX, ArimaError, fit_arima, select_order, trend_for_d
from leaf_live.macro.forecasters.arima.histories import (
    _LOG_TCODES, _TCODE_D, AR1_LOG_INDICATORS, SeriesHistory, fred_history, release_history, to_reporting,
)
from leaf_live.macro.nowcasts import build_nowcasts
from leaf_live.macro.sources.fred_md import FredMdClient, wanted_vintage
from leaf_live.macro.windows import target_month, window_open

MODEL_ID = "baseline/auto-arima"

# ------------------------------------------------------------------------------------------------
# one nowcast
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArimaNowcast:
    """One auto-ARIMA nowcast: ``value`` in the reporting unit (None when not issued), ``reason`` why not,
    ``source_variable`` (FRED column or indicator id), ``rationale`` (the fit, the vintage and the gap)."""

    indicator_id: str
    reference_period: date
    issued_at: datetime
    value: float | None
    reason: str | None
    source_variable: str | None
    rationale: str | None


def _spec(ind: Indicator) -> tuple[int, str, bool, bool]:
    """(d, trend, log, ar1_only) for an indicator (App. I)."""
    if ind.id in AR1_LOG_INDICATORS:
        return 0, "c", True, True
    tcode = ind.fred_md_tcode
    if tcode not in _TCODE_D:
        raise ArimaError(f"{ind.id}: transform code {tcode!r} is not supported (1-6)")
    d = _TCODE_D[tcode]
    return d, trend_for_d(d), tcode in _LOG_TCODES, False


def nowcast_one(
    indicator_id: str,
    reference_period: date,
    issued_at: datetime,
    history: SeriesHistory,
    *,
    min_obs: int = MIN_OBS,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
) -> ArimaNowcast:
    """Fit App. I's model on ``history`` and forecast ``reference_period`` (h steps past the last observation),
    converted to the catalog's reporting transformation and checked against the scale guardrail. Never
    raises for data problems: they come back as ``value=None`` with ``reason``."""
    ind = get_indicator(indicator_id)
    quarterly = ind.frequency == "quarterly"
    d, trend, log, ar1 = _spec(ind)
    src = history.source
    var = history.variable or src

    def fail(reason: str) -> ArimaNowcast:
        return ArimaNowcast(indicator_id, reference_period, issued_at, None, reason, var, None)

    n = len(history.levels)
    if n < min_obs:
        return fail(f"only {n} observations in {src} (App. I requires at least {min_obs}); no forecast issued")
    last = history.dates[-1]
    h = period_index(reference_period, quarterly) - period_index(last, quarterly)
    if h < 1:
        return fail(f"{src} already holds {reference_period:%Y-%m} (last observation {last:%Y-%m}); "
                    "a nowcast from it would not be a forecast")
    levels = history.levels
    if log and np.any(levels <= 0):
        k = int(np.argmax(levels <= 0))
        return fail(f"{src}: non-positive level {levels[k]} at {history.dates[k]:%Y-%m} cannot be logged")
    y = np.log(levels) if log else levels
    try:
        if ar1:
            fit = fit_arima(y, 1, 0, 0, "c")
            if not math.isfinite(fit.aic):
                return fail(f"AR(1) on log {src} could not be fitted")
        else:
            _, _, _, fit = select_order(y, d, trend, p_max, q_max)
    except ArimaError as exc:
        return fail(f"ARIMA fit failed on {src}: {exc}")
    path = fit.forecast(int(h))
    fc_levels = np.exp(path) if log else path
    full = np.concatenate([levels, fc_levels])
    try:
        value = to_reporting(ind.transformation, full, len(full) - 1, quarterly=quarterly)
    except ArimaError as exc:
        return fail(str(exc))
    vint = ""
    if history.vintage is not None:
        vint = f", vintage {history.vintage}"
        if history.vintage_gap_months:
            vint += f" (wanted {history.wanted_vintage}, not in the snapshot: {history.vintage_gap_months} months older)"
    model = "AR(1)+const on log level" if ar1 else (
        f"ARIMA({fit.p},{fit.d},{fit.q}) trend={fit.trend}{' on log level' if log else ''}, AIC={fit.aic:.2f}"
    )
    unit = "quarters" if quarterly else "months"
    rationale = (
        f"{model}; {src}{vint}; obs {history.dates[0]:%Y-%m}..{last:%Y-%m} (n={n}"
        f"{f', {history.filled} gaps interpolated' if history.filled else ''}); h={h} {unit}; "
        f"{ind.transformation} = {value:.6g}"
    )
    if not math.isfinite(value):
        return fail(f"forecast is not finite ({value}); {rationale}")
    if not ind.guardrail.check(value):
        return ArimaNowcast(indicator_id, reference_period, issued_at, None,
                            f"forecast {value:.6g} outside the scale guardrail [{ind.guardrail.lo}, {ind.guardrail.hi}]",
                            var, rationale)
    return ArimaNowcast(indicator_id, reference_period, issued_at, float(value), None, var, rationale)


# ------------------------------------------------------------------------------------------------
# batch entry point (the arima_nowcasts asset)
# ------------------------------------------------------------------------------------------------


def arima_nowcasts(
    targets: Sequence[tuple[str, date]],
    *,
    vintages: FredMdClient,
    releases: pl.DataFrame | None = None,
    window_opens_at: Mapping[tuple[str, date], datetime] | None = None,
    partition_key: str | Mapping[tuple[str, date], str] | None = None,
    min_obs: int = MIN_OBS,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
) -> pl.DataFrame:
    """Auto-ARIMA nowcasts (LiveMacroEval App. I) for ``targets`` = ``[(indicator_id, reference_period), ...]``.

    For each target: ``issued_at`` = the window open (``window_opens_at[(id, period)]``, tz-aware; default
    :func:`leaf_live.macro.windows.window_open`, the 25th 00:00 New York of the target month); the
    information month is the target month (the quarter's last month for GDP), or the month of ``issued_at`` if
    that is earlier; the model is fitted on the FRED-MD / FRED-QD vintage immediately preceding it from
    ``vintages`` (a snapshot that lacks it gives the nearest earlier one, gap stated in ``rationale``).
    Indicators not in FRED-MD (ISM PMIs, existing and new home sales) use their first-release history
    (:func:`release_history`) from ``releases`` (the ``releases`` table) up to the same last month, released by
    ``issued_at``; without ``releases`` those targets get an invalid row saying so. The forecast reaches the
    target period ``h`` steps past the last observation and is converted to the reporting transformation.

    Returns a ``nowcasts`` frame (``schemas.NOWCASTS``), one row per target: ``model_id='baseline/auto-arima'``,
    ``value`` in the reporting unit, ``valid``; targets that get no forecast (fewer than ``min_obs``
    observations, no vintage, failed fit, guardrail) are rows with ``valid=False``, ``value`` NULL and
    ``invalid_reason``; ``source_variable`` = the FRED-MD/QD column (``CPIAUCSL``; ``PPIFGS`` in pre-2016
    vintages) or, for first-release histories, the indicator id; ``rationale`` = order, AIC, vintage, sample,
    horizon; ``available_at = issued_at``; ``partition_key`` = ``partition_key`` (one string, or per target) or
    the New York month of ``issued_at``. ``after_release`` is False (mark it with
    :func:`leaf_live.macro.windows.mark_after_release`).

    Raises :class:`ValueError` (unknown indicator, bad period, naive timestamp); data problems never raise,
    they become invalid rows.
    """
    plan = []
    for indicator_id, ref in targets:
        ind = get_indicator(indicator_id)
        tm = target_month(indicator_id, ref)  # validates the period start
        opens = (window_opens_at or {}).get((indicator_id, ref)) if window_opens_at else None
        if opens is None:
            opens = window_open(indicator_id, ref)
        if not isinstance(opens, datetime) or opens.tzinfo is None:
            raise ValueError(f"window_opens_at[{indicator_id!r}, {ref}]={opens!r}: expected a tz-aware datetime")
        opens = opens.astimezone(UTC)
        info_month = min(tm, et_month_start(opens))
        if isinstance(partition_key, str):
            pk = partition_key
        elif partition_key is not None and (indicator_id, ref) in partition_key:
            pk = partition_key[(indicator_id, ref)]
        else:
            pk = et_month_key(opens)
        plan.append((ind, ref, opens, info_month, pk))

    # Vintages needed, read in one pass (snapshot archive), and the release history if any target needs it.
    loaded: dict[str, dict[str, tuple[pl.DataFrame, dict[str, int]]]] = {"md": {}, "qd": {}}
    for kind in ("md", "qd"):
        wanted = set()
        for ind, _, _, info_month, _ in plan:
            if ind.fred_md_column and ind.id not in AR1_LOG_INDICATORS and (ind.frequency == "quarterly") == (kind == "qd"):
                try:
                    wanted.add(vintages.resolve_preceding_vintage(info_month, kind).vintage)
                except SourceError:
                    pass  # reported per target below
        if wanted:
            try:
                loaded[kind] = vintages.load_vintages(sorted(wanted), kind)
            except SourceError:
                loaded[kind] = {}  # each target retries and reports its own error
    rel_error = None
    if releases is None and any(ind.fred_md_column is None or ind.id in AR1_LOG_INDICATORS for ind, *_ in plan):
        rel_error = "no first-release history for indicators outside FRED-MD: pass releases= (the releases table)"

    rows = []
    for ind, ref, opens, info_month, pk in plan:
        kind = "qd" if ind.frequency == "quarterly" else "md"
        try:
            if ind.fred_md_column is not None and ind.id not in AR1_LOG_INDICATORS:
                hist = fred_history(ind, info_month, vintages, loaded=loaded[kind])
            else:
                if rel_error is not None:
                    raise ArimaError(rel_error)
                # the last month the preceding vintage would hold: the month before the vintage's
                last = month_start_of_index(month_index(wanted_vintage(info_month)) - 1)
                hist = release_history(ind, releases, issued_at=opens, last_period=last)
            nc = nowcast_one(ind.id, ref, opens, hist, min_obs=min_obs, p_max=p_max, q_max=q_max)
        except (SourceError, ArimaError, ValueError) as exc:
            var = ind.fred_md_column if ind.id not in AR1_LOG_INDICATORS and ind.fred_md_column else ind.id
            nc = ArimaNowcast(ind.id, ref, opens, None, f"no history: {exc}", var, None)
        rows.append(
            {
                "partition_key": pk,
                "model_id": MODEL_ID,
                "indicator_id": ind.id,
                "reference_period": ref,
                "issued_at": opens,
                "value": nc.value,
                "valid": nc.value is not None,
                "invalid_reason": nc.reason,
                "source_variable": nc.source_variable,
                "rationale": nc.rationale,
                "available_at": opens,
            }
        )
    if not rows:
        return empty_frame("nowcasts")
    frame = pl.DataFrame(rows, schema_overrides={"issued_at": pl.Datetime("us", "UTC"),
                                                 "available_at": pl.Datetime("us", "UTC"),
                                                 "reference_period": pl.Date, "value": pl.Float64})
    return build_nowcasts(frame)


def arima_nowcasts_for_windows(windows: pl.DataFrame, **kwargs) -> pl.DataFrame:
    """:func:`arima_nowcasts` for a ``nowcast_windows`` frame (``indicator_id, reference_period, opens_at,
    partition_key``): one nowcast per window, issued at ``opens_at``, in the window's partition."""
    need = ("indicator_id", "reference_period", "opens_at", "partition_key")
    require_columns(windows, need, "windows")
    targets, opens, pks = [], {}, {}
    for r in windows.select(need).iter_rows(named=True):
        key = (r["indicator_id"], r["reference_period"])
        targets.append(key)
        opens[key] = r["opens_at"]
        pks[key] = r["partition_key"]
    return arima_nowcasts(targets, window_opens_at=opens, partition_key=pks, **kwargs)


class AutoArima:
    """The App. I auto-ARIMA baseline under the forecaster contract (:mod:`leaf_live.core.forecaster`):
    ``forecast(windows)`` = :func:`arima_nowcasts_for_windows` on the FRED-MD/QD ``vintages`` client and the
    ``releases`` table, one window partition (release month) per task chunk, fitted by ``workers`` processes
    (spawned, not forked: polars' and Dagster's threads make a forked child deadlock; 1 = in this process).
    Rows come back in partition order."""

    model_id = MODEL_ID

    def __init__(self, vintages: FredMdClient, releases: pl.DataFrame | None, *, workers: int = 1) -> None:
        self.vintages = vintages
        self.releases = releases
        self.workers = max(1, workers)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        if tasks.height == 0:
            return empty_frame("nowcasts")
        require_columns(tasks, ("partition_key",), "windows")
        fit = partial(arima_nowcasts_for_windows, vintages=self.vintages, releases=self.releases)
        chunks = [g for _, g in tasks.sort("partition_key").group_by("partition_key", maintain_order=True)]
        workers = min(self.workers, len(chunks))
        if workers > 1:
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                frames = list(pool.map(fit, chunks))
        else:
            frames = [fit(c) for c in chunks]
        return pl.concat(frames)
