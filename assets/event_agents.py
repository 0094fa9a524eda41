"""Event track (LEAF), agent stage: retrieval, dual fact-check, the recorded SEER events and the LLM
forecasters with and without events (LEAF §3.2, §4.1-4.4; issue 11).

Wiring only: the science is ``leaf_live.event.agents`` (retrieval, fact-check, forecasters),
``leaf_live.event.dedup`` and ``leaf_live.event.sources.recorded_events``; every model call goes through the
run's one
:class:`~leaf_live.core.llm.LLMClient` (:class:`resources.LLMResource`) and is stored in ``llm_calls``.

Partitions:

* ``retrieved_events`` and ``fact_checked_events``: **week x target** (:data:`RETRIEVAL_PARTITIONS`; key
  ``<Monday>|<target_id>``, the science's own ``partition_key(interval_start, target)``). DESIGN.md schedules
  the event retrieval weekly, and LEAF's agent searches multi-day intervals; a week per target is one
  retrieval of ``rounds`` calls and one fact-check of its events, and a week partition exists once the week
  has ended (its interval Monday..Sunday is over), so a search never asks about days still to come. Targets
  with two domains (Boston and San Francisco are weather cities and load areas) are one partition: events
  attach to the target id.
* ``leaf_llm_forecasts`` and ``predictability_ratings``: **UTC day of the cutoff** (:data:`EVENT_DAYS`); the
table
  slice is ``llm:<day>`` (``forecasters.llm_partition_key``), so a backfill of one day replaces only that
  day's forecasts, trials and calls.
* ``recorded_events``: unpartitioned; writes the SEER case's ``<window start>|<ticker>`` slices (retriever
  ``recorded/seer``) of ``retrieved_events`` / ``fact_checked_events`` and ``recorded_case_checks``.

With no model configured (no ``LEAF_LIVE_LLM_MODELS``) the LLM assets log the message and succeed writing
nothing. The blocking check :func:`context_leaks_check` refuses any stored LLM forecast whose frozen context
holds an event dated after its task's cutoff day (or, under the strict rule, known after the cutoff): it stops
``leaf_scores``.
"""

import asyncio
from datetime import UTC, date, datetime, timedelta

import polars as pl
from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetDep,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    WeeklyPartitionsDefinition,
    asset,
    asset_check,
)
from pydantic import Field

from assets.common import (
    DUCKDB_POOL,
    SAMPLE,
    SINGLE_RUN,
    record_partition_rows,
    refuse_if_run_finished,
    run_partition_keys,
    sql_check,
    table_metadata,
    unique_key_check,
    write_partitions,
    write_tables,
)
from assets.event_data import EVENT_DAYS, EVENT_QUESTIONS, leaf_targets, market_prices, prediction_markets
from assets.event_tasks import event_tasks, forecast_tasks
from leaf_live.core import storage
from leaf_live.core.llm import LLMClient, ModelSpec, llm_calls_frame, no_models_message
from leaf_live.event import analyses, bundles, catalog
from leaf_live.event.agents.factcheck import fact_check_events
from leaf_live.event.agents.forecasters import (
    TRIALS,
    LLMForecaster,
    context_leaks,
    rate_predictability,
)
from leaf_live.event.agents.retrieval import (
    DEFAULT_ROUNDS,
    RetrievalTarget,
    question_target,
    question_weeks,
    retrieve_events,
)
from leaf_live.event.dedup import find_merges
from leaf_live.event.sources import recorded_events as seer
from resources import EventSearchResource, LeafLiveDB, LLMResource, RecordedEventsResource

GROUP = "event_agents"
LLM_PRODUCER = "leaf_llm_forecasts"  # producer of the LLM slices of leaf_forecasts
CONTEXT_KINDS = ("ts", "events", "events_unfiltered", "alpha", "other_alpha")


def _retrieval_targets() -> dict[str, RetrievalTarget]:
    """target_id -> what the agent searches for (a target id in two domains: the first domain, both names)."""
    out: dict[str, RetrievalTarget] = {}
    for t in catalog.ALL_TARGETS:
        if t.target_id in out:
            prev = out[t.target_id]
            out[t.target_id] = RetrievalTarget(prev.domain, t.target_id, f"{prev.name}; {t.name}")
        else:
            name = f"{t.name} ({t.symbol})" if t.symbol else t.name
            out[t.target_id] = RetrievalTarget(t.domain, t.target_id, name)
    return out


