"""Coverage-robust event-track rankings (issue 16): each model scored on its own tasks, ranked per board.

A *board* is one (domain, task kind, horizon, metric) of the per-task scores (``leaf_scores``, after
:func:`leaf_live.event.scoring.board_scores`: analysis-only variants out, the SEER case day's large caps a
domain apart), plus one pooled *headline* board per domain (``horizon = 'all'``: every horizon of the
domain's headline task kind and metric, :data:`HEADLINE_METRICS`). On every board
:func:`leaf_live.core.ranking.rank_models` (two-way fixed effects of the per-task loss on task and model,
ForecastBench's difficulty adjustment, Karger et al. ICLR 2025; the estimator and its bootstrap are that
module's) ranks the models:

* **Loss** (:data:`LOSSES`): the per-task metric itself for errors (MAPE %, z-scored MAE / MSE, CRPS, quantile
  loss, Brier); ``1 - accuracy`` (the 0/1 miss of the trend class) for trend accuracy; ``rmse^2`` (the task's
  mean squared error) for RMSE. Not ranked: ``dlv`` (a distance to the last value, not an error) and
  ``cover80`` / ``cover95`` (coverage is right at its nominal level, not at an extreme).
* **Reference** (:data:`REFERENCES`): ``baseline/last-value`` for series and trend tasks, the market price
  (``market/polymarket``) for event questions; for CRPS and quantile loss, which the last value does not
  give, the first statsforecast model with intervals on the board (:func:`reference_for`, auto-ETS by
  default). The event effect of a task is the reference's loss on it
  (``event_effects="reference"``: the reference answers every task of a board; rows of tasks the reference
  did not score are left out and counted), so a model's effect is its mean excess loss over the reference
  on its own tasks and adding or removing another model changes no one's score, interval or n.
* **Scale** ``"skill"`` for every board: ``1 - L_m / L_ref`` (fev's skill score against the last value, Shchur
  et al. 2025; for the event questions the Brier skill score against the market price), ``L_m`` the model's
  difficulty-adjusted mean loss on every task of the board and ``L_ref`` the reference's mean loss there. 0
  = the reference, 1 = no loss, no lower bound; higher is better. ``adj_value`` is the same level in the
  metric's own units (accuracy: ``1 - L_m``; RMSE: ``sqrt(L_m)``).
* **Clusters** of the bootstrap (1,000 replicates, fixed seed, the fixed effects re-estimated in each): the
  cutoff dates (UTC day) of the board's tasks within its domain for series and trend tasks (tasks sharing a
  cutoff share its news and market state: they are not independent); the question (``target_id``) for
  event questions (all cutoffs of a question move together).
* **Entry**: a model is ranked only with at least :data:`leaf_live.core.ranking.MIN_EVENTS` (20) tasks on
  the board; every model is listed with its n either way.

Per model and board the rows carry the score with its 90% percentile interval, P(rank 1), the paired 90%
interval of score minus the reference's, the plain metric on the model's own tasks (``own_value``: a
different set for each model, never what the rank orders), the largest single task's share of its total
loss (flagged above 50%), and the **common-set view**: over the ranked models only (an unranked sparse model
cannot shrink it), the tasks every ranked model scored; shown as a ranking (``common_rank``) only when that
set holds at least half of every ranked model's tasks, else ``common_view_note`` says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import polars as pl

from leaf_live.core import ranking as RK
from leaf_live.core import storage
from leaf_live.event.scoring import board_scores
from leaf_live.event.tasks import PRICE_MAX_AGE_DAYS

TABLE = "event_rankings"
LAST_VALUE = "baseline/last-value"
MARKET = "market/polymarket"
REFERENCES = {"series": LAST_VALUE, "trend3": LAST_VALUE, "trend5": LAST_VALUE, "event": MARKET}
# metric -> (the per-task loss the ranking uses, its label)
LOSSES = {
    "accuracy": "1 - accuracy",
    "mape": "mape",
    "rmse": "rmse^2",
    "mae_z": "mae_z",
    "mse_z": "mse_z",
    "crps": "crps",
    "qloss": "qloss",
    "brier": "brier",
}
INTERVAL_METRICS = ("crps", "qloss")
# the references of the interval metrics when the last value has no intervals: statsforecast's, in order
INTERVAL_REFERENCES = ("baseline/auto-ets", "baseline/auto-theta", "baseline/auto-arima")
HIGHER_IS_BETTER = ("accuracy", "cover80", "cover95")  # of the plain metric (the skill score: always higher)
# the headline board of a domain: every horizon of the first (task kind, metric) the domain has
HEADLINE_METRICS = (("series", "mape"), ("series", "mae_z"), ("event", "brier"), ("trend5", "accuracy"))
POOLED = "all"  # horizon label of the pooled headline board
SCALE = "skill"
RANK_BOOT = 1000
SHARE_FLAG = 0.5  # largest single-task share of the loss above which a row is flagged
COMMON_MIN_SHARE = 0.5  # the common set must hold at least this share of every ranked model's tasks


class EventRankingError(ValueError):
    """Inputs of the event ranking are unusable; the message names the field and value."""


def reference_for(task_kind: str, metric: str, board: pl.DataFrame) -> str | None:
    """The reference of a board (module notes): :data:`REFERENCES` by task kind; for the interval metrics
    (CRPS, quantile loss), which the last value does not give, the first of :data:`INTERVAL_REFERENCES` with
    rows on the board (the last value when it has them). None for a task kind without a reference."""
    ref = REFERENCES.get(task_kind)
    if ref is None or metric not in INTERVAL_METRICS:
        return ref
    have = set(board["model_id"].unique().to_list())
    return next((m for m in (ref, *INTERVAL_REFERENCES) if m in have), ref)


def task_loss(metric: str, value: np.ndarray) -> np.ndarray:
    """The per-task loss of ``metric`` (:data:`LOSSES`): ``1 - value`` for accuracy, ``value**2`` for rmse,
    the value itself otherwise. Raises :class:`EventRankingError` for a metric that is not ranked."""
    v = np.asarray(value, dtype=float)
    if metric == "accuracy":
        return 1.0 - v
    if metric == "rmse":
        return v**2
    if metric in LOSSES:
        return v
    raise EventRankingError(f"metric={metric!r} is not ranked (ranked: {', '.join(LOSSES)})")


def loss_to_metric(metric: str, loss: float | None) -> float | None:
    """A mean loss back in the metric's units (inverse of :func:`task_loss` on a mean: accuracy ``1 - L``,
    rmse ``sqrt(L)``); None stays None."""
    if loss is None or not np.isfinite(loss):
        return None
    if metric == "accuracy":
        return 1.0 - loss
    if metric == "rmse":
        return float(np.sqrt(max(loss, 0.0)))
    return float(loss)


def plain_value(metric: str, values: np.ndarray) -> float | None:
    """The board's plain aggregate of per-task values: the mean, ``sqrt(mean(rmse^2))`` for rmse."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return None
    return float(np.sqrt(np.mean(v**2))) if metric == "rmse" else float(v.mean())


