"""Strict parsing of the event track's LLM answers; nothing here raises on model output.

Every result is valid or invalid with a reason ``"<code>: <detail>"``. Codes shared by all answers
(:mod:`leaf_live.core.answers` supplies the detection): ``call_failed`` (no answer after the last retry),
``empty_response``, ``truncated`` (finish reason ``length`` or JSON/tag cut off), ``refusal`` (provider
refusal, ``content_filter`` or a refusal sentence instead of the format), ``prompt_injection``.

Retrieval (:func:`parse_retrieval_answer`, format in :mod:`.prompts`): whole answer ``invalid_json``,
``text_outside_json``, ``ambiguous`` (several JSON blocks), ``not_an_array``, ``duplicate_key``; per item
``bad_item`` (not an object), ``missing_field``, ``unexpected_field``, ``bad_date``, ``out_of_interval``
(dated before the interval), ``after_cutoff`` (dated after the interval's end), ``bad_text`` (empty or over
:data:`MAX_TEXT` characters), ``bad_label`` (sentiment / impact type outside the allowed values),
``bad_sources``, ``prompt_injection``.

Fact-check (:func:`parse_fact_check`): ``missing_tag``, ``ambiguous`` (a tag twice), ``bad_verdict`` (not
True/False), ``bad_date`` (not YYYY-MM-DD; N/A only with False).

Forecast (:func:`parse_prediction`): ``missing_tag``, ``ambiguous`` (two prediction tags), ``bad_class``,
``non_numeric``, ``non_finite``, ``wrong_length``, ``out_of_range``; predictability levels
(:func:`parse_levels`): ``missing_tag``, ``invalid_json``, ``not_an_object``, ``unknown_target``, then per
target ``missing_target``, ``bad_level``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from leaf_live.core.answers import (
    DuplicateKeyError,
    clean_text,
    contained,
    detect_prompt_injection,
    json_error_reason,
    looks_like_refusal,
    strict_decoder,
    strip_fence,
)

MAX_TEXT = 2000
ITEM_FIELDS = ("date", "description", "causality", "sentiment", "impact_type", "sources")
REQUIRED_FIELDS = ("date", "description", "causality", "sentiment", "impact_type")
SENTIMENTS = ("Positive", "Negative", "Neutral")
IMPACT_TYPES = ("Direct", "Indirect", "Neutral")
_JSON_BLOCK = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def answer_error(
    content: str | None,
    finish_reason: str | None,
    refusal: str | None,
    *,
    ok: bool = True,
    error: str | None = None,
) -> str | None:
    """The whole-answer failure of a call, or None when the text should be parsed (shared by every parser)."""
    if not ok:
        return f"call_failed: {(error or 'no response')[:300]}"
    if refusal:
        return f"refusal: {refusal.strip()[:120]}"
    if finish_reason == "content_filter":
        return "refusal: provider stopped the answer (finish_reason=content_filter)"
    text = content if isinstance(content, str) else ""
    if not text.strip():
        if finish_reason == "length":
            return "truncated: empty answer at the output token limit (finish_reason=length)"
        return "empty_response: the answer has no text"
    if finish_reason == "length":
        return "truncated: output cut at the token limit (finish_reason=length)"
    return None


# ------------------------------------------------------------------------------------------------
# retrieval
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievedItem:
    """One item of a retrieval answer: the normalised event or the reason it is invalid."""

    item: int
    valid: bool
    invalid_reason: str | None = None
    event_date: date | None = None
    description: str | None = None
    causality: str | None = None
    sentiment: str | None = None
    impact_type: str | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParsedRetrieval:
    items: list[RetrievedItem] = field(default_factory=list)
    answer_error: str | None = None

    @property
    def valid_items(self) -> list[RetrievedItem]:
        return [i for i in self.items if i.valid]


def _label(value: Any, allowed: Sequence[str]) -> str | None:
    if not isinstance(value, str):
        return None
    for a in allowed:
        if value.strip().lower() == a.lower():
            return a
    return None


def _check_item(n: int, obj: Any, start: date, end: date) -> RetrievedItem:
    if not isinstance(obj, dict):
        return RetrievedItem(
            n, False, f"bad_item: item {n} is a JSON {type(obj).__name__}, expected an object"
        )
    extra = sorted(set(obj) - set(ITEM_FIELDS))
    if extra:
        return RetrievedItem(n, False, f"unexpected_field: item {n} has {extra}")
    missing = [f for f in REQUIRED_FIELDS if f not in obj]
    if missing:
        return RetrievedItem(n, False, f"missing_field: item {n} lacks {missing}")
    d = obj["date"]
    if not isinstance(d, str) or not _DATE.match(d.strip()):
        return RetrievedItem(n, False, f"bad_date: item {n} date {json.dumps(d)[:40]} is not YYYY-MM-DD")
    try:
        dd = date.fromisoformat(d.strip())
    except ValueError:
        return RetrievedItem(n, False, f"bad_date: item {n} date {d!r} is not a calendar date")
    desc, caus = obj["description"], obj["causality"]
    for name, v in (("description", desc), ("causality", caus)):
        if not isinstance(v, str) or not v.strip() or len(v) > MAX_TEXT:
            return RetrievedItem(
                n, False, f"bad_text: item {n} {name} must be a non-empty string of at most {MAX_TEXT} chars"
            )
    inj = detect_prompt_injection(f"{desc}\n{caus}")
    if inj:
        return RetrievedItem(
            n, False, f"prompt_injection: item {n} tries to change the instructions ({inj!r})"
        )
    sent, imp = _label(obj["sentiment"], SENTIMENTS), _label(obj["impact_type"], IMPACT_TYPES)
    if sent is None or imp is None:
        bad = obj["sentiment"] if sent is None else obj["impact_type"]
        return RetrievedItem(
            n,
            False,
            f"bad_label: item {n} {json.dumps(bad)[:40]} not in"
            f" {SENTIMENTS if sent is None else IMPACT_TYPES}",
        )
    src = obj.get("sources", [])
    if src is None:
        src = []
    if not isinstance(src, list) or not all(isinstance(s, str) for s in src):
        return RetrievedItem(n, False, f"bad_sources: item {n} sources must be a list of strings")
    base = dict(
        event_date=dd,
        description=" ".join(desc.split()),
        causality=" ".join(caus.split()),
        sentiment=sent,
        impact_type=imp,
        sources=tuple(s.strip() for s in src if s.strip()),
    )
    if dd > end:
        return RetrievedItem(
            n, False, f"after_cutoff: item {n} dated {dd} after the interval end {end}", **base
        )
    if dd < start:
        return RetrievedItem(
            n, False, f"out_of_interval: item {n} dated {dd} before the interval start {start}", **base
        )
    return RetrievedItem(n, True, None, **base)


def parse_retrieval_answer(
    content: str | None,
    start: date,
    end: date,
    *,
    finish_reason: str | None = None,
    refusal: str | None = None,
    ok: bool = True,
    error: str | None = None,
) -> ParsedRetrieval:
    """Parse one retrieval round's answer (module doc). Accepted: the bare JSON array, the array in one
    enclosing fence, or exactly one fenced ```json block inside prose (search models narrate; LEAF's authors
    extract the block). ``[start, end]`` is the searched interval; ``end`` is the retrieval cutoff day.
    Never raises on any text (:func:`leaf_live.core.answers.contained`)."""
    return contained(
        lambda: _parse_retrieval(
            clean_text(content), start, end, finish_reason, clean_text(refusal) or None, ok, error
        ),
        lambda reason: ParsedRetrieval([], reason),
    )


def _parse_retrieval(content, start, end, finish_reason, refusal, ok, error) -> ParsedRetrieval:
    err = answer_error(content, finish_reason, refusal, ok=ok, error=error)
    if err:
        return ParsedRetrieval([], err)
    text = strip_fence(content or "")
    if not text.startswith("["):
        blocks = _JSON_BLOCK.findall(content or "")
        if len(blocks) > 1:
            return ParsedRetrieval([], f"ambiguous: {len(blocks)} JSON blocks in the answer")
        if len(blocks) == 1:
            text = blocks[0].strip()
        elif "[" not in text:
            if looks_like_refusal(text):
                return ParsedRetrieval([], f"refusal: {text.strip()[:120]}")
            return ParsedRetrieval([], "invalid_json: no JSON array in the answer")
        else:
            i = text.find("[")
            return ParsedRetrieval([], f"text_outside_json: {text[:i].strip()[:60]!r} before the JSON array")
    try:
        obj, endpos = strict_decoder().raw_decode(text)
    except DuplicateKeyError as exc:
        return ParsedRetrieval([], f"duplicate_key: key {exc.args[0]!r} appears more than once")
    except json.JSONDecodeError as exc:
        return ParsedRetrieval([], json_error_reason(text, exc))
    except RecursionError:
        return ParsedRetrieval([], "invalid_json: nesting too deep")
    rest = text[endpos:].strip()
    if rest:
        return ParsedRetrieval([], f"text_outside_json: {rest[:60]!r} after the JSON array")
    if not isinstance(obj, list):
        return ParsedRetrieval(
            [], f"not_an_array: top level is a JSON {type(obj).__name__}, expected an array"
        )
    return ParsedRetrieval([_check_item(n, o, start, end) for n, o in enumerate(obj, 1)], None)


# ------------------------------------------------------------------------------------------------
# fact-check
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    valid: bool
    factual: bool | None = None
    realization_date: date | None = None
    reasoning: str | None = None
    invalid_reason: str | None = None


def _tags(text: str, tag: str) -> list[str]:
    return [m.strip() for m in re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.IGNORECASE | re.DOTALL)]


def parse_fact_check(
    content: str | None,
    *,
    finish_reason: str | None = None,
    refusal: str | None = None,
    ok: bool = True,
    error: str | None = None,
) -> Verdict:
    """Parse a fact-checker's answer: ``<factual>True|False</factual>`` and ``<date>YYYY-MM-DD|N/A</date>``
    (each exactly once), ``<reasoning>`` optional. A factual verdict needs a date; N/A goes only with
    False. Never raises on any text."""
    return contained(
        lambda: _parse_fact_check(clean_text(content), finish_reason, clean_text(refusal) or None, ok, error),
        lambda reason: Verdict(False, invalid_reason=reason),
    )


def _parse_fact_check(content, finish_reason, refusal, ok, error) -> Verdict:
    err = answer_error(content, finish_reason, refusal, ok=ok, error=error)
    if err:
        return Verdict(False, invalid_reason=err)
    text = content or ""
    reasoning = (_tags(text, "reasoning") or [None])[0]
    if reasoning:
        reasoning = reasoning[:4000]
    fac, dat = _tags(text, "factual"), _tags(text, "date")
    if not fac or not dat:
        if looks_like_refusal(text) and not fac and not dat:
            return Verdict(False, reasoning=reasoning, invalid_reason=f"refusal: {text.strip()[:120]}")
        miss = [t for t, v in (("factual", fac), ("date", dat)) if not v]
        return Verdict(
            False, reasoning=reasoning, invalid_reason=f"missing_tag: no <{'>, <'.join(miss)}> tag"
        )
    if len(fac) > 1 or len(dat) > 1:
        return Verdict(
            False, reasoning=reasoning, invalid_reason="ambiguous: a verdict tag appears more than once"
        )
    inj = detect_prompt_injection(text)
    if inj:
        return Verdict(
            False,
            reasoning=reasoning,
            invalid_reason=f"prompt_injection: answer tries to change the instructions ({inj!r})",
        )
    f = fac[0].lower()
    if f not in ("true", "false"):
        return Verdict(
            False,
            reasoning=reasoning,
            invalid_reason=f"bad_verdict: <factual>{fac[0][:30]}</factual> is not True or False",
        )
    factual = f == "true"
    d = dat[0]
    if d.upper() in ("N/A", "NA"):
        if factual:
            return Verdict(
                False,
                reasoning=reasoning,
                invalid_reason="bad_date: a factual verdict needs a realisation date, got N/A",
            )
        return Verdict(True, False, None, reasoning)
    if not _DATE.match(d):
        return Verdict(
            False, reasoning=reasoning, invalid_reason=f"bad_date: <date>{d[:30]}</date> is not YYYY-MM-DD"
        )
    try:
        dd = date.fromisoformat(d)
    except ValueError:
        return Verdict(False, reasoning=reasoning, invalid_reason=f"bad_date: {d!r} is not a calendar date")
    return Verdict(True, factual, dd if factual else None, reasoning)


# ------------------------------------------------------------------------------------------------
# forecasts
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    valid: bool
    predicted_class: str | None = None
    point: tuple[float, ...] | None = None
    probability: float | None = None
    invalid_reason: str | None = None


_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def _number(s: str) -> float | None:
    s = s.strip()
    if s.lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
        return math.nan
    return float(s) if _NUMBER.match(s) else None


def parse_prediction(
    content: str | None,
    kind: str,
    *,
    steps: int = 1,
    classes: Sequence[str] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
    ok: bool = True,
    error: str | None = None,
) -> Prediction:
    """Parse a forecast answer for a task of ``kind`` (trend3 | trend5 | series | event): exactly one
    ``<prediction>`` tag holding a class of ``classes`` (case-insensitive), ``steps`` comma-separated finite
    numbers, or one percentage 0-100 (``%`` optional; returned as a probability in [0, 1]). Numbers are
    ASCII decimals only. Raises ``ValueError`` only for an unknown ``kind``; never on any text."""
    if kind not in ("trend3", "trend5", "series", "event"):
        raise ValueError(f"unknown task kind {kind!r}")
    return contained(
        lambda: _parse_prediction(
            clean_text(content), kind, steps, classes, finish_reason, clean_text(refusal) or None, ok, error
        ),
        lambda reason: Prediction(False, invalid_reason=reason),
    )


def _parse_prediction(content, kind, steps, classes, finish_reason, refusal, ok, error) -> Prediction:
    err = answer_error(content, finish_reason, refusal, ok=ok, error=error)
    if err:
        return Prediction(False, invalid_reason=err)
    text = content or ""
    inj = detect_prompt_injection(text)
    if inj:
        return Prediction(
            False, invalid_reason=f"prompt_injection: answer tries to change the instructions ({inj!r})"
        )
    tags = _tags(text, "prediction")
    if not tags:
        if "<prediction>" in text.lower():
            return Prediction(False, invalid_reason="truncated: <prediction> tag never closed")
        if looks_like_refusal(text):
            return Prediction(False, invalid_reason=f"refusal: {text.strip()[:120]}")
        return Prediction(False, invalid_reason="missing_tag: no <prediction>...</prediction> tag")
    if len(tags) > 1:
        return Prediction(False, invalid_reason=f"ambiguous: {len(tags)} <prediction> tags")
    body = tags[0]
    if kind in ("trend3", "trend5"):
        for c in classes:
            if body.strip().strip(".").lower() == c.lower():
                return Prediction(True, predicted_class=c)
        return Prediction(False, invalid_reason=f"bad_class: {body[:40]!r} not in {list(classes)}")
    if kind == "event":
        s = body.strip().rstrip("%").strip()
        v = _number(s)
        if v is None:
            return Prediction(False, invalid_reason=f"non_numeric: {body[:40]!r} is not one number")
        if not math.isfinite(v):
            return Prediction(False, invalid_reason=f"non_finite: {body[:40]!r}")
        if not 0 <= v <= 100:
            return Prediction(False, invalid_reason=f"out_of_range: {v:g}% outside 0-100")
        return Prediction(True, probability=v / 100.0)
    if kind == "series":
        parts = [p for p in body.replace("\n", ",").split(",") if p.strip()]
        vals = [_number(p) for p in parts]
        if any(v is None for v in vals):
            bad = parts[[v is None for v in vals].index(True)]
            return Prediction(
                False, invalid_reason=f"non_numeric: {bad.strip()[:30]!r} is not a plain number"
            )
        if not all(math.isfinite(v) for v in vals):  # type: ignore[arg-type]
            return Prediction(False, invalid_reason="non_finite: NaN or infinity in the values")
        if len(vals) != steps:
            return Prediction(False, invalid_reason=f"wrong_length: {len(vals)} values, expected {steps}")
        return Prediction(True, point=tuple(float(v) for v in vals))  # type: ignore[arg-type]
    raise ValueError(f"unknown task kind {kind!r}")


@dataclass(frozen=True)
class Levels:
    levels: dict[str, int | None]
    reasons: dict[str, str | None]
    answer_error: str | None = None


def parse_levels(
    content: str | None,
    targets: Sequence[str],
    *,
    finish_reason: str | None = None,
    refusal: str | None = None,
    ok: bool = True,
    error: str | None = None,
) -> Levels:
    """Parse a predictability rating: one ``<levels>`` tag with a JSON object mapping exactly ``targets`` to
    integers 1..5. Whole-answer failures give every target the reason. Never raises on any text."""

    def whole(reason: str) -> Levels:
        return Levels({t: None for t in targets}, {t: reason for t in targets}, reason)

    return contained(
        lambda: _parse_levels(
            clean_text(content), targets, whole, finish_reason, clean_text(refusal) or None, ok, error
        ),
        whole,
    )


def _parse_levels(content, targets, whole, finish_reason, refusal, ok, error) -> Levels:
    err = answer_error(content, finish_reason, refusal, ok=ok, error=error)
    if err:
        return whole(err)
    text = content or ""
    inj = detect_prompt_injection(text)
    if inj:
        return whole(f"prompt_injection: answer tries to change the instructions ({inj!r})")
    tags = _tags(text, "levels")
    if len(tags) != 1:
        return whole("missing_tag: no <levels> tag" if not tags else f"ambiguous: {len(tags)} <levels> tags")
    try:
        obj = strict_decoder().decode(strip_fence(tags[0]))
    except DuplicateKeyError as exc:
        return whole(f"duplicate_key: {exc.args[0]!r}")
    except json.JSONDecodeError as exc:
        return whole(json_error_reason(tags[0], exc))
    except RecursionError:
        return whole("invalid_json: nesting too deep")
    if not isinstance(obj, dict):
        return whole(f"not_an_object: <levels> holds a JSON {type(obj).__name__}")
    unknown = [k for k in obj if k not in targets]
    if unknown:
        return whole(f"unknown_target: {unknown[:5]} not among the rated stocks")
    levels: dict[str, int | None] = {}
    reasons: dict[str, str | None] = {}
    for t in targets:
        v = obj.get(t)
        if t not in obj:
            levels[t], reasons[t] = None, f"missing_target: {t} not rated"
        elif isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 5:
            levels[t], reasons[t] = None, f"bad_level: {t} = {json.dumps(v)[:20]} is not an integer 1-5"
        else:
            levels[t], reasons[t] = v, None
    return Levels(levels, reasons, None)


__all__ = [
    "IMPACT_TYPES",
    "ITEM_FIELDS",
    "Levels",
    "MAX_TEXT",
    "ParsedRetrieval",
    "Prediction",
    "RetrievedItem",
    "SENTIMENTS",
    "Verdict",
    "answer_error",
    "parse_fact_check",
    "parse_levels",
    "parse_prediction",
    "parse_retrieval_answer",
]
