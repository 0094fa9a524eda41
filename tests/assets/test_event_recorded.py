"""The recorded SEER case as ``leaf-live run`` imports it (issue 18): the 50 stocks' prices and their tasks at
the case's 2026-03-25 cutoff (``pipeline.case_day_tasks``), the import as already fact-checked recorded/seer
rows (never counted in a filter rate), SEER's realised labels against ours (50/50), its recorded answer scored
on the selective-prediction board, and the with-events bundle of every task of that day (equal to what the LLM
forecasters are given)."""

import json
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.event_agents import event_bundles, recorded_events
from leaf_live.cli import format_selective_board
from leaf_live.core import storage
from leaf_live.event import analyses, catalog, pipeline
from leaf_live.event.agents.forecasters import events_for_task
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.recorded_events import read_seer_case, selective_board
from resources import default_resources

DAY = date(2026, 3, 25)
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _q(db: Path, sql: str) -> list[tuple]:
    with storage.open_db(db) as con:
        return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def case_db(tmp_path_factory, snapshot_dir) -> dict:
    db = tmp_path_factory.mktemp("seer") / "seer.duckdb"
    case = read_seer_case(snapshot_dir)
    a, b = pipeline.source_days(pipeline.Spans())["market_prices"]
    assert a <= DAY - pipeline.CASE_BEFORE and DAY + pipeline.CASE_AFTER <= b  # the default run reads them
    prices = to_market_prices(
        SnapshotDailyPrices(snapshot_dir).daily_bars(
            catalog.SEER_BASKET, date(2026, 2, 20), date(2026, 4, 10)
        )
    )
    ts = pipeline.case_day_tasks(prices, DAY)
    with storage.open_db(db) as con:
        storage.replace_partition(
            con, "market_prices", prices, {"partition_key": sorted(set(prices["partition_key"]))}
        )
        storage.replace_partition(con, "forecast_tasks", ts.tasks, {"partition_key": [DAY.isoformat()]})
        storage.replace_partition(con, "task_outcomes", ts.outcomes, {"partition_key": [DAY.isoformat()]})
    run = materialize(
        [recorded_events, event_bundles],
        resources=default_resources(db=db, snapshot=snapshot_dir),
        instance=DagsterInstance.ephemeral(),
        run_config=QUIET,
    )
    assert run.success
    return {"db": db, "case": case, "tasks": ts.tasks, "run": run}


def test_all_50_seer_stocks_have_prices_and_tasks_at_the_cutoff(case_db):
    case, tasks = case_db["case"], case_db["tasks"]
    assert list(case.tickers) == list(catalog.SEER_BASKET)  # the catalog's basket is the file's, in order
    extra = {t.target_id for t in catalog.RECORDED_CASE_STOCKS}
    assert len(extra) == 20 and not extra & {t.target_id for t in catalog.LARGE_CAPS}
    assert extra | {t.target_id for t in catalog.LARGE_CAPS} == set(case.tickers)
    # 50 stocks x (series 3/7 + trend3/trend5 at 1/2/3/7 sessions) = 500 tasks, all cut at the 03-25 close
    assert tasks.height == 500 and tasks["target_id"].n_unique() == 50
    assert set(tasks["cutoff"].dt.convert_time_zone("America/New_York").dt.date()) == {DAY}


def test_the_import_is_recorded_already_fact_checked_and_never_in_a_filter_rate(case_db):
    db = case_db["db"]
    assert _q(
        db,
        "SELECT count(*), count(DISTINCT target_id), max(event_date), min(check_mode), max(check_mode) "
        "FROM fact_checked_events WHERE kept AND retriever = 'recorded/seer'",
    ) == [(3871, 50, DAY, "recorded", "recorded")]
    with storage.open_db(db) as con:
        rates = analyses.filter_rates(
            storage.read_table(con, "retrieved_events"), storage.read_table(con, "fact_checked_events")
        )
    r = rates.row(0, named=True)
    assert (r["retriever"], r["n_events"], r["n_kept"], r["n_checked"], r["filter_rate"]) == (
        "recorded/seer",
        3871,
        3871,
        0,
        None,
    )
    assert json.loads(r["drop_reasons"]) == {"recorded_already_fact_checked": 3871}


def test_seer_labels_agree_with_ours_and_its_picks_are_on_the_selective_board(case_db):
    db = case_db["db"]
    assert _q(db, "SELECT count(*), sum(agree::INT) FROM recorded_case_checks") == [(50, 50)]
    with storage.open_db(db) as con:
        picks = storage.read_table(con, "selective_predictions").sort("target_id")
    # the answer's two picks: AMD Down, MU Down; both realised Strong Down -> precision 1, coverage 2/50
    assert picks.select("target_id", "prediction", "our_label", "correct").rows() == [
        ("AMD", "Down", "Strong Down", True),
        ("MU", "Down", "Strong Down", True),
    ]
    assert picks["task_id"].null_count() == 0 and all(r for r in picks["reason"])
    b = selective_board(picks).row(0, named=True)
    assert (b["model_id"], b["picks"], b["candidates"], b["correct"], b["precision"], b["coverage"]) == (
        "recorded/seer",
        2,
        50,
        2,
        1.0,
        0.04,
    )
    assert b["precision_lo"] == pytest.approx(0.3424, abs=1e-4) and b["precision_hi"] == 1.0  # Wilson 2/2
    assert format_selective_board(picks).splitlines()[1] == (
        "  recorded/seer on seer/Stock-Basket50-2026-03-25: 2 picks of 50 stocks, 2 correct; precision 1.000 "
        "[0.342, 1.000]; coverage 0.040"
    )


def test_every_task_of_the_cutoff_has_its_with_events_bundle(case_db):
    db, tasks = case_db["db"], case_db["tasks"]
    with storage.open_db(db) as con:
        bundles = storage.read_table(con, "event_bundles")
        events = storage.read_table(con, "fact_checked_events")
    assert bundles.height == 500 and (bundles["n_events"] > 0).all() and bundles["note"].null_count() == 500
    # the same events, in the same order, as the LLM forecasters' rule gives (14-day look-back)
    for tid in tasks.filter(pl.col("task_kind") == "trend5", pl.col("horizon") == "1d")["task_id"]:
        t = tasks.filter(pl.col("task_id") == tid).row(0, named=True)
        want = [e["event_id"] for e in events_for_task(events, t["target_id"], t["cutoff"])]
        got = [e["event_id"] for e in json.loads(bundles.filter(pl.col("task_id") == tid)["events"][0])]
        assert got == want, t["target_id"]
    dates = [e["date"] for es in bundles["events"] for e in json.loads(es)]
    assert min(dates) == "2026-03-12" and max(dates) == "2026-03-25"