RETRIEVAL_TARGETS = _retrieval_targets()
# Weeks Monday..Sunday (day_offset=1) from the first Monday of the markets' default span; only ended weeks.
RETRIEVAL_WEEKS = WeeklyPartitionsDefinition(start_date="2025-09-29", day_offset=1, fmt="%Y-%m-%d")
# Dimension names sort "date" < "target", so a key reads "<Monday>|<target_id>" = seer.partition_key(...).
RETRIEVAL_PARTITIONS = MultiPartitionsDefinition(
    {"date": RETRIEVAL_WEEKS, "target": StaticPartitionsDefinition(list(RETRIEVAL_TARGETS))}
)


# Prediction-market questions are retrieval targets too (weekly, per question; LEAF C.2.5): week x question,
# the question dimension being the questions' own dynamic partitions, so a key reads "<Monday>|<question_id>".
QUESTION_RETRIEVAL_PARTITIONS = MultiPartitionsDefinition(
    {"date": RETRIEVAL_WEEKS, "question": EVENT_QUESTIONS}
)


def _week_target(key: str, con=None) -> tuple[date, date, RetrievalTarget]:
    day, target = key.split("|", 1)
    start = date.fromisoformat(day)
    return start, start + timedelta(days=6), RETRIEVAL_TARGETS[target]


def _week_question(key: str, con) -> tuple[date, date, RetrievalTarget] | str:
    """A question week's interval and target from the stored ``prediction_markets`` row, or the one-line
    reason there is nothing to search (question not stored, not open that week, week not over)."""
    day, qid = key.split("|", 1)
    start = date.fromisoformat(day)
    q = storage.read_table(con, "prediction_markets", "question_id = ?", [qid])
    if q.height == 0:
        return f"question {qid}: not in prediction_markets (materialize its prediction_markets partition)"
    r = q.row(0, named=True)
    if not question_weeks(r["open_at"], r["resolve_at"], [start], now=datetime.now(UTC)):
        return (
            f"question {qid} is not open in the week of {day} (opened {r['open_at']}, resolves"
            f" {r['resolve_at']}) or the week has not ended"
        )
    return start, start + timedelta(days=6), question_target(qid, r["question"], r["category"])


