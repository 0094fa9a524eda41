"""The event track's page of the leaderboard site (:mod:`leaf_live.core.site`): the board over every stored
task, the event questions by cutoff, and one tab per cutoff month, from frames of the stored tables.

The statistics are the event scoring module's over the stored per-task scores (``leaf_scores``): the board
compares the models of each (domain, task kind, horizon, metric) on the tasks they all forecast, with 95%
bootstrap intervals over tasks (questions for events) and the sample count (:func:`scoring.leaderboard`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from leaf_live.core.site import Column, FigureBlock, Page, Tab, TableBlock, TextBlock
from leaf_live.event import rankings as rankings_mod
from leaf_live.event import scoring
from leaf_live.event.figures import BOARD_METRICS, CUTOFFS, EventStats, horizon_order

# higher is better only for accuracy and interval coverage
HIGHER_IS_BETTER = ("accuracy", "cover80", "cover95")
GROUP = ("domain", "task_kind", "horizon", "metric")
_METRIC_TITLE = {
    "accuracy": "share of tasks whose trend class was right (1 = all)",
    "mape": "mean absolute % error",
    "mae_z": "MAE on z-scored values",
    "mse_z": "MSE on z-scored values",
    "brier": "(p - o)^2",
    "crps": "continuous ranked probability score",
}


def _ordered(board: pl.DataFrame) -> pl.DataFrame:
    """Board rows grouped as :data:`GROUP`, best model first in each group (ties by model_id)."""
    if board.height == 0:
        return board
    sign = (
        pl.when(pl.col("metric").is_in(list(HIGHER_IS_BETTER)))
        .then(-pl.col("mean"))
        .otherwise(pl.col("mean"))
    )
    hs = sorted(board["horizon"].unique().to_list(), key=horizon_order)
    h = pl.col("horizon").replace_strict({x: k for k, x in enumerate(hs)}, return_dtype=pl.Int32)
    return (
        board.with_columns(sign.alias("_s"), h.alias("_h"))
        .sort(["domain", "task_kind", "_h", "metric", "_s", "model_id"])
        .drop("_s", "_h")
    )


def board_columns(interval: bool = True) -> list[Column]:
    cols = [
        Column("domain", "domain"),
        Column("task_kind", "task"),
        Column("horizon", "horizon"),
        Column("metric", "metric"),
        Column("model_id", "model"),
        Column("mean", "mean", ".4f", True),
    ]
    if interval:
        cols += [
            Column("ci_lo", "95% low", ".4f", True, "95% bootstrap over tasks (questions for events)"),
            Column("ci_hi", "95% high", ".4f", True, "95% bootstrap over tasks (questions for events)"),
        ]
    return cols + [Column("n", "n", numeric=True, title="scored tasks (forecasts) in the group")]


def board_block(stats: EventStats) -> TableBlock:
    """The event board (``stats.board``), best model first in each group."""
    b = _ordered(stats.board)
    return TableBlock(
        "event-board",
        "Event-track board",
        board_columns(),
        b.to_dicts(),
        "Mean per-task metric of each model (LEAF §4.1: accuracy of the trend class, MAPE %, z-scored "
        "MAE/MSE, Brier, CRPS), models of a group compared on the tasks they all forecast; 95% "
        "bootstrap interval over tasks (event questions: over questions, all cutoffs together); n = "
        "scored tasks.",
        key=("domain", "task_kind", "horizon", "metric", "model_id"),
    )


def _sig(x) -> str:
    from leaf_live.core.boards import sig

    return sig(x)


def _signed(x) -> str:
    from leaf_live.core.boards import sig

    return sig(x, signed=True)


def _pct(x) -> str:
    from leaf_live.core.boards import pct

    return pct(x)


def headline_block(rankings: pl.DataFrame) -> TableBlock:
    """The headline matrix of the stored ``event_board`` (:func:`rankings.headline_rows`): per model and
    domain the skill score on the domain's pooled headline board and its rank."""
    rows, domains, notes = rankings_mod.headline_rows(rankings)

    def cell(v) -> str:
        if not v:
            return ""
        score, rank, n, gone = v
        if gone:
            return f"disc. n={n}"
        return f"{_signed(score)} #{rank}" if score is not None else f"– n={n}"

    cols = [Column("model_id", "model")] + [Column(d, d, None, True, notes[i]) for i, d in enumerate(domains)]
    return TableBlock(
        "event-headline",
        "Event-track headline: skill score per domain",
        cols,
        [{"model_id": r["model_id"], **{d: cell(r.get(d)) for d in domains}} for r in rows],
        "Difficulty-adjusted skill score 1 - L/L_ref (higher is better; 0 = the reference, 1 = no loss; no"
        " units) on each domain's headline board (every horizon of its headline metric pooled), #rank among"
        " the ranked models; – n = listed with its task count, fewer than the entry minimum; disc. n ="
        " discarded (over 1/3 of its outputs invalid, LEAF §4.1), never ranked. Each model is"
        " scored on its own tasks; " + "; ".join(notes) + ". Stored in event_board.",
        key=("model_id",),
    )