def headline_of(groups: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The headline (task kind, metric) of a domain among its ``groups`` (:data:`HEADLINE_METRICS` order)."""
    have = set(groups)
    return next((km for km in HEADLINE_METRICS if km in have), None)


def with_clusters(scores: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``scores`` (board rows) with ``cluster``: the task's cutoff day (``YYYY-MM-DD``, UTC) for series and
    trend tasks, ``q:<target_id>`` for event questions. ``tasks``: ``forecast_tasks`` rows (task_id, cutoff).
    Raises :class:`EventRankingError` naming a scored task without a stored cutoff."""
    t = tasks.select(
        "task_id", pl.col("cutoff").dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d").alias("_d")
    )
    j = scores.join(t.unique("task_id"), on="task_id", how="left")
    miss = j.filter(pl.col("_d").is_null() & (pl.col("task_kind") != "event"))
    if miss.height:
        raise EventRankingError(f"task_id={miss['task_id'][0]!r}: scored but has no cutoff in forecast_tasks")
    return j.with_columns(
        pl.when(pl.col("task_kind") == "event")
        .then(pl.lit("q:") + pl.col("target_id"))
        .otherwise(pl.col("_d"))
        .alias("cluster")
    ).drop("_d")


def _common_view(g: pl.DataFrame, metric: str, ranked: Sequence[str], n_own: dict[str, int]) -> dict:
    """The common-set view of one board over the ``ranked`` models (module notes): ``{"ok", "note", "n",
    "value": {model: plain value}, "rank": {model: rank}}``."""
    out: dict = {"ok": False, "note": None, "n": None, "value": {}, "rank": {}}
    if len(ranked) < 2:
        out["note"] = f"{len(ranked)} ranked model(s): nothing to compare on a common set"
        return out
    s = g.filter(pl.col("model_id").is_in(list(ranked)))
    per = s.group_by("task_id").agg(pl.col("model_id").n_unique().alias("k"))
    common = per.filter(pl.col("k") == len(ranked))["task_id"]
    n_c = common.len()
    out["n"] = n_c
    short = [m for m in ranked if n_c < COMMON_MIN_SHARE * n_own[m]]
    if short:
        worst = max(short, key=lambda m: (n_own[m], m))
        out["note"] = (
            f"the {n_c} tasks every ranked model scored are under {COMMON_MIN_SHARE:.0%} of"
            f" {len(short)} ranked model(s)' own tasks (e.g. {worst}: {n_own[worst]})"
        )
        return out
    c = s.filter(pl.col("task_id").is_in(common.to_list()))
    vals = {m: plain_value(metric, v["value"].to_numpy()) for (m,), v in c.group_by("model_id")}
    sign = -1.0 if metric in HIGHER_IS_BETTER else 1.0
    order = sorted(vals, key=lambda m: (sign * vals[m], m))
    rank: dict[str, int] = {}
    for m in order:
        rank[m] = 1 + sum(sign * vals[o] < sign * vals[m] for o in vals)
    out.update(ok=True, value=vals, rank=rank)
    return out


def rank_board(
    g: pl.DataFrame,
    metric: str,
    reference: str,
    *,
    cluster: str = "cluster",
    min_tasks: int = RK.MIN_EVENTS,
    n_boot: int = RANK_BOOT,
    seed: int = RK.DEFAULT_SEED,
) -> tuple[list[dict], dict]:
    """Rank one board (module notes). ``g``: board rows (model_id, task_id, value and the ``cluster``
    column; ``cluster="task_id"`` resamples tasks as independent). Returns ``(rows, info)``: one dict per
    model (model_id, n_tasks, ranked, rank, score, ci90_lo/hi, p_rank1, diff_ci90_lo/hi, p_better, effect,
    level, adj_value, own_value, max_task_share, max_task_id, max_task_flag, common_value, common_rank) and
    the board's info (reference_model_id, n_tasks_board, n_clusters, n_dropped, ranked_note, common_n,
    common_view_ok, common_view_note). A board whose reference has fewer than ``min_tasks`` tasks lists every
    model with its n, unranked, and says why in ``ranked_note``."""
    n_all = dict(g.group_by("model_id").len().iter_rows())
    ref_tasks = g.filter(pl.col("model_id") == reference)["task_id"]
    gr = g.filter(pl.col("task_id").is_in(ref_tasks.to_list()))
    n_own = {m: 0 for m in n_all} | dict(gr.group_by("model_id").len().iter_rows())
    info = {
        "reference_model_id": reference,
        "n_tasks_board": ref_tasks.n_unique(),
        "n_clusters": gr[cluster].n_unique() if gr.height else 0,
        "n_dropped": g.height - gr.height,
        "ranked_note": None,
        "common_n": None,
        "common_view_ok": False,
        "common_view_note": None,
    }
    base = {
        m: {
            "model_id": m,
            "n_tasks": n_own[m],
            "ranked": False,
            "own_value": plain_value(metric, gr.filter(pl.col("model_id") == m)["value"].to_numpy()),
        }
        for m in n_all
    }
    if n_own.get(reference, 0) < min_tasks:
        info["ranked_note"] = (
            f"not ranked: the reference {reference} has {n_own.get(reference, 0)} task(s) here, fewer than"
            f" {min_tasks}"
        )
        info["common_view_note"] = "no ranking"
        info["n_dropped"] = 0
        # no ranking: every model listed with all its tasks on the board and its plain metric there
        listed = [
            {
                "model_id": m,
                "n_tasks": n_all[m],
                "ranked": False,
                "own_value": plain_value(metric, g.filter(pl.col("model_id") == m)["value"].to_numpy()),
            }
            for m in n_all
        ]
        return sorted(listed, key=lambda r: r["model_id"]), info
    loss = task_loss(metric, gr["value"].to_numpy())
    panel = RK.make_panel(
        gr["model_id"].to_list(), gr["task_id"].to_list(), loss, cluster=gr[cluster].to_list()
    )
    r = RK.rank_models(
        panel,
        reference=reference,
        scale=SCALE,
        min_events=min_tasks,
        n_boot=n_boot,
        seed=seed,
        event_effects="reference",
    )
    share = RK.largest_event_share(panel)
    ranked = [m for m, ok in zip(r.models, r.ranked) if ok]
    cv = _common_view(gr, metric, ranked, n_own)
    info.update(common_n=cv["n"], common_view_ok=cv["ok"], common_view_note=cv["note"])
    rows = []
    for row in r.rows():
        m = row["model"]
        s, at = share[m]
        rows.append(
            {
                **base[m],
                **RK.stored_fields(row),
                "adj_value": loss_to_metric(metric, row["level"]),
                "max_task_share": None if not np.isfinite(s) else s,
                "max_task_id": str(at),
                "max_task_flag": bool(np.isfinite(s) and s > SHARE_FLAG),
                "common_value": cv["value"].get(m),
                "common_rank": cv["rank"].get(m),
            }
        )
    return rows, info


def _discard_rows(g: pl.DataFrame, metric: str, reference: str, models: Sequence[str]) -> list[dict]:
    """The listed (never ranked) rows of the discarded ``models`` on board ``g``: n and the plain metric on
    their tasks the reference scored."""
    ref_tasks = g.filter(pl.col("model_id") == reference)["task_id"].to_list()
    out = []
    for m in sorted(models):
        v = g.filter(pl.col("model_id") == m, pl.col("task_id").is_in(ref_tasks))["value"].to_numpy()
        out.append({"model_id": m, "n_tasks": len(v), "ranked": False, "own_value": plain_value(metric, v)})
    return out


def rankings_frame(
    scores: pl.DataFrame,
    tasks: pl.DataFrame,
    *,
    available_at: datetime,
    discards: pl.DataFrame | None = None,
    min_tasks: int = RK.MIN_EVENTS,
    n_boot: int = RANK_BOOT,
    seed: int = RK.DEFAULT_SEED,
) -> pl.DataFrame:
    """The ``event_rankings`` rows (module notes) of ``leaf_scores`` rows ``scores`` and the
    ``forecast_tasks`` rows ``tasks`` (task_id, cutoff: the clusters; ``last_value_age_days`` when present:
    ``reference_stale_n`` of the question boards): every (domain, task kind, horizon, ranked metric) board and
    each domain's pooled headline board (``horizon = 'all'``, ``headline`` true). ``partition_key`` = the
    domain.

    ``discards``: :func:`leaf_live.event.agents.forecasters.discard_report` rows (model_id, invalid_share,
    discarded) of the LLM forecasters' trials. LEAF §4.1 discards a model with over a third of its outputs
    invalid: its rows are taken off every board before ranking and it is listed on each board it scored with
    ``discarded`` true, its n and invalid share, and no rank or score. Raises :class:`EventRankingError` as
    :func:`with_clusters`."""
    s = board_scores(scores)
    if s.is_empty():
        return storage.empty_frame(TABLE)
    s = s.filter(pl.col("metric").is_in(list(LOSSES)))
    if s.is_empty():
        return storage.empty_frame(TABLE)
    s = with_clusters(s, tasks)
    rep = discards if discards is not None else pl.DataFrame()
    invalid = dict(zip(rep["model_id"], rep["invalid_share"])) if rep.height else {}
    dropped = set(rep.filter(pl.col("discarded"))["model_id"].to_list()) if rep.height else set()
    stale = (
        set(tasks.filter(pl.col("last_value_age_days") > PRICE_MAX_AGE_DAYS)["task_id"].to_list())
        if "last_value_age_days" in tasks.columns
        else set()
    )
    boards: list[tuple[tuple[str, str, str, str], pl.DataFrame, bool]] = []
    for (d, k, h, m), g in s.group_by(["domain", "task_kind", "horizon", "metric"]):
        boards.append(((d, k, h, m), g, False))
    for (d,), g in s.group_by("domain"):
        km = headline_of([tuple(x) for x in g.select("task_kind", "metric").unique().iter_rows()])
        if km is not None:
            boards.append(
                (
                    (d, km[0], POOLED, km[1]),
                    g.filter(pl.col("task_kind") == km[0], pl.col("metric") == km[1]),
                    True,
                )
            )
    recs = []
    now = available_at.astimezone(UTC)
    for (d, k, h, m), g, headline in sorted(boards, key=lambda b: tuple(map(str, b[0]))):
        ref = reference_for(k, m, g)
        if ref is None:
            continue
        out = g.filter(pl.col("model_id").is_in(list(dropped)))
        rows, info = rank_board(
            g.filter(~pl.col("model_id").is_in(list(dropped))),
            m,
            ref,
            min_tasks=min_tasks,
            n_boot=n_boot,
            seed=seed,
        )
        gone = _discard_rows(g, m, ref, out["model_id"].unique().to_list())
        ref_tasks = set(g.filter(pl.col("model_id") == ref)["task_id"].to_list())
        info["reference_stale_n"] = len(ref_tasks & stale) if k == "event" else None
        for row in [*rows, *({**r, "discarded": True} for r in gone)]:
            row.setdefault("discarded", False)
            row["invalid_share"] = invalid.get(row["model_id"])
            recs.append(
                {
                    "partition_key": d,
                    "domain": d,
                    "task_kind": k,
                    "horizon": h,
                    "metric": m,
                    "headline": headline,
                    "loss": LOSSES[m],
                    "scale": SCALE,
                    "cluster_by": "question" if k == "event" else "cutoff date",
                    **info,
                    "min_tasks": int(min_tasks),
                    **row,
                    "n_boot": int(n_boot),
                    "boot_seed": int(seed),
                    "available_at": now,
                }
            )
    if not recs:
        return storage.empty_frame(TABLE)
    cols = storage.get_table(TABLE).column_names
    frame = pl.DataFrame([{c: r.get(c) for c in cols} for r in recs], schema=storage.polars_schema(TABLE))
    return storage.conform(TABLE, frame)


# ---------------------------------------------------------------------------------------------
# The printed boards (rows of the stored event_rankings)
# ---------------------------------------------------------------------------------------------

# metric -> (name, higher is better, units) of the plain metric
METRIC_INFO = {
    "accuracy": ("trend accuracy", True, "share of tasks with the right class (0-1)"),
    "mape": ("MAPE", False, "% of the actual"),
    "rmse": ("RMSE", False, "the series' units"),
    "mae_z": ("MAE of z-scores", False, "look-back standard deviations"),
    "mse_z": ("MSE of z-scores", False, "squared look-back standard deviations"),
    "crps": ("CRPS", False, "z units (weather, load) or % of the last value (prices)"),
    "qloss": ("quantile loss", False, "z units (weather, load) or % of the last value (prices)"),
    "brier": ("Brier score", False, "probability squared (0-1; always 0.5 scores 0.25)"),
}
HOW_TO_READ = (
    "How to read the event boards: skill = 1 - L/L_ref, L the model's difficulty-adjusted mean loss on every"
    " task of the board, each model scored on its own n tasks (two-way fixed effects of the per-task loss on"
    " task and model, ForecastBench's difficulty adjustment; the task effect is the reference's loss, so"
    " adding or removing a model moves no other model's score, interval or n). Reference: baseline/last-value"
    " for series and trend tasks (CRPS and quantile loss: baseline/auto-ets, the last value gives no"
    " intervals), the market price for event questions (Brier skill score). Intervals are"
    " cluster-bootstrap percentiles over cutoff days (questions for event questions), the effects"
    " re-estimated in every replicate.",
    "P(> ref.): share of replicates above the reference; the paired interval of score minus the reference's"
    " (stored as diff_ci90_*) is the score's own interval, the reference scoring 0 in every replicate."
    " adj. <metric>: the difficulty-adjusted level in the metric's own units; own <metric>: the plain metric"
    " on the model's own tasks (a different set per model: not what the rank orders); top task: the largest"
    " single task's share of the model's loss (! above 50%). The common-set view (the plain metric on the"
    " tasks every ranked model scored) is printed as a ranking only when that set holds at least half of"
    " every ranked model's tasks.",
)
SKILL_RANGE = "(-inf, 1]: 0 = the reference, 1 = no loss"
SKILL_UNITS = "none (1 - a ratio of mean losses)"
BOARD_ORDER = ("large_cap", "mid_cap", "commodity", "weather", "electricity", "event")


def _domain_key(d: str) -> tuple[int, str]:
    return (BOARD_ORDER.index(d) if d in BOARD_ORDER else len(BOARD_ORDER), d)


def _horizon_key(h: str) -> tuple:
    from leaf_live.event.figures import horizon_order

    return (1, (0, 0.0)) if h == POOLED else (0, horizon_order(h))


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(
        rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, -(r["n_tasks"] or 0), r["model_id"])
    )


