"""Macro track, scoring: prediction-market prices, frozen market betas, the LiveMacro Score family with its
decompositions and relative errors, and the LiveBetting Score (LiveMacroEval §3.6, §4, App. J-N, S).

Wiring only; the science is in ``leaf_live.macro.scoring`` (``betas``, ``livemacro``, ``evaluation``,
``livebetting``, ``relative_error``) and ``leaf_live.macro.sources.polymarket``. Options are Dagster
``Config``:

* ``market_betas``: :class:`MarketBetasConfig` = the fit windows (``full`` = Table 9 on 2010-01..2025-10,
  ``no_covid`` = the K.3 refit at the full-sample lambda, ``backtest`` = events up to the fit cutoff 2017-12
  with lambda by CV on that sample and sigma_i estimated on that window too: point in time; ``sigma:
  surprise_scales`` is the paper's full-sample sigma, the replication option). A stored ``fit_id`` is never
  rewritten; a window whose data changed adds a new ``fit_id`` under its name (``market_beta_fits``).
* ``macro_scores`` (``livemacro_scores``, ``score_decompositions``, ``relative_errors``):
:class:`ScoringConfig`
  = the evaluation modes (``backtest``: releases 2018-01..2025-10 with the ``backtest`` fit; ``live``:
  releases from 2025-11 with the ``full`` and ``no_covid`` fits, every horizon), bootstrap draws and seed.
  Each mode is one ``partition_key`` of those tables, replaced as a whole.
* ``prediction_market_prices``: snapshot grids, or live markets listed in :class:`MarketPricesConfig`.

``leaf-live run --fit-cutoff/--backtest-start/--backtest-end/--boot-draws`` set these through
:func:`scoring_run_config`.
"""

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
    multi_asset,
)
from pydantic import Field

from assets.common import DUCKDB_POOL, refuse_if_run_finished, table_metadata
from assets.macro_nowcasts import MACRO_NOWCAST_ASSETS
from assets.macro_releases import announcement_returns, releases, surprise_events, surprise_scales
from leaf_live.core import storage
from leaf_live.core.participation import label_boards, read_receipts
from leaf_live.core.pit import as_of, check_month, month_index, month_keys, month_start_of_index
from leaf_live.macro.scoring import betas as B
from leaf_live.macro.scoring import evaluation as E
from leaf_live.macro.scoring import livemacro as L
from leaf_live.macro.scoring import surprises as S
from leaf_live.macro.scoring.frames import fit_from_market_betas, market_betas_frame
from leaf_live.macro.sources.polymarket import MarketSpec
from resources import LeafLiveDB, PredictionMarketsResource

GROUP = "macro_scoring"
DEFAULT_FIT_CUTOFF = "2017-12"
DEFAULT_FIT_WINDOWS = [
    {"name": "full", "first_month": "2010-01", "last_month": "2025-10"},
    {
        "name": "no_covid",
        "first_month": "2010-01",
        "last_month": "2025-10",
        "exclude_covid": True,
        "lam_from": "full",
    },
    # point in time: sigma_i and beta both from the fit window (the paper's full-sample sigma:
    # sigma="surprise_scales")
    {"name": "backtest", "first_month": "2010-01", "last_month": DEFAULT_FIT_CUTOFF, "sigma": "fit_window"},
]
SIGMA_RULES = ("surprise_scales", "fit_window")
DEFAULT_MODES = [
    {
        "name": "backtest",
        "first_month": "2018-01",
        "last_month": "2025-10",
        "fits": ["backtest"],
        "horizons": ["terminal"],
    },
    {
        "name": "live",
        "first_month": "2025-11",
        "last_month": None,
        "fits": ["full", "no_covid"],
        "horizons": list(L.HORIZONS),
    },
]
# every producer of the one nowcasts table (the scores rank whatever models are in it)
NOWCAST_PRODUCERS = list(MACRO_NOWCAST_ASSETS)


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------------------------
# prediction_market_prices
# ---------------------------------------------------------------------------------------------


