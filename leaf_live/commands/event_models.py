"""``leaf-live run --event-models provider/model,...``: the costed path to real models on the event track.

For the cutoff days ``--event-models-from .. --event-models-to`` (UTC days of the task cutoffs, default the
SEER case day 2026-03-25) it plans, prints and then runs, through the project's Dagster jobs and the one LLM
call path (:mod:`leaf_live.core.llm`):

1. retrieval + dual fact-check (job ``leaf_live_event_retrieval``) of every (week, target) partition the
   tasks' events come from (:func:`leaf_live.event.costs.retrieval_weeks`: the weeks of the look-back that
   have ended by the cutoff day); the retriever is the first model, the checkers the first two different
   models;
2. the with-events bundles (``event_bundles``);
3. every model's forecasts with and without events, 3 trials (job ``leaf_live_event_llm_forecasts``: the
   forecasts, then the scores and boards behind the blocking context-leak check; the events rule is "dated
   by the cutoff day", because events retrieved now for a past cutoff are stored after it).

Before any call it prints the planned calls, tokens and USD (:mod:`leaf_live.event.costs`, litellm's price
table) and refuses, in one line, when the estimate is above ``--max-usd`` unless ``--yes`` is given. The run
stops once the calls it made cost ``--max-usd`` (each job gets the budget that is left; a job's client
refuses further calls when it is spent) and keeps everything it stored. Every call reuses a stored answer of
the same request when there is one (``LLMResource.replay_db``), so a rerun after a budget stop or a provider
failure (429/500 after the retries) makes only the calls that were not stored.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from leaf_live.commands.common import CommandError
from leaf_live.core import storage
from leaf_live.core.llm import ModelSpec
from leaf_live.core.settings import SettingsError
from leaf_live.event import costs

SEER_DAY = date(2026, 3, 25)
EXIT_BUDGET = 3  # the run stopped at --max-usd (what it finished is stored)


@dataclass(frozen=True)
class ModelsPlan:
    """The validated ``--event-models`` flags."""

    specs: tuple[ModelSpec, ...]
    first: date
    last: date
    max_usd: float
    yes: bool
    events_per_week: int

    @property
    def days(self) -> list[str]:
        n = (self.last - self.first).days
        return [(self.first + timedelta(days=k)).isoformat() for k in range(n + 1)]


def add_arguments(r) -> None:
    """The ``--event-models`` flags of ``leaf-live run``."""
    r.add_argument(
        "--event-models",
        metavar="PROVIDER/MODEL,...",
        help=(
            "run real models on the event track: retrieval (first model), dual fact-check (first two"
            " different models), forecasts with and without events (every model), for the cutoff days"
            " below; prints the planned calls and USD first"
        ),
    )
    r.add_argument(
        "--event-models-from", help=f"first UTC cutoff day YYYY-MM-DD of --event-models (default {SEER_DAY})"
    )
    r.add_argument("--event-models-to", help="last UTC cutoff day YYYY-MM-DD (default: --event-models-from)")
    r.add_argument(
        "--max-usd",
        type=float,
        help=(
            f"budget of --event-models in USD (default {costs.DEFAULT_MAX_USD:g}): a larger estimate needs"
            " --yes; the run stops when its calls have cost this much"
        ),
    )
    r.add_argument(
        "--yes", action="store_true", help="run --event-models although the estimate is above --max-usd"
    )
    r.add_argument(
        "--events-per-week",
        type=int,
        help=(
            "events per target and week the plan assumes for the fact-check calls (default "
            f"{costs.EVENTS_PER_TARGET_WEEK}, the SEER case's)"
        ),
    )


def _day(value: str | None, flag: str, default: date) -> date:
    if value is None:
        return default
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        raise SystemExit(f"leaf-live run: --{flag} {value!r}: expected a day YYYY-MM-DD") from None


def check_args(args) -> ModelsPlan | None:
    """Validate the flags before anything runs (one line naming the flag on a bad value); None without
    ``--event-models``. The other flags without ``--event-models`` are refused too (they would do nothing)."""
    if not getattr(args, "event_models", None):
        given = [
            f
            for f in ("event_models_from", "event_models_to", "max_usd", "events_per_week")
            if getattr(args, f, None)
        ]
        if given or getattr(args, "yes", False):
            flag = (given[0] if given else "yes").replace("_", "-")
            raise SystemExit(f"leaf-live run: --{flag} needs --event-models")
        return None
    try:
        specs = tuple(ModelSpec.parse(m) for m in args.event_models.split(",") if m.strip())
    except SettingsError as exc:
        raise SystemExit(f"leaf-live run: --event-models: {str(exc).split(': ', 1)[-1]}") from None
    if len({s.litellm_model for s in specs}) < 2:
        raise SystemExit(
            f"leaf-live run: --event-models {args.event_models!r}: the dual fact-check needs two different"
            " models"
        )
    if len({s.model_id for s in specs}) < len(specs):
        raise SystemExit(f"leaf-live run: --event-models {args.event_models!r}: a model is listed twice")
    first = _day(args.event_models_from, "event-models-from", SEER_DAY)
    last = _day(args.event_models_to, "event-models-to", first)
    if last < first:
        raise SystemExit(f"leaf-live run: --event-models-to {last} is before --event-models-from {first}")
    max_usd = costs.DEFAULT_MAX_USD if args.max_usd is None else args.max_usd
    if not (math.isfinite(max_usd) and max_usd > 0):
        raise SystemExit(f"leaf-live run: --max-usd {args.max_usd}: expected a positive number of USD")
    epw = costs.EVENTS_PER_TARGET_WEEK if args.events_per_week is None else args.events_per_week
    if epw < 0:
        raise SystemExit(f"leaf-live run: --events-per-week {epw}: expected an integer >= 0")
    return ModelsPlan(specs, first, last, float(max_usd), bool(args.yes), epw)


# ---------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """What a plan runs: the retrieval partition keys (``<Monday>|<target_id>``), the forecast days that have
    tasks, the task count, and the priced lines (:func:`leaf_live.event.costs.estimate_usd`)."""

    retrieval_keys: tuple[str, ...]
    days: tuple[str, ...]
    tasks: int
    costed: tuple

    @property
    def calls(self) -> int:
        return sum(x.calls for x, _ in self.costed)

    @property
    def usd(self) -> float:
        return sum(u for _, u in self.costed)


def plan_work(con, plan: ModelsPlan) -> Work:
    """The plan from the stored tasks (read-only ``con``): retrieval keys of every non-question task's
    target and look-back week, the forecast calls, priced by litellm's table. Raises :class:`CommandError`
    when the span holds no task or a model has no price."""
    from assets.event_agents import RETRIEVAL_TARGETS, RETRIEVAL_WEEKS
    from leaf_live.core.llm import token_prices
    from leaf_live.event import catalog
    from leaf_live.event.agents.forecasters import TRIALS, cutoff_day
    from leaf_live.event.agents.retrieval import DEFAULT_ROUNDS
    from leaf_live.event.bundles import event_lookback_days

    lo = datetime.combine(plan.first, datetime.min.time(), tzinfo=UTC)
    hi = datetime.combine(plan.last + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    tasks = storage.read_table(con, "forecast_tasks", "cutoff >= ? AND cutoff < ?", [lo, hi])
    if tasks.height == 0:
        raise CommandError(
            f"--event-models: no forecast tasks with a cutoff on {plan.first} .. {plan.last} (UTC days); run"
            " the event track over spans that cover them (--event-from/--event-to)"
        )
    zones = {t.target_id: t.timezone for t in catalog.ALL_TARGETS}
    first_monday = date.fromisoformat(RETRIEVAL_WEEKS.start.strftime("%Y-%m-%d"))
    keys: set[str] = set()
    for r in tasks.select("domain", "target_id", "cutoff").unique().iter_rows(named=True):
        if r["domain"] == "event" or r["target_id"] not in RETRIEVAL_TARGETS:
            continue  # question retrieval is its own job (question weeks), not in this plan
        day = cutoff_day(r["cutoff"], zones.get(r["target_id"], "America/New_York"))
        for monday in costs.retrieval_weeks(day, event_lookback_days(r["domain"]), first_monday):
            keys.add(f"{monday.isoformat()}|{r['target_id']}")
    days = sorted({f"{c:%Y-%m-%d}" for c in tasks["cutoff"].dt.convert_time_zone("UTC")})
    specs = plan.specs
    checkers = (specs[0], next(s for s in specs[1:] if s.litellm_model != specs[0].litellm_model))
    lines = costs.plan_calls(
        retrievals=len(keys),
        tasks=tasks.height,
        retriever=specs[0].litellm_model,
        checkers=(checkers[0].litellm_model, checkers[1].litellm_model),
        forecasters=[s.litellm_model for s in specs],
        rounds=DEFAULT_ROUNDS,
        events_per_week=plan.events_per_week,
        trials=TRIALS,
    )
    prices = {}
    for s in specs:
        p = token_prices(s.litellm_model)
        if p is None:
            raise CommandError(
                f"--event-models {s.litellm_model}: litellm's price table has no price for it, so the run"
                " cannot be costed"
            )
        prices[s.litellm_model] = p
    return Work(tuple(sorted(keys)), tuple(days), tasks.height, tuple(costs.estimate_usd(lines, prices)))


def stored_calls(con, work: Work) -> int:
    """The ok calls already stored in the plan's slices (answered again at no cost by a rerun when their
    requests are unchanged)."""
    slices = [f"retrieval:{k}" for k in work.retrieval_keys] + [
        f"fact_check:{k}" for k in work.retrieval_keys
    ]
    slices += [f"llm:{d}" for d in work.days]
    return con.execute(
        "SELECT count(*) FROM llm_calls WHERE status = 'ok'"
        " AND partition_key IN (SELECT unnest(?::VARCHAR[]))",
        [slices],
    ).fetchone()[0]


def spent_since(db, t0: datetime) -> tuple[float, int, int]:
    """(USD, calls made, calls failed) of the calls requested since ``t0`` (replayed answers keep their first
    request time, so they are not counted)."""
    con = storage.connect_read_only(db)
    try:
        usd, made, failed = con.execute(
            "SELECT coalesce(sum(cost_usd), 0), count(*) FILTER (WHERE attempts > 0), count(*) FILTER (WHERE"
            " status = 'failed') FROM llm_calls WHERE requested_at >= ?",
            [t0],
        ).fetchone()
    finally:
        con.close()
    return float(usd), int(made), int(failed)


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def _llm(resources: dict, plan: ModelsPlan, db, budget: float):
    """The run's LLM resource: the configured call limits, these models, stored answers replayed, ``budget``
    USD left."""
    from resources.llm import FIELD_VARIABLES, LLMResource

    base = resources.get("llm")
    fields = {
        f: getattr(base, f) for f in FIELD_VARIABLES if base is not None and getattr(base, f) is not None
    }
    fields["models"] = ",".join(s.model_id for s in plan.specs)
    return LLMResource(**fields, replay_db=str(db), budget_usd=repr(budget))


def run_event_models(
    db: str | Path, resources: dict, plan: ModelsPlan, instance=None, say: Callable[[str], None] = print
) -> int:
    """Plan, print, refuse or run (module doc). Returns 0 when every planned call is stored, ``EXIT_BUDGET``
    when the budget stopped it, 1 when a job failed or calls failed after their retries (a rerun makes only
    those). Raises :class:`CommandError` (one line, nothing called) for an empty span, an unpriced model or an
    estimate above ``--max-usd`` without ``--yes``."""
    from dagster import AssetKey, DagsterInstance

    from leaf_live.commands.run_report import execute_run, report_failures
    from leaf_live.definitions import build_definitions
    from sensors.event import event_llm_forecasts_job, event_recorded_job, event_retrieval_job

    con = storage.connect_read_only(db)
    try:
        work = plan_work(con, plan)
        stored = stored_calls(con, work)
    finally:
        con.close()
    say(
        f"event models on cutoff days {plan.first} .. {plan.last}: {work.tasks:,} tasks, "
        f"{len(work.retrieval_keys):,} (week, target) retrievals; planned calls, tokens and USD (assumed"
        f" tokens per call x litellm's prices; fact-checks assume {plan.events_per_week} events per target"
        " and week):"
    )
    say(costs.format_plan(work.costed, plan.max_usd))
    if stored:
        say(
            f"  {stored:,} of these calls are stored already: an unchanged request is answered from them"
            " at no cost"
        )
    if work.usd > plan.max_usd and not plan.yes:
        raise CommandError(
            f"the estimate {work.usd:.4f} USD is above --max-usd {plan.max_usd:g}: add --yes to run anyway"
            " (it stops when the budget is spent) or raise --max-usd"
        )
    instance = instance or DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    t0 = datetime.now(UTC)

    def left() -> float:
        return plan.max_usd - spent_since(db, t0)[0]

    def job_run(job_name: str, budget: float, **kw):
        defs = build_definitions({**resources, "llm": _llm(resources, plan, db, budget)})
        result = execute_run(defs.resolve_job_def(job_name), instance=instance, **kw)
        if not result.success:
            report_failures(result)  # the failed checks and steps, on stderr
        return result.success

    ids = [s.model_id for s in plan.specs]
    steps: list[tuple[str, dict]] = [
        (event_retrieval_job.name, {"partition_key": k, "run_config": quiet}) for k in work.retrieval_keys
    ]
    steps.append(
        (event_recorded_job.name, {"run_config": quiet, "asset_selection": [AssetKey("event_bundles")]})
    )
    forecast_cfg = {"models": ids, "require_known_by_cutoff": False}
    keys = [AssetKey(n) for n in ("leaf_llm_forecasts", "leaf_scores", "event_rankings")]
    steps += [
        (
            event_llm_forecasts_job.name,
            {
                "partition_key": d,
                "asset_selection": keys,
                "run_config": {**quiet, "ops": {"leaf_llm_forecasts": {"config": forecast_cfg}}},
            },
        )
        for d in work.days
    ]
    ok = True
    stopped = False
    for job_name, kw in steps:
        budget = left()
        if budget <= 0:
            stopped = True
            break
        ok = job_run(job_name, budget, **kw) and ok
        if not ok:
            break
    usd, made, failed = spent_since(db, t0)
    stopped = stopped or usd >= plan.max_usd
    say(
        f"event models: {made:,} calls made for {usd:.4f} USD (estimate {work.usd:.4f}); {failed:,} failed"
        " or not made; stored answers replayed for the rest"
    )
    if stopped:
        print(
            f"leaf-live run: --event-models stopped at the budget: {usd:.4f} USD spent of --max-usd"
            f" {plan.max_usd:g}; what finished is stored; rerun the same command to go on (stored answers"
            " are not paid again)",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    if not ok or failed:
        print(
            f"leaf-live run: --event-models: {failed:,} calls failed after their retries"
            + ("" if ok else " and a job failed")
            + "; what finished is stored; rerun the same command to make only the missing calls",
            file=sys.stderr,
        )
        return 1
    return 0


__all__ = [
    "EXIT_BUDGET",
    "ModelsPlan",
    "Work",
    "add_arguments",
    "check_args",
    "plan_work",
    "run_event_models",
]
