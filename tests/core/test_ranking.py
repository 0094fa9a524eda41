"""leaf_live.core.ranking: the two-way fixed-effects (ForecastBench) ranking and its cluster bootstrap.

Cross-checks: exact recovery of additive effects, statsmodels WLS with dummies (to 1e-8, the point fit and a
bootstrap replicate), the balanced-panel identities (effect difference = difference of means; level = mean
loss; the symmetric scale = the LiveMacro ratio-of-sums score), and a constructed panel where the greedy
common event set (macro/scoring/livemacro.common_event_set) ranks a bad model first and the fixed effects do
not."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from leaf_live.core import ranking as R
from leaf_live.macro.scoring.livemacro import common_event_set


def _random_panel(seed: int = 1, n_events: int = 60, models: int = 5, p: float = 0.6):
    rng = np.random.default_rng(seed)
    rows = []
    diff = rng.gamma(2.0, 1.0, n_events)
    eff = rng.normal(0, 0.5, models)
    for g in range(n_events):
        for k in range(models):
            if k == 0 or rng.random() < p:  # model "m0" (the reference) answers every event
                rows.append((f"m{k}", g, diff[g] + eff[k] + rng.normal(0, 0.3), 1.0 + (g % 3)))
    m, g, y, w = map(list, zip(*rows))
    return m, g, y, w


def _ols_dummies(m, g, y, w, reference: str) -> dict[str, float]:
    """Independent WLS with event dummies and model dummies (reference dropped) via statsmodels."""
    events = sorted(set(g))
    others = sorted(set(m) - {reference})
    X = np.zeros((len(y), len(events) + len(others)))
    for i, (mm, gg) in enumerate(zip(m, g)):
        X[i, events.index(gg)] = 1.0
        if mm != reference:
            X[i, len(events) + others.index(mm)] = 1.0
    res = sm.WLS(np.asarray(y), X, weights=np.asarray(w)).fit()
    return {o: float(res.params[len(events) + j]) for j, o in enumerate(others)}


def test_exact_additive_effects_are_recovered_on_an_unbalanced_panel():
    diff = np.linspace(0.5, 9.0, 40)
    true = {"ref": 0.0, "a": -0.3, "b": 1.25, "c": 0.4}
    rows = [("ref", g, diff[g] + 0.0) for g in range(40)]
    rows += [("a", g, diff[g] - 0.3) for g in range(0, 40, 2)]  # a answers the even (easy and hard) events
    rows += [("b", g, diff[g] + 1.25) for g in range(30, 40)]  # b only the 10 hardest
    rows += [("c", g, diff[g] + 0.4) for g in range(0, 12)]  # c only the 12 easiest
    m, g, y = map(list, zip(*rows))
    fit = R.fit_two_way(R.make_panel(m, g, y), reference="ref")
    for k, v in true.items():
        assert fit.effect[fit.models.index(k)] == pytest.approx(v, abs=1e-12)
    # level = difficulty-adjusted mean loss on every event: mean difficulty + effect
    assert fit.level_of("b") == pytest.approx(diff.mean() + 1.25, abs=1e-12)
    # raw own-event means put c (the easy events) ahead of a; the adjusted effects do not
    assert np.mean([v for mm, _, v in rows if mm == "c"]) < np.mean([v for mm, _, v in rows if mm == "a"])


def test_model_effects_match_statsmodels_wls_with_dummies():
    m, g, y, w = _random_panel()
    fit = R.fit_two_way(R.make_panel(m, g, y, weight=w), reference="m0")
    ols = _ols_dummies(m, g, y, w, "m0")
    for k, v in ols.items():
        assert fit.effect[fit.models.index(k)] == pytest.approx(v, abs=1e-8)
    assert fit.effect[fit.models.index("m0")] == 0.0


def test_balanced_panel_identities():
    rng = np.random.default_rng(7)
    N, names = 25, ["cons", "x", "y"]
    L = rng.gamma(2.0, 1.0, (N, 3))
    m = [names[k] for _ in range(N) for k in range(3)]
    g = [j for j in range(N) for _ in range(3)]
    y = L.ravel().tolist()
    fit = R.fit_two_way(R.make_panel(m, g, y), reference="cons")
    means = L.mean(axis=0)
    for k in range(3):
        assert fit.effect[k] == pytest.approx(means[k] - means[0], abs=1e-12)  # FE diff = diff of means
        assert fit.level[k] == pytest.approx(means[k], abs=1e-12)  # level = the model's mean loss
    # the symmetric scale on a balanced panel is the ratio-of-sums LiveMacro score (Eq. 2) on all events
    s = R.to_scale(fit.level, 0, "symmetric")
    ss_c, ss_x = L[:, 0].sum(), L[:, 1].sum()
    assert s[1] == pytest.approx((ss_c - ss_x) / (ss_c + ss_x), abs=1e-12)
    assert R.to_scale(fit.level, 0, "skill")[2] == pytest.approx(1 - L[:, 2].sum() / ss_c, abs=1e-12)


def _greedy_trap():
    """consensus on 100 events; A (auto-ARIMA-like) on all 100, terrible (+3) except on 30 CPI-like events
    where it is slightly better than the consensus (-0.1); C (CPI nowcast) only on those 30 (-0.2); B (the
    best model, -0.5) on 25 other events. True order on each model's own evidence: B, C, consensus, A."""
    rng = np.random.default_rng(3)
    diff = rng.gamma(2.0, 1.0, 100) + 1.0
    rows = [("consensus", g, diff[g]) for g in range(100)]
    rows += [("A", g, diff[g] + (-0.1 if g < 30 else 3.0)) for g in range(100)]
    rows += [("C", g, diff[g] - 0.2) for g in range(30)]
    rows += [("B", g, diff[g] - 0.5) for g in range(50, 75)]
    m, g, y = map(list, zip(*rows))
    return m, g, y