class LiveMarket(Config):
    slug: str = Field(description="Gamma event slug of the categorical macro market")
    indicator_id: str = Field(description="catalog indicator the market resolves on")
    reference_period: str = Field(description="first day of the reference period, YYYY-MM-DD")
    start: str = Field(description="first price time, ISO 8601 UTC (e.g. 2026-02-13T00:00:00Z)")
    end: str = Field(description="last price time, ISO 8601 UTC")
    fidelity: int = Field(default=60, description="CLOB price-history fidelity in minutes (hourly = 60)")


class MarketPricesConfig(Config):
    live_markets: list[LiveMarket] = Field(
        default=[],
        description=(
            "the Polymarket markets to fetch (with none, the snapshot client reads every recorded "
            "LiveMacroEval price grid and the live client fetches nothing)"
        ),
    )


def _ts(text: str, field: str) -> int:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"live market {field}={text!r}: not an ISO 8601 time") from None
    if t.tzinfo is None:
        raise ValueError(f"live market {field}={text!r}: give a time zone (UTC)")
    return int(t.timestamp())


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    metadata=table_metadata("prediction_market_prices"),
    description=(
        "Polymarket bucket prices (YES, 0-1) of the macro markets of the LiveBetting score (App. L): the "
        "recorded hourly grids (snapshot) or the CLOB price history of the configured markets (live). "
        "Partition = market_id; markets not fetched this time keep their rows."
    ),
)
def prediction_market_prices(
    context: AssetExecutionContext,
    config: MarketPricesConfig,
    db: LeafLiveDB,
    prediction_markets: PredictionMarketsResource,
) -> MaterializeResult:
    markets = [
        MarketSpec(
            m.slug,
            m.indicator_id,
            date.fromisoformat(m.reference_period),
            _ts(m.start, "start"),
            _ts(m.end, "end"),
            m.fidelity,
        )
        for m in config.live_markets
    ]
    frame = prediction_markets.client().market_prices(markets)
    if frame.height == 0:
        context.log.warning(
            "prediction_market_prices: no market prices; configure live_markets to fetch markets"
        )
    written = {}
    with db.get_connection() as con:
        for (key,), g in sorted(frame.group_by("partition_key"), key=lambda kv: kv[0]):
            written[key] = storage.replace_partition(
                con, "prediction_market_prices", g, {"partition_key": key}
            )
    return MaterializeResult(metadata={"rows": sum(written.values()), "markets": str(sorted(written))})


# ---------------------------------------------------------------------------------------------
# market_betas
# ---------------------------------------------------------------------------------------------


class FitWindow(Config):
    name: str = Field(description="fit name scores refer to (market_beta_fits.fit_name)")
    first_month: str = Field(
        default="2010-01", description="first release month of the events fitted, YYYY-MM (ET)"
    )
    last_month: str = Field(
        default="2025-10", description="last release month fitted (inclusive): the fit cutoff"
    )
    exclude_covid: bool = Field(
        default=False, description="drop events released 2020-03-01..2020-12-31 (K.3)"
    )
    lam: float | None = Field(
        default=None, description="fixed ridge lambda; none = blocked 5-fold CV (App. K.2)"
    )
    lam_from: str | None = Field(
        default=None, description="use the lambda of this earlier fit (K.3 refits at the full-sample lambda)"
    )
    sigma: str = Field(
        default="surprise_scales",
        description=(
            "surprise scales sigma_i the fit standardizes with: "
            "'surprise_scales' (the frozen 2010-01..2025-10 window, the paper; Table 9) or 'fit_window' "
            "(estimated on this fit's own release months: point in time, the backtest's default)"
        ),
    )


class MarketBetasConfig(Config):
    fits: list[FitWindow] = Field(
        default=DEFAULT_FIT_WINDOWS,
        description=(
            "fit windows: 'full' (Table 9), 'no_covid' (K.3) and 'backtest' (events up to the fit cutoff, "
            "lambda by CV and sigma_i on that sample: point in time)"
        ),
    )


