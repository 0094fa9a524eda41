"""Auto-ARIMA histories (LiveMacroEval App. I "Data and refit cadence"): each indicator's series as seen at
issue time, from the FRED-MD/QD vintage preceding the target month or from first releases.

Data (App. I "Data and refit cadence"; :func:`arima_nowcasts`):

* vintage: the FRED-MD / FRED-QD vintage of the month before the target month (the quarter's last month for
  GDP), or before the month the window opens if that is earlier; in a snapshot without it, the nearest
  earlier vintage (never a later one), the gap written into ``rationale``. The snapshot holds every FRED-MD
  vintage 1999-08 .. 2024-03 plus approximate 2025-03 and 2025-12 vintages, and one FRED-QD vintage
  (~2025-03): real-GDP targets before 2025-Q2 therefore get no forecast (a stated reason); monthly targets
  2025-04 .. 2025-12 fall back to the 2025-03 vintage (up to 8 months older than wanted, forecasts up to
  10 months ahead) and 2026 targets to the 2025-12 vintage. The ragged edge (series not yet updated in the
  vintage) sets each series' own last observation; interior gaps (October 2025 CPI and unemployment, never
  published) are interpolated, log-linearly for log series, and counted in ``rationale``;
* series outside FRED-MD (ISM manufacturing / services PMIs, existing and new home sales): their
  first-release values with release timestamps (the ``releases`` table, or the snapshot's LiveMacroEval
  release calendar, 2009-12 on), restricted to values released by the window open and to reference months
  up to the last month the preceding vintage would hold. These equal the Investing.com calendar histories
  LiveMacroEval's own ARIMA used on every overlapping month (a test checks it) and are point in time:
  new home sales for Sep/Oct 2025 were published only on 2026-01-13 and are not used before. The
  latest-vintage FRED files (e.g. ``HSN1F.csv``) were not used because they carry revised values with no
  publication time. With histories from 2009-12 the 60-observation rule is first met for 2015 targets;
* catalog approximations (see :mod:`leaf_live.macro.catalog`): CPI YoY from seasonally adjusted
  CPIAUCSL (the target is NSA), PPI from FRED-MD's finished-goods WPSFD49207 (called PPIFGS before the
  2016-03 vintage), real PCE from DPCERA3M086SBEA, durable goods from AMDMNOx, retail sales from RETAILx.

Point forecasts are the Kalman-filter predictions (conditional means) in the modelled space; for log codes
the level forecast is ``exp`` of the log forecast (the conditional median; the paper's "forecast back through
the exponential").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import polars as pl

from leaf_live.core.pit import first_per_period, period_index, period_start, require_columns
from leaf_live.core.sources import SourceError
from leaf_live.macro.catalog import Indicator
from leaf_live.macro.forecasters.arima.estimator import ArimaError
from leaf_live.macro.series_vintages import ALIASES, SOURCE_TEXT, VintageStore
from leaf_live.macro.sources.fred_md import wanted_vintage

AR1_LOG_INDICATORS = ("ism_manufacturing", "ism_services")  # App. I: AR(1) on the log level
_LOG_TCODES = (4, 5, 6)
_TCODE_D = {1: 0, 2: 1, 3: 2, 4: 0, 5: 1, 6: 2}


@dataclass(frozen=True)
class SeriesHistory:
    """One indicator's history as seen at issue time: ``dates`` (period starts, consecutive months or
    quarters), ``levels`` (reporting-compatible level units: FRED-MD units, or the catalog's reporting unit
    for release-based histories), ``filled`` (number of interior gaps filled), a ``source`` text for messages
    and the ``variable`` that becomes the nowcast's ``source_variable``; the vintage used, the one wanted and
    the gap in months for FRED-MD/QD histories."""

    dates: list[date]
    levels: np.ndarray
    filled: int
    source: str
    variable: str | None = None  # FRED-MD/QD column, or the indicator id for first-release histories
    vintage: str | None = None
    wanted_vintage: str | None = None
    vintage_gap_months: int = 0


def regular_history(
    dates: Sequence[date], values: Sequence[float | None], *, quarterly: bool, log_fill: bool
) -> tuple[list[date], np.ndarray, int]:
    """Put observations on a consecutive monthly (or quarterly) grid from the first to the last non-missing
    value; interior gaps (e.g. October 2025 CPI, never published because of the shutdown) are filled by
    linear interpolation, of the logs when ``log_fill``. Returns ``(dates, levels, n_filled)``.
    Raises :class:`ArimaError` for duplicate periods or no observations."""
    pairs = [(d, float(v)) for d, v in zip(dates, values) if v is not None and math.isfinite(float(v))]
    if not pairs:
        raise ArimaError("no observations")
    idx = [period_index(d, quarterly) for d, _ in pairs]
    if len(set(idx)) != len(idx):
        raise ArimaError("duplicate observation periods")
    order = np.argsort(idx)
    idx_arr = np.asarray(idx)[order]
    vals = np.asarray([pairs[i][1] for i in order])
    grid = np.arange(idx_arr[0], idx_arr[-1] + 1)
    if log_fill and np.any(vals <= 0):
        log_fill = False
    src = np.log(vals) if log_fill else vals
    filled = np.interp(grid, idx_arr, src)
    out = np.exp(filled) if log_fill else filled
    out[np.searchsorted(grid, idx_arr)] = vals  # observed values exactly as published
    return [period_start(int(k), quarterly) for k in grid], out, len(grid) - len(idx_arr)


def to_reporting(transformation: str, levels: np.ndarray, t: int, *, quarterly: bool = False) -> float:
    """Convert a level path to the catalog's reporting transformation at index ``t`` (App. D Table 2).

    ``levels``: observed levels followed by forecast levels (1-D); ``t``: index of the target period.
    ``level`` -> L_t; ``mom_pct`` -> 100 (L_t / L_{t-1} - 1); ``mom_change`` -> L_t - L_{t-1};
    ``yoy_pct`` -> 100 (L_t / L_{t-12} - 1) (monthly) or L_{t-4} (quarterly); ``qoq_saar_pct`` ->
    100 ((L_t / L_{t-1})^4 - 1). For a log-modelled series with forecast log change D, ``mom_pct`` is
    100 (exp(D) - 1). Raises :class:`ArimaError` for an unknown transformation or too short a path.
    """
    lag = {"level": 0, "mom_pct": 1, "mom_change": 1, "qoq_saar_pct": 1, "yoy_pct": 4 if quarterly else 12}
    if transformation not in lag:
        raise ArimaError(f"transformation={transformation!r}: expected one of {sorted(lag)}")
    k = lag[transformation]
    if t - k < 0 or t >= len(levels):
        raise ArimaError(f"index t={t} with lag {k} is outside the level path of length {len(levels)}")
    cur, prev = float(levels[t]), float(levels[t - k])
    if transformation == "level":
        return cur
    if transformation == "mom_change":
        return cur - prev
    if transformation == "qoq_saar_pct":
        return 100.0 * ((cur / prev) ** 4 - 1.0)
    return 100.0 * (cur / prev - 1.0)


# ------------------------------------------------------------------------------------------------
# histories
# ------------------------------------------------------------------------------------------------


def fred_history(
    ind: Indicator,
    info_month: date,
    vintages: VintageStore,
    *,
    known_by: datetime | None = None,
) -> SeriesHistory:
    """The indicator's FRED-MD (monthly) / FRED-QD (quarterly; real GDP from its real-time vintages) column
    from the stored vintage preceding ``info_month``
    (:func:`~leaf_live.macro.sources.fred_md.wanted_vintage`), as
    :meth:`~leaf_live.macro.series_vintages.VintageStore.choose` picks it: the nearest earlier stored vintage
    when the wanted one is missing (gap recorded), published by ``known_by``. Trailing months the vintage has
    not filled yet (the ragged edge) are not stored; interior gaps are interpolated (:func:`regular_history`).
    Raises
    :class:`~leaf_live.core.sources.SourceError` when no vintage qualifies, :class:`ArimaError` when its
    transform code is not the catalog's."""
    kind = "qd" if ind.frequency == "quarterly" else "md"
    assert ind.fred_md_column is not None
    columns = (ind.fred_md_column, *ALIASES.get(ind.fred_md_column, ()))
    wanted = wanted_vintage(info_month)
    pick = vintages.choose(columns, wanted, known_by)
    if pick is None:
        when = f" published by {known_by:%Y-%m-%d %H:%M} UTC" if known_by is not None else ""
        raise SourceError(
            f"series_vintages holds no FRED-{kind.upper()} vintage of {ind.fred_md_column} at or before "
            f"{wanted} (the one preceding target month {info_month:%Y-%m}){when}; stored: "
            f"{vintages.describe(columns)}"
        )
    dates, values, tcode = vintages.observations(pick)
    if tcode != ind.fred_md_tcode:
        raise ArimaError(
            f"{SOURCE_TEXT.get(pick.source, pick.source)} vintage {pick.vintage}: tcode of "
            f"{pick.series_id} is {tcode}, catalog says {ind.fred_md_tcode}"
        )
    dates, vals, filled = regular_history(
        dates, values.tolist(), quarterly=kind == "qd", log_fill=ind.fred_md_tcode in _LOG_TCODES
    )
    return SeriesHistory(
        dates,
        vals,
        filled,
        f"{SOURCE_TEXT.get(pick.source, pick.source)} {pick.series_id}",
        pick.series_id,
        pick.vintage,
        pick.wanted,
        pick.gap_months,
    )


