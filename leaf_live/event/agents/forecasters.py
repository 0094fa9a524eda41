"""LLM forecasters through the forecaster contract, with and without events (LEAF §3.1, §4.1-4.3, App. C.3).

:class:`LLMForecaster` answers every task kind (trend3/trend5 class, series values over the horizon, event
P(YES)) from the task's frozen bundle plus, for ``context_kind != "ts"``, the events known by the cutoff
(:func:`events_for_task`). Per task it runs ``trials`` calls (§4.1: 3) with a 4,096-token output budget and no
web search (a search could see past the cutoff); each trial is parsed strictly (invalid with its reason,
``leaf_forecast_trials`` rows) and the ``leaf_forecasts`` row averages the valid trials: the mean path, the
mean probability, the modal class (ties go to the class nearest the mean class index, then the lower).

Frozen context: the row stores ``context`` (the events given: id, date, text, sentiment, and where they came
from) and ``context_hash`` = sha256 of the task bundle text + the context text, so a forecast can be replayed
from ``forecast_tasks`` (by ``bundle_hash``) and its context, and audited. :func:`context_leaks` is the
blocking check: a context event dated after the cutoff day, or (strict mode) known after the cutoff.

Point in time: an event enters a task's context when it is kept, its (agreed) date is within the look-back and
on or before the cutoff day (the cutoff's calendar day in the target's zone) and, in strict mode
(``require_known_by_cutoff``, the default), its ``available_at`` is at or before the cutoff. Retrospective
runs of events retrieved after the fact (the paper's protocol: date-restricted search + dual fact-check) pass
``require_known_by_cutoff=False``; the context records which rule applied.

``model_id`` = ``<provider/model@design>:<context_kind>`` (``:ts``, ``:events``, ``:events_unfiltered``,
``:alpha=0.6`` ...), so the leaderboard ranks the variants side by side; LLM rows are partitioned
``llm:<cutoff day>`` (:func:`llm_partition_key`) so a backfill of one day replaces only that day.
:func:`discard_report` applies §4.1's rule (a model is discarded when more than a third of its outputs are
invalid).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.core.llm import LLMClient, ModelSpec
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event.agents.parsing import Prediction, parse_levels, parse_prediction
from leaf_live.event.agents.prompts import forecast_messages, predictability_messages
from leaf_live.event.bundles import event_lookback_days
from leaf_live.event.catalog import LOOKBACK_DAYS
from leaf_live.event.tasks import classes_for

FORECAST_MAX_TOKENS = 4096  # §4.1
TRIALS = 3  # §4.1
DISCARD_SHARE = 1.0 / 3.0  # §4.1
_TASK_COLS = [
    "task_id",
    "domain",
    "target_id",
    "task_kind",
    "horizon",
    "horizon_steps",
    "frequency",
    "cutoff",
    "bundle",
    "bundle_hash",
]


def llm_partition_key(cutoff: datetime) -> str:
    """``llm:<UTC day of the cutoff>``: the slice of ``leaf_forecasts`` a one-day LLM backfill replaces."""
    return f"llm:{pit.to_utc(cutoff):%Y-%m-%d}"


def cutoff_day(cutoff: datetime, tz: str = "America/New_York") -> date:
    """The calendar day a cutoff closes in ``tz`` (16:00 New York -> that day; local midnight -> the day
    before)."""
    return (pit.to_utc(cutoff) - timedelta(microseconds=1)).astimezone(ZoneInfo(tz)).date()


def events_for_task(
    events: pl.DataFrame,
    target_id: str,
    cutoff: datetime,
    *,
    tz: str = "America/New_York",
    lookback_days: int | None = LOOKBACK_DAYS,
    require_known_by_cutoff: bool = True,
    kept_only: bool = True,
) -> list[dict]:
    """The events a task may see (module doc), oldest first: dicts ``event_id, date, description, sentiment``.

    ``events``: ``fact_checked_events`` rows (or any frame with ``event_id, target_id, event_date,
    description, sentiment, available_at`` and optionally ``kept``). ``lookback_days=None`` takes every
    earlier event."""
    pit.require_columns(
        events, ["event_id", "target_id", "event_date", "description", "available_at"], "events"
    )
    day = cutoff_day(cutoff, tz)
    f = events.filter(
        pl.col("target_id") == target_id, pl.col("event_date").is_not_null(), pl.col("event_date") <= day
    )
    if lookback_days is not None:
        f = f.filter(pl.col("event_date") > day - timedelta(days=lookback_days))
    if kept_only and "kept" in f.columns:
        f = f.filter(pl.col("kept"))
    if require_known_by_cutoff:
        f = pit.known_by(f, cutoff)
    sent = f["sentiment"] if "sentiment" in f.columns else pl.Series([None] * f.height)
    return [
        {"event_id": e, "date": d.isoformat(), "description": t, "sentiment": s}
        for e, d, t, s in sorted(
            zip(f["event_id"], f["event_date"], f["description"], sent), key=lambda r: (r[1], r[0])
        )
    ]


def freeze_context(task_bundle: str, context: Mapping[str, object]) -> tuple[str, str]:
    """(context JSON text, sha256 of task bundle text + context text)."""
    text = json.dumps(context, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text, hashlib.sha256((task_bundle + "\n" + text).encode("utf-8")).hexdigest()


def _modal_class(classes: Sequence[str], order: Sequence[str]) -> str:
    c = Counter(classes)
    top = max(c.values())
    tied = [k for k in c if c[k] == top]
    if len(tied) == 1:
        return tied[0]
    mean = float(np.mean([order.index(k) for k in classes]))
    return min(tied, key=lambda k: (abs(order.index(k) - mean), order.index(k)))


def aggregate_trials(kind: str, preds: Sequence[Prediction], order: Sequence[str] = ()) -> dict:
    """The averaged forecast of a task's valid trials (module doc); all-invalid -> invalid with the first
    reason."""
    ok = [p for p in preds if p.valid]
    if not ok:
        return {
            "valid": False,
            "invalid_reason": (
                f"all {len(preds)} trials invalid; first: {preds[0].invalid_reason}" if preds else "no trials"
            ),
        }
    if kind in ("trend3", "trend5"):
        return {"valid": True, "predicted_class": _modal_class([p.predicted_class for p in ok], order)}
    if kind == "event":
        return {"valid": True, "probability": float(np.mean([p.probability for p in ok]))}
    return {"valid": True, "point": [float(x) for x in np.mean([p.point for p in ok], axis=0)]}


class LLMForecaster:
    """An LLM through the forecaster contract (module doc). ``events`` is required unless
    ``context_kind='ts'``; ``contexts`` (task_id -> event dicts) overrides the selection (the
    alpha-consistency contexts). ``target_names`` maps target ids to the names the prompt uses; ``timezones``
    target ids to IANA zones (for the cutoff day; default New York)."""

    def __init__(
        self,
        client: LLMClient,
        spec: ModelSpec,
        *,
        context_kind: str = "ts",
        events: pl.DataFrame | None = None,
        contexts: Mapping[str, Sequence[Mapping[str, object]]] | None = None,
        trials: int = TRIALS,
        max_tokens: int = FORECAST_MAX_TOKENS,
        target_names: Mapping[str, str] | None = None,
        timezones: Mapping[str, str] | None = None,
        lookback_days: int | None = LOOKBACK_DAYS,
        require_known_by_cutoff: bool = True,
        events_source: str = "fact_checked_events",
    ) -> None:
        if context_kind != "ts" and events is None and contexts is None:
            raise ValueError(f"context_kind={context_kind!r} needs events or contexts")
        if trials < 1:
            raise ValueError(f"trials={trials}: at least 1")
        self.client, self.spec, self.context_kind = client, spec, context_kind
        self.events, self.contexts = events, dict(contexts or {})
        self.trials, self.max_tokens = trials, max_tokens
        self.names, self.zones = dict(target_names or {}), dict(timezones or {})
        self.lookback_days, self.strict, self.events_source = (
            lookback_days,
            require_known_by_cutoff,
            events_source,
        )
        self.model_id = f"{spec.model_id}:{context_kind}"
        self.last_trials: pl.DataFrame = empty_frame("leaf_forecast_trials")

    def context_for(self, task: Mapping) -> dict:
        """The frozen context (besides the bundle) of one task."""
        if self.context_kind == "ts":
            evs: list = []
        elif task["task_id"] in self.contexts:
            evs = [dict(e) for e in self.contexts[task["task_id"]]]
        else:
            # questions: every earlier event; mid caps: the series' three months (bundles.event_lookback_days)
            lb = (
                event_lookback_days(task["domain"])
                if task["domain"] in ("event", "mid_cap")
                else self.lookback_days
            )
            evs = events_for_task(
                self.events,
                task["target_id"],
                task["cutoff"],  # type: ignore[arg-type]
                tz=self.zones.get(task["target_id"], "America/New_York"),
                lookback_days=lb,
                require_known_by_cutoff=self.strict,
            )
        return {
            "context_kind": self.context_kind,
            "events": evs,
            "events_source": None if self.context_kind == "ts" else self.events_source,
            "cutoff_day": (
                cutoff_day(task["cutoff"], self.zones.get(task["target_id"], "America/New_York")).isoformat()
            ),
            "rule": (
                "event_date<=cutoff_day"
                + (" & available_at<=cutoff" if self.strict and task["task_id"] not in self.contexts else "")
            ),
        }

    async def _task(self, task: dict, run_id: str) -> tuple[dict, list[dict]]:
        bundle = json.loads(task["bundle"])
        ctx = self.context_for(task)
        ctx_text, ctx_hash = freeze_context(task["bundle"], ctx)
        msgs = forecast_messages(
            task,
            bundle,
            ctx["events"],
            self.names.get(task["target_id"], task["target_id"]),
            with_events=self.context_kind != "ts",
        )
        kind = task["task_kind"]
        order = classes_for(kind) if kind.startswith("trend") else ()
        results = await asyncio.gather(
            *(
                self.client.complete(
                    self.spec,
                    msgs,
                    role="forecaster",
                    run_id=run_id,
                    prompt_group=f"forecast:{kind}",
                    web_search=False,
                    max_tokens=self.max_tokens,
                )
                for _ in range(self.trials)
            )
        )
        pk = llm_partition_key(task["cutoff"])
        preds, trial_rows = [], []
        for k, r in enumerate(results, 1):
            p = parse_prediction(
                r.content,
                kind,
                steps=int(task["horizon_steps"]),
                classes=order,
                finish_reason=r.record.finish_reason,
                refusal=r.refusal,
                ok=r.ok,
                error=r.record.error,
            )
            preds.append(p)
            trial_rows.append(
                {
                    "partition_key": pk,
                    "model_id": self.model_id,
                    "task_id": task["task_id"],
                    "trial": k,
                    "context_hash": ctx_hash,
                    "call_id": r.record.call_id,
                    "valid": p.valid,
                    "invalid_reason": p.invalid_reason,
                    "predicted_class": p.predicted_class,
                    "point": list(p.point) if p.point else None,
                    "probability": p.probability,
                    "prompt_tokens": r.record.prompt_tokens,
                    "completion_tokens": r.record.completion_tokens,
                    "issued_at": r.record.completed_at,
                    "available_at": r.record.completed_at,
                }
            )
        issued = max(r.record.completed_at for r in results)
        agg = aggregate_trials(kind, preds, order)
        row = {
            "partition_key": pk,
            "model_id": self.model_id,
            "task_id": task["task_id"],
            "bundle_hash": task["bundle_hash"],
            "issued_at": issued,
            "valid": agg["valid"],
            "invalid_reason": agg.get("invalid_reason"),
            "point": agg.get("point"),
            "quantiles": None,
            "predicted_class": agg.get("predicted_class"),
            "probability": agg.get("probability"),
            "context_kind": self.context_kind,
            "context": ctx_text,
            "context_hash": ctx_hash,
            "n_trials": self.trials,
            "n_valid_trials": sum(p.valid for p in preds),
            "available_at": issued,
        }
        return row, trial_rows

    async def run(self, tasks: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(``leaf_forecasts`` rows, ``leaf_forecast_trials`` rows) for ``tasks``; never raises for model
        output."""
        pit.require_columns(tasks, _TASK_COLS, "forecast_tasks")
        run_id = uuid.uuid4().hex
        out = await asyncio.gather(*(self._task(t, run_id) for t in tasks.select(_TASK_COLS).to_dicts()))
        rows = [r for r, _ in out]
        trials = [t for _, ts in out for t in ts]
        # producer stays NULL: the writing stage stamps its slice (as for the baselines)
        f = (
            conform(
                "leaf_forecasts",
                pl.DataFrame(rows, schema=empty_frame("leaf_forecasts").schema),
                deferred=("producer",),
            )
            if rows
            else empty_frame("leaf_forecasts")
        )
        tr = (
            conform(
                "leaf_forecast_trials",
                pl.DataFrame(trials, schema=empty_frame("leaf_forecast_trials").schema),
            )
            if trials
            else empty_frame("leaf_forecast_trials")
        )
        self.last_trials = tr
        return f, tr

    async def aforecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return (await self.run(tasks))[0]

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        """The contract's synchronous method (a fresh event loop); the trials are kept in ``last_trials``."""
        return asyncio.run(self.aforecast(tasks))