def _check_windows(fits: list[FitWindow]) -> None:
    names = [f.name for f in fits]
    if len(set(names)) != len(names):
        raise ValueError(f"market_betas: fit names must be unique, got {names}")
    for k, f in enumerate(fits):
        for field, v in (("first_month", f.first_month), ("last_month", f.last_month)):
            check_month(v, f"market_betas: fit {f.name!r} {field}")
        if f.last_month < f.first_month:
            raise ValueError(
                f"market_betas: fit {f.name!r} last_month {f.last_month} < first_month {f.first_month}"
            )
        if f.lam is not None and f.lam_from is not None:
            raise ValueError(f"market_betas: fit {f.name!r} sets both lam and lam_from")
        if f.lam_from is not None and f.lam_from not in names[:k]:
            raise ValueError(
                f"market_betas: fit {f.name!r} lam_from={f.lam_from!r} must name an earlier fit of"
                f" {names[:k]}"
            )
        if f.sigma not in SIGMA_RULES:
            raise ValueError(f"market_betas: fit {f.name!r} sigma={f.sigma!r}: expected one of {SIGMA_RULES}")


def _lambda_rule(f: FitWindow) -> str:
    return f"from:{f.lam_from}" if f.lam_from else (f"fixed:{f.lam:g}" if f.lam is not None else "cv")


def write_fit(con, fit_id: str, betas: pl.DataFrame | None, registry: pl.DataFrame, fit_name: str) -> None:
    """Store a new fit's ``market_betas`` rows (``betas``, slice ``fit_id``; None: the fit is already stored
    and frozen) and the window's ``market_beta_fits`` registry ``registry`` in ONE transaction
    (``storage.replace_partitions``), so a killed step never leaves a registry row naming a fit that is not
    stored, nor a new fit no window names (issue 17). Raises :class:`leaf_live.core.storage.StorageError`."""
    slices = [storage.Slice("market_beta_fits", registry, {"fit_name": fit_name})]
    if betas is not None:
        slices.insert(0, storage.Slice("market_betas", betas, {"fit_id": fit_id}))
    refuse_if_run_finished()
    storage.replace_partitions(con, slices)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    metadata=table_metadata("market_betas", "market_beta_fits"),
    deps=[surprise_events],
    description=(
        "Frozen Huber-ridge market betas with HC1 V_beta (App. K.2) for each configured fit window (full"
        " sample = Table 9, COVID-excluded refit = K.3, backtest = events up to the fit cutoff). A fit_id"
        " already stored is never rewritten; market_beta_fits maps each window name to the fit it produced."
    ),
)
def market_betas(
    context: AssetExecutionContext, config: MarketBetasConfig, db: LeafLiveDB
) -> MaterializeResult:
    _check_windows(config.fits)
    now = _now()
    meta, done = {}, {}
    with db.get_connection() as con:
        have_months = {
            r[0] for r in con.execute("SELECT DISTINCT partition_key FROM surprise_events").fetchall()
        }
        stored = {r[0] for r in con.execute("SELECT DISTINCT fit_id FROM market_betas").fetchall()}
        for w in config.fits:
            need = month_keys(w.first_month, w.last_month)
            missing = sorted(set(need) - have_months)
            if missing:
                raise ValueError(
                    f"market_betas: fit {w.name!r} covers release months {w.first_month}..{w.last_month}, but"
                    f" {len(missing)} are not materialized in surprise_events (first missing: {missing[0]});"
                    " backfill first"
                )
            ev = storage.read_table(
                con, "surprise_events", "partition_key BETWEEN ? AND ?", [w.first_month, w.last_month]
            )
            stored_sigma = storage.read_table(con, "surprise_scales")
            sigma = stored_sigma
            if w.sigma == "fit_window":
                rel = storage.read_table(
                    con, "releases", "partition_key BETWEEN ? AND ?", [w.first_month, w.last_month]
                )
                window = S.surprise_scales(
                    rel,
                    start=date.fromisoformat(f"{w.first_month}-01"),
                    end=month_start_of_index(month_index(w.last_month) + 1) - timedelta(days=1),
                )
                # an indicator with < 2 surprises in the window has no scale there; it has no surprise
                # variation either, so its beta is the ridge's exact 0 and its sigma never enters a score:
                # keep the stored one
                sigma = pl.concat(
                    [
                        window.select("indicator_id", "sigma"),
                        stored_sigma.select("indicator_id", "sigma").filter(
                            ~pl.col("indicator_id").is_in(window["indicator_id"].implode())
                        ),
                    ]
                )
                ev = S.restandardize_events(ev, stored_sigma, sigma)
            lam = done[w.lam_from].lam if w.lam_from else w.lam
            fit = B.fit_market_betas(B.event_design(ev), lam=lam, exclude_covid=w.exclude_covid)
            order = {i: k for k, i in enumerate(fit.indicator_ids)}
            sig = sigma.filter(pl.col("indicator_id").is_in(list(order))).sort(
                pl.col("indicator_id").replace_strict(order, return_dtype=pl.Int32)
            )
            if sig.height != len(order):
                missing = sorted(set(order) - set(sig["indicator_id"].to_list()))
                raise ValueError(f"market_betas: fit {w.name!r} has no sigma for {missing} ({w.sigma})")
            fit = replace(fit, sigma=sig["sigma"].to_numpy().astype(float), sigma_rule=w.sigma)
            done[w.name] = fit
            used = ev.filter(pl.col("r_g").is_not_null())
            avail = used["available_at"].max()
            new = fit.fit_id not in stored
            reg = storage.read_table(con, "market_beta_fits", "fit_name = ?", [w.name])
            row = {
                "fit_name": w.name,
                "fit_id": fit.fit_id,
                "first_month": w.first_month,
                "last_month": w.last_month,
                "exclude_covid": w.exclude_covid,
                "lambda_rule": _lambda_rule(w),
                "registered_at": now,
                "confirmed_at": now,
                "available_at": avail,
            }
            old = reg.filter(pl.col("fit_id") == fit.fit_id)
            if old.height:
                row["registered_at"] = old["registered_at"][0]
            reg = pl.concat(
                [
                    reg.filter(pl.col("fit_id") != fit.fit_id),
                    pl.DataFrame([row], schema=storage.polars_schema("market_beta_fits")),
                ]
            )
            betas = market_betas_frame(fit, available_at=avail) if new else None  # a stored fit is frozen
            write_fit(con, fit.fit_id, betas, reg, w.name)
            stored.add(fit.fit_id)
            meta[w.name] = (
                f"{fit.fit_id} ({'new' if new else 'already stored'}): lambda={fit.lam:.4g}"
                f" ({fit.lam_source}), {fit.n_events} events, iterations={fit.iterations},"
                f" df_eff={fit.df_eff:.2f}, sigma from {w.sigma}"
            )
            context.log.info(f"market_betas {w.name}: {meta[w.name]}")
    return MaterializeResult(metadata={k: MetadataValue.text(v) for k, v in meta.items()})