def _question_names(con, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    q = storage.read_table(con, "prediction_markets", f"question_id IN ({', '.join('?' for _ in ids)})", ids)
    return {
        r["question_id"]: question_target(r["question_id"], r["question"], r["category"]).name
        for r in q.iter_rows(named=True)
    }


def _configured(llm: LLMResource, context: AssetExecutionContext):
    """(config, client) of the run, or None after logging the no-model message."""
    cfg = llm.config()
    message = no_models_message(cfg)
    if message:
        context.log.warning(message)
        return None
    return cfg, llm.client()


def _pick(cfg, wanted: list[str], field: str) -> list[ModelSpec]:
    """The configured models named in ``wanted`` (all when empty); an unknown name raises naming the field."""
    have = {s.model_id: s for s in cfg.models}
    for m in wanted:
        if m not in have:
            raise ValueError(
                f"{field}: {m!r} is not a configured model (LEAF_LIVE_LLM_MODELS: {sorted(have)})"
            )
    return [have[m] for m in wanted] if wanted else list(cfg.models)


# Each step below stores its call log first (its own transaction: a paid call's record survives whatever
# follows), then its output tables together in ONE transaction (issue 17), so a killed step leaves the outputs
# as before or after and every stored output row has its raw response.


def write_retrieval(con, key: str, events: pl.DataFrame, merges: pl.DataFrame) -> int:
    """Replace slice ``key`` of ``retrieved_events`` with ``events`` and of ``event_merges`` with ``merges``
    in ONE transaction (:func:`assets.common.write_tables`): no merge naming an event that is not stored.
    Returns the events written."""
    written = write_tables(con, {"retrieved_events": events, "event_merges": merges}, [key])
    return written["retrieved_events"][key]


def write_fact_checks(con, key: str, checks: pl.DataFrame, decided: pl.DataFrame) -> int:
    """Replace slice ``key`` of ``fact_checks`` (the checkers' verdicts) with ``checks`` and of
    ``fact_checked_events`` (the decision they make) with ``decided`` in ONE transaction. Returns the
    decided events written."""
    written = write_tables(con, {"fact_checked_events": decided, "fact_checks": checks}, [key])
    return written["fact_checked_events"][key]


def write_llm_forecasts(con, pk: str, trials: pl.DataFrame, forecasts: pl.DataFrame) -> int:
    """Replace slice ``pk`` (``llm:<day>``) of ``leaf_forecast_trials`` with ``trials`` and of
    ``leaf_forecasts`` (producer ``leaf_llm_forecasts``) with ``forecasts`` in ONE transaction: a forecast
    is never stored without the trials it aggregates. Returns the forecasts written."""
    where = {"producer": LLM_PRODUCER, "partition_key": [pk]}
    write_tables(
        con, {"leaf_forecast_trials": trials}, [pk], also=[storage.Slice("leaf_forecasts", forecasts, where)]
    )
    return forecasts.height


def write_recorded_case(
    con,
    retrieved: pl.DataFrame,
    checked: pl.DataFrame,
    checks: pl.DataFrame,
    picks: pl.DataFrame,
    keys: list[str],
) -> list[int]:
    """Store the recorded case's four tables in ONE transaction (``storage.replace_partitions``): the
    slices ``keys`` of ``retrieved_events`` / ``fact_checked_events`` and the case's partition
    (``seer.CASE_NAME``) of ``recorded_case_checks`` / ``selective_predictions``, so a killed step leaves
    the case as before or after. Returns rows written per table, in that order."""
    case_key = {"partition_key": seer.CASE_NAME}
    refuse_if_run_finished()
    return storage.replace_partitions(
        con,
        [
            storage.Slice("retrieved_events", retrieved, {"partition_key": keys}),
            storage.Slice("fact_checked_events", checked, {"partition_key": keys}),
            storage.Slice("recorded_case_checks", checks, case_key),
            storage.Slice("selective_predictions", picks, case_key),
        ],
    )


def _write_calls(con, client: LLMClient, start: int, key: str) -> int:
    """The run's calls since record ``start`` as the ``llm_calls`` slice ``key`` (written before the rows that
    cite them, so every stored answer has its raw response)."""
    calls = llm_calls_frame(client.records[start:], key)
    storage.replace_partition(con, "llm_calls", calls, {"partition_key": key})
    return calls.height


def _every_partition_of(*assets) -> list[AssetDep]:
    """Deps on every partition of ``assets`` (other partitionings than the day's)."""
    return [AssetDep(a, partition_mapping=AllPartitionMapping()) for a in assets]


# ---------------------------------------------------------------------------------------------
# retrieval and fact-check (week x target)
# ---------------------------------------------------------------------------------------------


class RetrievalConfig(Config):
    retriever: str = Field(
        default="",
        description=(
            "configured model (provider/model@design) of the retrieval agent "
            "(default: the first of LEAF_LIVE_LLM_MODELS)"
        ),
    )
    rounds: int = Field(default=DEFAULT_ROUNDS, description="search rounds per week and target (LEAF: 3)")
    k_docs: int = Field(default=8, description="documents per round from the offline store")


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=RETRIEVAL_PARTITIONS,
    deps=[leaf_targets],
    metadata=table_metadata("retrieved_events", "event_merges", "llm_calls"),
    description=(
        "Retrieval agent (LEAF §3.2, Fig. 7) for one week (Monday..Sunday) and target: several rounds of"
        " search restricted to the week, each round shown the events found so far; the search backend is the"
        " event_search resource (snapshot: BM25 over recorded documents published by the week's end; live:"
        " the model's provider web search). Every item, valid or not, is a retrieved_events row;"
        " near-duplicates within the slice are recorded in event_merges; calls in llm_calls (slice"
        " retrieval:<key>). With no LEAF_LIVE_LLM_MODELS it does nothing."
    ),
)
def retrieved_events(
    context: AssetExecutionContext,
    config: RetrievalConfig,
    db: LeafLiveDB,
    llm: LLMResource,
    event_search: EventSearchResource,
) -> MaterializeResult:
    return _retrieve(context, config, db, llm, event_search, _week_target)


def _retrieve(context, config: RetrievalConfig, db: LeafLiveDB, llm: LLMResource, event_search, target_of):
    """The retrieval of every partition key of the run (``target_of(key, con)``: interval and target, or the
    reason there is nothing to search, which empties the key's slice and is logged)."""
    got = _configured(llm, context)
    if got is None:
        return MaterializeResult(metadata={"status": "no model configured"})
    cfg, client = got
    spec = _pick(cfg, [config.retriever] if config.retriever else [], "retriever")[0]
    store = event_search.client()
    rows = merged = calls = 0
    skipped: list[str] = []
    for key in run_partition_keys(context):
        with db.get_connection() as con:
            got_target = target_of(key, con)
        if isinstance(got_target, str):
            context.log.info(got_target)
            skipped.append(got_target)
            with db.get_connection() as con:  # both tables emptied: no merge left naming a dropped event
                write_retrieval(
                    con, key, storage.empty_frame("retrieved_events"), storage.empty_frame("event_merges")
                )
            continue
        start, end, target = got_target
        n0 = len(client.records)
        ev = asyncio.run(
            retrieve_events(
                client, spec, target, start, end, rounds=config.rounds, store=store, k_docs=config.k_docs
            )
        )
        merges = find_merges(ev) if ev.height else storage.empty_frame("event_merges")
        with db.get_connection() as con:
            calls += _write_calls(con, client, n0, f"retrieval:{key}")
            written = write_retrieval(con, key, ev, merges)
        rows, merged = rows + written, merged + merges.height
    meta = {
        "rows": rows,
        "merged": merged,
        "calls": calls,
        "retriever": spec.model_id,
        "backend": "offline_store" if store is not None else "web_search",
    }
    if skipped:
        meta["skipped"] = MetadataValue.json(skipped[:SAMPLE])
    return MaterializeResult(metadata=meta)


