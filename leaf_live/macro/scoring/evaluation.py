"""Evaluation modes: every model in the ``nowcasts`` table scored on one span of releases with frozen betas
(LiveMacroEval §3.6, §4.1-4.4, App. J, K.3-K.4, M, N, S.1-S.4).

An :class:`EvaluationMode` names a span of release months (America/New_York, the ``partition_key`` of
``releases`` / ``surprise_events``) and the named beta fits (``market_beta_fits``) to score it with. Two
modes ship as defaults:

* ``backtest`` (:data:`BACKTEST`): releases 2018-01 .. 2025-10, where announcement-window returns exist,
  scored with the ``backtest`` fit (events up to the fit cutoff 2017-12, lambda by CV on that sample);
* ``live`` (:data:`LIVE`): releases from 2025-11 on, with the full-sample fit (Table 9) and the COVID-excluded
  refit (K.3).

Rules (the same for every model, the consensus included):

* point in time: only valid nowcasts issued strictly before the release are used (``livemacro``
  selection; the caller passes rows with ``after_release = false``);
* a model that nowcasts only some indicators takes the consensus for the others: ``S_hat = 0`` for those
  releases (``live_design(missing="consensus")``); ``n_events_own`` counts the events where the model has
  its own nowcast for a released field of the scope, so a score built mostly from consensus fill is visible;
* a nowcast targets the first release of its (indicator, reference period); a later release of the same
  period (the panel's pre-2014 GDP second/third estimates) takes ``S_hat = 0``;
* releases without a consensus carry no surprise (no event when a timestamp has none); events whose
  announcement window is unusable are dropped from the return target and counted
  (:func:`event_coverage`), never silently;
* the betas must be frozen before the span: a fit whose last event is at or after the span's first
  release raises :class:`~leaf_live.macro.scoring.livemacro.ScoringError`.

Horizons ``median_<k>d`` compare the within-day median nowcast with the final consensus: the calendar
sources hold only the terminal consensus, not its cumulative-median path (K.3 uses the consensus standing
at the end of that day), so the consensus side of those horizons is the terminal one.

The surprise scales sigma_i are the frozen 2010-01 .. 2025-10 ones (``surprise_scales``) in every mode. In
the backtest this does not look ahead in any way that matters: the score depends on beta_i / sigma_i, and a
fit on surprises scaled by another constant gives the same beta_i / sigma_i up to the ridge penalty's
(CV-chosen) shrinkage.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import combinations
from typing import Mapping

import numpy as np
import polars as pl

from leaf_live.core import storage
from leaf_live.core.pit import check_month, first_per_period, is_first_per_period
from leaf_live.macro.catalog import INDICATOR_IDS, THEMES, get_indicator
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring import relative_error as RE
from leaf_live.macro.scoring.betas import MarketBetaFit
from leaf_live.macro.scoring.frames import (
    ALL_SCOPES,
    aggregator_frame,
    livemacro_scores_frame,
    paired_frame,
    relative_errors_frame,
    score_model,
    shapley_frame,
    sizing_frame,
)

TARGETS = ("return", "shock")
POOLED = "pooled"


def is_consensus(model_id: str) -> bool:
    """The consensus comparators (``consensus/<source>``) score 0 by construction."""
    return model_id.startswith("consensus/")


@dataclass(frozen=True)
class EvaluationMode:
    """A span of releases and the fits that score it.

    ``name`` is the ``partition_key`` of every scoring table row the mode writes. ``first_month`` /
    ``last_month``: release months ``YYYY-MM`` (America/New_York), inclusive; ``last_month=None`` = the latest
    release present. ``fits``: ``market_beta_fits`` names, the first one the headline (decompositions, paired
    tests, aggregator shares use it). ``horizons``: ``terminal`` and/or ``median_<k>d`` (K.3). ``targets``:
    ``return`` (LiveMacro Score, Y = r_g) and/or ``shock`` (consensus-relative score, Y = Q_g, S.1).
    Raises :class:`ScoringError` for a malformed month, an empty fit list or an unknown horizon/target.
    """

    name: str
    first_month: str
    last_month: str | None = None
    fits: tuple[str, ...] = ("full",)
    horizons: tuple[str, ...] = ("terminal",)
    targets: tuple[str, ...] = TARGETS

    def __post_init__(self) -> None:
        if not self.name:
            raise L.ScoringError("evaluation mode needs a name")
        for f, v in (("first_month", self.first_month), ("last_month", self.last_month)):
            if v is not None:
                check_month(v, f"mode {self.name}: {f}", L.ScoringError)
        if self.last_month is not None and self.last_month < self.first_month:
            raise L.ScoringError(f"mode {self.name}: last_month {self.last_month} < first_month {self.first_month}")
        if not self.fits:
            raise L.ScoringError(f"mode {self.name}: fits is empty; name at least one market_beta_fits fit")
        for h in self.horizons:
            L._horizon_days(h)  # raises with the offending value
        bad = [t for t in self.targets if t not in TARGETS]
        if bad or not self.targets:
            raise L.ScoringError(f"mode {self.name}: targets must be a non-empty subset of {TARGETS}, got {self.targets}")

    def in_span(self, column: str = "partition_key") -> pl.Expr:
        """Rows of a release-month-partitioned table inside the span."""
        e = pl.col(column) >= self.first_month
        return e & (pl.col(column) <= self.last_month) if self.last_month else e


BACKTEST = EvaluationMode("backtest", "2018-01", "2025-10", fits=("backtest",), horizons=("terminal",))
LIVE = EvaluationMode("live", "2025-11", None, fits=("full", "no_covid"), horizons=L.HORIZONS)
DEFAULT_MODES = (BACKTEST, LIVE)


@dataclass
class ModeResult:
    """Everything one mode writes: frames conforming to ``livemacro_scores``, ``score_decompositions`` and
    ``relative_errors`` (all with ``partition_key = mode.name``), the event coverage counts, the models scored
    and the models skipped with the reason."""

    mode: EvaluationMode
    scores: pl.DataFrame
    decompositions: pl.DataFrame
    relative_errors: pl.DataFrame
    coverage: dict[str, int]
    models: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def event_coverage(releases: pl.DataFrame, events: pl.DataFrame) -> dict[str, int]:
    """Counts that say what the span could and could not score.

    ``releases``: the span's ``releases`` rows; ``events``: its ``surprise_events`` rows. Returns
    ``n_release_timestamps`` (distinct release times), ``n_releases``, ``n_releases_no_consensus`` (no
    surprise: not scored), ``n_timestamps_no_consensus`` (every release of the timestamp lacks a consensus:
    no event), ``n_events`` (timestamp-group events), ``n_events_no_usable_window`` (no announcement-window
    return: dropped from the return target) and ``n_events_scored`` (events with a usable return).
    """
    n_ts = releases["release_at"].n_unique()
    no_window = int(events.filter(pl.col("r_g").is_null() | pl.col("r_g").is_nan()).height)
    return {
        "n_release_timestamps": n_ts,
        "n_releases": releases.height,
        "n_releases_no_consensus": int(releases["consensus"].null_count()),
        "n_timestamps_no_consensus": n_ts - events.height,
        "n_events": events.height,
        "n_events_no_usable_window": no_window,
        "n_events_scored": events.height - no_window,
    }


def _first_release_only(per_release: pl.DataFrame) -> pl.DataFrame:
    """``S_hat`` (and the nowcast) only on the first release of each (indicator, reference period)."""
    first = is_first_per_period()
    return per_release.with_columns(
        pl.when(first).then(pl.col("s_hat")).alias("s_hat"),
        pl.when(first).then(pl.col("nowcast")).alias("nowcast"),
    )


def _scope_ids(scope: str) -> list[str]:
    return list(INDICATOR_IDS) if scope == "overall" else [i for i in INDICATOR_IDS if get_indicator(i).theme == scope]


def own_events(per_release: pl.DataFrame, design: L.LiveDesign, scope: str) -> int:
    """Events of ``design`` where the model has its own nowcast (non-NULL ``s_hat`` in ``per_release``) for a
    released field of ``scope``."""
    t = pl.Series("t", design.release_at).dt.replace_time_zone("UTC")
    own = per_release.filter(
        pl.col("s_hat").is_not_null() & pl.col("indicator_id").is_in(_scope_ids(scope))
        & pl.col("release_at").is_in(t.implode())
    )
    return own["release_at"].n_unique()


def _own_mask(per_release: pl.DataFrame, design: L.LiveDesign) -> np.ndarray:
    """(n_events,) True where the model has its own nowcast for some release of the event."""
    own = set(per_release.filter(pl.col("s_hat").is_not_null())["release_at"].dt.replace_time_zone(None).to_list())
    return np.array([t in own for t in pl.Series(design.release_at).to_list()], dtype=bool)


def _coverage_frame(cov: Mapping[str, int], *, partition_key: str, available_at: datetime) -> pl.DataFrame:
    rows = [{"partition_key": partition_key, "model_id": POOLED, "comparator_model_id": None, "fit_id": None,
             "horizon": "terminal", "scope": "overall", "target": None, "decomposition": "event_coverage",
             "indicator_id": None, "metric": k, "value": float(v), "available_at": available_at}
            for k, v in cov.items()]
    return storage.conform("score_decompositions", pl.DataFrame(rows, schema=storage.polars_schema("score_decompositions")))


def _relerr_frame(value: float, n: int, *, model_id: str, partition_key: str, available_at: datetime) -> pl.DataFrame:
    rows = [{"partition_key": partition_key, "model_id": model_id, "comparator_model_id": None, "fit_id": None,
             "horizon": "terminal", "scope": "overall", "target": None, "decomposition": "relative_error",
             "indicator_id": None, "metric": m, "value": float(v), "available_at": available_at}
            for m, v in (("mean_abs_rel_error", value), ("n_field_events", n))]
    return storage.conform("score_decompositions", pl.DataFrame(rows, schema=storage.polars_schema("score_decompositions")))


def _concat(frames: list[pl.DataFrame], table: str) -> pl.DataFrame:
    return pl.concat(frames, how="vertical") if frames else storage.empty_frame(table)


def evaluate_mode(
    mode: EvaluationMode,
    *,
    releases: pl.DataFrame,
    events: pl.DataFrame,
    sigma: pl.DataFrame,
    nowcasts: pl.DataFrame,
    fits: Mapping[str, MarketBetaFit],
    n_draws: int = L.DEFAULT_BOOT_DRAWS,
    seed: int = L.DEFAULT_SEED,
    sampling_k: int = L.SAMPLING_K,
    available_at: datetime | None = None,
) -> ModeResult:
    """Score every model of ``nowcasts`` on the releases of ``mode`` (see the module notes for the rules).

    Inputs are rows of the tables: ``releases`` and ``events`` (``surprise_events``) of any months (filtered
    here to the span), ``sigma`` (``surprise_scales``), ``nowcasts`` (valid rows with ``after_release =
    false`` of any number of models), ``fits`` (fit name -> frozen fit, every name in ``mode.fits``).
    ``n_draws``/``seed``: parametric bootstrap (Eq. 12) and paired event bootstrap (S.2); the same z draws
    serve every model. ``sampling_k``: the K.3 sampling interval over the k latest pre-release nowcasts
    (terminal horizon; 0 = off). ``available_at`` defaults to the latest ``available_at`` of the span's events.

    Per model x horizon x fit: the ``livemacro_scores`` rows of every scope (overall + 4 themes) and target,
    with ``n_events_own``. At the terminal horizon and the headline fit: exact Shapley allocations per scope
    and target (App. M), sizing discipline (S.4), aggregator shares (K.4; plus ``pooled`` over the
    non-consensus models), mean absolute relative error (Table 16), paired event bootstraps of every model
    pair on the events both nowcast themselves (S.2, overall scope). Relative-error curves (App. J) of every
    model. Models without a single own nowcast in the span are skipped (``ModeResult.skipped``).
    Raises :class:`ScoringError` for a missing fit, a fit that is not frozen before the span, or a span with
    no event.
    """
    missing = [f for f in mode.fits if f not in fits]
    if missing:
        raise L.ScoringError(f"mode {mode.name}: fit(s) {missing} are not in market_beta_fits; materialize market_betas with them")
    rel = releases.filter(mode.in_span())
    ev = events.filter(mode.in_span()).sort("release_at")
    if ev.height == 0:
        raise L.ScoringError(
            f"mode {mode.name}: no surprise event in release months {mode.first_month}..{mode.last_month or 'latest'}"
        )
    first_t = ev["release_at"].min()
    for name in mode.fits:
        f = fits[name]
        if f.window_end >= first_t:
            raise L.ScoringError(
                f"mode {mode.name}: fit {name!r} ({f.fit_id}) uses events up to {f.window_end:%Y-%m-%d %H:%M} UTC, not "
                f"before the span's first event {first_t:%Y-%m-%d %H:%M} UTC; betas must be frozen before the scored releases"
            )
    at = available_at or ev["available_at"].max()
    cov = event_coverage(rel, ev)
    scorable = rel.filter(pl.col("consensus").is_not_null())
    returns = ev.select("release_at", "r_g")
    headline = fits[mode.fits[0]]
    first_rel = first_per_period(rel)
    scales = RE.release_scales(first_rel)
    nc_all = nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts

    def per_release(nc: pl.DataFrame, horizon: str) -> pl.DataFrame:
        return _first_release_only(L.implied_surprises(scorable, sigma, nc, events=ev, horizon=horizon))

    scores, decomps, relerrs = [], [], []
    designs: dict[str, tuple[pl.DataFrame, L.LiveDesign]] = {}
    pooled: list[pl.DataFrame] = []
    models, skipped = [], {}
    for model in sorted(nc_all["model_id"].unique().to_list()):
        nc = nc_all.filter(pl.col("model_id") == model)
        pr_t = per_release(nc, "terminal")
        d_t = L.live_design(pr_t, returns, missing="consensus")
        if own_events(pr_t, d_t, "overall") == 0:
            skipped[model] = "no valid pre-release nowcast for a scored release in the span"
            continue
        models.append(model)
        designs[model] = (pr_t, d_t)
        for horizon in mode.horizons:
            pr, d = (pr_t, d_t) if horizon == "terminal" else (
                (p := per_release(nc, horizon)), L.live_design(p, returns, missing="consensus"))
            samp = []
            if horizon == "terminal" and sampling_k >= 2:
                samp = [L.live_design(_first_release_only(p), returns, missing="consensus")
                        for p in L.sampling_surprises(scorable, sigma, nc, events=ev, k=sampling_k)]
            own = {s: own_events(pr, d, s) for s in ALL_SCOPES}
            for name in mode.fits:
                rows = score_model(d, fits[name], model_id=model, horizon=horizon, targets=mode.targets,
                                   n_draws=n_draws, seed=seed, sampling_designs=samp)
                scores.append(livemacro_scores_frame([replace(r, n_events_own=own[r.scope]) for r in rows],
                                                     partition_key=mode.name, available_at=at))
        kw = {"model_id": model, "horizon": "terminal", "partition_key": mode.name, "available_at": at}
        for scope in ALL_SCOPES:
            for target in mode.targets:
                ps = L.point_score(d_t, headline.beta, scope=scope, target=target)
                if ps.n_events and ps.ss_cons > 0:
                    decomps.append(shapley_frame(d_t, headline, scope=scope, target=target, **kw))
        fe = pr_t.filter(pl.col("s_hat").is_not_null())
        if fe.height >= 2:
            decomps.append(sizing_frame(L.sizing_discipline(fe), **kw))
        if fe.height:
            decomps.append(aggregator_frame(RE.aggregator_shares(fe, scales, headline.beta), fit_id=headline.fit_id, **kw))
            decomps.append(_relerr_frame(RE.mean_abs_relative_error(fe, scales), fe.height, model_id=model,
                                         partition_key=mode.name, available_at=at))
            if not is_consensus(model):
                pooled.append(fe)
        pts = RE.relative_error_points(first_rel, nc, scales)
        if pts.height:
            relerrs.append(relative_errors_frame(RE.relative_error_by_month(pts), partition_key=mode.name,
                                                 available_at=at, model_id=model))
    if pooled:
        decomps.append(aggregator_frame(RE.aggregator_shares(pl.concat(pooled), scales, headline.beta), model_id=POOLED,
                                        horizon="terminal", partition_key=mode.name, available_at=at,
                                        fit_id=headline.fit_id))
    for a, b in combinations(models, 2):
        (pa, da), (pb, db) = designs[a], designs[b]
        shared = _own_mask(pa, da) & _own_mask(pb, db)  # both designs hold the same events in the same order
        if not shared.any():
            continue
        for target in mode.targets:
            try:
                pb_ = L.paired_event_bootstrap(da.subset(shared), db.subset(shared), headline.beta, scope="overall",
                                               target=target, n_draws=n_draws, seed=seed)
            except L.ScoringError:
                continue
            decomps.append(paired_frame(pb_, model_id=a, comparator_model_id=b, fit_id=headline.fit_id,
                                        horizon="terminal", scope="overall", target=target,
                                        partition_key=mode.name, available_at=at))
    decomps.append(_coverage_frame(cov, partition_key=mode.name, available_at=at))
    return ModeResult(
        mode=mode,
        scores=_concat(scores, "livemacro_scores"),
        decompositions=_concat(decomps, "score_decompositions"),
        relative_errors=_concat(relerrs, "relative_errors"),
        coverage=cov,
        models=models,
        skipped=skipped,
    )


def themes_partition_releases(scores: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``livemacro_scores`` where the theme scopes do not partition the overall releases: per
    (partition, model, fit, horizon, target) the theme ``n_releases`` must sum to the overall one (each
    indicator belongs to one theme, and a theme scores only events releasing one of its fields) and no theme
    may hold more events than the overall scope. Empty = the identity holds."""
    keys = ["partition_key", "model_id", "fit_id", "horizon", "target"]
    th = scores.filter(pl.col("scope").is_in(list(THEMES))).group_by(keys).agg(
        pl.col("n_releases").sum().alias("theme_releases"), pl.col("n_events").max().alias("max_theme_events"))
    ov = scores.filter(pl.col("scope") == "overall").select(*keys, "n_releases", "n_events")
    j = ov.join(th, on=keys, how="left")
    return j.filter((pl.col("theme_releases") != pl.col("n_releases")) | (pl.col("max_theme_events") > pl.col("n_events")))



