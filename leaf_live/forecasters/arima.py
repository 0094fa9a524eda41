"""Auto-ARIMA baseline (LiveMacroEval App. I, §3.5).

The paper's specification, per indicator:

* ARIMA(p, d, q) on the indicator's own history in the FRED-MD / FRED-QD vintage immediately preceding the
  target month; ``d`` from the series' transform code (tcode 1, 4 -> 0; 2, 5 -> 1; 3, 6 -> 2); codes 4-6
  work on the log level (McCracken and Ng 2016), codes 1-3 on the level;
* (p, q) by AIC over p in 0..12, q in 0..3 with d fixed (Hyndman and Khandakar 2008);
* trend: a constant when d = 0, a linear time trend when d = 1 (equivalently a drift, i.e. a constant in
  the differenced model), none when d = 2;
* unconstrained estimation (stationarity and invertibility not enforced);
* ISM manufacturing and services PMIs: AR(1) with a constant on the log level, forecast back through exp;
* at least 60 observations, otherwise no forecast is issued;
* one point forecast per target, held constant over the window (``issued_at`` = window open).

Estimation (:func:`fit_arima`, :func:`fit_grid`, :func:`select_order`). The paper used statsmodels'
``ARIMA(order, trend, enforce_stationarity=False, enforce_invertibility=False).fit()``. Without the
stationarity constraint statsmodels starts every state (the d differencing states too) at the
approximate-diffuse variance 1e6 and drops the first ``k_states = d + max(p, q + 1)`` observations from the
log-likelihood (``loglikelihood_burn``), so its AIC compares orders on slightly different effective samples.
We compute that same likelihood (to ~1e-6, checked against statsmodels' ``loglike`` in the tests) with
statsforecast's compiled Kalman filter (``statsforecast.arima.arima_like``, R's ``ARIMA_Like``) and maximize
it with scipy, which is what makes the grid fast (``benchmarks/arima.py``):

* likelihood: Gaussian, of observations ``d + max(p, q+1) + 1 .. n`` given the earlier ones; the trend is a
  regression-with-ARIMA-errors term, ``y_t - mu`` (d = 0) or ``y_t - beta t``, ``t = 1..n`` (d = 1, i.e. a
  drift ``beta`` of the differences), as in statsmodels' ``ARIMA`` (``trend_offset=1``). We difference first
  and start the ARMA filter at the covariance statsmodels' diffuse differencing states leave it with
  (:func:`_filter`);
* AIC = -2 logL + 2 (p + q + k_trend + 1): the ``+1`` counts the innovation variance, as statsmodels'
  ``k_params`` does. statsforecast's own ``ARIMA``/``AutoARIMA`` use the exact stationary-start likelihood of
  all ``n - d`` differences instead (R's convention) and enforce stationarity through a parameter transform,
  so their AICs and chosen orders differ; we use only their likelihood kernels;
* pure AR orders (q = 0) need no optimizer: conditional least squares on the same sample IS the maximum of
  this likelihood;
* MA orders: starting values exactly as statsmodels computes them (:func:`css_start`), then conditional sum
  of squares (statsforecast's ``arima_css`` recursion), then BFGS on the likelihood seeded with the CSS
  curvature (R's / statsforecast's "CSS-ML" scheme, with forward-difference gradients);
* unconstrained AR (explosive roots allowed, as in App. I). The MA part is evaluated at its invertible
  representative (roots inside the unit circle reflected): with a non-invertible MA part the filter never
  forgets the diffuse start, so the burned likelihood would depend on the arbitrary prior variance, while
  the exact likelihood is the same for a root and its reciprocal;
* the series is scaled by the standard deviation of its d-th difference while optimizing (the
  log-likelihood is corrected by the Jacobian, so AIC is in the original units).

Where our orders differ from statsmodels' (benchmark): statsmodels with its default ``fit()`` (50 L-BFGS
iterations, innovation variance estimated jointly, badly scaled for log series) often stops short of the
maximum for MA orders; with ``concentrate_scale=True`` and more iterations it reaches the maxima we find.

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
* catalog approximations (see :mod:`leaf_live.catalog.indicators`): CPI YoY from seasonally adjusted
  CPIAUCSL (the target is NSA), PPI from FRED-MD's finished-goods WPSFD49207 (called PPIFGS before the
  2016-03 vintage), real PCE from DPCERA3M086SBEA, durable goods from AMDMNOx, retail sales from RETAILx.

Point forecasts are the Kalman-filter predictions (conditional means) in the modelled space; for log codes
the level forecast is ``exp`` of the log forecast (the conditional median; the paper's "forecast back through
the exponential").
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl
from scipy.optimize import minimize
from statsforecast.arima import arima_css, arima_like

from leaf_live.catalog import Indicator, get_indicator
from leaf_live.forecasters.nowcast_frame import build_nowcasts
from leaf_live.forecasters.windows import target_month, window_open
from leaf_live.settings import get_settings
from leaf_live.sources import SourceError, fred_md

TRENDS = ("n", "c", "t")
P_MAX = 12
Q_MAX = 3
KAPPA = 1e6  # approximate-diffuse prior variance (statsmodels' initial_variance), scaled-series units
CSS_FIRST = True  # CSS stage before the likelihood (False: BFGS on the likelihood from the start values)
CSS_FTOL, CSS_GTOL = 1e-8, 1e-5  # the CSS stage only has to land near the likelihood maximum
ML_FTOL = 1e-10  # stop BFGS after two steps each gaining less (per-observation objective; AIC x 2n)
ML_MAXITER = 50  # BFGS iterations on the likelihood after the CSS stage (statsmodels' default is also 50)
MIN_OBS = 60  # App. I: "a minimum of 60 observations required for a fit to be issued"


class ArimaError(ValueError):
    """Bad input to the estimator (the message names the argument and value)."""


def trend_for_d(d: int) -> str:
    """App. I trend rule: constant ('c') when d = 0, linear time trend ('t') when d = 1, none ('n') when d = 2."""
    try:
        return {0: "c", 1: "t", 2: "n"}[d]
    except KeyError:
        raise ArimaError(f"d={d!r}: App. I uses d in 0, 1, 2") from None


def _check_spec(d: int, trend: str) -> int:
    if d not in (0, 1, 2):
        raise ArimaError(f"d={d!r}: expected 0, 1 or 2")
    if trend not in TRENDS:
        raise ArimaError(f"trend={trend!r}: expected one of {TRENDS} (none, constant, linear time trend)")
    # statsmodels' rule: a trend term of lower order than d is differenced away and cannot be estimated
    if (trend == "c" and d != 0) or (trend == "t" and d != 1):
        raise ArimaError(f"trend={trend!r} with d={d}: allowed are 'c' or 'n' for d=0, 't' or 'n' for d=1, 'n' for d=2")
    return 0 if trend == "n" else 1


def _delta(d: int) -> np.ndarray:
    """Coefficients of the differencing states: y_t = sum delta_i y_{t-i} + w_t (R/statsforecast convention)."""
    poly = np.array([1.0])
    for _ in range(d):
        poly = np.convolve(poly, [1.0, -1.0])
    return -poly[1:]


def _system(phi: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transition T, innovation covariance V (unit variance) and design Z of the ARMA state space used by
    statsforecast's ``arima_like`` (Harvey form, r = max(p, q+1) states)."""
    p, q = len(phi), len(theta)
    r = max(p, q + 1)
    T = np.eye(r, k=1)
    T[:p, 0] = phi
    R = np.zeros(r)
    R[0] = 1.0
    R[1:q + 1] = theta
    Z = np.zeros(r)
    Z[0] = 1.0
    return T, np.outer(R, R), Z


