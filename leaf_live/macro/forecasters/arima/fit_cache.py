"""Fit cache of the auto-ARIMA engine (pure part): keys, the estimator version, rows of the ``arima_fits``
table.

A grid fitted once for a history is valid for every later run that sees the same history with the same
estimator, so the engine (:func:`.engine.fit_series_chain`, ``known=``) takes grids already fitted and fits
only the rest. A cached coefficient set is keyed by

    (series_id, content_hash, p, q, estimator_version)

* ``series_id``: the modelled series (:func:`.nowcasts.series_id`, e.g. ``'cpi:CPIAUCSL'``);
* ``content_hash``: :func:`.engine.content_hash` of the history's exact float64 values with d and trend, so a
  revised vintage is a new key and a vintage repeated for several windows is one;
* ``estimator_version`` (:data:`ESTIMATOR_VERSION`): :data:`ESTIMATOR_REVISION` plus a fingerprint of the code
  of :mod:`.estimator` and :mod:`.engine` (their syntax trees without docstrings and comments, so wording does
  not invalidate the cache but any change to what is computed does), their numeric settings and the versions
  of the libraries whose kernels and optimizers they call (statsforecast, scipy, numpy). Rows of another
  version are ignored, so a changed estimator refits everything.

Rows are the ``arima_fits`` table (:data:`leaf_live.macro.schemas.ARIMA_FITS`): :func:`grid_rows` /
:func:`grids_frame` write a :class:`.engine.GridFit`, :func:`grids_from_frame` reads them back (complete grids
of the current version only). The BFGS inverse Hessians the engine carries from one vintage to the next are
not stored: after a reload the next warm start uses the CSS curvature instead.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import numpy as np
import polars as pl

from leaf_live.core.storage import polars_schema
from leaf_live.macro.forecasters.arima import engine, estimator
from leaf_live.macro.forecasters.arima.engine import GridFit, OrderFit
from leaf_live.macro.forecasters.arima.estimator import ArimaError

TABLE = "arima_fits"
# Bump for a change that alters fits but not the code fingerprinted below (e.g. how histories are prepared).
ESTIMATOR_REVISION = 1


def _code_fingerprint(source: str) -> str:
    """sha256 of a module's syntax tree with docstrings removed (comments are not in the tree)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def estimator_version(revision: int = ESTIMATOR_REVISION) -> str:
    """``'app-i-r<revision>-<12 hex>'``: the fingerprint covers the code of :mod:`.estimator` and
    :mod:`.engine`, their settings (tolerances, grid, cold-grid period, screening rule) and the statsforecast,
    scipy and numpy versions."""
    import scipy
    import statsforecast

    h = hashlib.sha256()
    for mod in (estimator, engine):
        h.update(_code_fingerprint(inspect.getsource(mod)).encode())
    settings = (
        estimator.KAPPA,
        estimator.CSS_FIRST,
        estimator.CSS_FTOL,
        estimator.CSS_GTOL,
        estimator.ML_FTOL,
        estimator.ML_MAXITER,
        estimator.P_MAX,
        estimator.Q_MAX,
        engine.COLD_EVERY,
        engine.SCREEN_TOP,
        engine.SCREEN_MARGIN,
        engine.PREV_MARGIN,
        engine.COLD_GAIN,
    )
    h.update(repr(settings).encode())
    h.update(
        f"statsforecast={statsforecast.__version__};scipy={scipy.__version__};numpy={np.__version__}".encode()
    )
    return f"app-i-r{revision}-{h.hexdigest()[:12]}"


ESTIMATOR_VERSION = estimator_version()


def fit_key(
    series_id: str, content_hash: str, p: int, q: int, version: str = ESTIMATOR_VERSION
) -> tuple[str, str, int, int, str]:
    """The cache key of one order's fit: ``(series_id, content_hash, p, q, estimator_version)`` (the
    ``arima_fits`` primary key). Raises :class:`ValueError` for an empty id/hash/version or a negative order.
    """
    for name, v in (("series_id", series_id), ("content_hash", content_hash), ("version", version)):
        if not isinstance(v, str) or not v:
            raise ValueError(f"{name}={v!r}: expected a non-empty string")
    for name, v in (("p", p), ("q", q)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name}={v!r}: expected a non-negative integer")
    return (series_id, content_hash, int(p), int(q), version)