def current_fits(con) -> dict[str, B.MarketBetaFit]:
    """Fit name -> the fit that name confirmed most recently (``market_beta_fits``), rebuilt from
    ``market_betas``."""
    reg = as_of(storage.read_table(con, "market_beta_fits"), _now(), ["fit_name"], time_col="confirmed_at")
    if reg.height == 0:
        return {}
    rows = storage.read_table(con, "market_betas", "fit_id IN (SELECT fit_id FROM market_beta_fits)")
    return {n: fit_from_market_betas(rows, fid) for n, fid in zip(reg["fit_name"], reg["fit_id"])}


# ---------------------------------------------------------------------------------------------
# livemacro_scores, score_decompositions, relative_errors
# ---------------------------------------------------------------------------------------------


class ModeConfig(Config):
    name: str = Field(description="mode name = partition_key of the scoring tables (backtest | live | ...)")
    first_month: str = Field(description="first release month scored, YYYY-MM (America/New_York)")
    last_month: str | None = Field(default=None, description="last release month scored (none = latest)")
    fits: list[str] = Field(description="market_beta_fits names; the first is the headline fit")
    horizons: list[str] = Field(default=["terminal"], description="terminal | median_<k>d (K.3)")
    targets: list[str] = Field(
        default=["return", "shock"], description="return (LiveMacro) | shock (consensus-relative, S.1)"
    )
    merge_overlapping: bool = Field(
        default=True,
        description=(
            "score releases whose announcement windows overlap as "
            "one event (false: one event per timestamp, the replication design)"
        ),
    )
    compare: list[str] = Field(
        default=[],
        description=(
            "models of the common-events board (empty: chosen greedily, "
            "most own events first, while at least min_events events stay common)"
        ),
    )


