"""The opt-in conformal last value (baselines.ConformalNaive) by hand: on a series rising by exactly 1 a day
every rolling-origin error of the last value at step j is j, so statsforecast's conformal interval is the
last value +/- j at both levels; the point path is LVB's."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest

from leaf_live.event import baselines
from leaf_live.event.tasks import freeze_bundle


def _tasks(values: list[float], horizons: list[int]) -> pl.DataFrame:
    cutoff = datetime(2025, 11, 3, 21, tzinfo=UTC)
    text, digest = freeze_bundle(
        {
            "domain": "large_cap",
            "target": "X",
            "cutoff": cutoff,
            "frequency": "session",
            "unit": "USD",
            "series": [
                [(date(2025, 10, 1) + timedelta(days=i)).isoformat(), v] for i, v in enumerate(values)
            ],
        }
    )
    return pl.DataFrame(
        [
            {
                "task_id": f"large_cap/X/series/{h}d",
                "domain": "large_cap",
                "task_kind": "series",
                "horizon": f"{h}d",
                "horizon_steps": h,
                "frequency": "session",
                "cutoff": cutoff,
                "bundle": text,
                "bundle_hash": digest,
            }
            for h in horizons
        ]
    )


def test_conformal_last_value_on_a_straight_line():
    y = [100.0 + i for i in range(15)]  # 15 closes, as a large-cap bundle
    rows = baselines.ConformalNaive().forecast(_tasks(y, [1, 3, 7]))
    assert rows["model_id"].unique().to_list() == ["baseline/last-value-conformal"]
    by = {r["task_id"].split("/")[-1]: r for r in rows.iter_rows(named=True)}
    assert sorted(by) == ["1d", "3d", "7d"]
    for h in (1, 3, 7):
        r = by[f"{h}d"]
        assert r["point"] == [114.0] * h  # LVB: the last close repeated
        q = json.loads(r["quantiles"])
        want_lo = [114.0 - j for j in range(1, h + 1)]
        want_hi = [114.0 + j for j in range(1, h + 1)]
        assert q["0.025"] == pytest.approx(want_lo) and q["0.1"] == pytest.approx(want_lo)
        assert q["0.975"] == pytest.approx(want_hi) and q["0.9"] == pytest.approx(want_hi)


def test_horizons_without_two_windows_get_no_row_and_it_is_opt_in():
    rows = baselines.ConformalNaive().forecast(_tasks([1.0 + (i % 3) for i in range(15)], [7, 8]))
    assert rows["task_id"].to_list() == ["large_cap/X/series/7d"]  # 14 // 8 = 1 window: no interval, no row
    res = pl.DataFrame(
        schema={
            "question_id": pl.Utf8,
            "category": pl.Utf8,
            "outcome": pl.Float64,
            "available_at": pl.Datetime("us", "UTC"),
        }
    )
    ids = [type(f).__name__ for f in baselines.default_forecasters(res, statistical=("AutoETS",))]
    assert "ConformalNaive" not in ids
    opt = baselines.default_forecasters(res, statistical=("AutoETS", "ConformalNaive"))
    assert [type(f).__name__ for f in opt][:4] == [
        "LastValue",
        "HistoricalMean",
        "StatsForecastBaselines",
        "ConformalNaive",
    ]
    assert opt[2].models == ("AutoETS",)
