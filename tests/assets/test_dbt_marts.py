"""dbt through dagster-dbt: the dbt models are assets downstream of the assets that write their sources'
tables, every model carries unique / not_null / accepted_values tests, `dbt build` runs in the main job and
the views answer analysts read-only, the manifest is parsed offline and rebuilt when the project changes."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, RunsFilter, materialize
from dagster_dbt import DbtProject

from assets.dbt_marts import GROUP, dbt_marts
from leaf_live.core import storage
from leaf_live.definitions import MAIN_JOB, defs
from resources import LeafLiveDB
from resources.dbt import DBT_DIR, dbt_resource, prepare_dbt_project

MODELS = ("stg_releases", "stg_models", "leaderboard", "macro_board")

# Loaded by every Python process started with this directory on PYTHONPATH (dbt is one): any name lookup or
# connection off the loopback is logged to $LEAF_LIVE_NET_LOG and refused.
GUARD = """
import os, socket
_LOG = os.environ["LEAF_LIVE_NET_LOG"]
_LOCAL = (None, "localhost", "127.0.0.1", "::1")
def _refuse(what):
    with open(_LOG, "a") as f:
        f.write(what + "\\n")
    raise OSError("network disabled by the test guard: " + what)
_getaddrinfo, _connect = socket.getaddrinfo, socket.socket.connect
def getaddrinfo(host, *a, **k):
    if host not in _LOCAL:
        _refuse(f"getaddrinfo {host}")
    return _getaddrinfo(host, *a, **k)
def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOCAL:
        _refuse(f"connect {address}")
    return _connect(self, address)
socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
"""


@pytest.fixture()
def offline(tmp_path, monkeypatch) -> Path:
    """No network for this process and its children; returns the log of refused attempts."""
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "network.log"
    log.touch()
    monkeypatch.setenv("PYTHONPATH", str(guard))
    monkeypatch.setenv("LEAF_LIVE_NET_LOG", str(log))
    ns: dict = {}
    exec(GUARD.replace("socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect", ""), ns)
    monkeypatch.setattr(socket, "getaddrinfo", ns["getaddrinfo"])
    monkeypatch.setattr(socket.socket, "connect", ns["connect"])
    return log


def test_dbt_models_are_assets_downstream_of_the_writers_of_their_tables():
    graph = defs.resolve_asset_graph()
    parents = {m: sorted(p.to_user_string() for p in graph.get(AssetKey(m)).parent_keys) for m in MODELS}
    assert parents == {
        "stg_releases": ["indicator_catalog", "releases"],
        "stg_models": ["arima_nowcasts", "comparator_nowcasts", "llm_nowcasts", "recorded_nowcasts"],
        "leaderboard": ["livemacro_scores", "stg_models"],  # the fit's name is on every score row
        "macro_board": [
            "livemacro_event_losses",
            "livemacro_rankings",
            "livemacro_scores",
            "score_decompositions",  # the auto-ARIMA provenance
        ],
    }
    for m, ps in parents.items():
        node = graph.get(AssetKey(m))
        assert node.group_name == GROUP and "dbt" in node.kinds and node.description
        for p in ps:  # real assets, no stubs for dbt sources
            assert graph.get(AssetKey(p)).is_materializable, p
    job_keys = defs.resolve_job_def(MAIN_JOB).asset_layer.executable_asset_keys
    assert {AssetKey(m) for m in MODELS} <= set(job_keys)


def test_every_model_has_unique_not_null_and_accepted_values_tests():
    graph = defs.resolve_asset_graph()
    for m in MODELS:
        kinds = {c.name.split("_")[0] for c in graph.asset_check_keys if c.asset_key == AssetKey(m)}
        assert {"unique", "not", "accepted"} <= kinds, (m, kinds)


@pytest.fixture(scope="module")
def mart(main_run):
    con = storage.connect_read_only(main_run["db"])  # the views answer on an analyst's read-only connection
    yield con
    con.close()


def test_dbt_build_ran_in_the_main_job_and_every_dbt_test_passed(main_run):
    inst = DagsterInstance.from_config(str(main_run["dagster_home"]))
    try:
        run = inst.get_runs(RunsFilter(job_name=MAIN_JOB))[0]  # the event track's runs follow it
        graph = defs.resolve_asset_graph()
        dbt_checks = {c for c in graph.asset_check_keys if c.asset_key in {AssetKey(m) for m in MODELS}}
        evals = [
            e.dagster_event.event_specific_data
            for e in inst.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        ]
        ran = {e.asset_check_key: e.passed for e in evals if e.asset_check_key in dbt_checks}
        assert len(dbt_checks) == 46 and set(ran) == dbt_checks and all(ran.values())
    finally:
        inst.dispose()


def test_the_leaderboard_mart_ranks_on_the_common_event_set(mart):
    board = pl.from_arrow(mart.sql("SELECT * FROM leaderboard").to_arrow_table())
    scores = storage.read_table(mart, "livemacro_scores")
    assert board.height == scores.height > 500
    grain = ["leaderboard", "fit_id", "horizon", "scope", "target"]
    # rank = 1 + compared models with a strictly higher score on the board's common event set (ties share a
    # rank); a model not compared on that board (too few events in common) has no rank
    compared = scores.filter(pl.col("common_rank").is_not_null()).rename({"partition_key": "leaderboard"})
    want = (
        compared.with_columns(
            pl.col("common_score").rank("min", descending=True).over(grain).cast(pl.Int32).alias("rank")
        )
        .select(*grain, "model_id", "rank")
        .sort(*grain, "model_id")
    )
    got = (
        board.filter(pl.col("rank").is_not_null()).select(*grain, "model_id", "rank").sort(*grain, "model_id")
    )
    assert got.equals(want) and got.height > 0
    assert (
        board.filter(pl.col("rank").is_null())["n_events_common"].null_count()
        == board.filter(pl.col("rank").is_null()).height
    )
    # every compared model of a board is scored on the same number of events
    assert (compared.group_by(grain).agg(pl.col("n_events_common").n_unique())["n_events_common"] == 1).all()
    fits = dict(mart.execute("SELECT fit_id, fit_name FROM market_beta_fits").fetchall())
    assert board.select(pl.col("fit_id").replace_strict(fits) == pl.col("fit_name")).to_series().all()
    assert set(board.filter(pl.col("leaderboard") == "backtest")["fit_name"]) == {"backtest"}


def test_stg_models_counts_each_model_in_nowcasts(mart):
    got = {
        r[0]: r[1:]
        for r in mart.execute(
            "SELECT model_id, model_family, n_nowcasts, n_scorable FROM stg_models"
        ).fetchall()
    }
    want = {
        r[0]: r[1:]
        for r in mart.execute(
            "SELECT model_id, count(*), count(*) FILTER (WHERE valid AND NOT after_release) FROM nowcasts"
            " GROUP BY 1"
        ).fetchall()
    }
    assert {m: g[1:] for m, g in got.items()} == want
    assert got["openai/gpt-5-search-api@single"][0] == "llm" and got["fed/gdpnow"][0] == "fed"
    assert got["baseline/auto-arima"][0] == "baseline"


def test_dbt_build_is_offline_and_a_failing_dbt_test_fails_its_check(main_run, tmp_path, offline):
    db = tmp_path / "copy.duckdb"
    shutil.copy(main_run["db"], db)
    resources = {"dbt": dbt_resource(), "db": LeafLiveDB(database=str(db))}
    res = materialize([dbt_marts], resources=resources, instance=DagsterInstance.ephemeral())
    assert res.success
    assert offline.read_text() == ""
    # a model id outside the DESIGN.md conventions fails stg_models' accepted_values test, and the step
    con = storage.connect(db)
    con.execute("INSERT INTO nowcasts SELECT * REPLACE ('mystery-model' AS model_id) FROM nowcasts LIMIT 1")
    con.close()
    res = materialize(
        [dbt_marts], resources=resources, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not res.success
    failed = {e.check_name for e in res.get_asset_check_evaluations() if not e.passed}
    assert failed == {
        "accepted_values_stg_models_model_family__llm__baseline__consensus__fed__market__external"
    }
    assert offline.read_text() == ""


def test_the_manifest_is_parsed_offline_and_again_only_when_the_project_changes(tmp_path, offline):
    src = tmp_path / "dbt_project"
    shutil.copytree(DBT_DIR, src, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    project = DbtProject(project_dir=src)
    manifest = prepare_dbt_project(project)
    assert manifest == src / "target" / "manifest.json" and offline.read_text() == ""
    nodes = json.loads(manifest.read_text())["nodes"]
    # the macro models and the event track's board (its own asset: tests/assets/test_event_board.py)
    assert {n["name"] for n in nodes.values() if n["resource_type"] == "model"} == {*MODELS, "event_board"}
    mtime = manifest.stat().st_mtime_ns
    prepare_dbt_project(project)
    assert manifest.stat().st_mtime_ns == mtime  # current: not parsed again
    sql = src / "models" / "staging" / "stg_models.sql"
    sql.write_text(sql.read_text() + "\n-- changed\n")
    prepare_dbt_project(project)
    assert manifest.stat().st_mtime_ns != mtime
    node = json.loads(manifest.read_text())["nodes"]["model.leaf_live.stg_models"]
    assert node["raw_code"].rstrip().endswith("-- changed")
    assert offline.read_text() == ""
    # the guard is real: `dbt --version` (what dagster-dbt runs by default) asks PyPI, and is refused
    out = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "--version"], capture_output=True, text=True
    )
    assert "pypi.org" in offline.read_text(), out.stdout
