"""Event-track figures and page on real snapshot data (the resolved prediction-market questions at the six
§4.1 cutoffs with the market-price, base-rate and always-0.5 baselines; New York weather trend tasks with the
last-value and historical-mean baselines): what each figure draws is the event scoring module's statistics of
those scores, read back from the matplotlib artists. Hand-made LLM rows check the with/without-events styling.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import polars as pl
import pytest
from matplotlib.container import BarContainer

from leaf_live.core.forecaster import run_forecasters
from leaf_live.event import baselines, catalog, scoring, tasks
from leaf_live.event import figures as F
from leaf_live.event.pipeline import BASELINE_PRODUCER
from leaf_live.event.site import cutoff_block, event_page, month_block
from leaf_live.event.sources.prediction_markets import SnapshotPredictionMarkets
from leaf_live.event.sources.weather import SnapshotWeather

DRAWS = 200


@pytest.fixture(scope="module")
def real(snapshot_dir) -> dict:
    pm = SnapshotPredictionMarkets(snapshot_dir).load()
    weather = SnapshotWeather(snapshot_dir).hourly(catalog.CITIES, date(2025, 9, 1), date(2025, 12, 15))
    ts = tasks.TaskSet.concat(
        [
            tasks.event_tasks(pm.questions, pm.path),
            tasks.hourly_tasks(
                weather,
                "weather",
                catalog.CITIES,
                date(2025, 10, 1),
                date(2025, 11, 30),
                target_col="city",
                time_col="ts",
                value_col="temperature_c",
            ),
        ]
    )
    fc = run_forecasters(
        baselines.default_forecasters(baselines.resolutions_frame(pm.questions, pm.path), statistical=()),
        ts.tasks,
        "leaf_forecasts",
        columns={"producer": BASELINE_PRODUCER},
    )
    scores = scoring.score_forecasts(ts.tasks, ts.outcomes, fc)
    return {
        "tasks": ts.tasks,
        "outcomes": ts.outcomes,
        "forecasts": fc,
        "scores": scores,
        "stats": F.event_statistics(scores, n_draws=DRAWS),
    }


def test_brier_by_cutoff_draws_the_stored_means_per_cutoff(real):
    plot = F.brier_by_cutoff(real["stats"])
    assert not plot.empty
    ax = plot.figure.axes[0]
    lines = {
        ln.get_label().split(" (n=")[0]: ln
        for ln in ax.lines
        if ln.get_label().startswith(("market/", "baseline/"))
    }
    assert set(lines) == {"market/polymarket", "baseline/base-rate", "baseline/always-0.5"}
    cut = real["stats"].cutoffs
    for model, ln in lines.items():
        want = {
            r["cutoff"]: r["brier"] for r in cut.filter(pl.col("model_id") == model).iter_rows(named=True)
        }
        assert list(ln.get_xdata()) == list(range(6))
        assert list(ln.get_ydata()) == [want[c] for c in F.CUTOFFS]  # 100% .. 10%, the stored order
        assert ln.get_linestyle() == ":"  # baselines dotted
    assert list(lines["baseline/always-0.5"].get_ydata()) == [0.25] * 6
    # the market price at the cutoff beats the base rate at every cutoff (resolved questions of the snapshot)
    assert all(
        m < b for m, b in zip(lines["market/polymarket"].get_ydata(), lines["baseline/base-rate"].get_ydata())
    )
    assert [t.get_text() for t in ax.get_xticklabels()] == list(F.CUTOFFS)
    assert "(baselines only)" in plot.figure.get_suptitle() and "No LLM forecasts stored yet" in plot.caption


def test_reliability_points_are_the_calibration_table(real):
    plot = F.reliability(real["forecasts"], real["outcomes"])
    table = scoring.reliability_table(
        real["forecasts"].filter(pl.col("probability").is_not_null()), real["outcomes"]
    )
    ax = plot.figure.axes[0]
    drawn = {}
    for coll in ax.collections:
        xy = coll.get_offsets()
        drawn[len(drawn)] = np.asarray(xy)
    models = sorted(plot.data["model_id"].unique().to_list())
    assert models == ["baseline/base-rate", "market/polymarket"]  # always-0.5 is one bin: left out
    for k, model in enumerate(models):
        t = table.filter(pl.col("model_id") == model).sort("bin")
        assert np.allclose(drawn[k][:, 0], t["mean_forecast"].to_numpy())
        assert np.allclose(drawn[k][:, 1], t["observed_freq"].to_numpy())
    n = plot.data.filter(pl.col("model_id") == "market/polymarket")["n"].sum()
    assert n == real["forecasts"].filter(pl.col("model_id") == "market/polymarket").height


def test_accuracy_bars_are_the_board_means_in_percent(real):
    plot = F.accuracy_with_without_events(real["stats"])
    assert "no LLM forecasts with events stored yet" in plot.figure.get_suptitle()
    ax = plot.figure.axes[0]
    assert ax.get_title() == "weather"
    board = real["stats"].board.filter(pl.col("metric") == "accuracy", pl.col("domain") == "weather")
    groups = [t.get_text() for t in ax.get_xticklabels()]
    assert groups == ["trend3 3d", "trend3 7d", "trend5 3d", "trend5 7d"]
    bar_containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert sorted(c.get_label() for c in bar_containers) == ["baseline/hist-mean", "baseline/last-value"]
    for container in bar_containers:
        label = container.get_label()
        heights = [p.get_height() for p in container.patches]
        want = [
            100
            * board.filter(
                pl.col("model_id") == label,
                pl.col("task_kind") == g.split()[0],
                pl.col("horizon") == g.split()[1],
            )["mean"][0]
            for g in groups
        ]
        assert heights == pytest.approx(want, abs=1e-12)
        assert all(p.get_hatch() == "//" for p in container.patches)  # baselines hatched
    # the baselines' accuracy on these tasks, counted by hand from the per-task scores
    acc = real["scores"].filter(
        pl.col("metric") == "accuracy",
        pl.col("model_id") == "baseline/last-value",
        pl.col("task_kind") == "trend3",
        pl.col("horizon") == "3d",
    )
    assert plot.data.filter(
        pl.col("model_id") == "baseline/last-value",
        pl.col("task_kind") == "trend3",
        pl.col("horizon") == "3d",
    )["mean"][0] == pytest.approx(100 * acc["value"].mean())


def test_llm_rows_with_and_without_events_are_told_apart():
    rows = []
    for model, acc in (
        ("baseline/last-value", 0.3),
        ("openai/gpt-x@single:ts", 0.4),
        ("openai/gpt-x@single:events", 0.6),
    ):
        for k in range(10):
            rows.append(
                {
                    "model_id": model,
                    "task_id": f"t{k}",
                    "domain": "large_cap",
                    "task_kind": "trend3",
                    "horizon": "1d",
                    "target_id": "AAPL",
                    "metric": "accuracy",
                    "value": float(k < 10 * acc),
                }
            )
    stats = F.event_statistics(pl.DataFrame(rows), n_draws=50)
    plot = F.accuracy_with_without_events(stats)
    ax = plot.figure.axes[0]
    bars = {c.get_label(): c.patches[0] for c in ax.containers if isinstance(c, BarContainer)}
    assert set(bars) == {
        "baseline/last-value",
        "openai/gpt-x@single (time series only)",
        "openai/gpt-x@single (with events)",
    }
    assert [bars[k].get_height() for k in sorted(bars)] == pytest.approx([30.0, 40.0, 60.0])
    assert bars["openai/gpt-x@single (with events)"].get_alpha() == 0.9
    assert bars["openai/gpt-x@single (time series only)"].get_alpha() == 0.45
    # one model, one colour, both contexts
    assert (
        bars["openai/gpt-x@single (with events)"].get_facecolor()[:3]
        == bars["openai/gpt-x@single (time series only)"].get_facecolor()[:3]
    )
    assert "(no LLM" not in plot.figure.get_suptitle()
    assert (
        F.context_of("openai/gpt-x@single:alpha=0.5") == "events" and F.context_of("baseline/x") == "baseline"
    )


def test_nothing_stored_gives_empty_figures_and_a_page_that_says_so():
    empty = pl.DataFrame()
    stats = F.event_statistics(
        pl.DataFrame(
            schema={
                "model_id": pl.Utf8,
                "task_id": pl.Utf8,
                "domain": pl.Utf8,
                "task_kind": pl.Utf8,
                "horizon": pl.Utf8,
                "target_id": pl.Utf8,
                "metric": pl.Utf8,
                "value": pl.Float64,
            }
        )
    )
    assert F.accuracy_with_without_events(stats).empty and F.brier_by_cutoff(stats).empty
    fc = pl.DataFrame(
        schema={"model_id": pl.Utf8, "task_id": pl.Utf8, "valid": pl.Boolean, "probability": pl.Float64}
    )
    assert F.reliability(fc, pl.DataFrame(schema={"task_id": pl.Utf8, "outcome": pl.Float64})).empty
    page = event_page(pl.DataFrame(schema={"model_id": pl.Utf8}), empty, stats, {})
    assert [t.id for t in page.tabs] == ["board"] and "No event-track scores" in page.tabs[0].blocks[
        0
    ].paragraphs[0]


def test_event_page_tables_hold_the_statistics(real):
    stats, scores, tasks_ = real["stats"], real["scores"], real["tasks"]
    page = event_page(scores, tasks_, stats, {}, month_limit=3)
    assert [t.id for t in page.tabs][:2] == ["board", "questions"] and len(page.tabs) == 5
    board = next(b for b in page.tabs[0].blocks if getattr(b, "id", "") == "event-board")
    assert len(board.rows) == stats.board.height
    got = {
        (r["domain"], r["task_kind"], r["horizon"], r["metric"], r["model_id"]): (r["mean"], r["n"])
        for r in board.rows
    }
    for r in stats.board.iter_rows(named=True):
        assert got[(r["domain"], r["task_kind"], r["horizon"], r["metric"], r["model_id"])] == (
            r["mean"],
            r["n"],
        )
    # horizons in LEAF order within a group, best model first (lower Brier)
    ev = [r for r in board.rows if r["domain"] == "event"]
    assert [r["horizon"] for r in ev][::3] == list(F.CUTOFFS)
    first = [r for r in ev if r["horizon"] == "10%"]
    assert [r["mean"] for r in first] == sorted(r["mean"] for r in first)
    cut = cutoff_block(stats)
    half = next(r for r in cut.rows if r["model_id"] == "baseline/always-0.5")
    assert [half[c] for c in F.CUTOFFS] == pytest.approx([0.25] * 6) and half["avg"] == pytest.approx(0.25)
    # a month tab: each model's plain mean over its own tasks of the month (no common-set shrinking)
    month = page.tabs[2].id[2:]
    mb = month_block(scores, tasks_, month)
    ids = tasks_.filter(pl.col("cutoff").dt.strftime("%Y-%m") == month)["task_id"]
    s = scoring.board_scores(scores.filter(pl.col("task_id").is_in(ids.to_list())))
    assert (
        len(mb.rows)
        == s.filter(pl.col("metric").is_in(list(F.BOARD_METRICS)))
        .select("model_id", "domain", "task_kind", "horizon", "metric")
        .n_unique()
    )
    for r in mb.rows:
        g = s.filter(
            pl.col("model_id") == r["model_id"],
            pl.col("domain") == r["domain"],
            pl.col("horizon") == r["horizon"],
            pl.col("metric") == r["metric"],
            pl.col("task_kind") == r["task_kind"],
        )
        assert (r["mean"], r["n"]) == (pytest.approx(g["value"].mean()), g.height)
