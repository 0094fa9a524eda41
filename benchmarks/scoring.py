"""Scoring speed: the market-beta fit with full CV, the 10,000-draw parametric bootstrap and the exact
Shapley allocation, each beside a straightforward reference implementation (same answers, checked).

Run: ``.venv/bin/python benchmarks/scoring.py`` (needs the LiveMacroEval snapshot for the beta fit).
Targets on the 2-core workplace machine: CV fit <= 0.5 s, bootstrap <= 0.2 s, Shapley <= 1 s.
"""

from __future__ import annotations

import math
import time

import numpy as np
import polars as pl

from leaf_live.core.settings import get_settings
from leaf_live.macro.catalog import INDICATOR_IDS
from leaf_live.macro.scoring import betas as B
from leaf_live.macro.scoring import livemacro as L

PANEL = (
    "livemacroeval/Results/market_surprise_capture_score/step_15_2_historical_preprocessing/"
    "timestamp_group_events.csv"
)
P = len(INDICATOR_IDS)


def best_of(fn, repeats: int):
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


# ---------------------------------------------------------------------------------------------
# reference implementations: the textbook loops
# ---------------------------------------------------------------------------------------------


def ref_irls(X, r, lam, c=1.345, tol=1e-7, max_iter=1000):
    n, p = X.shape
    aug = np.sqrt(lam) * np.eye(p)
    beta = np.linalg.lstsq(np.vstack([X, aug]), np.concatenate([r, np.zeros(p)]), rcond=None)[0]
    for _ in range(max_iter):
        u = r - X @ beta
        delta = c * 1.4826 * np.median(np.abs(u - np.median(u)))
        w = np.array([1.0 if abs(x) <= delta else delta / abs(x) for x in u])
        sw = np.sqrt(w)
        new = np.linalg.lstsq(
            np.vstack([X * sw[:, None], aug]), np.concatenate([r * sw, np.zeros(p)]), rcond=None
        )[0]
        done = np.linalg.norm(new - beta) / np.linalg.norm(beta) <= tol
        beta = new
        if done:
            break
    return beta


def ref_cv_fit(X, r):
    grid = np.logspace(-4, 4, 25)
    n = X.shape[0]
    blocks = np.array_split(np.arange(n), 5)
    scores = []
    for lam in grid:
        losses = []
        for te in blocks:
            tr = np.setdiff1d(np.arange(n), te)
            u = r[te] - X[te] @ ref_irls(X[tr], r[tr], lam)
            d = 1.345 * 1.4826 * np.median(np.abs(u - np.median(u)))
            losses.append(np.mean([0.5 * x * x if abs(x) <= d else d * abs(x) - 0.5 * d * d for x in u]))
        scores.append(np.mean(losses))
    lam = grid[int(np.argmin(scores))]
    return lam, ref_irls(X, r, lam)


def ref_bootstrap(d: L.LiveDesign, beta, cov, z):
    Lc = np.linalg.cholesky(cov)
    out = np.empty(z.shape[0])
    lmd = np.empty(z.shape[0])
    for b in range(z.shape[0]):
        bb = beta + Lc @ z[b]
        r_hat = d.S_hat @ bb
        out[b] = (np.sum(d.r**2) - np.sum((d.r - r_hat) ** 2)) / (np.sum(d.r**2) + np.sum((d.r - r_hat) ** 2))
        lmd[b] = np.sum(np.abs(d.r) * (np.sign(r_hat) == np.sign(d.r))) / np.sum(np.abs(d.r))
    return out, lmd


def ref_shapley(d: L.LiveDesign, beta):
    v = np.empty(1 << P)
    for mask in range(1 << P):
        cols = [i for i in range(P) if mask >> i & 1]
        r_hat = d.S_hat[:, cols] @ beta[cols]
        ss_c, ss_m = np.sum(d.r**2), np.sum((d.r - r_hat) ** 2)
        v[mask] = (ss_c - ss_m) / (ss_c + ss_m)
    phi = np.zeros(P)
    for i in range(P):
        for mask in range(1 << P):
            if not mask >> i & 1:
                s = bin(mask).count("1")
                phi[i] += (
                    math.factorial(s)
                    * math.factorial(P - s - 1)
                    / math.factorial(P)
                    * (v[mask | 1 << i] - v[mask])
                )
    return phi


# ---------------------------------------------------------------------------------------------


def live_like_design(n: int = 80, seed: int = 0) -> L.LiveDesign:
    """A live-sized sample (the paper's six-month window has ~100 releases in ~80 timestamp groups)."""
    rng = np.random.default_rng(seed)
    rel = np.zeros((n, P), dtype=bool)
    for g in range(n):
        rel[g, rng.choice(P, size=rng.integers(1, 4), replace=False)] = True
    S = rng.normal(size=(n, P)) * rel
    Sh = (0.5 * S + rng.normal(scale=0.7, size=(n, P))) * rel
    return L.LiveDesign(
        np.arange(n).astype("datetime64[h]").astype("datetime64[us]"),
        rng.normal(scale=3e-3, size=n),
        S,
        Sh,
        rel,
    )


def main() -> None:
    path = get_settings().require_snapshot() / PANEL
    ev = pl.read_csv(path).with_columns(
        pl.col("release_timestamp")
        .str.to_datetime()
        .dt.replace_time_zone("America/New_York")
        .dt.convert_time_zone("UTC")
        .alias("release_at")
    )
    design = B.event_design(ev, surprise_prefix="X_", return_column="hf_return")

    rows = []
    t_fit, fit = best_of(lambda: B.fit_market_betas(design), 3)
    t_ref, (lam_ref, beta_ref) = best_of(lambda: ref_cv_fit(design.X, design.r), 1)
    assert lam_ref == fit.lam and np.allclose(beta_ref, fit.beta, rtol=1e-8, atol=1e-14)
    rows.append(("beta fit, 5-fold CV x 25 lambdas + HC1", t_fit, t_ref, 0.5))

    d = live_like_design()
    z = L.standard_normal_draws(10_000, P)
    t_boot, res = best_of(lambda: L.bootstrap_scores(d, fit.beta, fit.cov, z=z), 5)
    t_bref, (ref_s, ref_l) = best_of(lambda: ref_bootstrap(d, fit.beta, fit.cov, z), 1)
    assert np.allclose(res.scores, ref_s, rtol=1e-9, atol=1e-12) and np.allclose(res.lmd, ref_l)
    rows.append(("bootstrap, 10,000 draws (score + LMD)", t_boot, t_bref, 0.2))

    t_sh, (_, phi) = best_of(lambda: L.shapley_allocation(d, fit.beta), 3)
    t_sref, phi_ref = best_of(lambda: ref_shapley(d, fit.beta), 1)
    assert np.allclose(phi, phi_ref, atol=1e-12)
    rows.append(("exact Shapley, 16 indicators (2^16)", t_sh, t_sref, 1.0))

    print(f"{'task':<42} {'ours [s]':>9} {'reference [s]':>14} {'speed-up':>9} {'target [s]':>11}  ok")
    for name, ours, ref, target in rows:
        print(
            f"{name:<42} {ours:>9.4f} {ref:>14.3f} {ref / ours:>8.1f}x {target:>11.2f} "
            f" {'yes' if ours <= target else 'NO'}"
        )
    print(f"(fit: lambda={fit.lam:.2f}, {fit.iterations} IRLS steps; live-like design: {d.n_events} events)")


if __name__ == "__main__":
    main()
