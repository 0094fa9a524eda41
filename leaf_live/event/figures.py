"""Event-track report figures (LEAF §4.1-4.2, Fig. 3, Tables 3-4 form) from the stored tables.

Pure functions, frames in, :class:`leaf_live.core.figures.Plot` out. The statistics are the event scoring
module's (:func:`leaf_live.event.scoring.leaderboard`, :func:`~leaf_live.event.scoring.brier_by_cutoff`,
:func:`~leaf_live.event.scoring.reliability_table`) over the stored per-task scores and forecasts; nothing
is re-scored.

* :func:`accuracy_with_without_events`: trend accuracy per model, time series only vs with events (LEAF
  Tables 3 and 4), one panel per domain, bars per (task kind, horizon), 95% bootstrap whiskers over tasks.
  While the store holds only baselines the figure shows them and says that no LLM forecast with events exists
  yet.
* :func:`brier_by_cutoff`: mean Brier score per model at each cutoff, 100% .. 10% of the time to resolution
  left (LEAF Fig. 3 form: solid = with events, dashed = time series / no events, the market-price and
  base-rate baselines, the always-0.5 reference at 0.25).
* :func:`reliability`: reliability diagram of every model's event probabilities (observed YES frequency per
  forecast-probability bin).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from leaf_live.core.figures import Plot, model_colors, new_figure, note
from leaf_live.event import scoring
from leaf_live.event.analyses import split_model_id

DOMAINS = ("large_cap", "mid_cap", "commodity", "weather", "electricity")
# metrics of the board (leaf_scores holds every metric): the ones LEAF §4.1 reports plus CRPS
BOARD_METRICS = ("accuracy", "mape", "mae_z", "mse_z", "brier", "crps")
CUTOFFS = ("100%", "80%", "60%", "40%", "20%", "10%")  # LEAF §4.1: share of the time to resolution left
TREND_KINDS = ("trend3", "trend5")


def context_of(model_id: str) -> str:
    """'events' or 'ts' for an LLM row (``provider/model@design:<context>``; an ``events*`` / ``alpha=``
    context counts as events), 'baseline' for every other model (baselines, statistical and foundation
    models)."""
    _, ctx = split_model_id(model_id)
    if ctx is None:
        return "baseline"
    return "ts" if ctx == "ts" else "events"


def horizon_order(h: str) -> tuple[int, float]:
    """Sort key of a task horizon: days (1d < 2d < 3d < 7d), then months (3mo < 6mo), then the event cutoffs
    in LEAF's order (100% .. 10% of the time to resolution left), anything else last."""
    if h in CUTOFFS:
        return (2, float(CUTOFFS.index(h)))
    if h.endswith("mo") and h[:-2].isdigit():
        return (1, float(h[:-2]))
    if h.endswith("d") and h[:-1].isdigit():
        return (0, float(h[:-1]))
    return (3, 0.0)


@dataclass
class EventStats:
    """The event-track statistics the figures and the site share, computed once: ``board`` =
    :func:`scoring.leaderboard` of the :data:`BOARD_METRICS` rows (model x domain x task kind x horizon x
    metric, like with like, 95% bootstrap interval, n) and ``cutoffs`` = :func:`scoring.brier_by_cutoff` of
    the event questions' Brier rows (with the ``avg`` row per model)."""

    board: pl.DataFrame
    cutoffs: pl.DataFrame


def event_statistics(scores: pl.DataFrame, *, n_draws: int = 2000, seed: int = 0) -> EventStats:
    """:class:`EventStats` of ``leaf_scores`` rows (empty frames when nothing is stored). ``n_draws`` and
    ``seed`` are the bootstrap's (the printed event board uses 2,000 draws and seed 0)."""
    s = scores.filter(pl.col("metric").is_in(list(BOARD_METRICS)))
    board = scoring.leaderboard(s, n_draws=n_draws, seed=seed) if s.height else pl.DataFrame()
    b = scores.filter((pl.col("metric") == "brier") & (pl.col("task_kind") == "event"))
    cutoffs = scoring.brier_by_cutoff(b, n_draws=n_draws, seed=seed) if b.height else pl.DataFrame()
    return EventStats(board, cutoffs)


def accuracy_table(board: pl.DataFrame) -> pl.DataFrame:
    """The trend-accuracy rows of a board (:attr:`EventStats.board`) with ``context`` (:func:`context_of`)."""
    if board.height == 0:
        return pl.DataFrame()
    t = board.filter((pl.col("metric") == "accuracy") & pl.col("task_kind").is_in(list(TREND_KINDS)))
    return t.with_columns(pl.col("model_id").map_elements(context_of, return_dtype=pl.Utf8).alias("context"))