def test_greedy_common_set_gets_the_order_wrong_and_fixed_effects_do_not():
    m, g, y = _greedy_trap()
    t0 = np.datetime64("2020-01-01T00:00", "us")
    own = {
        k: np.array(sorted({t0 + np.timedelta64(gg, "h") for mm, gg in zip(m, g) if mm == k}))
        for k in {"A", "B", "C"}
    }
    own["consensus"] = own["A"]
    chosen, common = common_event_set(own, min_events=10, always=["consensus"])
    assert sorted(chosen) == ["A", "C", "consensus"] and common.size == 30  # B dropped, CPI-only set
    on = {int((t - t0) / np.timedelta64(1, "h")) for t in common}
    ss = {k: sum(v for mm, gg, v in zip(m, g, y) if mm == k and gg in on) for k in chosen}
    common_score = {k: (ss["consensus"] - ss[k]) / (ss["consensus"] + ss[k]) for k in chosen}
    assert common_score["A"] > common_score["consensus"]  # the greedy board ranks A above the consensus

    # reference-anchored event effects (the consensus answers every event): each model's own evidence, exact
    r = R.rank_models(
        R.make_panel(m, g, y), reference="consensus", min_events=20, n_boot=200, event_effects="reference"
    )
    assert [row["model"] for row in r.rows()] == ["B", "C", "consensus", "A"]
    i = r.models.index
    assert r.effect[i("B")] == pytest.approx(-0.5, abs=1e-9)
    assert r.effect[i("C")] == pytest.approx(-0.2, abs=1e-9)
    assert r.effect[i("A")] == pytest.approx(0.7 * 3.0 - 0.3 * 0.1, abs=1e-9)  # A's mean excess on its events
    assert r.ci[i("A"), 1] < 0 and r.score[i("consensus")] == 0.0
    assert r.p_rank1[i("B")] == pytest.approx(1.0) and r.p_rank1[i("A")] == 0.0
    # ForecastBench's all-model event effects: A's uneven excess (its residual -2.17 on C's events) leaks into
    # the shared event effects, so C (truly -0.2 on every event) is estimated above 0; B first and A last hold
    fb = R.rank_models(R.make_panel(m, g, y), reference="consensus", min_events=20, n_boot=50)
    assert [row["model"] for row in fb.rows()] == ["B", "consensus", "C", "A"]
    assert fb.effect[i("A")] == pytest.approx(2.07, abs=1e-9) and fb.effect[i("C")] > 0


def test_reference_anchored_effects_are_paired_mean_differences():
    m, g, y, w = _random_panel(seed=9)
    p = R.make_panel(m, g, y, weight=w)
    fit = R.fit_two_way(p, reference="m0", event_effects="reference")
    ref = {gg: v for mm, gg, v in zip(m, g, y) if mm == "m0"}
    for k in ("m1", "m3"):
        d = [(v - ref[gg], ww) for mm, gg, v, ww in zip(m, g, y, w) if mm == k]
        want = sum(a * b for a, b in d) / sum(b for _, b in d)
        assert fit.effect[fit.models.index(k)] == pytest.approx(want, abs=1e-12)
    with pytest.raises(R.RankingError, match="needs the reference on every event; model=x has event=3"):
        R.fit_two_way(
            R.make_panel(["r", "x", "x"], [1, 1, 3], [1.0, 1, 1]), reference="r", event_effects="reference"
        )


