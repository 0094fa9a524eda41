"""With-events bundles: the fact-checked events every task may see at its cutoff (LEAF §3.1-3.2, §4.1).

A task's own bundle (``forecast_tasks.bundle``) is frozen when the task is built and holds only its series;
the events arrive later (weekly retrieval, dual fact-check, or a recorded transcript such as SEER's). This
module freezes, per task, the events a forecaster "with events" is given, by the same rule as the LLM
forecasters (:func:`leaf_live.event.agents.forecasters.events_for_task`): kept, dated within the task's
event look-back (:func:`event_lookback_days`) and on or before the cutoff day (the cutoff's calendar day
in the target's zone), and stored (``available_at``) by the cutoff. The result is the ``event_bundles``
table, one row per task, so anyone can export the with-events bundle of a day and forecast it.

A task whose look-back no retrieval covers (no retrieved-event interval of its target overlaps it and no
retrieval slice of the target's weeks ran) gets a row with no events and a ``note`` saying so, instead of
silently having none.

Look-backs (:func:`event_lookback_days`): 14 days for the daily and hourly tasks (§4.1's look-back), the
three months of the series for the monthly mid-cap tasks (LEAF retrieves weekly for its monthly tasks, so the
look-back holds about 13 weekly retrievals), and every earlier event for prediction-market questions (their
retrieval runs weekly per question from its open).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import date, timedelta
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event import catalog

MID_CAP_EVENT_LOOKBACK_DAYS = (
    92  # three months: the mid-cap series' look-back (catalog.MID_CAP_LOOKBACK_MONTHS)
)
EARLIEST = date(1970, 1, 1)  # "every earlier event" (questions)


def event_lookback_days(domain: str) -> int | None:
    """Days of events a task of ``domain`` may see before (and including) its cutoff day; None = all."""
    if domain == "event":
        return None
    if domain == "mid_cap":
        return MID_CAP_EVENT_LOOKBACK_DAYS
    return catalog.LOOKBACK_DAYS


def _zones() -> dict[str, str]:
    return {t.target_id: t.timezone for t in catalog.ALL_TARGETS}


def cutoff_days(tasks: pl.DataFrame, zones: Mapping[str, str] | None = None) -> pl.DataFrame:
    """``tasks`` (task_id, domain, target_id, cutoff) with ``lookback_start`` / ``lookback_end`` (dates): the
    cutoff's calendar day in the target's zone (an instant at local midnight belongs to the day before) and
    the first day of the look-back."""
    zones = dict(_zones(), **(zones or {}))
    ends, starts = [], []
    for dom, tgt, c in zip(tasks["domain"], tasks["target_id"], tasks["cutoff"]):
        day = (
            (pit.to_utc(c) - timedelta(microseconds=1))
            .astimezone(ZoneInfo(zones.get(tgt, "America/New_York")))
            .date()
        )
        lb = event_lookback_days(dom)
        ends.append(day)
        starts.append(EARLIEST if lb is None else day - timedelta(days=lb - 1))
    return tasks.with_columns(
        pl.Series("lookback_start", starts, dtype=pl.Date), pl.Series("lookback_end", ends, dtype=pl.Date)
    )


def retrieval_coverage(retrieved: pl.DataFrame, retrieval_keys: list[str] | None = None) -> pl.DataFrame:
    """Intervals (target_id, start, end) some retrieval searched: the distinct ``interval_start`` ..
    ``interval_end`` of ``retrieved_events`` rows, plus the weeks of retrieval slices that found nothing
    (``retrieval_keys``: ``<Monday>|<target>`` keys of ``llm_calls`` slices ``retrieval:<key>``)."""
    cov = retrieved.select(
        "target_id", pl.col("interval_start").alias("start"), pl.col("interval_end").alias("end")
    ).unique()
    extra = []
    for k in retrieval_keys or []:
        day, _, target = k.partition("|")
        try:
            d = date.fromisoformat(day)
        except ValueError:
            continue
        extra.append({"target_id": target, "start": d, "end": d + timedelta(days=6)})
    if extra:
        cov = pl.concat([cov, pl.DataFrame(extra, schema=cov.schema)]).unique()
    return cov


def event_bundles(
    tasks: pl.DataFrame,
    events: pl.DataFrame,
    coverage: pl.DataFrame,
    *,
    zones: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """``event_bundles`` rows (module doc), one per task.

    ``tasks``: ``forecast_tasks`` rows (partition_key, task_id, domain, target_id, cutoff, bundle_hash);
    ``events``: ``fact_checked_events`` rows (event_id, retriever, target_id, event_date, description,
    sentiment, kept, available_at); ``coverage``: :func:`retrieval_coverage`. Vectorised (one join), equal to
    ``events_for_task`` per task (tests/event/test_event_bundles.py). Raises ``ValueError`` naming a missing
    column."""
    pit.require_columns(
        tasks, ["partition_key", "task_id", "domain", "target_id", "cutoff", "bundle_hash"], "forecast_tasks"
    )
    pit.require_columns(
        events,
        ["event_id", "retriever", "target_id", "event_date", "description", "kept", "available_at"],
        "fact_checked_events",
    )
    if tasks.height == 0:
        return empty_frame("event_bundles")
    t = cutoff_days(
        tasks.select("partition_key", "task_id", "domain", "target_id", "cutoff", "bundle_hash"), zones
    )
    sent = pl.col("sentiment") if "sentiment" in events.columns else pl.lit(None, pl.Utf8)
    ev = events.filter(pl.col("kept"), pl.col("event_date").is_not_null()).select(
        "event_id",
        "retriever",
        "target_id",
        "event_date",
        "description",
        sent.alias("sentiment"),
        pl.col("available_at").alias("ev_at"),
    )
    j = t.select("task_id", "target_id", "cutoff", "lookback_start", "lookback_end").join(
        ev, on="target_id", how="inner"
    )
    j = j.filter(
        pl.col("event_date").is_between(pl.col("lookback_start"), pl.col("lookback_end")),
        pl.col("ev_at") <= pl.col("cutoff"),
    ).sort("task_id", "event_date", "event_id")
    per: dict[str, list[dict]] = {}
    rets: dict[str, set[str]] = {}
    for tid, eid, d, text, s, r in zip(
        j["task_id"], j["event_id"], j["event_date"], j["description"], j["sentiment"], j["retriever"]
    ):
        per.setdefault(tid, []).append(
            {"event_id": eid, "date": d.isoformat(), "description": text, "sentiment": s, "retriever": r}
        )
        rets.setdefault(tid, set()).add(r)
    cov_by: dict[str, list[tuple[date, date]]] = {}
    for tgt, a, b in zip(coverage["target_id"], coverage["start"], coverage["end"]):
        cov_by.setdefault(tgt, []).append((a, b))
    rows = []
    for r in t.iter_rows(named=True):
        evs = per.get(r["task_id"], [])
        text = json.dumps(evs, ensure_ascii=False, separators=(",", ":"))
        note = None
        if not evs:
            lo, hi = r["lookback_start"], r["lookback_end"]
            covered = any(a <= hi and b >= lo for a, b in cov_by.get(r["target_id"], []))
            span = f"{lo}..{hi}" if lo != EARLIEST else f"up to {hi}"
            note = (
                f"retrieval covered {r['target_id']} {span}; no kept event dated in it stored by the cutoff"
                if covered
                else f"no retrieval covers {r['target_id']} {span}"
            )
        rows.append(
            {
                "partition_key": r["partition_key"],
                "task_id": r["task_id"],
                "domain": r["domain"],
                "target_id": r["target_id"],
                "cutoff": r["cutoff"],
                "lookback_start": r["lookback_start"],
                "lookback_end": r["lookback_end"],
                "n_events": len(evs),
                "retrievers": json.dumps(sorted(rets.get(r["task_id"], ()))),
                "events": text,
                "bundle_hash": r["bundle_hash"],
                "events_hash": hashlib.sha256((r["bundle_hash"] + "\n" + text).encode("utf-8")).hexdigest(),
                "note": note,
            }
        )
    out = pl.DataFrame(
        rows, schema={k: v for k, v in empty_frame("event_bundles").schema.items() if k != "available_at"}
    )
    # a bundle is knowable at its cutoff (its events were all stored by then)
    return conform("event_bundles", out.with_columns(pl.col("cutoff").alias("available_at")))


def coverage_summary(bundles: pl.DataFrame) -> pl.DataFrame:
    """Per domain: tasks, tasks with events, tasks whose look-back no retrieval covers, mean events."""
    return (
        bundles.group_by("domain")
        .agg(
            pl.len().alias("tasks"),
            (pl.col("n_events") > 0).sum().alias("with_events"),
            pl.col("note").str.starts_with("no retrieval").sum().alias("no_retrieval"),
            pl.col("n_events").mean().alias("mean_events"),
        )
        .sort("domain")
    )


__all__ = [
    "MID_CAP_EVENT_LOOKBACK_DAYS",
    "coverage_summary",
    "cutoff_days",
    "event_bundles",
    "event_lookback_days",
    "retrieval_coverage",
]
