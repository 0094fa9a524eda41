"""Blocking asset checks on the tables the scores read: each injected defect fails exactly the check meant to
catch it (and no other), and a failing blocking check stops the run before the scores and the dbt marts."""

from __future__ import annotations

import contextlib
import io
import shutil

import pytest
from conftest import dagster_home
from dagster import AssetKey, DagsterEventType, DagsterInstance

from assets.dbt_marts import dbt_marts
from leaf_live.cli import main as cli_main
from leaf_live.core import storage
from leaf_live.definitions import ALL_CHECKS, defs
from resources import LeafLiveDB

# one row of a defect each; {table} placeholders are SQL on the copied main-run database
ARIMA_AFTER_CLOSE = (
    "INSERT INTO nowcasts (producer, partition_key, model_id, indicator_id, reference_period, issued_at,"
    " value, valid, after_release, available_at) SELECT 'arima_nowcasts', partition_key,"
    " 'baseline/auto-arima', indicator_id, reference_period, closes_at + INTERVAL 1 HOUR, 2.0, true, false,"
    " closes_at + INTERVAL 1 HOUR FROM nowcast_windows WHERE indicator_id = 'cpi' AND partition_key ="
    " '2019-02'"
)
DEFECTS = {
    # a stale window left in another release month after the release moved
    "stale window": (
        [
            "INSERT INTO nowcast_windows SELECT * REPLACE ('2019-01' AS partition_key) FROM nowcast_windows "
            "WHERE partition_key = '2019-02' AND indicator_id = 'cpi'"
        ],
        {"nowcast_windows_unique_key"},
    ),
    "valid nowcast issued after the release": ([ARIMA_AFTER_CLOSE], {"arima_nowcasts_before_release"}),
    "comparator outside the guardrail": (
        [
            "UPDATE nowcasts SET value = 31 WHERE producer = 'comparator_nowcasts' AND model_id ="
            " 'fed/cleveland-cpi' AND issued_at = (SELECT min(issued_at) FROM nowcasts WHERE model_id ="
            " 'fed/cleveland-cpi' AND valid AND indicator_id = 'cpi') AND indicator_id = 'cpi'"
        ],
        {"comparator_nowcasts_within_guardrails"},
    ),
    "recorded row twice": (
        ["INSERT INTO nowcasts SELECT * FROM nowcasts WHERE producer = 'recorded_nowcasts' LIMIT 1"],
        {"recorded_nowcasts_unique_key"},
    ),
    "recorded flag cleared after the release": (
        [
            "UPDATE nowcasts SET after_release = false WHERE producer = 'recorded_nowcasts' AND valid AND"
            " after_release AND issued_at = (SELECT min(issued_at) FROM nowcasts WHERE producer ="
            " 'recorded_nowcasts' AND valid AND after_release AND indicator_id = 'cpi') AND indicator_id ="
            " 'cpi'"
        ],
        {"recorded_nowcasts_before_release"},
    ),
    "comparator issued after the release, unflagged": (
        [
            "INSERT INTO nowcasts SELECT n.* REPLACE (w.closes_at AS issued_at) FROM nowcasts n JOIN"
            " nowcast_windows w USING (indicator_id, reference_period) WHERE n.model_id = 'fed/gdpnow' AND"
            " w.partition_key = '2019-04' ORDER BY n.issued_at DESC LIMIT 1"
        ],
        {"comparator_nowcasts_before_release", "comparator_nowcasts_point_in_time"},
    ),
    "named fit without betas": (
        [
            "INSERT INTO market_beta_fits SELECT * REPLACE ('ghost' AS fit_name, 'hr-0000000000000000' AS"
            " fit_id) FROM market_beta_fits LIMIT 1"
        ],
        {"named_fits_exist"},
    ),
    "score on a fit that is gone": (
        [
            "UPDATE livemacro_scores SET fit_id = 'hr-0000000000000000' WHERE partition_key = 'backtest' "
            "AND model_id = 'fed/gdpnow' AND horizon = 'terminal' AND scope = 'overall' AND target = 'return'"
        ],
        {"livemacro_scores_fit_exists", "shapley_sums_to_score"},
    ),  # its Shapley rows no longer meet their score
    "price above 1": (
        [
            "UPDATE prediction_market_prices SET price = 1.2 WHERE ts = (SELECT min(ts) FROM "
            "prediction_market_prices) AND bucket_label = (SELECT min(bucket_label) FROM "
            "prediction_market_prices WHERE ts = (SELECT min(ts) FROM prediction_market_prices))"
        ],
        {"prices_are_probabilities"},
    ),
    "zero surprise scale": (
        ["UPDATE surprise_scales SET sigma = 0 WHERE indicator_id = 'ppi'"],
        {"surprise_scales_positive"},
    ),
    "release outside the guardrail": (
        [
            "UPDATE releases SET actual = 99999 WHERE indicator_id = 'cpi' "
            "AND reference_period = DATE '2015-02-01'"
        ],
        {"releases_within_guardrails"},
    ),
}