_EMPTY = np.zeros(0)


def _filter(z: np.ndarray, phi: np.ndarray, theta: np.ndarray, d: int, burn: int):
    """Kalman filter of the ARMA part on the differenced series ``z`` with statsmodels' approximate-diffuse
    start; return (ssq, sumlog, nu, a, P, T, Z), the sums covering ``z[burn:]`` only, (a, P) the filtered
    state after the last observation.

    statsmodels puts the d differencing states in the state vector and starts every state at variance KAPPA;
    the first d levels then only pin down those level states, so the ARMA state reaches the first difference
    with covariance KAPPA T^d T^d' + sum_{j<d} T^j V T^j' (KAPPA I when d = 0). Starting the ARMA filter on
    ``z`` there gives statsmodels' likelihood exactly, with fewer states and better conditioning."""
    T, V, Z = _system(phi, theta)
    r = T.shape[0]
    a = np.zeros(r)
    P = np.zeros((r, r))
    if d == 0:
        Pn = KAPPA * np.eye(r)
    else:
        Pn = V.copy()
        Td = T
        for _ in range(d - 1):
            Pn = T @ Pn @ T.T + V
            Td = T @ Td
        Pn += KAPPA * (Td @ Td.T)
    # Part 1: the burned observations; a and P are updated in place by the kernel.
    arima_like(z[:burn], phi, theta, _EMPTY, a, P, Pn, 0, False)
    # Part 2 continues from the filtered state: give the kernel the one-step predicted covariance.
    Pn = T @ P @ T.T + V
    ssq, sumlog, nu, _ = arima_like(z[burn:], phi, theta, _EMPTY, a, P, Pn, 0, False)
    return ssq, sumlog, nu, a, P, T, Z


@dataclass(frozen=True)
class ArimaFit:
    """A fitted ARIMA(p, d, q) with trend (App. I).

    ``ar`` (p,), ``ma`` (q,): lag-polynomial coefficients, ``(1 - sum ar_i L^i)(1-L)^d (y_t - trend_t) =
    (1 + sum ma_j L^j) e_t``; ``trend_coef``: the mean (``'c'``) or slope per period (``'t'``), NaN for
    ``'n'``, in the units of ``y``; ``sigma2``: innovation variance (concentrated MLE); ``loglik``, ``aic``
    as in the module docstring; ``nobs``: observations in the likelihood (n - d - max(p, q+1));
    ``converged``: the optimizer's flag (always True for the closed-form q = 0 case).
    """

    p: int
    d: int
    q: int
    trend: str
    ar: np.ndarray
    ma: np.ndarray
    trend_coef: float
    sigma2: float
    loglik: float
    aic: float
    n: int
    nobs: int
    converged: bool
    _scale: float = field(repr=False, default=1.0)
    _offset: float = field(repr=False, default=0.0)
    _a: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(1))
    _T: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((1, 1)))
    _Z: np.ndarray = field(repr=False, default_factory=lambda: np.ones(1))
    _params: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    _tail: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))  # last d scaled levels

    @property
    def order(self) -> tuple[int, int, int]:
        return (self.p, self.d, self.q)

    def forecast(self, h: int) -> np.ndarray:
        """Point forecasts of ``y`` for periods n+1 .. n+h (shape (h,)): conditional means of the d-th
        difference from the Kalman filter state (plus the trend term), integrated back to levels, in the
        modelled space (log space for log series). Raises :class:`ArimaError` for h < 1 or a failed fit."""
        if not isinstance(h, (int, np.integer)) or h < 1:
            raise ArimaError(f"h={h!r}: forecast horizon must be an integer >= 1")
        if not math.isfinite(self.aic):
            raise ArimaError(f"ARIMA({self.p},{self.d},{self.q}) was not fitted; no forecast")
        a = self._a.copy()
        z = np.empty(h)
        for j in range(h):
            a = self._T @ a
            z[j] = self._Z @ a
        if self.trend != "n":
            z = z + self._params[self.p + self.q]
        levels = list(self._tail)
        delta = _delta(self.d)
        out = np.empty(h)
        for j in range(h):
            # y_t = sum_i delta_i y_{t-i} + z_t  (integrate the differences back)
            val = z[j] + sum(delta[i] * levels[-1 - i] for i in range(self.d))
            levels.append(val)
            out[j] = val
        return self._offset + self._scale * out


