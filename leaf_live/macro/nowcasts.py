"""Assemble rows into a frame of the shared ``nowcasts`` table (one schema for every macro forecaster).

Every producer (recorded runs, comparators, LLM agents, auto-ARIMA) fills the columns it knows; the others
are NULL. ``after_release`` defaults to False until :func:`leaf_live.macro.forecasters.windows.mark_after_release`
sets it from the release timestamps.
"""

from __future__ import annotations

from datetime import datetime, timezone

import polars as pl

from leaf_live.core.storage import conform, empty_frame, polars_schema

PRODUCERS = ("llm_nowcasts", "recorded_nowcasts", "arima_nowcasts", "comparator_nowcasts")

_REQUIRED = ("partition_key", "model_id", "indicator_id", "reference_period", "issued_at", "value")


def build_nowcasts(frame: pl.DataFrame, *, producer: str) -> pl.DataFrame:
    """Return ``frame`` as a ``nowcasts`` table frame.

    ``frame`` must hold ``partition_key, model_id, indicator_id, reference_period, issued_at`` (tz-aware) and
    ``value``; any other ``nowcasts`` column it holds is kept, the missing ones become NULL, except
    ``valid`` (default: ``value`` is not NULL), ``after_release`` (default False) and ``available_at``
    (default = ``issued_at``). Raises :class:`ValueError` for an unknown producer or a missing column, and
    :class:`leaf_live.core.storage.StorageError` when a column does not cast to the table type.
    """
    if producer not in PRODUCERS:
        raise ValueError(f"producer {producer!r}: expected one of {PRODUCERS}")
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"nowcast frame lacks column(s) {missing}; has {frame.columns}")
    schema = polars_schema("nowcasts")
    if frame.height == 0:
        return empty_frame("nowcasts")
    out = frame.with_columns(pl.lit(producer).alias("producer"))
    if "valid" not in out.columns:
        out = out.with_columns(pl.col("value").is_not_null().alias("valid"))
    if "after_release" not in out.columns:
        out = out.with_columns(pl.lit(False).alias("after_release"))
    if "available_at" not in out.columns:
        out = out.with_columns(pl.col("issued_at").alias("available_at"))
    for name, dtype in schema.items():
        if name not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=dtype).alias(name))
    return conform("nowcasts", out.select(list(schema)))


def latest_as_of(nowcasts: pl.DataFrame, at: datetime, *, strict: bool = False) -> pl.DataFrame:
    """Evaluate nowcast series as step functions of publication time.

    For each (model_id, indicator_id, reference_period), the valid row with the latest ``available_at``
    that is ``<= at`` (``< at`` with ``strict=True``, e.g. "latest strictly before the release", App. L).
    ``at`` must be tz-aware. Returns the selected rows (same columns); a series with no row by ``at`` is
    absent. Ties in ``available_at`` keep the row that comes last in ``nowcasts``.
    """
    if at.tzinfo is None:
        raise ValueError(f"at={at!r}: pass a tz-aware time")
    at_utc = at.astimezone(timezone.utc)
    cond = pl.col("available_at") < at_utc if strict else pl.col("available_at") <= at_utc
    keys = ["model_id", "indicator_id", "reference_period"]
    return (
        nowcasts.with_row_index("_row")
        .filter(pl.col("valid") & cond)
        .sort("available_at", "_row")
        .group_by(keys, maintain_order=True)
        .last()
        .sort(keys)
        .select(nowcasts.columns)
    )
