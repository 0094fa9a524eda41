"""The production profile end to end (README "Deployment"): Dagster storage on a real PostgreSQL, the Celery
executor with a real Redis broker, two `dagster-celery` workers, the DuckDB pool of 1.

- A backfill of 24 release months (two spans of 12, run at once as two single-run backfill runs) of the
  release stage (`macro_release_months`: release_calendar -> releases -> announcement_returns,
  nowcast_windows, and their blocking checks; the catalog materialized first) fans its steps out over both
  workers, never runs two DuckDB steps at once, and ends with exactly the rows of the in-process run (table
  contents compared, both directions).
- A worker killed with SIGKILL after its step committed to DuckDB but before Dagster recorded the step leaves
  the step unacknowledged; Redis hands it to the other worker, which re-runs it (partition replace: no
  duplicate) and the run completes with the same rows.

Needs PostgreSQL and Redis: `.ci/run` starts both (`deploy/production/services.sh start`) and sets
LEAF_LIVE_PROD_TESTS=1, so in CI these tests FAIL when the services are unreachable. Without the switch (a
developer without the services) they are skipped with the reason and the command that starts them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest
import yaml
from required import unavailable

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROD_DIR = REPO / "deploy" / "production"
JOB = "macro_release_months"
TABLES = ("release_calendar", "releases", "announcement_returns", "nowcast_windows")
# Two spans 12 months apart: the first-release lookback (12 months) of one never reaches the other, so the
# two runs may interleave in any order and still write what one in-process run per span writes.
SPANS = (("2022-01", "2022-12"), ("2024-01", "2024-12"))
VISIBILITY_S = 30  # the tests' Redis visibility timeout (production: 4 h, deploy/production/celery.yaml)
PG_VARS = (
    "DAGSTER_PG_HOST",
    "DAGSTER_PG_PORT",
    "DAGSTER_PG_USERNAME",
    "DAGSTER_PG_PASSWORD",
    "DAGSTER_PG_DB",
)
BROKER_VARS = ("LEAF_LIVE_CELERY_BROKER", "LEAF_LIVE_CELERY_BACKEND")


def _pg_connect(db: str | None = None):
    import psycopg2

    e = os.environ
    return psycopg2.connect(
        host=e["DAGSTER_PG_HOST"],
        port=int(e["DAGSTER_PG_PORT"]),
        user=e["DAGSTER_PG_USERNAME"],
        password=e["DAGSTER_PG_PASSWORD"],
        dbname=db or e["DAGSTER_PG_DB"],
        connect_timeout=5,
    )


def _require_services() -> None:
    """Fail (CI: LEAF_LIVE_PROD_TESTS=1 or CI=true) or skip (a developer without the services)."""
    problem = None
    missing = [v for v in (*PG_VARS, *BROKER_VARS) if not os.environ.get(v)]
    if missing:
        problem = f"{', '.join(missing)} unset"
    else:
        try:
            _pg_connect().close()
        except Exception as exc:  # any reason the server cannot be used
            problem = f"PostgreSQL unreachable: {str(exc).strip().splitlines()[0]}"
        try:
            import redis

            redis.Redis.from_url(os.environ["LEAF_LIVE_CELERY_BROKER"], socket_connect_timeout=5).ping()
        except Exception as exc:
            problem = (problem + "; " if problem else "") + f"Redis unreachable: {type(exc).__name__}"
    if problem:
        msg = (
            f"production profile needs PostgreSQL and Redis ({problem}); start them with "
            "`bash deploy/production/services.sh start && . /tmp/leaf_live_services/env`"
        )
        unavailable(msg, "LEAF_LIVE_PROD_TESTS")


@dataclass
class Prod:
    tmp: Path
    env: dict[str, str]
    instance: object
    celery_db: Path
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    hostname: str = socket.gethostname()

    def start_worker(self, name: str) -> None:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 (closed when the process ends)
        self.workers[name] = subprocess.Popen(
            [
                str(BIN / "dagster-celery"),
                "worker",
                "start",
                "-A",
                "dagster_celery.app",
                "-y",
                self.env["LEAF_LIVE_CELERY_CONFIG"],
                "-n",
                name,
                "-i",
                "leaf_live.definitions",
                "--",
                "-c",
                "1",
                "--without-heartbeat",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_workers(self, names: set[str], timeout_s: float = 120) -> None:
        from celery import Celery

        app = Celery(broker=self.env["LEAF_LIVE_CELERY_BROKER"])
        deadline = time.monotonic() + timeout_s
        seen: set[str] = set()
        while time.monotonic() < deadline:
            for name, proc in self.workers.items():
                assert proc.poll() is None, f"worker {name} exited: {self.log(name)[-2000:]}"
            replies = app.control.ping(timeout=1.0) or []
            seen = {k.split("@")[0] for r in replies for k in r}
            if names <= seen:
                return
        raise AssertionError(
            f"workers {names - seen} not ready after {timeout_s} s: {self.log(sorted(names)[0])[-2000:]}"
        )

    def log(self, name: str) -> str:
        p = self.tmp / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def launch(self, start: str, end: str, tag: str) -> subprocess.Popen:
        tags = {
            "dagster/asset_partition_range_start": start,
            "dagster/asset_partition_range_end": end,
            "leaf_live/test": tag,
        }
        log = open(self.tmp / f"run-{tag}.log", "ab")  # noqa: SIM115
        return subprocess.Popen(
            [
                str(BIN / "dagster"),
                "job",
                "execute",
                "-m",
                "leaf_live.definitions",
                "-j",
                JOB,
                "--tags",
                json.dumps(tags),
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def run_of(self, tag: str, timeout_s: float = 120):
        from dagster import RunsFilter

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            runs = self.instance.get_runs(filters=RunsFilter(tags={"leaf_live/test": tag}))
            if runs:
                return runs[0]
            time.sleep(0.5)
        raise AssertionError(
            f"no run tagged {tag} after {timeout_s} s: {(self.tmp / f'run-{tag}.log').read_text()[-3000:]}"
        )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def prod(tmp_path_factory, snapshot_dir) -> Iterator[Prod]:
    _require_services()
    from dagster import DagsterInstance

    tmp = tmp_path_factory.mktemp("prod")
    db_name = f"leaf_live_test_{uuid.uuid4().hex[:10]}"
    admin = _pg_connect()
    admin.autocommit = True
    admin.cursor().execute(f'CREATE DATABASE "{db_name}"')
    home = tmp / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        (PROD_DIR / "dagster.yaml").read_text()
    )  # the production file, verbatim
    celery = yaml.safe_load((PROD_DIR / "celery.yaml").read_text())
    # One override: a crashed worker's step is handed on after VISIBILITY_S, not after hours.
    opts = celery["execution"]["config"]["config_source"]["broker_transport_options"]
    opts.update(visibility_timeout=VISIBILITY_S, unacked_restore_interval=1)
    (tmp / "celery.yaml").write_text(yaml.safe_dump(celery))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_DB": db_name,
        "LEAF_LIVE_EXECUTOR": "celery",
        "LEAF_LIVE_CELERY_CONFIG": str(tmp / "celery.yaml"),
        "LEAF_LIVE_DB": str(tmp / "celery.duckdb"),
        "LEAF_LIVE_SNAPSHOT": str(snapshot_dir),
        "LEAF_LIVE_TRANSPORT": "snapshot",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # dagster-celery starts `celery` from PATH
    }
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_PG_DB", db_name)  # the test's own instance reads the same dagster.yaml
    instance = DagsterInstance.from_config(str(home))
    state = Prod(tmp=tmp, env=env, instance=instance, celery_db=tmp / "celery.duckdb")
    try:
        for name in ("w1", "w2"):
            state.start_worker(name)
        state.wait_workers({"w1", "w2"})
        yield state
    finally:
        for proc in state.workers.values():
            _stop(proc)
        instance.dispose()
        mp.undo()
        admin.cursor().execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <>"
            " pg_backend_pid()",
            [db_name],
        )
        admin.cursor().execute(f'DROP DATABASE IF EXISTS "{db_name}"')
        admin.close()


@pytest.fixture(scope="module")
def reference(prod, snapshot_dir) -> Path:
    """The same spans materialized in-process (the embedded profile's executor, `leaf-live run`'s path)."""
    from dagster import DagsterInstance

    from leaf_live.definitions import build_definitions
    from resources import default_resources

    db = prod.tmp / "in_process.duckdb"
    _fresh_db(db)
    job = build_definitions(default_resources(db=db, snapshot=snapshot_dir)).resolve_job_def(JOB)
    for start, end in SPANS:
        with DagsterInstance.ephemeral() as instance:
            result = job.execute_in_process(
                instance=instance,
                tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
                run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
            )
        assert result.success
    return db


def _fresh_db(path: Path) -> None:
    """A new DuckDB file holding only the indicator catalog, as the main job leaves it (the release stage's
    guardrail check reads the catalog)."""
    from dagster import materialize

    from assets.macro_releases import indicator_catalog
    from resources import LeafLiveDB

    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    assert materialize(
        [indicator_catalog], resources={"db": LeafLiveDB(database=str(path))}, run_config=quiet
    ).success


def _diff(a: Path, b: Path, where: str = "TRUE") -> dict[str, tuple[int, int, int, int]]:
    """Per table: (rows in a, rows in b, rows of a missing from b, rows of b missing from a), multisets."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
        out = {}
        for t in TABLES:
            na = con.execute(f'SELECT count(*) FROM a."{t}" WHERE {where}').fetchone()[0]
            nb = con.execute(f'SELECT count(*) FROM b."{t}" WHERE {where}').fetchone()[0]
            a_b = con.execute(
                f'SELECT count(*) FROM (SELECT * FROM a."{t}" WHERE {where} EXCEPT ALL '
                f'SELECT * FROM b."{t}" WHERE {where})'
            ).fetchone()[0]
            b_a = con.execute(
                f'SELECT count(*) FROM (SELECT * FROM b."{t}" WHERE {where} EXCEPT ALL '
                f'SELECT * FROM a."{t}" WHERE {where})'
            ).fetchone()[0]
            out[t] = (na, nb, a_b, b_a)
        return out
    finally:
        con.close()


