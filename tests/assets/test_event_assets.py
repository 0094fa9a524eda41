"""The event track through Dagster on the real snapshot, for short spans into a temporary database: every
table filled and equal to the science run on plain frames, partitions rematerialized twice keep their counts,
a malformed source file fails its partition naming file, row and field and keeps the stored rows, and a task
bundle holding a row published after its cutoff fails the blocking check and stops the scores."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.event_data import EVENT_QUESTIONS, market_prices, prediction_markets
from assets.event_tasks import event_tasks, forecast_tasks
from leaf_live.cli import EventPlan, event_day_runs, run_event_track
from leaf_live.core import storage
from leaf_live.definitions import build_definitions
from leaf_live.event import pipeline
from leaf_live.event.pipeline import Spans
from leaf_live.event.tasks import freeze_bundle
from resources import default_resources
from sensors.event import event_scores_job

SPANS = Spans(
    markets=(date(2025, 11, 1), date(2025, 12, 31)),
    mid_cap_months=(date(2025, 6, 1), date(2025, 12, 1)),
    weather=(date(2025, 11, 1), date(2025, 12, 31)),
    electricity=(date(2019, 1, 1), date(2019, 1, 31)),
    case_days=(),  # the SEER case day: tests/assets/test_event_recorded.py
)
PLAN = EventPlan(SPANS, statistical=(), n_jobs=1, tsfm=(), boot_draws=200)
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
WATCHLIST = "leaf/stocks/yfinance_watchlist63_2024-12_2026-08"


@pytest.fixture(scope="module")
def built(tmp_path_factory, snapshot_dir) -> dict:
    """The event track for :data:`SPANS` (no statsforecast models) materialized by ``leaf-live run``'s
    function."""
    db = tmp_path_factory.mktemp("event") / "event.duckdb"
    instance = DagsterInstance.ephemeral()
    assert run_event_track(PLAN, default_resources(db=db, snapshot=snapshot_dir), instance)
    return {"db": db, "instance": instance}


def _copy(built: dict, tmp_path: Path) -> Path:
    return Path(shutil.copy(built["db"], tmp_path / "copy.duckdb"))


def _read(db: Path, table: str, where: str = "") -> pl.DataFrame:
    con = storage.connect_read_only(db)
    try:
        return storage.read_table(con, table, where)
    finally:
        con.close()


def _counts(db: Path, table: str) -> dict[str, int]:
    con = storage.connect_read_only(db)
    try:
        return dict(con.execute(f"SELECT partition_key, count(*) FROM {table} GROUP BY 1").fetchall())
    finally:
        con.close()


def _span_config() -> dict:
    return {"ops": {"forecast_tasks": {"config": PLAN.span_config()}}, **QUIET}


def test_the_short_span_run_plan():
    # each asset over its own days (sources: the spans +/- 7 days, mid caps 62 days past their last month;
    # tasks: the cutoff days, mid caps from the first month with 3 months of look-back), sources first
    assert event_day_runs(SPANS) == [
        (("2018-12-25", "2019-02-07"), ["electricity_load"]),
        # market prices from the living-data ablation's before span (Table 9: 2023-01-02 .. 2024-06-02, less
        # the mid caps' 3-month look-back and 7 days) on
        (("2022-09-17", "2026-02-08"), ["market_prices"]),
        (("2025-10-25", "2026-01-07"), ["weather_hourly"]),
        (("2019-01-01", "2019-02-01"), ["forecast_tasks"]),
        (("2025-09-01", "2026-01-01"), ["forecast_tasks"]),
    ]


def test_tables_filled_and_equal_to_the_science_on_plain_frames(built, snapshot_dir):
    db = built["db"]
    frames = pipeline.load_snapshot(snapshot_dir, SPANS)
    want = pipeline.build_tasks(frames, SPANS)
    got = _read(db, "forecast_tasks")
    assert got.height == want.tasks.height > 0
    # the same tasks with the same frozen bundles, whether built by the assets from the store or from the
    # files
    key = ["task_id", "bundle_hash", "partition_key", "last_value", "max_input_available_at"]
    assert got.select(key).sort("task_id").equals(want.tasks.select(key).sort("task_id"))
    assert set(got["domain"]) == {"large_cap", "commodity", "weather", "electricity", "event", "mid_cap"}
    # load, 2019-01-01 .. 31, cutoffs every other day from the 1st (1, 3, 5, ...); 14 days of look-back inside
    # the span put the first at the end of the 15th; 3-day tasks end by the 31st (15..27: 7), 7-day ones
    # (15..23: 5)
    assert got.filter(pl.col("domain") == "electricity", pl.col("task_kind") == "series").height == 3 * (
        7 + 5
    )
    outcomes = _read(db, "task_outcomes")
    assert outcomes.sort("task_id")["label"].equals(want.outcomes.sort("task_id")["label"])
    # event tasks are stored per question, series and trend tasks per cutoff day
    ev = got.filter(pl.col("domain") == "event")
    assert (ev["partition_key"] == ev["target_id"]).all()
    assert (
        got.filter(pl.col("domain") != "event")["partition_key"]
        == got.filter(pl.col("domain") != "event")["cutoff"].dt.strftime("%Y-%m-%d")
    ).all()
    # every source table holds the span's rows; the questions are the LEAF categories' only
    for table in ("market_prices", "weather_hourly", "electricity_load", "market_price_path"):
        assert _read(db, table).height > 0, table
    q = _read(db, "prediction_markets")
    assert set(q["category"]) == {"economy_business", "politics_world", "tech_ai"}
    assert set(q["question_id"]) == set(built["instance"].get_dynamic_partitions(EVENT_QUESTIONS.name))
    assert _read(db, "leaf_targets").height == 113  # 93 of App. C.2 + the 20 other SEER stocks
    # forecasts: the baselines' producer slices, one per model, scored
    fc = _read(db, "leaf_forecasts")
    assert set(fc["producer"]) == {"leaf_forecasts"} and (fc["partition_key"] == fc["model_id"]).all()
    assert set(fc["model_id"]) == {
        "baseline/last-value",
        "baseline/hist-mean",
        "market/polymarket",
        "baseline/base-rate",
        "baseline/always-0.5",
    }
    s = _read(db, "leaf_scores")
    lvb = s.filter(
        pl.col("model_id") == "baseline/last-value",
        pl.col("domain") == "large_cap",
        pl.col("metric") == "mape",
        pl.col("horizon") == "3d",
    )
    assert (
        lvb.height
        == want.tasks.filter(
            pl.col("domain") == "large_cap", pl.col("task_kind") == "series", pl.col("horizon") == "3d"
        ).height
    )


def test_rematerializing_a_day_and_a_question_twice_keeps_counts(built, snapshot_dir, tmp_path):
    db = _copy(built, tmp_path)
    tables = ("market_prices", "forecast_tasks", "task_outcomes", "prediction_markets", "market_price_path")
    before = {t: _counts(db, t) for t in tables}
    day = "2025-12-19"  # a session and a large-cap cutoff of the span
    assert before["forecast_tasks"][day] > 0 and before["market_prices"][day] > 0
    qid = _read(db, "forecast_tasks", "domain = 'event'")["target_id"][0]
    resources = default_resources(db=db, snapshot=snapshot_dir)
    for _ in range(2):
        assert materialize(
            [market_prices, forecast_tasks],
            resources=resources,
            instance=built["instance"],
            partition_key=day,
            run_config=_span_config(),
        ).success
        assert materialize(
            [prediction_markets, event_tasks],
            resources=resources,
            instance=built["instance"],
            partition_key=qid,
            run_config=QUIET,
        ).success
    assert {t: _counts(db, t) for t in tables} == before


def test_malformed_price_file_fails_its_partition_and_keeps_rows(built, snapshot_dir, tmp_path):
    db = _copy(built, tmp_path)
    snap = tmp_path / "snapshot"
    (snap / WATCHLIST).mkdir(parents=True)
    lines = (
        gzip.decompress((snapshot_dir / WATCHLIST / "AMZN.csv.gz").read_bytes())
        .decode()
        .splitlines(keepends=True)
    )
    row = next(i for i, ln in enumerate(lines) if ln.startswith("2025-12-05,"))
    close = lines[row].split(",")[1]
    lines[row] = lines[row].replace(close, close + "x", 1)
    (snap / WATCHLIST / "AMZN.csv.gz").write_bytes(gzip.compress("".join(lines).encode()))
    before = _counts(db, "market_prices")
    result = materialize(
        [market_prices],
        resources=default_resources(db=db, snapshot=snap),
        instance=DagsterInstance.ephemeral(),
        partition_key="2025-12-05",
        raise_on_error=False,
    )
    assert not result.success
    msg = "\n".join(e.step_failure_data.error.to_string() for e in result.all_events if e.is_step_failure)
    assert (
        f"file {WATCHLIST}/AMZN.csv.gz" in msg and f"row {row}" in msg and f"field Close='{close}x'" in msg
    ), msg
    assert _counts(db, "market_prices") == before and before["2025-12-05"] > 0


def test_a_bundle_with_a_row_after_its_cutoff_fails_the_blocking_check_and_stops_the_scores(
    built, snapshot_dir, tmp_path
):
    db = _copy(built, tmp_path)
    task = (
        _read(db, "forecast_tasks", "domain = 'large_cap' AND task_kind = 'series' AND horizon = '3d'")
        .sort("task_id")
        .row(0, named=True)
    )
    # the next session's close, published after the cutoff, slipped into the bundle
    nxt = (
        _read(
            db,
            "market_prices",
            f"symbol = '{task['target_id']}' AND available_at > TIMESTAMPTZ '{task['cutoff'].isoformat()}'",
        )
        .sort("session_date")
        .row(0, named=True)
    )
    bundle = json.loads(task["bundle"])
    bundle["series"].append([nxt["session_date"].isoformat(), nxt["close"]])
    text, digest = freeze_bundle(bundle)
    part = _read(db, "forecast_tasks", f"partition_key = '{task['partition_key']}'").with_columns(
        pl.when(pl.col("task_id") == task["task_id"])
        .then(pl.lit(text))
        .otherwise(pl.col("bundle"))
        .alias("bundle"),
        pl.when(pl.col("task_id") == task["task_id"])
        .then(pl.lit(digest))
        .otherwise(pl.col("bundle_hash"))
        .alias("bundle_hash"),
        pl.when(pl.col("task_id") == task["task_id"])
        .then(pl.lit(nxt["available_at"]))
        .otherwise(pl.col("max_input_available_at"))
        .alias("max_input_available_at"),
    )
    with storage.open_db(db) as con:
        storage.replace_partition(con, "forecast_tasks", part, {"partition_key": task["partition_key"]})
    scores_before = _counts(db, "leaf_scores")
    job = build_definitions(default_resources(db=db, snapshot=snapshot_dir)).resolve_job_def(
        event_scores_job.name
    )
    result = job.execute_in_process(
        run_config={**QUIET, "ops": {"leaf_forecasts": {"config": {"statistical": []}}}},
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    leak = evals["forecast_tasks_point_in_time"]
    assert (
        not leak.passed
        and leak.metadata["leaking"].value == 1
        and task["task_id"] in leak.metadata["first"].value
    )
    assert {n for n, e in evals.items() if not e.passed} == {"forecast_tasks_point_in_time"}
    done = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert not done & {"leaf_forecasts", "leaf_scores"}  # neither the forecasts nor the scores ran
    assert _counts(db, "leaf_scores") == scores_before


def test_a_rerun_reuses_the_statsforecast_rows_of_unchanged_bundles(built, snapshot_dir, tmp_path):
    """leaf_forecasts keeps the statsforecast rows of tasks whose frozen bundle did not change (a warm rerun
    fits nothing) and refits a task whose bundle changed; the rows equal a cold fit's."""
    from assets.event_scoring import leaf_forecasts

    db = _copy(built, tmp_path)
    resources = default_resources(db=db, snapshot=snapshot_dir)
    cfg = {"ops": {"leaf_forecasts": {"config": {"statistical": ["AutoETS"]}}}, **QUIET}

    def run() -> tuple[dict, pl.DataFrame]:
        res = materialize(
            [leaf_forecasts], resources=resources, instance=DagsterInstance.ephemeral(), run_config=cfg
        )
        assert res.success
        meta = res.asset_materializations_for_node("leaf_forecasts")[0].metadata
        rows = (
            _read(db, "leaf_forecasts", "model_id = 'baseline/auto-ets'").drop("available_at").sort("task_id")
        )
        return {k: meta[k].value for k in ("statsforecast_tasks", "statsforecast_rows_reused")}, rows

    cold_meta, cold = run()
    n_tasks = _read(db, "forecast_tasks").height
    assert cold_meta == {"statsforecast_tasks": n_tasks, "statsforecast_rows_reused": 0} and cold.height > 0
    warm_meta, warm = run()
    assert warm_meta == {
        "statsforecast_tasks": n_tasks - cold["task_id"].n_unique(),
        "statsforecast_rows_reused": cold.height,
    }
    assert warm.equals(cold)
    # one task's bundle changes: only it is refitted
    tid = cold["task_id"][0]
    con = storage.connect(db)
    con.execute(
        "UPDATE leaf_forecasts SET bundle_hash = 'stale' WHERE task_id = ? AND model_id ="
        " 'baseline/auto-ets'",
        [tid],
    )
    con.close()
    again_meta, again = run()
    assert again_meta == {
        "statsforecast_tasks": warm_meta["statsforecast_tasks"] + 1,
        "statsforecast_rows_reused": cold.height - 1,
    }
    assert again.equals(cold)