class ScoringConfig(Config):
    modes: list[ModeConfig] = Field(
        default=DEFAULT_MODES,
        description=(
            "evaluation modes: 'backtest' (releases 2018-01..2025-10, fit 'backtest' = betas up to the fit "
            "cutoff) and 'live' (releases from 2025-11, full-sample and no-COVID fits, every horizon)"
        ),
    )
    boot_draws: int = Field(
        default=L.DEFAULT_BOOT_DRAWS, description="parametric (Eq. 12) and paired (S.2) bootstrap draws"
    )
    seed: int = Field(
        default=L.DEFAULT_SEED, description="seed of the bootstrap draws (shared by every model)"
    )
    sampling_k: int = Field(
        default=L.SAMPLING_K,
        description="K.3 sampling CI over the forecast standing 0..k-1 hours before each release (0 = off)",
    )
    rank_boot: int = Field(
        default=1000,
        description="replicates of the coverage-robust ranking bootstrap (effects re-estimated in each)",
    )
    min_events: int = Field(
        default=E.MIN_EVENTS,
        description=(
            "fewest events an event-resampling interval, a common "
            "event set or a paired comparison interval is given for"
        ),
    )


def _mode(m: ModeConfig) -> E.EvaluationMode:
    return E.EvaluationMode(
        m.name,
        m.first_month,
        m.last_month,
        fits=tuple(m.fits),
        horizons=tuple(m.horizons),
        targets=tuple(m.targets),
        merge_overlapping=m.merge_overlapping,
        compare=tuple(m.compare),
    )


def _span_nowcasts(con, mode: E.EvaluationMode) -> pl.DataFrame:
    """Valid nowcasts issued before their release (after_release = false) for the mode's releases."""
    cond = "r.partition_key >= ?" + (" AND r.partition_key <= ?" if mode.last_month else "")
    params = [mode.first_month] + ([mode.last_month] if mode.last_month else [])
    rows = storage.read_table(
        con,
        "nowcasts",
        "valid AND NOT after_release AND EXISTS (SELECT 1 FROM releases r WHERE r.indicator_id ="
        f" nowcasts.indicator_id AND r.reference_period = nowcasts.reference_period AND {cond})",
        params,
    )
    return label_boards(
        rows, read_receipts(con)
    )  # issue 21: external rows not live-verified -> @retrospective


_SCORE_DEPS = [
    market_betas,
    surprise_events,
    surprise_scales,
    releases,
    announcement_returns,
    *NOWCAST_PRODUCERS,
]


MODE_TABLES = (
    "livemacro_scores",
    "score_decompositions",
    "relative_errors",
    "livemacro_event_losses",
    "livemacro_rankings",
)


def write_mode_scores(con, res, mode: str) -> list[int]:
    """Replace the partition ``mode`` of the five LiveMacro tables (:data:`MODE_TABLES`) with the frames
    of ``res`` (an :func:`leaf_live.macro.scoring.evaluation.evaluate_mode` result: ``scores``,
    ``decompositions``, ``relative_errors``, ``event_losses``, ``rankings``) in ONE transaction, so a killed
    step never leaves a board whose rankings come from another scoring than its scores (issue 17). Returns
    the rows written per table, in :data:`MODE_TABLES` order."""
    frames = [res.scores, res.decompositions, res.relative_errors, res.event_losses, res.rankings]
    where = {"partition_key": mode}
    refuse_if_run_finished()
    return storage.replace_partitions(
        con, [storage.Slice(t, f, where) for t, f in zip(MODE_TABLES, frames, strict=True)]
    )


