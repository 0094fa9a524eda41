"""Scoring assets on the real snapshot through `leaf-live run`: frozen market betas (Table 9, versioned by
fit_id), the two leaderboards (historical backtest, live window), the consensus at 0, independent numpy
recomputations of Eq. 8 (targets r_g and Q_g, overall and by theme) and of Eq. 13 from the raw price CSV."""

from __future__ import annotations

import csv
import math
import re
import shutil
from datetime import datetime, timezone

import numpy as np
import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.macro_scoring import MACRO_SCORING_CHECKS, market_betas
from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, get_indicator
from leaf_live.macro.scoring import evaluation as E
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring.leaderboard import leaderboard_rows
from resources import default_resources

UTC = timezone.utc
GPT5 = "openai/gpt-5-search-api@single"
CPI_GRID = "livemacroeval/Results/polymarket_return/polymarket/cpi-mar-polymarket-price-data.csv"
SPANS = {"backtest": ("2018-01", "2025-10"), "live": ("2025-11", "2026-05")}


@pytest.fixture(scope="module")
def built(main_run):
    return main_run


@pytest.fixture(scope="module")
def con(built):
    c = storage.connect_read_only(built["db"])
    yield c
    c.close()


def _fit_id(con, name: str) -> str:
    return con.execute("SELECT fit_id FROM market_beta_fits WHERE fit_name = ? ORDER BY confirmed_at DESC LIMIT 1",
                       [name]).fetchall()[0][0]


def _scores(con, where: str = "TRUE") -> pl.DataFrame:
    return storage.read_table(con, "livemacro_scores", where)


# ---------------------------------------------------------------------------------------------
# market_betas
# ---------------------------------------------------------------------------------------------


def test_full_sample_fit_is_table_9_and_the_other_fits_follow_their_windows(con):
    full, nocov, bt = (_fit_id(con, n) for n in ("full", "no_covid", "backtest"))
    rows = storage.read_table(con, "market_betas", "fit_id = ?", [full]).sort("position")
    assert rows["indicator_id"].to_list() == list(INDICATOR_IDS)
    assert np.round(rows["beta"].to_numpy() * 1e4, 3).tolist() == [get_indicator(i).beta_table9 for i in INDICATOR_IDS]
    se4, t9 = rows["se"].to_numpy() * 1e4, np.array([get_indicator(i).se_table9 for i in INDICATOR_IDS])
    assert np.round(se4, 3).tolist() == t9.tolist()  # all 16 (HC1 with the integer df, see betas.hc1_covariance)
    r0 = rows.row(0, named=True)
    assert round(r0["lambda"], 2) == 21.54 and r0["lambda_source"] == "cv" and r0["cv_loss"] == "huber"
    assert r0["n_events"] == 2163 and r0["iterations"] == 23 and not r0["covid_excluded"]
    # K.3: the COVID-excluded refit drops 120 events and reuses the full-sample lambda
    n = storage.read_table(con, "market_betas", "fit_id = ? AND position = 0", [nocov]).row(0, named=True)
    assert (n["n_covid_dropped"], n["n_events"], n["lambda_source"], n["lambda"]) == (120, 2043, "fixed", r0["lambda"])
    # the backtest fit sees nothing released after the fit cutoff (2017-12, New York time) and picks lambda by CV
    b = storage.read_table(con, "market_betas", "fit_id = ? AND position = 0", [bt]).row(0, named=True)
    assert b["window_end"] < datetime(2018, 1, 1, 5, tzinfo=UTC) and b["lambda_source"] == "cv"
    used = con.execute("SELECT count(*) FROM surprise_events WHERE partition_key <= '2017-12' AND r_g IS NOT NULL").fetchall()[0][0]
    assert b["n_events"] == used
    # V_beta rows rebuild a symmetric matrix whose diagonal is SE^2
    V = np.array(rows["cov_row"].to_list())
    assert np.allclose(V, V.T, rtol=0, atol=1e-20) and np.allclose(np.sqrt(np.diag(V)), rows["se"].to_numpy(), rtol=1e-12)


def _betas_state(db) -> tuple[pl.DataFrame, pl.DataFrame]:
    c = storage.connect_read_only(db)
    try:
        b = storage.read_table(c, "market_betas").sort("fit_id", "position")
        f = storage.read_table(c, "market_beta_fits").sort("fit_name", "fit_id").drop("confirmed_at")
        return b, f
    finally:
        c.close()


