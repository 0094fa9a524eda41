"""The one forecaster contract (DESIGN.md principle 5: every model is a row).

A forecaster has a ``model_id`` (``provider/model@design``, ``baseline/auto-arima``, ``consensus/investing``,
``fed/gdpnow``, ``market/polymarket``, ``external/<name>``) and turns a frame of forecast tasks of its track
into rows of that track's forecast table: macro nowcast windows -> ``nowcasts`` rows; event-track
``forecast_tasks`` (with their frozen input bundles) -> ``leaf_forecasts`` rows. What a forecaster needs
besides the tasks (a client, the data it reads, an issue time) is given to its constructor, so the contract
stays one method. A task it cannot forecast is either absent from the output or present as an invalid row
with its reason; it never raises for data problems.

Forecasters that wait on the network (LLM agents) implement :class:`AsyncForecaster` instead
(``async aforecast(tasks)``): :func:`run_forecasters` runs all of them concurrently in one event loop, so
one client and its rate limits serve every model of a run. Assets iterate over forecasters instead of
knowing each one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import polars as pl

from leaf_live.core import storage


@runtime_checkable
class Forecaster(Protocol):
    """``model_id``: the model's id; ``forecast(tasks)``: rows of the track's forecast table for ``tasks``."""

    model_id: str

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        """Forecast rows (conformable to the track's forecast table) for a frame of tasks."""
        ...


@runtime_checkable
class AsyncForecaster(Protocol):
    """A :class:`Forecaster` whose work is I/O-bound: ``await aforecast(tasks)`` returns the same rows."""

    model_id: str

    async def aforecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        """Forecast rows (conformable to the track's forecast table) for a frame of tasks."""
        ...


def run_forecasters(
    forecasters: Iterable[Forecaster | AsyncForecaster],
    tasks: pl.DataFrame,
    table: str,
    *,
    columns: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Run every forecaster on ``tasks`` and return their rows stacked, in forecaster order, conformed to
    ``table``.

    Synchronous forecasters run one after the other; asynchronous ones (:class:`AsyncForecaster`) run
    concurrently in one event loop. ``columns`` are constant columns the calling stage owns (e.g. the
    ``producer`` slice of a shared table), set on every row before conforming. Raises :class:`TypeError`
    for an object that implements neither contract, and :class:`leaf_live.core.storage.StorageError` when
    a forecaster's rows do not fit ``table``."""
    items = list(forecasters)
    for f in items:
        if not isinstance(f, (Forecaster, AsyncForecaster)):
            raise TypeError(f"{f!r} does not implement the forecaster contract (model_id, forecast(tasks))")
    outs: list[pl.DataFrame | None] = [None] * len(items)
    pending = [(k, f) for k, f in enumerate(items) if not isinstance(f, Forecaster)]
    if pending:

        async def gather() -> list[pl.DataFrame]:
            return list(await asyncio.gather(*(f.aforecast(tasks) for _, f in pending)))

        for (k, _), out in zip(pending, asyncio.run(gather())):
            outs[k] = out
    for k, f in enumerate(items):
        if outs[k] is None:
            outs[k] = f.forecast(tasks)
    frames = []
    for out in outs:
        if out is not None and out.height:
            if columns:
                out = out.with_columns(pl.lit(v).alias(c) for c, v in columns.items())
            frames.append(storage.conform(table, out))
    return pl.concat(frames, how="vertical") if frames else storage.empty_frame(table)
