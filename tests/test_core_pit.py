"""core.pit: as-of selection, point-in-time filter, cutoff flag; core.forecaster: the contract runner."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

import leaf_live.macro  # noqa: F401  (registers the nowcasts table)
from leaf_live.core import pit
from leaf_live.core.forecaster import Forecaster, run_forecasters

T0 = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


def _frame() -> pl.DataFrame:
    return pl.DataFrame({
        "k": ["a", "a", "a", "b", "b"],
        "available_at": [T0, T0 + timedelta(hours=2), T0 + timedelta(hours=2), T0 + timedelta(hours=1), T0 + timedelta(hours=5)],
        "valid": [True, True, False, True, True],
        "v": [1, 2, 3, 4, 5],
    })


def test_as_of_latest_row_per_key_ties_keep_last_and_where_filters_first():
    f = _frame()
    at = T0 + timedelta(hours=2)
    assert pit.as_of(f, at, ["k"])["v"].to_list() == [3, 4]  # tie at +2h: last row in frame order
    assert pit.as_of(f, at, ["k"], where=pl.col("valid"))["v"].to_list() == [2, 4]
    assert pit.as_of(f, at, ["k"], strict=True)["v"].to_list() == [1, 4]  # strictly before +2h
    assert pit.as_of(f, T0 - timedelta(seconds=1), ["k"]).height == 0


def test_known_by_is_inclusive_and_refuses_naive_times():
    f = _frame()
    assert pit.known_by(f, T0 + timedelta(hours=1))["v"].to_list() == [1, 4]
    with pytest.raises(ValueError, match="tz-aware"):
        pit.known_by(f, datetime(2026, 3, 1))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['issued_at'\]"):
        pit.known_by(f, T0, time_col="issued_at")


def test_flag_at_or_after_release_is_inclusive():
    f = pl.DataFrame({"issued_at": [T0 - timedelta(minutes=1), T0, T0 + timedelta(minutes=1)], "closes_at": [T0] * 3})
    assert f.select(pit.flag_at_or_after(pl.col("issued_at"), pl.col("closes_at")))["issued_at"].to_list() == [False, True, True]


def test_month_arithmetic_and_reference_periods():
    assert pit.shift_month(2025, 11, 3) == (2026, 2)
    assert pit.shift_month(2026, 1, -1) == (2025, 12)
    assert pit.reference_period("2026-Q1", "quarterly").isoformat() == "2026-01-01"
    assert pit.reference_period("2010-01", "quarterly").isoformat() == "2009-10-01"  # Feb release = 2009Q4


class _Const:
    model_id = "baseline/const"

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return tasks.select(
            pl.lit("arima_nowcasts").alias("producer"), "partition_key", pl.lit(self.model_id).alias("model_id"),
            "indicator_id", "reference_period", "issued_at", pl.lit(1.5).alias("value"), pl.lit(True).alias("valid"),
            pl.lit(None, pl.Utf8).alias("invalid_reason"), pl.lit(False).alias("after_release"),
            *[pl.lit(None, pl.Utf8).alias(c) for c in ("source_variable", "rationale", "citations", "prompt_hash", "raw_response_id")],
            *[pl.lit(None, pl.Int32).alias(c) for c in ("prompt_tokens", "completion_tokens")],
            pl.lit(None, pl.Float64).alias("cost_usd"), pl.col("issued_at").alias("available_at"),
        )


def test_run_forecasters_stacks_conformed_rows_and_rejects_non_forecasters():
    import datetime as dt

    tasks = pl.DataFrame({"partition_key": ["2026-03"], "indicator_id": ["cpi_yoy"],
                          "reference_period": [dt.date(2026, 2, 1)], "issued_at": [T0]})
    assert isinstance(_Const(), Forecaster)
    out = run_forecasters([_Const(), _Const()], tasks, "nowcasts")
    assert out.height == 2 and out["value"].to_list() == [1.5, 1.5]
    with pytest.raises(TypeError, match="forecaster contract"):
        run_forecasters([object()], tasks, "nowcasts")
