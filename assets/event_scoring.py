"""Event track (LEAF), forecasting and scoring stage: the baselines' forecasts of every stored task and the
per-task scores of every model (LEAF §4.1 metrics, CRPS / quantile loss / coverage, Brier).

Wiring only: the science is ``leaf_live.event.baselines`` (forecasters through the one contract,
``leaf_live.core.forecaster``), ``leaf_live.event.tsfm`` (optional foundation models) and
``leaf_live.event.scoring``. ``leaf_forecasts`` is shared like the macro ``nowcasts``: this asset owns the
``producer = 'leaf_forecasts'`` slices (one per baseline model); the LLM forecasters (issue 11) write their
own producer slices. ``leaf_scores`` scores every model's valid forecasts made from its task's stored bundle.
Both are unpartitioned: one statsforecast call covers every stored task series.
"""

from datetime import UTC, datetime

import polars as pl
from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from assets.common import (
    DUCKDB_POOL,
    process_workers,
    replace_producer,
    sql_check,
    table_metadata,
    unique_key_check,
    write_partitions,
)
from assets.event_data import prediction_markets
from assets.event_tasks import event_tasks, forecast_tasks
from leaf_live.core import storage
from leaf_live.core.forecaster import run_forecasters
from leaf_live.core.participation import label_boards, read_receipts
from leaf_live.event import baselines, rankings, scoring
from leaf_live.event.agents.forecasters import discard_report
from leaf_live.event.pipeline import BASELINE_PRODUCER, DEFAULT_STATISTICAL
from resources import LeafLiveDB

GROUP = "event_scoring"
TASK_COLUMNS = (
    "task_id",
    "domain",
    "target_id",
    "task_kind",
    "horizon",
    "horizon_steps",
    "frequency",
    "cutoff",
    "last_value",
    "bundle",
    "bundle_hash",
)


class LeafForecastsConfig(Config):
    statistical: list[str] = Field(
        default=list(DEFAULT_STATISTICAL),
        description=(
            "statsforecast models: AutoETS, "
            "AutoTheta, AutoARIMA (opt-in: about 5 minutes more on the snapshot's series)"
        ),
    )
    n_jobs: int = Field(default=1, description="statsforecast worker processes")
    tsfm: list[str] = Field(
        default=[],
        description=(
            "time-series foundation models, 'chronos:<path or hub name>' or "
            "'timesfm:<path or hub name>' (pip install -e '.[tsfm]'; offline runs need a local path)"
        ),
    )


def _tasks(con) -> pl.DataFrame:
    return (
        storage.read_table(con, "forecast_tasks").select(TASK_COLUMNS).sort("task_id")
    )  # typed even when empty