class FactCheckConfig(Config):
    checker_a: str = Field(
        default="", description="configured model of checker a (default: the first configured)"
    )
    checker_b: str = Field(
        default="",
        description=(
            "configured model of checker b, a different model (default: the "
            "first configured model after checker a with another litellm model)"
        ),
    )


def _checkers(cfg, config: FactCheckConfig) -> tuple[ModelSpec, ModelSpec] | str:
    a = _pick(cfg, [config.checker_a] if config.checker_a else [], "checker_a")[0]
    if config.checker_b:
        return a, _pick(cfg, [config.checker_b], "checker_b")[0]
    other = [s for s in cfg.models if s.litellm_model != a.litellm_model]
    if not other:
        return (
            "the dual fact-check needs two different models; LEAF_LIVE_LLM_MODELS has only "
            f"{sorted({s.litellm_model for s in cfg.models})}"
        )
    return a, other[0]


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=RETRIEVAL_PARTITIONS,
    deps=[retrieved_events],
    metadata=table_metadata("fact_checked_events", "fact_checks", "llm_calls"),
    description=(
        "Dual fact-check (LEAF §3.2, Fig. 8, 18-19) of the week's valid retrieved events of a target: two"
        " checkers on different models each give a factual verdict and the realisation date; kept only if"
        " both say factual, the dates agree and the date is not after the week's last day. Near-duplicates"
        " merged at retrieval are recorded as dropped 'merged' without a call. Verdicts in fact_checks, calls"
        " in llm_calls (slice fact_check:<key>). With no LEAF_LIVE_LLM_MODELS, or only one model, it does"
        " nothing."
    ),
)
def fact_checked_events(
    context: AssetExecutionContext, config: FactCheckConfig, db: LeafLiveDB, llm: LLMResource
) -> MaterializeResult:
    def names(con, ids: list[str]) -> dict[str, str]:
        return {t: RETRIEVAL_TARGETS[t].name for t in ids if t in RETRIEVAL_TARGETS}

    return _fact_check(context, config, db, llm, names)


def _fact_check(context, config: FactCheckConfig, db: LeafLiveDB, llm: LLMResource, names_of):
    """The dual fact-check of every partition key of the run (``names_of(con, target_ids)``: the names the
    checkers are told)."""
    got = _configured(llm, context)
    if got is None:
        return MaterializeResult(metadata={"status": "no model configured"})
    cfg, client = got
    pair = _checkers(cfg, config)
    if isinstance(pair, str):
        context.log.warning(pair)
        return MaterializeResult(metadata={"status": pair})
    a, b = pair
    kept = dropped = 0
    for key in run_partition_keys(context):
        with db.get_connection() as con:
            ev = storage.read_table(con, "retrieved_events", "partition_key = ?", [key])
            merges = storage.read_table(con, "event_merges", "partition_key = ?", [key])
            names = names_of(con, ev["target_id"].unique().to_list())
        n0 = len(client.records)
        checks, decided = asyncio.run(fact_check_events(client, a, b, ev, merges=merges, target_names=names))
        with db.get_connection() as con:
            _write_calls(con, client, n0, f"fact_check:{key}")
            write_fact_checks(con, key, checks, decided)
        kept += int(decided["kept"].sum()) if decided.height else 0
        dropped += decided.height - (int(decided["kept"].sum()) if decided.height else 0)
    return MaterializeResult(
        metadata={"kept": kept, "dropped": dropped, "checker_a": a.model_id, "checker_b": b.model_id}
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=QUESTION_RETRIEVAL_PARTITIONS,
    deps=[prediction_markets],
    metadata=table_metadata("retrieved_events", "event_merges", "llm_calls"),
    description=(
        "Retrieval agent for one week (Monday..Sunday) and prediction-market question (LEAF C.2.5: events per"
        " question, weekly): the question text is the search target, domain event, target_id = the question"
        " id (the event tasks' target, so kept events reach its bundles). A week the question is not open"
        " (or that has not ended) empties its slice and says so. Same backends, rows and calls as"
        " retrieved_events (slice retrieval:<Monday>|<question_id>)."
    ),
)
def question_retrieved_events(
    context: AssetExecutionContext,
    config: RetrievalConfig,
    db: LeafLiveDB,
    llm: LLMResource,
    event_search: EventSearchResource,
) -> MaterializeResult:
    return _retrieve(context, config, db, llm, event_search, _week_question)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=QUESTION_RETRIEVAL_PARTITIONS,
    deps=[question_retrieved_events],
    metadata=table_metadata("fact_checked_events", "fact_checks", "llm_calls"),
    description=(
        "Dual fact-check of a question week's valid retrieved events (the rules of fact_checked_events), the"
        " checkers told the question text."
    ),
)
def question_fact_checked_events(
    context: AssetExecutionContext, config: FactCheckConfig, db: LeafLiveDB, llm: LLMResource
) -> MaterializeResult:
    return _fact_check(context, config, db, llm, _question_names)


