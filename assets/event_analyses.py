"""Event track (LEAF), analyses: Table 2 filter rates and tokens per kept event, predictability levels (§4.4,
Table 12), alpha-consistency (§3.2), the living-data ablation (§4.5, Table 9) and the fact-check ablation
(§4.5, Fig. 6), each an unpartitioned asset replacing the ``all`` slice of its table from the stored rows.

Wiring only: the science is ``leaf_live.event.analyses`` (frames in, table frames out). The model-side inputs
come from ``leaf_llm_forecasts`` (context kinds ``events_unfiltered`` and ``alpha`` / ``other_alpha`` are its
opt-in config) and ``predictability_ratings``, scored by ``leaf_scores``. Each asset also replaces its row of
``event_analysis_status`` (ran | refused, the one-line reason, rows), which the report prints instead of an
empty section.
"""

from datetime import UTC, date, datetime

import polars as pl
from dagster import Config, MaterializeResult, asset
from pydantic import Field

from assets.common import DUCKDB_POOL, table_metadata, write_tables
from assets.event_agents import (
    fact_checked_events,
    leaf_llm_forecasts,
    predictability_ratings,
    question_fact_checked_events,
    recorded_events,
)
from assets.event_data import market_prices
from assets.event_scoring import leaf_scores
from leaf_live.core import storage
from leaf_live.event import analyses
from leaf_live.event.analyses import AnalysisStatus
from leaf_live.event.pipeline import (
    LIVING_MARGIN_AFTER,
    LIVING_MARGIN_BEFORE,
    Spans,
    living_before_scores,
)
from resources import LeafLiveDB

GROUP = "event_analyses"
ALL = "all"


STATUS = "event_analysis_status"


def write_analysis(con, frames: dict[str, pl.DataFrame], st: AnalysisStatus) -> None:
    """Replace the partition ``all`` of each table in ``frames`` (table -> its rows) and the analysis's
    ``event_analysis_status`` row (partition ``st.analysis``) in ONE transaction
    (:func:`assets.common.write_tables`), so a killed step never leaves a status that describes other rows
    than the stored ones (issue 17)."""
    status = analyses.status_frame([st], datetime.now(UTC))
    write_tables(con, frames, [ALL], also=[storage.Slice(STATUS, status, {"partition_key": st.analysis})])


def _write(db: LeafLiveDB, table: str, frame: pl.DataFrame, st: AnalysisStatus) -> MaterializeResult:
    with db.get_connection() as con:
        write_analysis(con, {table: frame}, st)
    return MaterializeResult(
        metadata={
            "rows": frame.height,
            "dagster/row_count": frame.height,
            "status": st.status,
            "reason": st.reason,
        }
    )


