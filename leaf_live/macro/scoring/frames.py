"""Frame builders: scoring results -> frames that conform to the storage tables (``storage.conform``).

The Dagster assets stay thin: fit or read the frozen betas, build designs, call these builders and hand
the frames to ``storage.replace_partition``. Tables: ``market_betas``, ``livemacro_scores``,
``score_decompositions``, ``relative_errors``, ``livebetting_scores``, ``livebetting_bets``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

import numpy as np
import polars as pl

from leaf_live.core import storage
from leaf_live.macro.catalog import THEMES
from leaf_live.macro.scoring.betas import MarketBetaFit
from leaf_live.macro.scoring.livemacro import (
    DEFAULT_BOOT_DRAWS,
    DEFAULT_SEED,
    BootstrapResult,
    EventBootstrapResult,
    LiveDesign,
    PairedBootstrap,
    PointScore,
    ScoringError,
    SizingDiscipline,
    bootstrap_scores,
    event_bootstrap_scores,
    own_rows,
    point_score,
    sampling_interval,
    scope_indices,
    scoped_design,
    shapley_allocation,
    standard_normal_draws,
)

ALL_SCOPES = ("overall", *THEMES)


def _utc(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ScoringError(f"timestamp {ts} has no time zone; pass UTC")
    return ts.astimezone(UTC)


def _none(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


# ---------------------------------------------------------------------------------------------
# market_betas
# ---------------------------------------------------------------------------------------------


def market_betas_frame(fit: MarketBetaFit, *, available_at: datetime) -> pl.DataFrame:
    """One ``market_betas`` row per indicator of ``fit`` (V_beta stored row by row in ``cov_row``)."""
    p = len(fit.indicator_ids)
    cv = fit.cv
    n = p
    frame = pl.DataFrame(
        {
            "fit_id": [fit.fit_id] * n,
            "indicator_id": list(fit.indicator_ids),
            "position": list(range(p)),
            "beta": fit.beta.tolist(),
            "se": fit.se.tolist(),
            "cov_row": [row.tolist() for row in fit.cov],
            "lambda": [fit.lam] * n,
            "lambda_source": [fit.lam_source] * n,
            "cv_loss": [cv.loss if cv else None] * n,
            "cv_grid": [cv.grid.tolist() if cv else None] * n,
            "cv_scores": [cv.scores.tolist() if cv else None] * n,
            "huber_c": [float(fit.settings.get("c", 1.345))] * n,
            "delta": [fit.delta] * n,
            "scale": [fit.scale] * n,
            "iterations": [fit.iterations] * n,
            "df_eff": [fit.df_eff] * n,
            "n_events": [fit.n_events] * n,
            "window_start": [fit.window_start] * n,
            "window_end": [fit.window_end] * n,
            "covid_excluded": [fit.covid_excluded] * n,
            "n_covid_dropped": [fit.n_covid_dropped] * n,
            "sigma": fit.sigma.tolist() if fit.sigma is not None else [None] * n,
            "sigma_rule": [fit.sigma_rule] * n,
            "settings": [json.dumps(fit.settings, sort_keys=True)] * n,
            "available_at": [_utc(available_at)] * n,
        },
        schema_overrides={
            "cv_loss": pl.Utf8,
            "cv_grid": pl.List(pl.Float64),
            "cv_scores": pl.List(pl.Float64),
            "sigma": pl.Float64,
            "sigma_rule": pl.Utf8,
        },
    )
    return storage.conform("market_betas", frame)


def fit_from_market_betas(frame: pl.DataFrame, fit_id: str | None = None) -> MarketBetaFit:
    """Rebuild the frozen fit (beta, SE, V_beta, settings) from ``market_betas`` rows.

    ``fit_id`` selects one fit; if None the frame must hold exactly one. Raises :class:`ScoringError`
    when the fit is absent, ambiguous or its rows are incomplete (positions not 0..p-1).
    """
    ids = frame["fit_id"].unique().to_list()
    if fit_id is None:
        if len(ids) != 1:
            raise ScoringError(f"market_betas holds fits {sorted(ids)}; pass fit_id")
        fit_id = ids[0]
    f = frame.filter(pl.col("fit_id") == fit_id).sort("position")
    if f.height == 0:
        raise ScoringError(f"market_betas has no fit_id={fit_id!r}; known: {sorted(ids)}")
    if f["position"].to_list() != list(range(f.height)):
        raise ScoringError(f"fit_id={fit_id}: positions {f['position'].to_list()} are not 0..{f.height - 1}")
    cov = np.array(f["cov_row"].to_list(), dtype=float)
    if cov.shape != (f.height, f.height):
        raise ScoringError(
            f"fit_id={fit_id}: V_beta rows have shape {cov.shape}, expected {(f.height, f.height)}"
        )
    r0 = f.row(0, named=True)
    return MarketBetaFit(
        fit_id=fit_id,
        indicator_ids=tuple(f["indicator_id"].to_list()),
        beta=f["beta"].to_numpy().copy(),
        se=f["se"].to_numpy().copy(),
        cov=cov,
        lam=r0["lambda"],
        lam_source=r0["lambda_source"],
        delta=r0["delta"],
        scale=r0["scale"],
        iterations=r0["iterations"],
        converged=True,
        df_eff=r0["df_eff"],
        n_events=r0["n_events"],
        window_start=r0["window_start"],
        window_end=r0["window_end"],
        covid_excluded=r0["covid_excluded"],
        n_covid_dropped=r0["n_covid_dropped"],
        settings=json.loads(r0["settings"]),
        cv=None,
        sigma=f["sigma"].to_numpy().copy() if "sigma" in f.columns and f["sigma"].null_count() == 0 else None,
        sigma_rule=r0.get("sigma_rule"),
    )


# ---------------------------------------------------------------------------------------------
# livemacro_scores
# ---------------------------------------------------------------------------------------------

MIN_EVENTS = 10  # fewest events an event-resampling interval (event, combined, paired) is computed on


@dataclass(frozen=True)
class CommonScore:
    """A model's result on a board's common event set (the events every compared model nowcasts itself)."""

    n_events: int
    n_models: int
    score: float
    lmd: float
    ci90: tuple[float, float] | None  # combined (beta x events); None below the minimum event count
    rank: int | None = None


@dataclass(frozen=True)
class ScoreRow:
    """One model x fit x horizon x scope x target result (one ``livemacro_scores`` row), on the model's own
    events of the scope."""

    model_id: str
    fit_id: str
    horizon: str
    scope: str
    target: str
    point: PointScore
    n_events_dropped: int
    boot: BootstrapResult | None = None
    sampling: tuple[int, float, float, float] | None = None  # (k, mean, lo, hi)
    window_start: datetime | None = None
    window_end: datetime | None = None
    boot_seed: int | None = None
    n_events_own: int | None = None  # scope events with the model's own nowcast (the events scored)
    n_events_scope: int | None = None  # scope events of the span (with a usable return)
    n_releases_own: int | None = None  # releases with the model's own nowcast in the scored events
    events: EventBootstrapResult | None = None  # event-bootstrap and combined intervals
    min_events: int | None = None
    fit_name: str | None = None
    common: CommonScore | None = None


def _t(x: np.datetime64) -> datetime:
    return datetime.fromisoformat(str(np.datetime64(x, "us"))).replace(tzinfo=UTC)


def score_model(
    design: LiveDesign,
    fit: MarketBetaFit,
    *,
    model_id: str,
    horizon: str = "terminal",
    scopes: Sequence[str] = ALL_SCOPES,
    targets: Sequence[str] = ("return", "shock"),
    n_draws: int = DEFAULT_BOOT_DRAWS,
    seed: int = DEFAULT_SEED,
    sampling_designs: Sequence[LiveDesign] = (),
    min_events: int = MIN_EVENTS,
    fit_name: str | None = None,
) -> list[ScoreRow]:
    """Every score of one model on its own events of each scope (:func:`livemacro.own_subset`): point score,
    kappa/phi, LMD, the beta-only bootstrap (``n_draws`` > 0), the event-bootstrap and combined intervals
    (when the own events number at least ``min_events``), and the K.3 sampling interval when
    ``sampling_designs`` (the k replicate designs, same events as ``design``) are given; replicates are scored
    on the same own events.

    The same z draws and event resamples (``seed``) serve every scope, target and model, as in K.3. Scopes
    with no own event or a zero target get NULL scores and no interval.
    """
    if tuple(design.indicator_ids) != tuple(fit.indicator_ids):
        raise ScoringError(f"design indicators {design.indicator_ids} != fit indicators {fit.indicator_ids}")
    z = standard_normal_draws(n_draws, len(fit.indicator_ids), seed) if n_draws > 0 else None
    dropped = int(design.counts.get("events_dropped_no_return", 0))
    rows = []
    for scope in scopes:
        rows_own = own_rows(design, scope)
        od = design.subset(rows_own)
        n_scope = int(scoped_design(design, fit.beta, scope)[0].n_events)
        idx = scope_indices(scope, design.indicator_ids)
        n_rel_own = int(od.own_fields[:, idx].sum())
        reps = [d.subset(rows_own) for d in sampling_designs]
        for target in targets:
            ps = point_score(od, fit.beta, scope=scope, target=target)
            ok = ps.n_events > 0 and ps.ss_cons > 0
            boot = (
                bootstrap_scores(od, fit.beta, fit.cov, scope=scope, target=target, z=z)
                if (ok and z is not None)
                else None
            )
            ev = None
            if ok and z is not None and ps.n_events >= min_events:
                ev = event_bootstrap_scores(
                    od, fit.beta, fit.cov, scope=scope, target=target, z=z, n_draws=n_draws, seed=seed
                )
            samp = None
            if reps and ok:
                vals = [point_score(d, fit.beta, scope=scope, target=target).score for d in reps]
                try:
                    samp = (len(vals), *sampling_interval(vals))
                except ScoringError:
                    samp = None
            rows.append(
                ScoreRow(
                    model_id=model_id,
                    fit_id=fit.fit_id,
                    horizon=horizon,
                    scope=scope,
                    target=target,
                    point=ps,
                    n_events_dropped=dropped,
                    boot=boot,
                    sampling=samp,
                    window_start=_t(od.release_at.min()) if od.n_events else None,
                    window_end=_t(od.release_at.max()) if od.n_events else None,
                    boot_seed=seed if boot is not None else None,
                    n_events_own=od.n_events,
                    n_events_scope=n_scope,
                    n_releases_own=n_rel_own,
                    events=ev,
                    min_events=min_events,
                    fit_name=fit_name,
                )
            )
    return rows


def common_scores(
    designs: Mapping[str, LiveDesign],
    fit: MarketBetaFit,
    times: np.ndarray,
    *,
    scope: str,
    target: str,
    n_draws: int = DEFAULT_BOOT_DRAWS,
    seed: int = DEFAULT_SEED,
    min_events: int = MIN_EVENTS,
) -> dict[str, CommonScore]:
    """The compared models (``designs``: model -> its design) scored on the common event set ``times``: score,
    LMD, the combined 90% interval (beta draws x event resamples, when ``times`` holds at least ``min_events``
    events) and the rank by score (1 = best, ties share the better rank). Every model sees the same events
    and the same draws, so the board compares like with like."""
    out = {}
    z = standard_normal_draws(n_draws, len(fit.indicator_ids), seed) if n_draws > 0 else None
    for m, d in designs.items():
        cd = d.at_times(times)
        ps = point_score(cd, fit.beta, scope=scope, target=target)
        ci = None
        if z is not None and cd.n_events >= min_events and ps.ss_cons > 0:
            ci = event_bootstrap_scores(
                cd, fit.beta, fit.cov, scope=scope, target=target, z=z, n_draws=n_draws, seed=seed
            ).combined_ci90
        out[m] = CommonScore(n_events=cd.n_events, n_models=len(designs), score=ps.score, lmd=ps.lmd, ci90=ci)
    finite = sorted((s.score for s in out.values() if np.isfinite(s.score)), reverse=True)
    return {
        m: replace(s, rank=(1 + sum(v > s.score for v in finite)) if np.isfinite(s.score) else None)
        for m, s in out.items()
    }


def livemacro_scores_frame(
    rows: Sequence[ScoreRow], *, partition_key: str, available_at: datetime
) -> pl.DataFrame:
    """``livemacro_scores`` rows from :func:`score_model` results (with their ``common`` results)."""
    recs = []
    for r in rows:
        p, b, s, e, c = r.point, r.boot, r.sampling, r.events, r.common
        recs.append(
            {
                "partition_key": partition_key,
                "model_id": r.model_id,
                "fit_id": r.fit_id,
                "fit_name": r.fit_name,
                "horizon": r.horizon,
                "scope": r.scope,
                "target": r.target,
                "n_events": r.n_events_scope if r.n_events_scope is not None else p.n_events,
                "n_releases": p.n_releases,
                "n_events_dropped": r.n_events_dropped,
                "n_events_own": r.n_events_own,
                "n_releases_own": r.n_releases_own,
                "score": _none(p.score),
                "ss_model": _none(p.ss_model),
                "ss_cons": _none(p.ss_cons),
                "kappa": _none(p.kappa),
                "phi": _none(p.phi),
                "lmd": _none(p.lmd),
                "boot_draws": b.n_draws if b else None,
                "boot_seed": r.boot_seed,
                "boot_ci90_lo": _none(b.ci90[0]) if b else None,
                "boot_ci90_hi": _none(b.ci90[1]) if b else None,
                "boot_ci95_lo": _none(b.ci95[0]) if b else None,
                "boot_ci95_hi": _none(b.ci95[1]) if b else None,
                "p_le_zero": b.p_le_zero if b else None,
                "p_ge_zero": b.p_ge_zero if b else None,
                "lmd_ci90_lo": _none(b.lmd_ci90[0]) if b else None,
                "lmd_ci90_hi": _none(b.lmd_ci90[1]) if b else None,
                "event_ci90_lo": _none(e.event_ci90[0]) if e else None,
                "event_ci90_hi": _none(e.event_ci90[1]) if e else None,
                "event_ci95_lo": _none(e.event_ci95[0]) if e else None,
                "event_ci95_hi": _none(e.event_ci95[1]) if e else None,
                "combined_ci90_lo": _none(e.combined_ci90[0]) if e else None,
                "combined_ci90_hi": _none(e.combined_ci90[1]) if e else None,
                "combined_ci95_lo": _none(e.combined_ci95[0]) if e else None,
                "combined_ci95_hi": _none(e.combined_ci95[1]) if e else None,
                "min_events": r.min_events,
                "sampling_k": s[0] if s else None,
                "sampling_mean": _none(s[1]) if s else None,
                "sampling_ci95_lo": _none(s[2]) if s else None,
                "sampling_ci95_hi": _none(s[3]) if s else None,
                "n_events_common": c.n_events if c else None,
                "n_models_common": c.n_models if c else None,
                "common_rank": c.rank if c else None,
                "common_score": _none(c.score) if c else None,
                "common_lmd": _none(c.lmd) if c else None,
                "common_ci90_lo": _none(c.ci90[0]) if (c and c.ci90) else None,
                "common_ci90_hi": _none(c.ci90[1]) if (c and c.ci90) else None,
                "window_start": r.window_start,
                "window_end": r.window_end,
                "available_at": _utc(available_at),
            }
        )
    schema = storage.polars_schema("livemacro_scores")
    return storage.conform(
        "livemacro_scores",
        pl.DataFrame(recs, schema=schema) if recs else storage.empty_frame("livemacro_scores"),
    )


# ---------------------------------------------------------------------------------------------
# score_decompositions
# ---------------------------------------------------------------------------------------------


def _decomp(recs: list[dict], partition_key: str, available_at: datetime) -> pl.DataFrame:
    base = {
        "partition_key": partition_key,
        "comparator_model_id": None,
        "fit_id": None,
        "fit_name": None,
        "target": None,
        "indicator_id": None,
        "available_at": _utc(available_at),
    }
    full = [{**base, **r} for r in recs]
    schema = storage.polars_schema("score_decompositions")
    return storage.conform(
        "score_decompositions",
        pl.DataFrame(full, schema=schema) if full else storage.empty_frame("score_decompositions"),
    )


def shapley_frame(
    design: LiveDesign,
    fit: MarketBetaFit,
    *,
    model_id: str,
    horizon: str,
    partition_key: str,
    available_at: datetime,
    scope: str = "overall",
    target: str = "return",
    fit_name: str | None = None,
) -> pl.DataFrame:
    """Exact Shapley contributions per indicator (App. M) as ``score_decompositions`` rows (``design`` as
    scored: pass the model's own events so the contributions add up to its own-coverage score)."""
    idx, phi = shapley_allocation(design, fit.beta, scope=scope, target=target)
    recs = [
        {
            "model_id": model_id,
            "fit_id": fit.fit_id,
            "fit_name": fit_name,
            "horizon": horizon,
            "scope": scope,
            "target": target,
            "decomposition": "shapley",
            "indicator_id": design.indicator_ids[k],
            "metric": "contribution",
            "value": float(v),
        }
        for k, v in zip(idx, phi)
    ]
    return _decomp(recs, partition_key, available_at)


def sizing_frame(
    sd: SizingDiscipline, *, model_id: str, horizon: str, partition_key: str, available_at: datetime
) -> pl.DataFrame:
    """Sizing-discipline metrics of one model (S.4, Table 19) as ``score_decompositions`` rows."""
    metrics = {
        "mean_abs_s_hat": sd.mean_abs_s_hat,
        "corr_abs_s_hat_abs_error": sd.corr_abs_s_hat_abs_error,
        "sign_accuracy": sd.sign_accuracy,
        "mean_abs_s": sd.mean_abs_s,
        "n_field_events": float(sd.n_field_events),
    }
    recs = [
        {
            "model_id": model_id,
            "horizon": horizon,
            "scope": "overall",
            "decomposition": "sizing_discipline",
            "metric": k,
            "value": _none(v),
        }
        for k, v in metrics.items()
    ]
    return _decomp(recs, partition_key, available_at)


def aggregator_frame(
    shares: pl.DataFrame,
    *,
    model_id: str,
    horizon: str,
    partition_key: str,
    available_at: datetime,
    fit_id: str | None = None,
    fit_name: str | None = None,
) -> pl.DataFrame:
    """Table 11 shares (from ``relative_error.aggregator_shares``) as ``score_decompositions`` rows."""
    recs = [
        {
            "model_id": model_id,
            "fit_id": fit_id,
            "fit_name": fit_name,
            "horizon": horizon,
            "scope": "overall",
            "decomposition": "aggregator_share",
            "indicator_id": row["indicator_id"],
            "metric": m,
            "value": float(row[m]),
        }
        for row in shares.iter_rows(named=True)
        for m in ("raw_error_share", "relative_error_share", "economic_weight")
    ]
    return _decomp(recs, partition_key, available_at)


def paired_frame(
    pb: PairedBootstrap,
    *,
    model_id: str,
    comparator_model_id: str,
    fit_id: str,
    horizon: str,
    scope: str,
    target: str,
    partition_key: str,
    available_at: datetime,
    fit_name: str | None = None,
    min_events: int | None = None,
) -> pl.DataFrame:
    """A paired event bootstrap (S.2, Table 17) as ``score_decompositions`` rows: delta, n_events, min_events
    and, only when the pair shares at least ``min_events`` events, ci95_lo / ci95_hi."""
    base = {
        "model_id": model_id,
        "comparator_model_id": comparator_model_id,
        "fit_id": fit_id,
        "fit_name": fit_name,
        "horizon": horizon,
        "scope": scope,
        "target": target,
        "decomposition": "paired_bootstrap",
    }
    vals = {"delta": pb.delta, "n_events": float(pb.n_events)}
    if min_events is not None:
        vals["min_events"] = float(min_events)
    if pb.ci95 is not None:
        vals.update(ci95_lo=pb.ci95[0], ci95_hi=pb.ci95[1])
    return _decomp(
        [{**base, "metric": k, "value": _none(v)} for k, v in vals.items()], partition_key, available_at
    )


# ---------------------------------------------------------------------------------------------
# relative_errors, livebetting
# ---------------------------------------------------------------------------------------------


def relative_errors_frame(
    by_month: pl.DataFrame, *, partition_key: str, available_at: datetime, model_id: str | None = None
) -> pl.DataFrame:
    """``relative_errors`` rows from ``relative_error.relative_error_by_month`` (``model_id`` fills a
    frame that lacks the column)."""
    f = by_month
    if "model_id" not in f.columns:
        if model_id is None:
            raise ScoringError("relative errors: frame has no model_id column; pass model_id")
        f = f.with_columns(pl.lit(model_id).alias("model_id"))
    f = f.with_columns(
        pl.lit(partition_key).alias("partition_key"), pl.lit(_utc(available_at)).alias("available_at")
    )
    return storage.conform("relative_errors", f.select(storage.get_table("relative_errors").column_names))


def livebetting_frames(
    bets: pl.DataFrame,
    summary: pl.DataFrame,
    *,
    model_id: str,
    market_id: str,
    indicator_id: str,
    reference_period: date,
    release_at: datetime,
    partition_key: str,
    available_at: datetime,
    hours: str = "window",
    window_opens_at: datetime | None = None,
    n_models_common: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``livebetting_scores``, ``livebetting_bets``) frames from ``livebetting.hourly_bets`` and
    ``livebetting.betting_summary`` of one model on one market window; ``hours`` says which hours the summary
    covers (``window`` | ``common``)."""
    win = bets["winning_bucket"][0] if bets.height else None
    if win is None:
        raise ScoringError(f"market {market_id}: no price hour in the window; nothing to store")
    const = {
        "partition_key": partition_key,
        "model_id": model_id,
        "market_id": market_id,
        "available_at": _utc(available_at),
    }
    scores = summary.with_columns(
        *[pl.lit(v).alias(k) for k, v in const.items()],
        pl.lit(indicator_id).alias("indicator_id"),
        pl.lit(reference_period).alias("reference_period"),
        pl.lit(_utc(release_at)).alias("release_at"),
        pl.lit(win).alias("winning_bucket"),
        pl.lit(hours).alias("hours"),
        pl.lit(
            _utc(window_opens_at) if window_opens_at is not None else None, pl.Datetime("us", "UTC")
        ).alias("window_opens_at"),
        pl.lit(n_models_common, pl.Int32).alias("n_models_common"),
    ).select(storage.get_table("livebetting_scores").column_names)
    if "common_hour" not in bets.columns:
        bets = bets.with_columns(pl.lit(None, pl.Boolean).alias("common_hour"))
    stream = bets.with_columns(*[pl.lit(v).alias(k) for k, v in const.items()]).select(
        storage.get_table("livebetting_bets").column_names
    )
    return storage.conform("livebetting_scores", scores), storage.conform("livebetting_bets", stream)
