"""Fast App. I engine (chains of vintages, warm starts, screening) and its fit cache: same orders and AICs as
the cold grid on constructed series, warm starts never worse than cold fits per order, repeated histories
fitted once, cache keys that change with content and estimator version, rows that round-trip through DuckDB.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.macro.forecasters.arima import fit_cache
from leaf_live.macro.forecasters.arima.engine import (
    ChainItem,
    SeriesChain,
    content_hash,
    fit_chains,
    fit_grid_item,
    fit_series_chain,
)
from leaf_live.macro.forecasters.arima.estimator import (
    ArimaError,
    evaluate_arima,
    fit_arima,
    fit_grid,
    select_order,
)
from leaf_live.macro.forecasters.arima.nowcasts import arima_nowcasts
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot

SMALL = tuple((p, q) for p in range(4) for q in range(3))  # p <= 3, q <= 2: quick, still MA orders


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


def _vintages(
    y: np.ndarray, first: int, count: int, *, revise: float = 0.0, seed: int = 0
) -> list[np.ndarray]:
    """Vintages of a growing sample: vintage k holds y[:first + k], the last 3 values revised by noise."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        v = y[: first + k].copy()
        if revise:
            v[-3:] += revise * rng.normal(size=3)
        out.append(v)
    return out


def _chain(ys, d, trend, orders=SMALL, start_period=2018 * 12) -> SeriesChain:
    items = tuple(
        ChainItem(y, start_period + k, f"v{k}", datetime(2018, 1, 25, tzinfo=UTC) + timedelta(days=31 * k))
        for k, y in enumerate(ys)
    )
    return SeriesChain("test:series", d, trend, items, orders)


# ------------------------------------------------------------------------------------------------
# the engine agrees with the cold grid
# ------------------------------------------------------------------------------------------------


def test_a_chain_of_one_is_the_cold_grid():
    y = np.cumsum(0.01 * _arma(300, [0.5], [0.4], seed=21)) + 0.002 * np.arange(300)
    (g,) = fit_series_chain(_chain([y], 1, "t"))
    cold = fit_grid(y, 1, "t", 3, 2)
    assert g.cold_grid and not g.reused
    for key, f in cold.items():
        assert g.orders[key].aic == f.aic  # the same computation, bit for bit
        assert g.orders[key].method == ("closed_form" if key[1] == 0 else "cold")
    p, q, aic, model = select_order(y, 1, "t", 3, 2)
    assert (g.best().p, g.best().q, g.best().aic) == (p, q, aic)
    np.testing.assert_allclose(g.model(y).forecast(3), model.forecast(3), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("ar", "ma", "d", "trend"),
    [([0.6], [0.5], 1, "t"), ([0.3, 0.2], [-0.4], 0, "c"), ([], [0.6, 0.3], 2, "n")],
)
def test_warm_chain_picks_the_cold_order_and_aic_on_constructed_series(ar, ma, d, trend):
    z = 0.01 * _arma(230, ar, ma, seed=5 + d)
    y = {0: 1.0 + z, 1: 4.6 + np.cumsum(z + 0.002), 2: 4.6 + np.cumsum(np.cumsum(z))}[d]
    ys = _vintages(y, 200, 8, revise=0.001, seed=d)
    grids = fit_series_chain(_chain(ys, d, trend), cold_every=6)
    assert [g.cold_grid for g in grids] == [True] + [False] * 5 + [True, False]  # cold again 6 months on
    assert any(f.method == "warm" for g in grids for f in g.orders.values())
    assert any(f.method == "screened" for g in grids for f in g.orders.values())
    for g, yy in list(zip(grids, ys))[2::2]:  # warm vintages 2 and 4, the cold-grid one 6
        cold = fit_grid(yy, d, trend, 3, 2)
        cb = min(cold.values(), key=lambda f: (f.aic, f.p, f.q))
        b = g.best()
        assert (b.p, b.q) == (cb.p, cb.q)
        assert b.aic == pytest.approx(cb.aic, abs=1e-4)
        # at the chosen order the forecast is the cold estimator's
        np.testing.assert_allclose(g.model(yy).forecast(2), cb.forecast(2), rtol=1e-6, atol=1e-9)