def accuracy_with_without_events(stats: EventStats) -> Plot:
    """Trend accuracy (%) with and without events, one panel per domain present, grouped bars per (task kind,
    horizon): baselines (hatched), each LLM without events (light) and with events (solid), 95% bootstrap
    whiskers over tasks, models compared on the tasks they all forecast (``stats.board``). ``data``:
    :func:`accuracy_table` rows drawn (accuracy in %)."""
    t = accuracy_table(stats.board)
    domains = [d for d in DOMAINS if t.height and d in t["domain"].to_list()]
    has_events = t.height > 0 and (t["context"] == "events").any()
    fig, axes = new_figure(11.0, 2.5 * max(len(domains), 1) + 0.7, max(len(domains), 1), 1)
    colors = model_colors([split_model_id(m)[0] for m in t["model_id"].to_list()]) if t.height else {}
    if not domains:
        note(axes[0, 0], "no trend-task scores stored (leaf_scores holds no accuracy rows)")
    for ax, dom in zip(axes[:, 0], domains):
        d = t.filter(pl.col("domain") == dom)
        groups = sorted(
            {(k, h) for k, h in zip(d["task_kind"], d["horizon"])}, key=lambda g: (g[0], horizon_order(g[1]))
        )
        models = sorted(
            d["model_id"].unique().to_list(),
            key=lambda m: (context_of(m) != "baseline", split_model_id(m)[0], context_of(m) == "events"),
        )
        width = 0.8 / max(len(models), 1)
        for j, model in enumerate(models):
            ctx = context_of(model)
            xs, ys, err = [], [], [[], []]
            for i, (k, h) in enumerate(groups):
                r = d.filter(
                    (pl.col("model_id") == model) & (pl.col("task_kind") == k) & (pl.col("horizon") == h)
                )
                if r.height == 0:
                    continue
                m, lo, hi = (100 * r[c][0] for c in ("mean", "ci_lo", "ci_hi"))
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(m)
                err[0].append(max(m - lo, 0.0))
                err[1].append(max(hi - m, 0.0))
            ax.bar(
                xs,
                ys,
                width=width * 0.95,
                yerr=err,
                capsize=2,
                ecolor="#333333",
                color=colors[split_model_id(model)[0]],
                alpha=0.45 if ctx == "ts" else 0.9,
                hatch="//" if ctx == "baseline" else None,
                edgecolor="white" if ctx != "baseline" else "#444444",
                label={
                    "baseline": model,
                    "ts": f"{split_model_id(model)[0]} (time series only)",
                    "events": f"{split_model_id(model)[0]} (with events)",
                }[ctx],
            )
        ax.set_xticks(range(len(groups)), [f"{k} {h}" for k, h in groups], fontsize=8)
        ax.set_ylabel("accuracy, %")
        ax.set_ylim(0, 100)
        ax.set_title(dom.replace("_", " "), fontsize=10)
        ax.legend(fontsize=7, ncol=3, loc="upper right")
    status = "" if has_events else " (no LLM forecasts with events stored yet: baselines only, time series)"
    fig.suptitle("Trend accuracy with and without events" + status, fontsize=11)
    caption = (
        "Mean trend-class accuracy (%) per model on the tasks every model of the group forecast; whiskers:"
        " 95% bootstrap over tasks. Hatched: baselines (time series only); light: an LLM given the time"
        " series only; solid: the same LLM given the fact-checked events (LEAF Tables 3-4)."
        + status
        + " Source: leaf_scores."
    )
    data = t.with_columns((pl.col(c) * 100).alias(c) for c in ("mean", "ci_lo", "ci_hi")) if t.height else t
    return Plot(
        "event_accuracy_with_without_events",
        "Trend accuracy with and without events",
        caption,
        fig,
        data,
        empty=not domains,
    )


