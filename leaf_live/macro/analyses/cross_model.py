"""Cross-model error analysis (LiveMacroEval App. Q, Tables 14 and 15).

"We separate the failures the agents share from each model's own pattern of error, working from each
agent's final pre-release nowcast against the official release and against the consensus."

* :func:`final_errors` (table ``cross_model_errors``): per model and release, the final pre-release nowcast
  (the latest valid one strictly before the release, :func:`leaf_live.core.pit.as_of`), its error against the
  release and the consensus' error, in reporting units and in sigma_i units, whether it beat the consensus,
  whether it got the sign of a growth rate wrong, the release's change from the previous release (known
  before it), and how many models erred in the same direction (the shared failures of Table 14);
* :func:`path_summaries` (table ``nowcast_path_summaries``): the hourly nowcasts of a stated span before the
  release (median, IQR), the final nowcast and its deviation from the release (Table 15: March 2026 CPI,
  April 2-7, 2026).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.macro.analyses.series import (
    SERIES_KEYS,
    AnalysisError,
    first_releases,
    hourly_series,
    is_comparator,
    models,
    table_frame,
    with_release,
)
from leaf_live.macro.catalog import get_indicator

GROWTH_TRANSFORMATIONS = ("qoq_saar_pct", "mom_pct", "yoy_pct", "mom_change")


def _finals(nowcasts: pl.DataFrame, releases: pl.DataFrame, keep) -> pl.DataFrame:
    pre = with_release(hourly_series(nowcasts), releases).filter(~pl.col("after_release"))
    pre = pre.filter(pl.col("model_id").is_in(models(pre, keep)))
    # the last hour strictly before the release: as_of at each series' own release time
    return pit.as_of_join(
        pre.select(*SERIES_KEYS, "release_at").unique(),
        pre.select(*SERIES_KEYS, "issued_at", "value", "n_runs", "available_at"),
        left_time="release_at",
        by=list(SERIES_KEYS),
        time_col="issued_at",
        strict=True,
        suffix="_final",
    ).rename(
        {"issued_at_final": "final_issued_at", "value": "final_value", "available_at": "available_at_final"}
    )


def final_errors(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    scales: pl.DataFrame,
    *,
    model_ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Final pre-release nowcast errors of every model (default: every model that is not a comparator, i.e.
    agents and baselines; pass ``model_ids`` to choose), one row per series (model, indicator, reference
    period, run) with a release and a pre-release nowcast.

    ``error`` = final - actual; ``consensus_error`` = consensus - actual (NULL without a consensus);
    ``error_sigma`` = error / sigma_i (sigma as known at the release); ``beats_consensus`` = |error| <
    |consensus_error|; ``sign_wrong`` (growth-rate indicators only, actual not 0) = sign(final) !=
    sign(actual); ``prior_actual`` = the actual of the indicator's latest earlier reference period released
    before this release; ``n_models`` / ``n_same_direction`` = models with a final nowcast of this release /
    those with a run erring in this row's direction; ``shared_miss`` = at least two models and all err in that
    direction. Returns the ``cross_model_errors`` frame. Series whose release precedes the
    sigma known for its indicator are left out. Raises :class:`AnalysisError` for missing columns or an
    indicator without any sigma."""
    keep = (lambda m: m in set(model_ids)) if model_ids is not None else (lambda m: not is_comparator(m))
    fin = _finals(nowcasts, releases, keep)
    rel = first_releases(releases)
    fin = fin.join(
        rel.select(
            "indicator_id",
            "reference_period",
            "actual",
            "consensus",
            pl.col("available_at").alias("release_available_at"),
        ),
        on=["indicator_id", "reference_period"],
        how="left",
    )
    # the previous reference period's actual, as published before this release
    prior = pit.as_of_join(
        fin.select("indicator_id", "reference_period", "release_at").unique(),
        rel.select(
            "indicator_id",
            pl.col("reference_period").alias("prior_period"),
            pl.col("actual").alias("prior_actual"),
            pl.col("release_at").alias("prior_release_at"),
        ),
        left_time="release_at",
        by=["indicator_id"],
        time_col="prior_release_at",
        strict=True,
        suffix="_p",
    ).filter(pl.col("prior_period") < pl.col("reference_period"))
    fin = fin.join(
        prior.select("indicator_id", "reference_period", "prior_period", "prior_actual"),
        on=["indicator_id", "reference_period"],
        how="left",
    )
    pit.require_columns(scales, ("indicator_id", "sigma", "available_at"), "surprise_scales", AnalysisError)
    fin = pit.as_of_join(
        fin,
        scales.select("indicator_id", "sigma", "available_at"),
        left_time="release_at",
        by=["indicator_id"],
        suffix="_sigma",
    )
    unknown = set(fin["indicator_id"].unique().to_list()) - set(scales["indicator_id"].to_list())
    if unknown:
        raise AnalysisError(f"surprise_scales: no sigma for {sorted(unknown)[0]!r}")
    # A release before its sigma was known (e.g. the auto-ARIMA backtest, 2018 on, against the sigma frozen on
    # 2010-01..2025-10) cannot be expressed in sigma units point in time: outside App. Q's scope.
    fin = fin.filter(pl.col("sigma").is_not_null())
    growth = pl.col("indicator_id").map_elements(
        lambda i: get_indicator(i).transformation in GROWTH_TRANSFORMATIONS, return_dtype=pl.Boolean
    )
    err = pl.col("final_value") - pl.col("actual")
    fin = fin.with_columns(
        err.alias("error"),
        (err / pl.col("sigma")).alias("error_sigma"),
        (pl.col("consensus") - pl.col("actual")).alias("consensus_error"),
        ((pl.col("consensus") - pl.col("actual")) / pl.col("sigma")).alias("consensus_error_sigma"),
        (pl.col("actual") - pl.col("prior_actual")).alias("change_vs_prior"),
        pl.when(growth & (pl.col("actual") != 0))
        .then(pl.col("final_value").sign() != pl.col("actual").sign())
        .otherwise(None)
        .alias("sign_wrong"),
    ).with_columns(
        (pl.col("error").abs() < pl.col("consensus_error").abs()).alias("beats_consensus"),
        (pl.col("change_vs_prior") / pl.col("sigma")).alias("change_vs_prior_sigma"),
        pl.col("error").sign().alias("_dir"),
    )
    keys = ["indicator_id", "reference_period"]
    fin = fin.with_columns(
        pl.col("model_id").n_unique().over(keys).cast(pl.Int32).alias("n_models"),
        pl.col("model_id").n_unique().over([*keys, "_dir"]).cast(pl.Int32).alias("n_same_direction"),
    ).with_columns(
        (
            (pl.col("n_models") >= 2)
            & (pl.col("n_same_direction") == pl.col("n_models"))
            & (pl.col("_dir") != 0)
        ).alias("shared_miss"),
        pl.max_horizontal("available_at_final", "release_available_at", "available_at_sigma").alias(
            "available_at"
        ),
        pl.col("model_id").alias("partition_key"),
    )
    out = table_frame("cross_model_errors", [])
    return (
        fin.select(out.columns)
        .cast(out.schema)
        .sort("model_id", "indicator_id", "reference_period", "run_id")
    )