def discard_report(trials: pl.DataFrame) -> pl.DataFrame:
    """Per model: outputs, invalid outputs, their share and ``discarded`` = share > 1/3 (§4.1)."""
    return (
        trials.group_by("model_id")
        .agg(pl.len().alias("n_outputs"), (~pl.col("valid")).sum().alias("n_invalid"))
        .with_columns((pl.col("n_invalid") / pl.col("n_outputs")).alias("invalid_share"))
        .with_columns((pl.col("invalid_share") > DISCARD_SHARE).alias("discarded"))
        .sort("model_id")
    )


def context_leaks(
    forecasts: pl.DataFrame,
    tasks: pl.DataFrame,
    events: pl.DataFrame | None = None,
    tz: str = "America/New_York",
) -> pl.DataFrame:
    """Forecast rows whose stored context holds an event dated after the task's cutoff day, or (when
    ``events`` is given and the context's rule is strict) an event knowable after the cutoff: the blocking
    check. Empty when every context is point-in-time clean. Columns: model_id, task_id, event_id, why."""
    avail = dict(zip(events["event_id"], events["available_at"])) if events is not None else {}
    cut = dict(zip(tasks["task_id"], tasks["cutoff"]))
    bad = []
    for r in forecasts.filter(pl.col("context").is_not_null()).iter_rows(named=True):
        c = json.loads(r["context"])
        t = cut.get(r["task_id"])
        if t is None:
            continue
        day = cutoff_day(t, tz)
        for e in c.get("events", []):
            if date.fromisoformat(e["date"]) > day:
                bad.append(
                    {
                        "model_id": r["model_id"],
                        "task_id": r["task_id"],
                        "event_id": e.get("event_id"),
                        "why": f"event dated {e['date']} after the cutoff day {day}",
                    }
                )
            elif (
                "available_at<=cutoff" in c.get("rule", "")
                and e.get("event_id") in avail
                and avail[e["event_id"]] > t
            ):
                bad.append(
                    {
                        "model_id": r["model_id"],
                        "task_id": r["task_id"],
                        "event_id": e["event_id"],
                        "why": "event known after the cutoff",
                    }
                )
    return pl.DataFrame(
        bad, schema={"model_id": pl.Utf8, "task_id": pl.Utf8, "event_id": pl.Utf8, "why": pl.Utf8}
    )