# ---------------------------------------------------------------------------------------------
# the recorded SEER case
# ---------------------------------------------------------------------------------------------


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[market_prices, forecast_tasks],
    metadata=table_metadata(
        "recorded_case_checks", "retrieved_events", "fact_checked_events", "selective_predictions"
    ),
    description=(
        "The recorded SEER case Stock-Basket50 (cutoff 2026-03-25; 3,871 distinct fact-checked events of 50 "
        "large caps) as retriever recorded/seer rows of retrieved_events and fact_checked_events (check_mode "
        "'recorded': the source fact-checked them with LEAF's dual check; never counted in a filter rate), "
        "available at the cutoff close, one slice per stock (<window start>|<ticker>); recorded_case_checks: "
        "its closes against market_prices and its realised next-day labels against the App. C.1 labels our "
        "trend tasks compute; and SEER's recorded answer (its selective picks with reasons) as model "
        "recorded/seer in selective_predictions, scored against our labels. Part of leaf-live run."
    ),
)
def recorded_events(
    context: AssetExecutionContext, db: LeafLiveDB, recorded_events: RecordedEventsResource
) -> MaterializeResult:
    case = recorded_events.client()
    retrieved, checked = seer.seer_events(case)
    keys = sorted(set(retrieved["partition_key"]))
    weekly = set(RETRIEVAL_WEEKS.get_partition_keys())
    clash = [k for k in keys if k.split("|", 1)[0] in weekly]
    if clash:  # the agent's week slices and the recorded slices must never replace each other
        raise ValueError(
            f"recorded slice {clash[0]!r} starts on a retrieval week: it would share that partition"
        )
    with db.get_connection() as con:
        old = {
            r[0]
            for r in con.execute(
                "SELECT DISTINCT partition_key FROM retrieved_events WHERE retriever = ?", [seer.RETRIEVER]
            ).fetchall()
        }
        prices = storage.read_table(
            con, "market_prices", "symbol IN (SELECT unnest(?::VARCHAR[]))", [list(case.tickers)]
        )
        checks = seer.case_checks(case, prices)
        lo = datetime.combine(case.cutoff, datetime.min.time(), tzinfo=UTC)
        tasks = storage.read_table(
            con,
            "forecast_tasks",
            "cutoff >= ? AND cutoff < ? AND task_kind = 'trend5' AND horizon = '1d'",
            [lo, lo + timedelta(days=1)],
        ).drop("bundle")
        outcomes = (
            storage.read_table(
                con, "task_outcomes", "task_id IN (SELECT unnest(?::VARCHAR[]))", [tasks["task_id"].to_list()]
            )
            if tasks.height
            else storage.empty_frame("task_outcomes")
        )
        picks = seer.selective_predictions(case, outcomes, tasks)
        all_keys = sorted(old | set(keys))
        write_recorded_case(con, retrieved, checked, checks, picks, all_keys)
    agree = int(checks["agree"].fill_null(False).sum())
    if checks["our_label"].null_count():
        context.log.warning(
            f"{checks['our_label'].null_count()} stocks have no label from our prices: materialize "
            "market_prices for the days around 2026-03-25"
        )
    board = seer.selective_board(picks)
    return MaterializeResult(
        metadata={
            "events": retrieved.height,
            "stocks": len(keys),
            "labels_agree": agree,
            "labels_compared": checks.height - checks["our_label"].null_count(),
            "picks": picks.height,
            "picks_correct": int(picks["correct"].fill_null(False).sum()),
            "candidates": int(board["candidates"][0]) if board.height else 0,
        }
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[
        forecast_tasks,
        *_every_partition_of(event_tasks, fact_checked_events, question_fact_checked_events),
        recorded_events,
    ],
    metadata=table_metadata("event_bundles"),
    description=(
        "The with-events bundle of every stored task (leaf_live.event.bundles): the kept fact-checked events"
        " of its target dated in its event look-back (14 days; mid caps: the series' 3 months; questions:"
        " all earlier) and on or before the cutoff day, stored by the cutoff (the LLM forecasters' rule),"
        " frozen with a hash; a task whose look-back no retrieval covers says so in note. Part of leaf-live"
        " run, so the bundles of the SEER cutoff 2026-03-25 exist for its 50 stocks."
    ),
)
def event_bundles(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        tasks = storage.read_table(con, "forecast_tasks").drop("bundle")
        events = storage.read_table(con, "fact_checked_events", "kept")
        retrieved = storage.read_table(con, "retrieved_events", "valid")
        keys = [
            r[0].removeprefix("retrieval:")
            for r in con.execute(
                "SELECT DISTINCT partition_key FROM llm_calls WHERE partition_key LIKE 'retrieval:%'"
            ).fetchall()
        ]
        out = bundles.event_bundles(tasks, events, bundles.retrieval_coverage(retrieved, keys))
        old = [r[0] for r in con.execute("SELECT DISTINCT partition_key FROM event_bundles").fetchall()]
        write_partitions(con, "event_bundles", out, sorted(set(old) | set(out["partition_key"])))
    summary = bundles.coverage_summary(out) if out.height else pl.DataFrame()
    return MaterializeResult(
        metadata={
            "tasks": out.height,
            "with_events": int((out["n_events"] > 0).sum()) if out.height else 0,
            "by_domain": MetadataValue.json(
                {
                    r["domain"]: {k: r[k] for k in ("tasks", "with_events", "no_retrieval")}
                    for r in summary.to_dicts()
                }
            ),
        }
    )


# ---------------------------------------------------------------------------------------------
# LLM forecasts and predictability ratings (UTC day of the cutoff)
# ---------------------------------------------------------------------------------------------

TASK_COLUMNS = (
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
)


class LLMForecastsConfig(Config):
    models: list[str] = Field(
        default=[], description="configured models to run (default: every LEAF_LIVE_LLM_MODELS)"
    )
    context_kinds: list[str] = Field(
        default=["ts", "events"],
        description=(
            "ts (series only) | events (fact-checked "
            "events) | events_unfiltered (retrieved events, for the fact-check ablation) | "
            "alpha / other_alpha (the alpha-consistency contexts of §3.2: analysis only)"
        ),
    )
    trials: int = Field(default=TRIALS, description="calls per task, averaged (LEAF §4.1: 3)")
    domains: list[str] = Field(default=[], description="task domains (default all)")
    task_kinds: list[str] = Field(default=[], description="trend3 | trend5 | series | event (default all)")
    retrievers: list[str] = Field(
        default=[], description="use the events of these retrievers only (default all, e.g. recorded/seer)"
    )
    require_known_by_cutoff: bool = Field(
        default=True,
        description=(
            "events must also be stored (available_at) by "
            "the cutoff; off only for a backtest over a time-restricted retrieval"
        ),
    )


def _day_tasks(con, day: str, config: LLMForecastsConfig) -> pl.DataFrame:
    lo = datetime.fromisoformat(day).replace(tzinfo=UTC)
    t = storage.read_table(con, "forecast_tasks", "cutoff >= ? AND cutoff < ?", [lo, lo + timedelta(days=1)])
    t = t.select(TASK_COLUMNS).sort("task_id")
    if config.domains:
        t = t.filter(pl.col("domain").is_in(config.domains))
    if config.task_kinds:
        t = t.filter(pl.col("task_kind").is_in(config.task_kinds))
    return t


def _events(con, table: str, retrievers: list[str]) -> pl.DataFrame:
    where = "kept" if table == "fact_checked_events" else "valid"
    ev = storage.read_table(con, table, where)
    return ev.filter(pl.col("retriever").is_in(retrievers)) if retrievers else ev


def _forecasters(
    client, specs, config: LLMForecastsConfig, tasks: pl.DataFrame, con
) -> list[tuple[LLMForecaster, pl.DataFrame]]:
    """(forecaster, its tasks) per model x context kind."""
    bad = [k for k in config.context_kinds if k not in CONTEXT_KINDS]
    if bad:
        raise ValueError(f"context_kinds: {bad[0]!r} is not one of {list(CONTEXT_KINDS)}")
    kw = dict(
        trials=config.trials,
        require_known_by_cutoff=config.require_known_by_cutoff,
        timezones={t.target_id: t.timezone for t in catalog.ALL_TARGETS},
    )
    names = {t.target_id: t.name for t in catalog.ALL_TARGETS}
    kept = (
        _events(con, "fact_checked_events", config.retrievers) if set(config.context_kinds) - {"ts"} else None
    )
    out = []
    for spec in specs:
        for kind in config.context_kinds:
            if kind == "ts":
                out.append((LLMForecaster(client, spec, context_kind="ts", target_names=names, **kw), tasks))
            elif kind == "events":
                out.append(
                    (
                        LLMForecaster(
                            client, spec, context_kind="events", events=kept, target_names=names, **kw
                        ),
                        tasks,
                    )
                )
            elif kind == "events_unfiltered":
                raw = _events(con, "retrieved_events", config.retrievers)
                out.append(
                    (
                        LLMForecaster(
                            client,
                            spec,
                            context_kind="events_unfiltered",
                            events=raw,
                            target_names=names,
                            events_source="retrieved_events",
                            **kw,
                        ),
                        tasks,
                    )
                )
            # alpha contexts: built from the realised changes, so an analysis, never a leaderboard entry
            else:
                outcomes = storage.read_table(con, "task_outcomes").filter(
                    pl.col("task_id").is_in(tasks["task_id"])
                )
                ids = sorted(tasks["target_id"].unique().to_list())
                other = (
                    {t: ids[(i + 1) % len(ids)] for i, t in enumerate(ids)} if kind == "other_alpha" else None
                )
                ctx = analyses.alpha_contexts(kept, tasks, outcomes, other_target=other)
                for a, by_task in ctx.items():
                    if by_task:
                        out.append(
                            (
                                LLMForecaster(
                                    client,
                                    spec,
                                    context_kind=f"{kind}={a:g}",
                                    contexts=by_task,
                                    target_names=names,
                                    **kw,
                                ),
                                tasks.filter(pl.col("task_id").is_in(list(by_task))),
                            )
                        )
    return out


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    # a day reads its own tasks, and events of any week, question or recorded case
    deps=[
        forecast_tasks,
        *_every_partition_of(event_tasks, fact_checked_events, question_fact_checked_events),
        recorded_events,
    ],
    metadata=table_metadata("leaf_forecasts", "leaf_forecast_trials", "llm_calls"),
    description=(
        "LLM forecasters through the forecaster contract (LEAF §4.1-4.3, App. C.3) for the tasks whose cutoff"
        " falls on the partition's UTC day: every configured model without events (ts) and with the"
        " fact-checked events known by the cutoff (events), 3 trials averaged with a 4,096-token budget and"
        " no web search, each forecast storing its frozen context. Writes the producer 'leaf_llm_forecasts'"
        " slice llm:<day> of leaf_forecasts, its trials and its calls, so a one-day backfill reruns only that"
        " day. With no LEAF_LIVE_LLM_MODELS it does nothing."
    ),
)
def leaf_llm_forecasts(
    context: AssetExecutionContext, config: LLMForecastsConfig, db: LeafLiveDB, llm: LLMResource
) -> MaterializeResult:
    got = _configured(llm, context)
    if got is None:
        return MaterializeResult(metadata={"status": "no model configured"})
    cfg, client = got
    specs = _pick(cfg, config.models, "models")
    total = {"forecasts": 0, "invalid": 0, "trials": 0, "calls": 0}
    for day in run_partition_keys(context):
        pk = f"llm:{day}"
        with db.get_connection() as con:
            tasks = _day_tasks(con, day, config)
            plan = _forecasters(client, specs, config, tasks, con) if tasks.height else []
        n0 = len(client.records)

        async def run_all():
            return await asyncio.gather(*(f.run(t) for f, t in plan))  # noqa: B023 (awaited in this iteration)

        out = asyncio.run(run_all()) if plan else []
        fc = pl.concat([f for f, _ in out]) if out else storage.empty_frame("leaf_forecasts")
        tr = pl.concat([t for _, t in out]) if out else storage.empty_frame("leaf_forecast_trials")
        fc = fc.with_columns(pl.lit(LLM_PRODUCER).alias("producer"))
        if fc.height and set(fc["partition_key"]) != {pk}:  # tasks of the day have cutoffs on that UTC day
            raise ValueError(f"day {day}: forecasts keyed {sorted(set(fc['partition_key']))}, expected {pk}")
        with db.get_connection() as con:
            total["calls"] += _write_calls(con, client, n0, pk)
            write_llm_forecasts(con, pk, tr, fc)
        record_partition_rows({day: fc.height})  # the run's key is the day; the table's slice llm:<day>
        total["forecasts"] += fc.height
        total["invalid"] += int((~fc["valid"]).sum()) if fc.height else 0
        total["trials"] += tr.height
        if not tasks.height:
            context.log.info(f"day {day}: no forecast tasks with a cutoff on this UTC day")
    return MaterializeResult(
        metadata={
            **total,
            "models": MetadataValue.json([s.model_id for s in specs]),
            "context_kinds": MetadataValue.json(list(config.context_kinds)),
        }
    )