def test_warm_route_is_never_worse_than_its_start_nor_than_the_kept_cold_fit():
    z = 0.01 * _arma(320, [0.5, -0.2], [0.4], seed=17)
    ys = _vintages(4.6 + np.cumsum(z + 0.001), 300, 2, revise=0.002, seed=3)
    first = fit_grid_item(ys[0], 1, "t", SMALL)
    warm = fit_grid_item(ys[1], 1, "t", SMALL, prev=first, cold=False)
    both = fit_grid_item(ys[1], 1, "t", SMALL, prev=first, cold=True)
    for key in SMALL:
        f0 = first[key]
        at_start = evaluate_arima(
            ys[1], key[0], 1, key[1], "t", np.array(f0.ar), np.array(f0.ma), f0.trend_coef
        )
        if key[1]:
            assert warm[key].method in ("warm", "screened")
            assert warm[key].aic <= at_start.aic + 1e-9  # screened = the start; a refit only improves on it
        cold = fit_arima(ys[1], key[0], 1, key[1], "t")
        # the kept fit of a cold-grid vintage is the better of the warm and the cold route, per order
        assert both[key].aic <= min(cold.aic, warm[key].aic) + 1e-9
        assert both[key].aic == pytest.approx(min(cold.aic, warm[key].aic), abs=1e-9)


def test_repeated_histories_are_fitted_once_and_chains_run_in_vintage_order():
    y = 4.6 + np.cumsum(0.01 * _arma(310, [0.4], [], seed=2) + 0.001)
    ys = [y[:300], y[:300].copy(), y[:301]]  # a vintage repeated (snapshot gap), then a new one
    grids = fit_series_chain(_chain(ys, 1, "t"))
    assert [g.reused for g in grids] == [False, True, False]
    assert grids[1].orders == grids[0].orders and grids[1].content_hash == grids[0].content_hash
    with pytest.raises(ArimaError, match=r"items\[1\]\.period=5 is before items\[0\]\.period=7"):
        SeriesChain("s", 1, "t", (ChainItem(y, 7), ChainItem(y, 5)))
    with pytest.raises(ArimaError, match=r"trend='c' with d=1"):
        SeriesChain("s", 1, "c", (ChainItem(y, 7),))
    bad = y[:300].copy()
    bad[10] = np.nan
    with pytest.raises(ArimaError, match=r"test:series, items\[0\] \(v0\): y\[10\]=nan"):
        fit_series_chain(_chain([bad], 1, "t"))
    with pytest.raises(ArimaError, match="not the history this grid was fitted to"):
        grids[0].model(y[:301])


def test_process_pool_gives_the_in_process_result():
    z = 0.01 * _arma(304, [0.5], [0.3], seed=8)
    a = _chain(_vintages(4.6 + np.cumsum(z + 0.001), 300, 3), 1, "t", orders=((0, 0), (1, 0), (1, 1)))
    b = SeriesChain(
        "test:other", 0, "c", tuple(ChainItem(1 + z[: 300 + k], 100 + k) for k in range(2)), ((1, 0), (0, 1))
    )
    one = fit_chains([a, b], workers=1)
    two = fit_chains([a, b], workers=2)
    assert [[g.orders for g in c] for c in one] == [[g.orders for g in c] for c in two]
    assert [len(c) for c in two] == [3, 2] and two[1][0].series_id == "test:other"


# ------------------------------------------------------------------------------------------------
# fit cache
# ------------------------------------------------------------------------------------------------


