"""Strict parsing of nowcast answers into the catalog's reporting units and scale guardrails.

Source: LiveMacroEval App. D (strict output format, Table 2 units and order-of-magnitude guardrails) and
issue 4 ("every failure is stored as invalid with its reason, never raised out of the run").

The accepted format is documented in :mod:`leaf_live.macro.agents.prompts`. Nothing here raises on model
output: :func:`parse_nowcast_answer` returns one :class:`VariableResult` per indicator of the group, valid
or invalid with a reason ``"<code>: <detail>"``. Codes:

Whole answer invalid (every variable of the group gets the reason):
``call_failed`` (no answer after the last retry), ``empty_response``, ``truncated`` (finish reason
``length`` or unterminated JSON), ``refusal`` (provider refusal field, ``content_filter`` finish, or a
refusal sentence instead of JSON), ``prompt_injection`` (text that tries to change the instructions,
anywhere in the answer), ``invalid_json``, ``text_outside_json`` (prose or a second object around the
JSON), ``not_an_object`` (top level is not a JSON object), ``duplicate_key`` (a key repeated at any
level), ``unknown_variable`` (a key that is not a requested indicator id).

One variable invalid:
``missing_variable``, ``bad_entry`` (entry is not an object), ``unexpected_field``, ``missing_value``,
``non_numeric`` (string, boolean, null, list ...), ``non_finite`` (NaN, ±Infinity, overflow),
``missing_unit``, ``wrong_unit``, ``out_of_guardrail`` (outside the catalog's scale guardrail, with a hint
when the value matches a wrong scale: persons instead of thousands, units instead of thousands, millions,
fractions), ``wrong_magnitude`` (a percent value that equals 1/100 of the percentage its own rationale
states), ``bad_rationale``, ``bad_sources``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import polars as pl

from leaf_live.core.answers import FENCE as _FENCE
from leaf_live.core.answers import REFUSAL_PATTERN as _REFUSAL_PATTERN
from leaf_live.core.answers import DuplicateKeyError as _DuplicateKey
from leaf_live.core.answers import (
    clean_text,
    contained,
    detect_prompt_injection,
    json_error_reason,
    strict_decoder,
)
from leaf_live.core.pit import flag_at_or_after
from leaf_live.core.storage import polars_schema
from leaf_live.macro.catalog import get_indicator, indicators_in_group
from leaf_live.macro.nowcasts import build_nowcasts

MAX_RATIONALE_CHARS = 4000  # kept text; longer rationales are cut, not rejected
ENTRY_FIELDS = frozenset({"value", "unit", "rationale", "sources"})

# Accepted spellings of each catalog unit (compared after lower-casing and collapsing spaces).
UNIT_ALIASES: dict[str, frozenset[str]] = {
    "percent": frozenset({"percent", "%", "pct", "per cent", "percentage"}),
    "index": frozenset({"index", "index level", "diffusion index", "index points"}),
    "thousand persons": frozenset(
        {
            "thousand persons",
            "thousands of persons",
            "thousands",
            "thousand",
            "k persons",
            "thousand jobs",
            "thousands of jobs",
        }
    ),
    "thousand units, saar": frozenset(
        {
            "thousand units, saar",
            "thousand units saar",
            "thousands of units, saar",
            "thousand units",
            "thousands of units",
            "thousand units (saar)",
            "thousands, saar",
        }
    ),
}

_PERCENT_IN_TEXT = re.compile(r"(-?[0-9]+(?:\.[0-9]+)?)\s*(?:%|percent\b|per cent\b)", re.IGNORECASE)


@dataclass(frozen=True)
class VariableResult:
    """Parsed answer for one indicator: ``value`` in the reporting unit (None when invalid)."""

    indicator_id: str
    value: float | None
    valid: bool
    invalid_reason: str | None = None
    rationale: str | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParsedAnswer:
    """All variables of one prompt group; ``answer_error`` is set when the whole answer was rejected."""

    group: str
    variables: dict[str, VariableResult]
    answer_error: str | None = None
    raw_entries: dict[str, Any] = field(default_factory=dict)

    @property
    def n_valid(self) -> int:
        return sum(v.valid for v in self.variables.values())


def _whole(group: str, reason: str, entries: Mapping[str, Any] | None = None) -> ParsedAnswer:
    variables = {}
    for iid in indicators_in_group(group):
        e = (entries or {}).get(iid)
        rat = e.get("rationale") if isinstance(e, Mapping) and isinstance(e.get("rationale"), str) else None
        variables[iid] = VariableResult(iid, None, False, reason, rat[:MAX_RATIONALE_CHARS] if rat else None)
    return ParsedAnswer(group, variables, reason, dict(entries or {}))


def _unit_ok(given: str, unit: str) -> bool:
    norm = " ".join(given.strip().lower().split())
    return norm in UNIT_ALIASES.get(unit.lower(), frozenset({unit.lower()}))


def _scale_hint(value: float, unit: str, lo: float, hi: float) -> str:
    """Name the likely scale mistake when a rescaled value would pass the guardrail."""
    if unit.startswith("thousand"):
        candidates = (
            (1 / 1000, "persons/units instead of thousands"),
            (1000, "millions instead of thousands"),
        )
    elif unit == "index":
        candidates = ((100, "a fraction instead of an index level"),)
    else:  # percent
        candidates = ((1 / 100, "basis points instead of percent"), (100, "a fraction instead of percent"))
    for factor, what in candidates:
        if lo <= value * factor <= hi:
            return f" (looks like {what})"
    return ""


def _check_entry(iid: str, entry: Any) -> VariableResult:
    ind = get_indicator(iid)
    if not isinstance(entry, Mapping):
        return VariableResult(
            iid,
            None,
            False,
            f"bad_entry: {iid} must be an object with value and unit, got "
            f"{type(entry).__name__} {json.dumps(entry)[:60]}",
        )
    rationale = entry.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        return VariableResult(iid, None, False, f"bad_rationale: {iid}.rationale must be a string")
    rationale = rationale[:MAX_RATIONALE_CHARS] if rationale else None
    extra = sorted(set(entry) - ENTRY_FIELDS)
    if extra:
        return VariableResult(iid, None, False, f"unexpected_field: {iid} has fields {extra}", rationale)
    sources = entry.get("sources", [])
    if sources is None:
        sources = []
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        return VariableResult(
            iid, None, False, f"bad_sources: {iid}.sources must be a list of URLs", rationale
        )
    srcs = tuple(s.strip() for s in sources if s.strip())

    def bad(reason: str) -> VariableResult:
        return VariableResult(iid, None, False, reason, rationale, srcs)

    if "value" not in entry:
        return bad(f"missing_value: {iid} has no 'value'")
    v = entry["value"]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return bad(f"non_numeric: {iid}.value = {json.dumps(v)[:60]} is not a JSON number")
    try:
        value = float(v)
    except OverflowError:  # an integer too large for a double
        value = math.inf
    if not math.isfinite(value):
        return bad(f"non_finite: {iid}.value = {value}")
    unit = entry.get("unit")
    if unit is None:
        return bad(f"missing_unit: {iid} has no 'unit' (expected {ind.unit!r})")
    if not isinstance(unit, str) or not _unit_ok(unit, ind.unit):
        return bad(f"wrong_unit: {iid}.unit = {json.dumps(unit)[:60]}, expected {ind.unit!r}")
    g = ind.guardrail
    if not g.check(value):
        return bad(
            f"out_of_guardrail: {iid} = {value:g} {ind.unit} outside [{g.lo:g}, {g.hi:g}] ({g.text})"
            + _scale_hint(value, ind.unit, g.lo, g.hi)
        )
    # A fraction passes a percent guardrail; catch it when the rationale states value x 100 percent.
    if ind.unit == "percent" and rationale and 0 < abs(value) < 0.1:
        stated = [float(x) for x in _PERCENT_IN_TEXT.findall(rationale)]
        as_pct = value * 100
        if (
            stated
            and not any(math.isclose(s, value, abs_tol=0.051) for s in stated)
            and any(math.isclose(s, as_pct, rel_tol=1e-6, abs_tol=0.051) for s in stated)
        ):
            return bad(
                f"wrong_magnitude: {iid} = {value:g} looks like a fraction of the {as_pct:g}% its rationale"
                " states"
            )
    return VariableResult(iid, value, True, None, rationale, srcs)


def check_reported_value(
    indicator_id: str, value: float, unit: str | None, rationale: str | None = None
) -> VariableResult:
    """The per-variable checks of an answer (unit spelling, catalog guardrail with the likely scale mistake,
    fraction-for-percent against the rationale) on a value given outside an LLM answer, e.g. an external
    submission (``leaf_live.macro.submissions``). Same codes and reasons as :func:`parse_nowcast_answer`'s
    variables; never raises for bad values (:class:`leaf_live.macro.catalog.UnknownIndicatorError` for an
    unknown indicator)."""
    entry: dict[str, Any] = {"value": value, "unit": unit}
    if rationale is not None:
        entry["rationale"] = rationale
    return _check_entry(indicator_id, entry)


def _extract_json_text(text: str) -> tuple[str | None, str | None]:
    """(json text, error) after removing one optional enclosing ```json fence."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1).strip()
    if not s.startswith("{"):
        if s.startswith("["):
            return s, None  # decoded below and rejected as not_an_object
        i = s.find("{")
        if i < 0:
            return None, "invalid_json: no JSON object in the answer"
        return None, f"text_outside_json: {s[:i].strip()[:60]!r} before the JSON object"
    return s, None


def parse_nowcast_answer(
    content: str | None,
    group: str,
    *,
    finish_reason: str | None = None,
    refusal: str | None = None,
) -> ParsedAnswer:
    """Parse one model answer for prompt ``group`` into per-indicator results; never raises on bad input.

    ``content`` is the assistant message text; ``finish_reason`` the OpenAI-style reason (litellm maps
    Anthropic ``max_tokens`` -> ``length`` and ``refusal`` -> ``content_filter``); ``refusal`` the message's
    refusal text. Returns a :class:`ParsedAnswer` with one :class:`VariableResult` per indicator of the
    group (Table 2 order); values are in the catalog's reporting unit (no rescaling is ever applied: a
    value in the wrong scale is rejected, not repaired). Raises ``ValueError`` only for an unknown group;
    anything the text provokes (a 5,000-digit integer, nesting 10,000 deep, lone surrogates) is an invalid
    answer with its reason (:func:`leaf_live.core.answers.contained`).
    """
    indicators_in_group(group)  # an unknown group is the caller's error, raised
    return contained(
        lambda: _parse_nowcast_answer(
            clean_text(content), group, finish_reason=finish_reason, refusal=clean_text(refusal) or None
        ),
        lambda reason: _whole(group, reason),
    )


def _parse_nowcast_answer(
    content: str, group: str, *, finish_reason: str | None, refusal: str | None
) -> ParsedAnswer:
    ids = indicators_in_group(group)
    if refusal:
        return _whole(group, f"refusal: {refusal.strip()[:120]}")
    if finish_reason == "content_filter":
        return _whole(group, "refusal: provider stopped the answer (finish_reason=content_filter)")
    text = content if isinstance(content, str) else ""
    if not text.strip():
        if finish_reason == "length":
            return _whole(group, "truncated: empty answer at the output token limit (finish_reason=length)")
        return _whole(group, "empty_response: the answer has no text")
    injected = detect_prompt_injection(text)
    if injected:
        return _whole(group, f"prompt_injection: answer tries to change the instructions ({injected!r})")
    if finish_reason == "length":
        return _whole(group, "truncated: output cut at the token limit (finish_reason=length)")
    json_text, err = _extract_json_text(text)
    if err:
        if "{" not in text and _REFUSAL_PATTERN.search(text):
            return _whole(group, f"refusal: {text.strip()[:120]}")
        return _whole(group, err)
    try:
        obj, end = strict_decoder().raw_decode(json_text)
    except _DuplicateKey as exc:
        return _whole(group, f"duplicate_key: key {exc.args[0]!r} appears more than once")
    except json.JSONDecodeError as exc:
        return _whole(group, json_error_reason(json_text, exc))
    except RecursionError:  # "[" * 5000 and the like
        return _whole(group, "invalid_json: nesting too deep")
    rest = json_text[end:].strip()
    if rest:
        return _whole(group, f"text_outside_json: {rest[:60]!r} after the JSON object")
    if not isinstance(obj, dict):
        return _whole(group, f"not_an_object: top level is a JSON {type(obj).__name__}, expected an object")
    unknown = [k for k in obj if k not in ids]
    if unknown:
        return _whole(group, f"unknown_variable: {unknown[:5]} not among the requested ids", obj)
    variables = {}
    for iid in ids:
        if iid not in obj:
            variables[iid] = VariableResult(iid, None, False, f"missing_variable: {iid} not in the answer")
        else:
            variables[iid] = _check_entry(iid, obj[iid])
    return ParsedAnswer(group, variables, None, obj)


def call_failed_answer(group: str, error: str | None) -> ParsedAnswer:
    """Every variable invalid with ``call_failed`` (no answer after the last attempt)."""
    return _whole(group, f"call_failed: {(error or 'no response')[:300]}")


def report_for_orchestrator(parsed: ParsedAnswer, citations: Sequence[str] = ()) -> dict[str, Any]:
    """A sub-agent's parsed answer as data for the team orchestrator (App. S.1): per variable either
    ``{value, unit, rationale, sources}`` or ``{"invalid": reason}``. Never contains raw model text that
    failed parsing, so a hostile answer cannot reach the orchestrator verbatim."""
    if parsed.answer_error:
        return {"status": "unavailable", "reason": parsed.answer_error}
    out: dict[str, Any] = {}
    for iid, v in parsed.variables.items():
        if v.valid:
            out[iid] = {
                "value": v.value,
                "unit": get_indicator(iid).unit,
                "rationale": v.rationale,
                "sources": list(v.sources),
            }
        else:
            out[iid] = {"invalid": v.invalid_reason}
    return {"status": "ok", "variables": out, "citations": list(citations)}


def nowcast_rows(
    parsed: ParsedAnswer,
    *,
    model_id: str,
    partition_key: str,
    issued_at: datetime,
    reference_periods: Mapping[str, date],
    release_times: Mapping[str, datetime | None] | None = None,
    answered_at: datetime | None = None,
    citations: Iterable[str] = (),
    prompt_hash: str | None = None,
    raw_response_id: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    cost_usd: float | None = None,
) -> pl.DataFrame:
    """Rows of the ``nowcasts`` table (``producer`` NULL: the writer stamps it) for one parsed answer.

    ``issued_at`` must be timezone-aware (UTC); ``available_at`` = ``issued_at``; ``answered_at`` = when the
    answer arrived (the final call's completion; default ``issued_at``). ``after_release`` is
    ``issued_at >= release_times[indicator]`` (:func:`leaf_live.core.pit.flag_at_or_after`; False when the
    release time is not given). ``citations``
    are response-level URLs, merged with each variable's own ``sources`` into a JSON list.
    Raises ``ValueError`` for a naive ``issued_at`` or a missing reference period, and
    :class:`~leaf_live.core.storage.StorageError` if the frame does not fit the table.
    """
    if issued_at.tzinfo is None:
        raise ValueError(f"issued_at={issued_at!r}: must be timezone-aware (UTC)")
    release_times = release_times or {}
    response_urls = list(dict.fromkeys(citations))
    rows, released = [], []
    for iid, v in parsed.variables.items():
        if iid not in reference_periods:
            raise ValueError(f"reference_periods: no reference period for {iid!r}")
        rel = release_times.get(iid)
        if rel is not None and rel.tzinfo is None:
            raise ValueError(f"release_times[{iid!r}]={rel!r}: must be timezone-aware")
        released.append(rel)
        urls = list(dict.fromkeys([*response_urls, *v.sources]))
        rows.append(
            {
                "partition_key": partition_key,
                "model_id": model_id,
                "indicator_id": iid,
                "reference_period": reference_periods[iid],
                "issued_at": issued_at,
                "answered_at": answered_at or issued_at,
                "value": v.value,
                "valid": v.valid,
                "invalid_reason": v.invalid_reason,
                "after_release": False,
                "source_variable": iid,
                "rationale": v.rationale,
                "citations": json.dumps(urls),
                "prompt_hash": prompt_hash,
                "raw_response_id": raw_response_id,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cost_usd": cost_usd,
                "available_at": issued_at,
            }
        )
    schema = {k: v for k, v in polars_schema("nowcasts").items() if k != "producer"}
    frame = pl.DataFrame(rows, schema=schema).with_columns(
        pl.Series("_release_at", released, dtype=pl.Datetime("us", "UTC"))
    )
    frame = frame.with_columns(
        flag_at_or_after(pl.col("issued_at"), pl.col("_release_at")).fill_null(False).alias("after_release")
    ).drop("_release_at")
    return build_nowcasts(frame)


__all__ = [
    "ENTRY_FIELDS",
    "ParsedAnswer",
    "UNIT_ALIASES",
    "VariableResult",
    "call_failed_answer",
    "detect_prompt_injection",
    "nowcast_rows",
    "parse_nowcast_answer",
    "report_for_orchestrator",
]
