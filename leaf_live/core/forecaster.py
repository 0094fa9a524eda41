"""The one forecaster contract (DESIGN.md principle 5: every model is a row).

A forecaster has a ``model_id`` (``provider/model@design``, ``baseline/auto-arima``, ``consensus/investing``,
``fed/gdpnow``, ``market/polymarket``, ``external/<name>``) and turns a frame of forecast tasks of its track
into rows of that track's forecast table: macro nowcast windows -> ``nowcasts`` rows; event-track
``forecast_tasks`` (with their frozen input bundles) -> ``leaf_forecasts`` rows. A task it cannot forecast
is either absent from the output or present as an invalid row with its reason; it never raises for data
problems. Assets iterate over forecasters instead of knowing each one (:func:`run_forecasters`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import polars as pl

from leaf_live.core import storage


@runtime_checkable
class Forecaster(Protocol):
    """``model_id``: the model's id; ``forecast(tasks)``: rows of the track's forecast table for ``tasks``."""

    model_id: str

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        """Forecast rows (conformable to the track's forecast table) for a frame of tasks."""
        ...


def run_forecasters(forecasters: Iterable[Forecaster], tasks: pl.DataFrame, table: str) -> pl.DataFrame:
    """Run every forecaster on ``tasks`` and return their rows stacked and conformed to ``table``.

    Raises :class:`TypeError` for an object that does not implement :class:`Forecaster`, and
    :class:`leaf_live.core.storage.StorageError` when a forecaster's rows do not fit ``table``."""
    frames = []
    for f in forecasters:
        if not isinstance(f, Forecaster):
            raise TypeError(f"{f!r} does not implement the forecaster contract (model_id, forecast(tasks))")
        out = f.forecast(tasks)
        if out.height:
            frames.append(storage.conform(table, out))
    return pl.concat(frames, how="vertical") if frames else storage.empty_frame(table)
