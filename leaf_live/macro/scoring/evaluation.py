"""Evaluation modes: every model in the ``nowcasts`` table scored on one span of releases with frozen betas
(LiveMacroEval §3.6, §4.1-4.4, App. J, K.3-K.4, M, N, S.1-S.4).

An :class:`EvaluationMode` names a span of release months (America/New_York, the ``partition_key`` of
``releases`` / ``surprise_events``) and the named beta fits (``market_beta_fits``) to score it with. Two
modes ship as defaults:

* ``backtest`` (:data:`BACKTEST`): releases 2018-01 .. 2025-10, where announcement-window returns exist,
  scored with the ``backtest`` fit (events up to the fit cutoff 2017-12, lambda by CV on that sample and, by
  default, sigma_i estimated on that window too: point in time; the paper's full-sample sigma is the
  replication option, see ``assets.macro_scoring.FitWindow.sigma``);
* ``live`` (:data:`LIVE`): releases from 2025-11 on, with the full-sample fit (Table 9) and the COVID-excluded
  refit (K.3).

Rules (the same for every model, the consensus included):

* point in time: only valid nowcasts issued strictly before the release are used (``livemacro``
  selection; the caller passes rows with ``after_release = false``); a forecast is a step function of time,
  the latest nowcast carried forward, at every horizon;
* scoring events: releases sharing a timestamp form one event (App. K.1) and, for scoring, releases whose
  announcement windows overlap are one event too
  (:func:`leaf_live.macro.scoring.surprises.overlapping_event_groups`: the catch-up releases stamped a minute
  apart). The beta fit keeps the replication design, one event per timestamp (Table 9).
  ``EvaluationMode.merge_overlapping=False`` scores on the replication events;
* own coverage: every model is scored on its own events (``livemacro.own_subset``): the events where it has
  its own nowcast for at least one released field of the scope. Inside such an event, a release it does not
  nowcast takes the consensus (``S_hat = 0``): the event's return answers every release in it, so the model's
  predicted return is built from the fields it forecasts. Events it does not nowcast at all are not its
  events: filling them with the consensus would pull every score toward 0 and rank models by coverage;
* the board compares like with like: per horizon, scope and target the compared models are scored on their
  common event set (``livemacro.common_event_set``: the intersection of their own events, at least
  ``min_events`` of them; the consensus covers every event) and ranked there (``common_*`` columns);
* intervals say what they carry: beta only (Eq. 12), the sampling of events (event bootstrap) and both
  (combined); event-resampling intervals and paired comparisons need ``min_events`` events, else none is
  given;
* a nowcast targets the first release of its (indicator, reference period); a later release of the same
  period (the panel's pre-2014 GDP second/third estimates) takes ``S_hat = 0`` and is not the model's own;
* releases without a consensus carry no surprise (no event when a timestamp has none); events whose
  announcement window is unusable are dropped from the return target and counted
  (:func:`event_coverage`), never silently;
* the betas must be frozen before the span: a fit whose last event is at or after the span's first
  release raises :class:`~leaf_live.macro.scoring.livemacro.ScoringError`; each fit standardizes with the
  sigma_i it was estimated with (``MarketBetaFit.sigma``; the stored surprises are rescaled to it).

Horizons ``median_<k>d`` compare the within-day median standing forecast with the final consensus: the
calendar sources hold only the terminal consensus, not its cumulative-median path (K.3 uses the consensus
standing at the end of that day), so the consensus side of those horizons is the terminal one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import combinations

import numpy as np
import polars as pl

from leaf_live.core import storage
from leaf_live.core.pit import ET, check_month, first_per_period, is_first_per_period
from leaf_live.macro.catalog import THEMES
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring import relative_error as RE
from leaf_live.macro.scoring import surprises as SU
from leaf_live.macro.scoring.betas import MarketBetaFit
from leaf_live.macro.scoring.board import RANK_BOOT, event_losses_frame, rankings_frame
from leaf_live.macro.scoring.frames import (
    ALL_SCOPES,
    MIN_EVENTS,
    aggregator_frame,
    common_scores,
    livemacro_scores_frame,
    paired_frame,
    relative_errors_frame,
    score_model,
    shapley_frame,
    sizing_frame,
)
from leaf_live.macro.windows import betting_windows

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
    ``merge_overlapping``: score releases whose announcement windows overlap as one event (default).
    ``compare``: the models of the common-events board (empty = chosen greedily, see
    ``livemacro.common_event_set``). Raises :class:`ScoringError` for a malformed month, an empty fit list or
    an unknown horizon/target.
    """

    name: str
    first_month: str
    last_month: str | None = None
    fits: tuple[str, ...] = ("full",)
    horizons: tuple[str, ...] = ("terminal",)
    targets: tuple[str, ...] = TARGETS
    merge_overlapping: bool = True
    compare: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise L.ScoringError("evaluation mode needs a name")
        for f, v in (("first_month", self.first_month), ("last_month", self.last_month)):
            if v is not None:
                check_month(v, f"mode {self.name}: {f}", L.ScoringError)
        if self.last_month is not None and self.last_month < self.first_month:
            raise L.ScoringError(
                f"mode {self.name}: last_month {self.last_month} < first_month {self.first_month}"
            )
        if not self.fits:
            raise L.ScoringError(f"mode {self.name}: fits is empty; name at least one market_beta_fits fit")
        for h in self.horizons:
            L._horizon_days(h)  # raises with the offending value
        bad = [t for t in self.targets if t not in TARGETS]
        if bad or not self.targets:
            raise L.ScoringError(
                f"mode {self.name}: targets must be a non-empty subset of {TARGETS}, got {self.targets}"
            )

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
    event_losses: pl.DataFrame | None = None  # livemacro_event_losses rows
    rankings: pl.DataFrame | None = None  # livemacro_rankings rows


