"""Post-release recovery (LiveMacroEval App. E, Fig. 7).

The paper lets the agent keep nowcasting for five days after the release and reads that "the post-release
nowcast cluster snaps onto the released level within the first day after release and remains there with
residual dispersion small relative both to the pre-release cluster spread and to the release-versus-prior-
cluster gap"; Fig. 7 draws the hourly nowcasts with a cubic smoothing spline whose lambda is chosen by
generalized cross-validation.

The paper gives no numeric tolerance for "snaps onto the released level". Rule used here: a nowcast has
*reached* the release when it lies strictly closer than half the release's printed resolution to it, i.e.
it prints as the released number (resolution 0.1 for percent and index series, 1 thousand for payrolls,
starts, permits and new home sales, 10 thousand for existing home sales, printed as 4.09 million); a value
exactly halfway (3.25 against 3.3) does not count. ``tolerances`` overrides it per indicator.

Every post-release nowcast is kept by the store (flagged ``after_release``, never scored); this module is
the one place that reads them on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import polars as pl
from scipy.interpolate import make_smoothing_spline

from leaf_live.macro.analyses.series import (
    SERIES_KEYS,
    AnalysisError,
    hourly_series,
    table_frame,
    with_release,
)
from leaf_live.macro.catalog import get_indicator

RESOLUTION_BY_UNIT = {"percent": 0.1, "index": 0.1, "thousand persons": 1.0, "thousand units, SAAR": 1.0}
RESOLUTION_OVERRIDE = {"existing_home_sales": 10.0}  # NAR prints 4.09 million
PRE_HOURS = 24.0  # the pre-release cluster: nowcasts of the last day before the release
SPLINE_HOURS_BEFORE = 120.0  # spline fit from five days before the release (Fig. 7 shows five days after)
_EPS = 1e-9


def printed_resolution(indicator_id: str) -> float:
    """Step between two printed values of the indicator's release, in its reporting unit."""
    if indicator_id in RESOLUTION_OVERRIDE:
        return RESOLUTION_OVERRIDE[indicator_id]
    unit = get_indicator(indicator_id).unit
    try:
        return RESOLUTION_BY_UNIT[unit]
    except KeyError:
        raise AnalysisError(
            f"indicator_id={indicator_id!r}: no printed resolution for unit {unit!r}"
        ) from None


def reached(values: np.ndarray, actual: float, tolerance: float) -> np.ndarray:
    """Boolean array: ``|value - actual| < tolerance`` (strict, with 1e-9 slack for binary fractions)."""
    return np.abs(np.asarray(values, dtype=float) - actual) < tolerance - _EPS * max(1.0, abs(actual))


GCV_UNIT_STEPS = (1.0, 10.0, 100.0, 1000.0)


