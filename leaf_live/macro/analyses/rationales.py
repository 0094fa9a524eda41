"""What the nowcast rationales contain (LiveMacroEval App. G, Table 7).

A *block* is the rationale text stored with one nowcast row (``nowcasts.rationale``; one per variable and
call for the LLM agents). Self-reports: they record what the agent says it did. Per block:

* ``names_agency``: names a statistical agency -- the BLS, the BEA, the Census Bureau or the ISM (long or
  short names);
* ``judges_own_figure``: explicit judgement over its own figure (adjusting, shaving, nudging, trimming,
  tilting, leaning, tempering, haircuts, rounding up/down, "I estimate/expect/assume", "my estimate");
* ``states_vintage``: states the vintage of the data (vintage, advance/second/third estimate, preliminary,
  revised, first print, initial release);
* ``performs_arithmetic``: at least one explicit calculation ``<expression> (= | ≈ | ~ | → | ->) <number>``.

The paper does not publish its keyword lists; these are ours (:data:`AGENCY_RE`, :data:`JUDGEMENT_RE`,
:data:`VINTAGE_RE`), so shares are comparable in kind, not to the digit.

Checking the arithmetic: each extracted expression (numbers with thousands separators, ``+ - − × * x / ÷ ^``,
parentheses, ``%`` = /100) is evaluated with a restricted AST evaluator and matches when
``|computed - stated| <= 2% |stated|`` (the paper's tolerance; the agent states rounded results). A result
written with ``%`` also matches when the expression equals the number over 100 ((1.013^4 - 1) = 5.3%).

Citation domains: each URL of ``nowcasts.citations`` (JSON list) by host without ``www.``; ``official``
= a ``.gov`` host, the ISM or a Federal Reserve bank, ``aggregator`` = a consensus/forecast aggregator.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import polars as pl

from leaf_live.core import pit
from leaf_live.macro.analyses.series import AnalysisError, is_agent, table_frame

TOLERANCE = 0.02
AGENCY_RE = re.compile(
    r"\b(BLS|BEA|ISM|Bureau of Labor Statistics|Bureau of Economic Analysis|Census(?: Bureau)?|"
    r"Institute for Supply Management)\b"
)
JUDGEMENT_RE = re.compile(
    r"\b(adjust\w*|shav\w*|nudg\w*|trim\w*|tilt\w*|lean(?:s|ing)?|temper\w*|haircut\w*|shade[ds]?|"
    r"round(?:ed|ing)? (?:up|down)|I (?:estimate|expect|assume|project|judge)|my"
    r" (?:estimate|view|forecast|judg\w*))\b",
    re.IGNORECASE,
)
VINTAGE_RE = re.compile(
    r"\b(vintages?|advance estimate|second estimate|third estimate|preliminary|prelim\.?|revised|revisions?|"
    r"first print|initial (?:print|release|estimate))\b",
    re.IGNORECASE,
)
OFFICIAL_HOSTS = frozenset(
    {
        "ismworld.org",
        "federalreserve.gov",
        "newyorkfed.org",
        "atlantafed.org",
        "clevelandfed.org",
        "chicagofed.org",
        "stlouisfed.org",
        "philadelphiafed.org",
        "kansascityfed.org",
        "dallasfed.org",
        "richmondfed.org",
        "frbsf.org",
        "minneapolisfed.org",
        "bostonfed.org",
    }
)
AGGREGATOR_HOSTS = frozenset(
    {
        "tradingeconomics.com",
        "investing.com",
        "forexfactory.com",
        "marketwatch.com",
        "fxstreet.com",
        "econoday.com",
        "briefing.com",
        "dailyfx.com",
        "myfxbook.com",
        "kalshi.com",
        "polymarket.com",
    }
)

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_RELATION = re.compile(r"≈|~=|=|→|->|~")
_RESULT = re.compile(r"\s*\$?\s*([-−]?)\s*\$?\s*(" + _NUM + r")\s*(%)?")
_EXPR_CHARS = set("0123456789.,+-−×*/÷^()% x$")
_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


@dataclass(frozen=True)
class Calculation:
    """One explicit calculation found in a block."""

    expression: str  # as written
    n_operands: int
    stated: float  # the number after the relation sign (as written, % not applied)
    stated_is_percent: bool
    computed: float
    matched: bool
    rel_error: float  # |computed - stated| / |stated| of the closer reading


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    raise ValueError(f"not arithmetic: {ast.dump(node)}")


def _python_expr(text: str) -> str:
    s = text.replace("$", "").replace("−", "-").replace("×", "*").replace("÷", "/").replace("^", "**")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # thousands separators
    s = re.sub(r"(?<=[\d)])\s*x\s*(?=[\d(.])", "*", s)  # 1.2 x 3
    s = re.sub(r"(\d+(?:\.\d+)?|\.\d+)\s*%", r"(\1/100)", s)
    return s


def evaluate(expression: str) -> float:
    """Value of an arithmetic expression as an agent writes it (``24,066.0×(1+0.013)``, ``1.3%``,
    ``(1.013^4 - 1)``). Raises :class:`ValueError` when it is not arithmetic over numbers."""
    tree = ast.parse(_python_expr(expression).strip(), mode="eval")
    return _eval(tree)


def _has_operator(expression: str) -> bool:
    try:
        tree = ast.parse(_python_expr(expression).strip(), mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(n, ast.BinOp) for n in ast.walk(tree))


def _left_expression(text: str) -> str | None:
    """The longest arithmetic expression ending where ``text`` ends (with at least one operator)."""
    i = len(text)
    while i > 0 and text[i - 1] in _EXPR_CHARS:
        i -= 1
    cand = text[i:].strip()
    while cand:
        if re.search(r"\d", cand) and _has_operator(cand):
            try:
                evaluate(cand)
                return cand
            except (ValueError, ZeroDivisionError, SyntaxError, OverflowError, TypeError):
                pass
        cand = cand[1:].lstrip()
    return None


def matches(
    computed: float, stated: float, *, percent: bool, tolerance: float = TOLERANCE
) -> tuple[bool, float]:
    """(|computed - stated| <= tolerance * |stated|, relative error), also trying stated/100 when
    ``percent``."""
    best = float("inf")
    for target in (stated, stated / 100.0) if percent else (stated,):
        if target == 0:
            err = 0.0 if abs(computed) <= 1e-12 else float("inf")
        else:
            err = abs(computed - target) / abs(target)
        best = min(best, err)
    return best <= tolerance + 1e-12, best


def extract_calculations(text: str, *, tolerance: float = TOLERANCE) -> list[Calculation]:
    """Every explicit calculation ``<expression> <relation> <number>`` in ``text``, recomputed (see module
    doc). A relation sign without an arithmetic expression on its left (``new level = ...``) is skipped."""
    out: list[Calculation] = []
    for m in _RELATION.finditer(text or ""):
        expr = _left_expression(text[: m.start()])
        r = _RESULT.match(text, m.end())
        if expr is None or r is None:
            continue
        stated = float(r.group(2).replace(",", "")) * (-1 if r.group(1) else 1)
        computed = evaluate(expr)
        ok, err = matches(computed, stated, percent=bool(r.group(3)), tolerance=tolerance)
        out.append(
            Calculation(expr, len(re.findall(_NUM, expr)), stated, bool(r.group(3)), computed, ok, err)
        )
    return out


def host(url: str) -> str | None:
    """Lower-case host of a URL without ``www.`` (None for text that is not a URL)."""
    u = (url or "").strip()
    if not u:
        return None
    net = urlsplit(u if "//" in u else f"//{u}").netloc.lower().split("@")[-1].split(":")[0]
    if "." not in net:
        return None
    return net[4:] if net.startswith("www.") else net


def host_category(h: str) -> str:
    """``official`` (.gov, ISM, Federal Reserve banks), ``aggregator`` or ``other``."""
    if h.endswith(".gov") or h in OFFICIAL_HOSTS or any(h.endswith("." + o) for o in OFFICIAL_HOSTS):
        return "official"
    if h in AGGREGATOR_HOSTS or any(h.endswith("." + a) for a in AGGREGATOR_HOSTS):
        return "aggregator"
    return "other"


def citation_urls(citations: str | None) -> list[str]:
    """The URLs of a ``nowcasts.citations`` JSON list (strings, or objects with ``url``). Raises
    :class:`AnalysisError` naming the value when it is not a JSON list."""
    if citations is None or not citations.strip():
        return []
    try:
        v = json.loads(citations)
    except json.JSONDecodeError:
        raise AnalysisError(f"nowcasts.citations={citations[:80]!r}: not JSON") from None
    if not isinstance(v, list):
        raise AnalysisError(f"nowcasts.citations={citations[:80]!r}: not a JSON list")
    return [x if isinstance(x, str) else str(x.get("url", "")) for x in v if isinstance(x, (str, dict))]


def audit_rationales(
    nowcasts: pl.DataFrame,
    *,
    tolerance: float = TOLERANCE,
    model_ids: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """App. G over every ``nowcasts`` row with a non-empty rationale of an agent (default every
    :func:`.series.is_agent` model: a baseline's "rationale" describes its fit, not what an agent says it
    did).

    Returns ``(blocks, calculations, domains)`` frames of the tables ``rationale_audit`` (one row per block),
    ``rationale_calculations`` (one row per explicit calculation) and ``citation_domains`` (one row per model
    and cited host, with its share of the model's citations). ``available_at`` of a block is the nowcast's; of
    a domain row the latest block citing it. Raises :class:`AnalysisError` for missing columns or malformed
    citations."""
    need = (
        "model_id",
        "indicator_id",
        "reference_period",
        "issued_at",
        "value",
        "valid",
        "rationale",
        "citations",
        "available_at",
    )
    pit.require_columns(nowcasts, need, "nowcasts", AnalysisError)
    src = nowcasts.filter(pl.col("rationale").is_not_null() & (pl.col("rationale").str.strip_chars() != ""))
    keep = (
        set(model_ids)
        if model_ids is not None
        else {m for m in src["model_id"].unique().to_list() if is_agent(m)}
    )
    src = src.filter(pl.col("model_id").is_in(sorted(keep)))
    blocks, calcs = [], []
    dom: dict[tuple[str, str], list] = {}
    totals: Counter = Counter()
    for r in src.select(need).iter_rows(named=True):
        text = r["rationale"]
        cs = extract_calculations(text, tolerance=tolerance)
        urls = citation_urls(r["citations"])
        key = {k: r[k] for k in ("model_id", "indicator_id", "reference_period", "issued_at")}
        blocks.append(
            {
                "partition_key": r["model_id"],
                **key,
                "valid": r["valid"],
                "value": r["value"],
                "n_chars": len(text),
                "names_agency": bool(AGENCY_RE.search(text)),
                "judges_own_figure": bool(JUDGEMENT_RE.search(text)),
                "states_vintage": bool(VINTAGE_RE.search(text)),
                "performs_arithmetic": bool(cs),
                "n_calculations": len(cs),
                "n_calculations_matched": sum(c.matched for c in cs),
                "n_citations": len(urls),
                "available_at": r["available_at"],
            }
        )
        for i, c in enumerate(cs):
            calcs.append(
                {
                    "partition_key": r["model_id"],
                    **key,
                    "calc_index": i,
                    "expression": c.expression,
                    "n_operands": c.n_operands,
                    "stated": c.stated,
                    "stated_is_percent": c.stated_is_percent,
                    "computed": c.computed,
                    "rel_error": c.rel_error,
                    "matched": c.matched,
                    "available_at": r["available_at"],
                }
            )
        for h in filter(None, (host(u) for u in urls)):
            d = dom.setdefault((r["model_id"], h), [0, 0, None, None])
            d[0] += 1
            if d[3] is not key:
                d[1] += 1
                d[3] = key
            d[2] = r["available_at"] if d[2] is None else max(d[2], r["available_at"])
            totals[r["model_id"]] += 1
    domains = [
        {
            "partition_key": m,
            "model_id": m,
            "domain": h,
            "category": host_category(h),
            "n_citations": v[0],
            "n_blocks": v[1],
            "share": v[0] / totals[m],
            "available_at": v[2],
        }
        for (m, h), v in sorted(dom.items())
    ]
    return (
        table_frame("rationale_audit", blocks),
        table_frame("rationale_calculations", calcs),
        table_frame("citation_domains", domains),
    )
