"""The cost of a planned run of real models over the event track (LEAF §3.2 retrieval and dual fact-check,
§4.1-4.3 forecasts with and without events), computed before any call.

The estimate is a product: planned calls (per stage and model) x an assumed token count per call x
litellm's price per token (``litellm.model_cost``, read by :func:`leaf_live.core.llm.token_prices`, the table
that prices every stored call in ``llm_calls.cost_usd``). Pure functions: no Dagster, no environment, no I/O.

Calls per stage (the counts the agents make, ``leaf_live.event.agents``):

* retrieval: ``rounds`` calls of the retriever per (week, target) (``retrieve_events`` makes every round);
* fact-check: two calls (checker a, checker b) per valid retrieved event; the number of events is not known
  before the retrieval ran, so the plan assumes ``events_per_week`` per (week, target) (default
  :data:`EVENTS_PER_TARGET_WEEK`, from the recorded SEER case);
* forecasts: ``trials`` calls per task, context kind (``ts``, ``events``) and forecasting model.

Token counts per call are assumptions (:data:`TOKENS_PER_CALL`), not measurements: the one published figure
is LEAF App. D's "processing a single event consumes approximately 3,864 tokens, inclusive of the
fact-checking process", which the retrieval and fact-check assumptions add up to (see the constant). A
real run stores the provider's own counts and litellm's cost of each call; ``leaf-live sql "SELECT role, avg(
prompt_tokens), avg(completion_tokens) FROM llm_calls GROUP BY 1"`` gives the measured figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

# SEER's recorded case (leaf/events/seer): 3,871 fact-checked events of 50 large caps over 2026-03-05 ..
# 2026-03-25 (3 weeks): 3,871 / 50 / 3 = 25.8 events per target and week.
EVENTS_PER_TARGET_WEEK = 26

# (prompt tokens, completion tokens) per call, assumed. Retrieval + fact-check per event =
# 3 rounds x (15,000 + 2,900) / 26 events + 2 x (700 + 200) = 2,065 + 1,800 = 3,865 tokens ~ LEAF App. D's
# 3,864 per event. A forecast: the prompt's series (14 days) and, with events, 14 days of kept events; the
# answer within §4.1's 4,096-token budget.
TOKENS_PER_CALL: dict[str, tuple[int, int]] = {
    "retrieval": (15_000, 2_900),
    "fact_check": (700, 200),
    "forecast:ts": (1_500, 600),
    "forecast:events": (4_000, 600),
}

DEFAULT_MAX_USD = 1.0  # --max-usd: above this estimate a run needs --yes, and it stops when spent


@dataclass(frozen=True)
class PlannedCalls:
    """One line of a plan: ``calls`` calls of ``model`` (litellm ``provider/model``) in ``stage`` (a key of
    :data:`TOKENS_PER_CALL`), each assumed to use ``prompt_tokens`` in and ``completion_tokens`` out."""

    stage: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def tokens(self) -> int:
        return self.calls * (self.prompt_tokens + self.completion_tokens)


def retrieval_weeks(cutoff_day: date, lookback_days: int, first_monday: date) -> list[date]:
    """The Mondays of the retrieval weeks (Monday..Sunday) a cutoff's events come from: weeks that overlap
    its look-back ``(cutoff_day - lookback_days, cutoff_day]`` and have ended by the cutoff day (a week still
    running at the cutoff would search past it), none before ``first_monday``. Raises ``ValueError`` when
    ``first_monday`` is not a Monday or ``lookback_days < 1``."""
    if first_monday.weekday() != 0:
        raise ValueError(f"first_monday={first_monday}: not a Monday")
    if lookback_days < 1:
        raise ValueError(f"lookback_days={lookback_days}: at least 1")
    lo = cutoff_day - timedelta(days=lookback_days - 1)
    monday = lo - timedelta(days=lo.weekday())
    out = []
    while monday + timedelta(days=6) <= cutoff_day:
        if monday >= first_monday:
            out.append(monday)
        monday += timedelta(days=7)
    return out


def plan_calls(
    *,
    retrievals: int,
    tasks: int,
    retriever: str,
    checkers: tuple[str, str],
    forecasters: Sequence[str],
    rounds: int = 3,
    events_per_week: int = EVENTS_PER_TARGET_WEEK,
    trials: int = 3,
    context_kinds: Sequence[str] = ("ts", "events"),
    tokens: Mapping[str, tuple[int, int]] = TOKENS_PER_CALL,
) -> list[PlannedCalls]:
    """The planned calls of a run: ``retrievals`` (week, target) retrievals of ``rounds`` calls by
    ``retriever``, ``events_per_week`` events each checked once by each of ``checkers``, and ``tasks`` tasks
    forecast ``trials`` times per context kind by every model of ``forecasters`` (litellm model strings).
    Lines with zero calls are left out. Raises ``ValueError`` for negative counts or an unknown context kind.
    """
    for name, v in (("retrievals", retrievals), ("tasks", tasks), ("events_per_week", events_per_week)):
        if v < 0:
            raise ValueError(f"{name}={v}: must be >= 0")
    if rounds < 1 or trials < 1:
        raise ValueError(f"rounds={rounds}, trials={trials}: each must be >= 1")
    lines = [PlannedCalls("retrieval", retriever, retrievals * rounds, *tokens["retrieval"])]
    lines += [
        PlannedCalls("fact_check", c, retrievals * events_per_week, *tokens["fact_check"]) for c in checkers
    ]
    for m in forecasters:
        for kind in context_kinds:
            stage = f"forecast:{kind}"
            if stage not in tokens:
                raise ValueError(f"context kind {kind!r}: no token assumption (known: {sorted(tokens)})")
            lines.append(PlannedCalls(stage, m, tasks * trials, *tokens[stage]))
    return [x for x in lines if x.calls]


def estimate_usd(
    lines: Sequence[PlannedCalls], prices: Mapping[str, tuple[float, float]]
) -> list[tuple[PlannedCalls, float]]:
    """Each line with its estimated cost in USD: ``calls x (prompt_tokens x input price + completion_tokens x
    output price)``, prices in USD per token per model (:func:`leaf_live.core.llm.token_prices`). Raises
    ``KeyError`` naming a model without a price."""
    out = []
    for x in lines:
        if x.model not in prices:
            raise KeyError(f"{x.model}: no price in litellm's table")
        pin, pout = prices[x.model]
        out.append((x, x.calls * (x.prompt_tokens * pin + x.completion_tokens * pout)))
    return out


def format_plan(costed: Sequence[tuple[PlannedCalls, float]], max_usd: float) -> str:
    """The plan as printed before any call: one line per stage and model (calls, tokens per call, tokens,
    USD), then the totals against ``max_usd``."""
    rows = [f"  {'stage':16} {'model':40} {'calls':>7} {'tokens/call in+out':>19} {'tokens':>12} {'USD':>10}"]
    for x, usd in costed:
        per = f"{x.prompt_tokens:,}+{x.completion_tokens:,}"
        rows.append(f"  {x.stage:16} {x.model:40} {x.calls:>7,} {per:>19} {x.tokens:>12,} {usd:>10.4f}")
    calls = sum(x.calls for x, _ in costed)
    tokens = sum(x.tokens for x, _ in costed)
    usd = sum(u for _, u in costed)
    rows.append(f"  {'total':57} {calls:>7,} {'':>19} {tokens:>12,} {usd:>10.4f}  (--max-usd {max_usd:g})")
    return "\n".join(rows)


__all__ = [
    "DEFAULT_MAX_USD",
    "EVENTS_PER_TARGET_WEEK",
    "TOKENS_PER_CALL",
    "PlannedCalls",
    "estimate_usd",
    "format_plan",
    "plan_calls",
    "retrieval_weeks",
]
