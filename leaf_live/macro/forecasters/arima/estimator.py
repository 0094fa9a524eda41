"""Auto-ARIMA estimator (LiveMacroEval App. I, §3.5): the likelihood, one fit, the AIC grid, order selection.

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
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize
from statsforecast.arima import arima_css, arima_like

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
    """App. I trend rule: constant ('c') when d = 0, linear time trend ('t') when d = 1, none ('n') when d =
    2."""
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
        raise ArimaError(
            f"trend={trend!r} with d={d}: allowed are 'c' or 'n' for d=0, 't' or 'n' for d=1, 'n' for d=2"
        )
    return 0 if trend == "n" else 1


def _delta(d: int) -> np.ndarray:
    """Coefficients of the differencing states: y_t = sum delta_i y_{t-i} + w_t (R/statsforecast
    convention)."""
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
    R[1 : q + 1] = theta
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
    _hess_inv: np.ndarray | None = field(
        repr=False, default=None
    )  # BFGS inverse Hessian at the optimum (scaled)

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
        return params[:p], params[p : p + q], params[p + q :]

    def residual_series(self, params: np.ndarray) -> np.ndarray:
        _, _, beta = self.split(params)
        return self.z - beta[0] if self.k else self.z

    def run(self, params: np.ndarray):
        p, q = self.p, self.q
        return _filter(self.residual_series(params), params[:p], params[p : p + q], self.d, self.burn)

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
        return _stationary([-float(t) for t in params[self.p : self.p + self.q]])

    def css_objective(self, params: np.ndarray) -> float:
        """Half the log of the conditional sum of squares (pre-sample innovations 0, first p values of the
        difference conditioned on); statsforecast's ``arima_css``."""
        if not math.isfinite(params.sum()):
            return 1e10
        p, q = self.p, self.q
        w = self.z - params[p + q] if self.k else self.z
        res, _ = arima_css(w, self.arma, params[:p], params[p : p + q])
        if not (res > 0) or not math.isfinite(res):
            return 1e10
        return 0.5 * math.log(res)

    def canonical(self, params: np.ndarray) -> np.ndarray:
        """``params`` with any MA root inside the unit circle reflected outside (:func:`_invertible_ma`)."""
        if self.invertible(params):
            return params
        out = np.array(params, dtype=np.float64)
        out[self.p : self.p + self.q] = _invertible_ma(out[self.p : self.p + self.q])
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
    """Rows t = start..len(x)-1 of [x_{t-1}, ..., x_{t-m}] (zeros before the sample, like statsmodels'
    lagmat)."""
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


def _positive_definite(m: np.ndarray) -> np.ndarray | None:
    """``m`` symmetrized if it is a finite positive-definite matrix (BFGS's requirement), else None."""
    m = np.asarray(m, dtype=np.float64)
    if not np.all(np.isfinite(m)):
        return None
    m = 0.5 * (m + m.T)
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return None
    return m