class PredictabilityConfig(Config):
    rater: str = Field(
        default="", description="configured model that rates predictability (default: the first)"
    )
    context_kinds: list[str] = Field(
        default=["ts", "events"],
        description="ts | events: rate with the series only or also the fact-checked events",
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    partitions_def=EVENT_DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[
        forecast_tasks,
        *_every_partition_of(fact_checked_events, question_fact_checked_events),
        recorded_events,
    ],
    metadata=table_metadata("predictability_ratings", "llm_calls"),
    description=(
        "Predictability levels (LEAF §3.2, §4.4, Fig. 20): at each cutoff of the day, one call rates every"
        " large- and mid-cap stock with a trend task on 5 levels, with the series only (ts) and with the"
        " events. Slice llm:<day>; calls in llm_calls slice rating:<day>. With no LEAF_LIVE_LLM_MODELS it"
        " does nothing."
    ),
)
def predictability_ratings(
    context: AssetExecutionContext, config: PredictabilityConfig, db: LeafLiveDB, llm: LLMResource
) -> MaterializeResult:
    got = _configured(llm, context)
    if got is None:
        return MaterializeResult(metadata={"status": "no model configured"})
    cfg, client = got
    spec = _pick(cfg, [config.rater] if config.rater else [], "rater")[0]
    rows = 0
    for day in run_partition_keys(context):
        with db.get_connection() as con:
            tasks = _day_tasks(con, day, LLMForecastsConfig())
            kept = _events(con, "fact_checked_events", [])
        n0 = len(client.records)
        frames = (
            [
                asyncio.run(rate_predictability(client, spec, tasks, events=kept, context_kind=k))
                for k in config.context_kinds
            ]
            if tasks.height
            else []
        )
        frames = [f for f in frames if f.height]
        rt = pl.concat(frames) if frames else storage.empty_frame("predictability_ratings")
        with db.get_connection() as con:
            _write_calls(con, client, n0, f"rating:{day}")
            storage.replace_partition(con, "predictability_ratings", rt, {"partition_key": f"llm:{day}"})
        record_partition_rows({day: rt.height})
        rows += rt.height
    return MaterializeResult(metadata={"rows": rows, "rater": spec.model_id})


