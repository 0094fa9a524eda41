"""The event track's stored board (issue 16 item 7): the dbt model ``event_board`` over ``event_rankings`` and
``leaf_scores``, built by its own dagster-dbt asset in the event jobs (not the macro main job), with a
contract and tests that recompute the stored skill, effect and n from the per-task rows; `leaf-live scores
--track event` prints it. Driven by a small store of constructed scores (no full run)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from dagster import AssetKey, DagsterInstance, materialize

from assets.dbt_marts import GROUP, dbt_event_marts, dbt_marts
from leaf_live.core import storage
from leaf_live.definitions import MAIN_JOB, defs
from leaf_live.event import rankings as R
from leaf_live.event.catalog import SEER_CASE_DAY
from resources import LeafLiveDB
from resources.dbt import dbt_resource

LV = R.LAST_VALUE
T0 = datetime(2025, 11, 3, 21, tzinfo=UTC)
NOW = datetime(2026, 5, 1, tzinfo=UTC)
CASE = datetime.fromisoformat(SEER_CASE_DAY).replace(hour=20, tzinfo=UTC)


def _score(model: str, tid: str, cutoff: datetime, kind: str, metric: str, value: float) -> dict:
    return {
        "partition_key": model,
        "model_id": model,
        "task_id": tid,
        "domain": "large_cap",
        "task_kind": kind,
        "horizon": "3d",
        "target_id": tid.split("/")[1],
        "metric": metric,
        "value": float(value),
        "available_at": NOW,
    }


def constructed() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(leaf_scores rows, forecast_tasks rows (task_id, cutoff)): 30 large-cap 3d series tasks over 10 cutoff
    days plus 20 on the SEER case day (its own board), MAPE and RMSE, and 30 trend3 tasks. The last value
    scores 10 + i % 5; ``a`` 0.8 of it everywhere; ``b`` one point worse on 25 tasks; ``c`` 5 tasks only."""
    rows, tasks = [], []
    for i in range(50):
        cutoff = T0 + timedelta(days=i % 10) if i < 30 else CASE
        tid = f"large_cap/T{i:02d}/series/3d/{cutoff:%Y-%m-%dT%H:%MZ}"
        trend = f"large_cap/T{i:02d}/trend3/3d/{cutoff:%Y-%m-%dT%H:%MZ}"
        tasks += [(tid, cutoff), (trend, cutoff)]
        lv = 10.0 + i % 5
        for metric in ("mape", "rmse"):
            rows.append(_score(LV, tid, cutoff, "series", metric, lv))
            rows.append(_score("baseline/a", tid, cutoff, "series", metric, 0.8 * lv))
            if i < 25:
                rows.append(_score("baseline/b", tid, cutoff, "series", metric, lv + 1))
            if i < 5:
                rows.append(_score("external/c", tid, cutoff, "series", metric, lv - 1))
        if i < 30:
            rows.append(_score(LV, trend, cutoff, "trend3", "accuracy", i % 3 == 0))
            rows.append(_score("baseline/a", trend, cutoff, "trend3", "accuracy", i % 2 == 0))
    t = pl.DataFrame(
        {"task_id": [x for x, _ in tasks], "cutoff": [c for _, c in tasks]},
        schema={"task_id": pl.Utf8, "cutoff": pl.Datetime("us", "UTC")},
    )
    return pl.DataFrame(rows), t


