"""A small store for the participation tests: two macro windows around the real clock (cpi 2026-11 open,
payrolls 2026-10 closed an hour ago), one first release, and event tasks (one by default) whose cutoff is two
days ahead."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import polars as pl

import leaf_live.core.participation  # noqa: F401  (registers external_receipts)
import leaf_live.event  # noqa: F401
import leaf_live.macro  # noqa: F401
from leaf_live.core import storage

OPEN = ("cpi", date(2026, 11, 1))
CLOSED = ("nonfarm_payrolls", date(2026, 10, 1))


def _hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def make_store(db: Path, now: datetime | None = None, n_tasks: int = 1) -> dict:
    """Write the store with ``n_tasks`` event tasks (``q1`` .. ``q<n>``, one cutoff); returns the instants
    used (``now``, ``open_close``, ``closed_close``, ``cutoff``), the first task's id (``task_id``) and all
    of them (``task_ids``)."""
    now = _hour(now or datetime.now(UTC))
    open_close, closed_close, cutoff = (
        now + timedelta(days=2),
        now - timedelta(hours=1),
        now + timedelta(days=2),
    )
    windows = pl.DataFrame(
        [
            {
                "partition_key": c.strftime("%Y-%m"),
                "indicator_id": iid,
                "reference_period": per,
                "target_month": per,
                "opens_at": o,
                "closes_at": c,
                "release_time_et": "08:30",
                "prompt_group": "output_core",
                "n_issue_hours": int((c - o) / timedelta(hours=1)),
                "available_at": o,
            }
            for (iid, per), o, c in (
                (OPEN, now - timedelta(days=7), open_close),
                (CLOSED, now - timedelta(days=20), closed_close),
            )
        ]
    )
    bundle = json.dumps(
        {"meta": {"question": "Will it rain?", "price": 0.4, "price_age_h": 2}}, sort_keys=True
    )
    task = pl.DataFrame(
        [
            {
                "partition_key": "q1",
                "task_id": f"event/q{i}/event/50%/{cutoff:%Y-%m-%d}",
                "domain": "event",
                "target_id": f"q{i}",
                "task_kind": "event",
                "horizon": "50%",
                "horizon_steps": 1,
                "frequency": "event",
                "cutoff": cutoff,
                "target_times": [cutoff + timedelta(days=5)],
                "last_value": 0.4,
                "bundle": bundle,
                "bundle_hash": hashlib.sha256(bundle.encode()).hexdigest(),
                "max_input_available_at": cutoff - timedelta(hours=2),
                "last_value_age_days": None,
                "available_at": cutoff,
            }
            for i in range(1, n_tasks + 1)
        ]
    )
    release = pl.DataFrame(
        [
            {
                "partition_key": "2026-10",
                "indicator_id": "cpi",
                "reference_period": date(2026, 9, 1),
                "period_label": "Sep",
                "period_source": "event_text",
                "release_at": now - timedelta(days=40),
                "actual": 3.0,
                "source": "test",
                "available_at": now - timedelta(days=40),
            }
        ]
    )
    con = storage.connect(db)
    try:
        storage.replace_partition(
            con,
            "nowcast_windows",
            windows.filter(pl.col("partition_key") == windows["partition_key"][0]),
            {"partition_key": windows["partition_key"][0]},
        )
        if windows["partition_key"][1] != windows["partition_key"][0]:
            storage.replace_partition(
                con,
                "nowcast_windows",
                windows.filter(pl.col("partition_key") == windows["partition_key"][1]),
                {"partition_key": windows["partition_key"][1]},
            )
        storage.replace_partition(con, "forecast_tasks", task, {"partition_key": "q1"})
        rel = storage.conform(
            "releases",
            release.with_columns(
                pl.lit(None, dtype=s).alias(c)
                for c, s in storage.polars_schema("releases").items()
                if c not in release.columns
            ).select(list(storage.polars_schema("releases"))),
        )
        storage.replace_partition(con, "releases", rel, {"partition_key": "2026-10"})
    finally:
        con.close()
    return {
        "now": now,
        "open_close": open_close,
        "closed_close": closed_close,
        "cutoff": cutoff,
        "task_id": task["task_id"][0],
        "task_ids": task["task_id"].to_list(),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(db: Path, port: int, *extra: str) -> subprocess.Popen:
    """``leaf-live serve`` on loopback in a child process; returns once ``/health`` answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "leaf_live.cli", "serve", "--db", str(db), "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"service exited: {proc.stdout.read().decode()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("service did not start in 60 s")


# A writer holding the store the way ``leaf-live run`` does: the leaf-live writer lock for the whole command
# (taken through :func:`leaf_live.commands.participation.writing`, which keeps the round inputs in the inbox
# as a run does) and one read-write DuckDB connection per step, opened with no wait (a reader holding the file
# when a step opens it fails that open, and is counted). With ``pump`` each step is also what the Dagster
# daemon does for submissions: one evaluation of ``submissions_sensor`` and a real Dagster run of the
# ``leaf_live_store_submission`` job per requested partition (recorded in the database's instance,
# :func:`resources.instance.instance_for`), so the inbox moves into the store WHILE the load goes on; after
# the stop file appears it keeps pumping until nothing waits in the inbox. Prints "holding" once the lock is
# taken and, at the end, one JSON line of counts.
WRITER = r"""
import json, sys, time
from pathlib import Path
from leaf_live.commands.participation import writing
from leaf_live.core import storage
db, stop, pump = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "pump"
n = dict.fromkeys(("steps", "writes", "failed_opens", "ticks", "runs", "runs_during_load", "failed_runs"), 0)
if pump:
    from dagster import Definitions, build_sensor_context
    from assets.participation import SUBMISSIONS, external_submission
    from resources.instance import instance_for
    from resources import LeafLiveDB
    from sensors.participation import pending_submissions, submission_store_job
    from leaf_live.core.settings import get_settings
    # no wait: a step that meets the file held by the service fails, and is counted
    resources = {"db": LeafLiveDB(database=str(db), connect_wait_s=0.0, inbox=get_settings().inbox or "")}
    job = Definitions(
        assets=[external_submission], jobs=[submission_store_job], resources=resources
    ).resolve_job_def(submission_store_job.name)
    instance = instance_for(db)
    done, cursor = set(), None
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
with writing(db):
    print("holding", flush=True)
    while True:
        stopping = stop.exists()
        try:
            con = storage.connect(db)  # a step of the run
        except storage.StorageError as exc:
            n["failed_opens"] += 1
            print(f"open failed: {exc}", file=sys.stderr, flush=True)
        else:
            try:
                con.execute("CREATE TABLE IF NOT EXISTS bench_writer (t TIMESTAMPTZ)")
                for _ in range(5):
                    con.execute("INSERT INTO bench_writer VALUES (now())")
                    n["writes"] += 1
                    time.sleep(0.01)
            finally:
                con.close()
            n["steps"] += 1
        waiting = 0
        if pump:
            ctx = build_sensor_context(instance=instance, cursor=cursor)
            res = pending_submissions(ctx, db=resources["db"])
            n["ticks"] += 1
            cursor = getattr(res, "cursor", None) or cursor
            reqs = [r for r in getattr(res, "run_requests", None) or [] if r.run_key not in done]
            for add in getattr(res, "dynamic_partitions_requests", None) or []:
                instance.add_dynamic_partitions(SUBMISSIONS.name, list(add.partition_keys))
            for r in reqs:  # the daemon runs a run key once
                done.add(r.run_key)
                ok = job.execute_in_process(
                    partition_key=r.partition_key, tags=r.tags, instance=instance, raise_on_error=False,
                    run_config=quiet,
                ).success
                n["runs"] += 1
                n["runs_during_load"] += not stopping
                n["failed_runs"] += not ok
            waiting = len(reqs)
        if stopping and waiting == 0:  # a key whose run failed stays waiting: the counts say so
            break
        if not waiting:
            time.sleep(0.05)
print(json.dumps(n), flush=True)
"""


def hold_store(db: Path, stop: Path, pump: bool = False) -> subprocess.Popen:
    """Start :data:`WRITER` on ``db`` in a child process (stopped by creating ``stop``); returns once it holds
    the writer lock. Raises :class:`RuntimeError` when it does not."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(stop), "pump" if pump else "hold"],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=Path(__file__).resolve().parents[2],  # the project root: its assets/, resources/, sensors/
    )
    if proc.stdout.readline().decode().strip() != "holding":
        proc.kill()
        raise RuntimeError(f"the writer did not take {db}: exit {proc.wait()}")
    return proc


def writer_counts(proc: subprocess.Popen, timeout: float = 600) -> dict:
    """Wait for a :func:`hold_store` writer to finish; its counts (the last JSON line it printed)."""
    out, _ = proc.communicate(timeout=timeout)
    lines = [x for x in out.decode().splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the writer failed: exit {proc.returncode}: {out.decode()[-500:]}")
    return json.loads(lines[-1])