def test_cache_keys_change_with_content_and_version():
    y = np.linspace(1.0, 2.0, 80)
    h = content_hash(y, 1, "t")
    assert len(h) == 32 and h == content_hash(y.copy(), 1, "t")
    y2 = y.copy()
    y2[40] = np.nextafter(y2[40], 3.0)  # one ulp of one revised value
    assert len({h, content_hash(y2, 1, "t"), content_hash(y, 2, "n"), content_hash(y[:-1], 1, "t")}) == 4
    k = fit_cache.fit_key("cpi:CPIAUCSL", h, 2, 1)
    assert k == ("cpi:CPIAUCSL", h, 2, 1, fit_cache.ESTIMATOR_VERSION)
    assert fit_cache.fit_key("cpi:CPIAUCSL", h, 2, 1, version="other") != k
    assert fit_cache.fit_key("cpi:CPIAUCSL", content_hash(y2, 1, "t"), 2, 1) != k
    with pytest.raises(ValueError, match="p=-1"):
        fit_cache.fit_key("cpi:CPIAUCSL", h, -1, 1)
    # the version follows the revision and the code (not its docstrings or comments)
    assert fit_cache.ESTIMATOR_VERSION == fit_cache.estimator_version()
    assert fit_cache.estimator_version(fit_cache.ESTIMATOR_REVISION + 1) != fit_cache.ESTIMATOR_VERSION
    src = 'def f(x):\n    """doc"""\n    return x + 1  # why\n'
    same = 'def f(x):\n    """other words"""\n    return x + 1\n'
    changed = 'def f(x):\n    """doc"""\n    return x + 2\n'
    fp = fit_cache._code_fingerprint
    assert fp(src) == fp(same) != fp(changed)


def test_cache_rows_round_trip_through_duckdb_and_are_reused(tmp_path):
    z = 0.01 * _arma(303, [0.5], [0.4], seed=31)
    ys = _vintages(4.6 + np.cumsum(z + 0.001), 300, 3, revise=0.001, seed=1)
    chain = _chain(ys, 1, "t")
    grids = fit_series_chain(chain)
    frame = fit_cache.grids_frame(grids, fitted_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert frame.height == 3 * len(SMALL) and frame.schema == storage.polars_schema("arima_fits")
    row = frame.filter((pl.col("p") == 1) & (pl.col("q") == 1)).row(0, named=True)
    assert row["content_hash"] == grids[0].content_hash and row["vintage"] == "v0" and row["cold_grid"]
    assert row["available_at"] == datetime(2018, 1, 25, tzinfo=UTC)
    with storage.open_db(tmp_path / "fits.duckdb") as con:
        storage.replace_partition(con, "arima_fits", frame, {"series_id": "test:series"})
        back = storage.read_table(con, "arima_fits")
    known = fit_cache.grids_from_frame(back)
    assert set(known) == {"test:series"} and set(known["test:series"]) == {g.content_hash for g in grids}
    for g in grids:
        k = known["test:series"][g.content_hash]
        for key, f in g.orders.items():
            kf = k.orders[key]
            assert (kf.ar, kf.ma, kf.aic, kf.method) == (f.ar, f.ma, f.aic, f.method)
            assert kf.trend_coef == f.trend_coef
    # a second run with the cache fits nothing and forecasts the same
    again = fit_series_chain(chain, known=known["test:series"])
    assert all(g.reused for g in again)
    for g, h, yy in zip(grids, again, ys):
        assert h.best() == g.best()
        np.testing.assert_array_equal(h.model(yy).forecast(2), g.model(yy).forecast(2))
    # rows of another estimator version are ignored
    assert fit_cache.grids_from_frame(back, version="app-i-r0-000000000000") == {}
    # a widened chain (one more vintage) fits only the new history, warm from the cached grid
    longer = _chain(ys + [4.6 + np.cumsum(z + 0.001)[:303]], 1, "t")
    wide = fit_series_chain(longer, known=known["test:series"])
    assert [g.reused for g in wide] == [True, True, True, False] and not wide[3].cold_grid


# ------------------------------------------------------------------------------------------------
# nowcast batch
# ------------------------------------------------------------------------------------------------


def test_batch_frame_takes_the_table_types_when_the_first_100_rows_are_valid(snapshot_dir, vintage_store):
    # 101 valid ISM nowcasts (AR(1), cheap), then one without 60 observations: polars used to infer the
    # invalid_reason column as NULL-typed from the first 100 rows and fail on the 102nd
    months = [date(2015 + k // 12, k % 12 + 1, 1) for k in range(101)]
    targets = [("ism_manufacturing", m) for m in months] + [("ism_services", date(2014, 3, 1))]
    releases = first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar())
    df = arima_nowcasts(targets, vintages=vintage_store, releases=releases)
    assert df.height == 102 and df["valid"].sum() == 101
    assert df["invalid_reason"][:101].null_count() == 101
    assert df["invalid_reason"][101].startswith("only 50 observations")