def build(db) -> object:
    return materialize(
        [dbt_event_marts],
        resources={"dbt": dbt_resource(), "db": LeafLiveDB(database=str(db))},
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    scores, tasks = constructed()
    board = R.rankings_frame(scores, tasks, available_at=NOW, n_boot=200)
    db = tmp_path_factory.mktemp("event_board") / "board.duckdb"
    with storage.open_db(db) as con:
        for name, frame in (("leaf_scores", scores), (R.TABLE, board)):
            storage.replace_partition(
                con, name, frame, {"partition_key": frame["partition_key"].unique().to_list()}
            )
    res = build(db)
    return {"db": db, "scores": scores, "rankings": board, "result": res}


def test_event_board_is_its_own_dbt_asset_after_event_rankings_in_the_event_jobs():
    graph = defs.resolve_asset_graph()
    node = graph.get(AssetKey("event_board"))
    assert sorted(p.to_user_string() for p in node.parent_keys) == ["event_rankings", "leaf_scores"]
    assert node.group_name == GROUP and "dbt" in node.kinds and node.description
    assert {k.to_user_string() for k in dbt_event_marts.keys} == {"event_board"}
    # the macro dbt asset holds no event model, and nothing of it is downstream of the event track
    macro = {k.to_user_string() for k in dbt_marts.keys}
    assert macro == {"stg_releases", "stg_models", "leaderboard", "macro_board"}
    for k in dbt_marts.keys:
        assert not {"event_rankings", "leaf_scores"} & {p.to_user_string() for p in graph.get(k).parent_keys}
    for job in ("leaf_live_event_scores", "leaf_live_event_llm_forecasts", "leaf_live_event_rescore"):
        keys = set(defs.resolve_job_def(job).asset_layer.executable_asset_keys)
        assert {AssetKey("event_rankings"), AssetKey("event_board")} <= keys, job
    main = set(defs.resolve_job_def(MAIN_JOB).asset_layer.executable_asset_keys)
    assert AssetKey("event_board") not in main and AssetKey("macro_board") in main
    # the site and the figures follow the board they read
    assert AssetKey("event_board") in graph.get(AssetKey("report_figures")).parent_keys
    checks = {c.name for c in graph.asset_check_keys if c.asset_key == AssetKey("event_board")}
    kinds = {c.split("_event_board")[0] for c in checks}
    assert {"unique", "not_null", "accepted_values", "within_range"} <= kinds
    assert {
        "event_board_skill_recomputed_from_leaf_scores",
        "event_board_effect_is_the_own_task_excess_loss",
        "event_board_matches_event_rankings",
    } <= checks


def test_the_board_holds_the_stored_rankings_and_every_dbt_test_passes(store):
    res = store["result"]
    assert res.success
    evals = res.get_asset_check_evaluations()
    assert len(evals) == 51 and all(e.passed for e in evals)
    with storage.open_db(store["db"]) as con:
        b = pl.from_arrow(con.sql("SELECT * FROM event_board").to_arrow_table())
    r = store["rankings"]
    keys = ["domain", "task_kind", "horizon", "metric", "model_id"]
    cols = [*keys, "rank", "ranked", "score", "ci90_lo", "ci90_hi", "p_rank1", "n_tasks", "common_rank"]
    assert b.height == r.height == 20  # 3 span boards x 4 models, trend3 x 2, 3 case-day boards x 2
    assert b.select(cols).sort(keys).equals(r.select(cols).sort(keys))
    # the case day's 20 tasks are their own board, counted from leaf_scores in SQL
    case = b.filter(pl.col("domain") == f"large_cap case {SEER_CASE_DAY}", pl.col("horizon") == "3d")
    assert set(case["task_domain"]) == {"large_cap"} and set(case["n_tasks"]) == {20}
    # hand values: last value's mean MAPE on the 30 span tasks is 12; a = 0.8 of it: skill 0.2
    row = lambda m, metric="mape", h="3d": b.filter(  # noqa: E731
        pl.col("domain") == "large_cap",
        pl.col("horizon") == h,
        pl.col("metric") == metric,
        pl.col("model_id") == m,
    ).row(0, named=True)
    assert row(LV)["ref_loss"] == pytest.approx(12.0) and row(LV)["score"] == 0.0
    assert row("baseline/a")["score"] == pytest.approx(0.2) and row("baseline/a")[
        "own_skill"
    ] == pytest.approx(0.2)
    # b is 1 point worse on its 25 tasks (their last-value mean 12): skill -1/12 adjusted, -1/12 plain
    assert row("baseline/b")["excess_loss"] == pytest.approx(1.0)
    assert row("baseline/b")["score"] == pytest.approx(-1 / 12)
    assert row("baseline/b")["n_tasks"] == 25 and row("baseline/b")["rank"] == 3
    # rmse ranks rmse^2: a's skill 1 - 0.64
    assert row("baseline/a", "rmse")["score"] == pytest.approx(0.36)
    c = row("external/c")
    assert (c["ranked"], c["rank"], c["score"], c["n_tasks"]) == (False, None, None, 5)
    assert c["own_value"] == pytest.approx(11.0)  # (9 + 10 + 11 + 12 + 13) / 5 - 1
    assert row("baseline/a", h="all")["headline"] and row("baseline/a", h="all")["n_tasks"] == 30


def test_the_cli_prints_the_stored_event_board(store, capsys, monkeypatch):
    from leaf_live.cli import main

    monkeypatch.setenv("COLUMNS", "120")
    rc = main(["scores", "--db", str(store["db"]), "--track", "event", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(rows) == 20
    assert "ref_loss" in rows[0] and "own_skill" in rows[0]  # event_board's columns, not event_rankings'
    rc = main(
        ["scores", "--db", str(store["db"]), "--track", "event", "--scope", "large_cap", "--horizon", "3d"]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "Event track | large_cap | series 3d | MAPE" in out
    block = out.split("Event track | large_cap | series 3d | MAPE")[1].split("Event track |")[0]
    line = next(ln for ln in block.splitlines() if " baseline/a " in ln)
    assert line.split()[:4] == ["1", "baseline/a", "30", "+0.200"]


def test_a_changed_score_row_fails_the_identity_tests(store, tmp_path):
    import shutil

    db = tmp_path / "changed.duckdb"
    shutil.copy(store["db"], db)
    with storage.open_db(db) as con:
        con.execute(
            "UPDATE leaf_scores SET value = value + 3 WHERE model_id = 'baseline/b' AND metric = 'mape'"
            " AND task_id LIKE 'large_cap/T00/%'"
        )
    res = build(db)
    assert not res.success
    failed = {e.check_name for e in res.get_asset_check_evaluations() if not e.passed}
    assert failed == {
        "event_board_effect_is_the_own_task_excess_loss",
        "event_board_skill_recomputed_from_leaf_scores",
        "event_board_matches_event_rankings",
    }
