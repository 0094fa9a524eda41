"""LiveBetting Score (LiveMacroEval App. L Eq. 13, Table 13): every real Polymarket header parses, bucket
semantics at the release precision, a hand-worked bet stream, Table 13's decomposition arithmetic, and a
bet stream on the recorded CPI market (files read where they are; the tests fail when they are missing)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.core.settings import get_settings
from leaf_live.macro.scoring import livebetting as LB
from leaf_live.macro.scoring.frames import livebetting_frames

PM = "livemacroeval/Results/polymarket_return/polymarket"
FILES = {
    "cpi-mar-polymarket-price-data.csv": (
        0.1,
        [("le", -np.inf, 2.0)]
        + [("point", v, v) for v in (2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7)]
        + [("ge", 2.8, np.inf)],
    ),
    "gdp-q1-2026-polymarket-price-data.csv": (
        0.1,
        [
            ("lt", -np.inf, 1.0),
            ("range", 1.0, 1.5),
            ("range", 1.5, 2.0),
            ("range", 2.0, 2.5),
            ("range", 2.5, 3.0),
            ("range", 3.0, 3.5),
            ("ge", 3.5, np.inf),
        ],
    ),
    "jobs-mar-polymarket-price-data.csv": (
        1000.0,
        [
            ("lt", -np.inf, -150e3),
            ("range", -150e3, -100e3),
            ("range", -100e3, -50e3),
            ("range", -50e3, 0.0),
            ("range", 0.0, 50e3),
            ("range", 50e3, 100e3),
            ("ge", 100e3, np.inf),
        ],
    ),
    "unemp-mar-polymarket-price-data.csv": (
        0.1,
        [("le", -np.inf, 3.9)]
        + [("point", v, v) for v in (4.0, 4.1, 4.2, 4.3, 4.4, 4.5, 4.6)]
        + [("ge", 4.7, np.inf)],
    ),
}


def read_export(name: str) -> pl.DataFrame:
    return pl.read_csv(get_settings().require_snapshot() / PM / name, infer_schema_length=None)


def test_every_real_header_parses():
    found = sorted(p.name for p in (get_settings().require_snapshot() / PM).glob("*.csv"))
    assert found == sorted(FILES)
    for name, (precision, want) in FILES.items():
        labels = [c for c in read_export(name).columns if c not in ("Date (UTC)", "Timestamp (UTC)")]
        m = LB.parse_market(labels)
        assert m.precision == pytest.approx(precision), name
        got = [(b.kind, b.lo, b.hi) for b in m.buckets]
        assert [g[0] for g in got] == [w[0] for w in want], name
        np.testing.assert_allclose([g[1:] for g in got], [w[1:] for w in want])


@pytest.mark.parametrize(
    "name,scale,value,label",
    [
        ("cpi-mar-polymarket-price-data.csv", 1, 2.14, "2.1%"),
        ("cpi-mar-polymarket-price-data.csv", 1, 2.15, "2.2%"),  # rounds half up to the release precision
        ("cpi-mar-polymarket-price-data.csv", 1, 2.049, "≤2.0%"),
        ("cpi-mar-polymarket-price-data.csv", 1, 2.05, "2.1%"),
        ("cpi-mar-polymarket-price-data.csv", 1, 2.7499, "2.7%"),
        ("cpi-mar-polymarket-price-data.csv", 1, 2.75, "≥2.8%"),
        ("cpi-mar-polymarket-price-data.csv", 1, 3.3, "≥2.8%"),
        ("gdp-q1-2026-polymarket-price-data.csv", 1, 0.94, "<1.0%"),
        ("gdp-q1-2026-polymarket-price-data.csv", 1, 0.95, "1.0–1.5%"),
        ("gdp-q1-2026-polymarket-price-data.csv", 1, 1.5, "1.5–2.0%"),  # shared endpoint: the upper range
        ("gdp-q1-2026-polymarket-price-data.csv", 1, 3.5, "≥3.5%"),
        ("jobs-mar-polymarket-price-data.csv", 1000, -150.4, "-150k – -100k"),  # payrolls in thousands
        ("jobs-mar-polymarket-price-data.csv", 1000, -150.6, "<-150k"),
        ("jobs-mar-polymarket-price-data.csv", 1000, -0.2, "0 – 50k"),
        ("jobs-mar-polymarket-price-data.csv", 1000, 99.6, "100k+"),
        ("unemp-mar-polymarket-price-data.csv", 1, 3.94, "≤3.9%"),
        ("unemp-mar-polymarket-price-data.csv", 1, 4.35, "4.4%"),
    ],
)
def test_nowcast_maps_to_bucket_at_release_precision(name, scale, value, label):
    labels = [c for c in read_export(name).columns if c not in ("Date (UTC)", "Timestamp (UTC)")]
    m = LB.parse_market(labels)
    assert m.labels[m.bucket_index(value * scale)] == label


def test_other_label_forms():
    cases = {
        "≤2.0%": ("le", -np.inf, 2.0),
        "<=2": ("le", -np.inf, 2.0),
        "2.0% or less": ("le", -np.inf, 2.0),
        "< 1.0%": ("lt", -np.inf, 1.0),
        "less than 0": ("lt", -np.inf, 0.0),
        "below −0.5%": ("lt", -np.inf, -0.5),
        "≥2.8%": ("ge", 2.8, np.inf),
        "3 or more": ("ge", 3.0, np.inf),
        "100k+": ("ge", 1e5, np.inf),
        "at least 5": ("ge", 5.0, np.inf),
        ">4.5%": ("gt", 4.5, np.inf),
        "above 250k": ("gt", 2.5e5, np.inf),
        "2.5–3.0%": ("range", 2.5, 3.0),
        "2.5 - 3.0%": ("range", 2.5, 3.0),
        "-150k – -100k": ("range", -1.5e5, -1e5),
        "between 1 and 2": ("range", 1.0, 2.0),
        "1,000k to 1,200k": ("range", 1e6, 1.2e6),
        "2.1%": ("point", 2.1, 2.1),
        "-0.1%": ("point", -0.1, -0.1),
        "1.5m": ("point", 1.5e6, 1.5e6),
    }
    for label, (kind, lo, hi) in cases.items():
        b = LB.parse_bucket_label(label)
        assert (b.kind, b.lo, b.hi) == (kind, lo, hi), label


def test_bad_labels_are_named():
    with pytest.raises(LB.BucketLabelError, match="'two percent'"):
        LB.parse_bucket_label("two percent")
    with pytest.raises(LB.BucketLabelError, match="not below"):
        LB.parse_bucket_label("3.0–2.5%")
    with pytest.raises(LB.BucketLabelError, match="overlapping"):
        LB.parse_market(["1.0–2.0%", "1.5–2.5%"])
    with pytest.raises(LB.BucketLabelError, match="duplicate"):
        LB.parse_market(["2.1%", "2.1%"])


# ---------------------------------------------------------------------------------------------
# a bet stream worked by hand
# ---------------------------------------------------------------------------------------------

T0 = datetime(2026, 3, 2, 12, tzinfo=UTC)


def _hand_prices() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "bet_at": [T0 + timedelta(hours=h) for h in range(6)],
            "≤2.0%": [0.2, 0.2, 0.2, 0.1, 0.1, 0.1],
            "2.1%": [0.5, 0.4, 0.25, 0.5, 0.5, 0.5],
            "≥2.2%": [0.3, 0.4, 0.55, None, 0.0, 0.9],
        }
    )


def _hand_nowcasts() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "issued_at": [T0 + timedelta(minutes=30), T0 + timedelta(hours=2), T0 + timedelta(hours=3)],
            "value": [2.1, 2.3, 2.0],
            "valid": [True, True, False],  # the invalid 2.0 at hour 3 is never used
        }
    )


def test_hand_worked_bet_stream():
    bets = LB.hourly_bets(
        _hand_prices(),
        _hand_nowcasts(),
        release_at=T0 + timedelta(hours=4, minutes=30),
        actual=2.1,
        segments=[("feb", T0), ("mar", T0 + timedelta(hours=2))],
    )
    # hour 5 is after the release: dropped. hour 0: no nowcast yet. hour 1: 2.1% at 0.4, wins (1/0.4 = 2.5).
    # hour 2: the 2.3 nowcast issued exactly then, >=2.2% at 0.55, loses. hour 3: price missing. hour 4: price
    # 0.
    assert bets.height == 5
    assert bets["status"].to_list() == ["no_nowcast", "bet", "bet", "missing_price", "zero_price"]
    assert bets["bucket"].to_list() == [None, "2.1%", "≥2.2%", "≥2.2%", "≥2.2%"]
    assert bets["won"].to_list() == [None, True, False, None, None]
    np.testing.assert_allclose(bets["profit"].to_numpy(), [0.0, 1.5, -1.0, 0.0, 0.0])
    assert bets["cum_return"].to_list()[1:] == pytest.approx([1.5, 0.25, 0.25, 0.25])
    assert bets["cum_return"][0] is None
    assert LB.livebetting_return(bets) == pytest.approx((1 / 0.4) / 2 - 1)  # Eq. 13
    assert bets["winning_bucket"][0] == "2.1%"
    s = LB.betting_summary(bets)
    feb, mar, tot = (s.row(k, named=True) for k in range(3))
    assert (feb["segment"], feb["n_hours"], feb["n_bets"], feb["n_wins"], feb["profit"]) == (
        "feb",
        2,
        1,
        1,
        1.5,
    )
    assert feb["n_no_nowcast"] == 1 and mar["n_missing_price"] == 1 and mar["n_zero_price"] == 1
    assert tot["segment"] == "total" and tot["n_bets"] == 2 and tot["final_return"] == pytest.approx(0.25)
    assert feb["return_if_segment_zero"] == pytest.approx(-0.5)  # (0.5 - 1.5) / 2
    assert mar["return_if_segment_zero"] == pytest.approx(0.75)  # 1.5 / 2
    assert tot["return_if_segment_zero"] is None


def test_bet_errors_are_clear():
    prices = _hand_prices().with_columns(pl.lit(1.2).alias("2.1%"))
    with pytest.raises(LB.BettingError, match="price 1.2 > 1 for bucket '2.1%'"):
        LB.hourly_bets(prices, _hand_nowcasts(), release_at=T0 + timedelta(hours=4), actual=2.1)
    with pytest.raises(LB.BettingError, match="tz-aware"):
        LB.hourly_bets(
            _hand_prices().with_columns(pl.col("bet_at").dt.replace_time_zone(None)),
            _hand_nowcasts(),
            release_at=T0,
            actual=2.1,
        )
    with pytest.raises(LB.BettingError, match="release_at must be a tz-aware"):
        LB.hourly_bets(_hand_prices(), _hand_nowcasts(), release_at=datetime(2026, 3, 2, 16), actual=2.1)
    with pytest.raises(LB.BettingError, match="falls in no bucket"):
        LB.hourly_bets(_hand_prices().select("bet_at", "2.1%"), _hand_nowcasts(), release_at=T0, actual=3.0)


def test_table_13_decomposition_arithmetic():
    rows = {  # Feb win rate, Feb profit, Mar profit, final return %, "if Mar = 0" %  (247 Feb + 128 Mar bets)
        "Cleveland Fed": (1.00, 341.5, 1.7, 91.5, 91.1),
        "Bloomberg": (0.71, 164.2, 1.7, 44.2, 43.8),
        "Qwen3-80B": (0.70, 169.9, -128.0, 11.2, 45.3),
        "Qwen3-235B": (0.42, 1.9, 1.7, 1.0, 0.5),
        "GPT-5": (0.31, -64.3, -86.5, -40.2, -17.1),
        "Claude-sonnet-4.5": (0.10, -190.6, -79.4, -72.0, -50.8),
    }

    def segment(name: str, n: int, wins: int, profit: float) -> pl.DataFrame:
        # losses pay -1 each; the wins share the rest of the segment profit
        per_win = (profit + (n - wins)) / wins if wins else 0.0
        return pl.DataFrame(
            {
                "segment": [name] * n,
                "status": ["bet"] * n,
                "won": [k < wins for k in range(n)],
                "profit": [per_win if k < wins else -1.0 for k in range(n)],
            }
        )

    for series, (wr, feb_p, mar_p, final, if_zero) in rows.items():
        feb_w = round(wr * 247)
        mar_w = 128 if mar_p > 0 else (0 if mar_p == -128.0 else 1)
        s = LB.betting_summary(
            pl.concat([segment("feb", 247, feb_w, feb_p), segment("mar", 128, mar_w, mar_p)])
        )
        feb, mar, tot = (s.row(k, named=True) for k in range(3))
        assert round(100 * feb["win_rate"]) == round(100 * wr), series
        assert feb["profit"] == pytest.approx(feb_p) and mar["profit"] == pytest.approx(mar_p)
        assert round(100 * tot["final_return"], 1) == pytest.approx(final, abs=0.051), series
        assert round(100 * mar["return_if_segment_zero"], 1) == pytest.approx(if_zero, abs=0.051), series


# ---------------------------------------------------------------------------------------------
# the recorded CPI market
# ---------------------------------------------------------------------------------------------


def test_constant_nowcast_on_the_recorded_cpi_market(tmp_path):
    raw = read_export("cpi-mar-polymarket-price-data.csv")
    grid = LB.price_grid_from_export(raw)
    release = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)  # March CPI, 08:30 EDT; printed 3.3% (§Q)
    start = datetime(2026, 4, 5, tzinfo=UTC)
    nc = pl.DataFrame({"issued_at": [start], "value": [3.3]})
    bets = LB.hourly_bets(grid, nc, release_at=release, actual=3.3)
    ts = raw["Timestamp (UTC)"].to_numpy()
    before = ts < release.timestamp()
    placed = before & (ts >= start.timestamp())
    p = raw["≥2.8%"].to_numpy()[placed]
    assert bets.height == before.sum() == 1330
    assert (bets["status"] == "bet").sum() == placed.sum() == 133
    assert (bets["status"] == "no_nowcast").sum() == 1330 - 133
    assert bets["winning_bucket"][0] == "≥2.8%" and bets.filter(pl.col("status") == "bet")["won"].all()
    assert LB.livebetting_return(bets) == pytest.approx(np.mean(1 / p) - 1, rel=1e-12)
    # the long (prediction_market_prices) layout gives the same grid
    long = grid.unpivot(index="bet_at", variable_name="bucket_label", value_name="price").rename(
        {"bet_at": "ts"}
    )
    assert LB.price_grid_from_long(long).equals(grid)
    s = LB.betting_summary(bets)
    at = datetime(2026, 4, 11, tzinfo=UTC)
    scores, stream = livebetting_frames(
        bets,
        s,
        model_id="const/3.3",
        market_id="cpi-mar",
        indicator_id="cpi",
        reference_period=date(2026, 3, 1),
        release_at=release,
        partition_key="cpi-mar",
        available_at=at,
    )
    con = storage.connect(tmp_path / "b.duckdb")
    try:
        assert storage.replace_partition(con, "livebetting_scores", scores, {"partition_key": "cpi-mar"}) == 2
        assert (
            storage.replace_partition(con, "livebetting_bets", stream, {"partition_key": "cpi-mar"}) == 1330
        )
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# inside the window, on answers that existed, on common hours
# ---------------------------------------------------------------------------------------------


def test_no_bet_before_the_window_opens_or_before_the_answer_existed():
    prices = pl.DataFrame(
        {
            "bet_at": [T0 + timedelta(hours=h) for h in range(8)],
            "≤2.0%": [0.5] * 8,
            "2.1%": [0.25] * 8,
            "≥2.2%": [0.25] * 8,
        }
    )
    # issued at hour 1 but answered at hour 2.5 (a run that took 90 minutes); a second answer issued at
    # hour 4, answered at hour 6
    nc = pl.DataFrame(
        {
            "issued_at": [T0 + timedelta(hours=1), T0 + timedelta(hours=4)],
            "known_at": [T0 + timedelta(hours=2, minutes=30), T0 + timedelta(hours=6)],
            "value": [2.1, 2.3],
        }
    )
    opens = T0 + timedelta(hours=2)
    bets = LB.hourly_bets(
        prices, nc, release_at=T0 + timedelta(hours=7, minutes=30), actual=2.1, opens_at=opens
    )
    # hours 0-1 lie before the window: not in the stream at all; hour 2: the window is open but the answer
    # issued at hour 1 did not exist yet; hours 3-5 bet on 2.1% (the hour-4 answer is unknown until hour 6);
    # 6-7 on >=2.2%
    assert bets["bet_at"].to_list() == [T0 + timedelta(hours=h) for h in range(2, 8)]
    assert bets["status"].to_list() == ["no_nowcast"] + ["bet"] * 5
    assert bets["bucket"].to_list() == [None, "2.1%", "2.1%", "2.1%", "≥2.2%", "≥2.2%"]
    placed = bets.filter(pl.col("status") == "bet")
    assert (placed["bet_at"] >= opens).all() and (placed["nowcast_known_at"] <= placed["bet_at"]).all()
    assert placed["nowcast_issued_at"].to_list()[:3] == [T0 + timedelta(hours=1)] * 3
    assert LB.livebetting_return(bets) == pytest.approx((3 * 4.0) / 5 - 1)  # three wins at 0.25, two losses
    # the same answers without the completion time (known at issue) would have bet from the window's first
    # hour
    naive = LB.hourly_bets(
        prices,
        nc.drop("known_at"),
        release_at=T0 + timedelta(hours=7, minutes=30),
        actual=2.1,
        opens_at=opens,
    )
    assert naive["status"][0] == "bet" and naive["bucket"].to_list()[2:4] == ["≥2.2%", "≥2.2%"]
    with pytest.raises(LB.BettingError, match="known_at .* before it"):
        LB.hourly_bets(
            prices,
            nc.with_columns(pl.col("issued_at") + timedelta(days=1)),
            release_at=T0 + timedelta(days=2),
            actual=2.1,
        )
    # answers tied at one instant (two recorded runs of one model) are one forecast: their mean
    tied = pl.DataFrame({"issued_at": [T0 + timedelta(hours=3)] * 2, "value": [2.0, 2.2]})
    t = LB.hourly_bets(prices, tied, release_at=T0 + timedelta(hours=5), actual=2.1)
    assert t.filter(pl.col("status") == "bet")["nowcast"].to_list() == [pytest.approx(2.1)] * 2


def test_common_hours_and_the_consensus_known_from_the_release_day():
    from leaf_live.macro.scoring.evaluation import common_hours, consensus_known_at, score_markets

    release = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)  # 08:30 EDT
    assert pl.select(consensus_known_at(pl.lit(release))).item() == datetime(2026, 4, 10, 4, 0, tzinfo=UTC)
    hours = [datetime(2026, 4, 8, 0, tzinfo=UTC) + timedelta(hours=h) for h in range(60)]
    labels = {"≤2.0%": 0.2, "2.1%": 0.5, "≥2.2%": 0.3}
    prices = pl.DataFrame(
        [
            {
                "market_id": "m",
                "indicator_id": "cpi",
                "reference_period": date(2026, 3, 1),
                "ts": t,
                "bucket_label": k,
                "price": v,
            }
            for t in hours
            for k, v in labels.items()
        ]
    )
    releases = pl.DataFrame(
        {
            "indicator_id": ["cpi"],
            "reference_period": [date(2026, 3, 1)],
            "release_at": [release],
            "actual": [2.1],
        }
    )
    windows = pl.DataFrame(
        {
            "indicator_id": ["cpi"],
            "reference_period": [date(2026, 3, 1)],
            "opens_at": [datetime(2026, 4, 8, 6, tzinfo=UTC)],
        }
    )
    nc = pl.DataFrame(
        {
            "model_id": ["a", "b", "consensus/investing"],
            "issued_at": [
                datetime(2026, 4, 8, 9, tzinfo=UTC),
                datetime(2026, 4, 9, 0, tzinfo=UTC),
                release - timedelta(minutes=1),
            ],
            "value": [2.1, 2.3, 2.1],
            "indicator_id": ["cpi"] * 3,
            "reference_period": [date(2026, 3, 1)] * 3,
        }
    )
    res = score_markets(prices, releases, nc, windows, min_common_hours=10)
    tot = res.scores.filter(pl.col("segment") == "total")
    win = {
        m: r
        for m, r in zip(
            tot.filter(pl.col("hours") == "window")["model_id"],
            tot.filter(pl.col("hours") == "window").iter_rows(named=True),
        )
    }
    # prices end 11:00 Apr 10; window 06:00 Apr 8 .. 11:00 Apr 10 = 18 + 24 + 12 = 54 price hours; a bets from
    # 09:00 Apr 8 (51 hours), b from 00:00 Apr 9 (36), the consensus from 04:00 UTC Apr 10 (00:00 EDT): 04:00
    # .. 11:00
    assert {m: (r["n_hours"], r["n_bets"]) for m, r in win.items()} == {
        "a": (54, 51),
        "b": (54, 36),
        "consensus/investing": (54, 8),
    }
    assert win["consensus/investing"]["final_return"] == pytest.approx(1 / 0.5 - 1)
    common = tot.filter(pl.col("hours") == "common")
    # a and b share 36 hours; the consensus's 8 would shrink them below 10: not compared
    assert sorted(common["model_id"].to_list()) == ["a", "b"] and (common["n_bets"] == 36).all()
    assert (common["n_models_common"] == 2).all()
    assert common.filter(pl.col("model_id") == "a")["final_return"][0] == pytest.approx(
        1.0
    )  # 2.1% at 0.5: x2
    assert common.filter(pl.col("model_id") == "b")["final_return"][0] == -1.0
    assert res.bets.filter(pl.col("common_hour"))["bet_at"].n_unique() == 36
    assert res.bets["bet_at"].min() == datetime(2026, 4, 8, 6, tzinfo=UTC)
    chosen, hrs = common_hours(
        {"x": res.bets.filter(pl.col("model_id") == "consensus/investing")}, min_hours=10
    )
    assert chosen == [] and hrs.len() == 0


def test_q1_gdp_is_bet_from_the_february_window_with_one_segment_per_target_window():
    """App. O: the Q1 2026 GDP market is bet across the February and March target windows (from 2026-02-25
    00:00 EST), each its own Table 13 segment, on the recorded market; the nowcast window opens 2026-03-25."""
    from leaf_live.macro.scoring.evaluation import score_markets

    raw = read_export("gdp-q1-2026-polymarket-price-data.csv")
    grid = LB.price_grid_from_export(raw)
    ref, release = date(2026, 1, 1), datetime(2026, 4, 30, 12, 30, tzinfo=UTC)  # advance 2.0% (08:30 EDT)
    prices = grid.unpivot(index="bet_at", variable_name="bucket_label", value_name="price").select(
        pl.lit("gdp-q1").alias("market_id"),
        pl.lit("real_gdp_advance").alias("indicator_id"),
        pl.lit(ref).alias("reference_period"),
        pl.col("bet_at").alias("ts"),
        "bucket_label",
        "price",
    )
    releases = pl.DataFrame(
        {
            "indicator_id": ["real_gdp_advance"] * 2,
            "reference_period": [date(2025, 10, 1), ref],
            "release_at": [datetime(2026, 2, 20, 13, 30, tzinfo=UTC), release],
            "actual": [1.4, 2.0],
        }
    )
    windows = pl.DataFrame(
        {
            "indicator_id": ["real_gdp_advance"],
            "reference_period": [ref],
            "opens_at": [datetime(2026, 3, 25, 4, tzinfo=UTC)],
        }
    )
    issued = datetime(2026, 2, 20, tzinfo=UTC)  # known before either window opens
    nc = pl.DataFrame(
        {
            "model_id": ["const/2.2"],
            "issued_at": [issued],
            "value": [2.2],
            "indicator_id": ["real_gdp_advance"],
            "reference_period": [ref],
        }
    )
    res = score_markets(prices, releases, nc, windows)
    s = res.scores.filter(pl.col("hours") == "window")
    by = {r["segment"]: r for r in s.iter_rows(named=True)}
    assert list(by) == ["2026-02 window", "2026-03 window", "total"]
    ts = raw["Timestamp (UTC)"].to_numpy()
    p = raw["2.0–2.5%"].to_numpy()
    feb_open, mar_open = datetime(2026, 2, 25, 5, tzinfo=UTC), datetime(2026, 3, 25, 4, tzinfo=UTC)
    feb = (ts >= feb_open.timestamp()) & (ts < mar_open.timestamp()) & np.isfinite(p)
    mar = (ts >= mar_open.timestamp()) & (ts < release.timestamp()) & np.isfinite(p)
    assert by["2026-02 window"]["n_bets"] == feb.sum() > 600 and by["2026-03 window"]["n_bets"] == mar.sum()
    assert by["2026-02 window"]["profit"] == pytest.approx((1 / p[feb] - 1).sum(), rel=1e-9)
    assert by["total"]["final_return"] == pytest.approx(np.mean(1 / p[feb | mar]) - 1, rel=1e-9)
    assert s["window_opens_at"][0] == feb_open
    # without the 2025Q4 release stored the market is bet from the nowcast window only (the old rule)
    old = score_markets(prices, releases.filter(pl.col("reference_period") == ref), nc, windows)
    o = old.scores.filter((pl.col("hours") == "window") & (pl.col("segment") == "total")).row(0, named=True)
    assert o["n_bets"] == mar.sum() and o["window_opens_at"] == mar_open