def _prepare(y: np.ndarray, d: int) -> tuple[np.ndarray, float, float]:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ArimaError(f"y has shape {y.shape}: expected a 1-D series")
    if not np.all(np.isfinite(y)):
        k = int(np.argmax(~np.isfinite(y)))
        raise ArimaError(f"y[{k}]={float(y[k])}: the series must be finite (fill or drop gaps first)")
    z = np.diff(y, n=d) if d else y
    scale = float(np.std(z, ddof=1)) if len(z) > 1 else 1.0
    if not math.isfinite(scale) or scale <= 0:
        scale = 1.0
    offset = float(np.mean(y)) if d == 0 else float(y[0])
    return (y - offset) / scale, scale, offset


def _stationary(phi: list[float]) -> bool:
    """True when 1 - phi_1 z - ... - phi_m z^m has every root outside the unit circle (Schur-Cohn step-down:
    all partial autocorrelations |k| < 1). Pure Python: much cheaper than polynomial roots for m <= 3."""
    a = list(phi)
    while a and a[-1] == 0.0:
        a.pop()
    while a:
        k = a[-1]
        if not -1.0 < k < 1.0:
            return False
        m = len(a)
        den = 1.0 - k * k
        a = [(a[j] + k * a[m - 2 - j]) / den for j in range(m - 1)]
    return True


class _Problem:
    """Concentrated negative log-likelihood of one (p, d, q, trend) on a scaled series.

    The series is differenced first (``z = diff(x, d)``; the trend becomes the mean of ``z``), then the ARMA
    filter starts from the approximate-diffuse prior and the first ``max(p, q+1)`` values of ``z`` are
    burned: the same conditioning set as statsmodels' d + max(p, q+1) burned levels (its differencing states
    are diffuse too), with fewer states and better numerical conditioning."""

    def __init__(self, x: np.ndarray, p: int, d: int, q: int, trend: str):
        self.x, self.p, self.d, self.q, self.trend = x, p, d, q, trend
        self.k = _check_spec(d, trend)
        self.z = np.diff(x, n=d) if d else x
        self.burn = max(p, q + 1)
        self.nobs = len(self.z) - self.burn
        self.arma = np.array([p, q, 0, 0, 1, 0, 0], dtype=np.int32)  # statsforecast's order vector, on z

    def split(self, params: np.ndarray):
        p, q = self.p, self.q
        return params[:p], params[p:p + q], params[p + q:]

    def residual_series(self, params: np.ndarray) -> np.ndarray:
        _, _, beta = self.split(params)
        return self.z - beta[0] if self.k else self.z

    def run(self, params: np.ndarray):
        p, q = self.p, self.q
        return _filter(self.residual_series(params), params[:p], params[p:p + q], self.d, self.burn)

    def valid(self, ssq: float, sumlog: float, nu: int) -> bool:
        # The kernel silently skips an observation whose prediction variance exceeds 1e4 sigma^2 (R's rule for
        # diffuse states); after the burn that only happens for explosive / non-invertible parameters, and a
        # likelihood over fewer observations is not comparable, so such parameters are treated as infeasible.
        return nu == self.nobs and ssq > 0 and math.isfinite(ssq) and math.isfinite(sumlog)

    def invertible(self, params: np.ndarray) -> bool:
        """MA roots outside the unit circle. With a non-invertible MA part the filter never forgets the
        approximate-diffuse start, so the burned likelihood depends on the arbitrary prior variance (and the
        kernel's variance cut-off); the exact likelihood is the same for an MA root and its reciprocal, so
        restricting to invertible MA loses no fit. AR stationarity is NOT enforced (App. I)."""
        if self.q == 0:
            return True
        return _stationary([-float(t) for t in params[self.p:self.p + self.q]])

    def css_objective(self, params: np.ndarray) -> float:
        """Half the log of the conditional sum of squares (pre-sample innovations 0, first p values of the
        difference conditioned on); statsforecast's ``arima_css``."""
        if not math.isfinite(params.sum()):
            return 1e10
        p, q = self.p, self.q
        w = self.z - params[p + q] if self.k else self.z
        res, _ = arima_css(w, self.arma, params[:p], params[p:p + q])
        if not (res > 0) or not math.isfinite(res):
            return 1e10
        return 0.5 * math.log(res)

    def canonical(self, params: np.ndarray) -> np.ndarray:
        """``params`` with any MA root inside the unit circle reflected outside (:func:`_invertible_ma`)."""
        if self.invertible(params):
            return params
        out = np.array(params, dtype=np.float64)
        out[self.p:self.p + self.q] = _invertible_ma(out[self.p:self.p + self.q])
        return out

    def objective(self, params: np.ndarray) -> float:
        # Evaluated at the invertible representative, so the surface is continuous across the boundary and the
        # optimizer can reach an MA unit root (over-differenced series) from either side.
        if not math.isfinite(params.sum()):
            return 1e10
        if not self.invertible(params):
            params = self.canonical(params)
            if not self.invertible(params):
                return 1e10
        ssq, sumlog, nu, *_ = self.run(params)
        if not self.valid(ssq, sumlog, nu):
            return 1e10
        return 0.5 * (math.log(ssq / nu) + sumlog / nu)

    def closed_form_ar(self) -> np.ndarray | None:
        """Conditional least squares for q = 0 (exact maximizer of the burned likelihood)."""
        p = self.p
        z = self.z
        r = max(p, 1)
        rows = np.arange(r, len(z))
        if len(rows) <= p + self.k:
            return None
        cols = [z[rows - i] for i in range(1, p + 1)]
        if self.k:
            cols.append(np.ones(len(rows)))
        if not cols:
            return np.zeros(0)
        A = np.column_stack(cols)
        coef, *_ = np.linalg.lstsq(A, z[rows], rcond=None)
        phi = coef[:p]
        if self.k:
            denom = 1.0 - phi.sum()
            if abs(denom) < 1e-8:
                return None  # unit root in the AR part: the mean is not identified, fall back to BFGS
            return np.concatenate([phi, [coef[p] / denom]])
        return phi


