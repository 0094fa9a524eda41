"""Dual fact-check (LEAF §3.2, Fig. 8, 18-19): two independent checkers on different models verify each
retrieved event and date it; the event is kept only on strict consensus.

Keep rule (:func:`keep_decision`; the authors' ``load_and_filter_events`` keeps ``c_status and g_status and
c_date == g_date``, and LEAF adds the cutoff): both verdicts valid, both factual, both realisation dates
equal, and that date not after the cutoff day (the retrieval interval's last day). The first failing condition
is the drop reason, in this order: ``invalid_a``, ``invalid_b``, ``not_factual_a``, ``not_factual_b``,
``date_mismatch``, ``after_cutoff``. A kept event is dated by the agreed realisation date (not the date the
retrieval agent claimed), which is what catches Fig. 18's leak: text claiming 2025-06-13 whose content
was realised on 2025-09-07. Near-duplicates merged before checking are recorded with ``merged`` and cost no
call.

Both checkers run concurrently with web search (no date filter: verifying a date needs later sources too);
each verdict, its reasoning, citations and call id are stored in ``fact_checks``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from datetime import date

import polars as pl

from leaf_live.core import pit
from leaf_live.core.llm import CallResult, LLMClient, ModelSpec
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event.agents.parsing import Verdict, parse_fact_check
from leaf_live.event.agents.prompts import fact_check_messages
from leaf_live.event.agents.retrieval import interval_bounds

DROP_REASONS = (
    "invalid_a",
    "invalid_b",
    "not_factual_a",
    "not_factual_b",
    "date_mismatch",
    "after_cutoff",
    "merged",
)


def keep_decision(a: Verdict, b: Verdict, cutoff_day: date) -> tuple[bool, str | None, date | None]:
    """(kept, drop reason, agreed realisation date) for two verdicts (module doc order of reasons)."""
    if not a.valid:
        return False, "invalid_a", None
    if not b.valid:
        return False, "invalid_b", None
    if not a.factual:
        return False, "not_factual_a", None
    if not b.factual:
        return False, "not_factual_b", None
    if a.realization_date != b.realization_date:
        return False, "date_mismatch", None
    if a.realization_date is None or a.realization_date > cutoff_day:
        return False, "after_cutoff", a.realization_date
    return True, None, a.realization_date


def _check_row(ev: Mapping, slot: str, spec: ModelSpec, res: CallResult, v: Verdict) -> dict:
    return {
        "partition_key": ev["partition_key"],
        "event_id": ev["event_id"],
        "checker_slot": slot,
        "checker": spec.model_id,
        "factual": v.factual,
        "realization_date": v.realization_date,
        "reasoning": v.reasoning,
        "citations": json.dumps([c for c in res.citations if c.get("url")], ensure_ascii=False),
        "call_id": res.record.call_id,
        "valid": v.valid,
        "invalid_reason": v.invalid_reason,
        "available_at": res.record.completed_at,
    }


def _decision_row(
    ev: Mapping,
    a: ModelSpec | None,
    b: ModelSpec | None,
    kept: bool,
    reason: str | None,
    agreed: date | None,
    available_at,
) -> dict:
    return {
        "partition_key": ev["partition_key"],
        "event_id": ev["event_id"],
        "retriever": ev["retriever"],
        "domain": ev["domain"],
        "target_id": ev["target_id"],
        "event_date": agreed,
        "claimed_date": ev["event_date"],
        "description": ev["description"],
        "sentiment": ev["sentiment"],
        "impact_type": ev["impact_type"],
        "weekend": agreed.weekday() >= 5 if agreed else ev.get("weekend"),
        "check_mode": "dual",
        "checker_a": a.model_id if a else None,
        "checker_b": b.model_id if b else None,
        "cutoff": interval_bounds(ev["interval_end"], ev["interval_end"])[1],
        "kept": kept,
        "drop_reason": reason,
        "available_at": available_at,
    }


async def fact_check_events(
    client: LLMClient,
    checker_a: ModelSpec,
    checker_b: ModelSpec,
    events: pl.DataFrame,
    *,
    merges: pl.DataFrame | None = None,
    target_names: Mapping[str, str] | None = None,
    run_id: str | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Check every valid event of ``events`` (``retrieved_events`` rows) with both checkers ->
    (``fact_checks``, ``fact_checked_events``) frames. Events listed in ``merges`` get a ``merged`` decision
    and no call; the cutoff day of an event is its ``interval_end``. Raises ``ValueError`` when the two
    checkers are the same model or columns are missing (before any call)."""
    if checker_a.litellm_model == checker_b.litellm_model:
        raise ValueError(
            f"the two fact-checkers must be different models, got {checker_a.litellm_model} twice"
        )
    pit.require_columns(
        events,
        [
            "partition_key",
            "event_id",
            "retriever",
            "domain",
            "target_id",
            "interval_end",
            "event_date",
            "description",
            "sentiment",
            "impact_type",
            "valid",
            "available_at",
        ],
        "retrieved_events",
    )
    run_id = run_id or uuid.uuid4().hex
    names = dict(target_names or {})
    merged = set(merges["event_id"].to_list()) if merges is not None and merges.height else set()
    todo = events.filter(pl.col("valid")).to_dicts()
    checks: list[dict] = []
    decisions: list[dict] = []

    async def one(ev: dict) -> None:
        if ev["event_id"] in merged:
            decisions.append(_decision_row(ev, None, None, False, "merged", None, ev["available_at"]))
            return
        name = names.get(ev["target_id"], ev["target_id"])
        msgs = fact_check_messages(name, ev["event_date"], ev["description"])
        ra, rb = await asyncio.gather(
            client.complete(checker_a, msgs, role="checker", run_id=run_id, prompt_group="fact_check:a"),
            client.complete(checker_b, msgs, role="checker", run_id=run_id, prompt_group="fact_check:b"),
        )
        va, vb = (
            parse_fact_check(
                r.content,
                finish_reason=r.record.finish_reason,
                refusal=r.refusal,
                ok=r.ok,
                error=r.record.error,
            )
            for r in (ra, rb)
        )
        checks.extend([_check_row(ev, "a", checker_a, ra, va), _check_row(ev, "b", checker_b, rb, vb)])
        kept, reason, agreed = keep_decision(va, vb, ev["interval_end"])
        decisions.append(
            _decision_row(
                ev,
                checker_a,
                checker_b,
                kept,
                reason,
                agreed,
                max(ra.record.completed_at, rb.record.completed_at, ev["available_at"]),
            )
        )

    await asyncio.gather(*(one(ev) for ev in todo))
    fc = (
        conform("fact_checks", pl.DataFrame(checks, schema=empty_frame("fact_checks").schema))
        if checks
        else empty_frame("fact_checks")
    )
    fe = (
        conform(
            "fact_checked_events", pl.DataFrame(decisions, schema=empty_frame("fact_checked_events").schema)
        )
        if decisions
        else empty_frame("fact_checked_events")
    )
    return fc.sort("event_id", "checker_slot"), fe.sort("event_id")


__all__ = ["DROP_REASONS", "fact_check_events", "keep_decision"]
