"""Auto-ARIMA baseline (LiveMacroEval App. I): the likelihood/AIC convention against statsmodels, order
selection, forecasts and their conversion to reporting units, the 60-observation and ISM rules, and
end-to-end nowcasts from the real FRED-MD vintages and first-release histories."""

from __future__ import annotations

import math
import warnings
from datetime import UTC, date, datetime

import numpy as np
import polars as pl
import pytest
from statsmodels.tsa.arima.model import ARIMA

from leaf_live.core.storage import conform
from leaf_live.macro.forecasters.arima.estimator import (
    ArimaError,
    _prepare,
    _Problem,
    css_start,
    fit_arima,
    fit_grid,
    select_order,
    trend_for_d,
)
from leaf_live.macro.forecasters.arima.histories import (
    SeriesHistory,
    regular_history,
    to_reporting,
)
from leaf_live.macro.forecasters.arima.nowcasts import MODEL_ID, arima_nowcasts, nowcast_one
from leaf_live.macro.nowcasts import WRITER_COLUMNS
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.series_vintages import VintageStore
from leaf_live.macro.sources.fred_md import FredMdSnapshot
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot


def _arma(n: int, ar, ma, seed: int, burn: int = 100) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.normal(size=n + burn)
    z = np.zeros(n + burn)
    for t in range(n + burn):
        z[t] = (
            e[t]
            + sum(a * z[t - i - 1] for i, a in enumerate(ar) if t - i - 1 >= 0)
            + sum(m * e[t - j - 1] for j, m in enumerate(ma) if t - j - 1 >= 0)
        )
    return z[burn:]


def _sm_fit(y, p, d, q, trend):
    m = ARIMA(
        y,
        order=(p, d, q),
        trend=trend,
        enforce_stationarity=False,
        enforce_invertibility=False,
        concentrate_scale=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m, m.fit(method_kwargs={"maxiter": 500})


# ------------------------------------------------------------------------------------------------
# likelihood and AIC convention
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "d", "q", "trend", "compare_optimum"),
    # (3,0,2) over-fits ARMA(2,1): statsmodels' maximum has a non-invertible MA part (roots inside the unit
    # circle, coefficients ~30) where the burned likelihood depends on the diffuse prior; we stay invertible
    [
        (2, 1, 1, "t", True),
        (0, 1, 3, "t", True),
        (3, 0, 2, "c", False),
        (1, 2, 1, "n", True),
        (0, 0, 1, "c", True),
    ],
)
def test_likelihood_and_aic_equal_statsmodels(p, d, q, trend, compare_optimum):
    # an ARMA(2,1) difference, integrated d times, with a drift: log-level-like scale (sd 0.01)
    z = 0.01 * _arma(400, [0.5, -0.2], [0.3], seed=7) + (0.002 if d == 1 else 0.0)
    y = 4.6 + (np.cumsum(z) if d == 1 else np.cumsum(np.cumsum(z)) if d == 2 else z)
    model, res = _sm_fit(y, p, d, q, trend)
    k = 0 if trend == "n" else 1
    x, scale, offset = _prepare(y, d)
    beta = [] if not k else [(res.params[0] - offset) / scale if trend == "c" else res.params[0] / scale]
    prob = _Problem(x, p, d, q, trend)
    ssq, sumlog, nu, *_ = prob.run(np.r_[res.params[k : k + p + q], beta])
    ours_ll = -0.5 * (nu * (math.log(2 * math.pi * ssq / nu) + 1) + sumlog) - nu * math.log(scale)
    # statsmodels' log-likelihood at the same ARMA/trend parameters (sigma2 concentrated out)
    assert nu == len(y) - d - max(p, q + 1) == len(y) - model.loglikelihood_burn
    assert ours_ll == pytest.approx(res.llf, abs=2e-3)  # both use an approximate-diffuse start (1e6)
    # our optimum is at least as good as statsmodels' (converged settings), and AIC counts the same parameters
    fit = fit_arima(y, p, d, q, trend)
    if compare_optimum:
        assert fit.aic <= res.aic + 1e-3
    assert fit.aic == pytest.approx(-2 * fit.loglik + 2 * (p + q + k + 1))
    assert fit.nobs == nu
    # the MA part is invertible (roots of 1 + theta(z) outside the unit circle); an ARMA(p, 0) has none
    assert fit.ma.shape == (q,)
    if q:
        assert np.all(np.abs(np.polynomial.polynomial.polyroots(np.r_[1.0, fit.ma])) > 1)