def fit_arima(
    y: np.ndarray,
    p: int,
    d: int,
    q: int,
    trend: str,
    *,
    start: np.ndarray | None = None,
    maxiter: int = 200,
    css_stage: bool = True,
    hess_inv0: np.ndarray | None = None,
) -> ArimaFit:
    """Fit ARIMA(p, d, q) with ``trend`` ('n' none, 'c' constant for d = 0, 't' linear trend for d = 1) to the
    1-D finite series ``y`` by maximum likelihood, unconstrained (App. I; likelihood and AIC convention in
    the module docstring, identical to statsmodels' ``ARIMA(enforce_stationarity=False,
    enforce_invertibility=False)``).

    ``start``: initial ``[ar..., ma..., trend]`` in the internal scaled units (:func:`fit_grid` passes the
    (p, q-1) estimate for ``start_method='warm'``; :func:`scaled_params` converts a fit in the units of
    ``y``); default: :func:`css_start`. ``maxiter``: iterations of the CSS stage. ``css_stage=False`` skips
    the CSS stage and climbs the likelihood from ``start`` directly (a warm start from a nearby maximum, as
    the chain engine of :mod:`.engine` uses), with ``hess_inv0`` (scaled units, e.g. the previous fit's
    ``_hess_inv``) as BFGS's first inverse-Hessian guess. Pure AR orders ignore all four: they are closed
    form. Returns :class:`ArimaFit`; an order the data cannot support (too few observations, no finite
    likelihood) gets ``aic = inf`` and ``converged = False``. Raises :class:`ArimaError` for bad arguments
    (negative orders, d/trend combination, non-finite y, wrong ``start`` or ``hess_inv0`` shape).
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
        if hess_inv0 is not None:
            if np.shape(hess_inv0) != (npar, npar):
                raise ArimaError(f"hess_inv0 has shape {np.shape(hess_inv0)}: expected ({npar}, {npar})")
            hess_inv0 = _positive_definite(hess_inv0)
        if npar == 0:
            params = x0
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if CSS_FIRST and css_stage:
                    # Conditional sum of squares first (statsforecast's C++ recursion, ~30x cheaper than the
                    # filter), then the likelihood from there (R's / statsforecast's "CSS-ML" scheme); the CSS
                    # curvature, nearly the likelihood's, seeds the quasi-Newton steps so they start at full
                    # size.
                    css = _ForwardDiff(prob.css_objective)
                    r0 = minimize(
                        css.fun,
                        x0,
                        jac=css.jac,
                        method="L-BFGS-B",
                        options={"maxiter": maxiter, "ftol": CSS_FTOL, "gtol": CSS_GTOL},
                    )
                    x1 = prob.canonical(r0.x)
                    if np.all(np.isfinite(x1)) and prob.objective(x1) < prob.objective(x0):
                        x0 = x1
                        hess_inv0 = _inverse_hessian(prob.css_objective, x1)
                elif not css_stage and hess_inv0 is None:
                    hess_inv0 = _inverse_hessian(prob.css_objective, x0)  # the CSS curvature, as above
                opts = {"maxiter": ML_MAXITER, "gtol": 1e-5}
                if hess_inv0 is not None:
                    opts["hess_inv0"] = np.asarray(hess_inv0, dtype=np.float64)
                ml = _ForwardDiff(prob.objective)
                stall = _Stall()
                res = minimize(ml.fun, x0, jac=ml.jac, method="BFGS", options=opts, callback=stall)
            params, converged = prob.canonical(res.x), bool(res.success) or stall.flat >= 2
            hess_inv = getattr(res, "hess_inv", None)
            if start is not None and prob.objective(x0) < prob.objective(params):
                params = prob.canonical(x0)  # a warm start is never left for a worse point
            return _result(prob, params, converged, x, scale, offset, hess_inv)
    return _result(prob, params, converged, x, scale, offset, None)


def _result(
    prob: _Problem,
    params: np.ndarray,
    converged: bool,
    x: np.ndarray,
    scale: float,
    offset: float,
    hess_inv: np.ndarray | None,
) -> ArimaFit:
    """The :class:`ArimaFit` of ``prob`` at the scaled parameters ``params`` (filter run once more for the
    state the forecasts start from); a failed fit when the likelihood is not defined there."""
    n = len(x)
    p, d, q, trend = prob.p, prob.d, prob.q, prob.trend
    npar = p + q + prob.k
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
        p=int(p),
        d=d,
        q=int(q),
        trend=trend,
        ar=phi.copy(),
        ma=theta.copy(),
        trend_coef=tc,
        sigma2=sigma2_scaled * scale**2,
        loglik=loglik,
        aic=aic,
        n=n,
        nobs=int(nu),
        converged=converged,
        _scale=scale,
        _offset=offset,
        _a=a.copy(),
        _T=T,
        _Z=Z,
        _params=np.asarray(params, dtype=np.float64).copy(),
        _tail=x[len(x) - d :].copy() if d else np.zeros(0),
        _hess_inv=None if hess_inv is None else np.asarray(hess_inv, dtype=np.float64).copy(),
    )


def scaled_params(
    ar: np.ndarray, ma: np.ndarray, trend_coef: float, trend: str, scale: float, offset: float
) -> np.ndarray:
    """``[ar..., ma..., trend]`` in the internal scaled units of a series with ``_prepare``'s ``scale`` and
    ``offset`` (the inverse of what :class:`ArimaFit` reports): the mean ``(mu - offset) / scale`` for
    ``'c'``, the slope ``beta / scale`` for ``'t'``; AR and MA coefficients are scale free."""
    beta = [] if trend == "n" else [(trend_coef - offset) / scale if trend == "c" else trend_coef / scale]
    return np.concatenate([np.asarray(ar, dtype=np.float64), np.asarray(ma, dtype=np.float64), beta])


def evaluate_arima(
    y: np.ndarray, p: int, d: int, q: int, trend: str, ar: np.ndarray, ma: np.ndarray, trend_coef: float
) -> ArimaFit:
    """The burned likelihood, AIC and forecast state of ARIMA(p, d, q) with ``trend`` on ``y`` at the GIVEN
    parameters (units of ``y``, as :class:`ArimaFit` reports them), without optimizing: one filter pass.
    The chain engine uses it to screen orders at the previous vintage's estimates and to rebuild a cached
    fit. An MA part with roots inside the unit circle is evaluated at its invertible representative (same
    exact likelihood, module docstring). Returns :class:`ArimaFit` (``converged=False``; ``aic = inf``
    where the likelihood is not defined). Raises :class:`ArimaError` for bad arguments or coefficient
    counts that do not match (p, q)."""
    for name, v in (("p", p), ("q", q)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ArimaError(f"{name}={v!r}: expected a non-negative integer")
    if len(ar) != p or len(ma) != q:
        raise ArimaError(f"ar has {len(ar)}, ma {len(ma)} coefficients: expected p={p}, q={q}")
    x, scale, offset = _prepare(y, d)
    prob = _Problem(x, int(p), d, int(q), trend)
    n = len(x)
    params = scaled_params(ar, ma, trend_coef, trend, scale, offset)
    if n - prob.burn <= len(params) + 1 or not np.all(np.isfinite(params)):
        return _failed(prob, n, scale, offset)
    return _result(prob, prob.canonical(params), False, x, scale, offset, None)


def _failed(prob: _Problem, n: int, scale: float, offset: float) -> ArimaFit:
    nan = float("nan")
    return ArimaFit(
        prob.p,
        prob.d,
        prob.q,
        prob.trend,
        np.full(prob.p, nan),
        np.full(prob.q, nan),
        nan,
        nan,
        -math.inf,
        math.inf,
        n,
        0,
        False,
        scale,
        offset,
    )


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
                start = np.concatenate([pp[:p], pp[p : p + q - 1], [0.0], pp[p + q - 1 :]])
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
