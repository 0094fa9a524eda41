"""Real-time relative nowcast error (LiveMacroEval App. J) and the aggregator comparison of App. K.4.

Relative error of a nowcast issued at ``t`` for indicator i: ``e_{i,t} = (y_hat_{i,t} - y_i) / s_i`` with
``y_i`` the official (first) release and ``s_i`` the mean absolute release value of indicator i over the
evaluated target months; App. J plots ``e^2``. Per indicator and integer day before the release, the
squared relative error is first averaged within each target month, then across target months.

``days_to_release`` = floor((release_at - issued_at) / 24 h): 0 for nowcasts in the last 24 hours
before the release, 1 for the 24 hours before that, ...

K.4 / Table 11: each indicator's share of (a) the summed squared raw nowcast error (reporting units),
(b) the summed squared relative error, (c) the economic weight ``beta_i^2 / sum beta^2``; the
effective number of indicators under weights w is ``1 / sum w^2``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from leaf_live.core.pit import as_utc_column, require_columns
from leaf_live.macro.catalog import INDICATOR_IDS


class RelativeErrorError(ValueError):
    """Inputs to the relative-error metrics are unusable; the message names the field and value."""


def _in_order(e: pl.Expr) -> pl.Expr:
    """``e`` sorted before a float sum or mean, so the additions run in one order whatever order the rows
    arrive in (a DuckDB scan and a parallel ``group_by`` deliver them in varying order, and float addition
    is not associative: identical runs differed in the 15th digit of ``s_i``)."""
    return e.sort()


def release_scales(releases: pl.DataFrame) -> pl.DataFrame:
    """s_i = mean |actual| per indicator over the given releases (App. J). Columns: indicator_id, s_i; the
    same bits for any row order of ``releases``.

    Raises :class:`RelativeErrorError` when an indicator's mean absolute release is 0 (undefined scale).
    """
    require_columns(releases, ["indicator_id", "actual"], "releases", RelativeErrorError)
    out = (
        releases.group_by("indicator_id")
        .agg(_in_order(pl.col("actual").abs()).mean().alias("s_i"))
        .sort("indicator_id")
    )
    bad = out.filter(~(pl.col("s_i") > 0))
    if bad.height:
        raise RelativeErrorError(
            f"mean |actual| of indicator_id={bad['indicator_id'][0]} is {bad['s_i'][0]}; s_i undefined"
        )
    return out


def relative_error_points(
    releases: pl.DataFrame, nowcasts: pl.DataFrame, scales: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per valid nowcast issued strictly before its release, with its relative error (App. J).

    ``releases``: ``indicator_id``, ``reference_period``, ``release_at``, ``actual``. ``nowcasts``: rows of
    the ``nowcasts`` table (``model_id`` optional, ``indicator_id``, ``reference_period``, ``issued_at``,
    ``value``, optional ``valid``). ``scales``: ``indicator_id``, ``s_i`` (default :func:`release_scales`
    of ``releases``). Adds ``days_to_release``, ``rel_error`` and ``sq_rel_error``.
    """
    require_columns(
        releases, ["indicator_id", "reference_period", "release_at", "actual"], "releases", RelativeErrorError
    )
    require_columns(
        nowcasts, ["indicator_id", "reference_period", "issued_at", "value"], "nowcasts", RelativeErrorError
    )
    releases = as_utc_column(releases, "release_at", "releases", RelativeErrorError)
    nowcasts = as_utc_column(nowcasts, "issued_at", "nowcasts", RelativeErrorError)
    sc = release_scales(releases) if scales is None else scales.select("indicator_id", "s_i")
    nc = nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts
    nc = nc.filter(pl.col("value").is_not_null() & pl.col("value").is_finite())
    keep = [c for c in ("model_id",) if c in nc.columns]
    out = (
        nc.select(*keep, "indicator_id", "reference_period", "issued_at", "value")
        .join(
            releases.select("indicator_id", "reference_period", "release_at", "actual"),
            on=["indicator_id", "reference_period"],
            how="inner",
        )
        .filter(pl.col("issued_at") < pl.col("release_at"))
        .join(sc, on="indicator_id", how="left")
    )
    nos = out.filter(pl.col("s_i").is_null())
    if nos.height:
        raise RelativeErrorError(f"no scale s_i for indicator_id={nos['indicator_id'][0]}")
    day_us = 86_400_000_000
    return out.with_columns(
        ((pl.col("release_at") - pl.col("issued_at")).dt.total_microseconds() // day_us)
        .cast(pl.Int32)
        .alias("days_to_release"),
        ((pl.col("value") - pl.col("actual")) / pl.col("s_i")).alias("rel_error"),
    ).with_columns((pl.col("rel_error") ** 2).alias("sq_rel_error"))


def relative_error_by_month(points: pl.DataFrame) -> pl.DataFrame:
    """Mean squared relative error per (model, indicator, reference period, days_to_release) (App. J step
    1)."""
    keys = [c for c in ("model_id",) if c in points.columns] + [
        "indicator_id",
        "reference_period",
        "release_at",
        "days_to_release",
    ]
    return (
        points.group_by(keys)
        .agg(
            _in_order(pl.col("sq_rel_error")).mean().alias("mean_sq_rel_error"),
            pl.len().cast(pl.Int32).alias("n_nowcasts"),
            pl.col("s_i").first(),
        )
        .sort(keys)
    )


def relative_error_curve(by_month: pl.DataFrame) -> pl.DataFrame:
    """Average of the monthly curves across target months per (model, indicator, days_to_release) (App. J step
    2)."""
    keys = [c for c in ("model_id",) if c in by_month.columns] + ["indicator_id", "days_to_release"]
    return (
        by_month.group_by(keys)
        .agg(_in_order(pl.col("mean_sq_rel_error")).mean(), pl.len().cast(pl.Int32).alias("n_months"))
        .sort(keys)
    )


def mean_abs_relative_error(per_release: pl.DataFrame, scales: pl.DataFrame) -> float:
    """Mean over field-events of |nowcast - actual| / s_i (the "Rel. err." column of Table 16)."""
    require_columns(per_release, ["indicator_id", "nowcast", "actual"], "per_release", RelativeErrorError)
    d = per_release.filter(pl.col("nowcast").is_not_null()).join(
        scales.select("indicator_id", "s_i"), on="indicator_id", how="left"
    )
    if d.height == 0:
        raise RelativeErrorError("no field-event with a nowcast")
    if d["s_i"].null_count():
        raise RelativeErrorError(
            f"no scale s_i for indicator_id={d.filter(pl.col('s_i').is_null())['indicator_id'][0]}"
        )
    return float(((d["nowcast"] - d["actual"]).abs() / d["s_i"]).sort().mean())  # sorted: see _in_order


def common_relative_errors(
    per_release: Mapping[str, pl.DataFrame], scales: pl.DataFrame
) -> dict[str, tuple[float, int]]:
    """:func:`mean_abs_relative_error` of every model on the same field-events: the (``indicator_id``,
    ``release_at``) pairs every model of ``per_release`` (model -> its per-release frame, as for
    :func:`mean_abs_relative_error`) has a nowcast for. A model's own-event value is read on its own
    releases, so two models' values compare only on such a common set (issue 16: the consensus 0.252 on its
    own releases, 0.412 on GPT-5's 19). Returns model -> (value, n field-events); empty when fewer than two
    models are given or they share no field-event."""
    keys = ["indicator_id", "release_at"]
    if len(per_release) < 2:
        return {}
    own = {m: f.filter(pl.col("nowcast").is_not_null()) for m, f in per_release.items()}
    common = None
    for f in own.values():
        k = f.select(keys).unique()
        common = k if common is None else common.join(k, on=keys, how="semi")
    if common is None or common.height == 0:
        return {}
    out = {}
    for m, f in own.items():
        d = f.join(common, on=keys, how="semi")
        out[m] = (mean_abs_relative_error(d, scales), d.height)
    return out


def economic_weights(beta: np.ndarray) -> np.ndarray:
    """Share of announcement-return variance per indicator, beta_i^2 / sum beta^2 (K.4, Table 11)."""
    b2 = np.asarray(beta, dtype=float) ** 2
    tot = b2.sum()
    if not tot > 0:
        raise RelativeErrorError("economic weights undefined: every beta is 0")
    return b2 / tot


def effective_number(weights: np.ndarray) -> float:
    """Effective number of indicators 1 / sum w^2 (inverse Herfindahl) of weights summing to 1 (K.4)."""
    w = np.asarray(weights, dtype=float)
    return float(1.0 / np.sum(w * w))


def aggregator_shares(
    per_release: pl.DataFrame,
    scales: pl.DataFrame,
    beta: np.ndarray,
    indicator_ids: Sequence[str] = INDICATOR_IDS,
) -> pl.DataFrame:
    """Table 11: per indicator, share (in %) of the raw squared error sum, of the relative squared error
    sum and of the economic weight beta^2.

    ``per_release``: field-events with ``indicator_id``, ``nowcast``, ``actual`` (reporting units; pool
    several models by concatenating). ``beta`` (p,) in ``indicator_ids`` order. Columns: indicator_id,
    raw_error_share, relative_error_share, economic_weight (each sums to 100; indicators without a
    nowcast get 0 error shares).
    """
    require_columns(per_release, ["indicator_id", "nowcast", "actual"], "per_release", RelativeErrorError)
    d = per_release.filter(pl.col("nowcast").is_not_null()).join(
        scales.select("indicator_id", "s_i"), on="indicator_id", how="left"
    )
    if d["s_i"].null_count():
        raise RelativeErrorError(
            f"no scale s_i for indicator_id={d.filter(pl.col('s_i').is_null())['indicator_id'][0]}"
        )
    g = d.group_by("indicator_id").agg(
        _in_order((pl.col("nowcast") - pl.col("actual")) ** 2).sum().alias("raw"),
        _in_order(((pl.col("nowcast") - pl.col("actual")) / pl.col("s_i")) ** 2).sum().alias("rel"),
    )
    base = pl.DataFrame(
        {"indicator_id": list(indicator_ids), "economic_weight": 100.0 * economic_weights(beta)}
    )
    out = base.join(g, on="indicator_id", how="left").with_columns(pl.col("raw", "rel").fill_null(0.0))
    raw_tot, rel_tot = out["raw"].sum(), out["rel"].sum()
    return out.select(
        "indicator_id",
        (100.0 * pl.col("raw") / raw_tot if raw_tot > 0 else pl.lit(0.0)).alias("raw_error_share"),
        (100.0 * pl.col("rel") / rel_tot if rel_tot > 0 else pl.lit(0.0)).alias("relative_error_share"),
        "economic_weight",
    )