def brier_by_cutoff(stats: EventStats) -> Plot:
    """LEAF Fig. 3 form: mean Brier score of every model at each cutoff (x: 100% .. 10% of the time to
    resolution left) with 95% question-bootstrap bands (``stats.cutoffs``).
    Solid: LLMs with events; dashed: LLMs without events; dotted: baselines (market price at the cutoff, the
    point-in-time category base rate, ...); the always-0.5 reference is the grey line at 0.25. ``data``: the
    per-cutoff rows drawn (no ``avg`` row)."""
    fig, axes = new_figure(8.0, 4.6)
    ax = axes[0, 0]
    if stats.cutoffs.height == 0:
        note(ax, "no event-question Brier scores stored")
        return Plot(
            "event_brier_by_cutoff",
            "Brier score by cutoff (LEAF Fig. 3)",
            "No event scores stored.",
            fig,
            pl.DataFrame(),
            empty=True,
        )
    t = stats.cutoffs.filter(pl.col("cutoff").is_in(list(CUTOFFS)))
    x = {c: i for i, c in enumerate(CUTOFFS)}
    colors = model_colors([split_model_id(m)[0] for m in t["model_id"].to_list()])
    for model in sorted(t["model_id"].unique().to_list()):
        r = (
            t.filter(pl.col("model_id") == model)
            .with_columns(pl.col("cutoff").replace_strict(x, return_dtype=pl.Int32).alias("_x"))
            .sort("_x")
        )
        ctx = context_of(model)
        color = colors[split_model_id(model)[0]]
        ls = {"events": "-", "ts": "--", "baseline": ":"}[ctx]
        ax.plot(
            r["_x"].to_list(),
            r["brier"].to_list(),
            ls=ls,
            marker="o",
            ms=3,
            lw=1.5,
            color=color,
            label=f"{model} (n={r['n'].max()})",
        )
        ax.fill_between(
            r["_x"].to_list(), r["ci_lo"].to_list(), r["ci_hi"].to_list(), color=color, alpha=0.08
        )
    ax.axhline(0.25, color="#888888", lw=0.8, label="always 0.5 (0.25)")
    ax.set_xticks(range(len(CUTOFFS)), CUTOFFS)
    ax.set_xlabel("time to resolution left at the forecast (share of the question's window)")
    ax.set_ylabel("mean Brier score (lower is better)")
    ax.legend(fontsize=7, loc="best")
    has_llm = any(context_of(m) != "baseline" for m in t["model_id"].unique().to_list())
    status = "" if has_llm else " No LLM forecasts stored yet: baselines only."
    fig.suptitle(
        "Event questions: Brier score by cutoff" + (" (baselines only)" if not has_llm else ""), fontsize=11
    )
    caption = (
        "Mean Brier score of the event-question forecasts at each cutoff (LEAF §4.1: 100% .. 10% of the time"
        " to resolution left); bands: 95% bootstrap over questions. Solid: with events; dashed: without;"
        " dotted: baselines (market/polymarket = the market price at the cutoff; baseline/base-rate = the"
        " category's point-in-time base rate)." + status + " Source: leaf_scores."
    )
    return Plot(
        "event_brier_by_cutoff",
        "Brier score by cutoff (LEAF Fig. 3)",
        caption,
        fig,
        t.drop("_x", strict=False),
    )


def reliability(forecasts: pl.DataFrame, outcomes: pl.DataFrame, *, bins: int = 10) -> Plot:
    """Reliability diagram: for every model with event probabilities, the observed YES frequency against the
    mean forecast in each of ``bins`` equal probability bins
    (:func:`leaf_live.event.scoring.reliability_table`), marker area proportional to the bin's count, the
    diagonal = perfect calibration. Constant forecasters (one bin) are left out. ``forecasts``:
    ``leaf_forecasts`` rows; ``outcomes``: ``task_outcomes`` rows. ``data``: the bins drawn."""
    f = forecasts.filter(pl.col("valid") & pl.col("probability").is_not_null())
    fig, axes = new_figure(6.4, 6.0)
    ax = axes[0, 0]
    t = scoring.reliability_table(f, outcomes, bins=bins) if f.height else pl.DataFrame()
    if t.height:
        t = (
            t.join(t.group_by("model_id").agg(pl.col("bin").n_unique().alias("_bins")), on="model_id")
            .filter(pl.col("_bins") > 1)
            .drop("_bins")
        )
    if t.height == 0:
        note(ax, "no event probability forecasts with a resolved outcome stored")
        return Plot(
            "event_reliability",
            "Reliability of event probabilities",
            "Nothing stored.",
            fig,
            pl.DataFrame(),
            empty=True,
        )
    ax.plot([0, 1], [0, 1], color="#888888", lw=0.8, ls="--", label="perfect calibration")
    size = 300.0 / max(float(t["n"].max()), 1.0)
    colors = model_colors([split_model_id(m)[0] for m in t["model_id"].to_list()])
    for model in sorted(t["model_id"].unique().to_list()):
        r = t.filter(pl.col("model_id") == model).sort("bin")
        color = colors[split_model_id(model)[0]]
        ax.plot(
            r["mean_forecast"].to_list(),
            r["observed_freq"].to_list(),
            color=color,
            lw=1.2,
            ls={"events": "-", "ts": "--", "baseline": ":"}[context_of(model)],
            label=f"{model} (n={int(r['n'].sum())})",
        )
        ax.scatter(
            r["mean_forecast"].to_list(),
            r["observed_freq"].to_list(),
            s=np.maximum(size * r["n"].to_numpy(), 6),
            color=color,
            alpha=0.6,
            edgecolor="white",
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean forecast probability in the bin")
    ax.set_ylabel("observed YES frequency")
    ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Reliability of event probabilities", fontsize=11)
    caption = (
        f"Forecasts binned into {bins} equal probability bins; each point is a bin's mean forecast against"
        " the share of its questions that resolved YES, area proportional to the number of forecasts."
        " Constant forecasters (a single bin) are left out. Source: leaf_forecasts, task_outcomes."
    )
    return Plot("event_reliability", "Reliability of event probabilities", caption, fig, t)