def _invertible_ma(theta: np.ndarray) -> np.ndarray:
    """Reflect MA roots inside the unit circle to their reciprocals (same autocorrelations, so the same exact
    likelihood), giving a start where the burned likelihood is defined."""
    theta = np.asarray(theta, dtype=np.float64)
    if len(theta) == 0 or _stationary([-float(t) for t in theta]):
        return theta
    nz = np.flatnonzero(theta != 0)
    roots = np.polynomial.polynomial.polyroots(np.concatenate(([1.0], theta[: nz[-1] + 1])))
    roots = np.where(np.abs(roots) < 1, 1 / np.conj(roots), roots)
    roots = np.where(np.abs(roots) <= 1.0, roots * (1.0 + 1e-9), roots)  # strictly outside
    poly = np.real(np.polynomial.polynomial.polyfromroots(roots))
    out = np.zeros(len(theta))
    out[: len(poly) - 1] = poly[1:] / poly[0]
    return out if _stationary([-float(t) for t in out]) else np.zeros(len(theta))


def _lags(x: np.ndarray, m: int, start: int) -> np.ndarray:
    """Rows t = start..len(x)-1 of [x_{t-1}, ..., x_{t-m}] (zeros before the sample, like statsmodels' lagmat)."""
    rows = np.arange(start, len(x))
    out = np.zeros((len(rows), m))
    for i in range(1, m + 1):
        idx = rows - i
        ok = idx >= 0
        out[ok, i - 1] = x[idx[ok]]
    return out


