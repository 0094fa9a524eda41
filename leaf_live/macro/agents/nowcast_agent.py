"""LLM nowcast agents: the ``single``, ``team`` and ``plugin`` designs, one hour of nowcasts at a time.

Sources: LiveMacroEval §3.4 (agents nowcast hourly with web search inside the window), App. D (two calls
per model and hour, one per prompt group), App. S.1 (multi-agent team: an orchestrator delegates to a
researcher, which gathers a first-pass value and sources for every indicator, and to an independent
verifier, which re-derives and cross-checks each number; the orchestrator reconciles the two; and the
tool-augmented agent: the base model with a financial-analysis plug-in, here the point-in-time data tools of
:mod:`leaf_live.macro.agents.plugin`, S.5).

Both designs use the one call path (:class:`leaf_live.core.llm.LLMClient`) and the one parser
(:mod:`leaf_live.macro.agents.parsing`). Nothing raised by a provider or a bad answer escapes: failures become
invalid ``nowcasts`` rows with a reason and failed ``llm_calls`` rows. Besides the parser's codes, the
team adds ``team_failed`` (neither sub-agent produced a usable answer, so the orchestrator is not asked) and
the plug-in ``plugin_no_answer`` (still calling tools after the last allowed round).

Point in time: a row's ``issued_at`` is when the answer that produced it arrived (the final call's
completion time, UTC), never the scheduled hour, so an answer that arrives after a release is flagged
``after_release`` even when the run started before it. LLM nowcasts cannot be backfilled: a run for a
past hour would see information from after that hour.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import polars as pl

from leaf_live.core.llm import (
    CallRecord,
    CallResult,
    LLMClient,
    LLMConfig,
    ModelSpec,
    llm_calls_frame,
    utc_now,
)
from leaf_live.core.pit import require_columns, shift_month
from leaf_live.core.storage import empty_frame
from leaf_live.macro.agents.parsing import (
    ParsedAnswer,
    VariableResult,
    call_failed_answer,
    nowcast_rows,
    parse_nowcast_answer,
    report_for_orchestrator,
)
from leaf_live.macro.agents.plugin import FinancialDataPlugin, no_answer, plugin_messages, plugin_round_trip
from leaf_live.macro.agents.prompts import nowcast_messages, orchestrator_messages, resolve_reference_periods
from leaf_live.macro.catalog import PROMPT_GROUPS, indicators_in_group


@dataclass(frozen=True)
class GroupTarget:
    """What one prompt-group call nowcasts: App. D target month and release month (first days of the
    months), the reference period of every indicator in the group, and the release timestamps (UTC)
    known for them (indicators without one are never flagged ``after_release``)."""

    group: str
    target_month: date
    release_month: date
    reference_periods: Mapping[str, date]
    release_times: Mapping[str, datetime] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        group: str,
        target_month: date,
        release_month: date | None = None,
        reference_periods: Mapping[str, date] | None = None,
        release_times: Mapping[str, datetime | None] | None = None,
    ) -> GroupTarget:
        """Fill defaults: release month = the month after the target month; reference periods from
        :func:`leaf_live.macro.agents.prompts.default_reference_period`. Release times of indicators outside
        the group are ignored; naive release times raise ``ValueError`` naming the indicator."""
        if group not in PROMPT_GROUPS:
            raise ValueError(f"group={group!r}: expected one of {PROMPT_GROUPS}")
        tm = date(target_month.year, target_month.month, 1)
        if release_month is None:
            release_month = date(*shift_month(tm.year, tm.month, 1), 1)
        ids = indicators_in_group(group)
        periods = resolve_reference_periods(
            group, tm, {k: v for k, v in (reference_periods or {}).items() if k in ids}
        )
        times = {}
        for iid, t in (release_times or {}).items():
            if iid in ids and t is not None:
                if t.tzinfo is None:
                    raise ValueError(f"release_times[{iid!r}]={t!r}: must be timezone-aware (UTC)")
                times[iid] = t
        return cls(group, tm, release_month, periods, times)


def hour_targets(
    target_month: date,
    release_month: date | None = None,
    reference_periods: Mapping[str, date] | None = None,
    release_times: Mapping[str, datetime | None] | None = None,
) -> tuple[GroupTarget, ...]:
    """Both App. D prompt groups for one target month (``output_core`` then ``demand_sectoral``)."""
    return tuple(
        GroupTarget.build(g, target_month, release_month, reference_periods, release_times)
        for g in PROMPT_GROUPS
    )


def _parse(result: CallResult, group: str) -> ParsedAnswer:
    if not result.ok:
        return call_failed_answer(group, result.record.error)
    return parse_nowcast_answer(
        result.content, group, finish_reason=result.record.finish_reason, refusal=result.refusal
    )


def _sum_or_none(values: Sequence[int | float | None]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _run_cost(records: Sequence[CallRecord]) -> float | None:
    """Total USD of a run's answered calls; None when any answered call has no known price."""
    ok = [r for r in records if r.status == "ok"]
    if not ok or any(r.cost_usd is None for r in ok):
        return None
    return float(sum(r.cost_usd for r in ok))


