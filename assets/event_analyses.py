"""Event track (LEAF), analyses: Table 2 filter rates and tokens per kept event, predictability levels (§4.4,
Table 12), alpha-consistency (§3.2), the living-data ablation (§4.5, Table 9) and the fact-check ablation
(§4.5, Fig. 6), each an unpartitioned asset replacing the ``all`` slice of its table from the stored rows.

Wiring only: the science is ``leaf_live.event.analyses`` (frames in, table frames out). The model-side inputs
come from ``leaf_llm_forecasts`` (context kinds ``events_unfiltered`` and ``alpha`` / ``other_alpha`` are its
opt-in config) and ``predictability_ratings``, scored by ``leaf_scores``.
"""

from datetime import date

import polars as pl
from dagster import Config, MaterializeResult, asset
from pydantic import Field

from assets.common import table_metadata, write_partitions
from assets.event_agents import (
    fact_checked_events,
    leaf_llm_forecasts,
    predictability_ratings,
    recorded_events,
)
from assets.event_scoring import leaf_scores
from leaf_live.core import storage
from leaf_live.event import analyses
from leaf_live.event.pipeline import Spans
from resources import LeafLiveDB

GROUP = "event_analyses"
ALL = "all"


def _write(db: LeafLiveDB, table: str, frame: pl.DataFrame) -> MaterializeResult:
    with db.get_connection() as con:
        write_partitions(con, table, frame, [ALL])
    return MaterializeResult(metadata={"rows": frame.height, "dagster/row_count": frame.height})


def _tasks(con) -> pl.DataFrame:
    return storage.read_table(con, "forecast_tasks").select("task_id", "target_id", "cutoff")


@asset(
    group_name=GROUP,
    deps=[fact_checked_events, recorded_events],
    metadata=table_metadata("event_filter_rates", "event_retrieval_costs"),
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
        write_partitions(con, "event_filter_rates", rates, [ALL])
        write_partitions(con, "event_retrieval_costs", costs, [ALL])
    return MaterializeResult(metadata={"rows": rates.height, "cost_rows": costs.height})


@asset(
    group_name=GROUP,
    deps=[predictability_ratings, leaf_scores],
    metadata=table_metadata("predictability_accuracy"),
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
    return _write(db, "predictability_accuracy", out)


@asset(
    group_name=GROUP,
    deps=[leaf_scores],
    metadata=table_metadata("alpha_consistency"),
    description=(
        "Error against the share alpha of sentiment-consistent events (LEAF §3.2): the scores of the "
        "forecasters run with context kinds alpha=<a> (the target's events) and other_alpha=<a> (another "
        "target's), mean error per alpha and its correlation with alpha (paper: -0.967 and -0.537)."
    ),
)
def alpha_consistency(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        scores = storage.read_table(con, "leaf_scores", "model_id LIKE '%alpha=%'")
    out = (
        analyses.alpha_consistency(scores, partition_key=ALL)
        if scores.height
        else storage.empty_frame("alpha_consistency")
    )
    return _write(db, "alpha_consistency", out)


class LivingDataConfig(Config):
    before_start: str = Field(default="2023-01-01", description="first cutoff day of the pre-training span")
    before_end: str = Field(default="2024-03-31", description="last cutoff day of the pre-training span")
    after_start: str = Field(
        default=Spans().markets[0].isoformat(), description="first cutoff day of the live span"
    )
    after_end: str = Field(
        default=Spans().markets[1].isoformat(), description="last cutoff day of the live span"
    )


@asset(
    group_name=GROUP,
    deps=[leaf_scores],
    metadata=table_metadata("living_data_ablation"),
    description=(
        "Living-data ablation (LEAF §4.5, Table 9): each model's trend accuracy on tasks with cutoffs in a "
        "span before the models' training cutoff vs the live span, and 100 (before - after) / after."
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
    with db.get_connection() as con:
        scores = storage.read_table(con, "leaf_scores", "metric = 'accuracy'")
        tasks = _tasks(con)
    out = (
        analyses.living_data_ablation(scores, tasks, spans[0], spans[1], partition_key=ALL)
        if scores.height
        else storage.empty_frame("living_data_ablation")
    )
    return _write(db, "living_data_ablation", out)


@asset(
    group_name=GROUP,
    deps=[leaf_scores, leaf_llm_forecasts, fact_checked_events],
    metadata=table_metadata("fact_check_ablation"),
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
    out = (
        analyses.fact_check_ablation(scores, fc, chk, partition_key=ALL)
        if fc.height and scores.height
        else storage.empty_frame("fact_check_ablation")
    )
    return _write(db, "fact_check_ablation", out)


EVENT_ANALYSIS_ASSETS = [
    event_filter_rates,
    predictability_accuracy,
    alpha_consistency,
    living_data_ablation,
    fact_check_ablation,
]
