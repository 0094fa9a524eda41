"""Are agents copying the consensus or the Fed nowcasts? (LiveMacroEval App. F, Tables 3-6).

A *series* is one (agent, indicator, reference period, run) (:func:`.series.hourly_series`: a recorded file is
one run, the paper's (agent, indicator, target month)); every statistic is computed within a series before
pooling, and every series stops strictly before its release (:func:`.series.with_release`), so nothing seen
after the release enters. X_t is the agent's nowcast at hour t, P_t the
comparator's value, sigma_i the release-surprise scale of App. K (``surprise_scales``, as known at the
release).

Comparator at time t (``comparator_rule``):

* ``as_of`` (Fed nowcasts): P_t = the comparator's latest valid value published by t
  (:func:`leaf_live.core.pit.as_of_join`); hours before its first publication have no gap;
* ``terminal`` (``consensus/*``): the stored calendars carry only the final consensus, stamped one minute
  before the release, so no value is known earlier. P_t is that final value at every hour: the gap is the
  distance to where the consensus ended up, computed after it was known (the row's ``available_at`` says
  so). The paper's Bloomberg path moves through the window; ours cannot, so its first-difference test
  (Test 2) has no consensus changes to correlate and says so.

Test 1 (level convergence, Tables 3/4): G_t = |X_t - P_t| / sigma_i; the terminal gap is G at the last
pre-release nowcast; rho_S is the within-series Spearman correlation (scipy.stats.spearmanr) of G_t with the
hours remaining until the release (from the release timestamp), > 0 meaning the gap closes toward the release.

Test 2 (co-movement of revisions, Table 5): Pearson correlation (scipy.stats.pearsonr) of the agent's and
the comparator's day-over-day changes, each day's value being the latest one strictly before the end of the
day in America/New_York (or before the release on release day), pooled across reference periods.

Test 3 (event-time concentration, Table 6): revisions Delta_t = X_t - X_(t-1) between consecutive hourly
nowcasts; a revision is *large* when |Delta_t| is at or above the series' 90th percentile (numpy linear) and
not zero. Fed publications within 48 h after a kept one are dropped so the +-24 h windows [u - 24 h, u + 24 h)
are disjoint; Delta share = share of large revisions inside a window minus the share of all revisions inside.
perm p: two-sided, B random reassignments of the magnitudes across the series' revision times (within each
series), p = (1 + #{|Delta share_b| >= |Delta share|}) / (B + 1); KS p: scipy.stats.ks_2samp of |Delta_t|
inside against outside the windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
import polars as pl
from scipy import stats

from leaf_live.core import pit
from leaf_live.macro.analyses.series import (
    AnalysisError,
    hourly_series,
    is_agent,
    is_comparator,
    models,
    table_frame,
    with_release,
)

AS_OF, TERMINAL = "as_of", "terminal"
# Table 4 bins, hours before the release: [lo, hi)
HOUR_BINS: tuple[tuple[float, float, str], ...] = (
    (336.0, math.inf, "336+"),
    (168.0, 336.0, "168-336"),
    (96.0, 168.0, "96-168"),
    (48.0, 96.0, "48-96"),
    (24.0, 48.0, "24-48"),
    (12.0, 24.0, "12-24"),
    (6.0, 12.0, "6-12"),
    (0.0, 6.0, "0-6"),
)
WINDOW_HOURS = 24.0
MIN_GAP_HOURS = 48.0
LARGE_QUANTILE = 0.9
PERM_DRAWS = 1000
PERM_SEED = 20260427
_TS = pl.Datetime("us", "UTC")
_KEYS = ["indicator_id", "reference_period"]


def comparator_rule(model_id: str) -> str:
    """``terminal`` for ``consensus/*`` (only the final value is stored), ``as_of`` otherwise."""
    return TERMINAL if model_id.startswith("consensus/") else AS_OF


def _pre_release(nowcasts: pl.DataFrame, releases: pl.DataFrame) -> pl.DataFrame:
    return with_release(hourly_series(nowcasts), releases).filter(~pl.col("after_release"))


def _sigma(frame: pl.DataFrame, scales: pl.DataFrame) -> pl.DataFrame:
    pit.require_columns(scales, ("indicator_id", "sigma", "available_at"), "surprise_scales", AnalysisError)
    out = pit.as_of_join(
        frame,
        scales.select("indicator_id", "sigma", "available_at"),
        left_time="release_at",
        by=["indicator_id"],
        suffix="_sigma",
    )
    bad = out.filter(pl.col("sigma").is_null() | (pl.col("sigma") <= 0))
    if bad.height:
        r = bad.row(0, named=True)
        raise AnalysisError(
            f"surprise_scales: no positive sigma for indicator_id={r['indicator_id']!r} known by "
            f"its release {r['release_at'].isoformat()}"
        )
    return out


def _comparator_values(agent: pl.DataFrame, comp: pl.DataFrame, rule: str) -> pl.DataFrame:
    """``agent`` rows with ``p_value`` / ``p_available_at``: the comparator as of each row (or terminal)."""
    comp = comp.select(*_KEYS, pl.col("value").alias("p_value"), "available_at")
    if rule == AS_OF:
        out = pit.as_of_join(agent, comp, left_time="issued_at", by=_KEYS, suffix="_p")
    else:
        # the comparator's last value strictly before the release, evaluated once per series
        rel = agent.select(*_KEYS, "release_at").unique()
        term = pit.as_of_join(rel, comp, left_time="release_at", by=_KEYS, strict=True, suffix="_p")
        out = agent.join(term.drop("release_at"), on=_KEYS, how="left")
    return out.rename({"available_at_p": "p_available_at"})


def _agents_and_comparators(nowcasts, agents, comparators):
    valid = nowcasts.filter(pl.col("valid"))
    a = list(agents) if agents is not None else models(valid, is_agent)
    c = list(comparators) if comparators is not None else models(valid, is_comparator)
    return a, c


def convergence(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    scales: pl.DataFrame,
    *,
    agents: Sequence[str] | None = None,
    comparators: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Test 1 (Tables 3/4) for every agent x comparator x series both cover.

    ``nowcasts`` (``nowcasts`` frame: agents and comparators), ``releases``, ``scales`` (``surprise_scales``).
    ``agents`` default every :func:`.series.is_agent` model, ``comparators`` every ``consensus/*``,
    ``fed/*``, ``market/*`` model. Returns ``(series, bins)``: ``series`` (table ``copying_convergence``) one
    row per (agent, comparator, indicator, reference period, run) with the terminal gap and rho_S; ``bins``
    (table ``copying_gap_bins``) the series' median gap per hours-before-release bin of Table 4. Gaps in sigma
    units. Raises :class:`AnalysisError` for missing columns or an indicator without sigma.
    """
    a_ids, c_ids = _agents_and_comparators(nowcasts, agents, comparators)
    pre = _pre_release(nowcasts, releases)
    comp_all = nowcasts.filter(pl.col("valid") & pl.col("value").is_not_null())
    rows, bins = [], []
    for c in c_ids:
        comp = comp_all.filter(pl.col("model_id") == c)
        rule = comparator_rule(c)
        for a in a_ids:
            ag = pre.filter(pl.col("model_id") == a).join(comp.select(_KEYS).unique(), on=_KEYS, how="semi")
            if ag.height == 0:
                continue
            j = _sigma(_comparator_values(ag, comp, rule), scales)
            for key, g in j.group_by([*_KEYS, "run_id"], maintain_order=True):
                have = g.filter(pl.col("p_value").is_not_null()).sort("issued_at")
                if have.height == 0:
                    continue
                gap = ((have["value"] - have["p_value"]).abs() / have["sigma"]).to_numpy()
                hours = have["hours_to_release"].to_numpy()
                rho, p = _spearman(gap, hours)
                avail = max(
                    have["available_at"].max(), have["p_available_at"].max(), have["available_at_sigma"][0]
                )
                rows.append(
                    {
                        "partition_key": a,
                        "model_id": a,
                        "comparator_model_id": c,
                        "comparator_rule": rule,
                        "indicator_id": key[0],
                        "reference_period": key[1],
                        "run_id": key[2],
                        "release_at": have["release_at"][0],
                        "sigma": have["sigma"][0],
                        "n_nowcasts": have.height,
                        "n_without_comparator": g.height - have.height,
                        "first_issued_at": have["issued_at"][0],
                        "terminal_issued_at": have["issued_at"][-1],
                        "terminal_value": have["value"][-1],
                        "terminal_comparator_value": have["p_value"][-1],
                        "terminal_gap_sigma": float(gap[-1]),
                        "spearman_rho": rho,
                        "spearman_p": p,
                        "available_at": avail,
                    }
                )
                for lo, hi, label in HOUR_BINS:
                    m = (hours >= lo) & (hours < hi)
                    if m.any():
                        bins.append(
                            {
                                "partition_key": a,
                                "model_id": a,
                                "comparator_model_id": c,
                                "indicator_id": key[0],
                                "reference_period": key[1],
                                "run_id": key[2],
                                "bin": label,
                                "hours_lo": lo,
                                "hours_hi": None if math.isinf(hi) else hi,
                                "n_nowcasts": int(m.sum()),
                                "median_gap_sigma": float(np.median(gap[m])),
                                "available_at": avail,
                            }
                        )
    return (table_frame("copying_convergence", rows), table_frame("copying_gap_bins", bins))


def _spearman(gap: np.ndarray, hours: np.ndarray) -> tuple[float | None, float | None]:
    if gap.size < 3 or np.ptp(gap) == 0 or np.ptp(hours) == 0:
        return None, None
    r = stats.spearmanr(gap, hours)
    return float(r.statistic), float(r.pvalue)


def _day_ends(first: datetime, release_at: datetime) -> list[datetime]:
    """End of every America/New_York day from ``first``'s day to the release day, the last one capped at the
    release (values are read strictly before each)."""
    day = first.astimezone(pit.ET).date()
    out = []
    while True:
        nxt = datetime(day.year, day.month, day.day, tzinfo=pit.ET) + timedelta(days=1)
        nxt = datetime(nxt.year, nxt.month, nxt.day, tzinfo=pit.ET).astimezone(pit.UTC)  # midnight across DST
        if nxt >= release_at:
            out.append(release_at)
            return out
        out.append(nxt)
        day = nxt.astimezone(pit.ET).date()


def comovement(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    *,
    agents: Sequence[str] | None = None,
    comparators: Sequence[str] | None = None,
    min_pairs: int = 3,
) -> pl.DataFrame:
    """Test 2 (Table 5): r_Delta per (agent, comparator, indicator), pooled across series (reference periods,
    runs).

    Daily values: the latest strictly before each America/New_York day end (the release on release day);
    days run from the first day both have a value to the release day. ``status``: ``ok``, ``too_few_days``
    (fewer than ``min_pairs`` pairs of changes), ``comparator_constant`` or ``agent_constant`` (no variation
    in the changes: r undefined; always the case for a ``terminal`` consensus). Returns the
    ``copying_comovement`` frame."""
    a_ids, c_ids = _agents_and_comparators(nowcasts, agents, comparators)
    pre = _pre_release(nowcasts, releases)
    comp_all = nowcasts.filter(pl.col("valid") & pl.col("value").is_not_null())
    rows = []
    for c in c_ids:
        comp = comp_all.filter(pl.col("model_id") == c)
        rule = comparator_rule(c)
        for a in a_ids:
            ag = pre.filter(pl.col("model_id") == a)
            for ind in sorted(set(ag["indicator_id"].unique()) & set(comp["indicator_id"].unique())):
                da, dc, refs, days, avail = [], [], 0, [], []
                for (ref, _run), g in ag.filter(pl.col("indicator_id") == ind).group_by(
                    ["reference_period", "run_id"], maintain_order=True
                ):
                    rel_at = g["release_at"][0]
                    cs = comp.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref))
                    if cs.height == 0:
                        continue
                    ends = pl.DataFrame(
                        {
                            "indicator_id": ind,
                            "reference_period": ref,
                            "release_at": rel_at,
                            "at": _day_ends(g["issued_at"].min(), rel_at),
                        },
                        schema_overrides={"at": _TS, "release_at": _TS},
                    )
                    xa = pit.as_of_join(
                        ends, g.select(*_KEYS, "value", "available_at"), left_time="at", by=_KEYS, strict=True
                    )
                    if rule == AS_OF:
                        xc = pit.as_of_join(
                            ends,
                            cs.select(*_KEYS, "value", "available_at"),
                            left_time="at",
                            by=_KEYS,
                            strict=True,
                        )
                    else:
                        term = pit.as_of(cs, rel_at, _KEYS, strict=True)
                        xc = ends.with_columns(
                            pl.lit(term["value"][0] if term.height else None, pl.Float64).alias("value"),
                            pl.lit(term["available_at"][0] if term.height else None, _TS).alias(
                                "available_at_asof"
                            ),
                        )
                    both = pl.DataFrame(
                        {
                            "at": ends["at"],
                            "a": xa["value"],
                            "c": xc["value"],
                            "ta": xa["available_at_asof"],
                            "tc": xc["available_at_asof"],
                        }
                    ).drop_nulls()
                    if both.height < 2:
                        continue
                    refs += 1
                    da.append(np.diff(both["a"].to_numpy()))
                    dc.append(np.diff(both["c"].to_numpy()))
                    days.extend([both["at"][0], both["at"][-1]])
                    avail.extend([both["ta"].max(), both["tc"].max()])
                if not refs:
                    continue
                xa_, xc_ = np.concatenate(da), np.concatenate(dc)
                r = p = None
                if xa_.size < min_pairs:
                    status = "too_few_days"
                elif np.ptp(xc_) == 0:
                    status = "comparator_constant"
                elif np.ptp(xa_) == 0:
                    status = "agent_constant"
                else:
                    res = stats.pearsonr(xa_, xc_)
                    r, p, status = float(res.statistic), float(res.pvalue), "ok"
                rows.append(
                    {
                        "partition_key": a,
                        "model_id": a,
                        "comparator_model_id": c,
                        "comparator_rule": rule,
                        "indicator_id": ind,
                        "n_series": refs,
                        "n_day_pairs": int(xa_.size),
                        "r_delta": r,
                        "p_value": p,
                        "status": status,
                        "first_day_end": min(days),
                        "last_day_end": max(days),
                        "available_at": max(avail),
                    }
                )
    return table_frame("copying_comovement", rows)


def thin_updates(
    times: Sequence[datetime], min_gap: timedelta = timedelta(hours=MIN_GAP_HOURS)
) -> list[datetime]:
    """Publication times in order, dropping each that comes less than ``min_gap`` after the previously kept
    one (Table 6: the +-24 h windows stay disjoint)."""
    kept: list[datetime] = []
    for t in sorted(times):
        if not kept or t - kept[-1] >= min_gap:
            kept.append(t)
    return kept


def large_revisions(abs_delta: np.ndarray, quantile: float = LARGE_QUANTILE) -> np.ndarray:
    """Boolean mask: |Delta| at or above the ``quantile`` (numpy linear) of the series and not zero."""
    if abs_delta.size == 0:
        return np.zeros(0, dtype=bool)
    return (abs_delta >= np.quantile(abs_delta, quantile)) & (abs_delta > 0)


def event_time(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    *,
    agents: Sequence[str] | None = None,
    comparators: Sequence[str] | None = None,
    window_hours: float = WINDOW_HOURS,
    min_gap_hours: float = MIN_GAP_HOURS,
    quantile: float = LARGE_QUANTILE,
    draws: int = PERM_DRAWS,
    seed: int = PERM_SEED,
) -> pl.DataFrame:
    """Test 3 (Table 6) per (agent, Fed comparator, indicator), pooled across series (reference periods,
    runs).

    ``comparators`` default every ``fed/*`` model. A revision's time is the later nowcast's ``issued_at``;
    Fed update times are the comparator's valid publications before the release of the same reference period.
    Returns the ``copying_event_time`` frame (``status`` ``ok`` or ``no_large_revisions`` /
    ``no_revisions_inside`` / ``no_revisions_outside``, with p-values NULL where undefined). Raises
    :class:`AnalysisError` for ``draws < 1`` or a quantile outside (0, 1)."""
    if draws < 1:
        raise AnalysisError(f"draws={draws}: need at least one permutation")
    if not 0 < quantile < 1:
        raise AnalysisError(f"quantile={quantile}: must lie in (0, 1)")
    valid = nowcasts.filter(pl.col("valid"))
    a_ids = list(agents) if agents is not None else models(valid, is_agent)
    c_ids = list(comparators) if comparators is not None else models(valid, lambda m: m.startswith("fed/"))
    pre = _pre_release(nowcasts, releases)
    win = timedelta(hours=window_hours)
    rows = []
    for c in c_ids:
        comp = valid.filter(pl.col("model_id") == c)
        for a in a_ids:
            ag = pre.filter(pl.col("model_id") == a)
            for ind in sorted(set(ag["indicator_id"].unique()) & set(comp["indicator_id"].unique())):
                per_series, upd_all, kept_all, refs, avail = [], set(), set(), 0, []
                for (ref, _run), g in (
                    ag.filter(pl.col("indicator_id") == ind)
                    .sort("issued_at")
                    .group_by(["reference_period", "run_id"], maintain_order=True)
                ):
                    rel_at = g["release_at"][0]
                    cs = comp.filter(
                        (pl.col("indicator_id") == ind)
                        & (pl.col("reference_period") == ref)
                        & (pl.col("available_at") < rel_at)
                    )
                    if cs.height == 0 or g.height < 2:
                        continue
                    refs += 1
                    upd = thin_updates(cs["available_at"].to_list(), timedelta(hours=min_gap_hours))
                    upd_all |= {(ref, u) for u in cs["available_at"].to_list()}
                    kept_all |= {(ref, u) for u in upd}
                    t = g["issued_at"].to_list()[1:]
                    d = np.abs(np.diff(g["value"].to_numpy()))
                    inside = np.array([any(u - win <= ti < u + win for u in upd) for ti in t], dtype=bool)
                    per_series.append((d, inside, large_revisions(d, quantile)))
                    avail.extend([g["available_at"].max(), cs["available_at"].max()])
                if not per_series:
                    continue
                rows.append(
                    {
                        "partition_key": a,
                        "model_id": a,
                        "comparator_model_id": c,
                        "indicator_id": ind,
                        "n_series": refs,
                        "n_fed_updates": len(upd_all),
                        "n_fed_updates_kept": len(kept_all),
                        **_concentration(per_series, draws, seed),
                        "perm_draws": draws,
                        "perm_seed": seed,
                        "window_hours": window_hours,
                        "available_at": max(avail),
                    }
                )
    return table_frame("copying_event_time", rows)


def _concentration(per_series, draws: int, seed: int) -> dict:
    d = np.concatenate([s[0] for s in per_series])
    inside = np.concatenate([s[1] for s in per_series])
    large = np.concatenate([s[2] for s in per_series])
    out = {
        "n_revisions": int(d.size),
        "n_large": int(large.sum()),
        "n_inside": int(inside.sum()),
        "share_large_inside": None,
        "share_all_inside": float(inside.mean()) if d.size else None,
        "delta_share": None,
        "perm_p": None,
        "ks_stat": None,
        "ks_p": None,
        "status": "ok",
    }
    if inside.all():
        out["status"] = "no_revisions_outside"
    elif not inside.any():
        out["status"] = "no_revisions_inside"
    else:
        ks = stats.ks_2samp(d[inside], d[~inside])
        out["ks_stat"], out["ks_p"] = float(ks.statistic), float(ks.pvalue)
    if not large.any():
        out["status"] = "no_large_revisions"
        return out
    obs = large[inside].sum() / large.sum() - inside.mean()
    out["share_large_inside"] = float(large[inside].sum() / large.sum())
    out["delta_share"] = float(obs)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        # magnitudes reassigned across each series' own revision times: the large flags move with them
        lp = np.concatenate([rng.permutation(s[2]) for s in per_series])
        stat = lp[inside].sum() / lp.sum() - inside.mean()
        hits += abs(stat) >= abs(obs) - 1e-12
    out["perm_p"] = (1 + hits) / (draws + 1)
    return out