def board_columns(metric: str) -> list:
    """The columns of one printed event board (:func:`leaf_live.core.boards.render_board`)."""
    from leaf_live.core.boards import Col, interval, pct, sig

    name = METRIC_INFO.get(metric, (metric,))[0]

    def rank_cell(r: dict) -> str:
        if r.get("discarded"):
            return "disc."
        return str(r["rank"]) if r.get("rank") is not None else "–"

    def share(r: dict) -> str:
        s = pct(r.get("max_task_share"))
        return f"{s} !" if r.get("max_task_flag") else s

    return [
        Col("#", value=rank_cell, priority=10),
        Col("model", value=lambda r: r["model_id"], align="l", priority=10),
        Col("n", value=lambda r: sig(int(r["n_tasks"])), priority=9),
        Col("skill", value=lambda r: sig(r.get("score"), signed=True), priority=10),
        Col("90% interval", value=lambda r: interval(r.get("ci90_lo"), r.get("ci90_hi")), priority=8),
        Col("P(rank 1)", value=lambda r: pct(r.get("p_rank1")), priority=7),
        Col("P(> ref.)", value=lambda r: pct(r.get("p_better")), priority=6),
        Col(f"adj. {name}", value=lambda r: sig(r.get("adj_value")), priority=5),
        Col(f"own {name}", value=lambda r: sig(r.get("own_value")), priority=4),
        Col("top task", value=share, priority=3),
    ]


