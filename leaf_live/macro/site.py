"""The macro track's page of the leaderboard site (:mod:`leaf_live.core.site`): the live-window and historical
backtest boards and one tab per release month of the live window, from frames of the stored tables.

Every number on the page is a stored value: the LiveMacro and consensus-relative scores with their stored
intervals (dbt mart ``leaderboard``), event coverage (``score_decompositions``), LiveBetting returns
(``livebetting_scores``), releases (``releases``) and per-release relative errors (``relative_errors``,
App. J). Nothing is re-scored here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from leaf_live.core.pit import et_month_expr
from leaf_live.core.site import Column, FigureBlock, Page, Tab, TableBlock, TextBlock
from leaf_live.macro.catalog import THEMES, get_indicator
from leaf_live.macro.figures import BOARD_TITLES, HEADLINE_FITS, board_rows

# the coverage sentence the printed leaderboards use (one wording for the CLI and the site)
from leaf_live.macro.scoring.leaderboard import _coverage_line as coverage_line

SCOPE_ORDER = ("overall", *THEMES)
HORIZONS = ("terminal", "median_1d", "median_3d", "median_7d")


def _pct(v: float) -> str:
    return f"{100 * v:+.1f}%"


def _ts(v: datetime) -> str:
    return v.strftime("%Y-%m-%d %H:%M UTC")


def score_columns() -> list[Column]:
    """The columns of a score table, as the printed boards (README "Reading the leaderboards"): rank and score
    on the board's common event set with its combined interval and size, own events, the own-event score with
    its combined and beta-only intervals, P(score <= 0), LMD, releases."""
    combined = "90% interval over β draws x event resamples: coefficient and event-sampling uncertainty"
    return [
        Column(
            "rank",
            "rank",
            numeric=True,
            title=(
                "rank on the board's common event set (1 = best; ties share a "
                "rank; n/a = not compared: too few events shared with the set)"
            ),
        ),
        Column("model_id", "model"),
        Column("model_kind", "kind"),
        Column("scope", "scope"),
        Column(
            "common_score",
            "common score",
            "+.4f",
            True,
            "score on the common event set: the events every compared model nowcasts itself",
        ),
        Column("common_ci90_lo", "90% β×events low", "+.4f", True, combined + ", common set"),
        Column("common_ci90_hi", "90% β×events high", "+.4f", True, combined + ", common set"),
        Column(
            "n_events_common", "common events", numeric=True, title="size of the board's common event set"
        ),
        Column(
            "n_events_own", "own events", numeric=True, title="events where the model has its own nowcast"
        ),
        Column("n_events", "events", numeric=True, title="events of the scope in the span"),
        Column(
            "score",
            "own score",
            "+.4f",
            True,
            "(SS_cons - SS_model) / (SS_cons + SS_model) on the model's own events, Eq. 8/17; 0 = consensus",
        ),
        Column(
            "combined_ci90_lo", "own 90% β×events low", "+.4f", True, combined + ", own events (n/a below 10)"
        ),
        Column(
            "combined_ci90_hi",
            "own 90% β×events high",
            "+.4f",
            True,
            combined + ", own events (n/a below 10)",
        ),
        Column(
            "boot_ci90_lo",
            "own 90% β-only low",
            "+.4f",
            True,
            "90% parametric bootstrap over β (App. K Eq. 12, "
            "the paper's interval): coefficient uncertainty only, events fixed",
        ),
        Column(
            "boot_ci90_hi",
            "own 90% β-only high",
            "+.4f",
            True,
            "90% parametric bootstrap over β (App. K Eq. 12, "
            "the paper's interval): coefficient uncertainty only, events fixed",
        ),
        Column("p_le_zero", "P(score ≤ 0)", ".3f", True, "share of β draws with own score <= 0"),
        Column("lmd", "LMD", ".3f", True, "directional score on the own events (Eq. 14; 0.5 = coin flip)"),
        Column("n_releases", "releases", numeric=True, title="field releases of the scope in the own events"),
    ]


def _score_block(
    board: pl.DataFrame, *, leaderboard: str, target: str, title: str, caption: str
) -> TableBlock:
    rows = board_rows(board, leaderboard=leaderboard, scopes=SCOPE_ORDER, target=target)
    return TableBlock(
        f"macro-{leaderboard}-{target}",
        title,
        score_columns(),
        rows.to_dicts(),
        caption,
        key=("model_id", "scope"),
    )


def _horizon_block(board: pl.DataFrame, leaderboard: str) -> TableBlock:
    f = board.filter(
        (pl.col("leaderboard") == leaderboard)
        & (pl.col("target") == "return")
        & (pl.col("scope") == "overall")
        & (pl.col("fit_name") == HEADLINE_FITS.get(leaderboard))
    )
    wide = (
        f.pivot(on="horizon", index="model_id", values="score")
        if f.height
        else pl.DataFrame({"model_id": []})
    )
    for h in HORIZONS:
        if h not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(h))
    wide = wide.sort("terminal", "model_id", descending=[True, False], nulls_last=True)
    cols = [Column("model_id", "model")] + [
        Column(h, h.replace("_", " "), "+.4f", True, "LiveMacro Score at this evaluation horizon (App. K.3)")
        for h in HORIZONS
    ]
    return TableBlock(
        f"macro-{leaderboard}-horizons",
        "LiveMacro Score by evaluation horizon",
        cols,
        wide.to_dicts(),
        "Overall LiveMacro Score with the terminal nowcast and with the median of the nowcasts of the "
        "1, 3 and 7 days before the release (App. K.3 / Fig. 13).",
        key=("model_id",),
    )


def betting_block(betting: pl.DataFrame, hours: str = "window") -> TableBlock:
    """LiveBetting returns per market and model (``livebetting_scores``, segment total) on the ``hours`` rows:
    ``window`` (every price hour of the prediction window) or ``common`` (only the hours every compared model
    of the market bets on: like with like); best return first within a market."""
    t = betting.filter((pl.col("segment") == "total") & (pl.col("hours") == hours))
    t = t.sort(["market_id", "final_return", "model_id"], descending=[False, True, False], nulls_last=True)
    cols = [
        Column("market_id", "market"),
        Column("indicator_id", "indicator"),
        Column("model_id", "model"),
        Column("winning_bucket", "winning bucket"),
        Column("window_opens_at", "window opens", _ts),
        Column("release_at", "release", _ts),
        Column("n_hours", "price hours", numeric=True),
        Column("n_bets", "bets", numeric=True),
        Column("n_wins", "wins", numeric=True),
        Column("final_return", "return", _pct, True, "Eq. 13: total profit / all $1 bets"),
        Column("n_no_nowcast", "no answer yet", numeric=True, title="hours excluded: no answer known yet"),
        Column("n_no_bucket", "no bucket", numeric=True, title="hours excluded: nowcast in no bucket"),
        Column(
            "n_missing_price", "missing price", numeric=True, title="hours excluded: bucket price missing"
        ),
    ]
    if hours == "common":
        cols.insert(6, Column("n_models_common", "models compared", numeric=True))
        title, what = (
            "LiveBetting returns on common hours (App. L)",
            "only the hours on which every compared model of the market bets (like with like)",
        )
    else:
        title, what = (
            "LiveBetting returns (App. L)",
            "every price hour from the window's opening to the release",
        )
    return TableBlock(
        f"macro-live-betting-{hours}",
        title,
        cols,
        t.to_dicts(),
        f"$1 on the bucket holding the model's latest known nowcast, {what}; return = total profit / "
        "bets (Eq. 13). Excluded hours are counted by reason.",
        key=("market_id", "model_id"),
    )


def month_tables(
    releases: pl.DataFrame, rel_errors: pl.DataFrame, month: str
) -> tuple[TableBlock, TableBlock]:
    """The tables of one release month (``YYYY-MM``, America/New_York): every release with its actual,
    consensus and surprise and each model's squared relative error over the last 24 hours before it
    (``relative_errors`` at days_to_release 0, App. J), and the per-model summary over the month's releases.
    """
    rel = (
        releases.with_columns(et_month_expr("release_at").alias("_m"))
        .filter(pl.col("_m") == month)
        .sort("release_at", "indicator_id")
    )
    err = rel_errors.filter(pl.col("days_to_release") == 0).join(
        rel.select("indicator_id", "reference_period"), on=["indicator_id", "reference_period"]
    )
    models = sorted(err["model_id"].unique().to_list())
    rows = []
    for r in rel.to_dicts():
        row = {
            "indicator_id": r["indicator_id"],
            "indicator": get_indicator(r["indicator_id"]).short,
            "reference_period": r["reference_period"],
            "release_at": r["release_at"],
            "actual": r["actual"],
            "consensus": r["consensus"],
            "surprise": r["surprise"],
        }
        e = err.filter(
            (pl.col("indicator_id") == r["indicator_id"])
            & (pl.col("reference_period") == r["reference_period"])
        )
        by = dict(zip(e["model_id"].to_list(), e["mean_sq_rel_error"].to_list()))
        row.update({m: by.get(m) for m in models})
        rows.append(row)
    cols = [
        Column("indicator", "indicator"),
        Column("reference_period", "period"),
        Column("release_at", "release", _ts),
        Column("actual", "actual", "g", True, "first-release actual, reporting unit"),
        Column("consensus", "consensus", "g", True, "consensus at release"),
        Column("surprise", "surprise", "+g", True, "actual - consensus"),
    ]
    cols += [
        Column(
            m,
            m,
            ".4f",
            True,
            "mean ((nowcast - actual) / s_i)^2 over the last 24 h before the release (App. J)",
        )
        for m in models
    ]
    per_release = TableBlock(
        f"macro-month-{month}-releases",
        f"Releases of {month}",
        cols,
        rows,
        "Squared relative error of each model's nowcasts in the 24 hours before the release, "
        "((nowcast - actual) / s_i)^2 with s_i the indicator's mean |actual| (App. J); n/a = no "
        "nowcast of that model in those hours.",
        key=("indicator_id", "reference_period"),
    )
    summ = (
        err.group_by("model_id")
        .agg(
            pl.len().alias("n_releases"),
            pl.col("mean_sq_rel_error").mean().alias("mean"),
            pl.col("n_nowcasts").sum().alias("n_nowcasts"),
        )
        .sort("mean", "model_id", nulls_last=True)
    )
    summary = TableBlock(
        f"macro-month-{month}-models",
        f"Models in {month}",
        [
            Column("model_id", "model"),
            Column("n_releases", "releases covered", numeric=True),
            Column("n_nowcasts", "nowcasts", numeric=True),
            Column("mean", "mean sq. rel. error", ".4f", True, "mean over the releases the model covers"),
        ],
        summ.to_dicts(),
        f"Mean of the per-release errors above over the {rel.height} releases of the "
        "month each model covers (coverage differs: compare models on the releases both cover).",
        key=("model_id",),
    )
    return per_release, summary


def live_months(releases: pl.DataFrame, board: pl.DataFrame) -> list[str]:
    """Release months (``YYYY-MM``, America/New_York) of the live board's span, newest first."""
    live = board.filter(pl.col("leaderboard") == "live")
    if live.height == 0 or live["window_start"].min() is None:
        return []
    lo, hi = live["window_start"].min(), live["window_end"].max()
    m = releases.filter((pl.col("release_at") >= lo) & (pl.col("release_at") <= hi)).select(
        et_month_expr("release_at")
    )
    return sorted(m.to_series().unique().to_list(), reverse=True)