def _rows(
    parsed: ParsedAnswer,
    spec: ModelSpec,
    target: GroupTarget,
    partition_key: str,
    final: CallResult,
    run_results: Sequence[CallResult],
) -> pl.DataFrame:
    records = [r.record for r in run_results]
    urls: list[str] = []
    for r in run_results:
        urls.extend(c["url"] for c in r.citations if c.get("url"))
    return nowcast_rows(
        parsed,
        model_id=spec.model_id,
        partition_key=partition_key,
        issued_at=final.record.completed_at,
        answered_at=final.record.completed_at,
        reference_periods=target.reference_periods,
        release_times=target.release_times,
        citations=urls,
        prompt_hash=final.record.prompt_hash,
        raw_response_id=final.record.call_id,
        prompt_tokens=_sum_or_none([r.prompt_tokens for r in records]),
        completion_tokens=_sum_or_none([r.completion_tokens for r in records]),
        cost_usd=_run_cost(records),
    )


async def nowcast_single(
    client: LLMClient, spec: ModelSpec, target: GroupTarget, partition_key: str
) -> pl.DataFrame:
    """One App. D call for one prompt group -> its ``nowcasts`` rows (one per indicator of the group).

    Tokens and cost on the rows are the call's; ``raw_response_id`` is its ``call_id``.
    """
    run_id = uuid.uuid4().hex
    msgs = nowcast_messages(target.group, target.target_month, target.release_month, target.reference_periods)
    res = await client.complete(spec, msgs, role="single", run_id=run_id, prompt_group=target.group)
    return _rows(_parse(res, target.group), spec, target, partition_key, res, [res])


async def nowcast_team(
    client: LLMClient, spec: ModelSpec, target: GroupTarget, partition_key: str
) -> pl.DataFrame:
    """Multi-agent team (App. S.1) for one prompt group -> its ``nowcasts`` rows.

    The researcher and the verifier run concurrently and independently (neither sees the other), both
    with web search and the App. D user message; the orchestrator (no web search) receives both *parsed*
    reports and answers in the same strict format, which becomes the rows. When neither sub-agent gives a
    usable answer the orchestrator is skipped and every row is invalid with ``team_failed``. Rows carry
    the orchestrator's call id and prompt hash and the summed tokens and cost of the team's calls.
    """
    run_id = uuid.uuid4().hex
    group = target.group
    researcher, verifier = await asyncio.gather(
        client.complete(
            spec,
            nowcast_messages(
                group, target.target_month, target.release_month, target.reference_periods, "researcher"
            ),
            role="researcher",
            run_id=run_id,
            prompt_group=group,
        ),
        client.complete(
            spec,
            nowcast_messages(
                group, target.target_month, target.release_month, target.reference_periods, "verifier"
            ),
            role="verifier",
            run_id=run_id,
            prompt_group=group,
        ),
    )
    p_r, p_v = _parse(researcher, group), _parse(verifier, group)
    if p_r.answer_error and p_v.answer_error:
        reason = f"team_failed: researcher {p_r.answer_error[:150]}; verifier {p_v.answer_error[:150]}"
        failed = ParsedAnswer(
            group, {i: VariableResult(i, None, False, reason) for i in p_r.variables}, reason
        )
        return _rows(failed, spec, target, partition_key, verifier, [researcher, verifier])
    report_r = report_for_orchestrator(p_r, [c["url"] for c in researcher.citations if c.get("url")])
    report_v = report_for_orchestrator(p_v, [c["url"] for c in verifier.citations if c.get("url")])
    msgs = orchestrator_messages(
        group, target.target_month, target.release_month, report_r, report_v, target.reference_periods
    )
    orch = await client.complete(
        spec, msgs, role="orchestrator", run_id=run_id, prompt_group=group, web_search=False
    )
    return _rows(_parse(orch, group), spec, target, partition_key, orch, [researcher, verifier, orch])