def answer_time(nowcasts: pl.DataFrame) -> pl.DataFrame:
    """The one answered-at rule of scoring and betting: a nowcast counts from when its answer existed,
    ``answered_at`` (LLM rows: the call's completion; recorded runs: the stamp + 1 h; others: the stamp),
    never from an earlier stamp. Returns ``nowcasts`` with ``issued_at`` replaced by
    ``coalesce(answered_at, issued_at)`` (the later of the two), so the scoring step function (the latest
    answer strictly before the release, carried forward) uses the same instants LiveBetting bets on."""
    if "answered_at" not in nowcasts.columns:
        return nowcasts
    return nowcasts.with_columns(
        pl.max_horizontal(pl.col("issued_at"), pl.col("answered_at").fill_null(pl.col("issued_at"))).alias(
            "issued_at"
        )
    )


def event_coverage(
    releases: pl.DataFrame, events: pl.DataFrame, scoring_events: pl.DataFrame | None = None
) -> dict[str, int]:
    """Counts that say what the span could and could not score.

    ``releases``: the span's ``releases`` rows; ``events``: its ``surprise_events`` rows; ``scoring_events``:
    the events scored (``event_at``, ``event_r_g`` one row per event; default: ``events`` themselves). Returns
    ``n_release_timestamps`` (distinct release times), ``n_releases``, ``n_releases_no_consensus`` (no
    surprise: not scored), ``n_timestamps_no_consensus`` (every release of the timestamp lacks a consensus:
    no surprise event), ``n_timestamps_merged`` (surprise events that joined an earlier one's overlapping
    announcement window), ``n_events`` (scoring events), ``n_events_no_usable_window`` (no
    announcement-window return: dropped from the return target) and ``n_events_scored``.
    """
    n_ts = releases["release_at"].n_unique()
    if scoring_events is None:
        scoring_events = events.select(
            pl.col("release_at").alias("event_at"), pl.col("r_g").alias("event_r_g")
        )
    n_ev = scoring_events.height
    no_window = int(
        scoring_events.filter(pl.col("event_r_g").is_null() | pl.col("event_r_g").is_nan()).height
    )
    return {
        "n_release_timestamps": n_ts,
        "n_releases": releases.height,
        "n_releases_no_consensus": int(releases["consensus"].null_count()),
        "n_timestamps_no_consensus": n_ts - events.height,
        "n_timestamps_merged": events.height - n_ev,
        "n_events": n_ev,
        "n_events_no_usable_window": no_window,
        "n_events_scored": n_ev - no_window,
    }


def scoring_events(
    events: pl.DataFrame, returns: pl.DataFrame | None, *, merge: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(event_map, event_returns)`` for the span's ``surprise_events`` rows: ``event_map`` (``release_at``
    -> ``event_at``) and one return per scoring event (``release_at`` = event time, ``r_g``). With ``merge``,
    releases whose announcement windows overlap are one event (``returns`` = the ``announcement_returns`` rows
    of the span, needed for the union windows); else each timestamp is its event (the replication design).
    Raises :class:`ScoringError` when merging without ``returns`` or an event has no returns row."""
    t = events.select(pl.col("release_at").dt.convert_time_zone("UTC"))
    if not merge:
        em = t.with_columns(pl.col("release_at").alias("event_at"))
        return em, events.select(pl.col("release_at").dt.convert_time_zone("UTC"), "r_g")
    if returns is None:
        raise L.ScoringError("merging overlapping announcement windows needs the announcement_returns rows")
    groups = SU.overlapping_event_groups(returns)
    em = t.join(groups.select("release_at", "event_at", "event_r_g"), on="release_at", how="left")
    missing = em.filter(pl.col("event_at").is_null())
    if missing.height:
        raise L.ScoringError(f"no announcement_returns row for the event at {missing['release_at'][0]}")
    ret = em.select(pl.col("event_at").alias("release_at"), pl.col("event_r_g").alias("r_g")).unique(
        "release_at"
    )
    return em.select("release_at", "event_at"), ret.sort("release_at")


def _first_release_only(per_release: pl.DataFrame) -> pl.DataFrame:
    """``S_hat`` (and the nowcast) only on the first release of each (indicator, reference period)."""
    first = is_first_per_period()
    return per_release.with_columns(
        pl.when(first).then(pl.col("s_hat")).alias("s_hat"),
        pl.when(first).then(pl.col("nowcast")).alias("nowcast"),
    )


def _pooled_metric_rows(
    metrics: Mapping[str, float],
    *,
    model_id: str,
    decomposition: str,
    partition_key: str,
    available_at: datetime,
) -> pl.DataFrame:
    """``score_decompositions`` rows of one model's overall terminal counts: one row per ``metrics`` item."""
    rows = [
        {
            "partition_key": partition_key,
            "model_id": model_id,
            "comparator_model_id": None,
            "fit_id": None,
            "fit_name": None,
            "horizon": "terminal",
            "scope": "overall",
            "target": None,
            "decomposition": decomposition,
            "indicator_id": None,
            "metric": k,
            "value": float(v),
            "available_at": available_at,
        }
        for k, v in metrics.items()
    ]
    return storage.conform(
        "score_decompositions", pl.DataFrame(rows, schema=storage.polars_schema("score_decompositions"))
    )


