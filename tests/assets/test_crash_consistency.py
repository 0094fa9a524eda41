"""Crash consistency of the multi-table event-tasks write (issue 17, point 1): a writer killed with SIGKILL at
random points while replacing ``forecast_tasks`` + ``task_outcomes`` leaves the store equal to one complete
version (before or after a write, never half), and a rerun after the kill equals a clean run.

The writer is a child python process running the step's own write path (``assets.event_tasks
.write_task_tables``) in a loop on a small DuckDB; the parent kills it after a random delay, several times."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl

from assets.event_tasks import write_task_tables
from leaf_live.core import storage

KEYS = ["2025-12-01", "2025-12-02", "2025-12-03"]
ROWS = 4000  # tasks per version: large enough that a kill lands inside the transaction often


def frames(version: int, rows: int = ROWS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tasks and their outcomes of write ``version``: task ids ``v<version>-<i>`` over :data:`KEYS`."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2025, 12, 1, tzinfo=UTC)
    ids = [f"v{version}-{i}" for i in range(rows)]
    keys = [KEYS[i % len(KEYS)] for i in range(rows)]
    cut = [t0 + timedelta(days=i % len(KEYS)) for i in range(rows)]
    tasks = pl.DataFrame(
        {
            "partition_key": keys,
            "task_id": ids,
            "domain": ["weather"] * rows,
            "target_id": [f"t{i}" for i in range(rows)],
            "task_kind": ["series"] * rows,
            "horizon": ["3d"] * rows,
            "horizon_steps": [72] * rows,
            "frequency": ["hour"] * rows,
            "cutoff": cut,
            "target_times": [[c + timedelta(hours=1)] for c in cut],
            "last_value": [float(version)] * rows,
            "bundle": ['{"series": [[0, 1.5]], "meta": {}}'] * rows,
            "bundle_hash": ["ab" * 32] * rows,
            "max_input_available_at": cut,
            "last_value_age_days": None,
            "available_at": cut,
        }
    )
    outcomes = pl.DataFrame(
        {
            "partition_key": keys,
            "task_id": ids,
            "actual": [[1.0, 2.0]] * rows,
            "reference": [None] * rows,
            "change": [None] * rows,
            "label": [None] * rows,
            "outcome": [None] * rows,
            "available_at": [c + timedelta(days=3) for c in cut],
        },
        schema_overrides={
            "reference": pl.Float64,
            "change": pl.Float64,
            "label": pl.Utf8,
            "outcome": pl.Float64,
        },
    )
    return tasks, outcomes


CHILD = textwrap.dedent(
    """
    import sys
    sys.path[:0] = [{root!r}, {tests!r}]
    import leaf_live.event  # registers the tables
    from leaf_live.core import storage
    from assets.event_tasks import write_task_tables
    from test_crash_consistency import KEYS, frames
    versions = [frames(v) for v in (1, 2)]
    con = storage.connect({db!r})
    print("ready", flush=True)
    i = 0
    while True:
        write_task_tables(con, *versions[i % 2], KEYS)
        i += 1
    """
)


def _state(path: Path) -> tuple[list, list]:
    con = storage.connect(path)
    try:
        t = con.execute("SELECT task_id, partition_key, last_value FROM forecast_tasks ORDER BY 1").fetchall()
        o = con.execute(
            "SELECT task_id, partition_key, available_at FROM task_outcomes ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    return t, o


def _versions(rows: list) -> set[str]:
    return {r[0].split("-")[0] for r in rows}


def test_kill_minus_9_mid_write_leaves_one_whole_version_and_rerun_equals_clean(tmp_path):
    import leaf_live.event  # noqa: F401  (registers the tables)

    db = tmp_path / "crash.duckdb"
    con = storage.connect(db)
    write_task_tables(con, *frames(0), KEYS)  # the "before" state
    con.close()
    tests_dir = str(Path(__file__).parent)
    root = str(Path(__file__).parents[2])
    code = CHILD.format(root=root, tests=tests_dir, db=str(db))
    rng = random.Random(17)
    seen = []
    for _ in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            line = child.stdout.readline()
            assert line.strip() == "ready", child.stderr.read()
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
            child.stderr.close()
        tasks, outcomes = _state(db)
        # one whole version in both tables: the same task ids, one version, every key complete
        assert len(tasks) == ROWS and len(outcomes) == ROWS
        assert [r[:2] for r in tasks] == [r[:2] for r in outcomes]
        assert len(_versions(tasks)) == 1
        seen.append(_versions(tasks).pop())
    assert set(seen) <= {"v0", "v1", "v2"}
    # a rerun after the kill equals a clean run into a fresh file
    con = storage.connect(db)
    write_task_tables(con, *frames(3), KEYS)
    con.close()
    clean = tmp_path / "clean.duckdb"
    con = storage.connect(clean)
    write_task_tables(con, *frames(3), KEYS)
    con.close()
    assert _state(db) == _state(clean)


def test_a_store_damaged_by_a_two_transaction_writer_is_repaired_by_the_next_write(tmp_path):
    """The old writer's damage (outcomes without their task on days outside the rerun, a task without its
    outcome) is removed in the write's transaction, so ``tasks_have_one_outcome`` passes afterwards."""
    import leaf_live.event  # noqa: F401

    con = storage.connect(tmp_path / "d.duckdb")
    tasks, outcomes = frames(0, rows=30)
    storage.replace_partition(con, "task_outcomes", outcomes, {"partition_key": KEYS})  # killed before tasks
    storage.replace_partition(  # and one task whose outcome never came
        con, "forecast_tasks", tasks.filter(pl.col("task_id") == "v0-0"), {"partition_key": KEYS}
    )
    storage.replace_partition(
        con, "task_outcomes", outcomes.filter(pl.col("task_id") != "v0-0"), {"partition_key": KEYS}
    )
    t1, o1 = frames(1, rows=6)
    written, repaired = write_task_tables(
        con,
        t1.filter(pl.col("partition_key") == KEYS[0]),
        o1.filter(pl.col("partition_key") == KEYS[0]),
        KEYS[:1],
    )
    assert written == {KEYS[0]: 2} and repaired == 30  # 29 outcomes without a task + 1 task without outcome
    bad = con.execute(
        "SELECT coalesce(t.task_id, o.task_id) FROM forecast_tasks t"
        " FULL JOIN task_outcomes o USING (task_id) WHERE t.task_id IS NULL OR o.task_id IS NULL"
    ).fetchall()
    assert bad == []
    assert con.execute("SELECT count(*) FROM forecast_tasks").fetchone()[0] == 2
    con.close()


def test_a_failing_second_slice_rolls_back_the_first(tmp_path):
    import leaf_live.event  # noqa: F401

    con = storage.connect(tmp_path / "r.duckdb")
    write_task_tables(con, *frames(0, rows=9), KEYS)
    t1, o1 = frames(1, rows=9)
    try:
        storage.replace_partitions(
            con,
            [
                storage.Slice("forecast_tasks", t1, {"partition_key": KEYS}),
                storage.Slice("task_outcomes", o1, {"partition_key": KEYS}),
            ],
            then=["SELECT no_such_column FROM task_outcomes"],
        )
    except Exception as exc:  # the DuckDB binder error of the failing statement
        assert "no_such_column" in str(exc)
    else:
        raise AssertionError("the failing statement did not raise")
    assert _versions(con.execute("SELECT task_id FROM forecast_tasks").fetchall()) == {"v0"}
    assert _versions(con.execute("SELECT task_id FROM task_outcomes").fetchall()) == {"v0"}
    con.close()