async def nowcast_plugin(
    client: LLMClient, spec: ModelSpec, target: GroupTarget, partition_key: str, plugin: FinancialDataPlugin
) -> pl.DataFrame:
    """Tool-augmented agent (App. S.1, S.5) for one prompt group -> its ``nowcasts`` rows.

    The App. D messages plus the plug-in's rules; the model may call the plug-in's point-in-time data tools
    (:func:`leaf_live.macro.agents.plugin.plugin_round_trip`, one ``llm_calls`` row per round, role
    ``analyst``) and then answers in the strict format, parsed by the one parser. Rows carry the final round's
    call id, prompt hash and completion time and the summed tokens and cost of every round; without a final
    answer every row is invalid with ``plugin_no_answer``.
    """
    msgs = plugin_messages(target.group, target.target_month, target.release_month, target.reference_periods)
    results, reason = await plugin_round_trip(
        client, spec, plugin, msgs, target.reference_periods, prompt_group=target.group
    )
    final = results[-1]
    parsed = (
        no_answer(target.group, list(target.reference_periods), reason)
        if reason
        else _parse(final, target.group)
    )
    return _rows(parsed, spec, target, partition_key, final, results)


async def nowcast_targets(
    client: LLMClient,
    spec: ModelSpec,
    targets: Sequence[GroupTarget],
    partition_key: str,
    plugin: FinancialDataPlugin | None = None,
) -> pl.DataFrame:
    """One model's nowcasts for every prompt group of ``targets``, concurrently (single, team or plugin
    design by ``spec.design``; the plugin design needs ``plugin``); ``partition_key`` names the slice the rows
    belong to. Raises ``ValueError`` for a plugin model without a plug-in (before any call)."""
    if not targets:
        return empty_frame("nowcasts")
    if spec.design == "plugin":
        if plugin is None:
            raise ValueError(
                f"{spec.model_id}: the plugin design needs the financial-data plug-in (plugin=...)"
            )
        frames = await asyncio.gather(
            *(nowcast_plugin(client, spec, t, partition_key, plugin) for t in targets)
        )
        return pl.concat(frames, how="vertical")
    run = nowcast_team if spec.design == "team" else nowcast_single
    frames = await asyncio.gather(*(run(client, spec, t, partition_key) for t in targets))
    return pl.concat(frames, how="vertical")


def window_targets(windows: pl.DataFrame) -> list[GroupTarget]:
    """The App. D prompt groups of every target month with an open window (``nowcast_windows`` rows:
    ``target_month``, ``indicator_id``, ``reference_period``, ``closes_at``), in target-month order; each
    indicator's reference period and release time come from its window."""
    require_columns(windows, ("target_month", "indicator_id", "reference_period", "closes_at"), "windows")
    out: list[GroupTarget] = []
    for (target,), g in windows.sort("target_month", maintain_order=True).group_by(
        "target_month", maintain_order=True
    ):
        out.extend(
            hour_targets(
                target,
                reference_periods=dict(zip(g["indicator_id"], g["reference_period"])),
                release_times=dict(zip(g["indicator_id"], g["closes_at"])),
            )
        )
    return out