def _coverage_frame(cov: Mapping[str, int], *, partition_key: str, available_at: datetime) -> pl.DataFrame:
    return _pooled_metric_rows(
        cov,
        model_id=POOLED,
        decomposition="event_coverage",
        partition_key=partition_key,
        available_at=available_at,
    )


def _relerr_frame(
    value: float,
    n: int,
    *,
    model_id: str,
    partition_key: str,
    available_at: datetime,
    suffix: str = "",
) -> pl.DataFrame:
    return _pooled_metric_rows(
        {f"mean_abs_rel_error{suffix}": value, f"n_field_events{suffix}": n},
        model_id=model_id,
        decomposition="relative_error",
        partition_key=partition_key,
        available_at=available_at,
    )


ARIMA_MODEL_ID = "baseline/auto-arima"  # = forecasters.arima.nowcasts.MODEL_ID (not imported: the fit stack)


def _arima_provenance_frame(
    fe: pl.DataFrame, nc: pl.DataFrame, *, partition_key: str, available_at: datetime
) -> pl.DataFrame:
    """``arima_provenance`` rows of the auto-ARIMA on its scored releases ``fe`` (per-release frame): how
    many were fitted on an older vintage than App. I's and forecast 4+ periods ahead (issue 16: the board
    labels the baseline as what it is). The latest nowcast per (indicator, period) is the one scored."""
    from leaf_live.macro.forecasters.arima.nowcasts import provenance_counts

    keys = ["indicator_id", "reference_period"]
    last = nc.sort("issued_at").group_by(keys).agg(pl.col("rationale").last())
    r = fe.select(keys).join(last, on=keys, how="left")["rationale"].to_list()
    return _pooled_metric_rows(
        provenance_counts(r),
        model_id=ARIMA_MODEL_ID,
        decomposition="arima_provenance",
        partition_key=partition_key,
        available_at=available_at,
    )


def _concat(frames: list[pl.DataFrame], table: str) -> pl.DataFrame:
    return pl.concat(frames, how="vertical") if frames else storage.empty_frame(table)


def _fit_sigma(fit: MarketBetaFit, default: pl.DataFrame) -> pl.DataFrame:
    """The sigma_i a fit standardizes with: its own (``MarketBetaFit.sigma``) or the frozen
    ``surprise_scales``."""
    if fit.sigma is None:
        return default.select("indicator_id", "sigma")
    return pl.DataFrame({"indicator_id": list(fit.indicator_ids), "sigma": fit.sigma.astype(float)})


