"""Huber-ridge market betas with HC1 covariance (LiveMacroEval App. K.2, Eq. 5, 9-11; K.3 no-COVID refit).

The historical regression maps the 16 standardized surprises of a timestamp-group event to its
announcement-window E-mini log return, with no intercept:

    r_g = sum_i beta_i S_{i,g} + u_g                                   (Eq. 5)

estimated by a Huber M-estimator with an L2 penalty, solved by IRLS:

* initialised at the ridge solution ``(X'X + lam I)^{-1} X'r``;
* each step: working residuals ``u``, scale ``s = 1.4826 * median|u - median(u)|``, threshold
  ``delta = 1.345 * s``, Huber weights ``w = min(1, delta/|u|)``, then the weighted ridge solve
  ``(X'WX + lam I) beta = X'Wr``;
* stop when ``||beta_new - beta||_2 / ||beta||_2 <= 1e-7``; ``iterations`` counts the weighted solves.

Penalty convention: the normal equations carry ``lam I`` (Eq. 11's ``A = X'WX + lam I``), i.e. the
objective actually minimised is ``sum rho_delta(u) + (lam/2) ||beta||^2``. Eq. 9 writes ``lam ||beta||^2``;
with that reading (``2 lam I``) Table 9 is *not* reproduced, with ``lam I`` it is to every printed digit.

lambda is chosen by blocked chronological 5-fold CV over ``np.logspace(-4, 4, 25)``: the events in time
order are cut into 5 contiguous blocks; each block is held out once, the model is fitted on the other
four, and the held-out residuals are scored by the mean Huber loss with the threshold re-estimated on
the held-out residuals (1.345 * 1.4826 * MAD). On the released 2,163-event panel this selects
lambda = 21.54 (the paper's value); scoring folds by MSE selects 10.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

import numpy as np
import polars as pl

from leaf_live.core.pit import ET, require_columns, require_tz_aware
from leaf_live.macro.catalog import INDICATOR_IDS

HUBER_C = 1.345
MAD_CONSTANT = 1.4826
DEFAULT_TOL = 1e-7
DEFAULT_MAX_ITER = 1000
DEFAULT_LAMBDA_GRID: np.ndarray = np.logspace(-4, 4, 25)
DEFAULT_FOLDS = 5
COVID_WINDOW = (date(2020, 3, 1), date(2020, 12, 31))  # inclusive, release dates in America/New_York (K.3)

CvLoss = Literal["huber", "mse"]


class BetaFitError(ValueError):
    """The regression inputs are unusable; the message names the input and the offending value."""


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


def _median(a: np.ndarray) -> float:
    # np.median's arithmetic without its per-call overhead (IRLS calls this twice per step)
    n = a.size
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    part = np.partition(a, (k - 1, k))
    return float((part[k - 1] + part[k]) / 2.0)


def mad_scale(u: np.ndarray, constant: float = MAD_CONSTANT) -> float:
    """Robust scale ``constant * median|u - median(u)|`` (App. K.2). ``u``: (n,) residuals."""
    u = np.asarray(u, dtype=float)
    if u.size == 0:
        raise BetaFitError("MAD of an empty residual vector")
    return float(constant * _median(np.abs(u - _median(u))))


def huber_weights(u: np.ndarray, delta: float) -> np.ndarray:
    """IRLS weights ``w = 1`` for ``|u| <= delta`` else ``delta/|u|`` (App. K.2). Shape of ``u``."""
    a = np.abs(u)
    # the floor keeps delta/a finite for exactly fitted events; their weight is 1 either way
    return np.minimum(1.0, delta / np.maximum(a, delta * 1e-12))


def huber_loss(u: np.ndarray, delta: float) -> np.ndarray:
    """Huber loss rho_delta(u) (Eq. 10), elementwise: u^2/2 inside delta, delta|u| - delta^2/2 outside."""
    a = np.abs(u)
    return np.where(a <= delta, 0.5 * a * a, delta * a - 0.5 * delta * delta)


def _check_design(X: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=float)
    r = np.asarray(r, dtype=float)
    if X.ndim != 2:
        raise BetaFitError(f"X must be a 2-D (n events x p indicators) array, got shape {X.shape}")
    if r.ndim != 1 or r.shape[0] != X.shape[0]:
        raise BetaFitError(f"r must have shape ({X.shape[0]},) to match X, got {r.shape}")
    if X.shape[0] == 0:
        raise BetaFitError("X has no events (n = 0)")
    if not np.isfinite(X).all():
        bad = np.argwhere(~np.isfinite(X))[0]
        raise BetaFitError(
            f"X holds a non-finite surprise at event row {bad[0]}, column {bad[1]}: {X[tuple(bad)]}"
        )
    if not np.isfinite(r).all():
        bad = int(np.flatnonzero(~np.isfinite(r))[0])
        raise BetaFitError(f"r holds a non-finite return at event row {bad}: {r[bad]}")
    return X, r


def _solve(A: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError as exc:
        raise BetaFitError(
            f"{what}: normal equations are singular ({exc}); use lambda > 0 or more events"
        ) from exc


@dataclass(frozen=True)
class HuberRidgeFit:
    """One IRLS fit. ``beta`` (p,) log-return per standardized surprise; ``weights``/``residuals`` (n,)."""

    beta: np.ndarray
    lam: float
    delta: float  # Huber threshold of the final IRLS step (log-return units)
    scale: float  # 1.4826 * MAD of the working residuals of the final step; delta = c * scale
    weights: np.ndarray  # converged Huber weights (those of the final weighted solve)
    residuals: np.ndarray  # r - X beta at convergence
    iterations: int  # weighted solves after the ridge initialisation
    converged: bool
    c: float = HUBER_C


def huber_ridge_irls(
    X: np.ndarray,
    r: np.ndarray,
    lam: float,
    *,
    c: float = HUBER_C,
    mad_constant: float = MAD_CONSTANT,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
) -> HuberRidgeFit:
    """No-intercept Huber-ridge regression of ``r`` on ``X`` by IRLS (LiveMacroEval Eq. 5, 9, 10).

    ``X``: (n, p) standardized surprises (0 where a field was not released); ``r``: (n,) log returns.
    ``lam`` >= 0 is the ridge penalty in the normal equations ``(X'WX + lam I)``. Starts at the ridge
    solution, recomputes ``delta = c * mad_constant * MAD(u)`` every step, stops when the relative L2
    change of beta is <= ``tol`` (``converged=False`` if ``max_iter`` weighted solves did not get there).

    Raises :class:`BetaFitError` for non-finite or mis-shaped inputs, negative ``lam``, a singular
    system, or a zero MAD (a perfect fit leaves the Huber threshold undefined).
    """
    X, r = _check_design(X, r)
    if not (np.isfinite(lam) and lam >= 0):
        raise BetaFitError(f"lam must be a finite number >= 0, got {lam!r}")
    p = X.shape[1]
    pen = lam * np.eye(p)
    beta = _solve(X.T @ X + pen, X.T @ r, "ridge initialisation")
    Xt = X.T
    converged = False
    it = 0
    w = np.ones(X.shape[0])
    delta = scale = float("nan")
    for it in range(1, max_iter + 1):
        u = r - X @ beta
        scale = mad_scale(u, mad_constant)
        if scale <= 0.0:
            raise BetaFitError(
                f"MAD of the working residuals is 0 at IRLS step {it}: the Huber threshold is undefined "
                "(more than half the events are fitted exactly)"
            )
        delta = c * scale
        w = huber_weights(u, delta)
        Xw = Xt * w
        new = _solve(Xw @ X + pen, Xw @ r, f"IRLS step {it}")
        diff = new - beta
        norm = math.sqrt(beta @ beta)
        change = math.sqrt(diff @ diff) / norm if norm > 0 else math.sqrt(diff @ diff)
        beta = new
        if change <= tol:
            converged = True
            break
    return HuberRidgeFit(
        beta=beta,
        lam=float(lam),
        delta=float(delta),
        scale=float(scale),
        weights=w,
        residuals=r - X @ beta,
        iterations=it,
        converged=converged,
        c=c,
    )


def hc1_covariance(X: np.ndarray, fit: HuberRidgeFit, *, integer_df: bool = True) -> tuple[np.ndarray, float]:
    """HC1-style robust covariance of a Huber-ridge fit (LiveMacroEval Eq. 11).

    ``V = n/(n - df) A^{-1} B A^{-1}`` with ``A = X'WX + lam I`` (converged weights ``W``),
    ``B = X' diag(psi_delta(u)^2) X``, ``psi_delta = clip(u, -delta, delta)`` and
    ``df_eff = tr(X A^{-1} X' W)``. ``df`` is ``df_eff`` rounded to an integer (``integer_df``, default):
    on the released panel that reproduces all 16 Table 9 SEs to the printed three decimals (df_eff = 13.44
    -> 13), while the fractional ``df_eff`` leaves retail sales (1.9117) and ISM services (1.4876) one unit
    above the table. Returns ``(V (p, p), df_eff)`` (``df_eff`` unrounded) in squared log-return units.
    Raises :class:`BetaFitError` when ``n <= df``.
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    w = fit.weights
    Xw = X.T * w
    A = Xw @ X + fit.lam * np.eye(p)
    Ainv = np.linalg.inv(A)
    psi = np.clip(fit.residuals, -fit.delta, fit.delta)
    B = (X.T * psi**2) @ X
    # tr(X A^-1 X' W) = tr(A^-1 X'WX) avoids the n x n hat matrix
    df_eff = float(np.trace(Ainv @ (Xw @ X)))
    df = float(round(df_eff)) if integer_df else df_eff
    if n <= df:
        raise BetaFitError(f"n = {n} events is not above df = {df:.3f}; HC1 covariance undefined")
    V = n / (n - df) * (Ainv @ B @ Ainv)
    return (V + V.T) / 2.0, df_eff


def blocked_folds(n: int, k: int = DEFAULT_FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """Blocked chronological k-fold split of ``n`` time-ordered events: (train_idx, test_idx) per fold.

    Fold j holds out the j-th contiguous block (the first ``n % k`` blocks have one extra event) and
    trains on all the others, earlier and later. Raises :class:`BetaFitError` if ``k < 2`` or ``n < k``.
    """
    if k < 2 or n < k:
        raise BetaFitError(f"blocked CV needs 2 <= folds <= n events; got folds={k}, n={n}")
    idx = np.arange(n)
    return [(np.setdiff1d(idx, block, assume_unique=True), block) for block in np.array_split(idx, k)]


@dataclass(frozen=True)
class CVResult:
    """Cross-validation curve: ``scores[j]`` = mean over folds of the held-out loss at ``grid[j]``."""

    grid: np.ndarray  # (m,)
    scores: np.ndarray  # (m,)
    fold_scores: np.ndarray  # (m, k)
    loss: str
    best_lambda: float


def heldout_loss(
    u: np.ndarray, loss: CvLoss, c: float = HUBER_C, mad_constant: float = MAD_CONSTANT
) -> float:
    """Mean held-out loss of residuals ``u``: Huber (threshold from the held-out MAD) or MSE."""
    if loss == "mse":
        return float(np.mean(u * u))
    if loss == "huber":
        return float(np.mean(huber_loss(u, c * mad_scale(u, mad_constant))))
    raise BetaFitError(f"cv loss must be 'huber' or 'mse', got {loss!r}")


def cross_validate_lambda(
    X: np.ndarray,
    r: np.ndarray,
    *,
    grid: Sequence[float] | np.ndarray = DEFAULT_LAMBDA_GRID,
    n_folds: int = DEFAULT_FOLDS,
    loss: CvLoss = "huber",
    c: float = HUBER_C,
    mad_constant: float = MAD_CONSTANT,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
) -> CVResult:
    """Blocked chronological k-fold CV of the Huber-ridge penalty (App. K.2).

    Rows of ``X`` (n, p) / ``r`` (n,) must be in release-time order. For every ``lam`` in ``grid`` and
    every fold, fits :func:`huber_ridge_irls` on the training blocks and scores the held-out block by
    :func:`heldout_loss`. The smallest mean score wins (ties: the smaller lambda).
    """
    X, r = _check_design(X, r)
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise BetaFitError(f"lambda grid must be a non-empty 1-D array of finite values >= 0, got {grid!r}")
    if loss not in ("huber", "mse"):
        raise BetaFitError(f"cv loss must be 'huber' or 'mse', got {loss!r}")
    folds = blocked_folds(X.shape[0], n_folds)
    fold_scores = np.empty((grid.size, len(folds)))
    for f, (tr, te) in enumerate(folds):
        Xtr, rtr, Xte, rte = X[tr], r[tr], X[te], r[te]
        for j, lam in enumerate(grid):
            fit = huber_ridge_irls(Xtr, rtr, lam, c=c, mad_constant=mad_constant, tol=tol, max_iter=max_iter)
            fold_scores[j, f] = heldout_loss(rte - Xte @ fit.beta, loss, c, mad_constant)
    scores = fold_scores.mean(axis=1)
    return CVResult(
        grid=grid,
        scores=scores,
        fold_scores=fold_scores,
        loss=loss,
        best_lambda=float(grid[int(np.argmin(scores))]),
    )


# ---------------------------------------------------------------------------------------------
# Event design and the frozen fit
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventDesign:
    """Timestamp-group events in time order: ``X`` (n, 16) surprises, ``r`` (n,) returns, ``release_at`` (n,)
    UTC."""

    X: np.ndarray
    r: np.ndarray
    release_at: np.ndarray  # datetime64[us], UTC
    indicator_ids: tuple[str, ...]
    n_dropped_no_return: int = 0


def event_design(
    events: pl.DataFrame,
    *,
    indicator_ids: Sequence[str] = INDICATOR_IDS,
    surprise_prefix: str = "s_",
    return_column: str = "r_g",
    time_column: str = "release_at",
) -> EventDesign:
    """Regression design from a timestamp-group event frame (``surprise_events`` schema by default).

    ``events`` needs ``time_column`` (tz-aware datetime), ``return_column`` (log return; NULL = unusable
    window, dropped and counted) and one ``{surprise_prefix}{indicator_id}`` column per indicator.
    Rows are sorted by time. Raises :class:`BetaFitError` naming a missing column, a naive timestamp,
    a duplicate timestamp or a NULL surprise (with its timestamp).
    """
    cols = [f"{surprise_prefix}{i}" for i in indicator_ids]
    require_columns(events, [time_column, return_column, *cols], "event", BetaFitError)
    require_tz_aware(events, time_column, "event", BetaFitError)
    ev = events.sort(time_column)
    dup = ev.filter(pl.col(time_column).is_duplicated())
    if dup.height:
        raise BetaFitError(f"duplicate event timestamp {time_column}={dup[time_column][0]}")
    usable = ev.filter(pl.col(return_column).is_not_null() & pl.col(return_column).is_not_nan())
    for c in cols:
        nul = usable.filter(pl.col(c).is_null())
        if nul.height:
            raise BetaFitError(f"event column {c} is NULL at {time_column}={nul[time_column][0]}")
    ts = usable[time_column].dt.convert_time_zone("UTC").dt.replace_time_zone(None).cast(pl.Datetime("us"))
    return EventDesign(
        X=usable.select(cols).to_numpy().astype(float),
        r=usable[return_column].to_numpy().astype(float),
        release_at=ts.to_numpy(),
        indicator_ids=tuple(indicator_ids),
        n_dropped_no_return=ev.height - usable.height,
    )


def covid_mask(release_at: np.ndarray, window: tuple[date, date] = COVID_WINDOW) -> np.ndarray:
    """True for events whose America/New_York release date lies in ``window`` (inclusive; K.3)."""
    s = pl.Series("t", np.asarray(release_at, dtype="datetime64[us]")).dt.replace_time_zone("UTC")
    d = s.dt.convert_time_zone(ET.key).dt.date()
    return ((d >= window[0]) & (d <= window[1])).to_numpy()


@dataclass(frozen=True)
class MarketBetaFit:
    """A frozen market-beta fit: what scores use, plus everything needed to reproduce it."""

    fit_id: str
    indicator_ids: tuple[str, ...]
    beta: np.ndarray  # (p,) log return per standardized surprise
    se: np.ndarray  # (p,) HC1 marginal standard errors
    cov: np.ndarray  # (p, p) full V_beta
    lam: float
    lam_source: str  # "cv" | "fixed"
    delta: float
    scale: float
    iterations: int
    converged: bool
    df_eff: float
    n_events: int
    window_start: datetime  # first event used (UTC)
    window_end: datetime  # last event used (UTC)
    covid_excluded: bool
    n_covid_dropped: int
    settings: dict = field(default_factory=dict)
    cv: CVResult | None = None
    sigma: np.ndarray | None = None  # (p,) sigma_i the design's S were standardized by (reporting unit)
    sigma_rule: str | None = None  # surprise_scales | fit_window


def _fit_id(X: np.ndarray, r: np.ndarray, t: np.ndarray, ids: Sequence[str], settings: dict) -> str:
    h = hashlib.sha256()
    for a in (
        np.ascontiguousarray(X, dtype="<f8"),
        np.ascontiguousarray(r, dtype="<f8"),
        np.ascontiguousarray(t.astype("datetime64[us]").astype("<i8")),
    ):
        h.update(a.tobytes())
    h.update(json.dumps({"ids": list(ids), **settings}, sort_keys=True, default=str).encode())
    return "hr-" + h.hexdigest()[:16]


def _utc(t: np.datetime64) -> datetime:
    return datetime.fromisoformat(str(np.datetime64(t, "us"))).replace(tzinfo=UTC)


def fit_market_betas(
    design: EventDesign,
    *,
    lam: float | None = None,
    grid: Sequence[float] | np.ndarray = DEFAULT_LAMBDA_GRID,
    n_folds: int = DEFAULT_FOLDS,
    cv_loss: CvLoss = "huber",
    exclude_covid: bool = False,
    c: float = HUBER_C,
    mad_constant: float = MAD_CONSTANT,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
) -> MarketBetaFit:
    """Fit the frozen market betas (App. K.2) on ``design``; optional COVID-excluded refit (K.3).

    ``lam=None`` selects lambda by :func:`cross_validate_lambda` (on the same sample that is fitted);
    a number fixes it (K.3 refits at the frozen full-sample lambda). ``exclude_covid`` drops events
    released 2020-03-01..2020-12-31 (America/New_York) before anything else. The ``fit_id`` is a hash of
    the data actually used and every setting, so a refit on other data or settings gets a new id.
    Raises :class:`BetaFitError` (bad inputs, no convergence).
    """
    X, r, t = design.X, design.r, design.release_at
    dropped = 0
    if exclude_covid:
        m = covid_mask(t)
        dropped = int(m.sum())
        X, r, t = X[~m], r[~m], t[~m]
    X, r = _check_design(X, r)
    cv = None
    if lam is None:
        cv = cross_validate_lambda(
            X,
            r,
            grid=grid,
            n_folds=n_folds,
            loss=cv_loss,
            c=c,
            mad_constant=mad_constant,
            tol=tol,
            max_iter=max_iter,
        )
        lam_used, lam_source = cv.best_lambda, "cv"
    else:
        lam_used, lam_source = float(lam), "fixed"
    fit = huber_ridge_irls(X, r, lam_used, c=c, mad_constant=mad_constant, tol=tol, max_iter=max_iter)
    if not fit.converged:
        raise BetaFitError(f"IRLS did not converge in max_iter={max_iter} steps at lambda={lam_used}")
    V, df_eff = hc1_covariance(X, fit)
    settings = {
        "estimator": "huber_ridge_irls",
        "c": c,
        "mad_constant": mad_constant,
        "tol": tol,
        "max_iter": max_iter,
        "hc1_df": "round(df_eff)",
        "lam": lam_used,
        "lam_source": lam_source,
        "exclude_covid": exclude_covid,
        "grid": [float(g) for g in np.asarray(grid, dtype=float)] if lam is None else None,
        "n_folds": n_folds if lam is None else None,
        "cv_loss": cv_loss if lam is None else None,
    }
    return MarketBetaFit(
        fit_id=_fit_id(X, r, t, design.indicator_ids, settings),
        indicator_ids=design.indicator_ids,
        beta=fit.beta,
        se=np.sqrt(np.diag(V)),
        cov=V,
        lam=lam_used,
        lam_source=lam_source,
        delta=fit.delta,
        scale=fit.scale,
        iterations=fit.iterations,
        converged=fit.converged,
        df_eff=df_eff,
        n_events=X.shape[0],
        window_start=_utc(t.min()),
        window_end=_utc(t.max()),
        covid_excluded=exclude_covid,
        n_covid_dropped=dropped,
        settings=settings,
        cv=cv,
    )