async def rate_predictability(
    client: LLMClient,
    spec: ModelSpec,
    tasks: pl.DataFrame,
    *,
    events: pl.DataFrame | None = None,
    context_kind: str = "ts",
    lookback_days: int = LOOKBACK_DAYS,
    require_known_by_cutoff: bool = True,
) -> pl.DataFrame:
    """``predictability_ratings`` rows: for each (domain, cutoff) of the market trend tasks in ``tasks``, one
    call rating every stock on 5 levels (LEAF §3.2, §4.4). Invalid answers give every stock the reason."""
    pit.require_columns(tasks, _TASK_COLS, "forecast_tasks")
    mk = tasks.filter(
        pl.col("domain").is_in(["large_cap", "mid_cap"]), pl.col("task_kind").str.starts_with("trend")
    )
    run_id = uuid.uuid4().hex
    groups = [
        (k, g.unique("target_id", keep="first").sort("target_id"))
        for k, g in mk.group_by(["domain", "cutoff"])
    ]

    async def one(domain: str, cutoff: datetime, g: pl.DataFrame) -> list[dict]:
        stocks = [
            {
                "target_id": r["target_id"],
                "series": json.loads(r["bundle"])["series"],
                "events": (
                    events_for_task(
                        events,
                        r["target_id"],
                        cutoff,
                        lookback_days=lookback_days,
                        require_known_by_cutoff=require_known_by_cutoff,
                    )
                    if (events is not None and context_kind != "ts")
                    else []
                ),
            }
            for r in g.iter_rows(named=True)
        ]
        msgs = predictability_messages(cutoff, stocks, with_events=context_kind != "ts")
        res = await client.complete(
            spec,
            msgs,
            role="rater",
            run_id=run_id,
            prompt_group="predictability",
            web_search=False,
            max_tokens=FORECAST_MAX_TOKENS,
        )
        ids = [s["target_id"] for s in stocks]
        lv = parse_levels(
            res.content,
            ids,
            finish_reason=res.record.finish_reason,
            refusal=res.refusal,
            ok=res.ok,
            error=res.record.error,
        )
        return [
            {
                "partition_key": llm_partition_key(cutoff),
                "model_id": spec.model_id,
                "context_kind": context_kind,
                "domain": domain,
                "cutoff": cutoff,
                "target_id": t,
                "level": lv.levels[t],
                "call_id": res.record.call_id,
                "valid": lv.levels[t] is not None,
                "invalid_reason": lv.reasons[t],
                "available_at": res.record.completed_at,
            }
            for t in ids
        ]

    out = await asyncio.gather(*(one(k[0], k[1], g) for k, g in groups))
    rows = [r for rs in out for r in rs]
    if not rows:
        return empty_frame("predictability_ratings")
    return conform(
        "predictability_ratings", pl.DataFrame(rows, schema=empty_frame("predictability_ratings").schema)
    )


__all__ = [
    "DISCARD_SHARE",
    "FORECAST_MAX_TOKENS",
    "LLMForecaster",
    "TRIALS",
    "aggregate_trials",
    "context_leaks",
    "cutoff_day",
    "discard_report",
    "events_for_task",
    "freeze_context",
    "llm_partition_key",
    "rate_predictability",
]