def evaluate_mode(
    mode: EvaluationMode,
    *,
    releases: pl.DataFrame,
    events: pl.DataFrame,
    sigma: pl.DataFrame,
    nowcasts: pl.DataFrame,
    fits: Mapping[str, MarketBetaFit],
    returns: pl.DataFrame | None = None,
    n_draws: int = L.DEFAULT_BOOT_DRAWS,
    seed: int = L.DEFAULT_SEED,
    sampling_k: int = L.SAMPLING_K,
    min_events: int = MIN_EVENTS,
    available_at: datetime | None = None,
    rank_boot: int = RANK_BOOT,
) -> ModeResult:
    """Score every model of ``nowcasts`` on the releases of ``mode`` (see the module notes for the rules).

    Inputs are rows of the tables: ``releases`` and ``events`` (``surprise_events``) of any months (filtered
    here to the span), ``sigma`` (``surprise_scales``: the scale the stored events were standardized by),
    ``nowcasts`` (valid rows with ``after_release = false`` of any number of models), ``fits`` (fit name ->
    frozen fit, every name in ``mode.fits``), ``returns`` (``announcement_returns``; needed when the mode
    merges overlapping announcement windows). ``n_draws``/``seed``: beta draws (Eq. 12), event resamples and
    the paired event bootstrap (S.2); the same draws serve every model. ``sampling_k``: the K.3 sampling
    interval over the forecast standing 0..k-1 hours before each release (terminal horizon; 0 = off).
    ``min_events``: fewest events an event-resampling interval, a common event set or a paired interval is
    given for. ``available_at`` defaults to the latest ``available_at`` of the span's events.

    Per model x horizon x fit: the ``livemacro_scores`` rows of every scope (overall + 4 themes) and target on
    the model's own events, with the common-events board's columns. At the terminal horizon and the headline
    fit: exact Shapley allocations per scope and target on the own events (App. M), sizing discipline (S.4),
    aggregator shares (K.4; plus ``pooled`` over the non-consensus models), mean absolute relative error
    (Table 16), paired event bootstraps of every model pair on the events both nowcast themselves (S.2,
    overall scope). Relative-error curves (App. J) of every model. Models without a single own nowcast in the
    span are skipped (``ModeResult.skipped``). Raises :class:`ScoringError` for a missing fit, a fit that is
    not frozen before the span, or a span with no event.
    """
    ev = _span_events(mode, events, fits)
    rel = releases.filter(mode.in_span())
    at = available_at or ev["available_at"].max()
    ret_span = (
        returns.filter(mode.in_span())
        if (returns is not None and "partition_key" in returns.columns)
        else returns
    )
    event_map, event_returns = scoring_events(ev, ret_span, merge=mode.merge_overlapping)
    cov = event_coverage(
        rel,
        ev,
        event_returns.select(pl.col("release_at").alias("event_at"), pl.col("r_g").alias("event_r_g")),
    )
    scorable = rel.filter(pl.col("consensus").is_not_null())
    first_rel = first_per_period(rel)
    scales = RE.release_scales(first_rel)
    nc_all = answer_time(nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts)
    sigmas = {name: _fit_sigma(fits[name], sigma) for name in mode.fits}
    sigma_key = {name: tuple(sigmas[name].sort("indicator_id")["sigma"].to_list()) for name in mode.fits}

    def design(pr: pl.DataFrame) -> L.LiveDesign:
        return L.live_design(pr, event_returns, missing="consensus", event_map=event_map)

    def per_release(nc: pl.DataFrame, horizon: str, sig: pl.DataFrame) -> pl.DataFrame:
        return _first_release_only(
            L.implied_surprises(scorable, sig, nc, events=ev, horizon=horizon, event_sigma=sigma)
        )

    def sampling(nc: pl.DataFrame, sig: pl.DataFrame) -> list[L.LiveDesign]:
        return [
            design(_first_release_only(p))
            for p in L.sampling_surprises(scorable, sig, nc, events=ev, k=sampling_k, event_sigma=sigma)
        ]

    designs, models, skipped = _model_designs(
        mode,
        nc_all,
        {sigma_key[name]: sigmas[name] for name in mode.fits},
        design=design,
        per_release=per_release,
        sampling=sampling if sampling_k >= 2 else None,
    )
    run = _ModeRun(mode, fits, sigma_key, designs, models, at, n_draws, seed, min_events)
    rows, losses = _own_scores(run)
    compared = _common_boards(run, rows)
    scores = (
        [livemacro_scores_frame(list(rows.values()), partition_key=mode.name, available_at=at)]
        if rows
        else []
    )
    decomps, relerrs = _headline_decompositions(run, nc_all, first_rel, scales, compared)
    decomps += _paired_bootstraps(run)
    decomps.append(_coverage_frame(cov, partition_key=mode.name, available_at=at))
    loss_frame = _concat([f for f in losses if f.height], "livemacro_event_losses")
    return ModeResult(
        mode=mode,
        scores=_concat(scores, "livemacro_scores"),
        decompositions=_concat(decomps, "score_decompositions"),
        relative_errors=_concat(relerrs, "relative_errors"),
        coverage=cov,
        models=models,
        skipped=skipped,
        event_losses=loss_frame,
        rankings=rankings_frame(
            loss_frame,
            partition_key=mode.name,
            available_at=at,
            n_boot=rank_boot,
            seed=seed,
            min_events=min_events,
        ),
    )


def _span_events(
    mode: EvaluationMode, events: pl.DataFrame, fits: Mapping[str, MarketBetaFit]
) -> pl.DataFrame:
    """The ``surprise_events`` rows of the mode's span, by release time, after the checks that the span can be
    scored: every fit of the mode is stored and frozen before the span's first event (the betas never see
    a scored release). Raises :class:`ScoringError` otherwise, or for a span with no event."""
    missing = [f for f in mode.fits if f not in fits]
    if missing:
        raise L.ScoringError(
            f"mode {mode.name}: fit(s) {missing} are not in market_beta_fits; materialize market_betas with"
            " them"
        )
    ev = events.filter(mode.in_span()).sort("release_at")
    if ev.height == 0:
        raise L.ScoringError(
            f"mode {mode.name}: no surprise event in release months"
            f" {mode.first_month}..{mode.last_month or 'latest'}"
        )
    first_t = ev["release_at"].min()
    for name in mode.fits:
        f = fits[name]
        if f.window_end >= first_t:
            raise L.ScoringError(
                f"mode {mode.name}: fit {name!r} ({f.fit_id}) uses events up to {f.window_end:%Y-%m-%d %H:%M}"
                f" UTC, not before the span's first event {first_t:%Y-%m-%d %H:%M} UTC; betas must be frozen"
                " before the scored releases"
            )
    return ev