def test_rematerializing_market_betas_never_rewrites_a_stored_fit(built, snapshot_dir, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copy(built["db"], db)
    before, reg_before = _betas_state(db)
    res = materialize([market_betas], resources=default_resources(db=db, snapshot=snapshot_dir),
                      instance=DagsterInstance.ephemeral())
    assert res.success
    after, reg_after = _betas_state(db)
    assert after.equals(before) and reg_after.equals(reg_before)  # same fit_ids, same rows, same registration
    # a new cutoff adds a fit under the same name; every stored row stays as it was
    cfg = {"ops": {"market_betas": {"config": {"fits": [{"name": "backtest", "last_month": "2016-12"}]}}}}
    res = materialize([market_betas], resources=default_resources(db=db, snapshot=snapshot_dir),
                      instance=DagsterInstance.ephemeral(), run_config=cfg)
    assert res.success
    after, reg = _betas_state(db)
    old_ids = set(before["fit_id"].unique().to_list())
    assert after.filter(pl.col("fit_id").is_in(list(old_ids))).equals(before)
    new_ids = set(after["fit_id"].unique().to_list()) - old_ids
    assert len(new_ids) == 1 and after.height == before.height + 16
    c = storage.connect_read_only(db)
    try:
        assert _fit_id(c, "backtest") == next(iter(new_ids))
        assert c.execute("SELECT count(*) FROM market_beta_fits WHERE fit_name = 'backtest'").fetchall()[0][0] == 2
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------
# leaderboards
# ---------------------------------------------------------------------------------------------


def test_consensus_scores_exactly_zero_in_both_leaderboards(con):
    for pk, fit in (("backtest", "backtest"), ("live", "full")):
        for target in ("return", "shock"):
            rows = leaderboard_rows(_scores(con), partition_key=pk, fit_id=_fit_id(con, fit), target=target)
            cons = rows.filter(pl.col("model_id") == "consensus/investing")
            assert cons.height == 5  # overall + 4 themes
            assert cons["score"].to_list() == [0.0] * 5
            assert cons["boot_ci90_lo"].to_list() == [0.0] * 5 and cons["boot_ci90_hi"].to_list() == [0.0] * 5
            assert (cons["n_events_own"] == cons["n_events"]).all()  # the consensus "nowcasts" every release


def test_backtest_leaderboard_models_intervals_and_coverage(con):
    bt = _fit_id(con, "backtest")
    s = _scores(con, "partition_key = 'backtest'")
    assert set(s["fit_id"].unique().to_list()) == {bt}
    # every model with a valid pre-release nowcast for a release in 2018-01 .. 2025-10 is on the board
    expected = {r[0] for r in con.execute(
        "SELECT DISTINCT n.model_id FROM nowcasts n JOIN releases r USING (indicator_id, reference_period) "
        "WHERE n.valid AND NOT n.after_release AND n.issued_at < r.release_at AND r.consensus IS NOT NULL "
        "AND r.partition_key BETWEEN '2018-01' AND '2025-10'").fetchall()}
    assert {"consensus/investing", "fed/gdpnow", "fed/cleveland-cpi"} <= expected
    assert set(s["model_id"].unique().to_list()) == expected
    ov = s.filter((pl.col("scope") == "overall") & (pl.col("horizon") == "terminal"))
    usable = con.execute("SELECT count(*) FROM surprise_events WHERE partition_key BETWEEN '2018-01' AND '2025-10' "
                         "AND r_g IS NOT NULL").fetchall()[0][0]
    assert (ov["n_events"] == usable).all() and usable == 1110
    with_ci = s.filter(pl.col("boot_ci90_lo").is_not_null())
    assert with_ci.height == s.height and (with_ci["boot_draws"] == 10_000).all()
    assert ((with_ci["boot_ci90_lo"] <= with_ci["score"]) & (with_ci["score"] <= with_ci["boot_ci90_hi"])).all()
    assert ((with_ci["boot_ci95_lo"] <= with_ci["boot_ci90_lo"]) & (with_ci["boot_ci90_hi"] <= with_ci["boot_ci95_hi"])).all()
    # GDPNow's own events: GDP advance releases of the span with a GDPNow estimate published before them
    own = con.execute(
        "SELECT count(DISTINCT r.release_at) FROM releases r JOIN surprise_events e USING (release_at) WHERE "
        "r.indicator_id = 'real_gdp_advance' AND r.partition_key BETWEEN '2018-01' AND '2025-10' AND e.r_g IS NOT NULL "
        "AND EXISTS (SELECT 1 FROM nowcasts n WHERE n.model_id = 'fed/gdpnow' AND n.valid AND n.indicator_id = r.indicator_id "
        "AND n.reference_period = r.reference_period AND n.issued_at < r.release_at)").fetchall()[0][0]
    g = ov.filter((pl.col("model_id") == "fed/gdpnow") & (pl.col("target") == "return"))
    assert g["n_events_own"][0] == own > 20


def _independent_score(con, model: str, span: tuple[str, str], fit_id: str, target: str, theme: str | None = None) -> float:
    """Eq. 8 / Eq. 17 straight from the tables with numpy: latest valid nowcast strictly before each release
    (ties at that instant averaged), S_hat = (nowcast - consensus)/sigma, other releases S_hat = 0, events with
    a usable r_g."""
    ids = [i for i in INDICATOR_IDS if theme is None or get_indicator(i).theme == theme]
    beta = dict(con.execute("SELECT indicator_id, beta FROM market_betas WHERE fit_id = ?", [fit_id]).fetchall())
    b = np.array([beta[i] for i in ids])
    ev = con.execute(
        "SELECT release_at, r_g, " + ", ".join(f"s_{i}" for i in ids) + " FROM surprise_events "
        "WHERE partition_key BETWEEN ? AND ? AND r_g IS NOT NULL ORDER BY release_at", list(span)).fetchall()
    s_hat = con.execute(
        "SELECT r.release_at, r.indicator_id, (n.value - r.consensus) / s.sigma FROM releases r "
        "JOIN surprise_scales s USING (indicator_id) JOIN nowcasts n USING (indicator_id, reference_period) "
        "WHERE n.model_id = ? AND n.valid AND NOT n.after_release AND n.issued_at < r.release_at "
        "AND r.consensus IS NOT NULL AND r.partition_key BETWEEN ? AND ? "
        "QUALIFY n.issued_at = max(n.issued_at) OVER (PARTITION BY r.indicator_id, r.release_at)", [model, *span]).fetchall()
    ties: dict = {}
    for t, i, v in s_hat:  # rows tied at the latest instant are averaged
        ties.setdefault((t, i), []).append(v)
    hat = {k: float(np.mean(v)) for k, v in ties.items()}
    released = set(con.execute("SELECT release_at, indicator_id FROM releases WHERE consensus IS NOT NULL "
                               "AND partition_key BETWEEN ? AND ?", list(span)).fetchall())
    rows = []
    for t, r, *S in ev:
        S = np.array(S)
        Sh = np.array([hat.get((t, i), 0.0) for i in ids])
        if theme is not None and not any((t, i) in released for i in ids):
            continue  # a theme scores only events releasing one of its fields
        rows.append((r, S @ b, Sh @ b))
    y = np.array([x[0] if target == "return" else x[1] for x in rows])
    q = np.array([x[2] for x in rows])
    ss_c, ss_m = float(y @ y), float((y - q) @ (y - q))
    return (ss_c - ss_m) / (ss_c + ss_m)


def test_live_gpt5_scores_equal_an_independent_recomputation(con):
    full = _fit_id(con, "full")
    s = _scores(con, f"partition_key = 'live' AND model_id = '{GPT5}' AND fit_id = '{full}' AND horizon = 'terminal'")
    got = {(r["scope"], r["target"]): r["score"] for r in s.iter_rows(named=True)}
    for target in ("shock", "return"):
        want = _independent_score(con, GPT5, SPANS["live"], full, target)
        assert got[("overall", target)] == pytest.approx(want, rel=1e-10, abs=1e-14)
    # theme scores use only their theme's events and fields
    for theme in ("demand_inflation", "supply_production"):
        want = _independent_score(con, GPT5, SPANS["live"], full, "shock", theme=theme)
        assert got[(theme, "shock")] == pytest.approx(want, rel=1e-10, abs=1e-14)
    assert got[("overall", "shock")] < 0  # GPT-5 trails the consensus on the realized shock over the live window
    ov = s.filter((pl.col("scope") == "overall") & (pl.col("target") == "shock")).row(0, named=True)
    assert ov["n_events"] == 64 and ov["n_events_own"] == 16
    assert L.score_from_kappa_phi(ov["kappa"], ov["phi"]) == pytest.approx(ov["score"], abs=1e-12)  # Eq. 19
    assert E.themes_partition_releases(_scores(con)).height == 0


def test_backtest_gdpnow_score_equals_an_independent_recomputation(con):
    bt = _fit_id(con, "backtest")
    got = _scores(con, f"partition_key = 'backtest' AND model_id = 'fed/gdpnow' AND scope = 'overall' "
                       f"AND target = 'return' AND horizon = 'terminal'")["score"][0]
    assert got == pytest.approx(_independent_score(con, "fed/gdpnow", SPANS["backtest"], bt, "return"), rel=1e-10)


def test_live_window_event_coverage_is_counted(con):
    d = storage.read_table(con, "score_decompositions", "partition_key = 'live' AND decomposition = 'event_coverage'")
    cov = {m: int(v) for m, v in zip(d["metric"], d["value"])}
    ts = con.execute("SELECT count(DISTINCT release_at), count(DISTINCT release_at) FILTER (WHERE consensus IS NOT NULL) "
                     "FROM releases WHERE partition_key >= '2025-11'").fetchall()[0]
    assert (cov["n_release_timestamps"], cov["n_events"]) == ts == (72, 64)
    assert cov["n_timestamps_no_consensus"] == 8 and cov["n_events_no_usable_window"] == 0 and cov["n_events_scored"] == 64


def test_shapley_and_paired_decompositions(con):
    sh = storage.read_table(con, "score_decompositions", "decomposition = 'shapley'")
    sums = sh.group_by("partition_key", "model_id", "fit_id", "horizon", "scope", "target").agg(pl.col("value").sum())
    j = sums.join(_scores(con), on=["partition_key", "model_id", "fit_id", "horizon", "scope", "target"])
    assert j.height == sums.height > 0 and (j["value"] - j["score"]).abs().max() < 1e-12
    # paired bootstrap GPT-5 vs consensus on GPT-5's own events: delta = GPT-5's score there (consensus = 0)
    p = storage.read_table(con, "score_decompositions", "decomposition = 'paired_bootstrap' AND partition_key = 'live' "
                           f"AND target = 'shock' AND model_id = 'consensus/investing' AND comparator_model_id = '{GPT5}'")
    v = dict(zip(p["metric"], p["value"]))
    assert v["n_events"] == 16 and v["ci95_lo"] <= v["delta"] <= v["ci95_hi"] and v["delta"] > 0


# ---------------------------------------------------------------------------------------------
# LiveBetting
# ---------------------------------------------------------------------------------------------


def test_gpt5_march_cpi_livebetting_equals_eq13_from_the_raw_csv(con, snapshot_dir):
    release = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)  # March CPI, 08:30 EDT, printed 3.3% -> bucket >=2.8%
    nc = con.execute("SELECT issued_at, value FROM nowcasts WHERE model_id = ? AND indicator_id = 'cpi' AND valid "
                     "AND reference_period = DATE '2026-03-01' ORDER BY issued_at", [GPT5]).fetchall()
    with open(snapshot_dir / CPI_GRID, encoding="utf-8-sig") as fh:
        grid = list(csv.DictReader(fh))
    stakes = []
    for row in grid:
        t = datetime.fromtimestamp(int(row["Timestamp (UTC)"]), tz=UTC)
        latest = [v for ts, v in nc if ts <= t and ts < release]
        if t >= release or not latest:
            continue
        x = math.floor(latest[-1] * 10 + 0.5 + 1e-9) / 10  # the print has one decimal
        label = "≤2.0%" if x <= 2.0 else "≥2.8%" if x >= 2.8 else f"{x:.1f}%"
        if row[label]:
            stakes.append((label == "≥2.8%") / float(row[label]))
    want = sum(stakes) / len(stakes) - 1  # Eq. 13
    got = con.execute("SELECT final_return, n_bets, winning_bucket FROM livebetting_scores WHERE market_id = 'cpi-mar' "
                      "AND model_id = ? AND segment = 'total'", [GPT5]).fetchall()[0]
    assert got[1] == len(stakes) and got[2] == "≥2.8%"
    assert got[0] == pytest.approx(want, rel=1e-12)