# ---------------------------------------------------------------------------------------------
# LiveBetting over the stored prediction-market prices (App. L)
# ---------------------------------------------------------------------------------------------

# reporting unit -> market unit: payrolls are nowcast in thousands, their buckets read '-150k', '100k+'
MARKET_VALUE_SCALE = {"nonfarm_payrolls": 1000.0}


@dataclass
class BettingResult:
    """``livebetting_scores`` and ``livebetting_bets`` frames (``partition_key`` = market_id), the markets
    scored, and what was skipped with the reason (key ``market_id`` or ``market_id/model_id``)."""

    scores: pl.DataFrame
    bets: pl.DataFrame
    markets: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def month_segments(bet_at: pl.Series) -> list[tuple[str, datetime]]:
    """One segment per UTC calendar month of the bet hours (``("2026-03", 2026-03-01 00:00 UTC)``, ...), the
    month decomposition of Table 13."""
    months = bet_at.dt.truncate("1mo").unique().sort()
    return [(f"{m:%Y-%m}", m) for m in months.to_list()]


def score_markets(prices: pl.DataFrame, releases: pl.DataFrame, nowcasts: pl.DataFrame) -> BettingResult:
    """LiveBetting Score of every model on every stored market (App. L, Eq. 13; Table 13 by month).

    ``prices``: ``prediction_market_prices`` rows; ``releases``: ``releases`` rows (the market resolves on the
    first release of its indicator and reference period: release time and actual); ``nowcasts``: valid rows
    with ``after_release = false``. Every model with a valid nowcast for the market's indicator and reference
    period bets; hours before its first nowcast are counted as ``no_nowcast`` (the consensus, issued one
    minute before the release, places no bet). Payroll nowcasts are scaled by :data:`MARKET_VALUE_SCALE`.
    Markets whose release is not stored are skipped with the reason. ``available_at`` = the release time.
    """
    from leaf_live.macro.scoring import livebetting as LB
    from leaf_live.macro.scoring.frames import livebetting_frames

    scores, bets, markets, skipped = [], [], [], {}
    nc_all = nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts
    for (market_id,), g in sorted(prices.group_by("market_id"), key=lambda kv: kv[0]):
        ind, ref = g["indicator_id"][0], g["reference_period"][0]
        rel = releases.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref)).sort("release_at")
        if rel.height == 0:
            skipped[market_id] = f"no release of {ind} for {ref} stored yet"
            continue
        release_at, actual = rel["release_at"][0], rel["actual"][0]
        grid = LB.price_grid_from_long(g.select("ts", "bucket_label", "price"))
        hours = grid.filter(pl.col("bet_at") < release_at)["bet_at"]
        if hours.len() == 0:
            skipped[market_id] = f"no price hour before the release at {release_at}"
            continue
        segments = month_segments(hours)
        nc_m = nc_all.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref))
        markets.append(market_id)
        for model in sorted(nc_m["model_id"].unique().to_list()):
            nc = nc_m.filter(pl.col("model_id") == model).select("issued_at", "value")
            b = LB.hourly_bets(grid, nc, release_at=release_at, actual=actual,
                               value_scale=MARKET_VALUE_SCALE.get(ind, 1.0), segments=segments)
            s, stream = livebetting_frames(
                b, LB.betting_summary(b), model_id=model, market_id=market_id, indicator_id=ind, reference_period=ref,
                release_at=release_at, partition_key=market_id, available_at=release_at,
            )
            scores.append(s)
            bets.append(stream)
    return BettingResult(_concat(scores, "livebetting_scores"), _concat(bets, "livebetting_bets"), markets, skipped)