def release_history(
    ind: Indicator,
    releases: pl.DataFrame,
    *,
    issued_at: datetime,
    last_period: date,
) -> SeriesHistory:
    """First-release history of an indicator that is not in FRED-MD (ISM PMIs, existing and new home sales)
    from a ``releases`` frame (``indicator_id, reference_period, actual, available_at``; the ``releases``
    table, or :func:`leaf_live.macro.scoring.surprises.first_releases` of the release calendar), in the
    catalog's reporting unit. Point in time: only values released at or before ``issued_at``
    (``available_at``) and for reference periods up to ``last_period`` (the last month the preceding FRED-MD
    vintage would hold) are used. Raises :class:`ArimaError` when nothing is left."""
    require_columns(
        releases, ("indicator_id", "reference_period", "actual", "available_at"), "releases", ArimaError
    )
    known = releases.filter(
        (pl.col("indicator_id") == ind.id)
        & (pl.col("available_at") <= issued_at)
        & (pl.col("reference_period") <= last_period)
        & pl.col("actual").is_not_null()
    )
    sub = first_per_period(known, ["reference_period"], time_col="available_at").sort("reference_period")
    if sub.height == 0:
        raise ArimaError(
            f"no first releases of {ind.id} up to {last_period:%Y-%m} known at {issued_at:%Y-%m-%d %H:%M} UTC"
        )
    dates, vals, filled = regular_history(
        sub["reference_period"].to_list(), sub["actual"].to_list(), quarterly=False, log_fill=True
    )
    return SeriesHistory(dates, vals, filled, f"first releases of {ind.id}", ind.id)