class LLMNowcaster:
    """One configured LLM (``spec``: ``provider/model@design``) under the forecaster contract
    (:class:`leaf_live.core.forecaster.AsyncForecaster`): ``await aforecast(windows)`` asks the model, through
    the run's one ``client``, for both App. D prompt groups of every target month among the open ``windows``
    and returns their ``nowcasts`` rows in slice ``partition_key`` (invalid answers are rows with a reason;
    every call lands in ``client.records``)."""

    def __init__(
        self,
        spec: ModelSpec,
        client: LLMClient,
        *,
        partition_key: str,
        plugin: FinancialDataPlugin | None = None,
    ) -> None:
        self.spec = spec
        self.model_id = spec.model_id
        self.client = client
        self.partition_key = partition_key
        self.plugin = plugin

    async def aforecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return await nowcast_targets(
            self.client, self.spec, window_targets(tasks), self.partition_key, self.plugin
        )


async def run_nowcast_hour(
    targets: Sequence[GroupTarget],
    *,
    partition_key: str,
    models: Sequence[ModelSpec] | None = None,
    config: LLMConfig | None = None,
    client: LLMClient | None = None,
    clock: Callable[[], datetime] = utc_now,
    plugin: FinancialDataPlugin | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One hour of LLM nowcasts: every model x every prompt group, fanned out concurrently.

    ``targets``: the prompt groups to run (usually :func:`hour_targets`); ``partition_key``: the slice the
    rows belong to (the hour); ``models``: default ``config.models``; ``client``: the run's call path
    (default: a new :class:`LLMClient` on ``config`` with ``clock``).

    Returns ``(nowcasts, llm_calls)`` frames conforming to the two tables (``producer`` NULL: the writer
    stamps it): one ``nowcasts`` row per model, group and indicator (16 per model for both groups; invalid
    rows keep their reason) and one ``llm_calls`` row per call (1 per group for ``single``, 3 for ``team``,
    one per tool round for ``plugin``, whose models need the financial-data ``plugin``).
    With no models both frames are empty (the caller reports :data:`leaf_live.core.llm.NO_MODELS_MESSAGE`).
    Raises ``ValueError`` only for bad arguments (neither ``config`` nor ``client``, a group listed twice),
    before any call is made.
    """
    groups = [t.group for t in targets]
    if len(set(groups)) != len(groups):
        raise ValueError(f"targets: prompt group listed twice in {groups}")
    if config is None and client is None:
        raise ValueError("run_nowcast_hour: pass config= (or the run's client=)")
    config = config or client.config
    models = list(config.models if models is None else models)
    if plugin is None and any(m.design == "plugin" for m in models):
        raise ValueError(
            "run_nowcast_hour: a plugin-design model needs the financial-data plug-in (plugin=...)"
        )
    if not models or not targets:
        return empty_frame("nowcasts"), empty_frame("llm_calls")
    client = client or LLMClient(config, clock=clock)
    start = len(client.records)
    frames = await asyncio.gather(
        *(nowcast_targets(client, spec, targets, partition_key, plugin) for spec in models)
    )
    nowcasts = pl.concat(frames, how="vertical") if frames else empty_frame("nowcasts")
    calls = llm_calls_frame(client.records[start:], partition_key)
    return nowcasts, calls


def run_nowcast_hour_sync(targets: Sequence[GroupTarget], **kwargs: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`run_nowcast_hour` in a fresh event loop (for synchronous callers)."""
    return asyncio.run(run_nowcast_hour(targets, **kwargs))


__all__ = [
    "GroupTarget",
    "LLMNowcaster",
    "hour_targets",
    "nowcast_plugin",
    "nowcast_single",
    "nowcast_targets",
    "nowcast_team",
    "run_nowcast_hour",
    "run_nowcast_hour_sync",
    "window_targets",
]
