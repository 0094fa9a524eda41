"""The event track's page of the leaderboard site (:mod:`leaf_live.core.site`): the stored boards, the event
questions by cutoff, and one tab per cutoff month, from frames of the stored tables.

The boards are the stored ``event_board`` rows (dbt, issue 16): the headline matrix, every board, and the
question board at each §4.1 cutoff; nothing here recomputes a board (without the table the page says it is
not materialized). A month tab lists each model's plain mean over its own tasks of the month (not a board).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from leaf_live.core.site import Column, FigureBlock, Page, Tab, TableBlock, TextBlock
from leaf_live.event import rankings as rankings_mod
from leaf_live.event import scoring
from leaf_live.event.figures import BOARD_METRICS, EventStats, horizon_order

GROUP = ("domain", "task_kind", "horizon", "metric")
# the one line a face shows when the stored board is missing (it never recomputes one)
NOT_MATERIALIZED = "Event board: not materialized (dbt model event_board; `leaf-live rescore --track event`)."
_METRIC_TITLE = {
    "accuracy": "share of tasks whose trend class was right (1 = all)",
    "mape": "mean absolute % error",
    "mae_z": "MAE on z-scored values",
    "mse_z": "MSE on z-scored values",
    "brier": "(p - o)^2",
    "crps": "continuous ranked probability score",
}


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


def cutoff_blocks(board: pl.DataFrame) -> list[TableBlock]:
    """One section per §4.1 cutoff (100% .. 10% of the time to resolution left) of the event-question Brier
    board, read from the stored ``event_board`` rows ``board`` (via
    :func:`leaf_live.event.board.question_cutoff_rows`): the stored rank, Brier skill and its interval,
    P(rank 1), the difficulty-adjusted and the own-question Brier and n; nothing recomputed. No block for a
    cutoff without rows."""
    from leaf_live.event.board import question_cutoff_rows

    q = question_cutoff_rows(board)
    cols = [
        Column("rank_txt", "#", numeric=True, title="rank by Brier skill (– = unranked; disc. = discarded)"),
        Column("model_id", "model"),
        Column("n_tasks", "n", numeric=True, title="the model's own questions at this cutoff"),
        Column(
            "own_value", "Brier", ".4f", True, "mean Brier on the model's own questions (lower is better)"
        ),
        Column("adj_value", "adj. Brier", ".4f", True, "difficulty-adjusted Brier (lower is better)"),
        Column("score", "skill", _signed, True, "1 - Brier/Brier(market price), higher is better"),
        Column("interval", "90% interval", numeric=True, title="bootstrap over questions"),
        Column("p_rank1", "P(rank 1)", _pct, True, "share of bootstrap replicates ranked first"),
    ]
    blocks = []
    for (domain, cut), g in q.group_by(["domain", "horizon"], maintain_order=True):
        rows = [
            {
                **r,
                "rank_txt": "disc." if r.get("discarded") else ("–" if r["rank"] is None else str(r["rank"])),
                "interval": "–"
                if r["ci90_lo"] is None or r["ci90_hi"] is None
                else f"[{_sig(r['ci90_lo'])}, {_sig(r['ci90_hi'])}]",
            }
            for r in g.iter_rows(named=True)
        ]
        blocks.append(
            TableBlock(
                f"event-cutoff-{cut.rstrip('%')}" + ("" if domain == "event" else f"-{domain}"),
                f"Event questions at the {cut} cutoff" + ("" if domain == "event" else f" ({domain})"),
                cols,
                rows,
                f"The stored event_board's question board at the {cut} cutoff ({cut} of the time to"
                " resolution left, LEAF §4.1): each model on its own questions, ranked by Brier skill against"
                " the market price (higher is better, 0 = the market); Brier: lower is better, always 0.5"
                " scores 0.25."
                " Stored in event_board.",
                key=("model_id",),
            )
        )
    return blocks


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
    ``stats``: :func:`leaf_live.event.figures.event_statistics` of ``scores`` (the figures'); ``rankings``:
    the stored ``event_board`` rows, the only source of the boards (headline matrix, every board, the
    question board per cutoff): without them the board and questions tabs say :data:`NOT_MATERIALIZED`."""
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
    stored = rankings is not None and rankings.height > 0
    board = [
        TextBlock([f"{len(models)} models, {scores['task_id'].n_unique():,} scored tasks. {status}"]),
        *([headline_block(rankings), ranking_block(rankings)] if stored else [TextBlock([NOT_MATERIALIZED])]),
    ]
    if "event_accuracy_with_without_events" in figures:
        board.append(figures["event_accuracy_with_without_events"])
    questions: list = cutoff_blocks(rankings) if stored else [TextBlock([NOT_MATERIALIZED])]
    questions += [figures[n] for n in ("event_brier_by_cutoff", "event_reliability") if n in figures]
    tabs = [Tab("board", "Board", board), Tab("questions", "Event questions", questions)]
    months: Sequence[str] = cutoff_months(tasks, scores)
    for month in months[:month_limit] if month_limit else months:
        tabs.append(Tab(f"m-{month}", month, [month_block(scores, tasks, month)]))
    return Page("event", "Event-augmented forecasting (LEAF)", tabs, intro=intro, facts=dict(facts))