@dataclass
class StepRun:
    worker: str
    executing: float
    start: float | None = None
    end: float | None = None


def _step_runs(instance, run_id: str) -> dict[str, list[StepRun]]:
    """Every execution of every step of a run from the event log: which worker took it and when it ran."""
    out: dict[str, list[StepRun]] = {}
    for e in instance.all_logs(run_id):
        ev = e.dagster_event
        if ev is None or not e.step_key:
            continue
        runs = out.setdefault(e.step_key, [])
        if ev.event_type_value == "ENGINE_EVENT" and "in celery worker" in e.message:
            worker = ev.engine_event_data.metadata["Celery worker"].value
            runs.append(StepRun(worker=worker.split("@")[0], executing=e.timestamp))
        elif ev.event_type_value == "STEP_START" and runs:
            runs[-1].start = e.timestamp
        elif ev.event_type_value == "STEP_SUCCESS" and runs:
            runs[-1].end = e.timestamp
    return out


def _steps_of_job() -> dict[str, str | None]:
    from dagster._core.execution.api import create_execution_plan

    from leaf_live.definitions import defs

    plan = create_execution_plan(defs.resolve_job_def(JOB))
    return {s.key: s.pool for s in plan.steps}


def test_backfill_over_two_workers_equals_the_in_process_run(prod, reference):
    _fresh_db(prod.celery_db)
    t0 = time.monotonic()
    procs = {f"span{i}": prod.launch(start, end, f"span{i}") for i, (start, end) in enumerate(SPANS)}
    for tag, proc in procs.items():
        assert proc.wait(timeout=400) == 0, (prod.tmp / f"run-{tag}.log").read_text()[-4000:]
    elapsed = time.monotonic() - t0

    pools = _steps_of_job()
    assert set(pools.values()) == {"duckdb"} and len(pools) >= 8  # 4 assets + their checks, all open DuckDB
    executions: list[StepRun] = []
    for tag in procs:
        run = prod.run_of(tag)
        assert run.status.value == "SUCCESS"
        steps = _step_runs(prod.instance, run.run_id)
        assert set(steps) == set(pools), steps.keys()
        for key, runs in steps.items():
            assert len(runs) == 1 and runs[0].start and runs[0].end, (key, runs)
        executions += [r for runs in steps.values() for r in runs]

    # Fan-out: both workers took steps. Pool of 1: the DuckDB steps of the two runs never overlapped,
    # although after `releases` several of them were ready at once in each run and two workers were idle.
    assert {r.worker for r in executions} == {"w1", "w2"}
    spans = sorted((r.start, r.end) for r in executions)
    overlaps = [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    assert not overlaps, overlaps

    # Same rows as the in-process run: no loss, no duplicate, every value equal.
    diff = _diff(reference, prod.celery_db)
    for t, (n_ref, n_celery, missing, extra) in diff.items():
        assert n_ref > 0 and (n_celery, missing, extra) == (n_ref, 0, 0), (t, diff[t])
    print(
        f"\n2 runs x 12 months, {len(executions)} steps on 2 Celery workers: {elapsed:.1f} s; rows per table "
        f"{ {t: d[0] for t, d in diff.items()} }"
    )


def test_worker_killed_mid_step_is_retried_on_the_other_worker(prod, reference):
    """SIGKILL after the step committed its 12 months to DuckDB but before Dagster recorded the step: the
    unacknowledged Celery task goes to the other worker, the step re-runs (replacing the same partitions)
    and the run completes with exactly the in-process rows."""
    start, end = SPANS[1]
    _fresh_db(prod.celery_db)
    # Gate 1: hold the DuckDB file, so the first step (release_calendar) waits inside its connection retry
    # (dagster-duckdb backs off on the lock) -- a known point after STEP_START.
    hold = duckdb.connect(str(prod.celery_db))
    t0 = time.monotonic()
    proc = prod.launch(start, end, "kill")
    run = prod.run_of("kill")
    victim = None
    deadline = time.monotonic() + 180
    while victim is None and time.monotonic() < deadline:
        runs = _step_runs(prod.instance, run.run_id).get("release_calendar", [])
        if runs and runs[0].start:
            victim = runs[0].worker
        time.sleep(0.2)
    assert victim in prod.workers, f"release_calendar never started: {prod.log('w1')[-2000:]}"
    # Gate 2: block the event log, so the step cannot record its materializations or its success; then let
    # it open the database. It writes its 12 months and blocks on its first event insert.
    lock = _pg_connect(prod.env["DAGSTER_PG_DB"])
    lock.cursor().execute("LOCK TABLE event_logs IN SHARE MODE")
    hold.close()
    watch = _pg_connect(prod.env["DAGSTER_PG_DB"])
    watch.autocommit = True
    blocked = 0
    deadline = time.monotonic() + 120
    while not blocked and time.monotonic() < deadline:
        time.sleep(0.2)
        cur = watch.cursor()
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%INSERT"
            " INTO event_logs%'"
        )
        blocked = cur.fetchone()[0]
    watch.close()
    assert blocked, "the step never reached its first event write"
    os.killpg(prod.workers[victim].pid, signal.SIGKILL)
    prod.workers[victim].wait(timeout=30)
    # The killed step had committed every month before it died (what the retry must not duplicate).
    con = duckdb.connect(str(prod.celery_db), read_only=True)
    committed = con.execute("SELECT count(DISTINCT partition_key), count(*) FROM release_calendar").fetchone()
    con.close()
    assert committed[0] == 12 and committed[1] > 0, committed
    lock.rollback()
    lock.close()

    assert proc.wait(timeout=VISIBILITY_S + 300) == 0, (prod.tmp / "run-kill.log").read_text()[-4000:]
    elapsed = time.monotonic() - t0
    run = prod.instance.get_run_by_id(run.run_id)
    assert run.status.value == "SUCCESS"
    steps = _step_runs(prod.instance, run.run_id)
    survivor = ({"w1", "w2"} - {victim}).pop()
    cal = steps["release_calendar"]
    assert [r.worker for r in cal] == [
        victim,
        survivor,
    ], cal  # taken twice: the killed worker, then the other
    assert cal[0].end is None and cal[1].end is not None  # only the retry finished
    assert all(r.worker == survivor for k, runs in steps.items() if k != "release_calendar" for r in runs)
    n_success = sum(
        1
        for e in prod.instance.all_logs(run.run_id)
        if e.dagster_event and e.dagster_event.event_type_value == "STEP_SUCCESS"
    )
    assert n_success == len(_steps_of_job())

    diff = _diff(reference, prod.celery_db, where=f"partition_key BETWEEN '{start}' AND '{end}'")
    for t, (n_ref, n_celery, missing, extra) in diff.items():
        assert n_ref > 0 and (n_celery, missing, extra) == (n_ref, 0, 0), (t, diff[t])
    print(f"\nkill -9 of {victim} mid-step, retried on {survivor}: run finished in {elapsed:.1f} s")