def ranking_block(rankings: pl.DataFrame) -> TableBlock:
    """Every board of the stored ``event_board``, board by board, ranked models first (rank order)."""
    b = rankings.with_columns(
        pl.col("horizon")
        .replace_strict(
            {h: k for k, h in enumerate(sorted(rankings["horizon"].unique().to_list(), key=_hkey))},
            return_dtype=pl.Int32,
        )
        .alias("_h")
    ).sort(["domain", "task_kind", "_h", "metric", "rank", "model_id"], nulls_last=True)
    rows = []
    for r in b.drop("_h").iter_rows(named=True):
        lo, hi = r["ci90_lo"], r["ci90_hi"]
        rows.append(
            {
                **r,
                "interval": "–" if lo is None or hi is None else f"[{_sig(lo)}, {_sig(hi)}]",
                "rank_txt": "disc." if r.get("discarded") else ("–" if r["rank"] is None else str(r["rank"])),
            }
        )
    cols = [
        Column("domain", "domain"),
        Column("task_kind", "task"),
        Column("horizon", "horizon", title="'all' = the domain's pooled headline board"),
        Column("metric", "metric"),
        Column(
            "rank_txt",
            "#",
            numeric=True,
            title="rank by skill among the ranked models (– = unranked; disc. = discarded, over 1/3 invalid)",
        ),
        Column("model_id", "model"),
        Column("n_tasks", "n", numeric=True, title="the model's own tasks on the board"),
        Column("score", "skill", _signed, True, "1 - L/L_ref, higher is better, 0 = the reference"),
        Column("interval", "90% interval", numeric=True, title="cluster bootstrap: cutoff days / questions"),
        Column("p_rank1", "P(rank 1)", _pct, True, "share of bootstrap replicates ranked first"),
        Column("own_value", "own value", _sig, True, "plain metric on the model's own tasks (not ranked)"),
    ]
    return TableBlock(
        "event-board",
        "Event-track boards",
        cols,
        rows,
        "Per domain, task, horizon and metric: each model scored on its own tasks (two-way fixed effects of"
        " the per-task loss, the task effect the reference's loss: baseline/last-value for series and trend"
        " tasks, the market price for event questions), skill 1 - L/L_ref (higher is better), 90% interval"
        " from a bootstrap over cutoff days (questions for event questions), P(rank 1), n. Models with fewer"
        " than 20 tasks are listed, unranked. own value: the plain metric (accuracy: higher is better; errors"
        " and Brier: lower) on the model's own tasks, a different set per model. Stored in event_board;"
        " `leaf-live scores --track event` prints the same rows with the common-set view.",
        key=("domain", "task_kind", "horizon", "metric", "model_id"),
    )


def _hkey(h: str):
    return (1, (0, 0.0)) if h == rankings_mod.POOLED else (0, horizon_order(h))


def cutoff_block(stats: EventStats) -> TableBlock:
    """Mean Brier per model at each cutoff and averaged over the cutoffs (``stats.cutoffs``), one row per
    model, with the question count."""
    t = stats.cutoffs
    rows = []
    for model in sorted(t["model_id"].unique().to_list()) if t.height else []:
        r = t.filter(pl.col("model_id") == model)
        by = dict(zip(r["cutoff"].to_list(), r["brier"].to_list()))
        n = dict(zip(r["cutoff"].to_list(), r["n"].to_list()))
        rows.append(
            {"model_id": model, **{c: by.get(c) for c in (*CUTOFFS, "avg")}, "n_questions": n.get("avg")}
        )
    rows.sort(key=lambda r: (r["avg"] is None, r["avg"], r["model_id"]))
    cols = [Column("model_id", "model")] + [
        Column(c, c, ".4f", True, "mean Brier at this share of the time to resolution left") for c in CUTOFFS
    ]
    cols += [
        Column(
            "avg",
            "average",
            ".4f",
            True,
            "mean over questions of each question's mean Brier over its cutoffs (§4.1)",
        ),
        Column("n_questions", "questions", numeric=True),
    ]
    return TableBlock(
        "event-brier-cutoffs",
        "Event questions: Brier score by cutoff",
        cols,
        rows,
        "Mean Brier score (lower is better; always 0.5 scores 0.25) at each cutoff, 100% .. 10% of the "
        "time to resolution left (LEAF §4.1, Table 8 form).",
        key=("model_id",),
    )