def _failed_checks(db) -> dict[str, int]:
    res = LeafLiveDB(database=str(db))
    out = {}
    for check in ALL_CHECKS:
        r = check(db=res)
        if not r.passed:
            out[next(iter(check.check_keys)).name] = r.metadata.get("violations")
    return out


def test_every_check_passes_on_the_main_run(main_run):
    assert _failed_checks(main_run["db"]) == {}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_each_defect_fails_exactly_its_check(main_run, tmp_path, defect):
    db = tmp_path / "copy.duckdb"
    shutil.copy(main_run["db"], db)
    sql, expected = DEFECTS[defect]
    con = storage.connect(db)
    try:
        for stmt in sql:
            con.execute(stmt)
    finally:
        con.close()
    failed = _failed_checks(db)
    assert set(failed) == expected
    assert all(getattr(v, "value", 1) == 1 for v in failed.values()), failed  # one offending row or key


def test_a_failing_blocking_check_stops_the_scores(main_run, snapshot_dir, tmp_path, tmp_path_factory):
    """`leaf-live run` on a file with a valid ARIMA nowcast issued after its release, in a month the run does
    not refit (ARIMA span empty): the check fails, the CLI names it and stops; the nowcast producers ran, the
    scores and the dbt marts (one dbt build step, downstream of the scores) did not."""
    db = tmp_path / "copy.duckdb"
    shutil.copy(main_run["db"], db)
    con = storage.connect(db)
    con.execute(ARIMA_AFTER_CLOSE)
    scores_before = storage.read_table(con, "livemacro_scores")
    con.close()
    out, err = io.StringIO(), io.StringIO()
    with dagster_home(tmp_path_factory):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli_main(
                [
                    "run",
                    "--snapshot",
                    str(snapshot_dir),
                    "--db",
                    str(db),
                    "--start",
                    "2026-01",
                    "--end",
                    "2026-01",
                    "--arima-from",
                    "2026-02",
                ]
            )
        inst = DagsterInstance.get()
        try:
            run = inst.get_runs()[0]
            mats = {
                e.dagster_event.asset_key.to_user_string()
                for e in inst.all_logs(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
            }
        finally:
            inst.dispose()
    lines = err.getvalue().splitlines()
    assert rc == 1 and lines[-1] == "leaf-live run: FAILED"
    failed = [ln for ln in lines if ln.startswith("asset check FAILED")]
    assert len(failed) == 1 and failed[0].startswith(
        "asset check FAILED: arima_nowcasts:arima_nowcasts_before_release {'violations': 1"
    )
    skipped = set(
        next(ln for ln in lines if ln.startswith("not materialized: "))
        .removeprefix("not materialized: ")
        .split(", ")
    )
    # everything downstream of arima_nowcasts in the graph, and the dbt marts (one dbt build step)
    graph = defs.resolve_asset_graph()
    downstream, todo = set(), [AssetKey("arima_nowcasts")]
    while todo:
        for child in graph.get(todo.pop()).child_keys:
            if child not in downstream:
                downstream.add(child)
                todo.append(child)
    want = {k.to_user_string() for k in downstream} | {k.to_user_string() for k in dbt_marts.keys}
    assert skipped == want
    assert {"livemacro_scores", "livebetting_scores", "leaderboard", "copying_convergence"} <= skipped
    assert {"releases", "arima_nowcasts", "recorded_nowcasts", "comparator_nowcasts", "market_betas"} <= mats
    assert not mats & skipped
    con = storage.connect_read_only(db)
    try:
        assert storage.read_table(con, "livemacro_scores").equals(scores_before)
    finally:
        con.close()