@dataclass(frozen=True)
class PathCase:
    """A span of hourly nowcasts to summarise: America/New_York calendar days ``first_day`` .. ``last_day``
    inclusive, all strictly before the release of (indicator_id, reference_period)."""

    label: str
    indicator_id: str
    reference_period: date
    first_day: date
    last_day: date


# Table 15: March 2026 CPI year-over-year, hourly nowcasts over April 2 to 7, 2026 (release April 10)
TABLE15_CASE = PathCase("table15_cpi_2026_03", "cpi", date(2026, 3, 1), date(2026, 4, 2), date(2026, 4, 7))


def _et_midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=pit.ET).astimezone(pit.UTC)


def path_summaries(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    cases: Sequence[PathCase] = (TABLE15_CASE,),
    *,
    model_ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Table 15 rows for every model with nowcasts in a case's span (default every non-comparator model):
    median and IQR (numpy linear quantiles) of the hourly nowcasts issued in the span, the final pre-release
    nowcast and ``deviation`` = final - actual. Nowcasts at or after the release never enter the span.
    Returns the ``nowcast_path_summaries`` frame. Raises :class:`AnalysisError` for a span that ends before it
    starts or starts at or after the release, or a case without a release."""
    keep = (lambda m: m in set(model_ids)) if model_ids is not None else (lambda m: not is_comparator(m))
    hs = with_release(hourly_series(nowcasts), releases)
    hs = hs.filter(pl.col("model_id").is_in(models(hs, keep)) & ~pl.col("after_release"))
    rel = first_releases(releases)
    rows = []
    for case in cases:
        r = rel.filter(
            (pl.col("indicator_id") == case.indicator_id)
            & (pl.col("reference_period") == case.reference_period)
        )
        if r.height == 0:
            raise AnalysisError(
                f"path case {case.label!r}: no release of {case.indicator_id} {case.reference_period}"
            )
        release_at = r["release_at"][0]
        start, end = _et_midnight(case.first_day), _et_midnight(case.last_day + timedelta(days=1))
        if case.last_day < case.first_day or start >= release_at:
            raise AnalysisError(
                f"path case {case.label!r}: span {case.first_day}..{case.last_day} is empty or "
                f"starts at or after the release {release_at.isoformat()}"
            )
        end = min(end, release_at)
        g_all = hs.filter(
            (pl.col("indicator_id") == case.indicator_id)
            & (pl.col("reference_period") == case.reference_period)
        )
        for (m, run), g in g_all.group_by(["model_id", "run_id"], maintain_order=True):
            span = g.filter((pl.col("issued_at") >= start) & (pl.col("issued_at") < end))
            if span.height == 0:
                continue
            fin = pit.as_of(g, release_at, ["model_id", "run_id"], time_col="issued_at", strict=True)
            v = span["value"].to_numpy()
            q25, med, q75 = np.quantile(v, [0.25, 0.5, 0.75])
            rows.append(
                {
                    "partition_key": m,
                    "model_id": m,
                    "run_id": run,
                    "case_label": case.label,
                    "indicator_id": case.indicator_id,
                    "reference_period": case.reference_period,
                    "span_start": start,
                    "span_end": end,
                    "n_nowcasts": span.height,
                    "median": float(med),
                    "q25": float(q25),
                    "q75": float(q75),
                    "iqr": float(q75 - q25),
                    "final_issued_at": fin["issued_at"][0],
                    "final_value": fin["value"][0],
                    "actual": float(r["actual"][0]),
                    "deviation": fin["value"][0] - float(r["actual"][0]),
                    "available_at": max(fin["available_at"][0], r["available_at"][0]),
                }
            )
    return table_frame("nowcast_path_summaries", rows)
