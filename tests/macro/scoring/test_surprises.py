"""The surprise science rebuilt from the raw LiveMacroEval releases equals the released panel (App. K.1).

Reference files (read where they are, never copied):
``step_15_2_historical_preprocessing/{field_releases,sigma_by_field,timestamp_group_events}.csv``.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, get_indicator
from leaf_live.macro.scoring import surprises as S
from leaf_live.macro.sources.futures import FuturesSnapshot
from leaf_live.macro.sources.releases import PANEL_DIR, ReleaseCalendarSnapshot

ET = "America/New_York"


def _et_text(col: str = "release_at") -> pl.Expr:
    return pl.col(col).dt.convert_time_zone(ET).dt.strftime("%Y-%m-%d %H:%M:%S")


def _in_hist(col: str = "release_at") -> pl.Expr:
    return pl.col(col).dt.convert_time_zone(ET).dt.date() <= S.HIST_END


@pytest.fixture(scope="module")
def panel(snapshot_dir):
    cal = ReleaseCalendarSnapshot(snapshot_dir).calendar()
    rel = S.first_releases(cal)
    prices = FuturesSnapshot(snapshot_dir).window_prices()
    ret = S.announcement_returns(prices, rel)
    scales = S.surprise_scales(rel)
    events = S.timestamp_group_events(rel, ret, scales)
    ref = snapshot_dir / PANEL_DIR
    return {
        "cal": cal,
        "rel": rel,
        "prices": prices,
        "ret": ret,
        "scales": scales,
        "events": events,
        "field_releases": pl.read_csv(ref / "field_releases.csv", infer_schema=False),
        "sigma": pl.read_csv(ref / "sigma_by_field.csv"),
        "tge": pl.read_csv(ref / "timestamp_group_events.csv"),
    }


def test_first_release_rule_rebuilds_field_releases(panel):
    """field_releases.csv UNION dropped_revisions.csv -> exactly the 2,733 first releases, same A and C."""
    rel = panel["rel"].filter(_in_hist())
    fr = panel["field_releases"]
    assert rel.height == fr.height == 2733
    mine = rel.select("indicator_id", _et_text().alias("t"), "actual", "consensus").sort(
        ["t", "indicator_id"]
    )
    scale = {i: get_indicator(i).panel_scale for i in INDICATOR_IDS}
    ref = fr.select(
        pl.col("field_id").alias("indicator_id"),
        pl.col("release_datetime_et").alias("t"),
        pl.col("A").cast(pl.Float64),
        pl.col("C").cast(pl.Float64),
    ).sort(["t", "indicator_id"])
    assert mine.select("indicator_id", "t").equals(ref.select("indicator_id", "t"))
    factor = mine["indicator_id"].replace_strict(scale, return_dtype=pl.Float64).to_numpy()
    np.testing.assert_allclose(mine["actual"].to_numpy() * factor, ref["A"].to_numpy(), rtol=1e-14, atol=0)
    np.testing.assert_allclose(mine["consensus"].to_numpy() * factor, ref["C"].to_numpy(), rtol=1e-14, atol=0)
    assert set(rel["consensus_source"].unique()) == {"investing"}
    storage.conform("releases", panel["rel"])


def test_rule_itself_drops_the_revisions(panel):
    """The earliest-per-period rule, not the source's flag, removes 141 of the 145 dropped revisions; the
    source's mark is needed only for the 4 real-PCE rows whose earlier releases (without consensus) are not in
    the released files."""
    cal = panel["cal"].with_columns(pl.lit(False).alias("marked_revision"))
    without_flag = S.first_releases(cal)
    extra = without_flag.join(panel["rel"], on=["indicator_id", "release_at"], how="anti")
    got = sorted(extra.select("indicator_id", _et_text().alias("t")).iter_rows())
    assert got == [
        ("real_pce", "2013-12-23 08:30:00"),
        ("real_pce", "2014-03-28 08:30:00"),
        ("real_pce", "2014-05-30 08:30:00"),
        ("real_pce", "2014-08-29 08:30:00"),
    ]
    assert panel["rel"].join(without_flag, on=["indicator_id", "release_at"], how="anti").height == 0
    # GDP keeps the advance estimate: after 2014 one release per quarter, the earliest of the three
    gdp = panel["rel"].filter(
        (pl.col("indicator_id") == "real_gdp_advance") & (pl.col("period_source") == "event_text")
    )
    assert gdp["period_label"].n_unique() == gdp.height
    q2_2014 = gdp.filter(pl.col("period_label") == "2014-Q2")
    assert q2_2014.select(_et_text()).item() == "2014-07-30 08:30:00"
    assert q2_2014["reference_period"].item() == date(2014, 4, 1)


def test_sigma_equals_sigma_by_field(panel):
    scales = panel["scales"]
    ref = panel["sigma"]
    assert scales["indicator_id"].to_list() == list(INDICATOR_IDS)
    assert int(scales["n_releases"].sum()) == 2733  # includes the 8 releases with unusable windows
    for r in ref.iter_rows(named=True):
        mine = scales.filter(pl.col("indicator_id") == r["field_id"]).row(0, named=True)
        k = get_indicator(r["field_id"]).panel_scale
        assert mine["n_releases"] == r["n_hist_releases"]
        assert mine["sigma"] * k == pytest.approx(r["sigma_i"], rel=1e-12)
        assert mine["mean_surprise"] * k == pytest.approx(r["mean_raw_surprise"], rel=1e-12)
        assert mine["window_start"] == date.fromisoformat(r["first_release"][:10])
        assert mine["window_end"] == date.fromisoformat(r["last_release"][:10])
    # hand check: sd(ddof 1) by numpy on the released A - C of payrolls, in thousands
    fr = panel["field_releases"].filter(pl.col("field_id") == "nonfarm_payrolls")
    raw = fr["A"].cast(pl.Float64).to_numpy() / 1000 - fr["C"].cast(pl.Float64).to_numpy() / 1000
    nfp = scales.filter(pl.col("indicator_id") == "nonfarm_payrolls")
    assert nfp["sigma"].item() == pytest.approx(np.std(raw, ddof=1), rel=1e-12)
    assert nfp["sigma"].item() == pytest.approx(790.8203401686164, rel=1e-12)
    storage.conform("surprise_scales", scales)


def test_timestamp_group_events_equal_released_panel(panel):
    ev = panel["events"].filter(_in_hist() & (pl.col("window_status") == "usable"))
    tge = panel["tge"]
    assert ev.height == tge.height == 2163
    assert ev.select(_et_text()).to_series().to_list() == tge["release_timestamp"].to_list()
    np.testing.assert_allclose(ev["r_g"].to_numpy(), tge["hf_return"].to_numpy(), rtol=0, atol=1e-12)
    for i in INDICATOR_IDS:
        mine, ref = ev[f"s_{i}"].to_numpy(), tge[f"X_{i}"].to_numpy()
        assert np.array_equal(mine == 0.0, ref == 0.0), i  # structural zeros at the same events
        np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=0, err_msg=i)
    assert ev["n_fields"].to_list() == tge["n_valid_fields"].to_list()
    assert ev["contract_code"].to_list() == tge["contract_code"].to_list()
    assert ev["release_time_et"].to_list() == tge["release_time_cohort"].to_list()
    storage.conform("surprise_events", panel["events"])


def test_hand_checked_event_values(panel):
    ev = panel["events"]
    first = ev.row(0, named=True)
    # 2010-01-04 10:00 ET (EST) ISM manufacturing: A 55.9, C 54.0; ES 1123.5 -> 1127.0
    assert first["release_at"] == datetime(2010, 1, 4, 15, 0, tzinfo=UTC)
    assert first["r_g"] == pytest.approx(math.log(1127.0) - math.log(1123.5), abs=1e-15)
    sigma = panel["scales"].filter(pl.col("indicator_id") == "ism_manufacturing")["sigma"].item()
    assert first["s_ism_manufacturing"] == pytest.approx((55.9 - 54.0) / sigma, rel=1e-12)
    assert first["n_fields"] == 1 and first["s_cpi"] == 0.0
    # 2010-01-08 08:30: payrolls (A -85k, C 0) and unemployment share one window
    nfp = ev.filter(pl.col("release_at") == datetime(2010, 1, 8, 13, 30, tzinfo=UTC)).row(0, named=True)
    assert nfp["n_fields"] == 2
    assert nfp["s_nonfarm_payrolls"] == pytest.approx(-85.0 / 790.8203401686164, rel=1e-12)


def test_unusable_windows_are_kept_and_marked(panel):
    """The 8 releases without ES bars (5 market-closed timestamps) count in sigma but have no r_g."""
    ret = panel["ret"]
    closed = ret.filter(pl.col("window_status") == "no_prices").select(_et_text()).to_series().to_list()
    assert closed == [
        "2017-04-14 08:30:00",
        "2019-04-19 08:30:00",
        "2020-04-10 08:30:00",
        "2022-04-15 09:15:00",
        "2024-03-29 08:30:00",
    ]
    assert ret.filter(pl.col("window_status") == "no_prices")["r_g"].null_count() == 5
    ev = panel["events"].filter(pl.col("window_status") == "no_prices")
    assert ev.height == 5 and ev["r_g"].null_count() == 5
    assert int(ev["n_fields"].sum()) == 8
    storage.conform("announcement_returns", ret)


def test_live_window_events_use_frozen_sigma(panel):
    """Live releases (2025-11 -> 2026-05) are standardized with the frozen historical sigma and priced from
    event_window_coverage.csv; releases without consensus add no surprise."""
    ev = panel["events"].filter(~_in_hist())
    assert ev.height > 0 and ev["window_status"].to_list() == ["usable"] * ev.height
    cpi = ev.filter(pl.col("release_at") == datetime(2025, 12, 18, 13, 30, tzinfo=UTC)).row(0, named=True)
    sigma = panel["scales"].filter(pl.col("indicator_id") == "cpi")["sigma"].item()
    assert cpi["s_cpi"] == pytest.approx((2.7 - 3.1) / sigma, rel=1e-12)
    assert cpi["r_g"] == pytest.approx(math.log(6829.25) - math.log(6808.75), abs=1e-15)
    # 2025-12-16 08:29 payrolls (Oct) were published without consensus: no event at that minute
    assert ev.filter(pl.col("release_at") == datetime(2025, 12, 16, 13, 29, tzinfo=UTC)).height == 0
    live_rel = panel["rel"].filter(~_in_hist())
    assert live_rel.height == 103 and live_rel["consensus"].null_count() == 13


def test_point_in_time_columns(panel):
    ev, ret = panel["events"], panel["ret"]
    assert (ret["available_at"] == ret["release_at"] + timedelta(minutes=30)).all()
    sigma_at = panel["scales"]["available_at"].max()
    hist = ev.filter(_in_hist())
    assert (hist["available_at"] >= hist["release_at"] + timedelta(minutes=30)).all()
    assert hist["available_at"].max() <= sigma_at + timedelta(minutes=30)
    # a 2010 ISM surprise is knowable only once its sigma (last input 2025-10-01 10:00 ET) is
    ism_at = panel["scales"].filter(pl.col("indicator_id") == "ism_manufacturing")["available_at"].item()
    assert ism_at == datetime(2025, 10, 1, 14, 0, tzinfo=UTC)
    assert hist["available_at"][0] == ism_at
    live = ev.filter(~_in_hist())
    assert (live["available_at"] == live["release_at"] + timedelta(minutes=30)).all()
    assert (panel["rel"]["available_at"] == panel["rel"]["release_at"]).all()
    month = (
        panel["rel"].select(pl.col("release_at").dt.convert_time_zone(ET).dt.strftime("%Y-%m")).to_series()
    )
    assert (panel["rel"]["partition_key"] == month).all()


def test_first_releases_on_a_lookback_window_matches_the_full_run(panel):
    """The asset applies the rule to a 12-month lookback of the calendar: same rows for the target months."""
    cal = panel["cal"].filter(pl.col("partition_key").is_between(pl.lit("2014-01"), pl.lit("2015-03")))
    part = S.first_releases(cal).filter(
        pl.col("partition_key").is_between(pl.lit("2015-01"), pl.lit("2015-03"))
    )
    full = panel["rel"].filter(pl.col("partition_key").is_between(pl.lit("2015-01"), pl.lit("2015-03")))
    assert part.height > 0 and part.equals(full)


def test_consensus_priority_and_fill(tmp_path):
    """Investing.com (calendar export) first; ForexFactory fills a missing consensus of the same release and
    adds days the primary source misses. Times: 21:30 UTC+8 on 2024-03-08 = 08:30 EST; 20:30 UTC+8 after
    the 2024-03-10 switch = 08:30 EDT."""
    export = tmp_path / "export.csv"
    export.write_text(
        "field_id,release_datetime_et,event,A,C\n"
        "nonfarm_payrolls,2024-03-08 08:30:00,Nonfarm Payrolls  (Feb),275000.0,\n"
        "cpi,2024-03-12 08:30:00,CPI (YoY)  (Feb),3.2,3.1\n"
    )
    ff = tmp_path / "macro" / "calendar_forexfactory_spoluan"
    ff.mkdir(parents=True)
    (ff / "forex_factory_calendar_2024.csv").write_text(
        "Date,Time,Currency,Event,Impact,Actual,Forecast,Previous,Combined DateTime\n"
        "2024-03-08,9:30pm,USD,Non-Farm Employment Change,High,275K,198K,229K,2024-03-08 21:30:00\n"
        "2024-03-12,8:30pm,USD,CPI y/y,High,3.2%,3.0%,3.1%,2024-03-12 20:30:00\n"
        "2024-03-14,8:30pm,USD,PPI m/m,High,0.6%,0.3%,0.3%,2024-03-14 20:30:00\n"
    )
    cal = ReleaseCalendarSnapshot(
        tmp_path, sources=("livemacroeval_live", "forexfactory"), calendar_file=export
    ).calendar()
    rel = S.first_releases(cal)
    assert rel.select(
        "indicator_id",
        "release_at",
        "period_label",
        "actual",
        "consensus",
        "consensus_source",
        "surprise",
        "source",
    ).rows() == [
        (
            "nonfarm_payrolls",
            datetime(2024, 3, 8, 13, 30, tzinfo=UTC),
            "2024-02",
            275.0,
            198.0,
            "forexfactory",
            77.0,
            "livemacroeval_live",
        ),
        (
            "cpi",
            datetime(2024, 3, 12, 12, 30, tzinfo=UTC),
            "2024-02",
            3.2,
            3.1,
            "investing",
            pytest.approx(0.1),
            "livemacroeval_live",
        ),
        (
            "ppi",
            datetime(2024, 3, 14, 12, 30, tzinfo=UTC),
            "2024-02",
            0.6,
            0.3,
            "forexfactory",
            pytest.approx(0.3),
            "forexfactory",
        ),
    ]
    # without ForexFactory the payrolls release keeps no consensus and so no surprise
    no_ff = S.first_releases(cal.filter(pl.col("source") != "forexfactory"))
    assert no_ff["consensus"].to_list() == [None, 3.1] and no_ff["surprise"].to_list()[0] is None


# ---------------------------------------------------------------------------------------------
# scoring events: overlapping announcement windows; re-standardized events
# ---------------------------------------------------------------------------------------------


def test_overlapping_windows_merge_by_hand():
    t = lambda s: datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    ret = pl.DataFrame(
        {
            "release_at": [
                t("2026-01-09 13:29"),
                t("2026-01-09 13:30"),
                t("2026-01-09 14:04"),
                t("2026-01-09 15:00"),
                t("2026-01-12 15:00"),
            ],
            "price_before": [100.0, 101.0, 102.0, 103.0, 104.0],
            "price_after": [110.0, 111.0, 112.0, 113.0, None],
            "r_g": [math.log(110 / 100), math.log(111 / 101), math.log(112 / 102), math.log(113 / 103), None],
        }
    )
    g = S.overlapping_event_groups(ret)
    # 13:30 is 1 min after 13:29 and 14:04 is 34 min after 13:30 (< 35: its window [13:59, 14:34] opens before
    # 13:30's closes at 14:00): one chain; 15:00 is 56 min later: its own event
    assert g["event_at"].to_list() == [t("2026-01-09 13:29")] * 3 + [
        t("2026-01-09 15:00"),
        t("2026-01-12 15:00"),
    ]
    assert g["n_timestamps"].to_list() == [3, 3, 3, 1, 1]
    # the union window: price_before of the first, price_after of the last
    assert g["event_r_g"][0] == pytest.approx(math.log(112 / 100), rel=1e-15)
    assert g["event_r_g"][3] == ret["r_g"][3]  # a single timestamp keeps its stored r_g
    assert g["event_r_g"][4] is None and g["event_window_status"].to_list()[3:] == ["usable", "no_prices"]
    # exactly 35 minutes apart: the windows only touch, two events
    touch = ret.head(2).with_columns(pl.Series("release_at", [t("2026-01-09 13:00"), t("2026-01-09 13:35")]))
    assert S.overlapping_event_groups(touch)["n_timestamps"].to_list() == [1, 1]
    with pytest.raises(S.SurpriseError, match="two rows"):
        S.overlapping_event_groups(pl.concat([ret, ret.head(1)]))


def test_restandardize_events_by_hand():
    ev = pl.DataFrame(
        {"release_at": [datetime(2017, 1, 6, 13, 30, tzinfo=UTC)], "s_cpi": [2.0], "s_ppi": [0.0]}
    )
    stored = pl.DataFrame({"indicator_id": ["cpi", "ppi"], "sigma": [0.1, 0.3]})
    target = pl.DataFrame({"indicator_id": ["cpi", "ppi"], "sigma": [0.25, 0.2]})
    out = S.restandardize_events(ev, stored, target)
    assert (
        out["s_cpi"][0] == pytest.approx(2.0 * 0.1 / 0.25) and out["s_ppi"][0] == 0.0
    )  # (A - C) = 0.2 -> 0.8
    with pytest.raises(S.SurpriseError, match="no target sigma for cpi"):
        S.restandardize_events(ev, stored, target.filter(pl.col("indicator_id") == "ppi"))


def test_live_catch_up_releases_merge_into_one_scoring_event(panel):
    live_ret = panel["ret"].filter(pl.col("release_at") >= datetime(2025, 11, 1, tzinfo=UTC))
    g = S.overlapping_event_groups(live_ret)
    jan9 = g.filter(pl.col("release_at").dt.date() == date(2026, 1, 9))
    # 08:29 ET housing starts / permits (catch-up) and 08:30 ET payrolls / unemployment / permits: one event
    assert jan9["release_at"].to_list() == [
        datetime(2026, 1, 9, 13, 29, tzinfo=UTC),
        datetime(2026, 1, 9, 13, 30, tzinfo=UTC),
    ]
    assert jan9["event_at"].unique().to_list() == [datetime(2026, 1, 9, 13, 29, tzinfo=UTC)]
    r = live_ret.filter(pl.col("release_at").dt.date() == date(2026, 1, 9)).sort("release_at")
    assert jan9["event_r_g"][0] == pytest.approx(
        math.log(r["price_after"][1]) - math.log(r["price_before"][0]), rel=1e-15
    )
    # ten overlapping pairs in the live window, each merged; the historical panel has none (Table 9
    # unaffected)
    assert g.filter(pl.col("n_timestamps") > 1)["event_at"].n_unique() == 10
    # (the rule applied to 2010-01 .. 2025-10 would leave the 2,163 Table 9 events as they are; the fit keeps
    # the replication design regardless)
    hist = S.overlapping_event_groups(
        panel["ret"].filter(pl.col("release_at") < datetime(2025, 11, 1, tzinfo=UTC))
    )
    assert hist.height == panel["ret"].filter(pl.col("release_at") < datetime(2025, 11, 1, tzinfo=UTC)).height
    assert (hist["n_timestamps"] == 1).all()