# one model's design at one horizon under one fit's sigma: (per-release frame, design, K.3 sampling designs)
_Designs = dict[tuple, tuple[pl.DataFrame, L.LiveDesign, list[L.LiveDesign]]]


def _model_designs(
    mode: EvaluationMode,
    nc_all: pl.DataFrame,
    by_sigma: Mapping[tuple, pl.DataFrame],
    *,
    design,
    per_release,
    sampling,
) -> tuple[_Designs, list[str], dict[str, str]]:
    """Pass 1: every model's designs (its implied surprises on the scoring events), keyed by (model,
    horizon, sigma key), per horizon and per distinct sigma among the fits; at the terminal horizon also the
    K.3 sampling designs (``sampling``; None = off). Returns the designs, the models with at least one own
    event and the skipped models with the reason."""
    designs: _Designs = {}
    models, skipped = [], {}
    for model in sorted(nc_all["model_id"].unique().to_list()):
        nc = nc_all.filter(pl.col("model_id") == model)
        built = {}
        for sk, sig in by_sigma.items():
            for horizon in mode.horizons:
                # the consensus side of every horizon is the final consensus (module notes): the consensus
                # model is its terminal self at every horizon, the zero line every board is read against
                pr = per_release(nc, "terminal" if is_consensus(model) else horizon, sig)
                samp = sampling(nc, sig) if horizon == "terminal" and sampling is not None else []
                built[(model, horizon, sk)] = (pr, design(pr), samp)
        if not any(L.own_rows(d).any() for _, d, _ in built.values()):
            skipped[model] = "no valid pre-release nowcast for a scored release in the span"
            continue
        models.append(model)
        designs.update(built)
    return designs, models, skipped


@dataclass(frozen=True)
class _ModeRun:
    """What the scoring passes of one :func:`evaluate_mode` call share: the mode, its fits and their sigma
    keys, every scored model's designs (:func:`_model_designs`), the rows' ``available_at`` and the draws."""

    mode: EvaluationMode
    fits: Mapping[str, MarketBetaFit]
    sigma_key: Mapping[str, tuple]
    designs: _Designs
    models: list[str]
    at: datetime
    n_draws: int
    seed: int
    min_events: int

    @property
    def headline_name(self) -> str:
        return self.mode.fits[0]

    @property
    def headline(self) -> MarketBetaFit:
        return self.fits[self.headline_name]

    @property
    def h0(self) -> str:
        """The horizon of the decompositions: terminal when the mode scores it."""
        return "terminal" if "terminal" in self.mode.horizons else self.mode.horizons[0]

    def headline_design(self, model: str) -> tuple[pl.DataFrame, L.LiveDesign, list[L.LiveDesign]]:
        return self.designs[(model, self.h0, self.sigma_key[self.headline_name])]


def _own_scores(run: _ModeRun) -> tuple[dict[tuple, object], list[pl.DataFrame]]:
    """Pass 2a: every model's own-coverage scores (beta-only Eq. 12, event and combined intervals) per
    horizon, fit, scope and target, keyed by (model, horizon, fit, scope, target), and its per-event
    losses."""
    mode = run.mode
    rows: dict[tuple, object] = {}
    losses = []
    for model in run.models:
        for horizon in mode.horizons:
            for name in mode.fits:
                _, d, samp = run.designs[(model, horizon, run.sigma_key[name])]
                losses.append(
                    event_losses_frame(
                        d,
                        run.fits[name],
                        model_id=model,
                        horizon=horizon,
                        fit_name=name,
                        scopes=ALL_SCOPES,
                        targets_=mode.targets,
                        partition_key=mode.name,
                        available_at=run.at,
                    )
                )
                for r in score_model(
                    d,
                    run.fits[name],
                    model_id=model,
                    horizon=horizon,
                    targets=mode.targets,
                    n_draws=run.n_draws,
                    seed=run.seed,
                    sampling_designs=samp,
                    min_events=run.min_events,
                    fit_name=name,
                ):
                    rows[(model, horizon, name, r.scope, r.target)] = r
    return rows, losses


