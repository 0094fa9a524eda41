"""LiveMacro Score family (LiveMacroEval App. K, M, N, P, S): hand-worked numbers, identities that must
hold (consensus = 0, Eq. 19, Shapley sums, theme isolation), paper Table 18, and the vectorized bootstrap,
Shapley and paired bootstrap against direct computations."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from scipy import stats

from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, THEMES, get_indicator
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring import surprises as SU
from leaf_live.macro.scoring.betas import MarketBetaFit
from leaf_live.macro.scoring.frames import (
    livemacro_scores_frame,
    paired_frame,
    score_model,
    shapley_frame,
    sizing_frame,
)

P = len(INDICATOR_IDS)
POS = {i: k for k, i in enumerate(INDICATOR_IDS)}
BETA = (
    np.array(
        [
            5.567,
            0.567,
            1.099,
            10.382,
            -11.240,
            -2.258,
            -3.372,
            2.581,
            6.095,
            4.937,
            -1.473,
            1.984,
            -1.501,
            0.470,
            4.063,
            2.441,
        ]
    )
    * 1e-4
)


def random_design(seed: int = 3, n: int = 40, zero_model: bool = False) -> L.LiveDesign:
    """n events, each releasing 1-3 random indicators, with realized and model-implied surprises."""
    rng = np.random.default_rng(seed)
    S = np.zeros((n, P))
    Sh = np.zeros((n, P))
    rel = np.zeros((n, P), dtype=bool)
    for g in range(n):
        k = rng.choice(P, size=rng.integers(1, 4), replace=False)
        rel[g, k] = True
        S[g, k] = rng.normal(size=k.size)
        Sh[g, k] = 0.0 if zero_model else 0.6 * S[g, k] + rng.normal(scale=0.8, size=k.size)
    r = S @ BETA + rng.normal(scale=1e-3, size=n)
    t = np.datetime64("2026-01-05T13:30") + np.arange(n).astype("timedelta64[D]")
    return L.LiveDesign(t.astype("datetime64[us]"), r, S, Sh, rel)


def cov_matrix(seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(P, P)) * 2e-5
    return A @ A.T + np.diag((np.abs(BETA) * 0.15 + 5e-5) ** 2)


# ---------------------------------------------------------------------------------------------
# hand-worked numbers
# ---------------------------------------------------------------------------------------------


def test_skill_score_by_hand():
    # SS_cons = 1 + 4 = 5, SS_model = 0.25 + 1 = 1.25 -> (5 - 1.25) / 6.25 = 0.6
    assert L.skill_score([1.0, -2.0], [0.5, -1.0]) == pytest.approx(0.6, abs=1e-15)
    assert L.skill_score([1.0, -2.0], [0.0, 0.0]) == 0.0
    assert L.skill_score([1.0, -2.0], [1.0, -2.0]) == 1.0


def test_directional_score_by_hand():
    r = np.array([1.0, -2.0, 3.0, -4.0]) * 1e-3
    r_hat = np.array([0.5, 1.0, 0.0, -1.0]) * 1e-3  # hit, miss, zero (no view: half a hit), hit
    assert L.directional_score(r, r_hat) == pytest.approx((1 + 0.5 * 3 + 4) / 10)
    # no view anywhere (the consensus) is the coin flip; Eq. 14 as printed where no prediction is 0
    assert L.directional_score(r, np.zeros(4)) == 0.5
    assert L.directional_score(r, np.array([1.0, 1.0, 1.0, 1.0])) == pytest.approx((1 + 3) / 10)


def test_kappa_phi_by_hand_and_eq19_identity():
    y, q = np.array([3.0, 4.0]), np.array([3.0, 0.0])
    kappa, phi = L.kappa_phi(y, q)
    assert kappa == pytest.approx(3 / 5) and phi == pytest.approx(9 / 15)
    assert L.score_from_kappa_phi(kappa, phi) == pytest.approx(L.skill_score(y, q), abs=1e-15)
    d = random_design()
    for scope in ("overall", *THEMES):
        for target in ("return", "shock"):
            ps = L.point_score(d, BETA, scope=scope, target=target)
            assert L.score_from_kappa_phi(ps.kappa, ps.phi) == pytest.approx(ps.score, abs=1e-12)
            assert (ps.score > 0) == (ps.kappa < 2 * ps.phi)  # Eq. 20


def test_table_18_scores_follow_from_kappa_phi_through_eq19():
    rows = [  # (kappa, phi, score), Table 18
        (0.34, -0.08, -0.080),
        (0.31, -0.03, -0.055),
        (0.10, 0.25, 0.020),
        (0.72, -0.59, -0.404),
        (0.65, -0.32, -0.297),
        (0.21, 0.19, 0.019),
    ]
    for kappa, phi, score in rows:
        # our Eq. 19 over the rounding box of the printed kappa and phi must reach the printed score
        box = [
            L.score_from_kappa_phi(k, f)
            for k in np.linspace(kappa - 0.005, kappa + 0.005, 41)
            for f in np.linspace(phi - 0.005, phi + 0.005, 41)
        ]
        assert min(box) - 0.0005 <= score <= max(box) + 0.0005, (kappa, phi, score)
        assert (score > 0) == (kappa < 2 * phi)
    # and the optimum of S.3: at kappa* = phi the score is phi^2 / (2 - phi^2)
    assert L.score_from_kappa_phi(0.25, 0.25) == pytest.approx(0.25**2 / (2 - 0.25**2))


def test_sampling_interval_by_hand():
    m, lo, hi = L.sampling_interval([0.1, 0.2, 0.3, 0.4, 0.5])
    half = stats.t.ppf(0.975, 4) * np.std([0.1, 0.2, 0.3, 0.4, 0.5], ddof=1) / math.sqrt(5)
    assert m == pytest.approx(0.3) and lo == pytest.approx(0.3 - half) and hi == pytest.approx(0.3 + half)
    assert half == pytest.approx(0.19632, abs=1e-5)


def test_sizing_discipline_by_hand():
    pr = pl.DataFrame({"s": [1.0, -1.0, 0.5, 2.0], "s_hat": [0.5, 0.5, -0.5, 1.0]})
    sd = L.sizing_discipline(pr)
    assert sd.mean_abs_s_hat == pytest.approx(0.625)
    assert sd.sign_accuracy == pytest.approx(0.5)
    assert sd.mean_abs_s == pytest.approx(1.125)
    assert sd.corr_abs_s_hat_abs_error == pytest.approx(
        np.corrcoef([0.5, 0.5, 0.5, 1.0], [0.5, 1.5, 1.0, 1.0])[0, 1]
    )


# ---------------------------------------------------------------------------------------------
# nowcast selection
# ---------------------------------------------------------------------------------------------


def _t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


RELEASES = pl.DataFrame(
    {
        "indicator_id": ["cpi"],
        "reference_period": [date(2026, 2, 1)],
        "release_at": [_t("2026-03-11 12:30")],  # 08:30 EDT
        "actual": [2.4],
        "consensus": [2.5],
    }
)
NOWCASTS = pl.DataFrame(
    {
        "model_id": ["m"] * 8,
        "indicator_id": ["cpi"] * 8,
        "reference_period": [date(2026, 2, 1)] * 8,
        "issued_at": [
            _t(x)
            for x in (
                "2026-03-11 12:30",
                "2026-03-11 12:00",
                "2026-03-11 11:00",
                "2026-03-11 10:00",
                "2026-03-10 16:00",
                "2026-03-10 15:00",
                "2026-03-10 03:00",
                "2026-03-01 00:00",
            )
        ],
        "value": [9.0, 9.9, 2.45, 2.3, 2.2, 2.6, 5.0, 2.0],
        "valid": [True, False, True, True, True, True, True, True],
    }
)
SIGMA = {"cpi": 0.1}


def _events(rel: pl.DataFrame, sigma: dict[str, float], ret: pl.DataFrame | None = None) -> pl.DataFrame:
    """The stored ``surprise_events`` of ``rel`` (built by the project's own App. K.1 step), which scoring
    reads the realized surprises from."""
    scales = pl.DataFrame(
        {
            "indicator_id": list(sigma),
            "sigma": list(sigma.values()),
            "available_at": [_t("2025-10-31 20:00")] * len(sigma),
        }
    )
    times = rel.select("release_at").unique()
    if ret is None:
        ret = times.with_columns(pl.lit(None, pl.Float64).alias("r_g"))
    returns = ret.with_columns(
        pl.lit(None, pl.Utf8).alias("contract_code"),
        pl.when(pl.col("r_g").is_null())
        .then(pl.lit("no_prices"))
        .otherwise(pl.lit("usable"))
        .alias("window_status"),
    )
    return SU.timestamp_group_events(rel, returns, scales)


EVENTS = _events(RELEASES, SIGMA)


def test_terminal_nowcast_is_latest_valid_strictly_before_release():
    pr = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS)
    row = pr.row(0, named=True)
    assert row["nowcast"] == 2.45 and row["nowcast_issued_at"] == _t("2026-03-11 11:00")
    assert row["s"] == pytest.approx(-1.0) and row["s_hat"] == pytest.approx(-0.5)
    # rows tied at the latest instant are averaged
    tie = pl.concat(
        [NOWCASTS, NOWCASTS.filter(pl.col("value") == 2.45).with_columns(pl.lit(2.55).alias("value"))]
    )
    assert L.implied_surprises(RELEASES, SIGMA, tie, events=EVENTS)["nowcast"][0] == pytest.approx(2.5)


def test_median_horizon_is_the_median_of_the_standing_forecast_over_the_new_york_day():
    pr = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_1d")
    # 2026-03-10 in New York (EDT): hour ends 01:00 .. 24:00 = 05:00 UTC .. 04:00 UTC next day. Standing
    # strictly before each: 01:00-11:00 EDT the 5.0 issued 2026-03-09 23:00 EDT (03:00 UTC, carried forward,
    # 11 hours); 12:00 EDT the 2.6 issued 15:00 UTC (1 hour); 13:00-24:00 EDT the 2.2 issued 16:00 UTC (12
    # hours)
    want = float(np.median([5.0] * 11 + [2.6] + [2.2] * 12))
    assert pr["n_nowcasts"][0] == 24 and pr["nowcast_issued_at"][0] == _t("2026-03-10 16:00")
    assert pr["nowcast"][0] == pytest.approx(want) and pr["s_hat"][0] == pytest.approx((want - 2.5) / 0.1)
    path = pl.DataFrame(
        {
            "indicator_id": ["cpi"] * 3,
            "reference_period": [date(2026, 2, 1)] * 3,
            "issued_at": [_t("2026-03-10 12:00"), _t("2026-03-11 01:00"), _t("2026-03-11 05:00")],
            "value": [2.6, 2.55, 2.7],
        }
    )
    pr2 = L.implied_surprises(
        RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_1d", consensus_path=path
    )
    assert pr2["consensus_used"][0] == 2.55  # 01:00 UTC = 21:00 EDT on the 10th; 05:00 UTC is the 11th
    assert pr2["s_hat"][0] == pytest.approx((want - 2.55) / 0.1) and pr2["s"][0] == pytest.approx(-1.0)
    # a forecast issued once and never revised stands at every later hour (carried forward):
    # 2026-03-01 00:00 UTC is 2026-02-28 19:00 EST, so it stands through every hour of 2026-03-01 .. 03-04
    for k in (7, 10):
        got = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon=f"median_{k}d")
        assert (got["nowcast"][0], got["n_nowcasts"][0]) == (2.0, 24)
    # on 2026-02-28 it stands from the end of the 20:00 hour (EST) on: the hours ending 20:00 .. 24:00
    eleven = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_11d")
    assert (eleven["nowcast"][0], eleven["n_nowcasts"][0]) == (2.0, 5)
    twelve = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_12d")
    assert twelve["nowcast"][0] is None and twelve["n_nowcasts"][0] == 0 and twelve["s_hat"][0] is None
    # the spring-forward day (2026-03-08 in New York) has 23 hours
    three = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_3d")
    assert (three["nowcast"][0], three["n_nowcasts"][0]) == (2.0, 23)


def test_single_shot_forecaster_is_horizon_invariant():
    one = NOWCASTS.filter(pl.col("issued_at") == _t("2026-03-01 00:00"))
    terminal = L.implied_surprises(RELEASES, SIGMA, one, events=EVENTS)
    assert terminal["s_hat"][0] == pytest.approx((2.0 - 2.5) / 0.1)
    for h in ("median_1d", "median_3d", "median_7d"):
        assert (
            L.implied_surprises(RELEASES, SIGMA, one, events=EVENTS, horizon=h)["s_hat"][0]
            == terminal["s_hat"][0]
        )
    reps = L.sampling_surprises(RELEASES, SIGMA, one, events=EVENTS, k=5)
    assert [r["s_hat"][0] for r in reps] == [terminal["s_hat"][0]] * 5


def test_sampling_replicates_are_the_forecast_standing_0_to_4_hours_before_the_release():
    reps = L.sampling_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, k=5)
    # release 12:30 UTC; standing strictly before 12:30, 11:30, 10:30, 09:30, 08:30: the 12:00 row is invalid,
    # so the 11:00 nowcast stands at 12:30 and 11:30; before 09:30 the latest is 2026-03-10 16:00 (2.2)
    assert [r["nowcast"][0] for r in reps] == [2.45, 2.45, 2.3, 2.2, 2.2]
    assert [r["nowcast_issued_at"][0] for r in reps][:3] == [_t("2026-03-11 11:00")] * 2 + [
        _t("2026-03-11 10:00")
    ]
    assert all(r["consensus_used"][0] == 2.5 for r in reps)
    # an hourly forecaster without gaps: replicate j is its (j+1)-th most recent nowcast (K.3)
    hourly = pl.DataFrame(
        {
            "indicator_id": ["cpi"] * 4,
            "reference_period": [date(2026, 2, 1)] * 4,
            "issued_at": [_t(f"2026-03-11 {h:02d}:00") for h in (9, 10, 11, 12)],
            "value": [2.1, 2.2, 2.3, 2.4],
        }
    )
    assert [r["nowcast"][0] for r in L.sampling_surprises(RELEASES, SIGMA, hourly, events=EVENTS, k=4)] == [
        2.4,
        2.3,
        2.2,
        2.1,
    ]


def test_realized_surprise_is_read_from_the_stored_events():
    # EVENTS holds S = (2.4 - 2.5) / 0.1; a stored value that differs is what the score uses
    assert EVENTS["s_cpi"][0] == pytest.approx(-1.0)
    stored = EVENTS.with_columns(pl.lit(-3.0).alias("s_cpi"))
    pr = L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=stored)
    assert pr["s"][0] == -3.0 and pr["s_hat"][0] == pytest.approx(-0.5)  # S_hat still from the nowcast and C
    with pytest.raises(L.ScoringError, match="no stored surprise event for cpi released at 2026-03-11 12:30"):
        L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS.clear())


def test_selection_errors_name_the_field():
    with pytest.raises(L.ScoringError, match="horizon"):
        L.implied_surprises(RELEASES, SIGMA, NOWCASTS, events=EVENTS, horizon="median_day")
    with pytest.raises(L.ScoringError, match="no sigma for indicator_id=cpi"):
        L.implied_surprises(RELEASES, {"ppi": 1.0}, NOWCASTS, events=EVENTS)
    with pytest.raises(L.ScoringError, match="sigma must be finite and > 0"):
        L.implied_surprises(RELEASES, {"cpi": 0.0}, NOWCASTS, events=EVENTS)
    with pytest.raises(L.ScoringError, match="mixes models"):
        L.implied_surprises(
            RELEASES,
            SIGMA,
            pl.concat([NOWCASTS, NOWCASTS.with_columns(pl.lit("other").alias("model_id"))]),
            events=EVENTS,
        )
    with pytest.raises(L.ScoringError, match="tz-aware"):
        L.implied_surprises(
            RELEASES,
            SIGMA,
            NOWCASTS.with_columns(pl.col("issued_at").dt.replace_time_zone(None)),
            events=EVENTS,
        )
    # nanosecond timestamps in another zone are the same instants
    ns = NOWCASTS.with_columns(
        pl.col("issued_at").cast(pl.Datetime("ns", "UTC")).dt.convert_time_zone("Asia/Tokyo")
    )
    assert L.implied_surprises(RELEASES, SIGMA, ns, events=EVENTS)["nowcast"][0] == 2.45
    with pytest.raises(L.ScoringError, match="NULL consensus"):
        L.implied_surprises(
            RELEASES.with_columns(pl.lit(None, pl.Float64).alias("consensus")), SIGMA, NOWCASTS, events=EVENTS
        )


# ---------------------------------------------------------------------------------------------
# consensus = 0 by construction
# ---------------------------------------------------------------------------------------------


def _panel(n_events: int = 12, seed: int = 11) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    rng = np.random.default_rng(seed)
    rel, ret = [], []
    t0 = _t("2026-01-06 13:30")
    for g in range(n_events):
        t = t0 + timedelta(days=g)
        for i in rng.choice(INDICATOR_IDS, size=rng.integers(1, 3), replace=False):
            c = float(rng.normal(50, 5))
            rel.append(
                {
                    "indicator_id": str(i),
                    "reference_period": date(2025, 12, 1),
                    "release_at": t,
                    "actual": c + float(rng.normal()),
                    "consensus": c,
                }
            )
        ret.append({"release_at": t, "r_g": float(rng.normal(scale=2e-3))})
    return pl.DataFrame(rel), pl.DataFrame(ret), {i: 1.0 + k / 10 for k, i in enumerate(INDICATOR_IDS)}


def test_consensus_scores_exactly_zero():
    rel, ret, sig = _panel()
    cons = rel.select(
        "indicator_id",
        "reference_period",
        pl.col("release_at").alias("issued_at"),
        pl.col("consensus").alias("value"),
    ).with_columns(pl.col("issued_at") - pl.duration(hours=2))
    pr = L.implied_surprises(rel, sig, cons, events=_events(rel, sig, ret))
    assert pr["s_hat"].to_list() == [0.0] * rel.height
    d = L.live_design(pr, ret)
    fit_cov = cov_matrix()
    for scope in ("overall", *THEMES):
        for target in ("return", "shock"):
            ps = L.point_score(d, BETA, scope=scope, target=target)
            if ps.n_events == 0:
                continue
            assert ps.score == 0.0 and ps.kappa == 0.0 and ps.lmd == 0.5  # no view: the coin flip
            boot = L.bootstrap_scores(d, BETA, fit_cov, scope=scope, target=target, n_draws=500)
            assert np.all(boot.scores == 0.0)
    _, phi = L.shapley_allocation(d, BETA)
    assert np.all(phi == 0.0)
    pb = L.paired_event_bootstrap(d, d, BETA, n_draws=200)
    assert pb.delta == 0.0 and np.all(pb.draws == 0.0)


# ---------------------------------------------------------------------------------------------
# themes, Shapley, bootstraps
# ---------------------------------------------------------------------------------------------


def test_theme_scores_use_only_their_themes_events_and_fields():
    d = random_design(seed=7, n=60)
    for theme in THEMES:
        idx = np.array([POS[i] for i in INDICATOR_IDS if get_indicator(i).theme == theme])
        rows = d.released[:, idx].any(axis=1)
        ps = L.point_score(d, BETA, scope=theme)
        assert ps.n_events == rows.sum() and ps.n_releases == d.released[:, idx].sum()
        expected = L.skill_score(d.r[rows], d.S_hat[rows][:, idx] @ BETA[idx])
        assert ps.score == pytest.approx(expected, abs=1e-15)
        # change everything outside the theme: other fields' implied surprises, other events' returns
        other = np.setdiff1d(np.arange(P), idx)
        Sh = d.S_hat.copy()
        Sh[:, other] += 7.0
        r = d.r.copy()
        r[~rows] *= -3.0
        d2 = L.LiveDesign(d.release_at, r, d.S, Sh, d.released)
        assert L.point_score(d2, BETA, scope=theme).score == ps.score
        assert L.point_score(d2, BETA, scope="overall").score != L.point_score(d, BETA, scope="overall").score


def test_shapley_contributions_sum_to_the_score_and_match_permutations():
    d = random_design(seed=9, n=50)
    for target in ("return", "shock"):
        idx, phi = L.shapley_allocation(d, BETA, target=target)
        assert idx.tolist() == list(range(P))
        assert phi.sum() == pytest.approx(L.point_score(d, BETA, target=target).score, abs=1e-12)
    # housing: 4 players, Shapley by averaging marginal contributions over all 24 orderings, scored directly
    idx, phi = L.shapley_allocation(d, BETA, scope="housing")
    sd, _ = L.scoped_design(d, BETA, "housing")

    def value(players: set[int]) -> float:
        cols = [c for c in idx if c in players]
        return L.skill_score(sd.r, sd.S_hat[:, cols] @ BETA[cols])

    ref = np.zeros(idx.size)
    for order in itertools.permutations(idx.tolist()):
        have: set[int] = set()
        for c in order:
            ref[idx.tolist().index(c)] += value(have | {c}) - value(have)
            have.add(c)
    np.testing.assert_allclose(phi, ref / 24, atol=1e-12)
    # a player whose implied surprise is always the consensus's gets exactly nothing
    Sh = d.S_hat.copy()
    Sh[:, POS["cpi"]] = 0.0
    _, phi0 = L.shapley_allocation(L.LiveDesign(d.release_at, d.r, d.S, Sh, d.released), BETA)
    assert abs(phi0[POS["cpi"]]) < 1e-15


@pytest.mark.parametrize(
    "scope,target",
    [("overall", "return"), ("overall", "shock"), ("labor_market", "return"), ("demand_inflation", "shock")],
)
def test_vectorized_bootstrap_equals_draw_by_draw(scope, target):
    d = random_design(seed=21, n=45)
    V = cov_matrix()
    z = L.standard_normal_draws(400, P, seed=123)
    res = L.bootstrap_scores(d, BETA, V, scope=scope, target=target, z=z)
    sd, idx = L.scoped_design(d, BETA, scope)
    Lc = np.linalg.cholesky(V[np.ix_(idx, idx)])  # theme block re-factored
    direct, dlmd = [], []
    for b in range(z.shape[0]):
        beta_b = BETA.copy()
        beta_b[idx] = BETA[idx] + Lc @ z[b, idx]
        y, q = L.targets(sd, beta_b, target, idx)
        direct.append(L.skill_score(y, q))
        dlmd.append(L.directional_score(y, q))
    np.testing.assert_allclose(res.scores, direct, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.lmd, dlmd, atol=1e-12)
    assert res.ci90 == pytest.approx(tuple(np.percentile(direct, [5, 95])))
    assert res.ci95 == pytest.approx(tuple(np.percentile(direct, [2.5, 97.5])))
    assert res.p_le_zero == np.mean(np.array(direct) <= 0)


def test_bootstrap_draws_have_the_theme_block_covariance():
    V = cov_matrix()
    z = L.standard_normal_draws(20000, P, seed=1)
    idx = L.scope_indices("housing")
    draws = L.beta_draws(BETA, V, idx, z)
    Vt = V[np.ix_(idx, idx)]
    Lt = np.linalg.cholesky(Vt)  # the theme block re-factored, the same z columns sliced
    np.testing.assert_allclose(draws - BETA[idx], z[:, idx] @ Lt.T, rtol=1e-12, atol=1e-18)
    sd = np.sqrt(np.diag(Vt))
    assert np.all(np.abs(np.cov(draws.T) - Vt) <= 0.05 * np.outer(sd, sd))
    np.testing.assert_allclose(draws.mean(axis=0), BETA[idx], atol=4 * np.sqrt(np.diag(V)[idx] / 20000).max())
    # seeded: the default draws are reproducible
    assert np.array_equal(L.standard_normal_draws(5), L.standard_normal_draws(5))


def test_paired_event_bootstrap_resamples_shared_events():
    d = random_design(seed=4, n=30)
    rng = np.random.default_rng(0)
    other = L.LiveDesign(
        d.release_at, d.r, d.S, d.S_hat * 0.3 + rng.normal(scale=0.1, size=d.S.shape) * d.released, d.released
    )
    pb = L.paired_event_bootstrap(d, other, BETA, n_draws=300, seed=77)
    assert pb.delta == pytest.approx(L.point_score(d, BETA).score - L.point_score(other, BETA).score)
    K = np.random.default_rng(77).multinomial(30, np.full(30, 1 / 30), size=300)
    ref = []
    for k in K:
        rows = np.repeat(np.arange(30), k)
        ref.append(
            L.skill_score(d.r[rows], d.S_hat[rows] @ BETA)
            - L.skill_score(d.r[rows], other.S_hat[rows] @ BETA)
        )
    np.testing.assert_allclose(pb.draws, ref, atol=1e-12)
    assert pb.ci95 == pytest.approx(tuple(np.percentile(ref, [2.5, 97.5])))
    # only shared events are used
    part = other.subset(np.arange(30) < 20)
    assert L.paired_event_bootstrap(d, part, BETA, n_draws=10).n_events == 20


# ---------------------------------------------------------------------------------------------
# design building and frames
# ---------------------------------------------------------------------------------------------


def test_live_design_groups_releases_and_counts_drops():
    rel, ret, sig = _panel(n_events=6, seed=2)
    nc = rel.select(
        "indicator_id",
        "reference_period",
        (pl.col("release_at") - pl.duration(hours=1)).alias("issued_at"),
        (pl.col("consensus") + 1.0).alias("value"),
    )
    first = rel.sort("release_at").row(0, named=True)
    nc = nc.filter(
        ~(
            (pl.col("indicator_id") == first["indicator_id"])
            & (pl.col("issued_at") < first["release_at"])
            & (pl.col("issued_at") > first["release_at"] - pl.duration(hours=2))
        )
    )
    pr = L.implied_surprises(rel, sig, nc, events=_events(rel, sig, ret))
    ret2 = ret.with_columns(
        pl.when(pl.col("release_at") == ret["release_at"].max())
        .then(None)
        .otherwise(pl.col("r_g"))
        .alias("r_g")
    )
    d = L.live_design(pr, ret2)
    assert d.counts == {
        "releases_without_nowcast": 1,
        "events_dropped_no_nowcast": 1,
        "events_dropped_no_return": 1,
    }
    assert d.n_events == 4
    g = L.live_design(pr, ret2, missing="consensus")
    assert g.n_events == 5 and g.counts["releases_without_nowcast"] == 1
    k = POS[first["indicator_id"]]
    assert g.released[0, k] and g.S_hat[0, k] == 0.0
    assert g.S[0, k] == pytest.approx((first["actual"] - first["consensus"]) / sig[first["indicator_id"]])
    with pytest.raises(L.ScoringError, match="no nowcast for"):
        L.live_design(pr, ret2, missing="error")
    with pytest.raises(L.ScoringError, match="no announcement return row"):
        L.live_design(pr, ret.head(2))


def _fit() -> MarketBetaFit:
    V = cov_matrix()
    return MarketBetaFit(
        fit_id="hr-test",
        indicator_ids=INDICATOR_IDS,
        beta=BETA,
        se=np.sqrt(np.diag(V)),
        cov=V,
        lam=21.54,
        lam_source="fixed",
        delta=2.49e-3,
        scale=1.85e-3,
        iterations=23,
        converged=True,
        df_eff=13.4,
        n_events=2163,
        window_start=_t("2010-01-04 15:00"),
        window_end=_t("2025-10-24 12:30"),
        covid_excluded=False,
        n_covid_dropped=0,
        settings={"c": 1.345},
    )


def test_score_model_rows_conform_to_livemacro_scores(tmp_path):
    d = random_design(seed=13, n=40)
    fit = _fit()
    reps = [L.LiveDesign(d.release_at, d.r, d.S, d.S_hat * f, d.released) for f in (1.0, 0.9, 1.1, 0.8, 1.2)]
    rows = score_model(d, fit, model_id="m/x@single", n_draws=1000, sampling_designs=reps)
    assert len(rows) == 5 * 2
    at = _t("2026-05-01 00:00")
    frame = livemacro_scores_frame(rows, partition_key="2026-04", available_at=at)
    overall = frame.filter((pl.col("scope") == "overall") & (pl.col("target") == "return")).row(0, named=True)
    assert overall["score"] == pytest.approx(L.point_score(d, BETA).score)
    assert overall["boot_draws"] == 1000 and overall["sampling_k"] == 5
    assert overall["boot_ci90_lo"] <= overall["boot_ci90_hi"]
    con = storage.connect(tmp_path / "s.duckdb")
    try:
        assert storage.replace_partition(con, "livemacro_scores", frame, {"partition_key": "2026-04"}) == 10
        sh = shapley_frame(
            d, fit, model_id="m/x@single", horizon="terminal", partition_key="2026-04", available_at=at
        )
        assert sh["value"].sum() == pytest.approx(overall["score"], abs=1e-12)
        sz = sizing_frame(
            L.sizing_discipline(pl.DataFrame({"s": d.S[d.released], "s_hat": d.S_hat[d.released]})),
            model_id="m/x@single",
            horizon="terminal",
            partition_key="2026-04",
            available_at=at,
        )
        pb = paired_frame(
            L.paired_event_bootstrap(d, reps[3], BETA, n_draws=100),
            model_id="a",
            comparator_model_id="b",
            fit_id="hr-test",
            horizon="terminal",
            scope="overall",
            target="return",
            partition_key="2026-04",
            available_at=at,
        )
        n = storage.replace_partition(
            con, "score_decompositions", pl.concat([sh, sz, pb]), {"partition_key": "2026-04"}
        )
        assert n == 16 + 5 + 4
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# own coverage, common event sets, event/combined intervals, merged events
# ---------------------------------------------------------------------------------------------


def test_own_subset_keeps_events_with_an_own_nowcast_and_fills_the_rest_with_the_consensus():
    rel, ret, sig = _panel(n_events=6, seed=2)
    rel = rel.with_columns(pl.col("release_at").dt.date().alias("reference_period"))  # one period per release
    first = rel.sort("release_at", "indicator_id").row(0, named=True)
    # the model nowcasts only the first event's first field; everything else is the consensus's
    nc = pl.DataFrame(
        {
            "indicator_id": [first["indicator_id"]],
            "reference_period": [first["reference_period"]],
            "issued_at": [first["release_at"] - timedelta(hours=1)],
            "value": [first["consensus"] + 2.0],
        }
    )
    pr = L.implied_surprises(rel, sig, nc, events=_events(rel, sig, ret))
    d = L.live_design(pr, ret, missing="consensus")
    assert d.n_events == 6 and d.own.sum() == 1
    own = L.own_subset(d)
    assert own.n_events == 1 and own.release_at[0] == d.release_at[0]
    k = POS[first["indicator_id"]]
    assert own.S_hat[0, k] == pytest.approx(2.0 / sig[first["indicator_id"]])
    # a second field released in that event without the model's nowcast stays at the consensus's 0
    others = np.flatnonzero(own.released[0] & ~own.own[0])
    assert all(own.S_hat[0, j] == 0.0 for j in others)
    theme = get_indicator(first["indicator_id"]).theme
    assert L.own_subset(d, theme).n_events == 1
    assert all(L.own_subset(d, t).n_events == 0 for t in THEMES if t != theme)
    # score on own events = Eq. 8 over that one event
    y, q = d.r[:1], d.S_hat[:1] @ BETA
    assert L.point_score(own, BETA).score == pytest.approx(L.skill_score(y, q), abs=1e-15)


def test_common_event_set_is_the_greedy_intersection_with_a_minimum():
    t = np.arange(
        np.datetime64("2026-01-01T13:30", "us"),
        np.datetime64("2026-01-21T13:30", "us"),
        np.timedelta64(1, "D"),
    )
    own = {"a": t[:16], "b": t[10:], "c": t[:3], "consensus/x": t}
    models, common = L.common_event_set(own, min_events=5, always=("consensus/x",))
    # a (16 events) first; b shares 6 of them (>= 5): joins; c would leave 0: not compared
    assert models == ["a", "b", "consensus/x"] and common.tolist() == t[10:16].tolist()
    models, common = L.common_event_set(own, min_events=7, always=("consensus/x",))
    assert models == ["a", "consensus/x"] and common.size == 16
    assert L.common_event_set({"c": t[:3]}, min_events=5) == (
        [],
        pytest.approx(np.array([], dtype="datetime64[us]")),
    )
    named, common = L.common_event_set(own, min_events=5, models=["a", "c"])
    assert named == ["a", "c"] and common.tolist() == t[:3].tolist()  # a named set is taken whatever its size
    with pytest.raises(L.ScoringError, match="no own events"):
        L.common_event_set(own, min_events=5, models=["zzz"])


@pytest.mark.parametrize(
    "scope,target", [("overall", "return"), ("overall", "shock"), ("demand_inflation", "return")]
)
def test_event_and_combined_bootstrap_equal_draw_by_draw(scope, target):
    d = random_design(seed=31, n=25)
    V = cov_matrix()
    z = L.standard_normal_draws(300, P, seed=99)
    res = L.event_bootstrap_scores(
        d, BETA, V, scope=scope, target=target, z=z, n_draws=300, seed=99, chunk=70
    )
    sd, idx = L.scoped_design(d, BETA, scope)
    K = np.random.default_rng(99).multinomial(sd.n_events, np.full(sd.n_events, 1 / sd.n_events), size=300)
    Lc = np.linalg.cholesky(V[np.ix_(idx, idx)])
    ev, comb = [], []
    for b, k in enumerate(K):
        rows = np.repeat(np.arange(sd.n_events), k)
        y, q = L.targets(sd.subset(rows), BETA, target, idx)
        ev.append(L.skill_score(y, q))
        beta_b = BETA.copy()
        beta_b[idx] = BETA[idx] + Lc @ z[b, idx]
        y, q = L.targets(sd.subset(rows), beta_b, target, idx)
        comb.append(L.skill_score(y, q))
    np.testing.assert_allclose(res.event_scores, ev, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.combined_scores, comb, rtol=1e-9, atol=1e-12)
    assert res.event_ci90 == pytest.approx(tuple(np.percentile(ev, [5, 95])))
    assert res.combined_ci95 == pytest.approx(tuple(np.percentile(comb, [2.5, 97.5])))
    assert res.n_events == sd.n_events
    # the combined interval carries both sources: wider than either alone on this design
    par = L.bootstrap_scores(d, BETA, V, scope=scope, target=target, z=z)
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(res.combined_ci90) >= max(width(res.event_ci90), width(par.ci90)) * 0.9


def test_a_zero_prediction_scores_exactly_zero_in_every_bootstrap_draw():
    # the consensus (S_hat = 0): SS_model = SS_cons in every draw, so every score is +0.0, never -1e-17 (the
    # leaderboard would print -0.0000); on the return target its LMD is 0.5 everywhere (zero counts half)
    d = random_design(seed=5, n=30, zero_model=True)
    res = L.event_bootstrap_scores(d, BETA, cov_matrix(), target="return", n_draws=500, seed=7, chunk=128)
    assert (res.combined_scores == 0).all() and not np.signbit(res.combined_scores).any()
    assert (res.event_scores == 0).all() and res.combined_ci90 == (0.0, 0.0)
    par = L.bootstrap_scores(d, BETA, cov_matrix(), target="return", n_draws=500, seed=7)
    np.testing.assert_array_equal(par.lmd, np.full(500, 0.5))


def test_paired_bootstrap_gives_no_interval_below_the_minimum_shared_events():
    d = random_design(seed=4, n=30)
    other = L.LiveDesign(d.release_at, d.r, d.S, d.S_hat * 0.5, d.released)
    pb = L.paired_event_bootstrap(d, other.subset(np.arange(30) < 3), BETA, n_draws=200, min_events=10)
    assert pb.n_events == 3 and pb.ci95 is None and not pb.has_interval and pb.draws.size == 0
    assert pb.delta == pytest.approx(
        L.point_score(d.subset(np.arange(30) < 3), BETA).score
        - L.point_score(other.subset(np.arange(30) < 3), BETA).score
    )
    assert L.paired_event_bootstrap(d, other, BETA, n_draws=200, min_events=10).has_interval


def test_live_design_merges_overlapping_releases_and_adds_same_field_surprises():
    t1, t2 = _t("2026-01-09 13:29"), _t("2026-01-09 13:30")
    pr = pl.DataFrame(
        {
            "release_at": [t1, t1, t2, t2],
            "indicator_id": ["building_permits", "housing_starts", "building_permits", "nonfarm_payrolls"],
            "s": [0.5, -1.0, 0.25, 2.0],
            "s_hat": [0.1, None, 0.3, None],
        }
    )
    em = pl.DataFrame({"release_at": [t1, t2], "event_at": [t1, t1]})
    d = L.live_design(
        pr, pl.DataFrame({"release_at": [t1], "r_g": [1e-3]}), missing="consensus", event_map=em
    )
    assert d.n_events == 1 and d.counts["releases_without_nowcast"] == 2
    bp, hs, nfp = POS["building_permits"], POS["housing_starts"], POS["nonfarm_payrolls"]
    assert d.S[0, bp] == pytest.approx(0.75) and d.S_hat[0, bp] == pytest.approx(0.4) and d.own[0, bp]
    assert d.S[0, hs] == -1.0 and d.S_hat[0, hs] == 0.0 and not d.own[0, hs] and d.released[0, hs]
    assert d.S[0, nfp] == 2.0 and not d.own[0, nfp]
    with pytest.raises(L.ScoringError, match="two releases of building_permits"):
        L.live_design(
            pr.with_columns(pl.lit(t1).alias("release_at")), pl.DataFrame({"release_at": [t1], "r_g": [1e-3]})
        )
    with pytest.raises(L.ScoringError, match="event_map has no event"):
        L.live_design(pr, pl.DataFrame({"release_at": [t1], "r_g": [1e-3]}), event_map=em.head(1))