def render_event_board(b: pl.DataFrame, *, width: int | None = None) -> str:
    """One printed board from the ``event_rankings`` rows of one (domain, task kind, horizon, metric): the
    ranking with labelled columns, then the common-set view as a ranking only where the table says it may be
    one (``common_view_ok``), else the reason."""
    from leaf_live.core.boards import BoardMeta, pct, render_board, sig

    rows = _sorted(b.to_dicts())
    r0 = rows[0]
    m = r0["metric"]
    name, higher, units = METRIC_INFO.get(m, (m, False, "?"))
    ref = r0["reference_model_id"]
    clusters = (
        "questions (all cutoffs of a question together)"
        if r0["cluster_by"] == "question"
        else ("cutoff days (UTC) of the domain")
    )
    flagged = [r for r in rows if r.get("max_task_flag")]
    nc = int(r0["n_clusters"])
    notes = [
        f"{sig(int(r0['n_tasks_board']))} tasks (the reference's), loss {r0['loss']}; 90% interval, P(rank 1)"
        f" and the paired interval vs {ref} from {sig(int(r0['n_boot']))} replicates of {sig(nc)} {clusters}"
        + (" (too few clusters: the interval understates the uncertainty)" if nc < 10 else "")
        + f". Ranked: at least {r0['min_tasks']} tasks; – = listed with n, unranked. {name}:"
        f" {'higher' if higher else 'lower'} is better, units {units}.",
    ]
    if flagged:
        notes.append(
            "top task above 50% of the model's loss: "
            + "; ".join(f"{r['model_id']} on {r['max_task_id']}" for r in flagged)
            + "."
        )
    gone = [r for r in rows if r.get("discarded")]
    if gone:
        notes.append(
            "Discarded (LEAF §4.1: over 1/3 of its outputs invalid), listed with n, never ranked: "
            + "; ".join(f"{r['model_id']} ({pct(r.get('invalid_share'))} invalid)" for r in gone)
            + "."
        )
    if r0.get("n_dropped"):
        where = (
            "question tasks without a market price by the cutoff"
            if r0["task_kind"] == "event"
            else f"tasks {ref} did not score"
        )
        notes.append(
            f"{sig(int(r0['n_dropped']))} score row(s) on {where} are left out (the task effect is the"
            f" reference's loss): the board ranks the {sig(int(r0['n_tasks_board']))} tasks {ref} scored."
        )
    if r0.get("reference_stale_n"):
        notes.append(
            f"{sig(int(r0['reference_stale_n']))} of the {sig(int(r0['n_tasks_board']))} reference prices are"
            f" older than {PRICE_MAX_AGE_DAYS:g} days at the cutoff: the last price known by then, not the"
            " price at the cutoff (forecast_tasks.last_value_age_days)."
        )
    if r0.get("ranked_note"):
        notes.append(r0["ranked_note"] + ".")
    elif r0.get("common_view_ok"):
        common = sorted((r for r in rows if r.get("common_rank") is not None), key=lambda r: r["common_rank"])
        notes.append(
            f"Second view, plain {name} on the {sig(int(r0['common_n']))} tasks every ranked model scored: "
            + ", ".join(f"{r['common_rank']}. {r['model_id']} {sig(r['common_value'])}" for r in common)
            + "."
        )
    else:
        notes.append(
            f"Common-set view not shown as a ranking: {r0.get('common_view_note') or 'no common set'}."
        )
    horizon = "all horizons" if r0["horizon"] == POOLED else r0["horizon"]
    title = f"Event track | {r0['domain']} | {r0['task_kind']} {horizon} | {name}" + (
        " (headline)" if r0.get("headline") else ""
    )
    meta = BoardMeta(
        title=title,
        metric=f"skill score vs {ref} ({name})",
        higher_is_better=True,
        range=SKILL_RANGE,
        units=SKILL_UNITS,
        notes=tuple(notes),
    )
    return render_board(rows, board_columns(m), meta, width=width)


