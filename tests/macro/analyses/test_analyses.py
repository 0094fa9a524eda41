"""The paper's remaining analyses (LiveMacroEval App. E, F, G, Q, R) on small constructed cases whose numbers
are worked out by hand in the comments."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from scipy.interpolate import make_smoothing_spline

from leaf_live.core import pit
from leaf_live.macro.analyses import copying as F
from leaf_live.macro.analyses import cross_model as Q
from leaf_live.macro.analyses import rationales as G
from leaf_live.macro.analyses import recovery as E
from leaf_live.macro.analyses import revisions as R
from leaf_live.macro.analyses.series import AnalysisError, hourly_series

REF = date(2026, 3, 1)
REL = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)  # 08:30 ET
H = timedelta(hours=1)
AGENT = "openai/gpt-5-search-api@single"


def nowcasts(rows, producer: str = "llm_nowcasts", partition_key: str = "2026-04-01-00:00") -> pl.DataFrame:
    """rows: (model_id, indicator_id, reference_period, issued_at, value[, rationale, citations])."""
    out = []
    for r in rows:
        m, i, ref, t, v = r[:5]
        out.append(
            {
                "producer": producer,
                "partition_key": partition_key,
                "model_id": m,
                "indicator_id": i,
                "reference_period": ref,
                "issued_at": t,
                "value": v,
                "valid": v is not None,
                "available_at": t,
                "rationale": r[5] if len(r) > 5 else None,
                "citations": r[6] if len(r) > 6 else None,
            }
        )
    return pl.DataFrame(
        out,
        schema={
            "producer": pl.Utf8,
            "partition_key": pl.Utf8,
            "model_id": pl.Utf8,
            "indicator_id": pl.Utf8,
            "reference_period": pl.Date,
            "issued_at": pl.Datetime("us", "UTC"),
            "value": pl.Float64,
            "valid": pl.Boolean,
            "available_at": pl.Datetime("us", "UTC"),
            "rationale": pl.Utf8,
            "citations": pl.Utf8,
        },
    )


def releases(rows) -> pl.DataFrame:
    """rows: (indicator_id, reference_period, release_at, actual, consensus)."""
    return pl.DataFrame(
        [
            {
                "indicator_id": i,
                "reference_period": r,
                "release_at": t,
                "actual": a,
                "consensus": c,
                "available_at": t,
            }
            for i, r, t, a, c in rows
        ],
        schema={
            "indicator_id": pl.Utf8,
            "reference_period": pl.Date,
            "release_at": pl.Datetime("us", "UTC"),
            "actual": pl.Float64,
            "consensus": pl.Float64,
            "available_at": pl.Datetime("us", "UTC"),
        },
    )


def scales(**sigma) -> pl.DataFrame:
    t = datetime(2025, 10, 31, tzinfo=UTC)
    return pl.DataFrame(
        {"indicator_id": list(sigma), "sigma": list(sigma.values()), "available_at": [t] * len(sigma)}
    )


# ---------------------------------------------------------------------------------------------
# shared: concurrent runs
# ---------------------------------------------------------------------------------------------


def test_recorded_runs_are_separate_series_and_invalid_rows_drop():
    t, q1 = REL - 5 * H, date(2026, 1, 1)
    feb = nowcasts(
        [(AGENT, "real_gdp_advance", q1, t, 1.9), (AGENT, "real_gdp_advance", q1, t + H, None)],
        producer="recorded_nowcasts",
        partition_key=f"{AGENT}/2026-02_core_macroeconomic_conditions",
    )
    mar = nowcasts(
        [(AGENT, "real_gdp_advance", q1, t, 1.4)],
        producer="recorded_nowcasts",
        partition_key=f"{AGENT}/2026-03_core_macroeconomic_conditions",
    )
    hs = hourly_series(pl.concat([feb, mar]))
    # two runs answering the same hour stay two series (the paper's (agent, indicator, target month))
    assert hs["run_id"].to_list() == [
        f"{AGENT}/2026-02_core_macroeconomic_conditions",
        f"{AGENT}/2026-03_core_macroeconomic_conditions",
    ]
    assert hs["value"].to_list() == [1.9, 1.4] and hs["n_runs"].to_list() == [1, 1]
    # an hourly producer is one stream: its partition_key (the hour) is not a run
    live = nowcasts([(AGENT, "cpi", REF, t, 3.0), (AGENT, "cpi", REF, t + H, 3.1)])
    assert hourly_series(live)["run_id"].unique().to_list() == ["hourly"]


# ---------------------------------------------------------------------------------------------
# App. E post-release recovery
# ---------------------------------------------------------------------------------------------


def _recovery_case():
    pre = [(-3.5, 2.6), (-2.5, 2.7), (-1.5, 2.6), (-0.5, 2.8)]
    post = [(0.5, 3.1), (1.5, 3.3), (2.5, 3.2), (3.5, 3.3), (4.5, 3.3)]
    rows = [(AGENT, "cpi", REF, REL + timedelta(hours=h), v) for h, v in pre + post]
    rows.append(
        (AGENT, "cpi", date(2026, 2, 1), REL - 30 * 24 * H, 2.4)
    )  # another series, nothing after release
    rel = releases(
        [("cpi", REF, REL, 3.3, 3.4), ("cpi", date(2026, 2, 1), REL - 30 * 24 * H + 2 * H, 2.4, 2.4)]
    )
    return nowcasts(rows), rel


def test_recovery_by_hand():
    summary, paths = E.post_release_recovery(*_recovery_case())
    assert summary.height == 1  # February CPI has no nowcast after its release
    r = summary.row(0, named=True)
    # tolerance: half of CPI's printed resolution 0.1
    assert r["tolerance"] == pytest.approx(0.05)
    # pre-release cluster (last 24 h): 2.6, 2.7, 2.6, 2.8 -> sorted 2.6 2.6 2.7 2.8, median (2.6 + 2.7)/2 =
    # 2.65; linear quantiles: q25 at position 0.75 = 2.6, q75 at 2.25 = 2.7 + 0.25 * 0.1 = 2.725 -> IQR 0.125;
    # gap 0.65
    assert (r["n_pre"], r["n_pre_window"]) == (4, 4)
    assert r["pre_median"] == pytest.approx(2.65) and r["pre_iqr"] == pytest.approx(0.125)
    assert r["pre_gap"] == pytest.approx(0.65)
    # post: 3.1 (miss, 0.2 away), 3.3 hit, 3.2 miss, 3.3 hit, 3.3 hit -> first hit 1.5 h after the release,
    # settled from 3.5 h (after the last miss at 2.5 h), 3 of 5 reached
    assert (r["n_post"], r["first_post_hours"], r["last_post_hours"]) == (5, 0.5, 4.5)
    assert (r["hours_to_first_hit"], r["hours_to_settle"]) == (1.5, 3.5)
    assert r["share_post_reached"] == pytest.approx(0.6)
    # post median of 3.1 3.2 3.3 3.3 3.3 = 3.3; |x - 3.3| = .2 0 .1 0 0 -> median 0
    assert r["post_median"] == pytest.approx(3.3) and r["post_median_abs_dev"] == pytest.approx(0.0)
    # the spline runs through all 9 hours (within 5 days before the release) and is scipy's fit at that lambda
    assert (
        r["spline_points"] == 9 and paths.height == 9 and r["spline_gap_24h"] is None
    )  # no nowcast 24 h after
    x = paths["hours_from_release"].to_numpy() / 24.0
    direct = make_smoothing_spline(x, paths["value"].to_numpy(), lam=r["spline_lambda"])(x)
    assert np.allclose(paths["spline"].to_numpy(), direct, atol=1e-7)
    assert paths["after_release"].sum() == 5
    assert r["available_at"] == REL + timedelta(hours=4.5)  # the last post-release nowcast it read


def test_reached_counts_only_values_that_print_as_the_release():
    # 3.26 prints as 3.3; 3.25 is halfway (not counted); 3.35 halfway on the other side
    assert E.reached(np.array([3.3, 3.26, 3.25, 3.35, 3.34]), 3.3, 0.05).tolist() == [
        True,
        True,
        False,
        False,
        True,
    ]
    assert (
        E.printed_resolution("existing_home_sales") == 10.0
        and E.printed_resolution("nonfarm_payrolls") == 1.0
    )


def test_gcv_lambda_is_the_one_scipy_picked():
    import scipy.interpolate._bsplines as bs  # private: only to cross-check the lambda we read back

    rng = np.random.default_rng(3)
    x = np.arange(40.0) / 6
    y = np.sin(x) + rng.normal(0, 0.2, x.size)
    seen = {}
    orig = bs._compute_optimal_gcv_parameter

    def spy(*a, **k):
        seen["lam"] = orig(*a, **k)
        return seen["lam"]

    bs._compute_optimal_gcv_parameter = spy
    try:
        f, lam, at_bound = E.gcv_spline(x, y)
    finally:
        bs._compute_optimal_gcv_parameter = orig
    assert not at_bound and lam == pytest.approx(float(seen["lam"]), rel=1e-6)
    assert np.allclose(f(x), make_smoothing_spline(x, y)(x))


def test_gcv_search_widens_when_scipy_stops_at_its_bound():
    # a nearly straight line: GCV wants lambda far above scipy's search range (0, n) in these units; in units
    # 10x larger the same fit is interior, and lambda is reported back in the caller's units (x 10^3)
    x = np.arange(30.0)
    y = 0.5 * x + np.random.default_rng(1).normal(0, 1.0, x.size)
    f, lam, at_bound = E.gcv_spline(x, y)
    assert not at_bound and lam > x.size
    assert np.allclose(f(x), make_smoothing_spline(x, y, lam=lam)(x), atol=1e-6)
    with pytest.raises(AnalysisError, match="at least 5"):
        E.gcv_spline(x[:4], y[:4])


# ---------------------------------------------------------------------------------------------
# App. F copying tests
# ---------------------------------------------------------------------------------------------


def _copying_case():
    rows = [
        (AGENT, "cpi", REF, REL - 60 * H, 2.6),
        (AGENT, "cpi", REF, REL - 40 * H, 2.8),
        (AGENT, "cpi", REF, REL - 20 * H, 3.0),
        (AGENT, "cpi", REF, REL - 5 * H, 3.3),
        (AGENT, "cpi", REF, REL + H, 3.5),  # after the release: never used
        ("fed/cleveland-cpi", "cpi", REF, REL - 50 * H, 3.0),
        ("fed/cleveland-cpi", "cpi", REF, REL - 10 * H, 3.2),
        ("fed/cleveland-cpi", "cpi", REF, REL + 2 * H, 9.9),  # published after the release: never used
        ("consensus/investing", "cpi", REF, REL - timedelta(minutes=1), 3.1),
    ]
    return nowcasts(rows), releases([("cpi", REF, REL, 3.3, 3.1)]), scales(cpi=0.2)


def test_convergence_by_hand():
    nc, rel, sc = _copying_case()
    series, bins = F.convergence(nc, rel, sc)
    fed = series.filter(pl.col("comparator_model_id") == "fed/cleveland-cpi").row(0, named=True)
    # as of each hour: -60 h no Fed value yet; -40 h P = 3.0 -> G = |2.8 - 3.0|/0.2 = 1.0; -20 h G = 0;
    # -5 h P = 3.2 -> G = 0.5 (terminal). Spearman(G = 1, 0, .5; hours = 40, 20, 5): ranks (3,1,2) vs (3,2,1),
    # d = 0, -1, 1 -> rho = 1 - 6*2/(3*8) = 0.5
    assert (fed["comparator_rule"], fed["n_nowcasts"], fed["n_without_comparator"]) == ("as_of", 3, 1)
    assert fed["terminal_gap_sigma"] == pytest.approx(0.5) and fed["spearman_rho"] == pytest.approx(0.5)
    assert fed["terminal_comparator_value"] == 3.2 and fed["available_at"] == REL - 5 * H
    con = series.filter(pl.col("comparator_model_id") == "consensus/investing").row(0, named=True)
    # terminal consensus 3.1 at every hour: G = 2.5, 1.5, 0.5, 1.0 at 60, 40, 20, 5 h; ranks (4,3,1,2) vs
    # (4,3,2,1): sum d^2 = 2 -> rho = 1 - 12/(4*15) = 0.8; terminal gap 1.0
    assert (con["comparator_rule"], con["n_nowcasts"]) == ("terminal", 4)
    assert con["terminal_gap_sigma"] == pytest.approx(1.0) and con["spearman_rho"] == pytest.approx(0.8)
    # it used the consensus, stamped a minute before the release: the row is known from then, not earlier
    assert con["available_at"] == REL - timedelta(minutes=1) and con["terminal_issued_at"] < REL
    b = bins.filter(pl.col("comparator_model_id") == "consensus/investing").sort("hours_lo")
    assert b["bin"].to_list() == ["0-6", "12-24", "24-48", "48-96"]
    assert b["median_gap_sigma"].to_list() == pytest.approx([1.0, 0.5, 1.5, 2.5])


def test_convergence_needs_sigma_known_by_the_release():
    nc, rel, _ = _copying_case()
    late = pl.DataFrame({"indicator_id": ["cpi"], "sigma": [0.2], "available_at": [REL + H]})
    with pytest.raises(AnalysisError, match="sigma for indicator_id='cpi'"):
        F.convergence(nc, rel, late)


def _et(d: int, hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 4, d, hh, mm, tzinfo=pit.ET).astimezone(UTC)


def test_comovement_by_hand():
    rel_at = _et(10, 8, 30)
    agent = [(_et(6, 12), 1.0), (_et(7, 12), 1.2), (_et(8, 12), 1.1), (_et(9, 12), 1.5), (_et(10, 7), 1.5)]
    fed = [
        (_et(6, 17), 2.0),
        (_et(7, 17), 2.1),
        (_et(8, 17), 2.1),
        (_et(9, 17), 2.3),
        (_et(10, 6), 2.2),
        (_et(10, 9), 5.0),
    ]  # the last one after the release
    rows = [(AGENT, "cpi", REF, t, v) for t, v in agent] + [
        ("fed/cleveland-cpi", "cpi", REF, t, v) for t, v in fed
    ]
    rows.append(("consensus/investing", "cpi", REF, rel_at - timedelta(minutes=1), 3.1))
    out = F.comovement(nowcasts(rows), releases([("cpi", REF, rel_at, 3.3, 3.1)]))
    r = out.filter(pl.col("comparator_model_id") == "fed/cleveland-cpi").row(0, named=True)
    # day ends (Apr 6..9 midnight ET, then the release): agent 1.0 1.2 1.1 1.5 1.5 -> changes .2 -.1 .4 0;
    # Fed 2.0 2.1 2.1 2.3 2.2 -> .1 0 .2 -.1. Means .125 and .05; centred products .00375 + .01125 + .04125
    # + .01875 = .075; sums of squares .1475 and .05 -> r = .075 / sqrt(.1475 * .05) = 0.87333
    assert (r["status"], r["n_day_pairs"], r["n_series"]) == ("ok", 4, 1)
    assert r["r_delta"] == pytest.approx(0.075 / math.sqrt(0.1475 * 0.05)) == pytest.approx(0.87333, abs=1e-5)
    assert r["last_day_end"] == rel_at
    c = out.filter(pl.col("comparator_model_id") == "consensus/investing").row(0, named=True)
    assert (
        c["status"] == "comparator_constant" and c["r_delta"] is None
    )  # one stored consensus value: no changes


def test_thin_updates_keeps_windows_disjoint():
    t0 = datetime(2026, 4, 1, tzinfo=UTC)
    kept = F.thin_updates([t0 + h * H for h in (100, 0, 24, 48, 50)])
    assert kept == [t0, t0 + 48 * H, t0 + 100 * H]  # 24 h and 50 h come < 48 h after a kept one


def test_event_time_by_hand():
    t0 = REL - 100 * H
    values = [0, 0, 1, 1, 1, 3, 3, 3, 3, 3.5, 3.5]
    rows = [(AGENT, "cpi", REF, t0 + k * H, v) for k, v in enumerate(values)]
    rows += [
        ("fed/cleveland-cpi", "cpi", REF, t0 + 5 * H, 3.0),
        ("fed/cleveland-cpi", "cpi", REF, t0 + 6 * H, 3.0),
        ("fed/cleveland-cpi", "cpi", REF, REL + H, 3.0),
    ]  # after the release: not an update of this window
    out = F.event_time(
        nowcasts(rows), releases([("cpi", REF, REL, 3.3, 3.1)]), window_hours=2.0, draws=2000, seed=1
    )
    r = out.row(0, named=True)
    # |Delta| at hours 1..10: 0 1 0 0 2 0 0 0 .5 0; 90th percentile (linear, n = 10): position 8.1 of the
    # sorted values (0 x7, .5, 1, 2) -> 1 + .1 * (2 - 1) = 1.1 -> one large revision (2, at hour 5)
    assert (r["n_revisions"], r["n_large"], r["n_fed_updates"], r["n_fed_updates_kept"]) == (10, 1, 2, 1)
    # windows [5-2, 5+2) h hold revision hours 3, 4, 5, 6: share of all 0.4, of large 1.0 -> Delta share 0.6
    assert r["share_all_inside"] == pytest.approx(0.4) and r["share_large_inside"] == 1.0
    assert r["delta_share"] == pytest.approx(0.6)
    # permutations: the one large flag lands inside with probability 4/10 (|.6| reached) else outside (|-.4|
    # not): p ~ 0.4 (binomial sd .011 at B = 2000)
    assert abs(r["perm_p"] - 0.4) < 0.04
    # KS of |Delta| inside (0 0 2 0) vs outside (1 0 0 0 .5 0): ECDFs at 1 are .75 vs 1 -> D = 0.25
    assert r["ks_stat"] == pytest.approx(0.25) and 0 < r["ks_p"] <= 1
    assert F.large_revisions(np.array([0.0, 0, 0])).sum() == 0  # nothing moved: nothing large


def test_event_time_rejects_bad_settings():
    nc, rel, _ = _copying_case()
    with pytest.raises(AnalysisError, match="draws"):
        F.event_time(nc, rel, draws=0)


# ---------------------------------------------------------------------------------------------
# App. G rationale audit
# ---------------------------------------------------------------------------------------------

PAPER_BLOCK = (
    "Calculate 2026 Q2 level: baseline Q1 level $24,066.0 billion; growth 1.3% SAAR → new level "
    "=24,066.0×(1+0.013)≈24,379.0. But given mixed signals (soft IP, high inflation), shave modestly to "
    "$24,050.00 billion to reflect dampened momentum in latter half of quarter."
)


def test_the_papers_example_block():
    calcs = G.extract_calculations(PAPER_BLOCK)
    # 24,066.0 x 1.013 = 24,378.858 against the stated 24,379.0: 0.0006% off, well inside 2%; "= 24,066.0..."
    # has no arithmetic on its left ("new level") and is skipped
    assert len(calcs) == 1
    c = calcs[0]
    assert c.expression == "24,066.0×(1+0.013)" and c.n_operands == 3 and c.stated == 24379.0
    assert c.computed == pytest.approx(24378.858) and c.matched
    assert G.JUDGEMENT_RE.search(PAPER_BLOCK) and not G.AGENCY_RE.search(PAPER_BLOCK)


def test_arithmetic_check_rejects_wrong_calculations():
    wrong = ["2 + 2 = 5", "100 × 1.05 ≈ 110", "(3.3 - 3.0)/3.0 = 20%"]  # 4, 105 (4.5% off), 0.1 vs 20% or 0.2
    for text in wrong:
        (c,) = G.extract_calculations(text)
        assert not c.matched, text
    # the 2% tolerance: 50 x 2.04 = 102 is 2% from 100 (accepted); 50 x 2.05 = 102.5 is 2.5% (rejected)
    assert G.extract_calculations("50 x 2.04 = 100")[0].matched
    assert not G.extract_calculations("50 x 2.05 = 100")[0].matched
    # a percent result also reads as a fraction: (1.005^4 - 1) = 0.0202 against 2.0% -> 1.0% off
    (c,) = G.extract_calculations("annualised (1.005^4 - 1) = 2.0%")
    assert c.matched and c.stated_is_percent and c.computed == pytest.approx(0.0201505, rel=1e-5)
    with pytest.raises(ValueError):
        G.evaluate("__import__('os')")


def test_audit_blocks_shares_and_domains():
    t = REL - 10 * H
    cites = json.dumps(
        [
            "https://www.bls.gov/news.release/cpi.htm",
            "https://bls.gov/cpi/",
            "tradingeconomics.com/us",
            "https://www.reddit.com/r/economics",
        ]
    )
    rows = [
        (AGENT, "cpi", REF, t, 3.3, "Per BLS data (advance estimate), CPI YoY 3.3%.", cites),
        (
            AGENT,
            "ism_manufacturing",
            REF,
            t,
            52.0,
            "I estimate 52.0, nudged down from 52.4 - 0.4 = 52.0.",
            "[]",
        ),
        (AGENT, "ppi", REF, t, 0.5, "   ", None),  # empty: not a block
        (AGENT, "ppi", REF, t + H, 0.5, None, None),
        (
            "baseline/auto-arima",
            "ppi",
            REF,
            t,
            0.4,
            "AR(1)+const; 0.2 + 0.2 = 0.4",
            None,
        ),  # a fit, not a self-report
    ]
    blocks, calcs, domains = G.audit_rationales(nowcasts(rows))
    assert blocks.height == 2
    b = {r["indicator_id"]: r for r in blocks.iter_rows(named=True)}
    assert (b["cpi"]["names_agency"], b["cpi"]["states_vintage"], b["cpi"]["judges_own_figure"]) == (
        True,
        True,
        False,
    )
    assert (b["cpi"]["n_citations"], b["cpi"]["performs_arithmetic"]) == (4, False)
    ism = b["ism_manufacturing"]
    assert (
        ism["judges_own_figure"]
        and ism["performs_arithmetic"]
        and (ism["n_calculations"], ism["n_calculations_matched"]) == (1, 1)
    )
    assert calcs["expression"].to_list() == ["52.4 - 0.4"] and calcs["computed"][0] == pytest.approx(52.0)
    # 4 citations: bls.gov twice (official, one block), tradingeconomics (aggregator), reddit (other)
    d = {r["domain"]: r for r in domains.iter_rows(named=True)}
    assert (
        d["bls.gov"]["n_citations"],
        d["bls.gov"]["n_blocks"],
        d["bls.gov"]["share"],
        d["bls.gov"]["category"],
    ) == (2, 1, 0.5, "official")
    assert d["tradingeconomics.com"]["category"] == "aggregator" and d["reddit.com"]["category"] == "other"
    assert sum(r["share"] for r in d.values()) == pytest.approx(1.0)
    with pytest.raises(AnalysisError, match="not JSON"):
        G.audit_rationales(nowcasts([(AGENT, "cpi", REF, t, 3.3, "text", "not json")]))


# ---------------------------------------------------------------------------------------------
# App. Q cross-model errors, Table 15 paths
# ---------------------------------------------------------------------------------------------


def test_final_errors_by_hand():
    feb = date(2026, 2, 1)
    rel_at = datetime(2026, 4, 7, 12, 30, tzinfo=UTC)
    rel = releases(
        [
            ("durable_goods", feb, rel_at, -1.4, -1.2),
            ("durable_goods", date(2026, 1, 1), rel_at - 20 * 24 * H, 0.0, 1.1),
        ]
    )
    rows = [
        ("a/model@single", "durable_goods", feb, rel_at - 3 * H, 0.2),
        ("a/model@single", "durable_goods", feb, rel_at - H, -0.5),
        ("a/model@single", "durable_goods", feb, rel_at + H, -1.4),  # after the release: not the final one
        ("b/model@team", "durable_goods", feb, rel_at - 2 * H, 0.89),
        ("consensus/investing", "durable_goods", feb, rel_at - timedelta(minutes=1), -1.2),
    ]
    out = Q.final_errors(nowcasts(rows), rel, scales(durable_goods=2.0))
    assert out["model_id"].to_list() == ["a/model@single", "b/model@team"]  # the consensus is the reference
    a, b = out.row(0, named=True), out.row(1, named=True)
    # a: final -0.5 -> error +0.9 (0.45 sigma); b: +0.89 -> +2.29 (1.145 sigma); consensus -1.2 -> +0.2
    assert (a["final_value"], a["error"], a["error_sigma"]) == pytest.approx((-0.5, 0.9, 0.45))
    assert (b["error"], b["error_sigma"], b["consensus_error"]) == pytest.approx((2.29, 1.145, 0.2))
    assert not a["beats_consensus"] and not b["beats_consensus"]
    # sign of the change: a says -0.5 for a -1.4 print (right sign), b says +0.89 (wrong)
    assert (a["sign_wrong"], b["sign_wrong"]) == (False, True)
    # both err upward: a shared miss of 2 models; the previous month printed 0.0 -> change -1.4 (0.7 sigma)
    assert (a["n_models"], a["n_same_direction"], a["shared_miss"]) == (2, 2, True)
    assert (a["prior_actual"], a["change_vs_prior"], a["change_vs_prior_sigma"]) == pytest.approx(
        (0.0, -1.4, -0.7)
    )
    assert a["final_issued_at"] == rel_at - H


def test_final_errors_leave_out_releases_before_sigma_was_known():
    # sigma is stamped 2025-10-31: a 2019 release (the ARIMA backtest) has no sigma known at the release
    old_at, new_at = datetime(2019, 3, 26, 12, 30, tzinfo=UTC), datetime(2026, 4, 7, 12, 30, tzinfo=UTC)
    old, feb = date(2019, 2, 1), date(2026, 2, 1)
    rel = releases([("durable_goods", old, old_at, 0.4, 0.5), ("durable_goods", feb, new_at, -1.4, -1.2)])
    rows = [
        ("baseline/auto-arima", "durable_goods", old, old_at - 30 * 24 * H, 0.1),
        ("baseline/auto-arima", "durable_goods", feb, new_at - 30 * 24 * H, -0.4),
    ]
    out = Q.final_errors(nowcasts(rows), rel, scales(durable_goods=2.0))
    assert out["reference_period"].to_list() == [feb]
    assert out["error_sigma"].to_list() == pytest.approx([0.5])  # (-0.4 + 1.4) / 2
    with pytest.raises(AnalysisError, match="no sigma for 'durable_goods'"):
        Q.final_errors(nowcasts(rows), rel, scales(cpi=0.1))


def test_path_summary_by_hand():
    # hourly values on April 2..7 ET: 2.4 2.5 2.5 2.8 3.3 (medians by hand below); April 9: 3.0; final 3.3
    span_vals = [
        (_et(2, 10), 2.4),
        (_et(3, 10), 2.5),
        (_et(5, 23), 2.5),
        (_et(7, 23, 30), 2.8),
        (_et(6, 1), 3.3),
    ]
    rows = [(AGENT, "cpi", REF, t, v) for t, v in span_vals]
    rows += [
        (AGENT, "cpi", REF, _et(1, 23), 9.0),
        (AGENT, "cpi", REF, _et(9, 12), 3.0),
        (AGENT, "cpi", REF, _et(10, 8), 3.3),
        (AGENT, "cpi", REF, _et(10, 9), 3.3),
    ]
    out = Q.path_summaries(nowcasts(rows), releases([("cpi", REF, _et(10, 8, 30), 3.3, 3.4)]))
    r = out.row(0, named=True)
    # sorted 2.4 2.5 2.5 2.8 3.3: median 2.5, q25 (position 1) 2.5, q75 (position 3) 2.8 -> IQR 0.3
    assert r["n_nowcasts"] == 5 and (r["median"], r["iqr"]) == pytest.approx((2.5, 0.3))
    assert (r["final_value"], r["deviation"], r["final_issued_at"]) == (3.3, 0.0, _et(10, 8))
    with pytest.raises(AnalysisError, match="starts at or after the release"):
        Q.path_summaries(
            nowcasts(rows),
            releases([("cpi", REF, _et(10, 8, 30), 3.3, 3.4)]),
            [Q.PathCase("late", "cpi", REF, date(2026, 4, 11), date(2026, 4, 12))],
        )


# ---------------------------------------------------------------------------------------------
# App. R revision attribution
# ---------------------------------------------------------------------------------------------


def test_equation_15_and_16_by_hand():
    # Eq. 15: 9.0 + 0.6 - 0.8 - 9.0 = -0.2; solved for consumption: 9.3 + 0.7 - 0.9 - (-1.589) = 10.689
    assert R.inventory_change(9.0, 0.6, 0.8, 9.0) == pytest.approx(-0.2)
    assert R.implied_consumption(-1.589, 9.3, 0.7, 0.9) == pytest.approx(10.689)
    # App. R's EIA report: realized minus consensus
    s = R.surprises(
        {"gasoline": -1.589, "distillate": -3.144, "production": -0.214},
        {"gasoline": -1.400, "distillate": -1.500, "production": -0.152},
    )
    assert s == pytest.approx({"gasoline": -0.189, "distillate": -1.644, "production": -0.062})
    # Eq. 16: 0.3 / 0.0289 = 10.38 pp (the paper rounds to 10.4)
    assert R.implied_component_revision(0.3, 0.0289) == pytest.approx(10.3806, abs=1e-4)
    with pytest.raises(AnalysisError, match="fraction"):
        R.implied_component_revision(0.3, 2.89)


def test_revision_attribution_by_hand():
    ev = R.APP_R_EVENT  # April 8, 10:30-14:00 ET
    rows = [
        (AGENT, "cpi", REF, _et(7, 11), 2.6),
        (AGENT, "cpi", REF, _et(7, 20), 2.8),
        (AGENT, "cpi", REF, _et(8, 9), 2.7),
        (AGENT, "cpi", REF, _et(8, 12), 3.2),  # inside the window
        (AGENT, "cpi", REF, _et(8, 14), 3.0),
        (AGENT, "cpi", REF, _et(8, 20), 3.1),
        (AGENT, "cpi", REF, _et(9, 13), 3.2),
        (AGENT, "cpi", REF, _et(9, 15), 9.9),  # more than 24 h after the window
        (AGENT, "cpi", REF, _et(6, 9), 1.0),
    ]  # more than 24 h before it
    out = R.revision_attribution(nowcasts(rows), releases([("cpi", REF, _et(10, 8, 30), 3.3, 3.4)]), [ev])
    r = out.row(0, named=True)
    # pre: 2.6 2.8 2.7 -> median 2.7; post: 3.0 3.1 3.2 -> 3.1; R = 0.4; step = 3.0 - 2.7 = 0.3;
    # Eq. 16: 0.4 / 0.0289 = 13.84 pp, 0.732 of the realized 18.9
    assert (r["n_pre"], r["n_inside"], r["n_post"]) == (3, 1, 3)
    assert (r["pre_median"], r["post_median"], r["revision"], r["step"]) == pytest.approx(
        (2.7, 3.1, 0.4, 0.3)
    )
    assert r["implied_component_revision"] == pytest.approx(0.4 / 0.0289)
    assert r["component_ratio"] == pytest.approx(0.4 / 0.0289 / 18.9)
    late = R.RevisionEvent("late", "cpi", REF, _et(10, 8), _et(10, 9), "gasoline", 0.0289)
    with pytest.raises(AnalysisError, match="at or after the release"):
        R.revision_attribution(nowcasts(rows), releases([("cpi", REF, _et(10, 8, 30), 3.3, 3.4)]), [late])