def _tasks(con) -> pl.DataFrame:
    return storage.read_table(con, "forecast_tasks").select("task_id", "target_id", "cutoff")


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[fact_checked_events, question_fact_checked_events, recorded_events],
    metadata=table_metadata("event_filter_rates", "event_retrieval_costs", "event_analysis_status"),
    description=(
        "LEAF Table 2 per retriever x domain (entities, events before filtering, filter rate, merged"
        " near-duplicates, days with kept events, span, drop reasons) and the tokens and cost of retrieval"
        " plus fact-check per kept event (App. D.1: about 3,864 tokens per event)."
    ),
)
def event_filter_rates(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        ret = storage.read_table(con, "retrieved_events")
        chk = storage.read_table(con, "fact_checked_events")
        calls = storage.read_table(con, "llm_calls", "role IN ('retriever', 'checker')")
        checks = storage.read_table(con, "fact_checks")
        rates = (
            analyses.filter_rates(ret, chk, partition_key=ALL)
            if ret.height
            else storage.empty_frame("event_filter_rates")
        )
        costs = (
            analyses.retrieval_costs(
                calls, ret.filter(pl.col("call_id").is_not_null()), checks, chk, partition_key=ALL
            )
            if calls.height
            else storage.empty_frame("event_retrieval_costs")
        )
        st = analyses.outcome(
            "event_filter_rates",
            rates,
            f"{rates.height} retriever x domain rows from {ret.height} retrieved events"
            + (
                f"; tokens per kept event from {calls.height} retrieval / fact-check calls"
                if costs.height
                else "; no retrieval or fact-check LLM calls stored (recorded events only): no cost rows"
            ),
            "no retrieved_events stored (no recorded transcript imported and no retrieval model configured)",
        )
        write_analysis(con, {"event_filter_rates": rates, "event_retrieval_costs": costs}, st)
    return MaterializeResult(
        metadata={"rows": rates.height, "cost_rows": costs.height, "status": st.status, "reason": st.reason}
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[predictability_ratings, leaf_scores],
    metadata=table_metadata("predictability_accuracy", "event_analysis_status"),
    description=(
        "Trend accuracy per predictability level (LEAF §4.4, Table 12 form): each LLM forecaster's accuracy"
        " grouped by the level the rater gave the stock at the cutoff in the same context kind, per-day"
        " accuracies averaged, and the correlation of accuracy with the level."
    ),
)
def predictability_accuracy(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        ratings = storage.read_table(con, "predictability_ratings")
        scores = storage.read_table(con, "leaf_scores", "metric = 'accuracy'")
        tasks = _tasks(con)
    out = (
        analyses.predictability_accuracy(ratings, scores, tasks, partition_key=ALL)
        if ratings.height and scores.height
        else storage.empty_frame("predictability_accuracy")
    )
    missing = [
        w
        for w, n in (
            ("predictability_ratings (an LLM rater)", ratings.height),
            ("accuracy scores", scores.height),
        )
        if not n
    ]
    st = analyses.outcome(
        "predictability_accuracy",
        out,
        f"{out['model_id'].n_unique() if out.height else 0} forecasters x levels from"
        f" {ratings.height} ratings",
        f"missing {' and '.join(missing)}"
        if missing
        else "no rating matches a scored trend forecast of the same context kind, cutoff and stock",
    )
    return _write(db, "predictability_accuracy", out, st)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[leaf_scores],
    metadata=table_metadata("alpha_consistency", "event_analysis_status"),
    description=(
        "Error against the share alpha of sentiment-consistent events (LEAF §3.2): the scores of the "
        "forecasters run with context kinds alpha=<a> (the target's events) and other_alpha=<a> (another "
        "target's), mean error per alpha and its correlation with alpha (paper: -0.967 and -0.537)."
    ),
)
def alpha_consistency(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        scores = storage.read_table(con, "leaf_scores", "model_id LIKE '%alpha=%'")
    out, st = analyses.alpha_consistency_run(scores, partition_key=ALL)
    return _write(db, "alpha_consistency", out, st)


class LivingDataConfig(Config):
    before_start: str = Field(
        default=Spans().living_before[0].isoformat(),
        description="first cutoff day of the pre-training span (LEAF Table 9: 2023-01-02)",
    )
    before_end: str = Field(
        default=Spans().living_before[1].isoformat(),
        description="last cutoff day of the pre-training span (LEAF Table 9: 2024-06-02)",
    )
    statistical: list[str] = Field(
        default=[],
        description=(
            "statsforecast models run on the before span's ~24,000 trend tasks besides last value and"
            " historical mean (e.g. AutoETS, AutoTheta: about 28 s and 48 s CPU more; docs/benchmarks.md)"
        ),
    )
    after_start: str = Field(
        default=Spans().markets[0].isoformat(), description="first cutoff day of the live span"
    )
    after_end: str = Field(
        default=Spans().markets[1].isoformat(), description="last cutoff day of the live span"
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[leaf_scores, market_prices],
    metadata=table_metadata("living_data_ablation", "event_analysis_status"),
    description=(
        "Living-data ablation (LEAF §4.5, Table 9): each model's trend accuracy on tasks with cutoffs in a "
        "span before the models' training cutoff vs the live span, and 100 (before - after) / after. The "
        "before span's trend tasks (large caps 1/2 sessions, mid caps 3/6 months) are built from the stored "
        "closes and forecast by the baselines here (the control: no baseline has a training cutoff); stored "
        "scores of tasks in that span (an LLM run on them) count too. Refuses with one line when a span has "
        "no scored task."
    ),
)
def living_data_ablation(config: LivingDataConfig, db: LeafLiveDB) -> MaterializeResult:
    spans = []
    for lo, hi in (("before_start", "before_end"), ("after_start", "after_end")):
        try:
            a, b = date.fromisoformat(getattr(config, lo)), date.fromisoformat(getattr(config, hi))
        except ValueError:
            raise ValueError(
                f"{lo}/{hi}: expected days YYYY-MM-DD, got {getattr(config, lo)!r}, {getattr(config, hi)!r}"
            ) from None
        if b < a:
            raise ValueError(f"{hi} {b} is before {lo} {a}")
        spans.append((a, b))
    (b0, b1), after = spans
    with db.get_connection() as con:
        scores = storage.read_table(con, "leaf_scores", "metric = 'accuracy'")
        tasks = _tasks(con)
        prices = storage.read_table(
            con,
            "market_prices",
            "session_date BETWEEN ? AND ?",
            [b0 - LIVING_MARGIN_BEFORE, b1 + LIVING_MARGIN_AFTER],
        )
    before_tasks, before_scores = living_before_scores(prices, (b0, b1), statistical=config.statistical)
    # stored scores win (a task of the span stored and scored, e.g. by an LLM run on it)
    before_scores = before_scores.filter(pl.col("metric") == "accuracy").join(
        scores.select("model_id", "task_id"), on=["model_id", "task_id"], how="anti"
    )
    all_scores = pl.concat([scores, before_scores.select(scores.columns)]) if before_scores.height else scores
    all_tasks = pl.concat(
        [tasks, before_tasks.select(tasks.columns).join(tasks.select("task_id"), on="task_id", how="anti")]
    )
    out, st = analyses.living_data_run(all_scores, all_tasks, (b0, b1), after, partition_key=ALL)
    if st.status == "refused" and before_tasks.height == 0:
        st = AnalysisStatus(
            st.analysis,
            "refused",
            f"{st.reason}; market_prices holds {prices.height} closes for {b0 - LIVING_MARGIN_BEFORE}.."
            f"{b1 + LIVING_MARGIN_AFTER}, too few for a before-span task",
        )
    return _write(db, "living_data_ablation", out, st)


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[leaf_scores, leaf_llm_forecasts, fact_checked_events],
    metadata=table_metadata("fact_check_ablation", "event_analysis_status"),
    description=(
        "Fact-check ablation (LEAF §4.5, Fig. 6): each LLM's metric with the unfiltered retrieved events"
        " (context kind events_unfiltered) vs the fact-checked events on the tasks scored in both, the"
        " inflation, and the events in the unfiltered contexts the checkers dated after the cutoff."
    ),
)
def fact_check_ablation(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        scores = storage.read_table(
            con, "leaf_scores", "model_id LIKE '%:events' OR model_id LIKE '%:events_unfiltered'"
        )
        fc = storage.read_table(con, "leaf_forecasts", "model_id LIKE '%:events_unfiltered'")
        chk = storage.read_table(con, "fact_checked_events")
    out, st = analyses.fact_check_ablation_run(scores, fc, chk, partition_key=ALL)
    return _write(db, "fact_check_ablation", out, st)


EVENT_ANALYSIS_ASSETS = [
    event_filter_rates,
    predictability_accuracy,
    alpha_consistency,
    living_data_ablation,
    fact_check_ablation,
]
