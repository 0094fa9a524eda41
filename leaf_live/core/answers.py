"""Hygiene of LLM answers shared by every track's strict parser: prompt-injection and refusal detection,
one enclosing Markdown fence, strict JSON decoding (duplicate keys and NaN/Infinity rejected) and the
truncated-vs-malformed decision for a JSON error.

Source: LiveMacroEval App. D / LEAF §4.1 (strict output formats; a failure is stored invalid with its
reason, never raised). The track parsers (``leaf_live.macro.agents.parsing``,
``leaf_live.event.agents.parsing``) build their reason codes on these helpers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_INJECTION_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|system|all|your|the)\b"
        r"[^.\n]{0,20}\b(instructions?|prompts?|rules|guardrails?|directives?)",
        r"\b(new|updated|revised|real|actual)\s+(system\s+)?instructions?\s*:",
        r"\bsystem\s+(prompt|message)\b",
        r"\byou\s+are\s+now\b",
        r"<\s*/?\s*(system|instructions?|im_start|im_end)\s*>",
        r"\[\s*/?\s*(system|inst)\s*\]",
        r"^\s*#+\s*(system|instructions?)\b",
        r"^\s*(system|assistant|developer)\s*:",
        r"\b(mark|treat|score|set)\b[^.\n]{0,30}\b(as\s+valid|valid\s*=\s*true)",
        r"\b(bypass|disable|skip)\b[^.\n]{0,20}\b(guardrails?|validation|checks?)\b",
        r"\bjailbreak\b",
    )
)
REFUSAL_PATTERN = re.compile(
    r"\b(I\s*(?:'m|am)\s+(?:sorry|unable|not able)|I\s+(?:can(?:no|')t|cannot|won't|will not)\s+"
    r"(?:help|provide|assist|comply|do that|share|answer|give)|as an AI\b)",
    re.IGNORECASE,
)
FENCE = re.compile(r"^```(?:json|JSON)?[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)


def detect_prompt_injection(text: str) -> str | None:
    """The first instruction-changing phrase in ``text`` (heuristic patterns, line by line), else None."""
    for line in text.splitlines() or [text]:
        for pat in _INJECTION_PATTERNS:
            m = pat.search(line)
            if m:
                return m.group(0).strip()[:80]
    return None


def looks_like_refusal(text: str) -> bool:
    """True when ``text`` contains a refusal sentence ("I'm sorry", "I cannot provide", "as an AI")."""
    return bool(REFUSAL_PATTERN.search(text))


def strip_fence(text: str) -> str:
    """``text`` stripped, without one enclosing ```json ... ``` fence if it has one."""
    s = text.strip()
    m = FENCE.match(s)
    return m.group(1).strip() if m else s


class DuplicateKeyError(ValueError):
    """A JSON object repeats a key (``args[0]`` is the key)."""


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise DuplicateKeyError(k)
        seen[k] = v
    return seen


def _parse_constant(name: str) -> float:
    return float(name.replace("Infinity", "inf"))  # NaN, Infinity, -Infinity -> the caller rejects non-finite


# Python refuses int() of a literal over sys.get_int_max_str_digits() (4300) digits with a ValueError; any
# integer that long is beyond a double anyway, so it is decoded as a float (infinite) for the caller to reject
_MAX_INT_DIGITS = 1000


def _parse_int(text: str) -> int | float:
    return int(text) if len(text) <= _MAX_INT_DIGITS else float(text)


def strict_decoder() -> json.JSONDecoder:
    """A JSON decoder that raises :class:`DuplicateKeyError` on a repeated key (at any level), turns
    ``NaN`` / ``Infinity`` into non-finite floats for the caller to reject, and decodes an integer literal of
    more than 1,000 digits as a float (``inf``: rejected as non-finite) instead of raising Python's int-digit
    limit ``ValueError``. Deep nesting still raises ``RecursionError`` (callers report ``nesting too
    deep``)."""
    return json.JSONDecoder(
        object_pairs_hook=_pairs_no_duplicates, parse_constant=_parse_constant, parse_int=_parse_int
    )


def clean_text(content: object) -> str:
    """``content`` as text a parser can work on and DuckDB can store: a non-string is ``""``, lone UTF-16
    surrogates (not encodable as UTF-8) become ``?`` and NUL characters are dropped."""
    if not isinstance(content, str):
        return ""
    if content.isascii():
        return content.replace("\0", "")
    return content.encode("utf-8", "replace").decode("utf-8").replace("\0", "")


def contained(parse: Callable[[], T], invalid: Callable[[str], T]) -> T:
    """Run ``parse()``; any exception it raises on hostile text becomes ``invalid(reason)`` with reason
    ``unparseable: <exception type>: <first 80 chars of its message>`` (the never-raise contract of every
    answer parser, LiveMacroEval App. D / LEAF §4.1: a bad answer is stored invalid with its reason)."""
    try:
        return parse()
    except RecursionError:
        return invalid("invalid_json: nesting too deep")
    except Exception as exc:  # noqa: BLE001 (the contract: no text may raise)
        detail = clean_text(str(exc)).splitlines()[0][:80] if str(exc) else ""
        return invalid(f"unparseable: {type(exc).__name__}" + (f": {detail}" if detail else ""))


def json_error_reason(json_text: str, exc: json.JSONDecodeError) -> str:
    """``truncated: ...`` when the JSON ends before it closes (unterminated string, more brackets opened than
    closed, error at the last character), else ``invalid_json: ...`` with the decoder's message and position.
    """
    opened = json_text.count("{") + json_text.count("[")
    closed = json_text.count("}") + json_text.count("]")
    if exc.pos >= len(json_text.rstrip()) - 1 or opened > closed or exc.msg.startswith("Unterminated"):
        return f"truncated: unterminated JSON ({exc.msg} at char {exc.pos})"
    return f"invalid_json: {exc.msg} at char {exc.pos}"


__all__ = [
    "DuplicateKeyError",
    "clean_text",
    "contained",
    "FENCE",
    "REFUSAL_PATTERN",
    "detect_prompt_injection",
    "json_error_reason",
    "looks_like_refusal",
    "strict_decoder",
    "strip_fence",
]
