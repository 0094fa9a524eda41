"""Event-track statistical baselines: one ``StatsForecast.forecast`` call over every task series (what
:class:`leaf_live.event.baselines.StatsForecastBaselines` does) vs a straightforward loop that fits each
series with the model's own ``forecast(y, h, level)``.

Series: the frozen bundles of the real snapshot's tasks (large-cap daily closes, 15 values, h = 7; hourly
New York temperature / EIA-930 load, 336 values, season 24, h = 168). Prints, per model and frequency,
forecast rows per second of wall time (one row = one forecast step of one series) for both ways, their ratio,
and the largest difference between the two point forecasts (they must agree). Both ways run the same
per-series fits, so with ``--n-jobs 1`` the ratio is about 1: the one call buys the fan-out (``--n-jobs 2``
uses statsforecast's process pool) and one tidy frame, not faster fits.

Run: ``.venv/bin/python benchmarks/event_baselines.py [--models AutoETS,AutoTheta,AutoARIMA] [--daily 300]
[--hourly 40] [--n-jobs 1]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from leaf_live.core.settings import get_settings  # noqa: E402
from leaf_live.event import pipeline  # noqa: E402
from leaf_live.event.baselines import _sf_models, bundle_values, statsforecast_paths  # noqa: E402


def series_by_frequency(n_daily: int, n_hourly: int) -> dict[str, dict[str, np.ndarray]]:
    t = pipeline.load_snapshot(get_settings().require_snapshot())
    ts = pipeline.build_tasks(t).tasks.filter(pl.col("task_kind") == "series")
    out = {}
    for freq, n in (("session", n_daily), ("hour", n_hourly)):
        u = (
            ts.filter(pl.col("frequency") == freq, pl.col("domain") != "mid_cap")
            .unique("bundle_hash", keep="first", maintain_order=True)
            .head(n)
        )
        out[freq] = {r["bundle_hash"]: bundle_values(r["bundle"]) for r in u.iter_rows(named=True)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="AutoETS,AutoTheta,AutoARIMA")
    ap.add_argument("--daily", type=int, default=300, help="daily series (15 closes, h = 7)")
    ap.add_argument("--hourly", type=int, default=40, help="hourly series (336 hours, season 24, h = 168)")
    ap.add_argument("--n-jobs", type=int, default=1)
    a = ap.parse_args()
    models = a.models.split(",")
    data = series_by_frequency(a.daily, a.hourly)
    print(
        f"{'model':10s} {'freq':8s} {'series':>6s} {'one call rows/s':>16s} {'loop rows/s':>12s}"
        f" {'ratio':>6s} {'max |diff|':>11s}"
    )
    for freq, season, h in (("session", 1, 7), ("hour", 24, 168)):
        series = data[freq]
        for m in models:
            # warm up both paths (numba / first-call costs are not what we compare)
            first = next(iter(series.values()))
            statsforecast_paths({"w": first}, h, season, [m])
            t0 = time.perf_counter()
            one = statsforecast_paths(series, h, season, [m], n_jobs=a.n_jobs)[m][0]
            t_one = time.perf_counter() - t0
            model = _sf_models(season, [m])[0]
            t0 = time.perf_counter()
            loop = {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for k, y in series.items():
                    loop[k] = model.forecast(y=y, h=h, level=[80, 95])["mean"]
            t_loop = time.perf_counter() - t0
            diff = max(float(np.max(np.abs(one[k] - loop[k]))) for k in series)
            rows = len(series) * h
            print(
                f"{m:10s} {freq:8s} {len(series):6d} {rows / t_one:16.0f} {rows / t_loop:12.0f}"
                f" {t_loop / t_one:6.2f} {diff:11.2e}"
            )


if __name__ == "__main__":
    main()
