"""Inputs shared by the analyses: one value per model and hour, first releases, sigma as of a time.

Every analysis reads frames of the stored tables (``nowcasts``, ``releases``, ``surprise_scales``) and
goes through :mod:`leaf_live.core.pit` for anything that depends on when a fact was known.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import polars_schema

SERIES_KEYS = ("model_id", "indicator_id", "reference_period", "run_id")
# Producers whose partition_key is one run (one recorded file = one target month's job). Two runs of a model
# can nowcast the same target at the same hour (GPT-5's February and March core runs both answer 2026Q1 GDP
# from 2026-03-25); the paper treats each (agent, indicator, target month) as its own series, and averaging
# them would manufacture revisions neither run made. Every other producer issues one stream per model: run_id
# 'hourly'.
RUN_PRODUCERS = ("recorded_nowcasts",)
SINGLE_STREAM = "hourly"
# model_id prefixes of the public comparators (App. F compares agents against these) and of baselines
COMPARATOR_PREFIXES = ("consensus/", "fed/", "market/")
BASELINE_PREFIXES = ("baseline/",)
NOWCAST_COLUMNS = (
    "producer",
    "partition_key",
    "model_id",
    "indicator_id",
    "reference_period",
    "issued_at",
    "value",
    "valid",
    "available_at",
)
RELEASE_COLUMNS = ("indicator_id", "reference_period", "release_at", "actual", "consensus", "available_at")


class AnalysisError(ValueError):
    """Bad input to an analysis; the message names the field and value."""


def is_comparator(model_id: str) -> bool:
    """``consensus/*``, ``fed/*`` or ``market/*``: a public forecast an agent could copy (App. F)."""
    return model_id.startswith(COMPARATOR_PREFIXES)


def is_agent(model_id: str) -> bool:
    """Every model that is neither a comparator nor a ``baseline/*`` (LLM agents, recorded runs, external)."""
    return not is_comparator(model_id) and not model_id.startswith(BASELINE_PREFIXES)


def run_id() -> pl.Expr:
    """The run a nowcast row belongs to: ``partition_key`` for :data:`RUN_PRODUCERS`, else ``'hourly'``."""
    return (
        pl.when(pl.col("producer").is_in(list(RUN_PRODUCERS)))
        .then(pl.col("partition_key"))
        .otherwise(pl.lit(SINGLE_STREAM))
        .alias("run_id")
    )


def hourly_series(nowcasts: pl.DataFrame) -> pl.DataFrame:
    """Valid nowcasts as series: one value per (model_id, indicator_id, reference_period, run_id, issued_at).

    ``nowcasts`` is a frame of the ``nowcasts`` table (at least :data:`NOWCAST_COLUMNS`); ``run_id`` see
    :func:`run_id`. Rows of one run at the same instant (none in the stored data) are averaged, ``n_runs``
    counting them. Returns columns ``model_id, indicator_id, reference_period, run_id, issued_at, value,
    n_runs, available_at`` sorted by series and time. Raises :class:`AnalysisError` for missing columns.
    """
    pit.require_columns(nowcasts, NOWCAST_COLUMNS, "nowcasts", AnalysisError)
    return (
        nowcasts.filter(pl.col("valid") & pl.col("value").is_not_null())
        .with_columns(run_id())
        .group_by(*SERIES_KEYS, "issued_at")
        .agg(pl.col("value").mean(), pl.len().cast(pl.Int32).alias("n_runs"), pl.col("available_at").max())
        .sort(*SERIES_KEYS, "issued_at")
    )


def first_releases(releases: pl.DataFrame) -> pl.DataFrame:
    """The first release per (indicator_id, reference_period) from a ``releases`` frame: ``indicator_id,
    reference_period, release_at, actual, consensus, available_at`` (the release's own ``available_at``)."""
    pit.require_columns(releases, RELEASE_COLUMNS, "releases", AnalysisError)
    return pit.first_per_period(releases.select(RELEASE_COLUMNS)).sort("indicator_id", "reference_period")


def with_release(series: pl.DataFrame, releases: pl.DataFrame) -> pl.DataFrame:
    """``series`` (from :func:`hourly_series`) joined to its first release, with ``after_release`` =
    issued at or after the release (:func:`leaf_live.core.pit.flag_at_or_after`) and ``hours_to_release`` =
    (release_at - issued_at) in hours, negative after the release. Series without a release are dropped."""
    rel = first_releases(releases).rename({"available_at": "release_available_at"})
    return series.join(rel, on=["indicator_id", "reference_period"], how="inner").with_columns(
        pit.flag_at_or_after(pl.col("issued_at"), pl.col("release_at")).alias("after_release"),
        ((pl.col("release_at") - pl.col("issued_at")).dt.total_seconds() / 3600.0).alias("hours_to_release"),
    )


def sigma_as_of(scales: pl.DataFrame, indicator_id: str, at: datetime) -> tuple[float, datetime]:
    """sigma_i of App. K (``surprise_scales``) as known at ``at``: (sigma, its available_at).

    Raises :class:`AnalysisError` when no sigma for ``indicator_id`` was known by ``at``."""
    pit.require_columns(scales, ("indicator_id", "sigma", "available_at"), "surprise_scales", AnalysisError)
    row = pit.as_of(scales.filter(pl.col("indicator_id") == indicator_id), at, ["indicator_id"])
    if row.height == 0 or row["sigma"][0] is None or not row["sigma"][0] > 0:
        raise AnalysisError(
            f"surprise_scales: no positive sigma for indicator_id={indicator_id!r} known by {at.isoformat()}"
        )
    return float(row["sigma"][0]), row["available_at"][0]


def models(frame: pl.DataFrame, keep) -> list[str]:
    """Sorted distinct ``model_id`` values of ``frame`` for which ``keep(model_id)`` is true."""
    return sorted(m for m in frame.get_column("model_id").unique().to_list() if keep(m))


def table_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """``rows`` as a frame of the registered ``table``'s columns and types (empty rows: an empty frame).
    Raises :class:`AnalysisError` when the rows' keys are not exactly the table's columns."""
    schema = polars_schema(table)
    if rows and set(rows[0]) != set(schema):
        raise AnalysisError(
            f"table {table}: rows have columns {sorted(set(rows[0]) ^ set(schema))} "
            "that differ from the table's"
        )
    return pl.DataFrame(rows, schema=schema)