def _common_boards(run: _ModeRun, rows: dict[tuple, object]) -> dict[tuple, list[str]]:
    """Pass 2b: the common-events board per horizon, fit, scope and target: the compared models scored on the
    events all of them nowcast (``livemacro.common_event_set``), set on ``rows`` as their ``common`` column.
    Returns the common-set models per (horizon, fit, scope)."""
    mode = run.mode
    compared: dict[tuple, list[str]] = {}
    for horizon in mode.horizons:
        for name in mode.fits:
            dm = {m: run.designs[(m, horizon, run.sigma_key[name])][1] for m in run.models}
            for scope in ALL_SCOPES:
                own_t = {m: d.release_at[L.own_rows(d, scope)] for m, d in dm.items()}
                own_t = {m: t for m, t in own_t.items() if t.size}
                chosen, common = L.common_event_set(
                    own_t,
                    min_events=run.min_events,
                    models=[m for m in mode.compare if m in own_t] or None,
                    always=[m for m in own_t if is_consensus(m)],
                )
                if not chosen or common.size == 0:
                    continue
                compared[(horizon, name, scope)] = chosen
                for target in mode.targets:
                    res = common_scores(
                        {m: dm[m] for m in chosen},
                        run.fits[name],
                        common,
                        scope=scope,
                        target=target,
                        n_draws=run.n_draws,
                        seed=run.seed,
                        min_events=run.min_events,
                    )
                    for m, c in res.items():
                        k = (m, horizon, name, scope, target)
                        rows[k] = replace(rows[k], common=c)
    return compared


def _headline_decompositions(
    run: _ModeRun,
    nc_all: pl.DataFrame,
    first_rel: pl.DataFrame,
    scales: pl.DataFrame,
    compared: Mapping[tuple, list[str]],
) -> tuple[list[pl.DataFrame], list[pl.DataFrame]]:
    """At the terminal horizon and the headline fit, per model: Shapley allocations per scope and target on
    its own events (App. M), sizing discipline (S.4), aggregator shares (K.4), mean absolute relative error
    (Table 16; also on the common set), the auto-ARIMA's provenance counts, and the pooled aggregator shares
    of the non-consensus models; the relative-error curves of every model (App. J). Returns the
    ``score_decompositions`` and ``relative_errors`` frames."""
    mode, at, headline, headline_name = run.mode, run.at, run.headline, run.headline_name
    decomps, relerrs, pooled, own_fe = [], [], [], {}
    for model in run.models:
        pr_t, d_t, _ = run.headline_design(model)
        nc = nc_all.filter(pl.col("model_id") == model)
        kw = {"model_id": model, "horizon": "terminal", "partition_key": mode.name, "available_at": at}
        for scope in ALL_SCOPES:
            od = L.own_subset(d_t, scope)
            for target in mode.targets:
                ps = L.point_score(od, headline.beta, scope=scope, target=target)
                if ps.n_events and ps.ss_cons > 0:
                    decomps.append(
                        shapley_frame(od, headline, scope=scope, target=target, fit_name=headline_name, **kw)
                    )
        fe = pr_t.filter(pl.col("s_hat").is_not_null())
        if fe.height >= 2:
            decomps.append(sizing_frame(L.sizing_discipline(fe), **kw))
        if fe.height:
            decomps.append(
                aggregator_frame(
                    RE.aggregator_shares(fe, scales, headline.beta),
                    fit_id=headline.fit_id,
                    fit_name=headline_name,
                    **kw,
                )
            )
            decomps.append(
                _relerr_frame(
                    RE.mean_abs_relative_error(fe, scales),
                    fe.height,
                    model_id=model,
                    partition_key=mode.name,
                    available_at=at,
                )
            )
            own_fe[model] = fe
            if model == ARIMA_MODEL_ID and "rationale" in nc.columns:
                decomps.append(_arima_provenance_frame(fe, nc, partition_key=mode.name, available_at=at))
            if not is_consensus(model):
                pooled.append(fe)
        pts = RE.relative_error_points(first_rel, nc, scales)
        if pts.height:
            relerrs.append(
                relative_errors_frame(
                    RE.relative_error_by_month(pts), partition_key=mode.name, available_at=at, model_id=model
                )
            )
    # rel. err. of the common-set models on the field-events all of them nowcast (the own-event value reads
    # each model on its own releases, so it ranks nothing)
    chosen = compared.get((run.h0, headline_name, "overall"), [])
    common_re = RE.common_relative_errors({m: own_fe[m] for m in chosen if m in own_fe}, scales)
    for model, (value, n) in common_re.items():
        decomps.append(
            _relerr_frame(
                value, n, model_id=model, partition_key=mode.name, available_at=at, suffix="_common"
            )
        )
    if pooled:
        decomps.append(
            aggregator_frame(
                RE.aggregator_shares(pl.concat(pooled), scales, headline.beta),
                model_id=POOLED,
                horizon="terminal",
                partition_key=mode.name,
                available_at=at,
                fit_id=headline.fit_id,
                fit_name=headline_name,
            )
        )
    return decomps, relerrs


