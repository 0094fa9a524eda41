"""Relative error (LiveMacroEval App. J) and the aggregator comparison of K.4: Table 11's economic-weight
column follows from Table 9; relative-error curves and shares worked by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, get_indicator
from leaf_live.macro.scoring import relative_error as RE
from leaf_live.macro.scoring.frames import aggregator_frame, relative_errors_frame

# Table 11 "Economic weight" column, %, in the table's row order
TABLE_11_ECON = {
    "cpi": 33.0,
    "ism_manufacturing": 28.2,
    "retail_sales": 9.7,
    "real_gdp_advance": 8.1,
    "nonfarm_payrolls": 6.4,
    "new_home_sales": 4.3,
    "pce_price_index": 3.0,
    "real_pce": 1.7,
    "ism_services": 1.6,
    "ppi": 1.3,
    "housing_starts": 1.0,
    "building_permits": 0.59,
    "unemployment_rate": 0.57,
    "durable_goods": 0.32,
    "industrial_production": 0.08,
    "existing_home_sales": 0.06,
}


def test_table_11_economic_weights_follow_from_table_9():
    beta = np.array([get_indicator(i).beta_table9 for i in INDICATOR_IDS])
    w = 100 * RE.economic_weights(beta)
    pos = {i: k for k, i in enumerate(INDICATOR_IDS)}
    for i, printed in TABLE_11_ECON.items():
        digits = 1 if printed >= 1 else 2  # the table prints 2 decimals below 1%
        assert round(w[pos[i]], digits) == printed, i
    order = [INDICATOR_IDS[k] for k in np.argsort(-w)]
    assert order == list(TABLE_11_ECON)  # rows are ordered by economic weight
    assert round(w[pos["cpi"]], 1) == 33.0
    assert round(np.sort(w)[-4:].sum(), 1) == 79.1  # CPI, ISM manufacturing, retail sales, real GDP
    assert round(RE.effective_number(w / 100), 1) == 4.7
    assert RE.effective_number(np.full(16, 1 / 16)) == pytest.approx(16.0)


def _t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


REL = pl.DataFrame(
    {
        "indicator_id": ["cpi", "cpi", "ppi"],
        "reference_period": [date(2026, 1, 1), date(2026, 2, 1), date(2026, 2, 1)],
        "release_at": [_t("2026-02-11 13:30"), _t("2026-03-11 12:30"), _t("2026-03-12 12:30")],
        "actual": [3.0, -1.0, 0.5],
    }
)
NC = pl.DataFrame(
    {
        "model_id": ["m"] * 7,
        "indicator_id": ["cpi", "cpi", "cpi", "cpi", "cpi", "ppi", "cpi"],
        "reference_period": (
            [date(2026, 1, 1)] * 3 + [date(2026, 2, 1)] * 2 + [date(2026, 2, 1), date(2026, 1, 1)]
        ),
        "issued_at": [
            _t("2026-02-11 12:30"),
            _t("2026-02-10 13:30"),
            _t("2026-02-10 13:00"),
            _t("2026-03-11 11:30"),
            _t("2026-03-09 12:30"),
            _t("2026-03-12 10:30"),
            _t("2026-02-11 13:30"),
        ],
        "value": [4.0, 2.0, 1.0, 0.0, -3.0, 0.0, 99.0],
        "valid": [True] * 7,
    }
)


def test_relative_error_points_and_curves_by_hand():
    sc = RE.release_scales(REL)
    assert dict(sc.iter_rows()) == {"cpi": 2.0, "ppi": 0.5}  # mean |actual|: (3 + 1) / 2, 0.5
    pts = RE.relative_error_points(REL, NC)
    assert pts.height == 6  # the row issued at the release instant is never scored
    cpi_jan = pts.filter(
        (pl.col("indicator_id") == "cpi") & (pl.col("reference_period") == date(2026, 1, 1))
    ).sort("issued_at")
    # issued 24h30m, 24h, 1h before: days 1, 1, 0; errors (1-3)/2, (2-3)/2, (4-3)/2
    assert cpi_jan["days_to_release"].to_list() == [1, 1, 0]
    assert cpi_jan["rel_error"].to_list() == pytest.approx([-1.0, -0.5, 0.5])
    by_month = RE.relative_error_by_month(pts)
    jan1 = by_month.filter(
        (pl.col("reference_period") == date(2026, 1, 1)) & (pl.col("days_to_release") == 1)
    ).row(0, named=True)
    assert jan1["mean_sq_rel_error"] == pytest.approx((1.0 + 0.25) / 2) and jan1["n_nowcasts"] == 2
    curve = RE.relative_error_curve(by_month).filter(pl.col("indicator_id") == "cpi")
    # day 0: Jan 0.25, Feb ((0 - -1)/2)^2 = 0.25 -> 0.25; day 2: Feb only ((-3 - -1)/2)^2 = 1
    assert dict(zip(curve["days_to_release"], curve["mean_sq_rel_error"])) == pytest.approx(
        {0: 0.25, 1: 0.625, 2: 1.0}
    )
    assert dict(zip(curve["days_to_release"], curve["n_months"])) == {0: 2, 1: 1, 2: 1}
    frame = relative_errors_frame(by_month, partition_key="2026-03", available_at=_t("2026-03-13 00:00"))
    assert frame.height == by_month.height


def test_mean_abs_relative_error_and_aggregator_shares_by_hand():
    sc = pl.DataFrame({"indicator_id": ["cpi", "nonfarm_payrolls"], "s_i": [2.0, 100.0]})
    pr = pl.DataFrame(
        {
            "indicator_id": ["cpi", "cpi", "nonfarm_payrolls"],
            "nowcast": [3.0, 1.0, 150.0],
            "actual": [2.0, 2.0, 100.0],
        }
    )
    # |1|/2, |-1|/2, |50|/100 -> mean 0.5
    assert RE.mean_abs_relative_error(pr, sc) == pytest.approx(0.5)
    beta = np.zeros(16)
    beta[INDICATOR_IDS.index("cpi")], beta[INDICATOR_IDS.index("nonfarm_payrolls")] = 3.0, 4.0
    sh = RE.aggregator_shares(pr, sc, beta)
    got = {r["indicator_id"]: r for r in sh.iter_rows(named=True)}
    # raw: cpi 1 + 1 = 2, payrolls 2500 -> scale domination; relative: cpi 0.5, payrolls 0.25
    assert got["cpi"]["raw_error_share"] == pytest.approx(100 * 2 / 2502)
    assert got["cpi"]["relative_error_share"] == pytest.approx(100 * 0.5 / 0.75)
    assert got["nonfarm_payrolls"]["economic_weight"] == pytest.approx(64.0)
    for c in ("raw_error_share", "relative_error_share", "economic_weight"):
        assert sh[c].sum() == pytest.approx(100.0)
    rows = aggregator_frame(
        sh,
        model_id="pooled",
        horizon="terminal",
        partition_key="2026-04",
        available_at=_t("2026-05-01 00:00"),
    )
    assert rows.height == 48 and set(rows["metric"]) == {
        "raw_error_share",
        "relative_error_share",
        "economic_weight",
    }
    storage.conform("score_decompositions", rows)


def test_errors_name_the_field():
    with pytest.raises(RE.RelativeErrorError, match="indicator_id=cpi"):
        RE.release_scales(pl.DataFrame({"indicator_id": ["cpi"], "actual": [0.0]}))
    with pytest.raises(RE.RelativeErrorError, match="lacks column"):
        RE.relative_error_points(REL.drop("actual"), NC)
    with pytest.raises(RE.RelativeErrorError, match="nowcasts.issued_at must be a tz-aware"):
        RE.relative_error_points(REL, NC.with_columns(pl.col("issued_at").dt.replace_time_zone(None)))
    with pytest.raises(RE.RelativeErrorError, match="every beta is 0"):
        RE.economic_weights(np.zeros(16))


def test_common_relative_errors_read_every_model_on_the_same_field_events():
    """Issue 16: the consensus's own-release value (many easy releases) is not comparable with a sparse
    model's; on the field-events both nowcast the order can flip."""
    sc = pl.DataFrame({"indicator_id": ["cpi", "nonfarm_payrolls"], "s_i": [1.0, 100.0]})
    t = [datetime(2026, m, 10, 12, 30, tzinfo=UTC) for m in (1, 2, 3, 4)]
    cons = pl.DataFrame(  # four releases: three exact, one off by 2 s_i
        {
            "indicator_id": ["cpi"] * 4,
            "release_at": t,
            "nowcast": [2.0, 2.0, 2.0, 4.0],
            "actual": [2.0, 2.0, 2.0, 2.0],
        }
    )
    sparse = pl.DataFrame(  # the hard release (off by 1 s_i) and one the consensus does not have
        {
            "indicator_id": ["cpi", "nonfarm_payrolls"],
            "release_at": [t[3], t[0]],
            "nowcast": [3.0, 150.0],
            "actual": [2.0, 100.0],
        }
    )
    # own releases: consensus 2/4 = 0.5, sparse (1 + 0.5)/2 = 0.75 -> the consensus looks better
    assert RE.mean_abs_relative_error(cons, sc) == pytest.approx(0.5)
    assert RE.mean_abs_relative_error(sparse, sc) == pytest.approx(0.75)
    # on the one field-event both nowcast (cpi, April): consensus 2.0, sparse 1.0: sparse better
    got = RE.common_relative_errors({"consensus/investing": cons, "m": sparse}, sc)
    assert got == {"consensus/investing": (pytest.approx(2.0), 1), "m": (pytest.approx(1.0), 1)}
    # a null nowcast is no field-event of that model; one model alone or nothing shared: no common set
    assert RE.common_relative_errors({"m": sparse}, sc) == {}
    disjoint = sparse.filter(pl.col("indicator_id") == "nonfarm_payrolls")
    assert RE.common_relative_errors({"c": cons, "m": disjoint}, sc) == {}
    nulled = cons.with_columns(
        pl.when(pl.col("release_at") == t[3]).then(None).otherwise(pl.col("nowcast")).alias("nowcast")
    )
    assert RE.common_relative_errors({"c": nulled, "m": sparse}, sc) == {}


