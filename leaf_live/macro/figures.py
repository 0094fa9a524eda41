"""Macro-track report figures (LiveMacroEval Fig. 2, 3, 4, 5 and 7) from the stored tables.

Pure functions, frames in, :class:`leaf_live.core.figures.Plot` out; nothing is recomputed: every mark is a
stored value (a score and its stored interval, a cumulative bet return, a nowcast, a released value).

* :func:`score_by_model` (Fig. 2): LiveMacro Score per model with its stored interval, one panel per board
  (live window, historical backtest), from rows of the dbt mart ``leaderboard``.
* :func:`score_by_theme` (Fig. 4): the live board's score per theme, 2 x 2 panels.
* :func:`livebetting_cumulative` (Fig. 3): cumulative LiveBetting return per model and market, from
  ``livebetting_bets`` (and the release times in ``livebetting_scores``).
* :func:`nowcast_paths` (Fig. 5 / 7): one agent's nowcasts around the release of a target, with the consensus,
  the released value, the release time and the App. E smoothing spline where ``post_release_paths`` holds it.

Like the printed boards, a score figure compares like with like: a filled bar is the model's score on the
board's common event set (the events every compared model nowcasts itself) with the combined 90% interval
(beta draws x event resamples); a model not compared there is drawn as a hatched outline at its own-event
score, without an interval. The paper's Fig. 2 interval (parametric bootstrap over beta alone) is on the
site's tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta

import polars as pl
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

from leaf_live.core.figures import Plot, interval_barh, model_colors, new_figure, note
from leaf_live.macro.catalog import THEMES, get_indicator

BOARD_TITLES = {"live": "Live window", "backtest": "Historical backtest"}
# The fit each board is headlined by (market_beta_fits names): the live window uses the full-sample beta
# (Table 9), the backtest the beta frozen on releases up to its fit cutoff.
HEADLINE_FITS = {"live": "full", "backtest": "backtest"}
THEME_TITLES = {
    "supply_production": "Supply and Production",
    "demand_inflation": "Demand and Inflation",
    "labor_market": "Labor Market",
    "housing": "Housing",
}
# Fig. 5 / 7 targets: (indicator, reference period) of the March 2026 CPI and unemployment prints and the
# 2026Q1 GDP advance estimate.
PATH_TARGETS = (
    ("cpi", date(2026, 3, 1)),
    ("unemployment_rate", date(2026, 3, 1)),
    ("real_gdp_advance", date(2026, 1, 1)),
)
PATH_DAYS_AFTER = 5  # Fig. 7: nowcasts continued five days past the release

COMMON_INTERVAL = (
    "90% interval over β draws x event resamples (coefficient and event-sampling uncertainty), on the "
    "board's common event set"
)


def board_rows(
    board: pl.DataFrame,
    *,
    leaderboard: str,
    scopes: Sequence[str] = ("overall",),
    target: str = "return",
    horizon: str = "terminal",
    fit_name: str | None = None,
) -> pl.DataFrame:
    """Rows of the ``leaderboard`` mart for one board (evaluation mode, fit, horizon, target) and ``scopes``,
    ordered by scope (as given), then by ``rank`` (the rank on the board's common event set; models not
    compared there, rank NULL, last), then own-event score (best first), ties by model_id. ``fit_name``
    defaults to the mode's :data:`HEADLINE_FITS` entry. Theme rows of a model without one own event in the
    theme are dropped unless it is the consensus (they are the consensus's 0 by construction, not the
    model's).
    """
    fit = fit_name or HEADLINE_FITS.get(leaderboard)
    f = board.filter(
        (pl.col("leaderboard") == leaderboard)
        & pl.col("scope").is_in(list(scopes))
        & (pl.col("target") == target)
        & (pl.col("horizon") == horizon)
    )
    if fit is not None:
        f = f.filter(pl.col("fit_name") == fit)
    f = f.filter(
        (pl.col("scope") == "overall")
        | (pl.col("n_events_own").fill_null(0) > 0)
        | pl.col("model_id").str.starts_with("consensus/")
    )
    order = {s: k for k, s in enumerate(scopes)}
    return (
        f.with_columns(pl.col("scope").replace_strict(order, return_dtype=pl.Int32).alias("_o"))
        .sort(["_o", "rank", "score", "model_id"], descending=[False, False, True, False], nulls_last=True)
        .drop("_o")
    )


def _label(r: dict) -> str:
    rank = f"#{r['rank']}, " if r.get("rank") is not None else ""
    return (
        f"{r['model_id']} ({rank}own"
        f" {r['n_events_own'] if r['n_events_own'] is not None else '?'}/{r['n_events']})"
    )


def drawn_scores(rows: pl.DataFrame) -> pl.DataFrame:
    """What a score panel draws per row of :func:`board_rows`: the score on the board's common event set with
    its combined interval for the compared models (``kind`` = 'common'), the model's own-event score without
    an interval for the others (``kind`` = 'own', drawn hollow)."""
    common = pl.col("common_score").is_not_null()
    return rows.select(
        "model_id",
        "rank",
        pl.when(common).then(pl.col("common_score")).otherwise(pl.col("score")).alias("value"),
        pl.when(common).then(pl.lit("common")).otherwise(pl.lit("own")).alias("kind"),
        pl.when(common).then(pl.col("common_ci90_lo")).alias("ci_lo"),
        pl.when(common).then(pl.col("common_ci90_hi")).alias("ci_hi"),
        "n_events_common",
        "n_events_own",
        "n_events",
    )


def _score_panel(ax, rows: pl.DataFrame, title: str, colors: dict[str, str]) -> pl.DataFrame:
    d = drawn_scores(rows)
    recs = d.to_dicts()
    interval_barh(
        ax,
        [_label(r) for r in rows.to_dicts()],
        [r["value"] for r in recs],
        [r["ci_lo"] for r in recs],
        [r["ci_hi"] for r in recs],
        colors=[colors[r["model_id"]] for r in recs],
        hollow=[r["kind"] == "own" for r in recs],
    )
    n_common = rows["n_events_common"].drop_nulls()
    common = (
        f"filled: common event set of {n_common[0]} events, 90% β × events; hatched: not compared, own events"
        if n_common.len()
        else "no common event set: own events, hatched"
    )
    ax.set_title(f"{title}\n{common}", fontsize=9)
    ax.set_xlabel("LiveMacro Score (0 = consensus)")
    ax.tick_params(axis="y", labelsize=8)
    return d


def _span(rows: pl.DataFrame) -> str:
    lo, hi = rows["window_start"].min(), rows["window_end"].max()
    return f"{lo:%Y-%m-%d} .. {hi:%Y-%m-%d}" if lo is not None else "no events"


def score_by_model(board: pl.DataFrame, boards: Sequence[str] = ("live", "backtest")) -> Plot:
    """LiveMacroEval Fig. 2: the overall LiveMacro Score (target r_g, terminal nowcast) of every model on each
    board in ``boards`` (:func:`drawn_scores`: common-set score with its combined interval, or the own-event
    score of a model not compared), from rows of the ``leaderboard`` mart. ``data``: the bars, one row per
    (board, model), as :func:`drawn_scores` plus ``board``."""
    panels = [(b, board_rows(board, leaderboard=b)) for b in boards]
    colors = model_colors(board["model_id"].to_list())
    heights = [max(r.height, 1) for _, r in panels]
    fig, axes = new_figure(
        9.0,
        1.2 + 0.32 * sum(heights) + 0.7 * len(panels),
        len(panels),
        1,
        gridspec_kw={"height_ratios": heights},
    )
    drawn = []
    for ax, (b, rows) in zip(axes[:, 0], panels):
        if rows.height == 0:
            note(ax, f"{BOARD_TITLES.get(b, b)}: no LiveMacro scores stored")
            continue
        d = _score_panel(
            ax, rows, f"{BOARD_TITLES.get(b, b)} (fit '{rows['fit_name'][0]}'), events {_span(rows)}", colors
        )
        drawn.append(d.select(pl.lit(b).alias("board"), pl.all()))
    fig.suptitle("LiveMacro Score by model", fontsize=11)
    data = pl.concat(drawn) if drawn else pl.DataFrame()
    caption = (
        "LiveMacro Score (Eq. 8, target: announcement-window E-mini return, terminal nowcast), overall,"
        " positive = better than the consensus on equity-market relevance. Filled bars: the score on the"
        " board's common event set (the events every compared model nowcasts itself), models in rank order;"
        f" whiskers: {COMMON_INTERVAL}. Hatched outlines: models not compared on that set (too few shared"
        " events), their score on their own events, no interval. '#k' = rank, 'own a/b' = own events of all"
        " events. Source: leaderboard mart (livemacro_scores)."
    )
    return Plot(
        "macro_score_by_model", "LiveMacro Score by model (Fig. 2)", caption, fig, data, empty=not drawn
    )


def score_by_theme(board: pl.DataFrame, leaderboard: str = "live") -> Plot:
    """LiveMacroEval Fig. 4: the LiveMacro Score of one board restricted to each theme's indicators, 2 x 2
    panels (Supply and Production, Demand and Inflation, Labor Market, Housing). ``data``: one row per
    (theme, model)."""
    fig, axes = new_figure(12.0, 7.5, 2, 2)
    colors = model_colors(board["model_id"].to_list())
    drawn = []
    for ax, theme in zip(axes.ravel(), THEMES):
        rows = board_rows(board, leaderboard=leaderboard, scopes=(theme,))
        if rows.height == 0:
            note(ax, f"{THEME_TITLES[theme]}: no scores stored")
            continue
        d = _score_panel(ax, rows, THEME_TITLES[theme], colors)
        drawn.append(d.select(pl.lit(theme).alias("scope"), pl.all()))
    fig.suptitle(f"LiveMacro Score by theme: {BOARD_TITLES.get(leaderboard, leaderboard)}", fontsize=11)
    caption = (
        "Each panel restricts the score to the theme's indicators"
        f" ({BOARD_TITLES.get(leaderboard, leaderboard)}, fit '{HEADLINE_FITS.get(leaderboard)}'), each theme"
        f" with its own common event set: filled bars = the score there with whiskers = {COMMON_INTERVAL};"
        " hatched outlines = models not compared there (own-event score, no interval). Models without an own"
        " event in a theme are left out of its panel. Source: leaderboard mart."
    )
    return Plot(
        "macro_score_by_theme",
        "LiveMacro Score by theme (Fig. 4)",
        caption,
        fig,
        pl.concat(drawn) if drawn else pl.DataFrame(),
        empty=not drawn,
    )


def livebetting_cumulative(bets: pl.DataFrame, scores: pl.DataFrame) -> Plot:
    """LiveMacroEval Fig. 3: cumulative LiveBetting return (Eq. 13 so far: cumulative profit / bets placed, in
    %) of every model over the hours of each market's window, one panel per market, the release marked.
    ``bets``: ``livebetting_bets`` rows; ``scores``: ``livebetting_scores`` rows (release time, winning
    bucket, window opening; the ``window`` rows). ``data``: each model's final cumulative return per market
    (the curve's last point)."""
    totals = scores.filter((pl.col("segment") == "total") & (pl.col("hours") == "window"))
    markets = (
        totals.select("market_id", "indicator_id", "reference_period", "release_at", "winning_bucket")
        .unique("market_id")
        .sort("release_at", "market_id")
    )
    n = max(markets.height, 1)
    fig, axes = new_figure(9.0, 2.6 * n + 0.6, n, 1)
    finals = []
    colors = model_colors(bets["model_id"].to_list())
    if markets.height == 0:
        note(axes[0, 0], "no LiveBetting bets stored")
    for ax, m in zip(axes[:, 0], markets.to_dicts()):
        b = bets.filter((pl.col("market_id") == m["market_id"]) & pl.col("cum_return").is_not_null()).sort(
            "bet_at"
        )
        for model in sorted(b["model_id"].unique().to_list()):
            s = b.filter(pl.col("model_id") == model)
            ax.plot(
                s["bet_at"].to_list(),
                (100 * s["cum_return"]).to_list(),
                lw=1.3,
                color=colors[model],
                label=model,
                ls="--" if model.startswith(("consensus/", "fed/")) else "-",
            )
            last = s.row(s.height - 1, named=True)
            finals.append(
                {
                    "market_id": m["market_id"],
                    "model_id": model,
                    "final_cum_return": last["cum_return"],
                    "cum_bets": last["cum_bets"],
                    "last_bet_at": last["bet_at"],
                }
            )
        ax.axvline(m["release_at"], color="black", ls=":", lw=1)
        ax.axhline(0, color="#333333", lw=0.6)
        ind = get_indicator(m["indicator_id"])
        ax.set_title(
            f"{ind.short}, {m['reference_period']:%Y-%m} ({m['market_id']}); winning bucket "
            f"{m['winning_bucket']}; release dotted",
            fontsize=9,
        )
        ax.set_ylabel("cumulative return, %")
        ax.xaxis.set_major_formatter(ConciseDateFormatter(AutoDateLocator()))
        ax.legend(fontsize=7, loc="best", ncol=2)
    fig.suptitle("Cumulative LiveBetting returns", fontsize=11)
    caption = (
        "$1 bet every price hour of the prediction window on the bucket holding the model's latest known"
        " nowcast; the curve is cumulative profit / bets placed (Eq. 13 so far, %). Dashed: consensus and Fed"
        " nowcasts. Source: livebetting_bets."
    )
    return Plot(
        "macro_livebetting_cumulative",
        "Cumulative LiveBetting returns (Fig. 3)",
        caption,
        fig,
        pl.DataFrame(finals) if finals else pl.DataFrame(),
        empty=not finals,
    )


def pick_agent(nowcasts: pl.DataFrame, targets: Sequence[tuple[str, date]] = PATH_TARGETS) -> str | None:
    """The agent (model_id with '@', an LLM design) with the most valid nowcasts on ``targets``; ties by
    id."""
    keys = pl.DataFrame(
        {"indicator_id": [t[0] for t in targets], "reference_period": [t[1] for t in targets]}
    )
    c = (
        nowcasts.filter(pl.col("valid") & pl.col("model_id").str.contains("@"))
        .join(keys, on=["indicator_id", "reference_period"])
        .group_by("model_id")
        .len()
        .sort(["len", "model_id"], descending=[True, False])
    )
    return c["model_id"][0] if c.height else None


def nowcast_paths(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    paths: pl.DataFrame | None = None,
    *,
    model_id: str | None = None,
    targets: Sequence[tuple[str, date]] = PATH_TARGETS,
    days_after: int = PATH_DAYS_AFTER,
) -> Plot:
    """LiveMacroEval Fig. 5 / 7: one agent's valid nowcasts of each target (indicator, reference period) over
    its window and up to ``days_after`` days past the release, with the consensus (dotted), the released value
    (dashed horizontal), the release time (dashed vertical) and the App. E GCV smoothing spline from
    ``post_release_paths`` (``paths``) where stored. ``nowcasts``: ``nowcasts`` rows (any models; ``model_id``
    picks one, default :func:`pick_agent`); ``releases``: ``releases`` rows. ``data``: one row per target with
    the nowcast count, last pre-release nowcast, consensus and actual."""
    model = model_id or pick_agent(nowcasts, targets)
    fig, axes = new_figure(9.0, 2.7 * len(targets) + 0.6, len(targets), 1)
    rows = []
    for ax, (ind_id, period) in zip(axes[:, 0], targets):
        ind = get_indicator(ind_id)
        rel = releases.filter((pl.col("indicator_id") == ind_id) & (pl.col("reference_period") == period))
        nc = (
            nowcasts.filter(
                (pl.col("model_id") == model)
                & (pl.col("indicator_id") == ind_id)
                & (pl.col("reference_period") == period)
                & pl.col("valid")
            )
            if model is not None
            else nowcasts.clear()
        )
        if rel.height == 0 or nc.height == 0:
            note(
                ax,
                f"{ind.short} {period:%Y-%m}: "
                + (
                    "no release stored" if rel.height == 0 else f"no nowcasts of {model or 'an agent'} stored"
                ),
            )
            continue
        r = rel.row(0, named=True)
        until: datetime = r["release_at"] + timedelta(days=days_after)
        nc = nc.filter(pl.col("issued_at") <= until).sort("issued_at")
        pre = nc.filter(pl.col("issued_at") < r["release_at"])
        post = nc.filter(pl.col("issued_at") >= r["release_at"])
        ax.scatter(
            pre["issued_at"].to_list(),
            pre["value"].to_list(),
            s=6,
            alpha=0.45,
            color=model_colors([model])[model],
            label=f"{model} nowcasts before the release ({pre.height})",
        )
        if post.height:
            ax.scatter(
                post["issued_at"].to_list(),
                post["value"].to_list(),
                s=12,
                alpha=0.6,
                color="#333333",
                marker="x",
                linewidths=0.8,
                label=f"after the release ({post.height}, never scored)",
            )
        if paths is not None and paths.height:
            sp = paths.filter(
                (pl.col("model_id") == model)
                & (pl.col("indicator_id") == ind_id)
                & (pl.col("reference_period") == period)
                & pl.col("spline").is_not_null()
            )
            for run in sorted(sp["run_id"].unique().to_list()):
                s = sp.filter(pl.col("run_id") == run).sort("issued_at")
                ax.plot(
                    s["issued_at"].to_list(),
                    s["spline"].to_list(),
                    color="#008080",
                    lw=1.4,
                    label=(
                        "GCV smoothing spline (App. E)"
                        if run == sorted(sp["run_id"].unique().to_list())[0]
                        else None
                    ),
                )
        if r["consensus"] is not None:
            ax.axhline(
                r["consensus"],
                color=model_colors(["consensus/x"])["consensus/x"],
                ls=":",
                lw=1.2,
                label=f"consensus {r['consensus']:g}",
            )
        ax.axhline(r["actual"], color="black", ls="--", lw=1, label=f"released {r['actual']:g}")
        ax.axvline(r["release_at"], color="black", ls="--", lw=1)
        ax.set_title(
            f"{ind.short}, {period:%Y-%m} print, released {r['release_at']:%Y-%m-%d %H:%M} UTC", fontsize=9
        )
        ax.set_ylabel(ind.unit, fontsize=8)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(AutoDateLocator()))
        ax.legend(fontsize=7, loc="best")
        rows.append(
            {
                "indicator_id": ind_id,
                "reference_period": period,
                "model_id": model,
                "n_pre": pre.height,
                "n_post": post.height,
                "last_pre_value": pre["value"][-1] if pre.height else None,
                "consensus": r["consensus"],
                "actual": r["actual"],
                "release_at": r["release_at"],
            }
        )
    fig.suptitle(f"Nowcast paths around the release: {model or 'no agent stored'}", fontsize=11)
    caption = (
        "Light markers: the agent's hourly nowcasts (all stored runs), crosses after the release (kept, never"
        " scored). Dashed: the release time and the released value; dotted: the consensus. Teal: the App. E"
        " cubic smoothing spline (GCV) where stored. Source: nowcasts, releases, post_release_paths."
    )
    return Plot(
        "macro_nowcast_paths",
        "Nowcast path around the release (Fig. 5 / 7)",
        caption,
        fig,
        pl.DataFrame(rows) if rows else pl.DataFrame(),
        empty=not rows,
    )