@asset_check(
    pool=DUCKDB_POOL,
    asset=leaf_llm_forecasts,
    name="context_leaks",
    blocking=True,
    description=(
        "Point in time (DESIGN.md principle 1): every stored LLM forecast's frozen context holds only "
        "events dated on or before its task's cutoff day and, under the strict rule, stored by the cutoff "
        "(forecasters.context_leaks). Blocking: a leak stops leaf_scores."
    ),
)
def context_leaks_check(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        fc = storage.read_table(con, "leaf_forecasts", "context IS NOT NULL")
        tasks = storage.read_table(con, "forecast_tasks").select("task_id", "cutoff")
        ev = pl.concat(
            [
                storage.read_table(con, t).select("event_id", "available_at")
                for t in ("fact_checked_events", "retrieved_events")
            ]
        ).unique("event_id", keep="first")
    leaks = context_leaks(fc, tasks, ev)
    return AssetCheckResult(
        passed=leaks.height == 0,
        metadata={
            "forecasts_checked": fc.height,
            "leaks": leaks.height,
            "first": MetadataValue.text(str(leaks.head(SAMPLE).rows())),
        },
    )


# every event of a with-events bundle must be a stored fact-checked event stored by the task's cutoff: the
# events component of the frozen bundles (the task's own bundle, question and prices, is
# forecast_tasks_point_in_time's). One row per violation: task, event, its available_at (NULL: not stored).
EVENT_BUNDLE_LEAKS_SQL = (
    'WITH ev AS (SELECT task_id, cutoff, unnest(from_json(events, \'[{"event_id": "VARCHAR"}]\')) AS e'
    " FROM event_bundles) SELECT ev.task_id, ev.e.event_id, f.available_at FROM ev"
    " LEFT JOIN fact_checked_events f ON f.event_id = ev.e.event_id"
    " WHERE f.event_id IS NULL OR f.available_at > ev.cutoff"
)
event_bundles_point_in_time = sql_check(
    event_bundles,
    "event_bundles_point_in_time",
    "Point in time: every event in a stored with-events bundle is a fact-checked event stored"
    " (available_at) by the task's cutoff. Blocking.",
    EVENT_BUNDLE_LEAKS_SQL,
)


EVENT_AGENT_ASSETS = [
    retrieved_events,
    fact_checked_events,
    question_retrieved_events,
    question_fact_checked_events,
    recorded_events,
    event_bundles,
    leaf_llm_forecasts,
    predictability_ratings,
]
EVENT_AGENT_CHECKS = [
    context_leaks_check,
    event_bundles_point_in_time,
    unique_key_check(leaf_llm_forecasts, "leaf_forecasts", ("model_id", "task_id"), producer=LLM_PRODUCER),
    unique_key_check(fact_checked_events, "fact_checked_events", ("event_id",)),
]
