"""Coverage-robust rankings: two-way fixed effects of per-event loss on event and model, with a cluster
bootstrap that re-estimates the fixed effects in every replicate.

Source: ForecastBench's difficulty-adjusted Brier score (Karger et al., "ForecastBench: A Dynamic Benchmark
of AI Forecasting Capabilities", ICLR 2025, and the 2025 leaderboard methodology update of
forecastingresearch/forecastbench): the loss of forecaster m on question g is modelled as
``loss_mg = alpha_g + theta_m + e_mg`` (question and forecaster fixed effects, estimated by least squares on
the unbalanced panel); ``theta_m`` is the forecaster's difficulty-adjusted score, so a model that answered
only easy (or only hard) questions is neither flattered nor punished by its coverage. Here the same estimator
is generic: any per-event loss (squared error, Brier score, ...), any event (a macro release event, an event
task), each model scored on its own events.

The estimator (exact, not iterative): weighted least squares ``min sum_i w_g(i) (y_i - alpha_g(i) -
theta_m(i))^2`` over the rows (one per model and event); the event effects are concentrated out, leaving the
M x M system ``(diag(W_m) - W' diag(1/W_g) W) theta = b_m - W' diag(1/W_g) b_g`` (W the N x M matrix of row
weights), solved with the reference model's effect fixed at 0. Models are identified only when the
model-event graph connects them to the reference (:class:`RankingError` otherwise).

Scales. The model's *level* ``L_m = abar + theta_m`` (``abar``: the event-weighted mean of the event effects
over every event of the fit) is its difficulty-adjusted mean loss on the whole event set; in a balanced panel
it is exactly the model's mean loss (tested identity). The headline maps levels onto a track's scale:
``"symmetric"`` ``(L_ref - L_m)/(L_ref + L_m)`` (the LiveMacro Score form, Eq. 2 of LiveMacroEval, against
the reference; levels clipped at 0 since the loss is non-negative), ``"skill"`` ``1 - L_m/L_ref`` (fev's
skill score against a reference), ``"loss"`` the level itself (lower is better), or a callable.

Event effects. The two-way model assumes additive effects: a model's excess loss is the same on every
event up to noise. A model whose excess loss is very uneven (auto-ARIMA on five COVID payroll events) leaves
large residuals that the shared event effects partly absorb, which shifts the effects of the models it
shares events with (tested: a -1.0 model beside such a model is estimated near 0). Where one reference model
answers every event (the macro consensus), ``event_effects="reference"`` takes the event effect from the
reference alone: theta_m is then m's mean excess loss over the reference on m's own events, immune to other
models' residuals, and adding or removing another model changes no one's score. With
``event_effects="all"`` (the ForecastBench default) every fitted model informs the event effects.

Uncertainty: a bootstrap over clusters (a cluster is a set of events, e.g. one cutoff date of a domain): each
replicate draws the clusters with replacement, which multiplies every row's weight by its cluster's count,
and RE-ESTIMATES the fixed effects and the levels on it (ForecastBench re-estimates its question effects per
replicate too). From the same replicates: percentile intervals, P(rank = 1) among the ranked models, and a
paired interval of each model's score minus the reference's.

Entry rule: a model is estimated and ranked only with at least ``min_events`` events (:data:`MIN_EVENTS` =
20 by default); the others are listed with their count and no score, and do not enter the fit, so a small
partial submission cannot move anyone else's headline.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

MIN_EVENTS = 20  # fewest events a model needs to enter a coverage-robust headline
DEFAULT_BOOT = 1000
DEFAULT_SEED = 20260427
DEFAULT_LEVEL = 0.90
SCALES = ("symmetric", "skill", "loss")

Scale = str | Callable[[np.ndarray, int], np.ndarray]


class RankingError(ValueError):
    """Ranking inputs are unusable; the message names the field and the offending value."""


@dataclass(frozen=True)
class Panel:
    """Encoded long panel: one row per (model, event). ``m`` (n,) model codes into ``models``; ``g`` (n,)
    event codes into ``events``; ``y`` (n,) losses; ``w`` (n,) event weights (constant within an event);
    ``c`` (n,) cluster codes into ``clusters`` (None without clusters); ``event_weight`` (N,)."""

    models: tuple[str, ...]
    events: tuple[Hashable, ...]
    m: np.ndarray
    g: np.ndarray
    y: np.ndarray
    w: np.ndarray
    event_weight: np.ndarray
    clusters: tuple[Hashable, ...] | None = None
    c: np.ndarray | None = None
    event_cluster: np.ndarray | None = None  # (N,) cluster code of each event

    @property
    def n_events(self) -> np.ndarray:
        """(M,) number of distinct events with a positive weight of each model."""
        keep = self.w > 0
        return np.bincount(self.m[keep], minlength=len(self.models)).astype(int)


def _codes(values: Sequence, name: str) -> tuple[tuple, np.ndarray]:
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise RankingError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if any(v is None for v in arr):
        raise RankingError(f"{name} holds a missing value (None)")
    uniq = sorted(set(arr.tolist()), key=lambda v: (str(type(v)), v))
    index = {v: i for i, v in enumerate(uniq)}
    return tuple(uniq), np.fromiter((index[v] for v in arr), dtype=np.int64, count=arr.size)


def make_panel(
    model: Sequence[str],
    event: Sequence[Hashable],
    loss: Sequence[float],
    *,
    weight: Sequence[float] | None = None,
    cluster: Sequence[Hashable] | None = None,
) -> Panel:
    """Validate and encode a long panel of per-event losses.

    ``model``, ``event``, ``loss`` (and ``weight``, ``cluster``): equal-length sequences, one entry per
    (model, event) row. ``weight``: the event's weight in the score (default 1; >= 0, finite, the same on
    every row of one event). ``cluster``: the resampling cluster of each row's event (each event in exactly
    one cluster). Raises :class:`RankingError` naming the field and value for a length mismatch, a
    non-finite loss or weight, a negative weight, a duplicate (model, event) row, an event carrying two
    weights or lying in two clusters, or an empty panel.
    """
    n = len(loss)
    for name, v in (("model", model), ("event", event), ("weight", weight), ("cluster", cluster)):
        if v is not None and len(v) != n:
            raise RankingError(f"{name} has {len(v)} entries, loss has {n}")
    if n == 0:
        raise RankingError("loss is empty: no (model, event) rows to rank")
    models, m = _codes(model, "model")
    models = tuple(str(x) for x in models)
    events, g = _codes(event, "event")
    y = np.asarray(loss, dtype=float)
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RankingError(f"loss must be finite; model={models[m[i]]} event={events[g[i]]} has {y[i]}")
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=float)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RankingError(f"weight must be finite and >= 0; event={events[g[i]]} has {w[i]}")
    key = g * len(models) + m
    uniq, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        k = int(uniq[np.argmax(counts > 1)])
        raise RankingError(f"duplicate row: model={models[k % len(models)]} event={events[k // len(models)]}")
    N = len(events)
    ew = np.zeros(N)
    ew[g] = w
    if not np.allclose(ew[g], w, rtol=0, atol=0):
        i = int(np.flatnonzero(ew[g] != w)[0])
        raise RankingError(f"weight differs across rows of event={events[g[i]]}: {w[i]} and {ew[g[i]]}")
    clusters = c = ec = None
    if cluster is not None:
        clusters, c = _codes(cluster, "cluster")
        ec = np.full(N, -1)
        ec[g] = c
        if (ec[g] != c).any():
            i = int(np.flatnonzero(ec[g] != c)[0])
            raise RankingError(
                f"event={events[g[i]]} lies in two clusters: {clusters[c[i]]} and {clusters[ec[g[i]]]}"
            )
    return Panel(models, events, m, g, y, w, ew, clusters, c, ec)


@dataclass(frozen=True)
class TwoWayFit:
    """Two-way fixed-effects fit. ``effect`` (M,): theta_m - theta_ref in loss units (lower is better; NaN
    for a model not in the fit); ``level`` (M,): abar + theta_m, the difficulty-adjusted mean loss on every
    event of the fit; ``event_effect`` (N,): alpha_g (NaN for an event no fitted model has)."""

    models: tuple[str, ...]
    reference: str
    effect: np.ndarray
    level: np.ndarray
    event_effect: np.ndarray
    n_events: np.ndarray

    def level_of(self, model: str) -> float:
        return float(self.level[self.models.index(model)])


def _anchored(
    P: Panel, m: np.ndarray, g: np.ndarray, y: np.ndarray, ww: np.ndarray, ref: int, strict: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Event effects from the reference alone: alpha_g = the reference's loss, theta_m = the weighted mean of
    (loss - alpha_g) over m's events (the fit restricted to the reference's events)."""
    M, N = len(P.models), len(P.events)
    alpha = np.full(N, np.nan)
    is_ref = m == ref
    alpha[g[is_ref]] = y[is_ref]
    on = np.isfinite(alpha[g])
    if strict and not on.all():
        i = int(np.flatnonzero(~on)[0])
        raise RankingError(
            f"event_effects='reference' needs the reference on every event; model={P.models[m[i]]} has "
            f"event={P.events[g[i]]} without it"
        )
    m, g, y, ww = m[on], g[on], y[on], ww[on]
    Wm = np.bincount(m, weights=ww, minlength=M)
    num = np.bincount(m, weights=ww * (y - alpha[g]), minlength=M)
    theta = np.where(Wm > 0, num / np.where(Wm > 0, Wm, 1.0), np.nan)
    theta[ref] = 0.0
    ev_w = np.zeros(N)
    ev_w[g[m == ref]] = ww[m == ref]
    has = ev_w > 0
    abar = float(ev_w[has] @ alpha[has] / ev_w[has].sum())
    return theta, alpha, abar + theta