@multi_asset(
    pool=DUCKDB_POOL,
    name="macro_scores",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "livemacro_scores",
            metadata=table_metadata("livemacro_scores"),
            deps=_SCORE_DEPS,
            description=(
                "LiveMacro Score family (Eq. 8/17) of every model in the nowcasts table, per evaluation mode"
                " (partition_key), fit, horizon, scope and target, with bootstrap and sampling intervals,"
                " kappa/phi, LMD and n_events_own; the consensus scores 0."
            ),
        ),
        AssetSpec(
            "score_decompositions",
            metadata=table_metadata("score_decompositions"),
            deps=_SCORE_DEPS,
            description=(
                "Shapley allocation per indicator (App. M), sizing discipline (S.4), aggregator shares (K.4),"
                " mean relative error (Table 16), paired event bootstraps between models on shared releases"
                " (S.2) and the event coverage of each mode."
            ),
        ),
        AssetSpec(
            "relative_errors",
            metadata=table_metadata("relative_errors"),
            deps=_SCORE_DEPS,
            description=(
                "Real-time squared relative nowcast error per "
                "model, indicator, reference period and day before release (App. J), per evaluation mode."
            ),
        ),
        AssetSpec(
            "livemacro_event_losses",
            metadata=table_metadata("livemacro_event_losses"),
            deps=_SCORE_DEPS,
            description=(
                "Per-event losses behind every LiveMacro Score (each model's own events, the consensus's"
                " loss beside each), from which every board is recomputable in SQL."
            ),
        ),
        AssetSpec(
            "livemacro_rankings",
            metadata=table_metadata("livemacro_rankings"),
            deps=_SCORE_DEPS,
            description=(
                "Coverage-robust LiveMacro ranking (two-way fixed effects, ForecastBench's difficulty"
                " adjustment) with a bootstrap that re-estimates the effects per replicate, P(rank 1),"
                " paired intervals against the consensus; full and ex-COVID windows."
            ),
        ),
    ],
)
def macro_scores(
    context: AssetExecutionContext, config: ScoringConfig, db: LeafLiveDB
) -> Iterator[MaterializeResult]:
    modes = [_mode(m) for m in config.modes]
    meta: dict[str, dict] = {
        "livemacro_scores": {},
        "score_decompositions": {},
        "relative_errors": {},
        "livemacro_event_losses": {},
        "livemacro_rankings": {},
    }
    with db.get_connection() as con:
        fits = current_fits(con)
        rel = storage.read_table(con, "releases")
        ev = storage.read_table(con, "surprise_events")
        sigma = storage.read_table(con, "surprise_scales")
        ret = storage.read_table(con, "announcement_returns")
        for mode in modes:
            res = E.evaluate_mode(
                mode,
                releases=rel,
                events=ev,
                sigma=sigma,
                nowcasts=_span_nowcasts(con, mode),
                fits=fits,
                returns=ret,
                n_draws=config.boot_draws,
                seed=config.seed,
                sampling_k=config.sampling_k,
                min_events=config.min_events,
                rank_boot=config.rank_boot,
            )
            n1, n2, n3, n4, n5 = write_mode_scores(con, res, mode.name)
            meta["livemacro_event_losses"][mode.name] = f"{n4} rows"
            meta["livemacro_rankings"][mode.name] = f"{n5} rows"
            for skipped, reason in res.skipped.items():
                context.log.info(f"{mode.name}: {skipped} not scored: {reason}")
            meta["livemacro_scores"][mode.name] = f"{n1} rows; models {res.models}; coverage {res.coverage}"
            meta["score_decompositions"][mode.name] = f"{n2} rows"
            meta["relative_errors"][mode.name] = f"{n3} rows"
    for key, m in meta.items():
        yield MaterializeResult(asset_key=key, metadata={k: MetadataValue.text(v) for k, v in m.items()})


# ---------------------------------------------------------------------------------------------
# livebetting_scores, livebetting_bets
# ---------------------------------------------------------------------------------------------


def write_market_scores(con, scores: pl.DataFrame, bets: pl.DataFrame, markets: list[str]) -> tuple[int, int]:
    """Replace the partitions ``markets`` (market ids) of ``livebetting_scores`` with ``scores`` and of
    ``livebetting_bets`` with ``bets`` in ONE transaction (``storage.replace_partitions``): a killed step
    never leaves a market's score without the bet stream it sums. Returns (score rows, bet rows)."""
    where = {"partition_key": list(markets)}
    refuse_if_run_finished()
    n_s, n_b = storage.replace_partitions(
        con,
        [storage.Slice("livebetting_scores", scores, where), storage.Slice("livebetting_bets", bets, where)],
    )
    return n_s, n_b


