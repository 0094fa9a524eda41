"""Event-track baselines stage with and without statsforecast AutoARIMA: is AutoARIMA cheap enough for the
default run (issue 18 item 5: the baselines stage within about 1.5x)?

The tasks are the real snapshot's (``pipeline.build_tasks`` on the default spans, untimed); ``--sample`` keeps
every n-th distinct bundle (1 = all; the cost is per distinct bundle series, so a sample scales linearly).
Timed, one after the other on the same tasks: the default baselines (:func:`pipeline.run_baselines` with
``DEFAULT_STATISTICAL``, what ``leaf-live run`` runs), the same plus AutoARIMA as the project configures it
(``baselines._sf_models``: daily closes the default search, hourly season 24 with p, q <= 2, P, Q <= 1 and the
approximation), and, per fit, the smallest automatic search (d = 1, p, q <= 1, no season) on the daily
series. Prints CPU seconds (this process) and wall seconds of each, the ratios, the distinct series per
frequency and the load average (the machine is shared: CPU seconds are the comparable number).

Run: ``.venv/bin/python benchmarks/event_arima_cost.py [--sample 4]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import polars as pl  # noqa: E402

from leaf_live.core.settings import get_settings  # noqa: E402
from leaf_live.event import pipeline  # noqa: E402
from leaf_live.event.baselines import bundle_values  # noqa: E402


def timed(fn) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=1, help="keep every n-th distinct bundle (1 = all)")
    a = ap.parse_args()
    t = pipeline.load_snapshot(get_settings().require_snapshot())
    ts = pipeline.build_tasks(t)
    tasks = ts.tasks
    if a.sample > 1:
        keep = tasks.select("bundle_hash").unique(maintain_order=True).gather_every(a.sample)
        tasks = tasks.join(keep, on="bundle_hash", how="semi")
    t.forecast_tasks = tasks
    series = tasks.filter(pl.col("task_kind").is_in(["series", "trend3", "trend5"])).unique("bundle_hash")
    per = dict(series.group_by("frequency").len().iter_rows())
    print(f"tasks {tasks.height}, distinct bundle series {per}, load average {os.getloadavg()}")
    runs = {
        "default (ETS, Theta)": pipeline.DEFAULT_STATISTICAL,
        "+ AutoARIMA": pipeline.ALL_STATISTICAL,
    }
    res = {}
    for name, stat in runs.items():
        res[name] = timed(lambda stat=stat: pipeline.run_baselines(t, statistical=stat))
        print(f"{name:22s} CPU {res[name][0]:7.1f} s  wall {res[name][1]:7.1f} s", flush=True)
    (c0, w0), (c1, w1) = res.values()
    print(f"ratio with AutoARIMA: CPU {c1 / c0:.2f}x, wall {w1 / w0:.2f}x  (load average {os.getloadavg()})")

    from statsforecast.models import AutoARIMA

    daily = [bundle_values(b) for b in series.filter(pl.col("frequency") == "session")["bundle"]]
    small = AutoARIMA(d=1, max_p=1, max_q=1, seasonal=False, season_length=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c, w = timed(lambda: [small.forecast(y=y, h=7, level=[80, 95]) for y in daily])
    print(
        f"smallest automatic search (d=1, p,q<=1, no season) on the {len(daily)} daily series: CPU {c:.1f} s"
        f" ({1000 * c / max(len(daily), 1):.0f} ms a fit), wall {w:.1f} s: the stage"
        f" {(c0 + c) / c0:.2f}x in CPU without any hourly AutoARIMA"
    )


if __name__ == "__main__":
    main()