def _solve(
    P: Panel, w: np.ndarray, ref: int, fitted: np.ndarray, *, strict: bool, event_effects: str = "all"
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(theta (M,), alpha (N,), level (M,)) of the WLS fit with row weights ``w`` on the models ``fitted``
    (bool (M,)); theta_ref = 0. Models with no weight, or not connected to the reference, are NaN (strict:
    raise). None when the reference has no weight."""
    M, N = len(P.models), len(P.events)
    keep = (w > 0) & fitted[P.m]
    m, g, y, ww = P.m[keep], P.g[keep], P.y[keep], w[keep]
    Wm = np.bincount(m, weights=ww, minlength=M)
    if Wm[ref] <= 0:
        if strict:
            raise RankingError(f"reference model {P.models[ref]!r} has no event with a positive weight")
        return None
    if event_effects == "reference":
        return _anchored(P, m, g, y, ww, ref, strict)
    if event_effects != "all":
        raise RankingError(f"event_effects must be 'all' or 'reference', got {event_effects!r}")
    # connectivity of the model-event graph: only models in the reference's component are identified
    adj = coo_matrix((np.ones(m.size), (m, M + g)), shape=(M + N, M + N))
    _, comp = connected_components(adj, directed=False)
    ident = (Wm > 0) & (comp[:M] == comp[ref])
    if strict:
        lost = [P.models[i] for i in np.flatnonzero(fitted & ~ident)]
        if lost:
            raise RankingError(
                f"model(s) {lost} share no chain of events with the reference {P.models[ref]!r}: "
                "their effects are not identified"
            )
    sel = ident[m]
    m, g, y, ww = m[sel], g[sel], y[sel], ww[sel]
    W = np.zeros((N, M))
    WY = np.zeros((N, M))
    W[g, m] = ww
    WY[g, m] = ww * y
    Wg = W.sum(axis=1)
    inv = np.divide(1.0, Wg, out=np.zeros(N), where=Wg > 0)
    Wm = W.sum(axis=0)
    A = np.diag(Wm) - (W.T * inv) @ W
    b = WY.sum(axis=0) - W.T @ (inv * WY.sum(axis=1))
    free = np.flatnonzero(ident & (np.arange(M) != ref))
    theta = np.full(M, np.nan)
    theta[ref] = 0.0
    if free.size:
        theta[free] = np.linalg.solve(A[np.ix_(free, free)], b[free])
    th = np.where(ident, theta, 0.0)
    alpha = np.full(N, np.nan)
    has = Wg > 0
    alpha[has] = (WY.sum(axis=1)[has] - W[has] @ th) / Wg[has]
    # abar over every event of the fit, weighted by the event weight (x the replicate's cluster count)
    ev_w = np.zeros(N)
    ev_w[g] = ww
    abar = float(ev_w[has] @ alpha[has] / ev_w[has].sum())
    return theta, alpha, abar + theta


def fit_two_way(
    panel: Panel, *, reference: str, models: Sequence[str] | None = None, event_effects: str = "all"
) -> TwoWayFit:
    """Two-way fixed effects of per-event loss on event and model (module notes; ForecastBench).

    ``panel``: :func:`make_panel` output. ``reference``: the model whose effect is 0 and whose level anchors
    the scales. ``models``: the models entered in the fit (default: all); the others get NaN.
    ``event_effects``: ``"all"`` (ForecastBench: every fitted model informs the event effects) or
    ``"reference"`` (the event effect is the reference's loss, so theta_m is m's mean excess loss over the
    reference on m's own events; needs the reference on every event; module notes). Returns a
    :class:`TwoWayFit`. Raises :class:`RankingError` for an unknown reference or model, a reference outside
    ``models``, or a model not connected to the reference through shared events.
    """
    if reference not in panel.models:
        raise RankingError(f"reference={reference!r} is not a model of the panel {list(panel.models)}")
    names = panel.models if models is None else tuple(models)
    unknown = [x for x in names if x not in panel.models]
    if unknown:
        raise RankingError(f"models={unknown} are not in the panel")
    if reference not in names:
        raise RankingError(f"reference={reference!r} must be among the fitted models")
    fitted = np.isin(np.array(panel.models, dtype=object), np.array(names, dtype=object))
    ref = panel.models.index(reference)
    theta, alpha, level = _solve(panel, panel.w, ref, fitted, strict=True, event_effects=event_effects)
    return TwoWayFit(panel.models, reference, theta, level, alpha, panel.n_events)


def to_scale(level: np.ndarray, ref: int, scale: Scale) -> np.ndarray:
    """Map levels (M,) (or (B, M)) onto a headline scale against the reference column ``ref``: ``"symmetric"``
    (L_ref - L)/(L_ref + L) in [-1, 1] with levels clipped at 0 (NaN where both are 0), ``"skill"``
    1 - L/L_ref (NaN when L_ref <= 0), ``"loss"`` L; a callable ``scale(level, ref)`` is applied as is.
    Every scale but ``"loss"`` is higher-is-better. Raises :class:`RankingError` for an unknown scale."""
    lv = np.asarray(level, dtype=float)
    if callable(scale):
        return np.asarray(scale(lv, ref), dtype=float)
    L_ref = lv[..., ref : ref + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        if scale == "symmetric":
            a, r = np.maximum(lv, 0.0), np.maximum(L_ref, 0.0)
            return np.where(a + r > 0, (r - a) / (a + r), np.nan)
        if scale == "skill":
            return np.where(L_ref > 0, 1.0 - lv / L_ref, np.nan)
        if scale == "loss":
            return lv.copy()
    raise RankingError(f"scale must be one of {SCALES} or a callable, got {scale!r}")


def cluster_resamples(n_clusters: int, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(B, C) counts of B bootstrap resamples of C clusters drawn with replacement (each row sums to C);
    the same ``seed`` gives the same resamples to every model (paired comparisons)."""
    if n_clusters < 1:
        raise RankingError("cluster bootstrap needs at least one cluster")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(float)


@dataclass(frozen=True)
class Ranking:
    """A coverage-robust board. Per model (arrays of shape (M,), in ``models`` order; NaN where a model is
    not ranked): ``n_events``; ``ranked`` (enough events and identified); ``effect`` (theta_m - theta_ref,
    loss units); ``level``; ``score`` (the headline scale); ``ci`` (M, 2) percentile interval of the score;
    ``rank`` (1 = best, ties share the best rank); ``p_rank1`` (share of replicates where the model is the
    best ranked model, ties split); ``diff`` = score - reference score with its paired interval ``diff_ci``
    (M, 2) and ``p_better`` (share of replicates better than the reference). ``draws`` (B, M): the
    replicate scores."""

    models: tuple[str, ...]
    reference: str
    scale: str
    event_effects: str
    higher_is_better: bool
    min_events: int
    level_ci: float
    n_boot: int
    n_clusters: int
    n_events: np.ndarray
    ranked: np.ndarray
    effect: np.ndarray
    level: np.ndarray
    score: np.ndarray
    ci: np.ndarray
    rank: np.ndarray
    p_rank1: np.ndarray
    diff: np.ndarray
    diff_ci: np.ndarray
    p_better: np.ndarray
    draws: np.ndarray

    def rows(self) -> list[dict]:
        """One dict per model (sorted by rank, then unranked models by name) with plain Python values: model,
        n_events, ranked, rank, score, ci_lo, ci_hi, p_rank1, diff, diff_lo, diff_hi, p_better, effect,
        level (None for NaN)."""

        def f(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        out = []
        for i, name in enumerate(self.models):
            out.append(
                {
                    "model": name,
                    "n_events": int(self.n_events[i]),
                    "ranked": bool(self.ranked[i]),
                    "rank": None if not np.isfinite(self.rank[i]) else int(self.rank[i]),
                    "score": f(self.score[i]),
                    "ci_lo": f(self.ci[i, 0]),
                    "ci_hi": f(self.ci[i, 1]),
                    "p_rank1": f(self.p_rank1[i]),
                    "diff": f(self.diff[i]),
                    "diff_lo": f(self.diff_ci[i, 0]),
                    "diff_hi": f(self.diff_ci[i, 1]),
                    "p_better": f(self.p_better[i]),
                    "effect": f(self.effect[i]),
                    "level": f(self.level[i]),
                }
            )
        return sorted(out, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["model"]))


def stored_fields(row: Mapping) -> dict:
    """The columns a stored ranking table (``livemacro_rankings``, ``event_rankings``) keeps of one
    :meth:`Ranking.rows` row, under their stored names: ranked, rank, score, ci90_lo / ci90_hi (the
    percentile interval), p_rank1, diff_ci90_lo / diff_ci90_hi (the paired interval against the reference),
    p_better, effect, level."""
    return {
        "ranked": row["ranked"],
        "rank": row["rank"],
        "score": row["score"],
        "ci90_lo": row["ci_lo"],
        "ci90_hi": row["ci_hi"],
        "p_rank1": row["p_rank1"],
        "diff_ci90_lo": row["diff_lo"],
        "diff_ci90_hi": row["diff_hi"],
        "p_better": row["p_better"],
        "effect": row["effect"],
        "level": row["level"],
    }


def _anchored_levels(
    P: Panel, K: np.ndarray, cl: np.ndarray, n_cl: int, ref: int, fitted: np.ndarray
) -> np.ndarray:
    """(B, M) levels of every replicate of the reference-anchored fit at once: the replicate's theta_m is a
    count-weighted ratio of per-cluster sums, so B replicates are two (B x C) @ (C x M) products (the same
    numbers as :func:`_solve` on weights w x K[b, cluster])."""
    M, N = len(P.models), len(P.events)
    alpha = np.full(N, np.nan)
    is_ref = P.m == ref
    alpha[P.g[is_ref]] = P.y[is_ref]
    on = fitted[P.m] & np.isfinite(alpha[P.g]) & (P.w > 0)
    m, c, w, d = P.m[on], cl[on], P.w[on], (P.y - alpha[P.g])[on]
    Sd = np.zeros((n_cl, M))
    Sw = np.zeros((n_cl, M))
    np.add.at(Sd, (c, m), w * d)
    np.add.at(Sw, (c, m), w)
    r = on & is_ref
    Sa = np.bincount(cl[r], weights=(P.w * P.y)[r], minlength=n_cl)
    with np.errstate(invalid="ignore", divide="ignore"):
        KW = K @ Sw
        theta = np.where(KW > 0, (K @ Sd) / KW, np.nan)
        theta[:, ref] = np.where(KW[:, ref] > 0, 0.0, np.nan)
        abar = (K @ Sa) / KW[:, ref]
    return abar[:, None] + theta


def _ranks(score: np.ndarray, ranked: np.ndarray, higher: bool) -> np.ndarray:
    s = np.where(ranked & np.isfinite(score), score if higher else -score, np.nan)
    out = np.full(s.shape, np.nan)
    for i in np.flatnonzero(np.isfinite(s)):
        out[i] = 1 + int(np.sum(s[np.isfinite(s)] > s[i]))
    return out


def _pct(x: np.ndarray, level: float) -> np.ndarray:
    """(M, 2) percentile interval of each column of x (B, M), NaN draws ignored; NaN without a finite draw."""
    a = (1 - level) / 2 * 100
    out = np.full((x.shape[1], 2), np.nan)
    for j in range(x.shape[1]):
        v = x[:, j][np.isfinite(x[:, j])]
        if v.size:
            out[j] = np.percentile(v, [a, 100 - a])
    return out


def rank_models(
    panel: Panel,
    *,
    reference: str,
    scale: Scale = "symmetric",
    higher_is_better: bool | None = None,
    min_events: int = MIN_EVENTS,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    event_effects: str = "all",
) -> Ranking:
    """Coverage-robust ranking with a cluster bootstrap (module notes; ForecastBench's difficulty adjustment).

    ``panel``: :func:`make_panel` output with clusters (without them every event is its own cluster).
    ``reference``: the baseline model (0 effect; the scale's anchor); it must have ``min_events`` events.
    ``scale``: see :func:`to_scale`; ``higher_is_better`` defaults to False for ``"loss"``, True otherwise.
    ``min_events``: models with fewer events are listed but neither fitted nor ranked. ``n_boot``
    replicates drawn with ``seed`` (:func:`cluster_resamples`); every replicate re-estimates the fixed effects
    and levels on the resampled clusters (a model whose events all fall out of a replicate is NaN there and
    not counted in that replicate's P(rank = 1)). ``level``: interval coverage (0.90 = 5th-95th
    percentiles). ``event_effects``: as :func:`fit_two_way`. Returns a :class:`Ranking`. Raises
    :class:`RankingError` as :func:`fit_two_way`, and when
    the reference has fewer than ``min_events`` events.
    """
    if not 0 < level < 1:
        raise RankingError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise RankingError(f"n_boot must be >= 1, got {n_boot}")
    if reference not in panel.models:
        raise RankingError(f"reference={reference!r} is not a model of the panel {list(panel.models)}")
    higher = (scale != "loss") if higher_is_better is None else bool(higher_is_better)
    n_ev = panel.n_events
    ref = panel.models.index(reference)
    eligible = n_ev >= min_events
    if not eligible[ref]:
        raise RankingError(
            f"reference={reference!r} has {n_ev[ref]} events, fewer than min_events={min_events}"
        )
    fit = fit_two_way(
        panel,
        reference=reference,
        models=[panel.models[i] for i in np.flatnonzero(eligible)],
        event_effects=event_effects,
    )
    score = to_scale(fit.level, ref, scale)
    ranked = eligible & np.isfinite(score)
    rank = _ranks(score, ranked, higher)
    if panel.c is None:
        cl = panel.g
        n_cl = len(panel.events)
    else:
        cl = panel.c
        n_cl = len(panel.clusters)
    K = cluster_resamples(n_cl, n_boot, seed)
    M = len(panel.models)
    draws = np.full((n_boot, M), np.nan)
    if event_effects == "reference":
        draws = to_scale(_anchored_levels(panel, K, cl, n_cl, ref, eligible), ref, scale)
    else:
        for b in range(n_boot):
            res = _solve(panel, panel.w * K[b, cl], ref, eligible, strict=False, event_effects=event_effects)
            if res is not None:
                draws[b] = to_scale(res[2], ref, scale)
    draws[:, ~ranked] = np.nan
    signed = draws if higher else -draws
    best = np.where(np.isfinite(signed), signed, -np.inf)
    top = best.max(axis=1, keepdims=True)
    winners = (best == top) & np.isfinite(signed) & np.isfinite(top)
    nwin = winners.sum(axis=1, keepdims=True)
    p1 = np.where(ranked, (winners / np.maximum(nwin, 1)).sum(axis=0) / max(int((nwin > 0).sum()), 1), np.nan)
    d = draws - draws[:, ref : ref + 1]
    diff = np.where(ranked, score - score[ref], np.nan)
    with np.errstate(invalid="ignore"):
        better = (d > 0) if higher else (d < 0)
        fin = np.isfinite(d)
        p_better = np.where(ranked, (better & fin).sum(axis=0) / np.maximum(fin.sum(axis=0), 1), np.nan)
    return Ranking(
        models=panel.models,
        reference=reference,
        scale=scale if isinstance(scale, str) else getattr(scale, "__name__", "custom"),
        event_effects=event_effects,
        higher_is_better=higher,
        min_events=int(min_events),
        level_ci=float(level),
        n_boot=int(n_boot),
        n_clusters=int(n_cl),
        n_events=n_ev,
        ranked=ranked,
        effect=np.where(ranked, fit.effect, np.nan),
        level=np.where(ranked, fit.level, np.nan),
        score=np.where(ranked, score, np.nan),
        ci=_pct(draws, level),
        rank=rank,
        p_rank1=p1,
        diff=diff,
        diff_ci=_pct(np.where(ranked[None, :], d, np.nan), level),
        p_better=p_better,
        draws=draws,
    )


def largest_event_share(panel: Panel) -> dict[str, tuple[float, Hashable]]:
    """Each model's largest single-event share of its total (weighted) loss and that event:
    ``{model: (share in [0, 1], event)}``; share NaN when the model's total loss is 0. Loss must be
    non-negative for a share to mean anything (raises :class:`RankingError` otherwise)."""
    if (panel.y < 0).any():
        raise RankingError("largest_event_share needs non-negative losses")
    out: dict[str, tuple[float, Hashable]] = {}
    wy = panel.w * panel.y
    for i, name in enumerate(panel.models):
        sel = np.flatnonzero(panel.m == i)
        tot = wy[sel].sum()
        k = sel[np.argmax(wy[sel])]
        out[name] = (float(wy[k] / tot) if tot > 0 else float("nan"), panel.events[panel.g[k]])
    return out