def test_css_start_equals_statsmodels_start_params():
    y = np.cumsum(0.1 * _arma(300, [0.4], [0.2, 0.1], seed=3)) + 0.01 * np.arange(300)
    for p, d, q, trend in [(2, 1, 1, "t"), (0, 1, 2, "t"), (3, 0, 2, "c"), (1, 2, 3, "n"), (12, 1, 3, "t")]:
        sp = ARIMA(
            y, order=(p, d, q), trend=trend, enforce_stationarity=False, enforce_invertibility=False
        ).start_params
        ar, ma, tc = css_start(y, p, d, q, trend)
        mine = np.r_[[tc] if trend != "n" else [], ar, ma]
        np.testing.assert_allclose(mine, sp[:-1], rtol=0, atol=1e-10)


def test_select_order_recovers_ar2_with_an_independent_aic():
    # macro scale: innovations sd 0.01, like monthly log growth rates
    y = 0.02 + 0.01 * _arma(500, [0.6, -0.3], [], seed=11)
    p, q, aic, model = select_order(y, 0, "c", p_max=6, q_max=2)
    assert (p, q) == (2, 0) and model.order == (2, 0, 0)
    # independent AIC: conditional least squares on observations 3..n (burn max(p, q+1) = 2), sigma2 =
    # SSR/n_eff
    X = np.column_stack([np.ones(498), y[1:-1], y[:-2]])
    beta, *_ = np.linalg.lstsq(X, y[2:], rcond=None)
    ssr = float(np.sum((y[2:] - X @ beta) ** 2))
    n_eff = 498
    aic_hand = n_eff * (math.log(2 * math.pi * ssr / n_eff) + 1) + 2 * (2 + 1 + 1)
    assert aic == pytest.approx(aic_hand, abs=1e-6)
    assert model.ar == pytest.approx(beta[1:], abs=1e-9)
    assert model.trend_coef == pytest.approx(beta[0] / (1 - beta[1] - beta[2]), abs=1e-9)
    # and statsmodels' ARIMA agrees on the AIC of that order
    _, res = _sm_fit(y, 2, 0, 0, "c")
    assert aic == pytest.approx(res.aic, abs=1e-4)


