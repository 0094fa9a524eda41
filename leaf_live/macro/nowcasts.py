"""Rows of the shared ``nowcasts`` table, the macro track's forecast table (one schema for every macro model).

Every macro forecaster (recorded runs, the consensus, Fed nowcasts, LLM agents, auto-ARIMA) fills the columns
it knows; the others are NULL. ``after_release`` defaults to False until
:func:`leaf_live.macro.windows.mark_after_release` sets it from the release timestamps. ``producer`` (which
stage wrote the row) is left NULL here: the writing stage stamps it, so science code never names a stage.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import polars as pl

from leaf_live.core.forecaster import AsyncForecaster, Forecaster, run_forecasters
from leaf_live.core.pit import as_of, require_columns
from leaf_live.core.storage import conform, empty_frame, polars_schema
from leaf_live.macro.windows import mark_after_release

TABLE = "nowcasts"
# columns the writing stage sets (the producer slice it owns)
WRITER_COLUMNS = ("producer",)
SERIES_KEYS = ("model_id", "indicator_id", "reference_period")

_REQUIRED = ("partition_key", "model_id", "indicator_id", "reference_period", "issued_at", "value")


def build_nowcasts(frame: pl.DataFrame) -> pl.DataFrame:
    """Return ``frame`` as a ``nowcasts`` table frame with ``producer`` NULL (the writer stamps it).

    ``frame`` must hold ``partition_key, model_id, indicator_id, reference_period, issued_at`` (tz-aware) and
    ``value``; any other ``nowcasts`` column it holds is kept, the missing ones become NULL, except
    ``valid`` (default: ``value`` is not NULL), ``after_release`` (default False), ``answered_at`` (default =
    ``issued_at``: the answer existed when it was issued, true of every producer that computes its value at
    issue; LLM agents and recorded runs set their own) and ``available_at`` (default = ``issued_at``). Raises
    :class:`ValueError` for a missing column, and
    :class:`leaf_live.core.storage.StorageError` when a column does not cast to the table type.
    """
    require_columns(frame, _REQUIRED, "nowcast")
    schema = polars_schema(TABLE)
    if frame.height == 0:
        return empty_frame(TABLE)
    out = frame.drop([c for c in WRITER_COLUMNS if c in frame.columns])
    if "valid" not in out.columns:
        out = out.with_columns(pl.col("value").is_not_null().alias("valid"))
    if "after_release" not in out.columns:
        out = out.with_columns(pl.lit(False).alias("after_release"))
    if "available_at" not in out.columns:
        out = out.with_columns(pl.col("issued_at").alias("available_at"))
    if "answered_at" not in out.columns:
        out = out.with_columns(pl.col("issued_at").alias("answered_at"))
    for name, dtype in schema.items():
        if name not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=dtype).alias(name))
    return conform(TABLE, out.select(list(schema)), deferred=WRITER_COLUMNS)


def latest_as_of(nowcasts: pl.DataFrame, at: datetime, *, strict: bool = False) -> pl.DataFrame:
    """Nowcast series as step functions of publication time: per (model_id, indicator_id, reference_period)
    the valid row with the latest ``available_at <= at`` (``< at`` with ``strict=True``, e.g. "latest strictly
    before the release", App. L); :func:`leaf_live.core.pit.as_of` over the valid rows. ``at`` must be
    tz-aware. A series with no row by ``at`` is absent; ties keep the row that comes last in ``nowcasts``."""
    return as_of(nowcasts, at, SERIES_KEYS, strict=strict, where=pl.col("valid"))


def forecast_nowcasts(
    forecasters: Iterable[Forecaster | AsyncForecaster], windows: pl.DataFrame, *, producer: str
) -> pl.DataFrame:
    """Every forecaster's ``nowcasts`` rows for the nowcast ``windows`` (the macro track's tasks), stacked in
    forecaster order (:func:`leaf_live.core.forecaster.run_forecasters`), stamped with the writing stage's
    ``producer`` and flagged ``after_release`` where issued at or after the window's release
    (:func:`leaf_live.macro.windows.mark_after_release`). Raises what the contract runner raises."""
    frame = run_forecasters(forecasters, windows, TABLE, columns={"producer": producer})
    return mark_after_release(frame, windows) if frame.height else frame
