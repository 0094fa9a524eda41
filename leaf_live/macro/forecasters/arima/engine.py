"""Fast App. I engine: one series' AIC grids over its vintages, fitted as a chain (LiveMacroEval App. I).

The model is App. I's, unchanged (:mod:`.estimator`): for each history, every (p, q) in 0..12 x 0..3 is fitted
by maximum likelihood (statsmodels' burned approximate-diffuse likelihood, no stationarity/invertibility
constraint) and the order of minimum AIC is chosen. What this module changes is how each order's maximum
is searched for, using the fact that a backtest refits the same series every month on a vintage that differs
from the previous one by an observation and a few revisions:

* pure AR orders (q = 0) are closed form (conditional least squares = the maximum), always;
* a chain starts with a full **cold grid** (every MA order from statsmodels' start values, CSS then the
  likelihood: :func:`.estimator.fit_grid`'s ``'css'`` route, the "cold estimator"), and repeats it once at
  least :data:`COLD_EVERY` months of vintages have passed since the last one (chains otherwise drift into
  worse local maxima);
* in between, each MA order is **screened**: the likelihood is evaluated once at the order's estimate from
  the previous vintage. The :data:`SCREEN_TOP` best screened orders are refitted from there (BFGS on the
  likelihood, started with the previous inverse Hessian), then every order that was within
  :data:`PREV_MARGIN` of the best AIC at the previous vintage (a sharp likelihood can make a competitive
  order screen badly), then every order whose screened AIC is within ``max(SCREEN_MARGIN, 2 x the largest
  gain a refit just made)`` of the best AIC so far. A screened AIC is the AIC at a feasible point, so it can
  only overstate the order's maximized AIC; an order left at its screened value keeps those parameters for
  the next vintage;
* when a warm refit gains more than :data:`COLD_GAIN` AIC units over its screened value, the data moved far
  from the previous vintage's (a shock such as 2020, a benchmark revision) and the cold grid runs at once;
* on a cold-grid vintage the warm route runs too and each order keeps the better (lower AIC) of the two;
* a history whose content (values, d, trend) was already fitted, earlier in the chain or in a ``known``
  cache (:mod:`.fit_cache`), is not fitted again.

So an order chosen here differs from the cold estimator's only where one of the two routes missed a higher
likelihood maximum; ``benchmarks/arima.py`` counts how often and which one found the lower AIC.

Parallelism (:func:`fit_chains`): chains are independent, so they are spread over one process pool started
once per batch, longest first, with one BLAS thread per worker (threadpoolctl): scipy's optimizer calls BLAS
on tiny matrices, where several threads per process only compete for the cores.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from leaf_live.macro.forecasters.arima.estimator import (
    P_MAX,
    Q_MAX,
    ArimaError,
    ArimaFit,
    _check_spec,
    _prepare,
    evaluate_arima,
    fit_arima,
    scaled_params,
)

ORDERS_APP_I: tuple[tuple[int, int], ...] = tuple((p, q) for p in range(P_MAX + 1) for q in range(Q_MAX + 1))
ORDERS_AR1: tuple[tuple[int, int], ...] = (
    (1, 0),
)  # App. I's ISM rule: AR(1) with a constant, on the log level
COLD_EVERY = 12  # months of vintages between full cold grids in a chain
SCREEN_TOP = 3  # MA orders refitted from the warm start, best screened AIC first ...
SCREEN_MARGIN = 2.0  # ... plus every MA order screened within this many AIC units of the best so far
PREV_MARGIN = 2.0  # ... and every MA order that was within this of the best AIC at the previous vintage
COLD_GAIN = 4.0  # a cold grid at once when a warm refit gains more than this (the data moved a lot)
METHODS = ("closed_form", "cold", "warm", "screened", "failed")


@dataclass(frozen=True)
class OrderFit:
    """One (p, q) of a grid: coefficients in the units of the modelled series (:class:`.estimator.ArimaFit`
    conventions; ``trend_coef`` NaN for trend 'n'), ``loglik``/``aic`` at those coefficients (``aic = inf``
    when the order could not be fitted), ``nobs`` observations in the likelihood and how they were found:
    ``method`` 'closed_form' (q = 0), 'cold' (statsmodels' start values, CSS-ML), 'warm' (refitted from the
    previous vintage's estimate), 'screened' (the previous estimate, evaluated, not refitted) or 'failed'."""

    p: int
    q: int
    ar: tuple[float, ...]
    ma: tuple[float, ...]
    trend_coef: float
    loglik: float
    aic: float
    nobs: int
    method: str
    converged: bool
    hess_inv: np.ndarray | None = field(default=None, repr=False, compare=False)  # scaled units, warm starts

    @classmethod
    def from_fit(cls, fit: ArimaFit, method: str) -> OrderFit:
        if not math.isfinite(fit.aic):
            method = "failed"
        return cls(
            fit.p,
            fit.q,
            tuple(float(v) for v in fit.ar),
            tuple(float(v) for v in fit.ma),
            float(fit.trend_coef),
            float(fit.loglik),
            float(fit.aic),
            int(fit.nobs),
            method,
            bool(fit.converged),
            fit._hess_inv,
        )


@dataclass(frozen=True)
class GridFit:
    """The App. I grid of one history: ``orders`` ``{(p, q): OrderFit}``; ``content_hash``
    (:func:`content_hash` of the history), ``n`` observations, ``d``/``trend``; ``period`` (month index of the
    vintage, drives the cold-grid schedule) and ``label`` (e.g. the vintage ``'2024-03'``); ``cold_grid``: a
    full cold grid was run for it; ``reused``: taken from an earlier item of the chain or the ``known`` cache
    instead of fitted here."""

    series_id: str
    content_hash: str
    d: int
    trend: str
    n: int
    period: int
    label: str | None
    cold_grid: bool
    orders: Mapping[tuple[int, int], OrderFit]
    reused: bool = False
    available_at: datetime | None = None

    def best(self) -> OrderFit:
        """The order of minimum AIC (ties: smaller p, then q; App. I / :func:`.estimator.select_order`).
        Raises :class:`ArimaError` when no order could be fitted."""
        best = min(self.orders.values(), key=lambda f: (f.aic, f.p, f.q))
        if not math.isfinite(best.aic):
            raise ArimaError(
                f"no ARIMA(p,{self.d},q) order could be fitted to {self.n} observations "
                f"({self.series_id}, {self.label or self.period})"
            )
        return best

    def model(self, y: np.ndarray) -> ArimaFit:
        """The chosen order as an :class:`ArimaFit` on ``y`` (the history this grid was fitted to; its content
        hash is checked), ready to :meth:`~.estimator.ArimaFit.forecast`. Raises :class:`ArimaError`."""
        if content_hash(y, self.d, self.trend) != self.content_hash:
            raise ArimaError(
                f"y is not the history this grid was fitted to ({self.series_id}, "
                f"{self.label or self.period})"
            )
        b = self.best()
        fit = evaluate_arima(y, b.p, self.d, b.q, self.trend, np.array(b.ar), np.array(b.ma), b.trend_coef)
        if not math.isfinite(fit.aic):
            raise ArimaError(f"ARIMA({b.p},{self.d},{b.q}) does not evaluate on this history")
        return fit


@dataclass(frozen=True)
class ChainItem:
    """One history of a chain: ``y`` (1-D, finite, in the modelled space, e.g. log levels), ``period`` (month
    index ``year * 12 + month - 1`` of its vintage, or of the month it was seen for first-release
    histories), an optional ``label`` and ``available_at`` (when the history was known: the earliest window
    open that used it, UTC)."""

    y: np.ndarray
    period: int
    label: str | None = None
    available_at: datetime | None = None


@dataclass(frozen=True)
class SeriesChain:
    """A series' histories in vintage order: ``series_id`` (e.g. ``'FRED-MD:CPIAUCSL:log'``), ``d`` and
    ``trend`` (App. I, fixed per series), ``items`` sorted by ``period``, ``orders`` the (p, q) grid
    (:data:`ORDERS_APP_I`, or :data:`ORDERS_AR1` for the ISM rule)."""

    series_id: str
    d: int
    trend: str
    items: tuple[ChainItem, ...]
    orders: tuple[tuple[int, int], ...] = ORDERS_APP_I

    def __post_init__(self) -> None:
        _check_spec(self.d, self.trend)
        periods = [it.period for it in self.items]
        if periods != sorted(periods):
            k = next(i for i in range(1, len(periods)) if periods[i] < periods[i - 1])
            raise ArimaError(
                f"{self.series_id}: items[{k}].period={periods[k]} is before items[{k - 1}]"
                f".period={periods[k - 1]}; a chain runs in vintage order"
            )
        if not self.orders:
            raise ArimaError(f"{self.series_id}: orders is empty")


def content_hash(y: np.ndarray, d: int, trend: str) -> str:
    """SHA-256 (hex, 32 characters) of a history's exact float64 values with its d and trend: two
    histories with the same hash get the same fit. Raises :class:`ArimaError` for a non-1-D ``y``."""
    arr = np.ascontiguousarray(np.asarray(y, dtype=np.float64))
    if arr.ndim != 1:
        raise ArimaError(f"y has shape {arr.shape}: expected a 1-D series")
    h = hashlib.sha256(f"d={d};trend={trend};n={len(arr)};".encode())
    h.update(arr.astype("<f8").tobytes())
    return h.hexdigest()[:32]


# ------------------------------------------------------------------------------------------------
# one grid
# ------------------------------------------------------------------------------------------------


def _warm_fit(y: np.ndarray, prev: OrderFit, d: int, trend: str, scale: float, offset: float) -> ArimaFit:
    start = scaled_params(np.array(prev.ar), np.array(prev.ma), prev.trend_coef, trend, scale, offset)
    h0 = prev.hess_inv
    if h0 is not None and h0.shape != (len(start), len(start)):
        h0 = None
    return fit_arima(y, prev.p, d, prev.q, trend, start=start, css_stage=False, hess_inv0=h0)


def _screen_and_refit(
    y: np.ndarray,
    d: int,
    trend: str,
    orders: Sequence[tuple[int, int]],
    prev: Mapping[tuple[int, int], OrderFit],
    exact: dict[tuple[int, int], OrderFit],
) -> tuple[dict[tuple[int, int], OrderFit], float]:
    """Warm route for the MA orders with a previous estimate: screen them all, refit the promising ones.
    ``exact`` holds the closed-form AR fits of this history (they bound the best AIC from above). Returns the
    fits and the largest AIC gain of a refit over its screened value."""
    _, scale, offset = _prepare(y, d)
    screened: dict[tuple[int, int], OrderFit] = {}
    for key in orders:
        pf = prev[key]
        fit = evaluate_arima(y, pf.p, d, pf.q, trend, np.array(pf.ar), np.array(pf.ma), pf.trend_coef)
        of = OrderFit.from_fit(fit, "screened")
        # keep the previous inverse Hessian: it seeds the refit of the next vintage too
        screened[key] = replace(of, hess_inv=pf.hess_inv)
    out = dict(screened)
    best = min([f.aic for f in exact.values()] + [f.aic for f in screened.values()], default=math.inf)
    ranked = sorted(screened, key=lambda k: (screened[k].aic, k))
    gain = 0.0
    done: set[tuple[int, int]] = set()

    def refit(key: tuple[int, int]) -> None:
        nonlocal best, gain
        fit = OrderFit.from_fit(_warm_fit(y, prev[key], d, trend, scale, offset), "warm")
        done.add(key)
        if fit.aic <= screened[key].aic:
            out[key] = fit
            if math.isfinite(screened[key].aic):
                gain = max(gain, screened[key].aic - fit.aic)
            best = min(best, fit.aic)

    for key in ranked[:SCREEN_TOP]:
        refit(key)
    prev_best = min((f.aic for f in prev.values()), default=math.inf)
    for (
        key
    ) in ranked:  # competitive last time: its likelihood may be too sharp for the screened value to tell
        if key not in done and prev[key].aic <= prev_best + PREV_MARGIN:
            refit(key)
    for key in ranked:  # in screened order: the margin only shrinks as best falls
        if key not in done and screened[key].aic <= best + max(SCREEN_MARGIN, 2.0 * gain):
            refit(key)
    return out, gain


def fit_grid_item(
    y: np.ndarray,
    d: int,
    trend: str,
    orders: Sequence[tuple[int, int]] = ORDERS_APP_I,
    *,
    prev: Mapping[tuple[int, int], OrderFit] | None = None,
    cold: bool = True,
) -> dict[tuple[int, int], OrderFit]:
    """Fit one history's grid. ``cold``: fit every MA order from statsmodels' start values (the cold
    estimator, :func:`.estimator.fit_arima`); ``prev``: the previous vintage's fits, for the warm route
    (screen, refit the promising orders). With both, each order keeps the lower AIC. Pure AR orders are
    closed form. MA orders with neither a cold fit nor a previous estimate are fitted cold.
    Returns ``{(p, q): OrderFit}``. Raises :class:`ArimaError` for bad input."""
    return _fit_item(y, d, trend, orders, prev, cold, math.inf)[0]


def _fit_item(
    y: np.ndarray,
    d: int,
    trend: str,
    orders: Sequence[tuple[int, int]],
    prev: Mapping[tuple[int, int], OrderFit] | None,
    cold: bool,
    cold_gain: float,
) -> tuple[dict[tuple[int, int], OrderFit], bool]:
    """:func:`fit_grid_item`, adding the cold fits anyway when a warm refit gained more than ``cold_gain``
    AIC units over its screened value (the data moved far from the previous vintage's). Returns the fits
    and whether the cold grid ran."""
    _check_spec(d, trend)
    out: dict[tuple[int, int], OrderFit] = {}
    ma_orders = []
    for p, q in orders:
        if q == 0:
            fit = fit_arima(y, p, d, 0, trend)
            out[(p, q)] = OrderFit.from_fit(fit, "closed_form" if fit.converged else "cold")
        else:
            ma_orders.append((p, q))
    warm_keys = [k for k in ma_orders if prev is not None and k in prev and math.isfinite(prev[k].aic)]
    if warm_keys:
        warm, gain = _screen_and_refit(y, d, trend, warm_keys, prev, dict(out))
        out.update(warm)
        cold = cold or gain > cold_gain
    for key in ma_orders:
        if cold or key not in out:
            c = OrderFit.from_fit(fit_arima(y, key[0], d, key[1], trend), "cold")
            if key not in out or c.aic < out[key].aic:
                if key in out and out[key].hess_inv is not None and c.hess_inv is None:
                    c = replace(c, hess_inv=out[key].hess_inv)
                out[key] = c
    return {k: out[k] for k in orders}, cold or not warm_keys


# ------------------------------------------------------------------------------------------------
# chains
# ------------------------------------------------------------------------------------------------


def fit_series_chain(
    chain: SeriesChain,
    *,
    known: Mapping[str, GridFit] | None = None,
    cold_every: int = COLD_EVERY,
    progress: Callable[[int], None] | None = None,
) -> list[GridFit]:
    """Fit every history of ``chain`` in vintage order (module docstring): a cold grid for the first one
    and whenever ``cold_every`` months have passed since the last cold grid, the warm route from the
    previous history's fits otherwise; a history whose :func:`content_hash` was fitted before (in this
    chain or in ``known``, a ``{content_hash: GridFit}`` cache of this series) is reused, not refitted.

    ``progress(1)`` is called after each item. Returns one :class:`GridFit` per item, in order. Raises
    :class:`ArimaError` for bad input (a non-finite or non-1-D history, items out of order)."""
    if cold_every < 1:
        raise ArimaError(f"cold_every={cold_every!r}: expected a positive number of months")
    seen: dict[str, GridFit] = {}
    out: list[GridFit] = []
    prev: Mapping[tuple[int, int], OrderFit] | None = None
    last_cold: int | None = None
    for k, item in enumerate(chain.items):
        h = content_hash(item.y, chain.d, chain.trend)
        hit = seen.get(h) or (known.get(h) if known is not None else None)
        if hit is not None and set(hit.orders) >= set(chain.orders):
            g = GridFit(
                chain.series_id,
                h,
                chain.d,
                chain.trend,
                len(item.y),
                item.period,
                item.label,
                hit.cold_grid,
                {o: hit.orders[o] for o in chain.orders},
                True,
                item.available_at,
            )
        else:
            try:
                _prepare(item.y, chain.d)
            except ArimaError as exc:
                raise ArimaError(
                    f"{chain.series_id}, items[{k}] ({item.label or item.period}): {exc}"
                ) from None
            cold = prev is None or last_cold is None or item.period - last_cold >= cold_every
            orders, cold = _fit_item(item.y, chain.d, chain.trend, chain.orders, prev, cold, COLD_GAIN)
            g = GridFit(
                chain.series_id,
                h,
                chain.d,
                chain.trend,
                len(item.y),
                item.period,
                item.label,
                cold,
                orders,
                False,
                item.available_at,
            )
        seen.setdefault(h, g)
        if g.cold_grid:
            last_cold = item.period if last_cold is None else max(last_cold, item.period)
        prev = g.orders
        out.append(g)
        if progress is not None:
            progress(1)
    return out


_progress_queue = None  # in a pool worker: where it reports each fitted history


def _limit_blas_threads(queue=None) -> None:
    """Pool initializer: one BLAS/OpenMP thread in this worker. threadpoolctl only reaches libraries already
    loaded, so load the estimator (numpy's and scipy's OpenBLAS, statsforecast's kernels) first. ``queue``:
    the parent's progress queue (one put per history fitted)."""
    global _progress_queue
    import scipy.linalg  # noqa: F401
    import scipy.optimize  # noqa: F401
    from threadpoolctl import threadpool_limits

    import leaf_live.macro.forecasters.arima.estimator  # noqa: F401

    threadpool_limits(limits=1)  # process-wide until the worker exits: tiny matrices, one core per worker
    _progress_queue = queue


def _fit_chain_job(args: tuple[SeriesChain, Mapping[str, GridFit] | None, int]) -> list[GridFit]:
    chain, known, cold_every = args
    queue = _progress_queue
    return fit_series_chain(
        chain,
        known=known,
        cold_every=cold_every,
        progress=None if queue is None else (lambda n: queue.put(n)),
    )


def _all_known(chain: SeriesChain, known: Mapping[str, GridFit] | None) -> bool:
    """Every history of ``chain`` is in ``known`` with a grid covering the chain's orders."""
    if not chain.items:
        return True
    if not known:
        return False
    need = set(chain.orders)
    for item in chain.items:
        hit = known.get(content_hash(item.y, chain.d, chain.trend))
        if hit is None or not set(hit.orders) >= need:
            return False
    return True


def chain_cost(chain: SeriesChain) -> float:
    """Rough relative CPU cost of a chain (for scheduling): cold grids dominate."""
    if not chain.items:
        return 0.0
    n_ma = sum(1 for _, q in chain.orders if q)
    span = chain.items[-1].period - chain.items[0].period
    return (1 + span / COLD_EVERY) * n_ma + 0.05 * len(chain.items) * n_ma


def fit_chains(
    chains: Sequence[SeriesChain],
    *,
    known: Mapping[str, Mapping[str, GridFit]] | None = None,
    workers: int = 1,
    cold_every: int = COLD_EVERY,
    progress: Callable[[int], None] | None = None,
) -> list[list[GridFit]]:
    """:func:`fit_series_chain` for every chain; ``known``: ``{series_id: {content_hash: GridFit}}`` (a fit
    cache). ``workers > 1``: one process pool (spawn start method: polars' and Dagster's threads make a forked
    child deadlock) for the whole batch, the costliest chains first, one BLAS thread per worker; ``workers
    <= 1`` fits in this process (BLAS limited to one thread for the duration). Returns the grids per chain,
    in the order of ``chains``; ``progress(n)`` is called as histories are done (from the workers, through a
    queue). Raises what :func:`fit_series_chain` raises."""
    from threadpoolctl import threadpool_limits

    jobs = [(c, (known or {}).get(c.series_id), cold_every) for c in chains]
    results: list[list[GridFit] | None] = [None] * len(jobs)
    # chains whose every history is already fitted (a rerun on a warm cache) are read back here: no pool
    for i, (c, k, e) in enumerate(jobs):
        if _all_known(c, k):
            results[i] = fit_series_chain(c, known=k, cold_every=e, progress=progress)
    todo = [i for i in range(len(jobs)) if results[i] is None]
    workers = min(workers, sum(1 for i in todo if jobs[i][0].items))
    if workers <= 1:
        with threadpool_limits(1):
            for i in todo:
                c, k, e = jobs[i]
                results[i] = fit_series_chain(c, known=k, cold_every=e, progress=progress)
        return [r if r is not None else [] for r in results]
    order = sorted(todo, key=lambda i: -chain_cost(jobs[i][0]))
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.SimpleQueue() if progress is not None else None
    drain = None
    if queue is not None:

        def forward() -> None:
            while (n := queue.get()) is not None:
                progress(n)

        drain = threading.Thread(target=forward, name="arima-progress", daemon=True)
        drain.start()
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=_limit_blas_threads, initargs=(queue,)
        ) as pool:
            futures = {i: pool.submit(_fit_chain_job, jobs[i]) for i in order}
            for i, fut in futures.items():
                results[i] = fut.result()
    finally:
        if queue is not None:
            queue.put(None)
            drain.join()
    return [r if r is not None else [] for r in results]


def default_workers() -> int:
    """Processes for :func:`fit_chains` when none is configured: one per CPU."""
    return os.cpu_count() or 1
