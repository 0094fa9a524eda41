"""The retrieval agent (LEAF §3.2, Fig. 2 and 7): several rounds of time-restricted search for one target and
interval; each round sees the events found so far and must return only new ones.

Backends (both through the one call path, :class:`leaf_live.core.llm.LLMClient`):

* ``web_search``: the model's own provider search (OpenAI web search, Anthropic web-search tool, Gemini
  grounding restricted to the interval by ``timeRangeFilter``), citations kept from the response;
* ``offline_store``: a :class:`~leaf_live.event.docstore.DocumentStore` searched at the interval's end (no
  document published after it can be returned); the documents go into the prompt and the model answers
  without web search, citing document ids.

A round's answer is parsed strictly (:func:`~leaf_live.event.agents.parsing.parse_retrieval_answer`); an item
that repeats an event already found (same id, or a near-duplicate by
:func:`leaf_live.event.dedup.overlap` >= the merge threshold within the merge window) is stored invalid with
``repeat: restates <event_id>``, so a round contributes only new events. Every item, valid or not, becomes a
``retrieved_events`` row; a failed answer becomes one invalid row (item 0). Rows are available when their
round's call completed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import polars as pl

from leaf_live.core.llm import CallResult, LLMClient, ModelSpec
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event.agents.parsing import parse_retrieval_answer
from leaf_live.event.agents.prompts import offline_retrieval_messages, retrieval_messages
from leaf_live.event.dedup import DEFAULT_MAX_DAYS, DEFAULT_THRESHOLD, content_words, overlap
from leaf_live.event.docstore import DocumentStore
from leaf_live.event.sources.recorded_events import event_id, partition_key

DEFAULT_ROUNDS = 3  # the authors' default (-n 3)


@dataclass(frozen=True)
class RetrievalTarget:
    """What to search for: the catalog domain, the target id and the name the prompt uses."""

    domain: str
    target_id: str
    name: str


def question_target(question_id: str, question: str, category: str | None = None) -> RetrievalTarget:
    """The retrieval target of a prediction-market question (LEAF C.2.5: the agent gathers events per
    question): domain ``event``, the question id (the event tasks' ``target_id``, so kept events reach the
    question's bundles) and the question text as the name the prompt searches for."""
    if not question_id or not (question or "").strip():
        raise ValueError(f"question {question_id!r}: expected an id and a question text")
    name = " ".join(question.split())
    return RetrievalTarget("event", question_id, f"{name} [{category}]" if category else name)


def question_weeks(
    open_at: datetime | None, until: datetime | None, weeks: Sequence[date], *, now: datetime
) -> list[date]:
    """The Mondays of ``weeks`` whose week (Monday..Sunday, UTC days) a question's retrieval covers: the week
    overlaps [``open_at``, ``until``] (``until``: the question's resolution, or ``now`` while open) and has
    ended by ``now`` (a search never asks about days still to come). A question without an open time gets
    none. Weekly per question, as LEAF retrieves for its monthly tasks."""
    if open_at is None:
        return []
    first = open_at.astimezone(UTC).date()
    last = min(until or now, now).astimezone(UTC).date()
    today = now.astimezone(UTC).date()
    return [
        m for m in weeks if m + timedelta(days=6) >= first and m <= last and m + timedelta(days=7) <= today
    ]


def interval_bounds(start: date, end: date) -> tuple[datetime, datetime]:
    """UTC instants of an interval of days: 00:00 of ``start`` to 24:00 of ``end`` (the retrieval cutoff)."""
    if end < start:
        raise ValueError(f"interval end {end} before start {start}")
    return datetime.combine(start, time(0), tzinfo=UTC), datetime.combine(
        end + timedelta(days=1), time(0), tzinfo=UTC
    )


def retriever_id(spec: ModelSpec, store: DocumentStore | None) -> str:
    return f"offline/{spec.model_id}" if store is not None else spec.model_id


def _row(
    target: RetrievalTarget,
    retriever: str,
    backend: str,
    start: date,
    end: date,
    rnd: int,
    item: int,
    res: CallResult,
    **kw: object,
) -> dict:
    cites = json.dumps([c for c in res.citations if c.get("url")], ensure_ascii=False)
    return {
        "partition_key": partition_key(start, target.target_id),
        "retriever": retriever,
        "backend": backend,
        "domain": target.domain,
        "target_id": target.target_id,
        "interval_start": start,
        "interval_end": end,
        "round": rnd,
        "item": item,
        "event_date": None,
        "description": None,
        "causality": None,
        "sentiment": None,
        "impact_type": None,
        "sources": "[]",
        "citations": cites,
        "weekend": None,
        "call_id": res.record.call_id,
        "valid": False,
        "invalid_reason": None,
        "available_at": res.record.completed_at,
        **kw,
    }


async def retrieve_events(
    client: LLMClient,
    spec: ModelSpec,
    target: RetrievalTarget,
    start: date,
    end: date,
    *,
    rounds: int = DEFAULT_ROUNDS,
    store: DocumentStore | None = None,
    k_docs: int = 8,
    query: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_days: int = DEFAULT_MAX_DAYS,
    run_id: str | None = None,
) -> pl.DataFrame:
    """``rounds`` search rounds for ``target`` over ``[start, end]`` (module doc) -> ``retrieved_events``
    rows.

    ``store`` selects the offline backend (``query`` defaults to the target name; ``k_docs`` documents per
    round); otherwise the model's provider web search. Raises ``ValueError`` for ``rounds < 1`` or an
    inverted interval, before any call; never for model output or provider errors."""
    if rounds < 1:
        raise ValueError(f"rounds={rounds}: at least one round")
    lo, hi = interval_bounds(start, end)
    run_id = run_id or uuid.uuid4().hex
    retriever = retriever_id(spec, store)
    backend = "offline_store" if store is not None else "web_search"
    rows: list[dict] = []
    found: list[dict] = []  # valid events so far: {event_id, date, description, words}
    for rnd in range(1, rounds + 1):
        shown = [{"date": f["date"].isoformat(), "description": f["description"]} for f in found]
        if store is not None:
            docs = store.search(query or target.name, hi, k=k_docs, since=lo, target_id=target.target_id)
            msgs = offline_retrieval_messages(target.domain, target.name, start, end, docs, shown)
            res = await client.complete(
                spec,
                msgs,
                role="retriever",
                run_id=run_id,
                prompt_group=f"retrieval:r{rnd}",
                web_search=False,
            )
        else:
            msgs = retrieval_messages(target.domain, target.name, start, end, shown)
            res = await client.complete(
                spec,
                msgs,
                role="retriever",
                run_id=run_id,
                prompt_group=f"retrieval:r{rnd}",
                web_search=True,
                search_window=(lo, hi),
            )
        parsed = parse_retrieval_answer(
            res.content,
            start,
            end,
            finish_reason=res.record.finish_reason,
            refusal=res.refusal,
            ok=res.ok,
            error=res.record.error,
        )
        if parsed.answer_error:
            rows.append(
                _row(
                    target,
                    retriever,
                    backend,
                    start,
                    end,
                    rnd,
                    0,
                    res,
                    event_id=event_id(retriever, target.target_id, None, f"{res.record.call_id}#0"),
                    invalid_reason=parsed.answer_error,
                )
            )
            continue
        for it in parsed.items:
            fields = {}
            if it.description is not None:
                fields = dict(
                    event_date=it.event_date,
                    description=it.description,
                    causality=it.causality,
                    sentiment=it.sentiment,
                    impact_type=it.impact_type,
                    sources=json.dumps(list(it.sources)),
                    weekend=it.event_date.weekday() >= 5 if it.event_date else None,
                )
            reason = it.invalid_reason
            eid = (
                event_id(retriever, target.target_id, it.event_date, it.description)
                if it.valid
                else event_id(retriever, target.target_id, None, f"{res.record.call_id}#{it.item}")
            )
            if it.valid:
                words = content_words(it.description or "")
                for f in found:
                    s = 1.0 if f["event_id"] == eid else overlap(words, f["words"])
                    if s >= threshold and abs((it.event_date - f["date"]).days) <= max_days:  # type: ignore[operator]
                        reason = f"repeat: restates {f['event_id']} (similarity {s:.2f})"
                        eid = event_id(retriever, target.target_id, None, f"{res.record.call_id}#{it.item}")
                        break
                if reason is None:
                    found.append(
                        {
                            "event_id": eid,
                            "date": it.event_date,
                            "description": it.description,
                            "words": words,
                        }
                    )
            rows.append(
                _row(
                    target,
                    retriever,
                    backend,
                    start,
                    end,
                    rnd,
                    it.item,
                    res,
                    event_id=eid,
                    valid=reason is None,
                    invalid_reason=reason,
                    **fields,
                )
            )
    if not rows:
        return empty_frame("retrieved_events")
    return conform("retrieved_events", pl.DataFrame(rows, schema=empty_frame("retrieved_events").schema))


async def retrieve_many(
    client: LLMClient,
    spec: ModelSpec,
    targets: Sequence[RetrievalTarget],
    start: date,
    end: date,
    **kwargs: object,
) -> pl.DataFrame:
    """:func:`retrieve_events` for several targets concurrently (one partition day|week x target each)."""
    import asyncio

    frames = await asyncio.gather(*(retrieve_events(client, spec, t, start, end, **kwargs) for t in targets))  # type: ignore[arg-type]
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else empty_frame("retrieved_events")


__all__ = [
    "DEFAULT_ROUNDS",
    "RetrievalTarget",
    "interval_bounds",
    "question_target",
    "question_weeks",
    "retrieve_events",
    "retrieve_many",
    "retriever_id",
]