def css_start(y: np.ndarray, p: int, d: int, q: int, trend: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Starting values the way statsmodels' SARIMAX computes them (``start_params``): the trend by OLS on the
    d-th difference (its mean), then conditional least squares on the demeaned difference, with the MA terms
    proxied by residuals of a long AR(2q) regression (Hannan-Rissanen). Returns ``(ar, ma, trend_coef)`` in
    the units of ``y`` (trend_coef NaN for 'n'). Starting here makes the optimizer climb the same local
    maximum of the (often multimodal) ARMA likelihood as statsmodels, hence choose the same orders."""
    z = np.diff(np.asarray(y, dtype=np.float64), n=d) if d else np.asarray(y, dtype=np.float64)
    tc = float("nan")
    if trend != "n":
        tc = float(np.mean(z))
        z = z - tc
    k = 2 * q
    r = max(k + q, p)
    ar, ma = np.zeros(p), np.zeros(q)
    if p + q == 0 or len(z) - r <= p + q:
        return ar, ma, tc
    cols = []
    if p:
        cols.append(_lags(z, p, r))
    if q:
        Xl = _lags(z, k, k)
        coef = np.linalg.pinv(Xl) @ z[k:]
        e = z[k:] - Xl @ coef  # e[j] belongs to time j + k
        cols.append(_lags(e, q, r - k))
    params = np.linalg.pinv(np.column_stack(cols)) @ z[r:]
    return params[:p].copy(), params[p:].copy(), tc


class _Stall:
    """BFGS callback that stops once two consecutive iterations each lower the objective (the per-observation
    negative log-likelihood) by less than ML_FTOL: on the flat ridges of over-parameterized ARMA models BFGS
    otherwise spends its iterations on changes far below any AIC digit that matters."""

    def __init__(self) -> None:
        self.last = math.inf
        self.flat = 0

    def __call__(self, intermediate_result) -> None:
        f = float(intermediate_result.fun)
        self.flat = self.flat + 1 if self.last - f < ML_FTOL else 0
        self.last = f
        if self.flat >= 2:
            raise StopIteration


class _ForwardDiff:
    """``fun`` and its forward-difference ``jac`` for scipy's quasi-Newton methods, sharing f(x) between the
    two calls (scipy's own numerical-gradient wrapper costs more than our likelihood evaluation does).
    Step per coordinate as scipy's '2-point' scheme: sqrt(machine eps) * max(1, |x_i|)."""

    _H = math.sqrt(np.finfo(np.float64).eps)

    def __init__(self, f):
        self.f = f
        self.x: np.ndarray | None = None
        self.fx = 0.0

    def fun(self, x: np.ndarray) -> float:
        if self.x is None or not np.array_equal(x, self.x):
            self.x = np.array(x, dtype=np.float64)
            self.fx = self.f(self.x)
        return self.fx

    def jac(self, x: np.ndarray) -> np.ndarray:
        f0 = self.fun(x)
        g = np.empty(len(x))
        xx = np.array(x, dtype=np.float64)
        for i in range(len(xx)):
            h = self._H * max(1.0, abs(xx[i]))
            old = xx[i]
            xx[i] = old + h
            g[i] = (self.f(xx) - f0) / (xx[i] - old)
            xx[i] = old
        return g


def _inverse_hessian(f, x: np.ndarray, h: float = 1e-4) -> np.ndarray | None:
    """Inverse of a central-difference Hessian of ``f`` at ``x``, eigenvalues floored to stay positive
    definite; None if it cannot be formed."""
    k = len(x)
    f0 = f(x)
    H = np.empty((k, k))
    e = np.eye(k) * h
    fp = np.array([f(x + e[i]) for i in range(k)])
    fm = np.array([f(x - e[i]) for i in range(k)])
    for i in range(k):
        H[i, i] = (fp[i] - 2 * f0 + fm[i]) / h**2
        for j in range(i + 1, k):
            H[i, j] = H[j, i] = (f(x + e[i] + e[j]) - fp[i] - fp[j] + f0) / h**2
    if not np.all(np.isfinite(H)):
        return None
    w, v = np.linalg.eigh(H)
    top = float(np.max(np.abs(w)))
    if top <= 0:
        return None
    w = np.maximum(np.abs(w), top * 1e-6)
    inv = (v / w) @ v.T
    inv = 0.5 * (inv + inv.T)
    try:
        np.linalg.cholesky(inv)
    except np.linalg.LinAlgError:
        return None
    return inv


def fit_arima(
    y: np.ndarray,
    p: int,
    d: int,
    q: int,
    trend: str,
    *,
    start: np.ndarray | None = None,
    maxiter: int = 200,
) -> ArimaFit:
    """Fit ARIMA(p, d, q) with ``trend`` ('n' none, 'c' constant for d = 0, 't' linear trend for d = 1) to the
    1-D finite series ``y`` by maximum likelihood, unconstrained (App. I; likelihood and AIC convention in
    the module docstring, identical to statsmodels' ``ARIMA(enforce_stationarity=False,
    enforce_invertibility=False)``).

    ``start``: initial ``[ar..., ma..., trend]`` in the internal scaled units (:func:`fit_grid` passes the
    (p, q-1) estimate for ``start_method='warm'``); default: :func:`css_start`. ``maxiter``: iterations of
    the CSS stage. Returns :class:`ArimaFit`; an order the data cannot support (too few observations, no
    finite likelihood) gets ``aic = inf`` and ``converged = False``. Raises :class:`ArimaError` for bad
    arguments (negative orders, d/trend combination, non-finite y, wrong ``start`` length).
    """
    for name, v in (("p", p), ("q", q)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ArimaError(f"{name}={v!r}: expected a non-negative integer")
    x, scale, offset = _prepare(y, d)
    prob = _Problem(x, int(p), d, int(q), trend)
    n = len(x)
    npar = p + q + prob.k
    if n - prob.burn <= npar + 1:
        return _failed(prob, n, scale, offset)
    converged = True
    params = prob.closed_form_ar() if q == 0 else None
    if params is None:
        if start is None:
            ar0, ma0, tc0 = css_start(np.asarray(y, dtype=np.float64), int(p), d, int(q), trend)
            beta0 = [] if trend == "n" else [(tc0 - offset) / scale if trend == "c" else tc0 / scale]
            x0 = np.concatenate([ar0, _invertible_ma(ma0), beta0])
        else:
            x0 = np.asarray(start, dtype=np.float64).copy()
        if len(x0) != npar:
            raise ArimaError(f"start has {len(x0)} values: expected p + q + k_trend = {npar}")
        if npar == 0:
            params = x0
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hess_inv0 = None
                if CSS_FIRST:
                    # Conditional sum of squares first (statsforecast's C++ recursion, ~30x cheaper than the
                    # filter), then the likelihood from there (R's / statsforecast's "CSS-ML" scheme); the CSS
                    # curvature, nearly the likelihood's, seeds the quasi-Newton steps so they start at full size.
                    css = _ForwardDiff(prob.css_objective)
                    r0 = minimize(css.fun, x0, jac=css.jac, method="L-BFGS-B",
                                  options={"maxiter": maxiter, "ftol": CSS_FTOL, "gtol": CSS_GTOL})
                    x1 = prob.canonical(r0.x)
                    if np.all(np.isfinite(x1)) and prob.objective(x1) < prob.objective(x0):
                        x0 = x1
                        hess_inv0 = _inverse_hessian(prob.css_objective, x1)
                opts = {"maxiter": ML_MAXITER, "gtol": 1e-5}
                if hess_inv0 is not None:
                    opts["hess_inv0"] = hess_inv0
                ml = _ForwardDiff(prob.objective)
                stall = _Stall()
                res = minimize(ml.fun, x0, jac=ml.jac, method="BFGS", options=opts, callback=stall)
            params, converged = prob.canonical(res.x), bool(res.success) or stall.flat >= 2
    if not prob.invertible(params):
        return _failed(prob, n, scale, offset)
    ssq, sumlog, nu, a, P, T, Z = prob.run(params)
    if not prob.valid(ssq, sumlog, nu):
        return _failed(prob, n, scale, offset)
    sigma2_scaled = ssq / nu
    loglik = -0.5 * (nu * (math.log(2 * math.pi * sigma2_scaled) + 1.0) + sumlog) - nu * math.log(scale)
    aic = -2.0 * loglik + 2.0 * (npar + 1)
    phi, theta, beta = prob.split(params)
    if trend == "c":
        tc = offset + scale * float(beta[0])
    elif trend == "t":
        tc = scale * float(beta[0])
    else:
        tc = float("nan")
    return ArimaFit(
        p=int(p), d=d, q=int(q), trend=trend, ar=phi.copy(), ma=theta.copy(), trend_coef=tc,
        sigma2=sigma2_scaled * scale**2, loglik=loglik, aic=aic, n=n, nobs=int(nu), converged=converged,
        _scale=scale, _offset=offset, _a=a.copy(), _T=T, _Z=Z, _params=np.asarray(params, dtype=np.float64).copy(),
        _tail=x[len(x) - d:].copy() if d else np.zeros(0),
    )


def _failed(prob: _Problem, n: int, scale: float, offset: float) -> ArimaFit:
    nan = float("nan")
    return ArimaFit(prob.p, prob.d, prob.q, prob.trend, np.full(prob.p, nan), np.full(prob.q, nan), nan, nan,
                    -math.inf, math.inf, n, 0, False, scale, offset)


START_METHODS = ("css", "warm", "best")


def fit_grid(
    y: np.ndarray,
    d: int,
    trend: str,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
    *,
    start_method: str = "css",
) -> dict[tuple[int, int], ArimaFit]:
    """Fit every (p, q) in 0..p_max x 0..q_max (App. I grid). Returns ``{(p, q): ArimaFit}``.

    ``start_method`` (MA orders; pure AR orders are closed-form): ``'css'`` starts where statsmodels starts
    (:func:`css_start`), which reproduces the paper's estimator; ``'warm'`` starts from the (p, q-1) estimate
    with the new coefficient at 0; ``'best'`` runs both and keeps the higher likelihood (a better MLE, but
    not what the paper's statsmodels run computed). Raises :class:`ArimaError`.
    """
    _check_spec(d, trend)
    if p_max < 0 or q_max < 0:
        raise ArimaError(f"p_max={p_max}, q_max={q_max}: expected non-negative integers")
    if start_method not in START_METHODS:
        raise ArimaError(f"start_method={start_method!r}: expected one of {START_METHODS}")
    fits: dict[tuple[int, int], ArimaFit] = {}
    for p in range(p_max + 1):
        prev: ArimaFit | None = None
        for q in range(q_max + 1):
            candidates = []
            if q == 0 or start_method in ("css", "best"):
                candidates.append(fit_arima(y, p, d, q, trend))
            if q > 0 and start_method in ("warm", "best") and prev is not None and math.isfinite(prev.aic):
                pp = prev._params
                start = np.concatenate([pp[:p], pp[p:p + q - 1], [0.0], pp[p + q - 1:]])
                candidates.append(fit_arima(y, p, d, q, trend, start=start))
            if not candidates:
                candidates.append(fit_arima(y, p, d, q, trend))
            fit = min(candidates, key=lambda f: f.aic)
            fits[(p, q)] = fit
            prev = fit
    return fits


def select_order(
    y: np.ndarray,
    d: int,
    trend: str,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
    *,
    start_method: str = "css",
) -> tuple[int, int, float, ArimaFit]:
    """AIC order selection with d fixed (App. I; Hyndman and Khandakar 2008): fit the (p, q) grid
    0..p_max x 0..q_max (:func:`fit_grid`) and return ``(p, q, aic, model)`` of the minimum AIC (ties: the
    smaller p, then q). ``y``: 1-D finite series in the modelled space (log level for tcodes 4-6).
    Raises :class:`ArimaError` for bad arguments or when no order could be fitted.
    """
    fits = fit_grid(y, d, trend, p_max, q_max, start_method=start_method)
    best = min(fits.values(), key=lambda f: (f.aic, f.p, f.q))
    if not math.isfinite(best.aic):
        raise ArimaError(f"no ARIMA(p,{d},q) order could be fitted to {len(np.asarray(y))} observations")
    return best.p, best.q, best.aic, best


# =================================================================================================
# Nowcasts: histories, vintages, reporting transformations (App. I "Data and refit cadence")
# =================================================================================================

MODEL_ID = "baseline/auto-arima"
PRODUCER = "arima_nowcasts"
ET = ZoneInfo("America/New_York")
UTC = timezone.utc
AR1_LOG_INDICATORS = ("ism_manufacturing", "ism_services")  # App. I: AR(1) on the log level
# Renamed FRED-MD columns: the PPI column was PPIFGS (finished goods) in vintages before 2016-03.
FRED_MD_ALIASES: dict[str, tuple[str, ...]] = {"WPSFD49207": ("PPIFGS",)}
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


def _period_index(d: date, quarterly: bool) -> int:
    k = d.year * 12 + d.month - 1
    return k // 3 if quarterly else k


def _period_date(k: int, quarterly: bool) -> date:
    m = k * 3 if quarterly else k
    return date(m // 12, m % 12 + 1, 1)


def regular_history(dates: Sequence[date], values: Sequence[float | None], *, quarterly: bool, log_fill: bool
                    ) -> tuple[list[date], np.ndarray, int]:
    """Put observations on a consecutive monthly (or quarterly) grid from the first to the last non-missing
    value; interior gaps (e.g. October 2025 CPI, never published because of the shutdown) are filled by
    linear interpolation, of the logs when ``log_fill``. Returns ``(dates, levels, n_filled)``.
    Raises :class:`ArimaError` for duplicate periods or no observations."""
    pairs = [(d, float(v)) for d, v in zip(dates, values) if v is not None and math.isfinite(float(v))]
    if not pairs:
        raise ArimaError("no observations")
    idx = [_period_index(d, quarterly) for d, _ in pairs]
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
    return [_period_date(int(k), quarterly) for k in grid], out, len(grid) - len(idx_arr)


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


def _fred_column(levels: pl.DataFrame, tcodes: Mapping[str, int], column: str) -> str:
    for name in (column, *FRED_MD_ALIASES.get(column, ())):
        if name in levels.columns:
            return name
    raise ArimaError(f"column {column!r} is not in this vintage")


def fred_history(
    ind: Indicator,
    info_month: date,
    *,
    transport: str,
    snapshot_dir: Path | None,
    vintages: Mapping[str, tuple[pl.DataFrame, dict[str, int]]] | None = None,
) -> SeriesHistory:
    """The indicator's FRED-MD (monthly) / FRED-QD (quarterly) column from the vintage preceding
    ``info_month`` (:func:`leaf_live.sources.fred_md.resolve_preceding_vintage`: nearest earlier snapshot
    vintage when the wanted one is missing, gap recorded). Trailing months the vintage has not filled yet
    (the ragged edge) are dropped; interior gaps are interpolated (:func:`regular_history`).
    Raises :class:`~leaf_live.sources.SourceError` / :class:`ArimaError`."""
    kind = "qd" if ind.frequency == "quarterly" else "md"
    choice = fred_md.resolve_preceding_vintage(info_month, kind, transport=transport, snapshot_dir=snapshot_dir)
    if vintages is not None and choice.vintage in vintages:
        levels, tcodes = vintages[choice.vintage]
    else:
        levels, tcodes = fred_md.load_vintage(choice.vintage, kind, transport=transport, snapshot_dir=snapshot_dir)
    assert ind.fred_md_column is not None
    col = _fred_column(levels, tcodes, ind.fred_md_column)
    if tcodes.get(col) != ind.fred_md_tcode:
        raise ArimaError(
            f"FRED-{kind.upper()} vintage {choice.vintage}: tcode of {col} is {tcodes.get(col)}, catalog says "
            f"{ind.fred_md_tcode}"
        )
    sub = levels.select("date", col)
    dates, vals, filled = regular_history(sub["date"].to_list(), sub[col].to_list(),
                                          quarterly=kind == "qd", log_fill=ind.fred_md_tcode in _LOG_TCODES)
    return SeriesHistory(dates, vals, filled, f"FRED-{kind.upper()} {col}", col, choice.vintage, choice.wanted,
                         choice.gap_months)


def release_history(
    ind: Indicator,
    releases: pl.DataFrame,
    *,
    issued_at: datetime,
    last_period: date,
) -> SeriesHistory:
    """First-release history of an indicator that is not in FRED-MD (ISM PMIs, existing and new home sales)
    from a ``releases`` frame (``indicator_id, reference_period, actual, available_at``; the ``releases``
    table, or :func:`leaf_live.scoring.surprises.first_releases` of the release calendar), in the catalog's
    reporting unit. Point in time: only values released at or before ``issued_at`` (``available_at``) and
    for reference periods up to ``last_period`` (the last month the preceding FRED-MD vintage would hold)
    are used. Raises :class:`ArimaError` when nothing is left."""
    need = ("indicator_id", "reference_period", "actual", "available_at")
    missing = [c for c in need if c not in releases.columns]
    if missing:
        raise ArimaError(f"releases frame lacks column(s) {missing}")
    sub = (
        releases.filter(
            (pl.col("indicator_id") == ind.id)
            & (pl.col("available_at") <= issued_at)
            & (pl.col("reference_period") <= last_period)
            & pl.col("actual").is_not_null()
        )
        .sort("available_at")
        .unique("reference_period", keep="first", maintain_order=True)  # first release of each period
        .sort("reference_period")
    )
    if sub.height == 0:
        raise ArimaError(f"no first releases of {ind.id} up to {last_period:%Y-%m} known at {issued_at:%Y-%m-%d %H:%M} UTC")
    dates, vals, filled = regular_history(sub["reference_period"].to_list(), sub["actual"].to_list(),
                                          quarterly=False, log_fill=True)
    return SeriesHistory(dates, vals, filled, f"first releases of {ind.id}", ind.id)


def snapshot_first_releases(snapshot_dir: str | os.PathLike) -> pl.DataFrame:
    """First releases of every indicator from the snapshot's LiveMacroEval release calendar (panel 2010-01 ..
    2025-10 and live file 2025-11 .. 2026-05): :func:`leaf_live.sources.releases.load_release_calendar` then
    :func:`leaf_live.scoring.surprises.first_releases`. The ``releases`` frame :func:`release_history` reads."""
    from leaf_live.scoring.surprises import first_releases
    from leaf_live.sources.releases import load_release_calendar

    return first_releases(load_release_calendar("snapshot", Path(snapshot_dir)))


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
    h = _period_index(reference_period, quarterly) - _period_index(last, quarterly)
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


def _first_of_month(ts: datetime) -> date:
    et = ts.astimezone(ET)
    return date(et.year, et.month, 1)


def arima_nowcasts(
    targets: Sequence[tuple[str, date]],
    *,
    window_opens_at: Mapping[tuple[str, date], datetime] | None = None,
    partition_key: str | Mapping[tuple[str, date], str] | None = None,
    transport: str | None = None,
    snapshot_dir: str | os.PathLike | None = None,
    releases: pl.DataFrame | None = None,
    min_obs: int = MIN_OBS,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
) -> pl.DataFrame:
    """Auto-ARIMA nowcasts (LiveMacroEval App. I) for ``targets`` = ``[(indicator_id, reference_period), ...]``.

    For each target: ``issued_at`` = the window open (``window_opens_at[(id, period)]``, tz-aware; default
    :func:`leaf_live.forecasters.windows.window_open`, the 25th 00:00 New York of the target month); the
    information month is the target month (the quarter's last month for GDP), or the month of ``issued_at`` if
    that is earlier; the model is fitted on the FRED-MD / FRED-QD vintage immediately preceding it (the
    nearest earlier one in a snapshot that lacks it, gap stated in ``rationale``). Indicators not in FRED-MD
    (ISM PMIs, existing and new home sales) use their first-release history (:func:`release_history`) up to
    the same last month, released by ``issued_at``: ``releases`` (e.g. the ``releases`` table) or, in the
    snapshot transport, the LiveMacroEval release calendar of the snapshot. The forecast reaches the target
    period ``h`` steps past the last observation and is converted to the reporting transformation.

    Returns a ``nowcasts`` frame (``storage.NOWCASTS``), one row per target: ``producer='arima_nowcasts'``,
    ``model_id='baseline/auto-arima'``, ``value`` in the reporting unit, ``valid``; targets that get no
    forecast (fewer than ``min_obs`` observations, no vintage, failed fit, guardrail) are rows with
    ``valid=False``, ``value`` NULL and ``invalid_reason``; ``source_variable`` = the FRED-MD/QD column
    (``CPIAUCSL``; ``PPIFGS`` in pre-2016 vintages) or, for first-release histories, the indicator id; ``rationale`` = order, AIC, vintage, sample, horizon; ``available_at = issued_at``;
    ``partition_key`` = ``partition_key`` (one string, or per target) or the New York month of ``issued_at``.
    ``after_release`` is False (mark it with :func:`leaf_live.forecasters.windows.mark_after_release`).

    Raises :class:`ValueError` (unknown indicator, bad period, naive timestamp, bad transport); data problems
    never raise, they become invalid rows.
    """
    settings = get_settings()
    transport = transport or settings.transport
    if transport not in fred_md.TRANSPORTS:
        raise ValueError(f"transport={transport!r}: expected one of {fred_md.TRANSPORTS}")
    snap = None
    if transport == "snapshot":
        snap = Path(snapshot_dir) if snapshot_dir is not None else settings.require_snapshot()
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
        info_month = min(tm, _first_of_month(opens))
        if isinstance(partition_key, str):
            pk = partition_key
        elif partition_key is not None and (indicator_id, ref) in partition_key:
            pk = partition_key[(indicator_id, ref)]
        else:
            et = opens.astimezone(ET)
            pk = f"{et.year:04d}-{et.month:02d}"
        plan.append((ind, ref, opens, info_month, pk))

    # Vintages needed, read in one pass (snapshot archive), and the release history if any target needs it.
    vintages: dict[str, dict[str, tuple[pl.DataFrame, dict[str, int]]]] = {"md": {}, "qd": {}}
    for kind in ("md", "qd"):
        wanted = set()
        for ind, _, _, info_month, _ in plan:
            if ind.fred_md_column and ind.id not in AR1_LOG_INDICATORS and (ind.frequency == "quarterly") == (kind == "qd"):
                try:
                    wanted.add(fred_md.vintage_preceding(info_month, kind, transport=transport, snapshot_dir=snap))
                except SourceError:
                    pass  # reported per target below
        if wanted and transport == "snapshot":
            try:
                vintages[kind] = fred_md.load_vintages(sorted(wanted), kind, transport=transport, snapshot_dir=snap)
            except SourceError:
                vintages[kind] = {}  # each target retries and reports its own error
    need_releases = any(ind.fred_md_column is None or ind.id in AR1_LOG_INDICATORS for ind, *_ in plan)
    rel_error = None
    if need_releases and releases is None:
        if transport == "snapshot":
            try:
                releases = snapshot_first_releases(snap)
            except (SourceError, ValueError) as exc:
                rel_error = f"release history unavailable: {exc}"
        else:
            rel_error = ("live transport: no first-release history for indicators outside FRED-MD; pass "
                         "releases= (e.g. the releases table)")

    rows = []
    for ind, ref, opens, info_month, pk in plan:
        kind = "qd" if ind.frequency == "quarterly" else "md"
        try:
            if ind.fred_md_column is not None and ind.id not in AR1_LOG_INDICATORS:
                hist = fred_history(ind, info_month, transport=transport, snapshot_dir=snap, vintages=vintages[kind])
            else:
                if rel_error is not None:
                    raise ArimaError(rel_error)
                wanted = fred_md.resolve_preceding_vintage(info_month, "md", transport="live").wanted
                last = _period_date(fred_md._month_index(wanted) - 1, False)
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
        return build_nowcasts(pl.DataFrame(schema={"partition_key": pl.Utf8, "model_id": pl.Utf8,
                                                   "indicator_id": pl.Utf8, "reference_period": pl.Date,
                                                   "issued_at": pl.Datetime("us", "UTC"), "value": pl.Float64}),
                              producer=PRODUCER)
    frame = pl.DataFrame(rows, schema_overrides={"issued_at": pl.Datetime("us", "UTC"),
                                                 "available_at": pl.Datetime("us", "UTC"),
                                                 "reference_period": pl.Date, "value": pl.Float64})
    return build_nowcasts(frame, producer=PRODUCER)


def arima_nowcasts_for_windows(windows: pl.DataFrame, **kwargs) -> pl.DataFrame:
    """:func:`arima_nowcasts` for a ``nowcast_windows`` frame (``indicator_id, reference_period, opens_at,
    partition_key``): one nowcast per window, issued at ``opens_at``, in the window's partition."""
    need = ("indicator_id", "reference_period", "opens_at", "partition_key")
    missing = [c for c in need if c not in windows.columns]
    if missing:
        raise ValueError(f"windows frame lacks column(s) {missing}")
    targets, opens, pks = [], {}, {}
    for r in windows.select(need).iter_rows(named=True):
        key = (r["indicator_id"], r["reference_period"])
        targets.append(key)
        opens[key] = r["opens_at"]
        pks[key] = r["partition_key"]
    return arima_nowcasts(targets, window_opens_at=opens, partition_key=pks, **kwargs)
