"""The scoring engine on the real pipeline: betas fitted on the surprise events rebuilt from the raw
LiveMacroEval files reproduce Table 9, the recorded GPT-5 nowcasts are scored on the live releases, and
the consensus comparator scores exactly 0 there (snapshot read where it is; tests fail without it)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from leaf_live.macro.catalog import INDICATOR_IDS, THEMES, get_indicator
from leaf_live.macro.forecasters.consensus import consensus_nowcasts
from leaf_live.macro.scoring import betas as B
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring import surprises as S
from leaf_live.macro.scoring.frames import livemacro_scores_frame, score_model
from leaf_live.macro.sources.futures import FuturesSnapshot
from leaf_live.macro.sources.recorded_nowcasts import RecordedNowcastsSnapshot
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot
from leaf_live.macro.windows import nowcast_windows

SIGMA_FILE = (
    "livemacroeval/Results/market_surprise_capture_score/step_15_2_historical_preprocessing/"
    "sigma_by_field.csv"
)
LIVE_START = datetime(2025, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def pipeline(snapshot_dir):
    rel = S.first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar())
    ret = S.announcement_returns(FuturesSnapshot(snapshot_dir).window_prices(), rel)
    scales = S.surprise_scales(rel)
    events = S.timestamp_group_events(rel, ret, scales)
    hist = events.filter(
        pl.col("release_at").dt.convert_time_zone("America/New_York").dt.date() <= S.HIST_END
    )
    fit = B.fit_market_betas(B.event_design(hist), lam=10 ** (4 / 3))
    live = rel.filter((pl.col("release_at") >= LIVE_START) & pl.col("consensus").is_not_null())
    gpt5, _ = RecordedNowcastsSnapshot(snapshot_dir).load(nowcast_windows(live))
    return {"live": live, "ret": ret, "scales": scales, "events": events, "fit": fit, "gpt5": gpt5}


def test_betas_from_rebuilt_events_reproduce_table_9(pipeline):
    fit = pipeline["fit"]
    assert fit.n_events == 2163 and fit.iterations == 23
    assert np.round(fit.beta * 1e4, 3).tolist() == [get_indicator(i).beta_table9 for i in INDICATOR_IDS]


def test_consensus_comparator_scores_exactly_zero_on_the_live_releases(pipeline):
    live, fit = pipeline["live"], pipeline["fit"]
    cons = consensus_nowcasts(live)
    pr = L.implied_surprises(live, pipeline["scales"], cons, events=pipeline["events"])
    assert pr["s_hat"].null_count() == 0 and (pr["s_hat"] == 0.0).all()
    d = L.live_design(pr, pipeline["ret"])
    assert d.n_events > 50
    rows = score_model(d, fit, model_id="consensus/investing", n_draws=500)
    frame = livemacro_scores_frame(rows, partition_key="live", available_at=datetime(2026, 6, 1, tzinfo=UTC))
    assert frame.height == 10 and frame["score"].to_list() == [0.0] * 10
    assert (frame["boot_ci95_lo"] == 0.0).all() and (frame["boot_ci95_hi"] == 0.0).all()
    assert np.all(L.shapley_allocation(d, fit.beta)[1] == 0.0)


def test_recorded_gpt5_nowcasts_score_with_the_identities(pipeline, snapshot_dir):
    live, fit, nc = pipeline["live"], pipeline["fit"], pipeline["gpt5"]
    pr = L.implied_surprises(live, pipeline["scales"], nc, events=pipeline["events"]).filter(
        pl.col("s_hat").is_not_null()
    )
    # February CPI (released 2026-03-11 08:30 EDT): A = C = 2.4; GPT-5's last pre-release nowcast over
    # sigma_cpi
    row = pr.filter(
        (pl.col("indicator_id") == "cpi")
        & (pl.col("release_at") == datetime(2026, 3, 11, 12, 30, tzinfo=UTC))
    )
    last = (
        nc.filter(
            (pl.col("indicator_id") == "cpi")
            & pl.col("valid")
            & (pl.col("issued_at") < datetime(2026, 3, 11, 12, 30, tzinfo=UTC))
            & (pl.col("reference_period") == row["reference_period"][0])
        )
        .sort("issued_at")
        .tail(1)
    )
    sigma_cpi = pl.read_csv(snapshot_dir / SIGMA_FILE).filter(pl.col("field_id") == "cpi")["sigma_i"][0]
    assert row["nowcast"][0] == last["value"][0] and row["nowcast_issued_at"][0] == last["issued_at"][0]
    assert row["s"][0] == 0.0
    assert row["s_hat"][0] == pytest.approx((last["value"][0] - 2.4) / sigma_cpi, rel=1e-9)
    d = L.live_design(pr, pipeline["ret"])
    assert d.n_events == pr["release_at"].n_unique() and d.released.sum() == pr.height
    for scope in ("overall", *THEMES):
        for target in ("return", "shock"):
            ps = L.point_score(d, fit.beta, scope=scope, target=target)
            if ps.n_events == 0 or ps.ss_cons == 0:
                continue
            assert -1.0 <= ps.score <= 1.0 and 0.0 <= ps.lmd <= 1.0
            assert L.score_from_kappa_phi(ps.kappa, ps.phi) == pytest.approx(ps.score, abs=1e-12)
            _, phi = L.shapley_allocation(d, fit.beta, scope=scope, target=target)
            assert phi.sum() == pytest.approx(ps.score, abs=1e-12)