def _paired_bootstraps(run: _ModeRun) -> list[pl.DataFrame]:
    """Paired event bootstraps (S.2) of every model pair on the events both nowcast themselves, overall scope,
    terminal horizon, headline fit; a pair with too few shared events is left out."""
    out = []
    headline = run.headline
    for a, b in combinations(run.models, 2):
        da = L.own_subset(run.headline_design(a)[1])
        db = L.own_subset(run.headline_design(b)[1])
        if not np.intersect1d(da.release_at, db.release_at).size:
            continue
        for target in run.mode.targets:
            try:
                pb_ = L.paired_event_bootstrap(
                    da,
                    db,
                    headline.beta,
                    scope="overall",
                    target=target,
                    n_draws=run.n_draws,
                    seed=run.seed,
                    min_events=run.min_events,
                )
            except L.ScoringError:
                continue
            out.append(
                paired_frame(
                    pb_,
                    model_id=a,
                    comparator_model_id=b,
                    fit_id=headline.fit_id,
                    fit_name=run.headline_name,
                    horizon="terminal",
                    scope="overall",
                    target=target,
                    partition_key=run.mode.name,
                    available_at=run.at,
                    min_events=run.min_events,
                )
            )
    return out


def themes_partition_releases(scores: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``livemacro_scores`` where the theme scopes do not partition the overall scope: per (partition,
    model, fit, horizon, target) the themes' ``n_releases_own`` must add up to the overall one (each indicator
    belongs to one theme and each own release lies in an own event of its theme) and no theme may hold more
    events or own events than the overall scope. Empty = the identities hold."""
    keys = ["partition_key", "model_id", "fit_id", "horizon", "target"]
    th = (
        scores.filter(pl.col("scope").is_in(list(THEMES)))
        .group_by(keys)
        .agg(
            pl.col("n_releases_own").sum().alias("theme_releases"),
            pl.col("n_events").max().alias("max_theme_events"),
            pl.col("n_events_own").max().alias("max_theme_own"),
        )
    )
    ov = scores.filter(pl.col("scope") == "overall").select(
        *keys, "n_releases_own", "n_events", "n_events_own"
    )
    j = ov.join(th, on=keys, how="left")
    return j.filter(
        (pl.col("theme_releases") != pl.col("n_releases_own"))
        | (pl.col("max_theme_events") > pl.col("n_events"))
        | (pl.col("max_theme_own") > pl.col("n_events_own"))
    )


# ---------------------------------------------------------------------------------------------
# LiveBetting over the stored prediction-market prices (App. L)
# ---------------------------------------------------------------------------------------------

# reporting unit -> market unit: payrolls are nowcast in thousands, their buckets read '-150k', '100k+'
MARKET_VALUE_SCALE = {"nonfarm_payrolls": 1000.0}


@dataclass
class BettingResult:
    """``livebetting_scores`` and ``livebetting_bets`` frames (``partition_key`` = market_id), the markets
    scored, and what was skipped with the reason (key ``market_id``)."""

    scores: pl.DataFrame
    bets: pl.DataFrame
    markets: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def consensus_known_at(release_at: pl.Expr) -> pl.Expr:
    """When a stored consensus value counts as known for betting: 00:00 America/New_York on the release day.

    The calendars keep only the final consensus (stamped one minute before the release in ``nowcasts``), not
    when it was posted or last revised. Investing.com posts its forecasts days ahead, so the final value
    standing on the calendar at the start of the release day is taken as known then: a conservative lower
    bound on how long it was public (an earlier time would assume no revision in between)."""
    return (
        release_at.dt.convert_time_zone(ET.key)
        .dt.date()
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone(ET.key)
        .dt.convert_time_zone("UTC")
    )


MIN_COMMON_HOURS = 24  # fewest common hours a common-hours board is drawn on


def common_hours(
    bets: Mapping[str, pl.DataFrame], *, min_hours: int = MIN_COMMON_HOURS
) -> tuple[list[str], pl.Series]:
    """The models a common-hours board compares and their common bet hours. ``bets``: model -> its bet stream
    (:func:`livebetting.hourly_bets`). Greedy, like ``livemacro.common_event_set``: models in order of most
    bets (ties by model_id) join while the hours on which all of them bet stay at least ``min_hours``. Returns
    ``(models, bet_at)``; ``([], empty)`` when no model bets on ``min_hours`` hours."""
    placed = {m: set(b.filter(pl.col("status") == "bet")["bet_at"].to_list()) for m, b in bets.items()}
    common, chosen = None, []
    for m in sorted(placed, key=lambda m: (-len(placed[m]), m)):
        cand = placed[m] if common is None else common & placed[m]
        if len(cand) >= max(min_hours, 1):
            common, chosen = cand, chosen + [m]
    return chosen, pl.Series("bet_at", sorted(common or []), dtype=pl.Datetime("us", "UTC"))


def score_markets(
    prices: pl.DataFrame,
    releases: pl.DataFrame,
    nowcasts: pl.DataFrame,
    windows: pl.DataFrame | None = None,
    *,
    min_common_hours: int = MIN_COMMON_HOURS,
) -> BettingResult:
    """LiveBetting Score of every model on every stored market (App. L, Eq. 13; Table 13 by target window).

    ``prices``: ``prediction_market_prices`` rows; ``releases``: ``releases`` rows (the market resolves on the
    first release of its indicator and reference period: release time and actual); ``nowcasts``: valid rows
    with ``after_release = false`` (``answered_at``, when present, is when each answer existed; default
    ``issued_at``); ``windows``: ``nowcast_windows`` rows: a market is bet only when its window is stored,
    from the opening of the first target-month window that nowcasts it (:func:`~leaf_live.macro.windows.
    betting_windows`: 2026Q1 GDP from the February window, 2026-02-25, not the nowcast window's 2026-03-25),
    each target window its own segment (Table 13's February / March segments); None: every price hour before
    the release, the old rule, kept for callers without windows.

    Rules: a bet at price hour tau needs tau in [opens_at, release) and an answer known by tau
    (``answered_at <= tau``: a recorded run's answer counts from its next scheduled run, an LLM answer from
    its call's completion); the consensus (``consensus/*``) bets on its bucket from
    :func:`consensus_known_at`. Every model with a valid nowcast for the market bets (``hours = 'window'``
    rows); the models of
    :func:`common_hours` are also scored on the hours they all bet (``hours = 'common'`` rows, ``common_hour``
    in the bet stream). Payroll nowcasts are scaled by :data:`MARKET_VALUE_SCALE`. Markets whose release or
    window is not stored are skipped with the reason. ``available_at`` = the release time.
    """
    from leaf_live.macro.scoring import livebetting as LB
    from leaf_live.macro.scoring.frames import livebetting_frames

    scores, bets, markets, skipped = [], [], [], {}
    nc_all = nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts
    for (market_id,), g in sorted(prices.group_by("market_id"), key=lambda kv: kv[0]):
        ind, ref = g["indicator_id"][0], g["reference_period"][0]
        rel = releases.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref)).sort(
            "release_at"
        )
        if rel.height == 0:
            skipped[market_id] = f"no release of {ind} for {ref} stored yet"
            continue
        release_at, actual = rel["release_at"][0], rel["actual"][0]
        # Table 13's segments: the target-month windows betting on this market (App. O)
        segments = betting_windows(ind, ref, releases)
        opens_at = None
        if windows is not None:
            w = windows.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref))
            if w.height == 0:
                skipped[market_id] = f"no nowcast window of {ind} for {ref} stored"
                continue
            # the stored nowcast window is the last target month's; earlier target months of a quarter
            # bet before it
            segments = [(lab, t) for lab, t in segments[:-1] if t < w["opens_at"][0]] + [
                (segments[-1][0], w["opens_at"][0])
            ]
            opens_at = segments[0][1]
        grid = LB.price_grid_from_long(g.select("ts", "bucket_label", "price"))
        in_window = pl.col("bet_at") < release_at
        if opens_at is not None:
            in_window = in_window & (pl.col("bet_at") >= opens_at)
        hours = grid.filter(in_window)["bet_at"]
        if hours.len() == 0:
            skipped[market_id] = f"no price hour in the window {opens_at} .. {release_at}"
            continue
        nc_m = nc_all.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref))
        known = pl.col("answered_at") if "answered_at" in nc_m.columns else pl.col("issued_at")
        cons_at = consensus_known_at(pl.lit(release_at))
        streams = {}
        for model in sorted(nc_m["model_id"].unique().to_list()):
            nc = nc_m.filter(pl.col("model_id") == model).select(
                "issued_at", "value", known.fill_null(pl.col("issued_at")).alias("known_at")
            )
            if is_consensus(model):
                # the stored consensus row is the final value; it counts as known from the release day's start
                nc = nc.with_columns(
                    pl.min_horizontal(pl.col("issued_at"), cons_at).alias("issued_at"),
                    pl.min_horizontal(pl.col("known_at"), cons_at).alias("known_at"),
                )
            streams[model] = LB.hourly_bets(
                grid,
                nc,
                release_at=release_at,
                actual=actual,
                opens_at=opens_at,
                value_scale=MARKET_VALUE_SCALE.get(ind, 1.0),
                segments=segments,
            )
        chosen, common = common_hours(streams, min_hours=min_common_hours)
        markets.append(market_id)
        for model, b in streams.items():
            b = b.with_columns(pl.col("bet_at").is_in(common.implode()).alias("common_hour"))
            meta = {
                "model_id": model,
                "market_id": market_id,
                "indicator_id": ind,
                "reference_period": ref,
                "release_at": release_at,
                "partition_key": market_id,
                "available_at": release_at,
                "window_opens_at": opens_at,
            }
            s, stream = livebetting_frames(b, LB.betting_summary(b), hours="window", **meta)
            scores.append(s)
            bets.append(stream)
            if model in chosen:
                bc = b.filter(pl.col("common_hour"))
                s_c, _ = livebetting_frames(
                    bc, LB.betting_summary(bc), hours="common", n_models_common=len(chosen), **meta
                )
                scores.append(s_c)
    return BettingResult(
        _concat(scores, "livebetting_scores"), _concat(bets, "livebetting_bets"), markets, skipped
    )