def month_block(scores: pl.DataFrame, tasks: pl.DataFrame, month: str) -> TableBlock:
    """The tasks whose cutoff falls in ``month`` (``YYYY-MM``, UTC): each model's mean and n per group on its
    own tasks of the month (every model with a score that month is listed; a sparse model shrinks no one's
    row), models in name order: a month is a small sample and these are different task sets, so no rank."""
    ids = tasks.filter(pl.col("cutoff").dt.strftime("%Y-%m") == month).select("task_id")
    s = scoring.board_scores(
        scores.filter(pl.col("metric").is_in(list(BOARD_METRICS))).join(ids, on="task_id")
    )
    if s.height:
        hs = sorted(s["horizon"].unique().to_list(), key=horizon_order)
        h = pl.col("horizon").replace_strict({x: k for k, x in enumerate(hs)}, return_dtype=pl.Int32)
        b = (
            s.group_by([*GROUP, "model_id"])
            .agg(pl.col("value").mean().alias("mean"), pl.len().alias("n"))
            .with_columns(h.alias("_h"))
            .sort(["domain", "task_kind", "_h", "metric", "model_id"])
            .drop("_h")
        )
    else:
        b = pl.DataFrame()
    return TableBlock(
        f"event-month-{month}",
        f"Tasks with cutoff in {month}",
        board_columns(interval=False),
        b.to_dicts(),
        "Mean per-task metric of each model over its own tasks of the month (accuracy: higher is better;"
        " errors and Brier: lower), n = its tasks; models in name order, not ranked (a month is a small"
        " sample and each model's tasks differ; the ranked boards are on the Board tab).",
        key=("domain", "task_kind", "horizon", "metric", "model_id"),
    )


def cutoff_months(tasks: pl.DataFrame, scores: pl.DataFrame) -> list[str]:
    """Months (``YYYY-MM``, UTC) of the cutoffs of the scored tasks, newest first."""
    if tasks.height == 0 or scores.height == 0:
        return []
    t = tasks.join(scores.select("task_id").unique(), on="task_id")
    return sorted(t["cutoff"].dt.strftime("%Y-%m").unique().to_list(), reverse=True)


def event_page(
    scores: pl.DataFrame,
    tasks: pl.DataFrame,
    stats: EventStats,
    figures: Mapping[str, FigureBlock],
    *,
    facts: Mapping[str, str] = (),
    month_limit: int | None = None,
    rankings: pl.DataFrame | None = None,
) -> Page:
    """The event page: tab ``board`` (the board and the accuracy figure), tab ``questions`` (Brier by cutoff,
    its figure and the reliability diagram) and a tab ``m-YYYY-MM`` per cutoff month (newest first, at most
    ``month_limit``). ``scores``: ``leaf_scores`` rows; ``tasks``: ``forecast_tasks`` rows (task_id, cutoff);
    ``stats``: :func:`leaf_live.event.figures.event_statistics` of ``scores``; ``rankings``: the stored
    ``event_board`` rows: when given, the board tab shows the headline matrix and those boards instead of
    the former common-task board of ``stats``."""
    intro = [
        "Forecasts of stock and commodity trends and prices, hourly temperature, electricity load and "
        "prediction-market questions, by LLMs with and without fact-checked events and by time-series "
        "baselines (LEAF §3-4)."
    ]
    if scores.height == 0:
        return Page(
            "event",
            "Event-augmented forecasting (LEAF)",
            [
                Tab(
                    "board",
                    "Board",
                    [TextBlock(["No event-track scores are stored yet (leaf_scores is empty)."])],
                )
            ],
            intro=intro,
            facts=dict(facts),
        )
    models = sorted(scores["model_id"].unique().to_list())
    llm = [m for m in models if "@" in m]
    status = (
        f"{len(llm)} LLM forecaster rows stored."
        if llm
        else "No LLM forecasts are stored yet: the board holds the baselines (time series only)."
    )
    board = [
        TextBlock([f"{len(models)} models, {scores['task_id'].n_unique():,} scored tasks. {status}"]),
        *(
            [headline_block(rankings), ranking_block(rankings)]
            if rankings is not None and rankings.height
            else [board_block(stats)]
        ),
    ]
    if "event_accuracy_with_without_events" in figures:
        board.append(figures["event_accuracy_with_without_events"])
    questions: list = [cutoff_block(stats)]
    questions += [figures[n] for n in ("event_brier_by_cutoff", "event_reliability") if n in figures]
    tabs = [Tab("board", "Board", board), Tab("questions", "Event questions", questions)]
    months: Sequence[str] = cutoff_months(tasks, scores)
    for month in months[:month_limit] if month_limit else months:
        tabs.append(Tab(f"m-{month}", month, [month_block(scores, tasks, month)]))
    return Page("event", "Event-augmented forecasting (LEAF)", tabs, intro=intro, facts=dict(facts))
