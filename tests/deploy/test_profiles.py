"""Deployment profiles without services: every DuckDB step is in the pool of 1, the executor follows
LEAF_LIVE_EXECUTOR, the production YAML files are valid for Dagster and dagster-celery, and DuckDB really
admits one writing process (why the pool exists)."""

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from dagster import asset
from dagster._core.execution.api import create_execution_plan

from assets.common import DUCKDB_POOL, DUCKDB_RESOURCE_KEYS, in_duckdb_pool
from leaf_live.core.settings import SettingsError, get_settings
from leaf_live.definitions import ALL_ASSETS, ALL_CHECKS, celery_executor_config, defs, run_executor
from resources import LeafLiveDB

PROD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "production"


@pytest.mark.parametrize("job", ["leaf_live_main", "macro_release_months", "llm_nowcasts_hourly"])
def test_every_duckdb_step_of_every_job_is_in_the_pool(job):
    job_def = defs.resolve_job_def(job)
    plan = create_execution_plan(job_def)
    by_node = {n.name: n.definition for n in job_def.graph.nodes}
    assert plan.steps
    for step in plan.steps:
        op = by_node[step.key.split("[")[0]] if step.key in by_node else by_node[step.node_handle.name]
        opens_db = bool(op.required_resource_keys & DUCKDB_RESOURCE_KEYS)
        assert step.pool == (DUCKDB_POOL if opens_db else None), (step.key, step.pool)
    assert all(a.node_def.pool == DUCKDB_POOL for a in [*ALL_ASSETS, *ALL_CHECKS])  # all open DuckDB today


def test_pool_check_leaves_other_steps_and_refuses_a_missing_or_second_pool():
    @asset
    def pure() -> None:  # no DuckDB: free to fan out
        pass

    @asset(pool=DUCKDB_POOL)
    def writer(db: LeafLiveDB) -> None:
        pass

    @asset
    def forgot(db: LeafLiveDB) -> None:  # opens DuckDB without pool=
        pass

    @asset(pool="elsewhere")
    def confused(db: LeafLiveDB) -> None:
        pass

    @asset(pool=DUCKDB_POOL)
    def hoarder() -> None:  # takes the writer's slot without opening the file
        pass

    out = in_duckdb_pool([pure, writer])
    assert [a.node_def.pool for a in out] == [None, DUCKDB_POOL]
    assert out[0] is pure and out[1] is writer  # public pool= already did it: nothing rebuilt
    with pytest.raises(ValueError, match="forgot: pool None.*opens DuckDB"):
        in_duckdb_pool([forgot])
    with pytest.raises(ValueError, match="confused: pool 'elsewhere'.*opens DuckDB"):
        in_duckdb_pool([confused])
    with pytest.raises(ValueError, match="hoarder: in pool 'duckdb' but opens no DuckDB"):
        in_duckdb_pool([hoarder])


def test_executor_follows_the_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("LEAF_LIVE_EXECUTOR", raising=False)
    assert run_executor(get_settings()).name == "in_process"
    monkeypatch.setenv("LEAF_LIVE_EXECUTOR", "celery")
    monkeypatch.setenv("LEAF_LIVE_CELERY_CONFIG", str(PROD_DIR / "celery.yaml"))
    assert run_executor(get_settings()).name == "celery"
    monkeypatch.setenv("LEAF_LIVE_EXECUTOR", "kubernetes")
    with pytest.raises(SettingsError, match="LEAF_LIVE_EXECUTOR='kubernetes'"):
        get_settings()
    bad = tmp_path / "celery.yaml"
    bad.write_text("broker: redis://x\n")
    with pytest.raises(SettingsError, match="LEAF_LIVE_CELERY_CONFIG=.*execution: config"):
        celery_executor_config(bad)


def test_production_files_are_valid(monkeypatch):
    from dagster._config import process_config, resolve_to_config_type
    from dagster._core.instance.config import dagster_instance_config
    from dagster_celery.cli import get_validated_config
    from dagster_postgres import DagsterPostgresStorage
    from dagster_postgres.utils import pg_url_from_config

    for var, value in [
        ("DAGSTER_PG_HOST", "db.internal"),
        ("DAGSTER_PG_PORT", "5432"),
        ("DAGSTER_PG_USERNAME", "leaf"),
        ("DAGSTER_PG_PASSWORD", "pw"),
        ("DAGSTER_PG_DB", "dagster"),
        ("LEAF_LIVE_CELERY_BROKER", "redis://127.0.0.1:6379/0"),
        ("LEAF_LIVE_CELERY_BACKEND", "redis://127.0.0.1:6379/1"),
    ]:
        monkeypatch.setenv(var, value)
    config, _ = dagster_instance_config(str(PROD_DIR))
    storage = process_config(
        resolve_to_config_type(DagsterPostgresStorage.config_type()), config["storage"]["postgres"]
    )
    assert storage.success, storage.errors  # env references resolved as the instance resolves them
    assert pg_url_from_config(storage.value) == "postgresql+psycopg2://leaf:pw@db.internal:5432/dagster"
    assert config["concurrency"]["pools"] == {"granularity": "op", "default_limit": 1}
    celery = get_validated_config(
        str(PROD_DIR / "celery.yaml")
    )  # what `dagster-celery worker start -y` reads
    assert celery["broker"] == "redis://127.0.0.1:6379/0" and celery["backend"] == "redis://127.0.0.1:6379/1"
    src = celery["config_source"]
    assert (
        src["task_acks_late"] and src["task_reject_on_worker_lost"] and src["worker_prefetch_multiplier"] == 1
    )
    assert src["broker_transport_options"]["visibility_timeout"] >= 3600  # longer than the longest step
    # self-healing, configured together (dagster.yaml comment, docs/operations.md): the order must hold
    mon = config["run_monitoring"]
    assert mon["enabled"] and mon["max_resume_run_attempts"] == 0  # the default launcher cannot resume
    assert (
        mon["poll_interval_seconds"]
        < mon["cancel_timeout_seconds"]
        <= mon["free_slots_after_run_end_seconds"]
        < mon["start_timeout_seconds"]
        < src["broker_transport_options"]["visibility_timeout"]
    )
    assert config["run_retries"] == {"enabled": True, "max_retries": 2, "retry_on_asset_or_op_failure": False}
    # the embedded profile's instance: SQLite storage under dagster_home/, one run at a time
    embedded, _ = dagster_instance_config(str(Path(__file__).resolve().parents[2] / "dagster_home"))
    assert "storage" not in embedded and embedded["run_queue"]["max_concurrent_runs"] == 1


def test_duckdb_admits_one_writing_process(tmp_path):
    """The reason for the pool: while one process has the file open, a second cannot open it (not even to
    read), so two Celery workers must never run DuckDB steps at once."""
    path = tmp_path / "x.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    probe = (
        "import duckdb, sys\n"
        "for ro in (False, True):\n"
        "    try:\n"
        "        duckdb.connect(sys.argv[1], read_only=ro).close(); print('opened')\n"
        "    except duckdb.IOException as e:\n"
        "        print('locked' if 'lock' in str(e).lower() else e)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["locked", "locked"], out
    con.close()
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["opened", "opened"], out
