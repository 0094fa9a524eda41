"""A bounded, smaller run of the load benchmark (benchmarks/submissions.py): 10 concurrent clients x 10
submissions (5 clients on the macro round, 5 on the event round) on loopback, the service started while a
writer holds the DuckDB database the way ``leaf-live run`` does, and the inbox moved into the store by the
submissions sensor and real Dagster runs of the asset in that writer while the load goes on: every
acknowledged receipt's rows are in the store exactly once, the replays are answered with the first receipt,
the refused submissions store nothing, and the writer never failed to open the database."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from pg_inbox import inbox_location

_path = Path(__file__).resolve().parents[2] / "benchmarks" / "submissions.py"
_spec = importlib.util.spec_from_file_location("bench_submissions", _path)
bench = sys.modules.setdefault("bench_submissions", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_load_while_a_writer_holds_the_database(tmp_path, backend):
    with inbox_location(backend, tmp_path / "db.duckdb"):  # LEAF_LIVE_INBOX for the bench, service, writer
        r = bench.run(clients=10, per_client=10, max_seconds=90, workdir=tmp_path)
    assert r["errors"] == []
    assert r["tracks"] == ["event", "macro"] and r["boards"] == ["live"]
    c = r["writer_counts"]
    # the writer held the database through the load, opened it step after step, and never met it held
    assert r["writer_held_db"] and c["steps"] > 0 and r["writer_writes"] == c["writes"] > 0
    assert c["failed_opens"] == 0 and c["failed_runs"] == 0
    # the sensor and the asset moved submissions while the load went on, in batches (not one run each)
    assert c["runs_during_load"] >= 1 and 1 <= c["runs"] < 100
    assert r["sent"] == 100 and r["acknowledged"] == 100
    assert r["replays_same_receipt"] == 10 and r["refused_statuses"] == [422]
    assert r["stored_receipts"] == 100 and r["stored_rows"] == 100 and r["exact"]
    assert 0 < r["p50_ms"] <= r["p95_ms"]
    assert r["service_cpu_s"] > 0 and r["client_cpu_s"] > 0 and len(r["load_avg_after"]) == 3


def test_the_service_sees_a_writer_without_taking_its_lock(tmp_path):
    """The service skips its read-only refresh while a leaf-live writer holds the database (a read-only open
    between a run's steps would fail the run's next step); the probe only reads the lock file."""
    from leaf_live.core import storage
    from leaf_live.service.app import writer_active

    db = tmp_path / "db.duckdb"
    assert not writer_active(db)
    with storage.writer_lock(db):
        assert writer_active(db)
        assert writer_active(db)  # probing twice does not take or break the lock
    assert not writer_active(db)