def test_s_i_and_the_curves_are_the_same_bits_for_any_row_order():
    """Issue 17: identical runs gave ``relative_errors.s_i`` differing in the 15th digit (the rows of a DuckDB
    read arrive in varying order and a float mean depends on the order of its additions). Every mean and
    sum of the relative-error metrics is now taken over sorted values: the same bits for any order."""
    rng = np.random.default_rng(17)
    n = 4000
    ids = rng.choice(["cpi", "ppi", "payrolls"], n)
    periods = [date(1990, 1, 1) + timedelta(days=i) for i in range(n)]  # one release per row
    # magnitudes over eight decades, so that the order of the additions shows in the last digits
    actual = rng.normal(0.0, 1.0, n) * 10.0 ** rng.uniform(-3, 5, n)
    rel = pl.DataFrame(
        {
            "indicator_id": ids,
            "reference_period": periods,
            "release_at": [datetime(p.year, p.month, p.day, 12, 30, tzinfo=UTC) for p in periods],
            "actual": actual,
        }
    )
    nc = pl.concat(
        [
            rel.select(
                "indicator_id",
                "reference_period",
                (pl.col("release_at") - pl.duration(hours=h)).alias("issued_at"),
                (pl.col("actual") * (1.0 + 0.01 * h) + h).alias("value"),
            )
            for h in (1, 20, 30, 50)
        ]
    )
    per_release = rel.select("indicator_id", "actual", (pl.col("actual") * 1.1 + 0.3).alias("nowcast"))
    beta = np.linspace(0.5, 1.5, len(INDICATOR_IDS))

    def metrics(seed: int):
        r = rel.sample(fraction=1.0, shuffle=True, seed=seed)
        sc = RE.release_scales(r)
        pts = RE.relative_error_points(r, nc.sample(fraction=1.0, shuffle=True, seed=seed + 1), sc)
        by_month = RE.relative_error_by_month(pts)
        pr = per_release.sample(fraction=1.0, shuffle=True, seed=seed + 2)
        return sc, by_month, RE.relative_error_curve(by_month), RE.mean_abs_relative_error(pr, sc), pr

    sc0, bm0, cu0, mare0, _ = metrics(0)
    # the scales by hand: math.fsum (exactly rounded) over the same values agrees to the last bits' rounding
    import math

    for iid, s_i in sc0.iter_rows():
        vals = rel.filter(pl.col("indicator_id") == iid)["actual"].abs().to_list()
        assert s_i == pytest.approx(math.fsum(vals) / len(vals), rel=1e-14)
    shuffled_differently = set()
    for seed in range(1, 13):
        sc, bm, cu, mare, pr = metrics(seed)
        assert sc.equals(sc0) and bm.equals(bm0) and cu.equals(cu0) and mare == mare0
        shuffled_differently.add(tuple(pr["actual"].head(5)))
    assert len(shuffled_differently) == 12  # each run really saw another row order
    # a plain mean over the shuffled rows is what differed: several distinct bit patterns
    plain = {
        tuple(
            rel.sample(fraction=1.0, shuffle=True, seed=s)
            .group_by("indicator_id")
            .agg(pl.col("actual").abs().mean())
            .sort("indicator_id")["actual"]
        )
        for s in range(12)
    }
    assert len(plain) > 1
    ids_all = list(INDICATOR_IDS)
    pr_map = per_release.with_columns(
        pl.col("indicator_id").replace_strict({"cpi": ids_all[0], "ppi": ids_all[1], "payrolls": ids_all[2]})
    )
    sc_map = sc0.with_columns(
        pl.col("indicator_id").replace_strict({"cpi": ids_all[0], "ppi": ids_all[1], "payrolls": ids_all[2]})
    )
    shares = {
        RE.aggregator_shares(pr_map.sample(fraction=1.0, shuffle=True, seed=s), sc_map, beta)
        .rows()
        .__repr__()
        for s in range(6)
    }
    assert len(shares) == 1