def headline_rows(board: pl.DataFrame) -> tuple[list[dict], list[str], list[str]]:
    """The headline matrix (models x domains) of ``event_rankings`` rows: ``(rows, domains, notes)``, one row
    per model with, per domain, ``{domain: (score, rank, n, discarded)}`` from the domain's headline board;
    models with more ranked domains first."""
    h = board.filter(pl.col("headline"))
    domains = sorted(h["domain"].unique().to_list(), key=_domain_key)
    cells: dict[str, dict] = {}
    notes = []
    for d in domains:
        g = h.filter(pl.col("domain") == d)
        r0 = g.row(0, named=True)
        notes.append(
            f"{d}: {r0['task_kind']} {METRIC_INFO.get(r0['metric'], (r0['metric'],))[0]}, all horizons,"
            f" {int(r0['n_tasks_board']):,} tasks, vs {r0['reference_model_id']}"
        )
        for r in g.iter_rows(named=True):
            cells.setdefault(r["model_id"], {})[d] = (r["score"], r["rank"], r["n_tasks"], r.get("discarded"))
    rows = [{"model_id": m, **c} for m, c in cells.items()]
    rows.sort(key=lambda r: (-sum(r.get(d, (None,))[0] is not None for d in domains), r["model_id"]))
    return rows, domains, notes


