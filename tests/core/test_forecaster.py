"""core.forecaster: the one forecaster contract and its runner (sync and async forecasters, stamped
columns)."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime

import polars as pl
import pytest

import leaf_live.macro  # noqa: F401  (registers the nowcasts table)
from leaf_live.core.forecaster import AsyncForecaster, Forecaster, run_forecasters

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
TASKS = pl.DataFrame(
    {
        "partition_key": ["2026-03"],
        "indicator_id": ["cpi"],
        "reference_period": [date(2026, 2, 1)],
        "issued_at": [T0],
    }
)


class _Const:
    model_id = "baseline/const"
    value = 1.5

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return tasks.select(
            pl.lit(None, pl.Utf8).alias("producer"),
            "partition_key",
            pl.lit(self.model_id).alias("model_id"),
            "indicator_id",
            "reference_period",
            "issued_at",
            pl.col("issued_at").alias("answered_at"),
            pl.lit(self.value).alias("value"),
            pl.lit(True).alias("valid"),
            pl.lit(None, pl.Utf8).alias("invalid_reason"),
            pl.lit(False).alias("after_release"),
            *[
                pl.lit(None, pl.Utf8).alias(c)
                for c in ("source_variable", "rationale", "citations", "prompt_hash", "raw_response_id")
            ],
            *[pl.lit(None, pl.Int32).alias(c) for c in ("prompt_tokens", "completion_tokens")],
            pl.lit(None, pl.Float64).alias("cost_usd"),
            pl.col("issued_at").alias("available_at"),
        )


class _Slow(_Const):
    """An I/O-bound forecaster: ``aforecast`` waits before answering (the LLM agents' shape)."""

    def __init__(self, value: float, delay: float, log: list[str]) -> None:
        self.value, self.delay, self.log = value, delay, log
        self.model_id = f"test/slow-{value}"

    async def aforecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        self.log.append(f"start {self.value}")
        await asyncio.sleep(self.delay)
        self.log.append(f"end {self.value}")
        return _Const.forecast(self, tasks)

    forecast = None  # only the async method


def test_run_forecasters_stacks_conformed_rows_stamps_columns_and_rejects_non_forecasters():
    assert isinstance(_Const(), Forecaster)
    with pytest.raises(Exception, match="producer"):  # the writer's column is NOT NULL: stamp it
        run_forecasters([_Const()], TASKS, "nowcasts")
    out = run_forecasters([_Const(), _Const()], TASKS, "nowcasts", columns={"producer": "test_asset"})
    assert out.height == 2 and out["value"].to_list() == [1.5, 1.5] and set(out["producer"]) == {"test_asset"}
    with pytest.raises(TypeError, match="forecaster contract"):
        run_forecasters([object()], TASKS, "nowcasts")


def test_async_forecasters_run_concurrently_and_keep_forecaster_order():
    log: list[str] = []
    slow, fast = _Slow(2.0, 0.2, log), _Slow(3.0, 0.0, log)
    assert isinstance(slow, AsyncForecaster) and not isinstance(slow, Forecaster)
    out = run_forecasters([slow, _Const(), fast], TASKS, "nowcasts", columns={"producer": "p"})
    # both started before either finished (one event loop), yet rows follow the forecaster order
    assert log[:2] == ["start 2.0", "start 3.0"] and log[-1] == "end 2.0"
    assert out["value"].to_list() == [2.0, 1.5, 3.0]