def gcv_spline(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
    """Cubic smoothing spline with lambda chosen by GCV (scipy ``make_smoothing_spline(lam=None)``, Fig. 7).

    Returns ``(f, lam, at_bound)``: ``f`` evaluates the spline at x, ``lam`` is the GCV lambda for the
    penalty lam * integral f''(x)^2 dx in x's own units, ``at_bound`` is True when even the widest search
    stopped at its upper end (the fit is then the smoothest scipy allows).

    scipy searches lambda only in (0, n) and does not return it. The penalty scales exactly with the unit of
    x (x' = x/k gives lambda' = lambda / k^3 for the same fit), so when the optimum sits at the bound the fit
    is repeated with x in units 10, 100, 1000 times larger, which widens the search to (0, n k^3) without
    changing the criterion. Lambda is read back from the fit: the residual sum of squares of a penalised fit
    grows monotonically with lambda, so bisection on log(lambda) with the public
    ``make_smoothing_spline(lam=...)`` finds the lambda whose fit has the GCV fit's residual sum of squares
    (relative 1e-10). ``x`` strictly increasing, at least 5 points. Raises :class:`AnalysisError`."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size < 5:
        raise AnalysisError(f"smoothing spline: {x.size} points, need at least 5")
    if np.any(np.diff(x) <= 0):
        raise AnalysisError("smoothing spline: x must be strictly increasing")
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=float)
    n = float(x.size)
    for k in GCV_UNIT_STEPS:
        xk = x / k
        spl = make_smoothing_spline(xk, y, w=w, lam=None)
        lam_k = _read_lambda(xk, y, w, spl, n)
        if lam_k is not None and lam_k < n * (1 - 1e-4):
            break
    at_bound = lam_k is None or lam_k >= n * (1 - 1e-4)
    return (
        (lambda t, _s=spl, _k=k: _s(np.asarray(t, dtype=float) / _k)),
        (None if lam_k is None else lam_k * k**3),
        at_bound,
    )


def _read_lambda(x: np.ndarray, y: np.ndarray, w: np.ndarray, spl, upper: float) -> float | None:
    target = float(np.sum(w * (y - spl(x)) ** 2))

    def rss(lam: float) -> float:
        s = make_smoothing_spline(x, y, w=w, lam=lam)
        return float(np.sum(w * (y - s(x)) ** 2))

    lo, hi = math.log(1e-14 * upper), math.log(upper)
    if target <= rss(math.exp(lo)):
        return math.exp(lo)
    if target >= rss(math.exp(hi)):
        return upper
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        r = rss(math.exp(mid))
        if abs(r - target) <= 1e-10 * target:
            return math.exp(mid)
        lo, hi = (mid, hi) if r < target else (lo, mid)
    return math.exp(0.5 * (lo + hi))


def post_release_recovery(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    *,
    tolerances: Mapping[str, float] | None = None,
    pre_hours: float = PRE_HOURS,
    spline_hours_before: float = SPLINE_HOURS_BEFORE,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """App. E for every (model, indicator, reference period) series with at least one valid nowcast issued at
    or after its first release.

    ``nowcasts``: a ``nowcasts`` frame (valid rows used); ``releases``: a ``releases`` frame. Times are hours
    from the release (``release_at``), positive after it.

    Returns ``(summary, paths)``:

    * ``summary`` (table ``post_release_recovery``), one row per series: the pre-release cluster of the last
      ``pre_hours`` (median, IQR, its gap to the release), the post-release nowcasts (count, hours to the
      first one that reached the release, hours from which every later one did, share that did, median, IQR,
      median absolute distance to the release), the GCV spline's lambda and its distance to the release 24
      hours after it;
    * ``paths`` (table ``post_release_paths``), one row per hour from ``spline_hours_before`` before the
      release to the last post-release nowcast: the hour's nowcast and the spline through it.

    ``available_at`` of a row is the latest ``available_at`` of the nowcasts and release it used (the spline
    uses the whole span, so every path row of a series carries the series' latest). Raises
    :class:`AnalysisError` for missing columns or a non-positive tolerance.
    """
    tol_map = dict(tolerances or {})
    for k, v in tol_map.items():
        if not v > 0:
            raise AnalysisError(f"tolerances[{k!r}]={v!r}: must be positive")
    series = with_release(hourly_series(nowcasts), releases)
    post_keys = series.filter(pl.col("after_release")).select(SERIES_KEYS).unique()
    series = series.join(post_keys, on=list(SERIES_KEYS), how="semi")
    rows, paths = [], []
    for key, g in series.group_by(SERIES_KEYS, maintain_order=True):
        g = g.sort("issued_at")
        model_id, indicator_id, ref, run = key
        actual = float(g["actual"][0])
        release_at = g["release_at"][0]
        tol = tol_map.get(indicator_id, 0.5 * printed_resolution(indicator_id))
        h = ((g["issued_at"] - release_at).dt.total_seconds() / 3600.0).to_numpy()  # hours from release
        v = g["value"].to_numpy()
        post = h >= 0
        pre_win = (h < 0) & (h >= -pre_hours)
        hp, vp = h[post], v[post]
        hit = reached(vp, actual, tol)
        first_hit = float(hp[np.argmax(hit)]) if hit.any() else None
        # settled: from the first post nowcast after the last miss (None if the last one misses)
        settle = None
        if hit[-1]:
            misses = np.flatnonzero(~hit)
            settle = float(hp[misses[-1] + 1]) if misses.size else float(hp[0])
        pre_v = v[pre_win]
        pre_med = float(np.median(pre_v)) if pre_v.size else None
        span = h >= -spline_hours_before
        lam, at_bound, gap24 = None, None, None
        spline_vals = np.full(h.shape, np.nan)
        if span.sum() >= 5:  # x in days, the axis of Fig. 7
            spl, lam, at_bound = gcv_spline(
                h[span] / 24.0, v[span], g["n_runs"].to_numpy()[span].astype(float)
            )
            spline_vals[span] = spl(h[span] / 24.0)
            if hp[-1] >= 24.0:
                gap24 = abs(float(spl(1.0)) - actual)
        avail = max(g["available_at"].max(), g["release_available_at"][0])
        rows.append(
            {
                "partition_key": model_id,
                "model_id": model_id,
                "indicator_id": indicator_id,
                "reference_period": ref,
                "run_id": run,
                "release_at": release_at,
                "actual": actual,
                "tolerance": tol,
                "n_pre": int((~post).sum()),
                "n_pre_window": int(pre_win.sum()),
                "pre_median": pre_med,
                "pre_iqr": float(np.subtract(*np.quantile(pre_v, [0.75, 0.25]))) if pre_v.size else None,
                "pre_gap": abs(pre_med - actual) if pre_med is not None else None,
                "n_post": int(post.sum()),
                "first_post_hours": float(hp[0]),
                "last_post_hours": float(hp[-1]),
                "hours_to_first_hit": first_hit,
                "hours_to_settle": settle,
                "share_post_reached": float(hit.mean()),
                "post_median": float(np.median(vp)),
                "post_iqr": float(np.subtract(*np.quantile(vp, [0.75, 0.25]))),
                "post_median_abs_dev": float(np.median(np.abs(vp - actual))),
                "spline_points": int(span.sum()),
                "spline_lambda": lam,
                "spline_lambda_at_bound": at_bound,
                "spline_gap_24h": gap24,
                "available_at": avail,
            }
        )
        paths.append(
            pl.DataFrame(
                {
                    "partition_key": model_id,
                    "model_id": model_id,
                    "indicator_id": indicator_id,
                    "reference_period": ref,
                    "run_id": run,
                    "issued_at": g["issued_at"].filter(pl.Series(span)),
                    "hours_from_release": h[span],
                    "value": v[span],
                    "n_runs": g["n_runs"].filter(pl.Series(span)),
                    "spline": spline_vals[span],
                    "after_release": post[span],
                    "available_at": avail,
                },
                schema_overrides={"reference_period": pl.Date},
            )
        )
    empty = table_frame("post_release_paths", [])
    path = pl.concat(paths).select(empty.columns).cast(empty.schema) if paths else empty
    return table_frame("post_release_recovery", rows), path
