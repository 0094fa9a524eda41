"""Per-event losses and the coverage-robust LiveMacro ranking (issue 16).

* :func:`event_losses_frame`: the ``livemacro_event_losses`` rows of one model's design: for every scope and
  target, each OWN event's realized target Y, prediction Q_hat, loss (Y - Q_hat)^2 and the consensus's loss
  Y^2. The LiveMacro Score of a set E of events is ``(sum_E w Y^2 - sum_E w loss)/(sum_E w Y^2 + sum_E w
  loss)`` (Eq. 2/8/17), so every stored score is a SQL aggregate of these rows.
* :func:`rankings_frame`: the ``livemacro_rankings`` rows: per board (fit, horizon, scope, target) and window
  (``full``; ``ex_covid`` = the paper's no-COVID window dropped, K.3), the two-way fixed-effects ranking of
  :mod:`leaf_live.core.ranking` with the consensus as the reference, mapped onto the LiveMacro Score scale
  (``"symmetric"``: ``(L_cons - L)/(L_cons + L)``; in a balanced panel exactly the LiveMacro Score on all
  events). The headline estimator is ``reference``: the event effect is the consensus's loss Y^2 (the
  consensus answers every event and is the score's zero), so a model's effect is its mean excess loss over the
  consensus on its own events and its score is that excess mapped onto the whole board's events; adding or
  removing another model changes no one's score. ``all`` (ForecastBench's all-model event effects) is stored
  beside it for the overall return board at the terminal horizon; a model whose excess loss is very uneven
  (auto-ARIMA's five COVID payroll events) shifts the other models' effects there (ranking module notes).
  Bootstrap clusters: the scoring events (as the event bootstrap of livemacro_scores).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import polars as pl

from leaf_live.core import ranking as RK
from leaf_live.core import storage
from leaf_live.macro.scoring.betas import MarketBetaFit, covid_mask
from leaf_live.macro.scoring.livemacro import LiveDesign, own_subset, scoped_design, targets

WINDOWS = ("full", "ex_covid")
HEADLINE_ESTIMATOR = "reference"
RANK_BOOT = 1000  # replicates of the ranking bootstrap
# own events a model needs to enter the macro headline: the fewest an event-resampling interval is given for
# (frames.MIN_EVENTS); below it a model is listed with its n and its own-event score, unranked
MIN_EVENTS = 10


def event_losses_frame(
    design: LiveDesign,
    fit: MarketBetaFit,
    *,
    model_id: str,
    horizon: str,
    fit_name: str | None,
    scopes: Sequence[str],
    targets_: Sequence[str],
    partition_key: str,
    available_at: datetime,
) -> pl.DataFrame:
    """``livemacro_event_losses`` rows of one model: for each scope and target, its own events of the scope
    (:func:`livemacro.own_subset`, then the scope's events as in :func:`livemacro.point_score`) with ``y``,
    ``y_hat``, ``loss = (y - y_hat)^2``, ``loss_consensus = y^2``, ``weight = 1`` and the COVID flag."""
    frames = []
    for scope in scopes:
        d, idx = scoped_design(own_subset(design, scope), fit.beta, scope)
        if d.n_events == 0:
            continue
        cov = covid_mask(d.release_at)
        for target in targets_:
            y, q = targets(d, fit.beta, target, idx)
            frames.append(
                pl.DataFrame(
                    {
                        "event_at": pl.Series(
                            np.asarray(d.release_at, dtype="datetime64[us]")
                        ).dt.replace_time_zone("UTC"),
                        "y": y.astype(float),
                        "y_hat": q.astype(float),
                        "covid": cov,
                    }
                ).with_columns(pl.lit(scope).alias("scope"), pl.lit(target).alias("target"))
            )
    if not frames:
        return storage.empty_frame("livemacro_event_losses")
    out = pl.concat(frames).with_columns(
        pl.lit(partition_key).alias("partition_key"),
        pl.lit(model_id).alias("model_id"),
        pl.lit(fit.fit_id).alias("fit_id"),
        pl.lit(fit_name, dtype=pl.Utf8).alias("fit_name"),
        pl.lit(horizon).alias("horizon"),
        ((pl.col("y") - pl.col("y_hat")) ** 2).alias("loss"),
        (pl.col("y") ** 2).alias("loss_consensus"),
        pl.lit(1.0).alias("weight"),
        pl.lit(available_at.astimezone(UTC)).alias("available_at"),
    )
    return storage.conform(
        "livemacro_event_losses", out.select(storage.get_table("livemacro_event_losses").column_names)
    )


def _reference(models: Sequence[str], n: dict[str, int]) -> str | None:
    cons = [m for m in models if m.startswith("consensus/")]
    return sorted(cons, key=lambda m: (-n[m], m))[0] if cons else None


def rank_board(
    board: pl.DataFrame,
    *,
    estimator: str = HEADLINE_ESTIMATOR,
    min_events: int = MIN_EVENTS,
    n_boot: int = RANK_BOOT,
    seed: int = RK.DEFAULT_SEED,
) -> tuple[RK.Ranking, RK.Panel] | None:
    """The ranking of one board's loss rows (``livemacro_event_losses`` rows of one partition, fit, horizon,
    scope, target and window; every model's own events): :func:`leaf_live.core.ranking.rank_models` on the
    loss with the consensus (``consensus/*``, the one with most events) as the reference, the LiveMacro
    ``"symmetric"`` scale, each event its own cluster. None when the board has no consensus row or the
    consensus has fewer than ``min_events`` events."""
    models = board["model_id"].to_list()
    n = dict(board.group_by("model_id").len().iter_rows())
    ref = _reference(sorted(n), n)
    if ref is None or n[ref] < min_events:
        return None
    ev = board["event_at"].to_list()
    panel = RK.make_panel(models, ev, board["loss"].to_list(), weight=board["weight"].to_list(), cluster=ev)
    r = RK.rank_models(
        panel,
        reference=ref,
        scale="symmetric",
        min_events=min_events,
        n_boot=n_boot,
        seed=seed,
        event_effects=estimator,
    )
    return r, panel


def rankings_frame(
    losses: pl.DataFrame,
    *,
    partition_key: str,
    available_at: datetime,
    min_events: int = MIN_EVENTS,
    n_boot: int = RANK_BOOT,
    seed: int = RK.DEFAULT_SEED,
    all_estimator_for: tuple[str, str, str] = ("terminal", "overall", "return"),
) -> pl.DataFrame:
    """``livemacro_rankings`` rows of one mode from its ``livemacro_event_losses`` rows (module notes): every
    (fit, horizon, scope, target) board in both windows with the ``reference`` estimator, and the ``all``
    estimator too on the (horizon, scope, target) of ``all_estimator_for``."""
    recs = []
    keys = ["fit_id", "fit_name", "horizon", "scope", "target"]
    for key, g in sorted(losses.group_by(keys, maintain_order=True), key=lambda kv: tuple(map(str, kv[0]))):
        fit_id, fit_name, horizon, scope, target = key
        ests = [HEADLINE_ESTIMATOR]
        if (horizon, scope, target) == all_estimator_for:
            ests.append("all")
        for window in WINDOWS:
            b = g if window == "full" else g.filter(~pl.col("covid"))
            if b.height == 0:
                continue
            for est in ests:
                res = rank_board(b, estimator=est, min_events=min_events, n_boot=n_boot, seed=seed)
                if res is None:
                    continue
                r, panel = res
                share = RK.largest_event_share(panel)
                for row in r.rows():
                    s, at = share[row["model"]]
                    recs.append(
                        {
                            "partition_key": partition_key,
                            "fit_id": fit_id,
                            "fit_name": fit_name,
                            "horizon": horizon,
                            "scope": scope,
                            "target": target,
                            "event_window": window,
                            "estimator": est,
                            "model_id": row["model"],
                            "reference_model_id": r.reference,
                            "n_events": row["n_events"],
                            "n_events_board": len(panel.events),
                            "min_events": r.min_events,
                            **RK.stored_fields(row),
                            "max_event_share": None if not np.isfinite(s) else s,
                            "max_event_at": at,
                            "n_boot": r.n_boot,
                            "boot_seed": seed,
                            "available_at": available_at.astimezone(UTC),
                        }
                    )
    if not recs:
        return storage.empty_frame("livemacro_rankings")
    return storage.conform(
        "livemacro_rankings", pl.DataFrame(recs, schema=storage.polars_schema("livemacro_rankings"))
    )


# ---------------------------------------------------------------------------------------------
# The printed board (rows of the dbt mart macro_board)
# ---------------------------------------------------------------------------------------------

MODE_TITLES = {"backtest": "Historical backtest", "live": "Live window"}
WINDOW_TITLES = {"full": "all events", "ex_covid": "ex-COVID (events of 2020-03..2020-12 dropped)"}
TARGET_METRICS = {"return": "LiveMacro Score", "shock": "consensus-relative score"}
ANSWER_RULE = (
    "Answered-at rule (scoring and betting alike): a nowcast counts from when its answer existed"
    " (nowcasts.answered_at: an LLM call's completion; a recorded run's stamp + 1 h; others their stamp),"
    " strictly before the release."
)
HEADLINE_FITS = {"backtest": "backtest", "live": "full"}


def _rank(r: dict) -> str:
    return str(r["rank"]) if r.get("rank") is not None else "–"


def _share(r: dict) -> str:
    from leaf_live.core.boards import pct

    s = pct(r.get("max_event_share"))
    return f"{s} !" if r.get("max_event_flag") else s


def board_columns() -> list:
    """The columns of a printed macro board (:func:`leaf_live.core.boards.render_board`)."""
    from leaf_live.core.boards import Col, interval, pct, sig

    return [
        Col("#", value=_rank, priority=10),
        Col("model", value=lambda r: r["model_id"], align="l", priority=10),
        Col("n", value=lambda r: sig(int(r["n_events"])), priority=9),
        Col("score", value=lambda r: sig(r.get("score"), signed=True), priority=10),
        Col("90% interval", value=lambda r: interval(r.get("ci90_lo"), r.get("ci90_hi")), priority=8),
        Col("P(rank 1)", value=lambda r: pct(r.get("p_rank1")), priority=7),
        Col(
            "vs consensus (90%)",
            value=lambda r: interval(r.get("diff_ci90_lo"), r.get("diff_ci90_hi")),
            priority=6,
        ),
        Col("own-events score", value=lambda r: sig(r.get("own_score"), signed=True), priority=5),
        Col(
            "own 90% β+events",
            value=lambda r: interval(r.get("own_ci90_lo"), r.get("own_ci90_hi")),
            priority=4,
        ),
        Col(
            "own 90% β only",
            value=lambda r: interval(r.get("own_beta_ci90_lo"), r.get("own_beta_ci90_hi")),
            priority=2,
        ),
        Col("top event", value=_share, priority=3),
        Col("vs App. I", value=lambda r: r.get("forecast_provenance") or "", align="l", priority=1),
    ]


def _sorted_rows(b: pl.DataFrame) -> list[dict]:
    rows = b.to_dicts()
    return sorted(
        rows,
        key=lambda r: (
            r["rank"] is None,
            r["rank"] or 0,
            -(r["own_score"] if r.get("own_score") is not None else -9),
            r["model_id"],
        ),
    )


def render_macro_board(b: pl.DataFrame, *, width: int | None = None) -> str:
    """One printed board from the ``macro_board`` rows of one (leaderboard, fit, horizon, scope, target,
    event_window): the coverage-robust ranking with its labelled columns, then the common-set view as a
    ranking only when the mart says it may be one (``common_view_ok``), else the reason."""
    from leaf_live.core.boards import BoardMeta, render_board, sig

    r0 = b.row(0, named=True)
    mode, target, window = r0["leaderboard"], r0["target"], r0["event_window"]
    rows = _sorted_rows(b)
    flagged = [r for r in rows if r.get("max_event_flag")]
    metric = TARGET_METRICS.get(target, target)
    notes = [
        f"score: difficulty-adjusted {metric}, each model scored on its own events: two-way fixed effects of"
        " the per-event squared error (ForecastBench's difficulty adjustment; the event effect is the"
        " consensus's"
        f" error, the consensus answers every event) mapped onto the board's {sig(int(r0['n_events_board']))}"
        f" events; 0 = the consensus ({r0['reference_model_id']}). 90% interval, P(rank 1) and the paired"
        f" interval vs the consensus from {sig(int(r0['n_boot']))} bootstrap replicates of the events, the"
        " effects re-estimated in each.",
        f"Ranked: models with at least {r0['min_events']} own events (n); fewer: listed with n, unranked"
        " (–).",
        "own-events score: the plain score on the model's own n events (a different set for each model: it is"
        " not what the rank orders); own 90% β+events = β draws on event resamples (combined), β only ="
        " parametric over V_β (Eq. 12; events fixed, what the paper prints).",
        "top event: largest single-event share of the model's squared error; ! = above 50%"
        + (
            " ("
            + "; ".join(
                f"{r['model_id']} {100 * r['max_event_share']:.3g}% on {r['max_event_at']:%Y-%m-%d}"
                for r in flagged
            )
            + ")"
            if flagged
            else ""
        )
        + ".",
        ANSWER_RULE,
    ]
    notes += [
        f"{r['model_id']} is not App. I's baseline as specified: {r['forecast_provenance']} (releases fitted"
        " on an older FRED vintage than the one preceding the target month, which is not stored; h = periods"
        " past the last observation, 1-2 from the prescribed vintage), column 'vs App. I'."
        for r in rows
        if r.get("forecast_provenance")
    ]
    if window == "full":
        if r0.get("common_view_ok"):
            common = sorted(
                (r for r in rows if r.get("common_rank") is not None),
                key=lambda r: (r["common_rank"], r["model_id"]),
            )
            n_c = common[0]["n_events_common"] if common else 0
            notes.append(
                f"Second view, the greedy common event set ({n_c} events every compared model nowcasts): "
                + ", ".join(
                    f"{r['common_rank']}. {r['model_id']} {sig(r['common_score'], signed=True)}"
                    for r in common
                )
                + "."
            )
        else:
            notes.append(
                f"Common-set view not shown as a ranking: {r0.get('common_view_note') or 'no common set'}."
            )
    title = (
        f"{MODE_TITLES.get(mode, mode)} | {metric} | fit {r0['fit_name']} | {r0['horizon']} | {r0['scope']} |"
        f" {WINDOW_TITLES.get(window, window)}"
    )
    meta = BoardMeta(
        title=title,
        metric=metric,
        higher_is_better=True,
        range="[-1, 1] (0 = the consensus, 1 = every event's return explained)",
        units="none (a ratio of sums of squared log-return errors)",
        notes=tuple(notes),
    )
    return render_board(rows, board_columns(), meta, width=width)


def render_macro_boards(board: pl.DataFrame, *, width: int | None = None) -> str:
    """Every board of ``macro_board`` rows, one after the other (mode, fit, horizon, scope, target, window
    order); "no macro board stored" when there are none."""
    if board.height == 0:
        return "no macro board stored"
    keys = ["leaderboard", "fit_name", "horizon", "scope", "target", "event_window"]
    order = {"backtest": 0, "live": 1, "full": 0, "ex_covid": 1, "overall": 0, "return": 0, "terminal": 0}
    groups = sorted(
        board.group_by(keys, maintain_order=True),
        key=lambda kv: tuple((order.get(str(v), 5), str(v)) for v in kv[0]),
    )
    return "\n\n".join(render_macro_board(g, width=width) for _, g in groups)