def test_bootstrap_replicates_reestimate_the_fixed_effects():
    m, g, y, w = _random_panel(seed=5, n_events=40)
    cl = [gg // 4 for gg in g]  # 10 clusters of 4 events
    panel = R.make_panel(m, g, y, weight=w, cluster=cl)
    r = R.rank_models(panel, reference="m0", scale="loss", min_events=5, n_boot=30, seed=11)
    K = R.cluster_resamples(10, 30, 11)
    for b in (0, 17):
        # replicate b = a WLS fit on the resampled clusters (weight x count, count-0 rows dropped)
        k = K[b, np.asarray(cl)]
        keep = k > 0
        sel = [i for i in range(len(y)) if keep[i]]
        ols = _ols_dummies(
            [m[i] for i in sel], [g[i] for i in sel], [y[i] for i in sel], [w[i] * k[i] for i in sel], "m0"
        )
        fit_b = R.fit_two_way(
            R.make_panel(
                [m[i] for i in sel],
                [g[i] for i in sel],
                [y[i] for i in sel],
                weight=[w[i] * k[i] for i in sel],
            ),
            reference="m0",
        )
        for name, v in ols.items():
            j = r.models.index(name)
            assert r.draws[b, j] - r.draws[b, 0] == pytest.approx(v, abs=1e-8)
            assert r.draws[b, j] == pytest.approx(fit_b.level_of(name), abs=1e-10)
    # the replicates vary (effects re-estimated), intervals hold the point, P(rank 1) sums to 1
    assert np.nanstd(r.draws[:, 1]) > 0
    assert (r.ci[:, 0] <= r.score + 1e-12).all() and (r.score <= r.ci[:, 1] + 1e-12).all()
    assert np.nansum(r.p_rank1) == pytest.approx(1.0)
    assert r.diff_ci[0].tolist() == [0.0, 0.0] and r.diff[0] == 0.0
    assert not r.higher_is_better and r.rank[np.nanargmin(r.score)] == 1


def test_reference_anchored_bootstrap_equals_refits_on_resampled_clusters():
    m, g, y, w = _random_panel(seed=4, n_events=30)
    cl = [gg // 3 for gg in g]
    panel = R.make_panel(m, g, y, weight=w, cluster=cl)
    r = R.rank_models(panel, reference="m0", min_events=5, n_boot=40, seed=2, event_effects="reference")
    K = R.cluster_resamples(10, 40, 2)
    for b in (0, 9, 39):
        k = K[b, np.asarray(cl)]
        sel = [i for i in range(len(y)) if k[i] > 0]
        fit_b = R.fit_two_way(
            R.make_panel(
                [m[i] for i in sel],
                [g[i] for i in sel],
                [y[i] for i in sel],
                weight=[w[i] * k[i] for i in sel],
            ),
            reference="m0",
            event_effects="reference",
        )
        want = R.to_scale(np.array([fit_b.level_of(x) for x in r.models]), 0, "symmetric")
        np.testing.assert_allclose(r.draws[b], want, rtol=0, atol=1e-12)


def test_a_model_below_the_minimum_is_listed_and_moves_no_one():
    m, g, y = _greedy_trap()
    base = R.rank_models(R.make_panel(m, g, y), reference="consensus", n_boot=50)
    m2, g2, y2 = m + ["tiny"] * 10, g + list(range(10)), y + [0.0] * 10  # a 10-event perfect submission
    new = R.rank_models(R.make_panel(m2, g2, y2), reference="consensus", n_boot=50)
    for name in base.models:
        a, b = base.models.index(name), new.models.index(name)
        assert new.score[b] == base.score[a] and new.n_events[b] == base.n_events[a]
    t = new.models.index("tiny")
    assert not new.ranked[t] and new.n_events[t] == 10 and np.isnan(new.score[t]) and np.isnan(new.rank[t])
    assert R.MIN_EVENTS == 20
    assert [r["model"] for r in new.rows()][-1] == "tiny"


def test_largest_event_share():
    p = R.make_panel(["a", "a", "a", "b"], [1, 2, 3, 1], [1.0, 1.0, 8.0, 0.0])
    share = R.largest_event_share(p)
    assert share["a"] == (0.8, 3)
    assert np.isnan(share["b"][0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(model=["a", "a"], event=[1, 1], loss=[1.0, 2.0]), "duplicate row: model=a event=1"),
        (dict(model=["a", "b"], event=[1, 1], loss=[1.0, 2.0], weight=[1.0, 2.0]), "weight differs"),
        (dict(model=["a", "b"], event=[1, 1], loss=[1.0, 2.0], cluster=["x", "y"]), "two clusters"),
        (dict(model=["a"], event=[1], loss=[float("nan")]), "loss must be finite; model=a event=1"),
        (dict(model=["a"], event=[1], loss=[1.0], weight=[-1.0]), "weight must be finite and >= 0"),
        (dict(model=["a"], event=[1, 2], loss=[1.0]), "event has 2 entries"),
    ],
)
def test_bad_panels_raise_naming_the_field(kwargs, message):
    with pytest.raises(R.RankingError, match=message):
        R.make_panel(**kwargs)


def test_unidentified_model_and_thin_reference_raise():
    p = R.make_panel(["ref", "ref", "x"], [1, 2, 3], [1.0, 1.0, 1.0])
    with pytest.raises(R.RankingError, match=r"\['x'\] share no chain of events"):
        R.fit_two_way(p, reference="ref")
    with pytest.raises(R.RankingError, match="reference='ref' has 2 events, fewer than min_events=20"):
        R.rank_models(p, reference="ref")
