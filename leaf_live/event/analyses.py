"""LEAF's event analyses as pure functions over stored-table frames (frames in, table frames out).

* :func:`filter_rates` — Table 2 form per retriever x domain (entities, events before filtering, filter
  rate, days with events, span) and :func:`retrieval_costs` — tokens and cost per kept event (App. D.1).
* :func:`predictability_accuracy` — §4.4 / Table 12: accuracy per predictability level (the per-cutoff
  accuracy of each level averaged over cutoffs, "aggregating the accuracy for each level on a daily basis")
  and the Pearson correlation of accuracy with the level.
* :func:`alpha_contexts` / :func:`alpha_consistency` — §3.2: contexts whose share alpha of events has the
  sentiment of the realised change (Positive for a rise, Negative for a fall), from the target's own events
  or another target's (the ablation); the mean error per alpha and its correlation with alpha.
* :func:`living_data_ablation` — §4.5 / Table 9: accuracy on tasks before a training cutoff vs on the live
  span, relative improvement 100 (before - after) / after.
* :func:`fact_check_ablation` — §4.5 / Fig. 6: the metric with unfiltered vs fact-checked events and the
  events in the unfiltered contexts that the checkers dated after the cutoff.

Each analysis either runs or refuses (:class:`AnalysisStatus`, table ``event_analysis_status``): the
``*_run`` functions return the table frame and one line saying what the rows cover and which inputs are
missing, or why nothing could be computed; a report prints that line instead of an empty section.

``model_id`` suffixes follow :mod:`leaf_live.event.agents.forecasters`: ``<base>:<context_kind>``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame

ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _frame(table: str, rows: list[dict], partition_key: str, at: datetime) -> pl.DataFrame:
    if not rows:
        return empty_frame(table)
    rows = [{**r, "partition_key": partition_key, "available_at": at} for r in rows]
    return conform(table, pl.DataFrame(rows, schema=empty_frame(table).schema))


def _at(*frames: pl.DataFrame) -> datetime:
    ts = [
        f["available_at"].max() for f in frames if f is not None and f.height and "available_at" in f.columns
    ]
    return max(ts)


@dataclass(frozen=True)
class AnalysisStatus:
    """One ``event_analysis_status`` row: ``status`` is ``ran`` (``rows`` > 0) or ``refused`` (nothing
    computed); ``reason`` is one line naming the inputs used or missing."""

    analysis: str
    status: str
    reason: str
    rows: int = 0

    def __post_init__(self) -> None:
        if self.status not in ("ran", "refused"):
            raise ValueError(f"status={self.status!r}: expected 'ran' or 'refused'")
        if "\n" in self.reason or not self.reason:
            raise ValueError(f"reason={self.reason!r}: expected one non-empty line")


def outcome(analysis: str, frame: pl.DataFrame, ran: str, refused: str) -> AnalysisStatus:
    """``ran`` with ``frame.height`` rows when the frame has rows, else ``refused`` with the reason
    ``refused``."""
    if frame.height:
        return AnalysisStatus(analysis, "ran", ran, frame.height)
    return AnalysisStatus(analysis, "refused", refused, 0)


def status_frame(statuses: Sequence[AnalysisStatus], at: datetime) -> pl.DataFrame:
    """``event_analysis_status`` rows, one per status, partition = the analysis, ``available_at = at``."""
    rows = [
        {
            "partition_key": st.analysis,
            "analysis": st.analysis,
            "status": st.status,
            "reason": st.reason,
            "rows": st.rows,
            "available_at": at,
        }
        for st in statuses
    ]
    if not rows:
        return empty_frame("event_analysis_status")
    return conform(
        "event_analysis_status", pl.DataFrame(rows, schema=empty_frame("event_analysis_status").schema)
    )


def _span_text(frame: pl.DataFrame, col: str) -> str:
    if frame.height == 0 or frame[col].drop_nulls().len() == 0:
        return "none"
    lo, hi = frame[col].min(), frame[col].max()
    return f"{lo:%Y-%m-%d}..{hi:%Y-%m-%d}"


def _names(values, most: int = 6) -> str:
    v = sorted(set(values))
    return ", ".join(v[:most]) + (f" and {len(v) - most} more" if len(v) > most else "")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson r of two equal-length sequences; None with fewer than 3 points or zero variance."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def split_model_id(model_id: str) -> tuple[str, str | None]:
    """``provider/model@design:context`` -> (base, context); no suffix -> (model_id, None)."""
    base, sep, ctx = model_id.rpartition(":")
    return (base, ctx) if sep and "@" in base else (model_id, None)


# ------------------------------------------------------------------------------------------------
# Table 2 and tokens per event
# ------------------------------------------------------------------------------------------------


def filter_rates(
    retrieved: pl.DataFrame, checked: pl.DataFrame, *, partition_key: str = "all"
) -> pl.DataFrame:
    """``event_filter_rates`` rows (module doc) from ``retrieved_events`` and ``fact_checked_events`` rows."""
    pit.require_columns(retrieved, ["retriever", "domain", "target_id", "valid"], "retrieved_events")
    pit.require_columns(
        checked,
        ["retriever", "domain", "target_id", "event_date", "kept", "drop_reason"],
        "fact_checked_events",
    )
    rows = []
    for (ret, dom), g in retrieved.filter(pl.col("valid")).group_by(
        ["retriever", "domain"], maintain_order=True
    ):
        c = checked.filter((pl.col("retriever") == ret) & (pl.col("domain") == dom))
        merged = c.filter(pl.col("drop_reason") == "merged").height
        dec = c.filter(pl.col("drop_reason").is_null() | (pl.col("drop_reason") != "merged"))
        # recorded rows (check_mode 'recorded': a transcript the source already fact-checked, e.g. SEER) have
        # no decision of ours: kept, but never counted in the filter rate
        rec = dec.filter(pl.col("check_mode") == "recorded") if "check_mode" in dec.columns else dec.head(0)
        if rec.height:
            dec = dec.filter(pl.col("check_mode") != "recorded")
        kept = pl.concat([dec.filter(pl.col("kept")), rec.filter(pl.col("kept"))])
        reasons = dec.filter(~pl.col("kept")).group_by("drop_reason").len().sort("drop_reason")
        dropped = dict(zip(reasons["drop_reason"], reasons["len"]))
        if rec.height:
            dropped["recorded_already_fact_checked"] = rec.height
        rows.append(
            {
                "retriever": ret,
                "domain": dom,
                "n_entities": g["target_id"].n_unique(),
                "n_events": g.height,
                "n_checked": dec.height,
                "n_kept": kept.height,
                "filter_rate": 1 - dec.filter(pl.col("kept")).height / dec.height if dec.height else None,
                "n_merged": merged,
                "n_days": kept.select("target_id", "event_date").unique().height,
                "first_date": kept["event_date"].min(),
                "last_date": kept["event_date"].max(),
                "drop_reasons": json.dumps(dropped),
            }
        )
    return _frame("event_filter_rates", rows, partition_key, _at(retrieved, checked))


def retrieval_costs(
    calls: pl.DataFrame,
    retrieved: pl.DataFrame,
    checks: pl.DataFrame,
    checked: pl.DataFrame,
    *,
    partition_key: str = "all",
) -> pl.DataFrame:
    """``event_retrieval_costs`` rows: the retrieval calls (``retrieved_events.call_id``) and fact-check calls
    (``fact_checks.call_id``) of each retriever x domain, their tokens and cost, per valid and per kept event.
    """
    pit.require_columns(calls, ["call_id", "total_tokens", "cost_usd", "status"], "llm_calls")
    rows = []
    for (ret, dom), g in retrieved.group_by(["retriever", "domain"], maintain_order=True):
        ev_ids = g.filter(pl.col("valid"))["event_id"]
        ids = set(g["call_id"].drop_nulls()) | set(
            checks.filter(pl.col("event_id").is_in(ev_ids))["call_id"].drop_nulls()
        )
        cs = calls.filter(pl.col("call_id").is_in(list(ids)))
        tok = int(cs["total_tokens"].fill_null(0).sum())
        answered = cs.filter(pl.col("status") == "ok")
        cost = (
            None
            if answered.height == 0 or answered["cost_usd"].null_count()
            else float(answered["cost_usd"].sum())
        )
        n_kept = checked.filter(
            (pl.col("retriever") == ret) & (pl.col("domain") == dom) & pl.col("kept")
        ).height
        n_ev = ev_ids.len()
        rows.append(
            {
                "retriever": ret,
                "domain": dom,
                "n_calls": cs.height,
                "total_tokens": tok,
                "cost_usd": cost,
                "n_events": n_ev,
                "n_kept": n_kept,
                "tokens_per_event": tok / n_ev if n_ev else None,
                "tokens_per_kept_event": tok / n_kept if n_kept else None,
                "cost_per_kept_event": cost / n_kept if (cost is not None and n_kept) else None,
            }
        )
    return _frame("event_retrieval_costs", rows, partition_key, _at(calls, retrieved))


# ------------------------------------------------------------------------------------------------
# predictability levels (Table 12)
# ------------------------------------------------------------------------------------------------


def predictability_accuracy(
    ratings: pl.DataFrame, scores: pl.DataFrame, tasks: pl.DataFrame, *, partition_key: str = "all"
) -> pl.DataFrame:
    """``predictability_accuracy`` rows: each forecasting model's trend accuracy grouped by the level the
    rater gave the stock at the task's cutoff (rating context = the forecast's context kind), per-cutoff
    accuracies averaged over cutoffs, and the correlation of accuracy with the level."""
    pit.require_columns(
        ratings,
        ["model_id", "context_kind", "cutoff", "target_id", "level", "valid"],
        "predictability_ratings",
    )
    s = (
        scores.filter(pl.col("metric") == "accuracy")
        .join(tasks.select("task_id", "cutoff"), on="task_id")
        .with_columns(
            pl.col("model_id").map_elements(lambda m: split_model_id(m)[1], return_dtype=pl.Utf8).alias("ck")
        )
    )
    r = ratings.filter(pl.col("valid")).select(
        pl.col("model_id").alias("rater"), pl.col("context_kind").alias("ck"), "cutoff", "target_id", "level"
    )
    j = s.join(r, on=["ck", "cutoff", "target_id"])
    rows = []
    keys = ["model_id", "rater", "ck", "domain", "task_kind", "horizon"]
    for k, g in j.group_by(keys, maintain_order=True):
        per = (
            g.group_by("level", "cutoff")
            .agg(pl.col("value").mean().alias("acc"))
            .group_by("level")
            .agg(pl.col("acc").mean(), pl.len().alias("_days"))
            .sort("level")
        )
        n = g.group_by("level").len()
        corr = pearson(per["level"].to_list(), per["acc"].to_list())
        for lv, acc in zip(per["level"], per["acc"]):
            rows.append(
                {
                    **dict(zip(["model_id", "rater", "context_kind", "domain", "task_kind", "horizon"], k)),
                    "level": lv,
                    "n": int(n.filter(pl.col("level") == lv)["len"][0]),
                    "accuracy": 100.0 * acc,
                    "level_correlation": corr,
                }
            )
    return _frame("predictability_accuracy", rows, partition_key, _at(ratings, scores))


# ------------------------------------------------------------------------------------------------
# alpha-consistency (§3.2)
# ------------------------------------------------------------------------------------------------


def alpha_contexts(
    events: pl.DataFrame,
    tasks: pl.DataFrame,
    outcomes: pl.DataFrame,
    *,
    n_events: int = 5,
    alphas: Sequence[float] = ALPHAS,
    other_target: Mapping[str, str] | None = None,
    seed: int = 0,
) -> dict[float, dict[str, list[dict]]]:
    """alpha -> task_id -> events: ``round(alpha n)`` events whose sentiment matches the sign of the task's
    realised change and ``n - round(alpha n)`` of the opposite sentiment, drawn (seeded) from the kept events
    of the target (or of ``other_target[target]``) dated on or before the cutoff day. Tasks with no change or
    too few events of either sentiment are left out at that alpha."""
    from leaf_live.event.agents.forecasters import cutoff_day

    pit.require_columns(events, ["event_id", "target_id", "event_date", "description", "sentiment"], "events")
    if "kept" in events.columns:
        events = events.filter(pl.col("kept"))
    ch = dict(zip(outcomes["task_id"], outcomes["change"]))
    out: dict[float, dict[str, list[dict]]] = {a: {} for a in alphas}
    for t in tasks.select("task_id", "target_id", "cutoff").iter_rows(named=True):
        c = ch.get(t["task_id"])
        if c is None or c == 0:
            continue
        src = (other_target or {}).get(t["target_id"], t["target_id"])
        day = cutoff_day(t["cutoff"])
        pool = events.filter((pl.col("target_id") == src) & (pl.col("event_date") <= day)).sort(
            "event_date", "event_id"
        )
        want = "Positive" if c > 0 else "Negative"
        other = "Negative" if c > 0 else "Positive"
        cons = pool.filter(pl.col("sentiment") == want).to_dicts()
        inc = pool.filter(pl.col("sentiment") == other).to_dicts()
        for a in alphas:
            k = int(round(a * n_events))
            if len(cons) < k or len(inc) < n_events - k:
                continue
            rng = random.Random(f"{seed}|{t['task_id']}|{a}")
            pick = rng.sample(cons, k) + rng.sample(inc, n_events - k)
            pick.sort(key=lambda e: (e["event_date"], e["event_id"]))
            out[a][t["task_id"]] = [
                {
                    "event_id": e["event_id"],
                    "date": e["event_date"].isoformat(),
                    "description": e["description"],
                    "sentiment": e["sentiment"],
                }
                for e in pick
            ]
    return out


def alpha_consistency(scores: pl.DataFrame, *, partition_key: str = "all") -> pl.DataFrame:
    """``alpha_consistency`` rows from the scores of forecasters whose context kind is ``alpha=<a>`` (target)
    or ``other_alpha=<a>`` (other target): mean error per alpha (1 - accuracy; MAPE for prices; Brier for
    events) and the Pearson correlation of the mean error with alpha."""
    err = {
        "accuracy": ("1-accuracy", lambda v: 1.0 - v),
        "mape": ("mape", lambda v: v),
        "brier": ("brier", lambda v: v),
    }
    recs = []
    for r in scores.filter(pl.col("metric").is_in(list(err))).iter_rows(named=True):
        base, ctx = split_model_id(r["model_id"])
        if not ctx or "alpha=" not in ctx:
            continue
        variant = "other_target" if ctx.startswith("other_alpha=") else "target"
        name, f = err[r["metric"]]
        recs.append(
            {
                "model_id": base,
                "variant": variant,
                "metric": name,
                "alpha": float(ctx.split("=", 1)[1]),
                "error": f(r["value"]),
            }
        )
    if not recs:
        return empty_frame("alpha_consistency")
    f = pl.DataFrame(recs)
    g = f.group_by("model_id", "variant", "metric", "alpha").agg(
        pl.len().alias("n"), pl.col("error").mean().alias("mean_error")
    )
    rows = []
    for _, h in g.sort("alpha").group_by(["model_id", "variant", "metric"], maintain_order=True):
        corr = pearson(h["alpha"].to_list(), h["mean_error"].to_list())
        rows += [{**r, "correlation": corr} for r in h.to_dicts()]
    return _frame("alpha_consistency", rows, partition_key, _at(scores))


# ------------------------------------------------------------------------------------------------
# living data (Table 9) and fact-check ablation (Fig. 6)
# ------------------------------------------------------------------------------------------------


def living_data_ablation(
    scores: pl.DataFrame,
    tasks: pl.DataFrame,
    before: tuple[date, date],
    after: tuple[date, date],
    *,
    partition_key: str = "all",
) -> pl.DataFrame:
    """``living_data_ablation`` rows: accuracy (%) of each model on trend tasks whose cutoff day lies in
    ``before`` (pre-training span) and in ``after`` (live span), and 100 (before - after) / after."""
    s = (
        scores.filter(pl.col("metric") == "accuracy")
        .join(tasks.select("task_id", "cutoff"), on="task_id")
        .with_columns(pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date().alias("_d"))
    )
    rows = []
    for k, g in s.group_by(["model_id", "domain", "task_kind", "horizon"], maintain_order=True):
        b = g.filter(pl.col("_d").is_between(*before))
        a = g.filter(pl.col("_d").is_between(*after))
        ab = 100.0 * b["value"].mean() if b.height else None
        aa = 100.0 * a["value"].mean() if a.height else None
        rows.append(
            {
                "model_id": k[0],
                "domain": k[1],
                "task_kind": k[2],
                "horizon": k[3],
                "accuracy_before": ab,
                "accuracy_after": aa,
                "n_before": b.height,
                "n_after": a.height,
                "relative_improvement_pct": 100.0 * (ab - aa) / aa if (ab is not None and aa) else None,
            }
        )
    return _frame("living_data_ablation", rows, partition_key, _at(scores))


def living_data_run(
    scores: pl.DataFrame,
    tasks: pl.DataFrame,
    before: tuple[date, date],
    after: tuple[date, date],
    *,
    partition_key: str = "all",
) -> tuple[pl.DataFrame, AnalysisStatus]:
    """:func:`living_data_ablation` keeping only the (model, domain, kind, horizon) groups scored in BOTH
    spans, with the status: refused (one line, the spans and the stored trend cutoffs) when no trend task of
    either span is scored or no model is scored in both; otherwise ran, naming the models left out for lack
    of before-span forecasts (LLM forecasters are only run on the tasks they are configured for)."""
    name = "living_data_ablation"
    acc = scores.filter(pl.col("metric") == "accuracy") if scores.height else scores
    cut = tasks.select("task_id", "cutoff").join(acc.select("task_id").unique(), on="task_id")
    day = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date()
    span_txt = f"before {before[0]}..{before[1]}, after {after[0]}..{after[1]}"
    nb = cut.filter(day.is_between(*before)).height
    na = cut.filter(day.is_between(*after)).height
    if not nb or not na:
        side = " and ".join(w for w, n in (("before", nb), ("after", na)) if not n)
        return empty_frame(name), AnalysisStatus(
            name,
            "refused",
            f"no scored trend task has its cutoff in the {side} span ({span_txt}; scored trend cutoffs"
            f" {_span_text(cut, 'cutoff')})",
        )
    full = living_data_ablation(scores, tasks, before, after, partition_key=partition_key)
    both = full.filter((pl.col("n_before") > 0) & (pl.col("n_after") > 0))
    have = set(both["model_id"])
    only_after = sorted(set(full.filter(pl.col("n_after") > 0)["model_id"]) - have)
    only_before = sorted(set(full.filter(pl.col("n_before") > 0)["model_id"]) - have)
    if both.height == 0:
        return empty_frame(name), AnalysisStatus(
            name,
            "refused",
            f"no model is scored in both spans ({span_txt}): before only {_names(only_before) or 'none'};"
            f" after only {_names(only_after) or 'none'}",
        )
    keys = ["domain", "task_kind", "horizon"]
    one_side = full.join(both.select(keys).unique(), on=keys, how="anti").select(keys).unique().sort(keys)
    groups = [" ".join(r) for r in one_side.iter_rows()]
    miss = f"; scored in one span only: {_names(groups)}" if groups else ""
    miss += f"; not compared (no before-span forecasts): {_names(only_after)}" if only_after else ""
    return both, AnalysisStatus(
        name,
        "ran",
        f"{len(have)} models x domain x kind x horizon scored in both spans ({span_txt};"
        f" {int(both['n_before'].sum())} before / {int(both['n_after'].sum())} after scores){miss}",
        both.height,
    )


def fact_check_ablation(
    scores: pl.DataFrame,
    forecasts: pl.DataFrame,
    checked: pl.DataFrame,
    *,
    filtered: str = "events",
    unfiltered: str = "events_unfiltered",
    partition_key: str = "all",
) -> pl.DataFrame:
    """``fact_check_ablation`` rows: per base model, the metric with the ``filtered`` context vs the
    ``unfiltered`` one on the tasks scored in both, and the number of distinct events in the unfiltered
    contexts that the checkers dropped as ``after_cutoff`` (leaks)."""
    leaked_ids = set(checked.filter(pl.col("drop_reason") == "after_cutoff")["event_id"])
    s = scores.with_columns(
        pl.col("model_id").map_elements(lambda m: split_model_id(m)[0], return_dtype=pl.Utf8).alias("base"),
        pl.col("model_id")
        .map_elements(lambda m: split_model_id(m)[1] or "", return_dtype=pl.Utf8)
        .alias("ck"),
    )
    fv = s.filter(pl.col("ck") == filtered)
    uv = s.filter(pl.col("ck") == unfiltered)
    j = fv.join(
        uv.select("base", "task_id", "metric", pl.col("value").alias("u")), on=["base", "task_id", "metric"]
    )
    rows = []
    for k, g in j.group_by(["base", "domain", "task_kind", "horizon", "metric"], maintain_order=True):
        ctx = forecasts.filter(
            pl.col("model_id") == f"{k[0]}:{unfiltered}", pl.col("task_id").is_in(g["task_id"])
        )
        ids = {
            e.get("event_id") for c in ctx["context"].drop_nulls() for e in json.loads(c).get("events", [])
        }
        vf, vu = float(g["value"].mean()), float(g["u"].mean())
        rows.append(
            {
                "model_id": k[0],
                "domain": k[1],
                "task_kind": k[2],
                "horizon": k[3],
                "metric": k[4],
                "n": g.height,
                "value_filtered": vf,
                "value_unfiltered": vu,
                "inflation": vu - vf,
                "n_leaked_events": len(ids & leaked_ids),
            }
        )
    return _frame("fact_check_ablation", rows, partition_key, _at(scores))


def alpha_consistency_run(
    scores: pl.DataFrame, *, partition_key: str = "all"
) -> tuple[pl.DataFrame, AnalysisStatus]:
    """:func:`alpha_consistency` with its status: refused, naming what is missing, when no forecaster was run
    with the ``alpha=<a>`` / ``other_alpha=<a>`` contexts (LLM forecasts with those context kinds, built from
    events that carry a sentiment); ran otherwise, naming a missing variant."""
    name = "alpha_consistency"
    out = alpha_consistency(scores, partition_key=partition_key) if scores.height else empty_frame(name)
    variants = set(out["variant"]) if out.height else set()
    miss = [v for v in ("target", "other_target") if v not in variants]
    return out, outcome(
        name,
        out,
        f"{out['model_id'].n_unique() if out.height else 0} models x {len(variants)} variants over"
        f" {out['alpha'].n_unique() if out.height else 0} alphas"
        + (
            f"; missing variant {', '.join(miss)} (context kind other_alpha)"
            if "other_target" in miss
            else ""
        ),
        "no scored forecast has an alpha=<a> or other_alpha=<a> context: run leaf_llm_forecasts with"
        " context_kinds alpha / other_alpha (needs an LLM model and fact-checked events with a sentiment)",
    )


def fact_check_ablation_run(
    scores: pl.DataFrame, forecasts: pl.DataFrame, checked: pl.DataFrame, *, partition_key: str = "all"
) -> tuple[pl.DataFrame, AnalysisStatus]:
    """:func:`fact_check_ablation` on whatever is stored, with its status naming the missing input: scored
    forecasts with context ``events_unfiltered``, with context ``events`` on the same tasks, fact-checked
    events (for the leak count)."""
    name = "fact_check_ablation"
    ck = (
        scores["model_id"].map_elements(lambda m: split_model_id(m)[1] or "", return_dtype=pl.Utf8)
        if scores.height
        else pl.Series([], dtype=pl.Utf8)
    )
    missing = [
        what
        for what, ok in (
            ("scored forecasts with context events_unfiltered", (ck == "events_unfiltered").any()),
            ("scored forecasts with context events", (ck == "events").any()),
            ("the unfiltered contexts in leaf_forecasts", forecasts.height > 0),
        )
        if not ok
    ]
    if missing:
        return empty_frame(name), AnalysisStatus(
            name,
            "refused",
            f"missing {'; '.join(missing)}: run leaf_llm_forecasts with context_kinds events and"
            " events_unfiltered (needs an LLM model)",
        )
    out = fact_check_ablation(scores, forecasts, checked, partition_key=partition_key)
    note = "" if checked.height else "; no fact_checked_events stored, so n_leaked_events counts none"
    return out, outcome(
        name,
        out,
        f"{out['model_id'].n_unique() if out.height else 0} models on"
        f" {int(out['n'].sum()) if out.height else 0} task scores in both contexts{note}",
        "no task is scored with both the events and the events_unfiltered context of one model",
    )


# ------------------------------------------------------------------------------------------------
# the report section
# ------------------------------------------------------------------------------------------------

# analysis table -> (heading, the paper's figure beside ours, columns shown)
REPORT_SECTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "event_filter_rates": (
        "Table 2 — events retrieved, fact-checked and kept",
        "LEAF Table 2: filter rates of the dual fact-check per domain",
        ("retriever", "domain", "n_entities", "n_events", "n_checked", "n_kept", "filter_rate", "n_days"),
    ),
    "predictability_accuracy": (
        "Table 12 — accuracy per predictability level",
        "LEAF §4.4: accuracy rises with the level the model gives the stock",
        ("model_id", "rater", "task_kind", "horizon", "level", "n", "accuracy", "level_correlation"),
    ),
    "alpha_consistency": (
        "§3.2 — error against the share alpha of sentiment-consistent events",
        "LEAF §3.2: correlation -0.967 (target's events), -0.537 (another target's)",
        ("model_id", "variant", "metric", "alpha", "n", "mean_error", "correlation"),
    ),
    "living_data_ablation": (
        "Table 9 — living data: accuracy before the training cut-offs vs the live span",
        "LEAF §4.5: 147% relative improvement on the old span (contamination)",
        (
            "model_id",
            "domain",
            "task_kind",
            "horizon",
            "accuracy_before",
            "accuracy_after",
            "n_before",
            "n_after",
            "relative_improvement_pct",
        ),
    ),
    "fact_check_ablation": (
        "Fig. 6 — unfiltered vs fact-checked events",
        "LEAF §4.5: unfiltered events inflate the metric through leaked (after-cutoff) events",
        (
            "model_id",
            "domain",
            "task_kind",
            "horizon",
            "metric",
            "n",
            "value_filtered",
            "value_unfiltered",
            "inflation",
            "n_leaked_events",
        ),
    ),
}
REPORT_MAX_ROWS = 40


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def render_report(tables: Mapping[str, pl.DataFrame | None], status: pl.DataFrame | None) -> str:
    """Markdown of the event analyses (:data:`REPORT_SECTIONS`): per analysis its stored rows (first
    :data:`REPORT_MAX_ROWS`) beside the paper's figure, or ``not materialized: <reason>`` when the table is
    absent (``None``: its asset never ran), the status says refused, or the table holds no rows. ``status``:
    ``event_analysis_status`` rows (None when absent)."""
    st = (
        {r["analysis"]: r for r in status.iter_rows(named=True)}
        if status is not None and status.height
        else {}
    )
    out = [
        "# LEAF event analyses on the stored tables",
        "",
        "Generated by `leaf-live run` / `leaf-live report`; every analysis either ran (its rows below) or"
        " says why not (table `event_analysis_status`).",
        "",
    ]
    for table, (head, paper, cols) in REPORT_SECTIONS.items():
        out += [f"## {head}", "", f"Paper: {paper}.", ""]
        frame, row = tables.get(table), st.get(table)
        if frame is None:
            out += [f"not materialized: the {table} asset has not run on this database (`leaf-live run`)", ""]
            continue
        if row is not None and row["status"] == "refused":
            out += [f"not materialized: {row['reason']}", ""]
            continue
        if frame.height == 0:
            why = row["reason"] if row is not None else f"{table} holds no rows and no status was recorded"
            out += [f"not materialized: {why}", ""]
            continue
        if row is not None:
            out += [f"Ran: {row['reason']}.", ""]
        shown = [c for c in cols if c in frame.columns]
        rows = frame.sort(shown[:4]).head(REPORT_MAX_ROWS)
        out += ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
        out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows.select(shown).iter_rows()]
        if frame.height > REPORT_MAX_ROWS:
            out.append(f"\n({frame.height - REPORT_MAX_ROWS} more rows in table {table})")
        out.append("")
    return "\n".join(out)


__all__ = [
    "ALPHAS",
    "REPORT_SECTIONS",
    "render_report",
    "AnalysisStatus",
    "alpha_consistency_run",
    "fact_check_ablation_run",
    "living_data_run",
    "outcome",
    "status_frame",
    "alpha_consistency",
    "alpha_contexts",
    "fact_check_ablation",
    "filter_rates",
    "living_data_ablation",
    "pearson",
    "predictability_accuracy",
    "retrieval_costs",
    "split_model_id",
]