def test_the_paper_aic_depends_on_the_units_like_statsmodels():
    # App. I's statsmodels setup (enforce_stationarity=False) drops d + max(p, q+1) observations from each
    # order's likelihood, so AIC compares different samples: each burned observation changes -2 logL by about
    # -(log(2 pi sigma^2) + 1), i.e. it favours long lags for unit-variance data and short ones for log
    # growth rates. The same AR(2) sample in units with sd 1 selects p = 6, by statsmodels as by us.
    y = 2.0 + _arma(500, [0.6, -0.3], [], seed=11)
    ours = {k: f.aic for k, f in fit_grid(y, 0, "c", 6, 0).items()}
    sm = {}
    for p in range(7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sm[(p, 0)] = (
                ARIMA(y, order=(p, 0, 0), trend="c", enforce_stationarity=False, enforce_invertibility=False)
                .fit()
                .aic
            )
    assert min(ours, key=ours.get) == min(sm, key=sm.get) == (6, 0)
    for key in ours:
        assert ours[key] == pytest.approx(sm[key], abs=1e-3)


def test_trend_rule_and_argument_errors():
    assert [trend_for_d(d) for d in (0, 1, 2)] == ["c", "t", "n"]
    y = np.arange(100, dtype=float)
    with pytest.raises(ArimaError, match=r"trend='c' with d=1"):
        fit_arima(y, 1, 1, 0, "c")
    with pytest.raises(ArimaError, match=r"d=3"):
        fit_grid(y, 3, "n")
    with pytest.raises(ArimaError, match=r"y\[5\]=nan: the series must be finite"):
        fit_arima(np.r_[y[:5], np.nan, y[6:]], 1, 1, 0, "t")
    with pytest.raises(ArimaError, match=r"p=-1"):
        fit_arima(y, -1, 1, 0, "t")
    with pytest.raises(ArimaError, match=r"start_method='fast'"):
        fit_grid(y, 1, "t", 1, 1, start_method="fast")


def test_drift_model_forecast_is_last_value_plus_drift():
    y = np.cumsum(0.01 * _arma(200, [], [], seed=5)) + 0.003 * np.arange(200)
    fit = fit_arima(y, 0, 1, 0, "t")
    # burn d + max(0, 1) = 2 levels: the drift is the mean of the differences from the 2nd one on
    drift = float(np.mean(np.diff(y)[1:]))
    assert fit.trend_coef == pytest.approx(drift, abs=1e-12)
    np.testing.assert_allclose(fit.forecast(3), y[-1] + drift * np.arange(1, 4), rtol=0, atol=1e-10)


def test_forecasts_equal_statsmodels_at_the_same_parameters():
    y = np.log(100 * np.exp(np.cumsum(0.004 + 0.01 * _arma(300, [0.5], [0.2], seed=9))))
    for p, d, q, trend in [(1, 1, 1, "t"), (2, 0, 1, "c"), (1, 2, 1, "n")]:
        yy = {0: np.diff(y), 1: y, 2: np.cumsum(y)}[d]
        fit = fit_arima(yy, p, d, q, trend)
        model, res = _sm_fit(yy, p, d, q, trend)
        assert fit.aic <= res.aic + 1e-3
        params = np.r_[[fit.trend_coef] if trend != "n" else [], fit.ar, fit.ma]
        at_ours = model.filter(params)
        np.testing.assert_allclose(fit.forecast(4), at_ours.forecast(4), rtol=0, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# reporting transformations and histories
# ------------------------------------------------------------------------------------------------


def test_reporting_transformations_invert_the_modelled_space():
    # a log-difference forecast D converted to MoM % is 100 (exp(D) - 1)
    logs = np.log(np.array([100.0, 101.0, 102.5]))
    d_hat = 0.0123
    path = np.exp(np.r_[logs, logs[-1] + d_hat])
    assert to_reporting("mom_pct", path, 3) == pytest.approx(100 * (math.exp(d_hat) - 1), rel=1e-12)
    levels = np.array([float(100 + k) for k in range(14)])
    assert to_reporting("yoy_pct", levels, 13) == pytest.approx(100 * (113 / 101 - 1), rel=1e-12)
    assert to_reporting("mom_change", np.array([157000.0, 157303.0]), 1) == pytest.approx(303.0)
    assert to_reporting("qoq_saar_pct", np.array([100.0, 101.0]), 1) == pytest.approx(100 * (1.01**4 - 1))
    assert to_reporting("level", np.array([1.0, 1374.0]), 1) == 1374.0
    assert to_reporting("yoy_pct", np.array([100.0, 1, 1, 1, 104.0]), 4, quarterly=True) == pytest.approx(4.0)
    with pytest.raises(ArimaError, match=r"transformation='yoy'"):
        to_reporting("yoy", levels, 13)
    with pytest.raises(ArimaError, match=r"t=5 with lag 12"):
        to_reporting("yoy_pct", levels, 5)


def test_regular_history_fills_interior_gaps():
    dates = [date(2025, 8, 1), date(2025, 9, 1), date(2025, 10, 1), date(2025, 11, 1), date(2025, 12, 1)]
    d, v, filled = regular_history(dates, [100.0, 121.0, None, 146.41, None], quarterly=False, log_fill=True)
    # trailing missing values are the ragged edge (dropped); the interior gap is log-linear: sqrt(121 *
    # 146.41)
    assert d == dates[:4] and filled == 1
    np.testing.assert_allclose(v, [100.0, 121.0, 133.1, 146.41], rtol=1e-12)
    d, v, filled = regular_history(
        [date(2024, 1, 1), date(2024, 7, 1)], [1.0, 3.0], quarterly=True, log_fill=False
    )
    assert d == [date(2024, 1, 1), date(2024, 4, 1), date(2024, 7, 1)] and v.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ArimaError, match="duplicate"):
        regular_history([date(2024, 1, 1), date(2024, 1, 1)], [1.0, 2.0], quarterly=False, log_fill=False)


def _history(n: int, last: date, values: np.ndarray) -> SeriesHistory:
    k = last.year * 12 + last.month - 1
    dates = [date((k - n + 1 + i) // 12, (k - n + 1 + i) % 12 + 1, 1) for i in range(n)]
    return SeriesHistory(dates, values, 0, "test history")


def test_sixty_observation_rule():
    issued = datetime(2024, 3, 25, 4, tzinfo=UTC)
    vals = 100 * np.exp(np.cumsum(0.002 + 0.005 * _arma(60, [0.3], [], seed=2)))
    short = nowcast_one(
        "industrial_production",
        date(2024, 3, 1),
        issued,
        _history(59, date(2024, 1, 1), vals[1:]),
        p_max=2,
        q_max=1,
    )
    assert short.value is None
    assert (
        short.reason
        == "only 59 observations in test history (App. I requires at least 60); no forecast issued"
    )
    ok = nowcast_one(
        "industrial_production",
        date(2024, 3, 1),
        issued,
        _history(60, date(2024, 1, 1), vals),
        p_max=2,
        q_max=1,
    )
    assert ok.reason is None and abs(ok.value) < 5 and "h=2 months" in ok.rationale
    # a history that already holds the target period is not forecast
    same = nowcast_one(
        "industrial_production", date(2024, 1, 1), issued, _history(60, date(2024, 1, 1), vals)
    )
    assert same.value is None and "already holds 2024-01" in same.reason


def test_ism_is_ar1_on_the_log_level():
    vals = np.exp(np.log(52.0) + 0.05 * _arma(80, [0.8], [], seed=4))
    hist = _history(80, date(2024, 1, 1), vals)
    nc = nowcast_one("ism_manufacturing", date(2024, 3, 1), datetime(2024, 3, 25, 4, tzinfo=UTC), hist)
    # independent: OLS of log x_t on (1, log x_{t-1}); two steps ahead, back through exp
    lx = np.log(vals)
    X = np.column_stack([np.ones(79), lx[:-1]])
    (c, phi), *_ = np.linalg.lstsq(X, lx[1:], rcond=None)
    mu = c / (1 - phi)
    assert nc.value == pytest.approx(math.exp(mu + phi**2 * (lx[-1] - mu)), rel=1e-10)
    assert nc.rationale.startswith("AR(1)+const on log level") and "h=2 months" in nc.rationale


# ------------------------------------------------------------------------------------------------
# end to end on the real snapshot
# ------------------------------------------------------------------------------------------------


def test_cpi_and_payroll_nowcasts_from_the_real_vintage(snapshot_dir, vintage_store):
    df = arima_nowcasts(
        [("cpi", date(2024, 3, 1)), ("nonfarm_payrolls", date(2024, 3, 1))], vintages=vintage_store
    )
    conform("nowcasts", df, deferred=WRITER_COLUMNS)
    assert df.height == 2 and df["valid"].all() and df["invalid_reason"].null_count() == 2
    assert df["producer"].null_count() == 2 and set(df["model_id"]) == {
        MODEL_ID
    }  # the writing asset stamps producer
    # window opens 2024-03-25 00:00 New York (EDT) = 04:00 UTC; the nowcast is available from then
    opens = datetime(2024, 3, 25, 4, tzinfo=UTC)
    assert df["issued_at"].to_list() == [opens, opens] and df["available_at"].to_list() == [opens, opens]
    assert df["partition_key"].to_list() == ["2024-03", "2024-03"]
    assert df["after_release"].to_list() == [False, False]
    cpi = df.row(0, named=True)
    pay = df.row(1, named=True)
    assert cpi["source_variable"] == "CPIAUCSL" and pay["source_variable"] == "PAYEMS"
    for r in (cpi, pay):
        assert "FRED-MD " + r["source_variable"] in r["rationale"]
        assert "vintage 2024-02;" in r["rationale"] and "obs 1959-01..2024-01" in r["rationale"]
        assert "h=2 months" in r["rationale"]
    # sane magnitudes: March 2024 CPI was 3.5% y/y; payrolls +303k first release
    assert 2.5 < cpi["value"] < 4.5
    assert 50 < pay["value"] < 400
    # the wiring: refit by hand on the same vintage and convert
    levels, _ = FredMdSnapshot(snapshot_dir).load_vintage("2024-02", "md")
    x = levels.select("date", "CPIAUCSL").drop_nulls()
    assert x["date"][-1] == date(2024, 1, 1)
    _, _, _, fit = select_order(np.log(x["CPIAUCSL"].to_numpy()), 2, "n")
    march = math.exp(fit.forecast(2)[-1])
    year_ago = x.filter(pl.col("date") == date(2023, 3, 1))["CPIAUCSL"].item()
    assert cpi["value"] == pytest.approx(100 * (march / year_ago - 1), rel=1e-12)


@pytest.fixture(scope="module")
def first_release_history(snapshot_dir) -> pl.DataFrame:
    # the releases table the arima_nowcasts asset passes: first releases of the snapshot's release calendar
    return first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar())


@pytest.mark.parametrize(
    ("indicator_id", "file", "column", "scale"),
    [
        (
            "ism_manufacturing",
            "ism_manufacturing_investing_calendar_history.csv",
            "ism_manufacturing_index",
            1,
        ),
        ("ism_services", "ism_services_investing_calendar_history.csv", "ism_services_index", 1),
        (
            "existing_home_sales",
            "existing_home_sales_investing_calendar_history.csv",
            "existing_home_sales_millions_saar",
            1000,
        ),
    ],
)
def test_first_release_history_equals_the_investing_histories(
    snapshot_dir, first_release_history, indicator_id, file, column, scale
):
    # the ISM / existing-home-sales levels the ARIMA uses (first releases from the LiveMacroEval release
    # calendar, 2009-12 on) equal the Investing.com calendar histories LiveMacroEval's ARIMA collected
    # (2017-12/2018-01 .. 2026-03) on every overlapping month
    path = snapshot_dir / "livemacroeval/Results/benchmark_econ/external_data_2026_04_16/processed" / file
    inv = pl.read_csv(path, try_parse_dates=True).select(
        pl.col("observation_date").alias("reference_period"), (pl.col(column) * scale).alias("investing")
    )
    ours = first_release_history.filter(pl.col("indicator_id") == indicator_id).select(
        "reference_period", "actual"
    )
    joined = inv.join(ours, on="reference_period", how="left")
    assert joined.height >= 99 and joined["actual"].null_count() == 0
    np.testing.assert_allclose(joined["actual"].to_numpy(), joined["investing"].to_numpy(), rtol=0, atol=1e-9)
    assert ours["reference_period"].min() == date(2009, 12, 1)


def test_live_window_targets_gap_history_and_reasons(
    snapshot_dir, first_release_history, series_vintage_rows
):
    targets = [
        ("unemployment_rate", date(2026, 3, 1)),  # beyond the archive: ~2025-12 vintage, gap reported
        ("ism_manufacturing", date(2026, 3, 1)),  # first releases, AR(1) on logs
        ("ism_services", date(2014, 3, 1)),  # first releases start 2009-12: fewer than 60
        ("new_home_sales", date(2025, 11, 1)),  # Sep/Oct 2025 first released 2026-01-13 (shutdown)
        (
            "real_gdp_advance",
            date(2024, 1, 1),
        ),  # a store without the real-time GDP: FRED-QD from 2025-03 only
    ]
    no_realtime_gdp = VintageStore(series_vintage_rows.filter(pl.col("series_id") != "ROUTPUT"))
    df = arima_nowcasts(targets, vintages=no_realtime_gdp, releases=first_release_history, p_max=3, q_max=1)
    conform("nowcasts", df, deferred=WRITER_COLUMNS)
    rows = {r["indicator_id"]: r for r in df.iter_rows(named=True)}
    u = rows["unemployment_rate"]
    assert u["valid"] and 3.0 < u["value"] < 6.0
    assert "vintage 2025-12 (wanted 2026-02, not stored: 2 months older)" in u["rationale"]
    assert (
        "1 gaps interpolated" in u["rationale"] and "h=4 months" in u["rationale"]
    )  # Oct 2025 never published
    ism = rows["ism_manufacturing"]
    assert ism["valid"] and 40 < ism["value"] < 60 and ism["rationale"].startswith("AR(1)+const on log level")
    assert "obs 2009-12..2026-01" in ism["rationale"]
    s = rows["ism_services"]
    assert not s["valid"] and s["value"] is None
    assert s["invalid_reason"].startswith("only 50 observations in first releases of ism_services")
    nhs = rows["new_home_sales"]
    # window opens 2025-11-25: Aug 2025 (released 2025-09-24) is the last value known then
    assert nhs["valid"] and "..2025-08 " in nhs["rationale"] and 500 < nhs["value"] < 900
    g = rows["real_gdp_advance"]
    assert (
        not g["valid"]
        and g["invalid_reason"]
        == "no history: series_vintages holds no FRED-QD vintage of GDPC1 at or before 2024-02 (the one"
        " preceding target month 2024-03) published by 2024-03-25 04:00 UTC; stored: 2025-03 .. 2025-03 (1"
        " vintages)"
    )
    assert g["source_variable"] == "GDPC1" and ism["source_variable"] == "ism_manufacturing"