@multi_asset(
    pool=DUCKDB_POOL,
    name="livebetting",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "livebetting_scores",
            metadata=table_metadata("livebetting_scores"),
            deps=[prediction_market_prices, releases, *NOWCAST_PRODUCERS],
            description=(
                "LiveBetting Score (App. L Eq. 13) of every model with nowcasts for a stored market, inside"
                " the prediction window and on answers that existed by each hour, by calendar-month segment"
                " and total (Table 13), on the window's hours and on the hours every compared model bets"
                " (common); excluded hours counted by reason. Partition = market_id."
            ),
        ),
        AssetSpec(
            "livebetting_bets",
            metadata=table_metadata("livebetting_bets"),
            deps=[prediction_market_prices, releases, *NOWCAST_PRODUCERS],
            description=(
                "The hourly $1 bet stream behind livebetting_scores with the cumulative return curve and "
                "the common hours."
            ),
        ),
    ],
)
def livebetting(context: AssetExecutionContext, db: LeafLiveDB) -> Iterator[MaterializeResult]:
    with db.get_connection() as con:
        prices = storage.read_table(con, "prediction_market_prices")
        rel = storage.read_table(con, "releases")
        nc = storage.read_table(
            con,
            "nowcasts",
            "valid AND NOT after_release AND (indicator_id, reference_period) IN "
            "(SELECT DISTINCT indicator_id, reference_period FROM prediction_market_prices)",
        )
        nc = label_boards(nc, read_receipts(con))  # issue 21: the live / retrospective boards
        windows = storage.read_table(
            con,
            "nowcast_windows",
            "(indicator_id, reference_period) IN "
            "(SELECT DISTINCT indicator_id, reference_period FROM prediction_market_prices)",
        )
        res = E.score_markets(prices, rel, nc, windows)
        n_s, n_b = write_market_scores(con, res.scores, res.bets, res.markets)
    for m, reason in res.skipped.items():
        context.log.warning(f"livebetting: market {m} not scored: {reason}")
    total = res.scores.filter(pl.col("segment") == "total")
    summary = {
        f"{r['market_id']} {r['model_id']} ({r['hours']} hours)": (
            None if r["final_return"] is None else round(r["final_return"], 4)
        )
        for r in total.iter_rows(named=True)
    }
    yield MaterializeResult(
        asset_key="livebetting_scores",
        metadata={
            "rows": n_s,
            "markets": str(res.markets),
            "skipped": str(res.skipped),
            "final_returns": MetadataValue.json(summary),
        },
    )
    yield MaterializeResult(asset_key="livebetting_bets", metadata={"rows": n_b})


# ---------------------------------------------------------------------------------------------
# Asset checks
# ---------------------------------------------------------------------------------------------


@asset_check(
    pool=DUCKDB_POOL,
    asset="livemacro_scores",
    description=(
        "The consensus (S_hat = 0) scores exactly 0, with a zero-width "
        "interval, in every mode, fit, horizon, scope and target where the target is not identically 0."
    ),
    blocking=True,
)
def consensus_scores_zero(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        n, bad = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE score IS DISTINCT FROM 0 OR boot_ci90_lo IS DISTINCT"
            " FROM 0 OR boot_ci90_hi IS DISTINCT FROM 0) FROM livemacro_scores WHERE model_id LIKE"
            " 'consensus/%' AND n_events > 0 AND ss_cons > 0"
        ).fetchall()[0]
    return AssetCheckResult(passed=n > 0 and bad == 0, metadata={"consensus_rows": n, "nonzero": bad})


