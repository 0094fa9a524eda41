"""Event-track baselines and metrics: hand-worked small cases, cross-checks against independent
computations (numerical CRPS integral, statsmodels OLS with dummies, per-series statsforecast fits), and the
real-snapshot figures beside the LEAF tables (Table 5, Table 7, Table 8 setting)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats

from leaf_live.core.forecaster import Forecaster, run_forecasters
from leaf_live.core.storage import StorageError
from leaf_live.event import baselines as B
from leaf_live.event import pipeline, scoring, tasks
from leaf_live.event.tasks import freeze_bundle

T0 = datetime(2026, 1, 5, 21, tzinfo=UTC)


def _task(
    task_id: str,
    domain: str,
    kind: str,
    steps: int,
    frequency: str,
    series: list[float],
    *,
    horizon: str = "3d",
    last: object = "series",
) -> dict:
    text, h = freeze_bundle(
        {"series": [[str(i), v] for i, v in enumerate(series)], "category": "economy_business"}
    )
    return {
        "partition_key": "2026-01-05",
        "task_id": task_id,
        "domain": domain,
        "target_id": task_id.split("/")[1],
        "task_kind": kind,
        "horizon": horizon,
        "horizon_steps": steps,
        "frequency": frequency,
        "cutoff": T0,
        "target_times": [T0],
        "last_value": series[-1] if last == "series" else last,
        "bundle": text,
        "bundle_hash": h,
        "max_input_available_at": T0,
        "last_value_age_days": None,
        "available_at": T0,
    }


def _frame(rows: list[dict]) -> pl.DataFrame:
    from leaf_live.core.storage import conform

    return conform(
        "forecast_tasks",
        pl.DataFrame(rows, schema_overrides={"target_times": pl.List(pl.Datetime("us", "UTC"))}),
    )


# ------------------------------------------------------------------------------------------------ baselines


def test_last_value_and_historical_mean_by_hand():
    hourly = [float(i % 24) + 100.0 * (i // 24) for i in range(48)]  # day 1: 0..23, day 2: 100..123
    tk = _frame(
        [
            _task("large_cap/X/series/3d/t", "large_cap", "series", 3, "session", [10.0, 12.0, 11.0]),
            _task("large_cap/X/trend5/3d/t", "large_cap", "trend5", 3, "session", [10.0, 12.0, 11.0]),
            _task("weather/c/series/2d/t", "weather", "series", 30, "hour", hourly),
            _task("weather/c/trend3/2d/t", "weather", "trend3", 30, "hour", hourly),
        ]
    )
    lv = B.LastValue().forecast(tk).sort("task_id")
    hm = B.HistoricalMean().forecast(tk).sort("task_id")
    pt = dict(zip(lv["task_id"], lv["point"].to_list()))
    assert pt["large_cap/X/series/3d/t"] == [11.0, 11.0, 11.0]
    assert pt["weather/c/series/2d/t"] == [100.0 + i for i in range(24)] + [
        100.0 + i for i in range(6)
    ]  # previous 24 h repeated
    cls = dict(zip(lv["task_id"], lv["predicted_class"].to_list()))
    assert cls["large_cap/X/trend5/3d/t"] == "Neutral" and cls["weather/c/trend3/2d/t"] == "Neutral"
    hp = dict(zip(hm["task_id"], hm["point"].to_list()))
    assert hp["large_cap/X/series/3d/t"] == pytest.approx([11.0] * 3)
    assert hp["weather/c/series/2d/t"] == pytest.approx(
        [50.0 + i for i in range(24)] + [50.0 + i for i in range(6)]
    )
    # HMB's implied weather class: min over the horizon of the hour-of-day means (50) - min of the last 24 h
    # (100)
    assert dict(zip(hm["task_id"], hm["predicted_class"].to_list()))["weather/c/trend3/2d/t"] == "Down"
    assert lv["bundle_hash"].to_list() == tk.sort("task_id")["bundle_hash"].to_list()
    assert all(
        isinstance(f, Forecaster) for f in (B.LastValue(), B.HistoricalMean(), B.MarketPrice(), B.Constant())
    )


def test_statsforecast_one_call_equals_per_series_fits():
    rng = np.random.default_rng(3)
    rows = [
        _task(
            f"large_cap/S{i}/series/3d/t",
            "large_cap",
            "series",
            3,
            "session",
            list(100 + np.cumsum(rng.normal(0, 1, 15))),
        )
        for i in range(6)
    ]
    tk = _frame(rows)
    out = B.StatsForecastBaselines(("AutoETS", "AutoTheta")).forecast(tk)
    assert set(out["model_id"]) == {"baseline/auto-ets", "baseline/auto-theta"} and out.height == 12
    for r in rows[:3]:
        y = B.bundle_values(r["bundle"])
        alone = B.statsforecast_paths({"one": y}, 3, 1, ["AutoETS"])["AutoETS"]
        got = out.filter(pl.col("task_id") == r["task_id"], pl.col("model_id") == "baseline/auto-ets").row(
            0, named=True
        )
        np.testing.assert_allclose(got["point"], alone[0]["one"], rtol=1e-10)
        q = json.loads(got["quantiles"])
        np.testing.assert_allclose(q["0.1"], alone[1]["one"]["0.1"], rtol=1e-10)
        assert all(lo <= p <= hi for lo, p, hi in zip(q["0.025"], got["point"], q["0.975"]))


def test_market_price_base_rate_and_constant():
    ev = [
        _task(f"event/q{i}/event/10%/t", "event", "event", 1, "event", [0.3], horizon="10%", last=p)
        for i, p in enumerate([0.3, None])
    ]
    tk = _frame(ev)
    mp = B.MarketPrice().forecast(tk)
    assert mp["task_id"].to_list() == ["event/q0/event/10%/t"] and mp["probability"].to_list() == [0.3]
    res = pl.DataFrame(
        {
            "question_id": ["a", "b", "c", "d"],
            "category": ["economy_business"] * 3 + ["tech_ai"],
            "outcome": [1.0, 0.0, 1.0, 1.0],
            "available_at": [T0 - timedelta(days=3), T0 - timedelta(days=2), T0 + timedelta(days=1), T0],
        }
    )
    br = B.BaseRate(res)
    assert br.rate("economy_business", T0) == pytest.approx((1 + 1) / (2 + 2))  # a and b known; c later
    assert br.rate("tech_ai", T0) == pytest.approx(0.5)  # d resolves AT the cutoff: not yet known (strict)
    assert B.BaseRate(res).forecast(tk)["probability"].to_list() == [0.5, 0.5]
    assert B.Constant(0.5).forecast(tk)["probability"].to_list() == [0.5, 0.5]
    with pytest.raises(StorageError, match="producer: NULL"):  # the writing stage must stamp its slice
        run_forecasters([B.MarketPrice()], tk, "leaf_forecasts")
    out = run_forecasters(
        [B.MarketPrice(), B.Constant()], tk, "leaf_forecasts", columns={"producer": "leaf_forecasts"}
    )
    assert sorted(out["partition_key"].unique().to_list()) == ["baseline/always-0.5", "market/polymarket"]
    assert out["producer"].unique().to_list() == ["leaf_forecasts"]


# ------------------------------------------------------------------------------------------------ metrics


def test_point_metrics_by_hand():
    y, yhat = np.array([100.0, 110.0, 90.0]), np.array([102.0, 99.0, 90.0])
    assert scoring.mape(y, yhat) == pytest.approx((2 / 100 + 11 / 110 + 0) / 3 * 100)
    assert scoring.rmse(y, yhat) == pytest.approx(math.sqrt((4 + 121) / 3))
    assert scoring.dlv(yhat, 100.0) == pytest.approx((2 + 1 + 10) / 3)
    hist = np.array([1.0, 3.0])  # mean 2, sd 1 (ddof 0)
    assert scoring.zscore_errors(hist, np.array([2.0, 4.0]), np.array([3.0, 3.0])) == pytest.approx(
        (1.0, 1.0)
    )
    assert scoring.brier([0.5, 0.9, 0.2], [1, 1, 0]).tolist() == pytest.approx([0.25, 0.01, 0.04])
    assert scoring.pinball(np.array([10.0]), np.array([8.0]), 0.9)[0] == pytest.approx(1.8)
    assert scoring.pinball(np.array([10.0]), np.array([12.0]), 0.9)[0] == pytest.approx(0.2)
    assert scoring.brier_index(0.25) == pytest.approx(50.0) and scoring.brier_index(0.0) == 100.0
    with pytest.raises(scoring.ScoringError, match="zero variance"):
        scoring.zscore_errors(np.array([1.0, 1.0]), np.array([1.0]), np.array([1.0]))


def test_crps_normal_matches_the_integral_definition():
    for y, mu, s in ((0.3, 0.0, 1.0), (-2.0, 1.0, 0.5), (5.0, 5.0, 3.0)):
        f = lambda x, mu=mu, s=s, y=y: (stats.norm.cdf(x, mu, s) - (x >= y)) ** 2  # noqa: E731
        num = (
            integrate.quad(f, mu - 12 * s, y, limit=200)[0] + integrate.quad(f, y, mu + 12 * s, limit=200)[0]
        )
        assert scoring.crps_normal(np.array([y]), np.array([mu]), np.array([s]))[0] == pytest.approx(
            num, rel=1e-7
        )


def test_score_forecasts_end_to_end_on_a_small_case():
    tk = _frame(
        [
            _task(
                "large_cap/X/series/2d/t", "large_cap", "series", 2, "session", [100.0, 100.0], horizon="2d"
            ),
            _task("event/q/event/10%/t", "event", "event", 1, "event", [0.8], horizon="10%"),
        ]
    )
    out = pl.DataFrame(
        {
            "partition_key": ["large_cap/X/series/2d/t", "event/q/event/10%/t"],
            "task_id": ["large_cap/X/series/2d/t", "event/q/event/10%/t"],
            "actual": [[110.0, 90.0], [0.0]],
            "reference": [100.0, None],
            "change": [None, None],
            "label": [None, None],
            "outcome": [None, 0.0],
            "available_at": [T0, T0],
        }
    )
    q = json.dumps(
        {"0.025": [80.0, 80.0], "0.1": [90.0, 90.0], "0.9": [110.0, 110.0], "0.975": [120.0, 120.0]}
    )
    fc = pl.DataFrame(
        {
            "model_id": ["m", "m", "m"],
            "task_id": ["large_cap/X/series/2d/t", "event/q/event/10%/t", "event/q/event/10%/t"],
            "bundle_hash": [tk["bundle_hash"][0], tk["bundle_hash"][1], "other-inputs"],
            "valid": [True, True, True],
            "point": [[100.0, 100.0], None, None],
            "quantiles": [q, None, None],
            "predicted_class": [None, None, None],
            "probability": [None, 0.8, 0.1],
        }
    )
    s = scoring.score_forecasts(tk, out, fc)
    v = {(r["task_id"].split("/")[0], r["metric"]): r["value"] for r in s.iter_rows(named=True)}
    assert v[("large_cap", "mape")] == pytest.approx(100 * (10 / 110 + 10 / 90) / 2)
    assert v[("large_cap", "rmse")] == pytest.approx(10.0) and v[("large_cap", "dlv")] == 0.0
    assert v[("large_cap", "cover80")] == 1.0 and v[("large_cap", "cover95")] == 1.0
    # pinball in % of x_T: y = +/-10, quantiles -20, -10, 0, 10, 20
    want = np.mean(
        [
            np.mean([scoring.pinball(np.array([10.0, -10.0]), np.array([qv, qv]), t).mean()])
            for t, qv in zip(scoring.QUANTILES, (-20.0, -10.0, 0.0, 10.0, 20.0))
        ]
    )
    assert v[("large_cap", "qloss")] == pytest.approx(want)
    assert v[("event", "brier")] == pytest.approx(0.64)  # the forecast made from other inputs is not scored
    assert s.filter(pl.col("metric") == "brier").height == 1


def test_two_way_fixed_effects_match_ols_with_dummies():
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    rows = [(q, m) for q in range(30) for m in range(4) if rng.random() < 0.8]
    q = np.array([r[0] for r in rows])
    m = np.array([r[1] for r in rows])
    y = 0.1 * m + rng.random(30)[q] * 0.5 + rng.normal(0, 0.05, len(rows))
    a, b = scoring.two_way_fixed_effects(y, q, m)
    X = np.column_stack(
        [np.eye(30)[q], np.eye(4)[m][:, 1:]]
    )  # question dummies + model dummies (model 0 = reference)
    fit = sm.OLS(y, X).fit()
    np.testing.assert_allclose(b, fit.params[:30], atol=1e-9)
    np.testing.assert_allclose(a[1:], fit.params[30:], atol=1e-9)


def test_difficulty_adjustment_is_raw_brier_on_a_balanced_panel_and_rescales_to_always_half():
    rng = np.random.default_rng(1)
    rows = []
    for qi in range(40):
        o = float(rng.random() < 0.3)
        for model, p in (("a", 0.8 * o + 0.1), ("b", 0.3), ("baseline/always-0.5", 0.5)):
            rows.append(
                {
                    "model_id": model,
                    "task_id": f"q{qi}",
                    "target_id": f"q{qi}",
                    "horizon": "10%",
                    "metric": "brier",
                    "value": (p - o) ** 2,
                }
            )
    s = pl.DataFrame(rows)
    d = scoring.difficulty_adjusted_brier(s, n_draws=50, by_cutoff=False)
    raw = s.group_by("model_id").agg(pl.col("value").mean())
    for r in d.iter_rows(named=True):
        assert r["adj_brier"] == pytest.approx(
            raw.filter(pl.col("model_id") == r["model_id"])["value"][0], abs=1e-9
        )
        assert r["adj_ci_lo"] <= r["adj_brier"] <= r["adj_ci_hi"]
    assert d.filter(pl.col("model_id") == "baseline/always-0.5")["brier_index"][0] == pytest.approx(50.0)
    # an unbalanced, exactly additive panel (Brier = model effect + question difficulty): "easy" skips the
    # hardest half of the questions. Its raw mean flatters it; the adjusted score recovers 0.25 + a_i - a_ref.
    diff = np.linspace(0.0, 0.3, 40)
    eff = {"easy": 0.05, "fair": 0.02, "baseline/always-0.5": 0.0}
    add = pl.DataFrame(
        [
            {
                "model_id": m,
                "task_id": f"q{j}",
                "target_id": f"q{j}",
                "horizon": "10%",
                "metric": "brier",
                "value": a + diff[j],
            }
            for m, a in eff.items()
            for j in range(40)
            if not (m == "easy" and j >= 20)
        ]
    )
    d2 = {
        r["model_id"]: r
        for r in scoring.difficulty_adjusted_brier(add, n_draws=20, by_cutoff=False).iter_rows(named=True)
    }
    assert d2["easy"]["adj_brier"] == pytest.approx(0.30, abs=1e-9) and d2["fair"][
        "adj_brier"
    ] == pytest.approx(0.27, abs=1e-9)
    raw_easy = float(add.filter(pl.col("model_id") == "easy")["value"].mean())
    raw_fair = float(add.filter(pl.col("model_id") == "fair")["value"].mean())
    assert raw_easy < raw_fair and d2["easy"]["n"] == 20  # raw Brier ranks them the wrong way round
    with pytest.raises(scoring.ScoringError, match="reference model"):
        scoring.difficulty_adjusted_brier(s.filter(pl.col("model_id") != "baseline/always-0.5"), n_draws=5)


def test_bootstrap_and_reliability():
    v = np.array([1.0, 1.0, 3.0, 3.0])
    m, lo, hi = scoring.bootstrap_mean(v, np.array(["a", "a", "b", "b"]), n_draws=500)
    assert m == 2.0 and 1.0 <= lo <= 2.0 <= hi <= 3.0
    assert scoring.bootstrap_mean(np.ones(5), np.arange(5))[1:] == (1.0, 1.0)
    # one value per group: the percentile interval of the mean approaches mean +/- 1.96 sd / sqrt(n)
    x = np.random.default_rng(1).normal(2.0, 3.0, 900)
    m, lo, hi = scoring.bootstrap_mean(x, np.arange(900), n_draws=4000)
    half = 1.959964 * x.std() / math.sqrt(900)
    assert (m - lo) == pytest.approx(half, rel=0.1) and (hi - m) == pytest.approx(half, rel=0.1)
    f = pl.DataFrame(
        {"model_id": ["m"] * 4, "probability": [0.05, 0.15, 0.12, 1.0], "outcome": [0.0, 1.0, 0.0, 1.0]}
    )
    r = scoring.reliability_table(f)
    assert r["bin"].to_list() == [0, 1, 9] and r["n"].to_list() == [1, 2, 1]
    assert r["observed_freq"].to_list() == [0.0, 0.5, 1.0] and r["mean_forecast"][1] == pytest.approx(0.135)


# ------------------------------------------------------------------------------------------------ real
# snapshot


@pytest.fixture(scope="module")
def real(snapshot_dir) -> pipeline.EventTables:
    t = pipeline.load_snapshot(snapshot_dir)
    ts = pipeline.build_tasks(t)
    t.forecast_tasks, t.task_outcomes = ts.tasks, ts.outcomes
    t.leaf_forecasts = pipeline.run_baselines(t, statistical=())
    t.leaf_scores = scoring.score_forecasts(t.forecast_tasks, t.task_outcomes, t.leaf_forecasts)
    return t


def _mean(s: pl.DataFrame, model: str, domain: str, horizon: str, metric: str) -> float:
    g = scoring.board_scores(s).filter(  # the board's domains: the SEER case day apart
        pl.col("model_id") == model,
        pl.col("domain") == domain,
        pl.col("horizon") == horizon,
        pl.col("metric") == metric,
    )
    return float(g["value"].mean())


def test_table7_last_value_and_historical_mean_mape_for_large_caps(real):
    s = real.leaf_scores
    # paper Table 7: LVB 1.948% / 2.903%, HMB 3.782% / 4.295% (30 large caps, 10.2025-02.2026)
    assert _mean(s, "baseline/last-value", "large_cap", "3d", "mape") == pytest.approx(1.948, abs=0.05)
    assert _mean(s, "baseline/last-value", "large_cap", "7d", "mape") == pytest.approx(2.903, abs=0.05)
    assert _mean(s, "baseline/hist-mean", "large_cap", "3d", "mape") == pytest.approx(3.782, abs=0.05)
    assert _mean(s, "baseline/hist-mean", "large_cap", "7d", "mape") == pytest.approx(4.295, abs=0.05)
    assert _mean(s, "baseline/last-value", "large_cap", "3d", "dlv") == 0.0
    # commodities (9 of 10): paper LVB 2.540% / 3.236%
    assert _mean(s, "baseline/last-value", "commodity", "3d", "mape") == pytest.approx(2.540, abs=0.15)
    assert _mean(s, "baseline/last-value", "commodity", "7d", "mape") == pytest.approx(3.236, abs=0.15)


def test_table5_weather_and_load_lvb_hmb_beside_the_paper(real):
    s = real.leaf_scores
    # electricity, paper Table 5 (LVB MAE 0.613 / 0.674, HMB 0.645 / 0.690): same region on 2018-19 EIA-930
    for model, h, paper in (
        ("baseline/last-value", "3d", 0.613),
        ("baseline/last-value", "7d", 0.674),
        ("baseline/hist-mean", "3d", 0.645),
        ("baseline/hist-mean", "7d", 0.690),
    ):
        assert _mean(s, model, "electricity", h, "mae_z") == pytest.approx(paper, abs=0.1)
    # weather (New York only), paper LVB MAE 0.833 / 0.973, HMB 0.890 / 0.962
    for model, h, paper in (
        ("baseline/last-value", "3d", 0.833),
        ("baseline/last-value", "7d", 0.973),
        ("baseline/hist-mean", "3d", 0.890),
        ("baseline/hist-mean", "7d", 0.962),
    ):
        assert _mean(s, model, "weather", h, "mae_z") == pytest.approx(paper, abs=0.2)
    # MSE >= MAE^2 per task (Jensen), so also for the means
    for d in ("weather", "electricity"):
        assert (
            _mean(s, "baseline/last-value", d, "3d", "mse_z")
            >= _mean(s, "baseline/last-value", d, "3d", "mae_z") ** 2
        )


def test_event_brier_per_cutoff_and_difficulty_index_on_resolved_questions(real):
    s = real.leaf_scores
    table = scoring.brier_by_cutoff(s, n_draws=200)
    half = table.filter(pl.col("model_id") == "baseline/always-0.5")
    assert half["brier"].to_list() == pytest.approx([0.25] * 7) and set(half["cutoff"]) == {
        "100%",
        "80%",
        "60%",
        "40%",
        "20%",
        "10%",
        "avg",
    }
    mkt = {
        r["cutoff"]: r for r in table.filter(pl.col("model_id") == "market/polymarket").iter_rows(named=True)
    }
    rate = {
        r["cutoff"]: r for r in table.filter(pl.col("model_id") == "baseline/base-rate").iter_rows(named=True)
    }
    assert mkt["10%"]["brier"] < rate["10%"]["brier"] < 0.25
    assert mkt["10%"]["n"] < rate["10%"]["n"]  # the market price exists only where the data has one
    for r in table.iter_rows(named=True):
        assert r["ci_lo"] <= r["brier"] <= r["ci_hi"]
    d = scoring.difficulty_adjusted_brier(s, n_draws=30)
    idx = {(r["model_id"], r["cutoff"]): r["brier_index"] for r in d.iter_rows(named=True)}
    assert idx[("baseline/always-0.5", "all")] == pytest.approx(50.0)
    assert idx[("market/polymarket", "all")] > idx[("baseline/base-rate", "all")] > 50.0
    # like-with-like board: the market's questions only
    common = scoring.leaderboard(s.filter(pl.col("metric") == "brier"), n_draws=100)
    n = common.filter(pl.col("horizon") == "10%")["n"].unique().to_list()
    assert len(n) == 1 and n[0] == mkt["10%"]["n"]


def test_statistical_baselines_do_not_beat_last_value_on_large_cap_prices(real):
    # Table 7 / App. E.1: under the efficient-market view the last close is the best point forecast
    t = real.forecast_tasks.filter(
        pl.col("domain") == "large_cap",
        pl.col("task_kind") == "series",
        pl.col("horizon") == "3d",
        tasks.case_day_of().is_null(),
    )
    fc = B.StatsForecastBaselines(("AutoETS", "AutoTheta")).forecast(t)
    s = scoring.score_forecasts(t, real.task_outcomes, fc)
    lvb = _mean(real.leaf_scores, "baseline/last-value", "large_cap", "3d", "mape")
    for m in ("baseline/auto-ets", "baseline/auto-theta"):
        assert _mean(s, m, "large_cap", "3d", "mape") > lvb
        assert s.filter(pl.col("model_id") == m, pl.col("metric") == "mape").height == 1020
        cover = _mean(s, m, "large_cap", "3d", "cover95")
        assert 0.5 < cover < 1.0  # intervals from 15 closes are too narrow, but they are intervals


def test_leaderboard_text_orders_models_and_shows_intervals():
    rows = [
        {
            "model_id": m,
            "task_id": f"t{i}",
            "domain": "large_cap",
            "task_kind": "trend3",
            "horizon": "1d",
            "target_id": f"t{i}",
            "metric": "accuracy",
            "value": float(v),
        }
        for m, vals in (("a", [1, 0, 0, 0]), ("b", [1, 1, 1, 0]))
        for i, v in enumerate(vals)
    ]
    board = scoring.leaderboard(pl.DataFrame(rows), n_draws=200)
    text = scoring.format_leaderboard(board)
    lines = text.splitlines()
    assert lines[0] == "large_cap / trend3 / 1d / accuracy"
    assert lines[1].split()[0] == "b" and "0.7500" in lines[1] and lines[1].endswith("n=4")
    assert lines[2].split()[0] == "a" and "0.2500" in lines[2]


def test_analysis_only_alpha_variants_stay_off_the_boards():
    # Two real models on 4 tasks; an alpha-consistency variant (built from realised outcomes, §3.2) on 2 of
    # them.
    rows = [
        {
            "model_id": m,
            "task_id": f"t{i}",
            "domain": "large_cap",
            "task_kind": "trend3",
            "horizon": "1d",
            "target_id": f"t{i}",
            "metric": "accuracy",
            "value": float(v),
        }
        for m, vals in (
            ("x/a@single:events", [1, 0, 0, 0]),
            ("x/a@single:ts", [1, 1, 1, 0]),
            ("x/a@single:alpha=0.6", [1, 1]),
            ("x/a@single:other_alpha=0.2", [0]),
        )
        for i, v in enumerate(vals)
    ]
    scores = pl.DataFrame(rows)
    assert scoring.board_scores(scores)["model_id"].unique().sort().to_list() == [
        "x/a@single:events",
        "x/a@single:ts",
    ]
    board = scoring.leaderboard(scores, n_draws=50)
    # the common set is the 4 tasks both forecasters scored, not the 1 task the variants share with them
    assert sorted(board["model_id"].to_list()) == ["x/a@single:events", "x/a@single:ts"]
    assert board["n"].to_list() == [4, 4]
    assert board.filter(pl.col("model_id") == "x/a@single:ts")["mean"].item() == 0.75


def test_reusable_rows_keep_only_unchanged_complete_bundles():
    from leaf_live.event.baselines import reusable_rows

    ets, theta = "baseline/auto-ets", "baseline/auto-theta"
    stored = pl.DataFrame(
        {
            "model_id": [ets, theta, ets, theta, ets, "baseline/last-value"],
            "task_id": ["a", "a", "b", "b", "c", "d"],
            "bundle_hash": ["h1", "h1", "old", "old", "h3", "h4"],
            "valid": [True, False, True, True, True, True],
        }
    )
    tasks = pl.DataFrame(
        {"task_id": ["a", "b", "c", "d", "e"], "bundle_hash": ["h1", "h2", "h3", "h4", "h5"]}
    )
    reused, todo = reusable_rows(stored, tasks, [ets, theta])
    # a: both models stored on its current bundle (an invalid row is reused as it is); b: bundle changed;
    # c: one model missing; d: not a statsforecast model; e: new
    assert sorted(reused.select("model_id", "task_id").rows()) == [(ets, "a"), (theta, "a")]
    assert todo["task_id"].to_list() == ["b", "c", "d", "e"]
    none, all_tasks = reusable_rows(stored, tasks, [])
    assert none.is_empty() and all_tasks.equals(tasks)