def grid_rows(
    grid: GridFit, *, version: str = ESTIMATOR_VERSION, fitted_at: datetime | None = None
) -> list[dict]:
    """One ``arima_fits`` row per order of ``grid`` (dicts in the table's column order). ``available_at``
    is the grid's (when its history was known); ``fitted_at`` defaults to now (UTC). Raises
    :class:`ValueError` when the grid has no ``available_at`` or a timestamp is naive."""
    fitted_at = fitted_at or datetime.now(UTC)
    if grid.available_at is None:
        raise ValueError(
            f"grid of {grid.series_id} ({grid.label or grid.period}) has no available_at: "
            "a cached fit must say when its history was known"
        )
    for name, ts in (("available_at", grid.available_at), ("fitted_at", fitted_at)):
        if ts.tzinfo is None:
            raise ValueError(f"{name}={ts!r}: expected a tz-aware timestamp")
    rows = []
    for (p, q), f in grid.orders.items():
        series, chash, p, q, ver = fit_key(grid.series_id, grid.content_hash, p, q, version)
        rows.append(
            {
                "series_id": series,
                "content_hash": chash,
                "estimator_version": ver,
                "p": p,
                "d": grid.d,
                "q": q,
                "trend": grid.trend,
                "ar": list(f.ar),
                "ma": list(f.ma),
                "trend_coef": None if grid.trend == "n" or not math.isfinite(f.trend_coef) else f.trend_coef,
                "loglik": f.loglik,
                "aic": f.aic,
                "nobs": f.nobs,
                "n": grid.n,
                "method": f.method,
                "converged": f.converged,
                "cold_grid": grid.cold_grid,
                "vintage": grid.label,
                "fitted_at": fitted_at,
                "available_at": grid.available_at,
            }
        )
    return rows


def grids_frame(
    grids: Iterable[GridFit], *, version: str = ESTIMATOR_VERSION, fitted_at: datetime | None = None
) -> pl.DataFrame:
    """:func:`grid_rows` of every grid that was fitted (not ``reused``), one row per (history, order), as an
    ``arima_fits`` frame built with the table's schema. A history met twice is written once."""
    rows, seen = [], set()
    for g in grids:
        if g.reused or (g.series_id, g.content_hash) in seen:
            continue
        seen.add((g.series_id, g.content_hash))
        rows.extend(grid_rows(g, version=version, fitted_at=fitted_at))
    return pl.DataFrame(rows, schema=polars_schema(TABLE))


def grids_from_frame(
    frame: pl.DataFrame, *, version: str = ESTIMATOR_VERSION
) -> dict[str, dict[str, GridFit]]:
    """Read ``arima_fits`` rows back into ``{series_id: {content_hash: GridFit}}`` (the ``known`` argument of
    :func:`.engine.fit_chains`), keeping only rows of ``version``. Each GridFit holds the orders stored for
    that history (the engine reuses it only if they cover its grid); ``period`` is 0 (not stored) and
    ``reused`` True. Raises :class:`ValueError` for a frame that lacks table columns."""
    missing = [c for c in polars_schema(TABLE) if c not in frame.columns]
    if missing:
        raise ValueError(f"arima_fits frame lacks column(s) {missing}")
    rows = frame.filter(pl.col("estimator_version") == version)
    out: dict[str, dict[str, GridFit]] = {}
    for (sid, chash), g in rows.group_by(["series_id", "content_hash"], maintain_order=True):
        first = g.row(0, named=True)
        orders: dict[tuple[int, int], OrderFit] = {}
        for r in g.iter_rows(named=True):
            if (r["d"], r["trend"], r["n"]) != (first["d"], first["trend"], first["n"]):
                raise ArimaError(f"arima_fits {sid} {chash}: rows disagree on d/trend/n")
            orders[(r["p"], r["q"])] = OrderFit(
                r["p"],
                r["q"],
                tuple(r["ar"]),
                tuple(r["ma"]),
                float("nan") if r["trend_coef"] is None else float(r["trend_coef"]),
                float(r["loglik"]),
                float(r["aic"]),
                int(r["nobs"]),
                r["method"],
                bool(r["converged"]),
            )
        out.setdefault(sid, {})[chash] = GridFit(
            sid,
            chash,
            first["d"],
            first["trend"],
            first["n"],
            0,
            first["vintage"],
            bool(first["cold_grid"]),
            orders,
            True,
            first["available_at"],
        )
    return out


def merge_known(*caches: Mapping[str, Mapping[str, GridFit]]) -> dict[str, dict[str, GridFit]]:
    """Union of ``{series_id: {content_hash: GridFit}}`` caches (later ones win on the same key)."""
    out: dict[str, dict[str, GridFit]] = {}
    for c in caches:
        for sid, grids in c.items():
            out.setdefault(sid, {}).update(grids)
    return out