def test_livebetting_covers_the_four_markets_and_the_fed_nowcasts(con):
    t = storage.read_table(con, "livebetting_scores", "segment = 'total'")
    have = set(zip(t["market_id"], t["model_id"]))
    assert {("cpi-mar", GPT5), ("cpi-mar", "fed/cleveland-cpi"), ("unemp-mar", GPT5), ("unemp-mar", "fed/chicago-churn"),
            ("gdp-q1-2026", GPT5), ("gdp-q1-2026", "fed/gdpnow"), ("gdp-q1-2026", "fed/nyfed-staff"),
            ("jobs-mar", GPT5)} <= have
    # segments add up to the total, and the consensus (issued 1 minute before the release) places no bet
    seg = storage.read_table(con, "livebetting_scores", "segment <> 'total'").group_by("market_id", "model_id").agg(
        pl.col("n_bets").sum(), pl.col("profit").sum())
    j = seg.join(t, on=["market_id", "model_id"], suffix="_t")
    assert (j["n_bets"] == j["n_bets_t"]).all() and (j["profit"] - j["profit_t"]).abs().max() < 1e-9
    cons = t.filter(pl.col("model_id") == "consensus/investing")
    assert cons.height == 4 and (cons["n_bets"] == 0).all() and (cons["n_no_nowcast"] == cons["n_hours"]).all()