def render_headline(board: pl.DataFrame, *, width: int | None = None) -> str:
    """The headline matrix as text: per model and domain the skill score on the domain's headline board
    with its rank (``+0.123 #1``), ``– n=12`` where the model is listed but not ranked, ``disc. n=12`` where
    it is discarded (over 1/3 invalid outputs), blank where it has no task."""
    from leaf_live.core.boards import BoardMeta, Col, render_board, sig

    rows, domains, notes = headline_rows(board)

    def cell(d: str):
        def f(r: dict) -> str:
            if d not in r:
                return ""
            s, k, n, gone = r[d]
            if gone:
                return f"disc. n={n}"
            return f"{sig(s, signed=True)} #{k}" if s is not None else f"– n={n}"

        return f

    cols = [Col("model", value=lambda r: r["model_id"], align="l", priority=10)]
    cols += [Col(d, value=cell(d), priority=9 - i) for i, d in enumerate(domains)]
    meta = BoardMeta(
        title="Event track headline: difficulty-adjusted skill score per domain (#rank on its board)",
        metric="skill score vs the reference",
        higher_is_better=True,
        range=SKILL_RANGE,
        units=SKILL_UNITS,
        notes=(
            "Each domain's headline board pools every horizon of its headline task kind and metric: "
            + "; ".join(notes)
            + ". – n = listed with its task count, fewer than the entry minimum.",
        ),
    )
    return render_board(rows, cols, meta, width=width)


def render_event_boards(board: pl.DataFrame, *, width: int | None = None, headline: bool = True) -> str:
    """The headline matrix (``headline``) then every board of ``event_rankings`` rows (domain, task kind,
    horizon, metric order); "no event board stored" when there are none."""
    if board.height == 0:
        return "no event board stored"
    keys = ["domain", "task_kind", "horizon", "metric"]
    groups = sorted(
        board.group_by(keys, maintain_order=True),
        key=lambda kv: (_domain_key(kv[0][0]), kv[0][1], _horizon_key(kv[0][2]), kv[0][3]),
    )
    from leaf_live.core.boards import _wrap, terminal_width

    w = width or terminal_width()
    parts = [render_headline(board, width=width)] if headline and board["headline"].any() else []
    parts.append("\n".join(line for p in HOW_TO_READ for line in _wrap(p, w)))
    parts += [render_event_board(g, width=width) for _, g in groups]
    return "\n\n".join(parts)