def event_forecasters(config: LeafForecastsConfig, resolutions: pl.DataFrame) -> list:
    """The baselines (``baselines.default_forecasters``) and the configured foundation models."""
    out = baselines.default_forecasters(
        resolutions, statistical=config.statistical, n_jobs=process_workers(config.n_jobs)
    )
    if config.tsfm:
        from leaf_live.event import tsfm

        out += [tsfm.load_forecaster(spec) for spec in config.tsfm]
    return out


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[forecast_tasks, event_tasks, prediction_markets],
    metadata=table_metadata("leaf_forecasts"),
    description=(
        "Forecasts of the baselines for every stored task, through the forecaster contract (LEAF §4.1): last"
        " value and historical mean, statsforecast AutoETS / AutoTheta (AutoARIMA opt-in) with 80/95%"
        " intervals, each series model's implied trend class, the market price at the cutoff, the"
        " point-in-time category base rate and always 0.5 for events; optional foundation models (tsfm"
        " extra). Writes the producer 'leaf_forecasts' slices of leaf_forecasts (partition_key = model_id)."
    ),
)
def leaf_forecasts(
    context: AssetExecutionContext, config: LeafForecastsConfig, db: LeafLiveDB
) -> MaterializeResult:
    with db.get_connection() as con:
        tasks = _tasks(con)
        res = baselines.resolutions_frame(
            storage.read_table(con, "prediction_markets"),
            storage.read_table(con, "market_price_path", "kind = 'resolution'"),
        )
        stored = storage.read_table(con, "leaf_forecasts", "producer = ?", [BASELINE_PRODUCER])
    forecasters = event_forecasters(config, res)
    # statsforecast paths depend only on the task's frozen bundle: reuse the stored rows of unchanged bundles
    sf = [f for f in forecasters if isinstance(f, baselines.StatsForecastBaselines)]
    sf_ids = [baselines.SF_MODEL_IDS[m] for f in sf for m in f.models]
    reused, todo = baselines.reusable_rows(stored, tasks, sf_ids)
    own = {"producer": BASELINE_PRODUCER}
    frames = [
        run_forecasters([f for f in forecasters if f not in sf], tasks, "leaf_forecasts", columns=own),
        run_forecasters(sf, todo, "leaf_forecasts", columns=own),
        reused,
    ]
    frame = (
        pl.concat([f for f in frames if f.height], how="vertical")
        if any(f.height for f in frames)
        else frames[0]
    )
    context.log.info(
        f"statsforecast: {todo.height} task(s) forecast, {reused.height} stored row(s) of unchanged "
        "bundles reused"
    )
    with db.get_connection() as con:
        written = replace_producer(con, "leaf_forecasts", BASELINE_PRODUCER, frame)
    return MaterializeResult(
        metadata={
            "rows": frame.height,
            "tasks": tasks.height,
            "statsforecast_tasks": todo.height,
            "statsforecast_rows_reused": reused.height,
            "models": MetadataValue.json({k: v for k, v in written.items() if v}),
        }
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[
        leaf_forecasts,
        "leaf_llm_forecasts",
    ],  # the LLM slices (assets/event_agents.py), behind their leak check
    metadata=table_metadata("leaf_scores"),
    description=(
        "Per-task scores of every model's valid forecasts made from the task's stored bundle (LEAF §4.1):"
        " trend accuracy, MAPE / RMSE / distance to last value for prices, MAE / MSE of z-scores (look-back"
        " statistics) for weather and load, Brier for events, and pinball loss, CRPS and 80/95% coverage"
        " where a model gives intervals. Partition key = model_id."
    ),
)
def leaf_scores(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        tasks = _tasks(con)
        outcomes = storage.read_table(con, "task_outcomes")
        forecasts = storage.read_table(con, "leaf_forecasts", "valid")
        forecasts = label_boards(
            forecasts, read_receipts(con)
        )  # issue 21: external rows not live -> @retrospective
        scores = scoring.score_forecasts(tasks, outcomes, forecasts)
        old = [r[0] for r in con.execute("SELECT DISTINCT partition_key FROM leaf_scores").fetchall()]
        keys = sorted(set(old) | set(scores["partition_key"].unique().to_list()))
        written = write_partitions(con, "leaf_scores", scores, keys)
    return MaterializeResult(
        metadata={
            "rows": scores.height,
            "models": MetadataValue.json({k: v for k, v in written.items() if v}),
        }
    )


@asset(
    pool=DUCKDB_POOL,
    group_name=GROUP,
    deps=[leaf_scores],
    metadata=table_metadata("event_rankings"),
    description=(
        "The stored event-track boards (issue 16; leaf_live.event.rankings): per (domain, task kind, horizon,"
        " metric) of leaf_scores and per domain a pooled headline board, the coverage-robust two-way"
        " fixed-effects ranking (each model on its own tasks; skill 1 - L/L_ref against the last value, or"
        " the market price for event questions), cluster-bootstrap intervals over cutoff days (questions),"
        " P(rank 1), the paired interval vs the reference, n, the largest single-task share of the loss and"
        " the common-set view over the ranked models; a model with over 1/3 of its LLM outputs invalid"
        " (forecasters.discard_report, §4.1) is listed as discarded, not ranked. Partition key = domain."
        " What `leaf-live scores --track event`, the site and the run summary print."
    ),
)
def event_rankings(db: LeafLiveDB) -> MaterializeResult:
    with db.get_connection() as con:
        scores = storage.read_table(con, "leaf_scores")
        tasks = storage.read_table(con, "forecast_tasks").select("task_id", "cutoff", "last_value_age_days")
        trials = storage.read_table(con, "leaf_forecast_trials").select("model_id", "valid")
        frame = rankings.rankings_frame(
            scores, tasks, available_at=datetime.now(UTC), discards=discard_report(trials)
        )
        old = [r[0] for r in con.execute("SELECT DISTINCT partition_key FROM event_rankings").fetchall()]
        keys = sorted(set(old) | set(frame["partition_key"].unique().to_list()))
        written = write_partitions(con, "event_rankings", frame, keys)
    return MaterializeResult(
        metadata={
            "rows": frame.height,
            "boards": frame.select("domain", "task_kind", "horizon", "metric").n_unique()
            if frame.height
            else 0,
            "domains": MetadataValue.json({k: v for k, v in written.items() if v}),
        }
    )


forecasts_use_stored_bundles = sql_check(
    leaf_forecasts,
    "forecasts_use_stored_bundles",
    "Every valid forecast answers a stored task from that task's "
    "frozen bundle (same bundle_hash), and the baselines issue at the cutoff. Blocking: stops leaf_scores.",
    "SELECT f.producer, f.model_id, f.task_id, f.bundle_hash, t.bundle_hash FROM leaf_forecasts f LEFT JOIN"
    " forecast_tasks t USING (task_id) WHERE f.valid AND (t.task_id IS NULL OR f.bundle_hash <> t.bundle_hash"
    " OR (f.producer = ? AND f.issued_at <> t.cutoff))",
    [BASELINE_PRODUCER],
)


EVENT_SCORING_ASSETS = [leaf_forecasts, leaf_scores, event_rankings]
EVENT_SCORING_CHECKS = [
    forecasts_use_stored_bundles,
    unique_key_check(leaf_forecasts, "leaf_forecasts", ("model_id", "task_id"), producer=BASELINE_PRODUCER),
    unique_key_check(leaf_scores, "leaf_scores", ("model_id", "task_id", "metric")),
    unique_key_check(
        event_rankings, "event_rankings", ("domain", "task_kind", "horizon", "metric", "model_id")
    ),
]