@asset_check(
    pool=DUCKDB_POOL,
    asset="score_decompositions",
    description=(
        "Exact Shapley contributions (App. M) sum to the score they "
        "allocate (|sum - score| <= 1e-9) for every model, fit, scope and target."
    ),
    blocking=True,
)
def shapley_sums_to_score(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        n, bad, worst = con.execute(
            "WITH s AS (SELECT partition_key, model_id, fit_id, horizon, scope, target, sum(value) AS total "
            "FROM score_decompositions WHERE decomposition = 'shapley' GROUP BY ALL) "
            "SELECT count(*), count(*) FILTER (WHERE l.score IS NULL OR abs(s.total - l.score) > 1e-9), "
            "max(abs(s.total - l.score)) FROM s LEFT JOIN livemacro_scores l "
            "USING (partition_key, model_id, fit_id, horizon, scope, target)"
        ).fetchall()[0]
    return AssetCheckResult(
        passed=n > 0 and bad == 0,
        metadata={"allocations": n, "mismatched": bad, "max_abs_gap": float(worst or 0.0)},
    )


@asset_check(
    pool=DUCKDB_POOL,
    asset="livemacro_scores",
    description=(
        "Theme scores use only their theme's events: the theme scopes partition the overall scope's own"
        " releases (sum of theme n_releases_own = overall n_releases_own) and no theme holds more events or"
        " own events than the overall scope."
    ),
    blocking=True,
)
def theme_scopes_partition_releases(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        scores = storage.read_table(con, "livemacro_scores")
    bad = E.themes_partition_releases(scores)
    return AssetCheckResult(passed=scores.height > 0 and bad.height == 0, metadata={"violations": bad.height})


@asset_check(
    pool=DUCKDB_POOL,
    asset="livebetting_bets",
    description=(
        "Point in time: every bet hour lies inside the prediction window "
        "(at or after it opens, strictly before the release) and uses a pre-release nowcast whose answer was "
        "known at or before the hour."
    ),
    blocking=True,
)
def bets_before_release(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        n, bad = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE b.bet_at >= s.release_at OR b.bet_at < s.window_opens_at"
            " OR b.nowcast_issued_at > b.bet_at OR b.nowcast_known_at > b.bet_at OR b.nowcast_issued_at >="
            " s.release_at) FROM livebetting_bets b JOIN (SELECT DISTINCT partition_key, model_id, market_id,"
            " release_at, window_opens_at FROM livebetting_scores) s USING (partition_key, model_id,"
            " market_id)"
        ).fetchall()[0]
    return AssetCheckResult(passed=bad == 0, metadata={"bet_hours": n, "violations": bad})


def scoring_run_config(
    *,
    fit_cutoff: str | None = None,
    backtest_start: str | None = None,
    backtest_end: str | None = None,
    boot_draws: int | None = None,
    backtest_sigma: str | None = None,
) -> dict:
    """Run config for ``market_betas`` and ``macro_scores`` from the ``leaf-live run`` options (``{}`` when
    none is given): ``fit_cutoff`` = last month of the ``backtest`` fit; ``backtest_start``/``backtest_end`` =
    the backtest scoring span; ``boot_draws`` = bootstrap draws; ``backtest_sigma`` = the backtest fit's sigma
    rule (``fit_window``, the default: point in time; ``surprise_scales``: the paper's full-sample sigma)."""
    ops: dict = {}
    if fit_cutoff is not None or backtest_sigma is not None:
        fits = [dict(f) for f in DEFAULT_FIT_WINDOWS]
        for f in fits:
            if f["name"] == "backtest":
                f["last_month"] = fit_cutoff or f["last_month"]
                f["sigma"] = backtest_sigma or f["sigma"]
        ops["market_betas"] = {"config": {"fits": fits}}
    if backtest_start is not None or backtest_end is not None or boot_draws is not None:
        modes = [dict(m) for m in DEFAULT_MODES]
        for m in modes:
            if m["name"] == "backtest":
                m["first_month"] = backtest_start or m["first_month"]
                m["last_month"] = backtest_end or m["last_month"]
        cfg: dict = {"modes": modes}
        if boot_draws is not None:
            cfg["boot_draws"] = boot_draws
        ops["macro_scores"] = {"config": cfg}
    return {"ops": ops} if ops else {}


MACRO_SCORING_ASSETS = [prediction_market_prices, market_betas, macro_scores, livebetting]
MACRO_SCORING_CHECKS = [
    consensus_scores_zero,
    shapley_sums_to_score,
    theme_scopes_partition_releases,
    bets_before_release,
]