# ---------------------------------------------------------------------------------------------
# the CLI output, the look-ahead guard, the singular-V bootstrap
# ---------------------------------------------------------------------------------------------


def test_leaf_live_run_prints_both_leaderboards_and_no_check_fails(built):
    out = built["out"]
    bt, live = out.index("== Historical backtest (backtest)"), out.index("== Live window (live)")
    assert bt < live
    assert "asset check FAILED" not in built["err"]
    m = re.search(r"asset checks: (\d+) passed, (\d+) failed", out)
    assert m and int(m.group(2)) == 0 and int(m.group(1)) >= len(MACRO_SCORING_CHECKS) + 3  # ours ran, with the others
    backtest, live_part = out[bt:live], out[live:]
    for model in ("consensus/investing", "fed/gdpnow", "fed/cleveland-cpi"):
        assert f"\n{model} " in backtest
    assert "Consensus-relative score (target Q_g" in live_part and "LiveBetting" in live_part
    line = next(ln for ln in live_part.splitlines() if ln.startswith(f"{GPT5}  overall"))
    assert line.split()[3].startswith("[")  # score, then the 90% interval
    assert "8 timestamps form no event" in live_part


def test_a_fit_that_is_not_frozen_before_the_span_is_refused(con):
    from assets.macro_scoring import current_fits

    fits = current_fits(con)
    mode = E.EvaluationMode("leaky", "2017-06", "2018-06", fits=("backtest",))
    with pytest.raises(L.ScoringError, match="frozen before the scored releases"):
        E.evaluate_mode(mode, releases=storage.read_table(con, "releases"), events=storage.read_table(con, "surprise_events"),
                        sigma=storage.read_table(con, "surprise_scales"), nowcasts=storage.empty_frame("nowcasts"), fits=fits)
    with pytest.raises(L.ScoringError, match="last_month"):
        E.EvaluationMode("bad", "2019-01", "2018-12")


def test_bootstrap_holds_a_zero_variance_beta_fixed():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4))
    V = np.zeros((5, 5))
    keep = [0, 1, 3, 4]
    V[np.ix_(keep, keep)] = A @ A.T + 0.1 * np.eye(4)
    beta = np.array([1.0, -2.0, 0.0, 3.0, 0.5])
    z = rng.standard_normal((200, 5))
    draws = L.beta_draws(beta, V, np.arange(5), z)
    assert (draws[:, 2] == 0.0).all()  # no surprise in the fit window: beta is an exact 0, never drawn
    Lk = np.linalg.cholesky(V[np.ix_(keep, keep)])
    assert np.allclose(draws[:, keep], beta[keep] + z[:, keep] @ Lk.T, rtol=0, atol=1e-14)
    full = A @ A.T + np.eye(4)  # a full-rank V gives exactly the plain Eq. 12 draw
    assert np.array_equal(L.beta_draws(beta[:4], full, np.arange(4), z[:, :4]),
                          beta[:4] + z[:, :4] @ np.linalg.cholesky(full).T)