def macro_page(
    board: pl.DataFrame,
    decompositions: pl.DataFrame,
    betting: pl.DataFrame,
    releases: pl.DataFrame,
    rel_errors: pl.DataFrame,
    figures: Mapping[str, FigureBlock],
    *,
    facts: Mapping[str, str] = (),
) -> Page:
    """The macro page: tab ``live`` (live-window board: LiveMacro Score, consensus-relative score, horizons,
    LiveBetting, Fig. 2-5/7), tab ``backtest`` and a tab ``m-YYYY-MM`` per live release month.
    ``board``: ``leaderboard`` mart rows; ``decompositions``: ``score_decompositions`` (its ``event_coverage``
    rows are used); ``betting``: ``livebetting_scores``; ``releases``; ``rel_errors``: ``relative_errors``;
    ``figures``: figure name -> block (names of :mod:`leaf_live.macro.figures`)."""
    tabs = []
    for mode in ("live", "backtest"):
        blocks: list = []
        rows = board.filter(pl.col("leaderboard") == mode)
        if rows.height == 0:
            tabs.append(Tab(mode, BOARD_TITLES[mode], [TextBlock(["No scores stored for this board."])]))
            continue
        cov = coverage_line(decompositions, mode) if decompositions.height else "event coverage: not recorded"
        head = rows.filter(pl.col("fit_name") == HEADLINE_FITS[mode])
        span = (
            f"{head['window_start'].min():%Y-%m-%d} .. {head['window_end'].max():%Y-%m-%d}"
            if head.height and head["window_start"].min() is not None
            else "no events"
        )
        blocks.append(
            TextBlock(
                [
                    f"Scored events {span}; β fit '{HEADLINE_FITS[mode]}'. {cov}.",
                    (
                        "Each model is scored on its own events (those where it has its own pre-release"
                        " nowcast; a release in such an event it does not nowcast takes the consensus, Ŝ = 0)"
                        " and ranked on the common event set. The consensus scores 0 by construction."
                    ),
                ]
            )
        )
        order = (
            ("return", "LiveMacro Score (target r_g, Eq. 8)"),
            ("shock", "Consensus-relative score (target Q_g, S.1)"),
        )
        for target, title in order:
            blocks.append(
                _score_block(
                    board,
                    leaderboard=mode,
                    target=target,
                    title=title + ", terminal nowcast",
                    caption=(
                        "Per scope (overall, then each theme): models in rank order on the "
                        "board's common event set (the events every compared model nowcasts itself), "
                        "then the models not compared there. Every interval says what uncertainty it "
                        "carries (hover the column); own events / events = coverage."
                    ),
                )
            )
        blocks.append(_horizon_block(board, mode))
        if mode == "live":
            blocks += [betting_block(betting, "window"), betting_block(betting, "common")]
            for name in (
                "macro_score_by_model",
                "macro_score_by_theme",
                "macro_livebetting_cumulative",
                "macro_nowcast_paths",
            ):
                if name in figures:
                    blocks.append(figures[name])
        elif "macro_score_by_model" in figures:
            blocks.append(figures["macro_score_by_model"])
        tabs.append(Tab(mode, BOARD_TITLES[mode], blocks))
    for month in live_months(releases, board):
        per_release, summary = month_tables(releases, rel_errors, month)
        tabs.append(Tab(f"m-{month}", month, [summary, per_release]))
    return Page(
        "macro",
        "Macro nowcasting (LiveMacroEval)",
        tabs,
        intro=[
            "LLM agents and comparators nowcast 16 US headline indicators until the official release; the"
            " LiveMacro Score weights their implied surprises by each indicator's measured effect on E-mini"
            " S&P 500 announcement-window returns, relative to the consensus (LiveMacroEval §3.6, App. K)."
        ],
        facts=dict(facts),
    )
