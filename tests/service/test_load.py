"""A bounded, smaller run of the load benchmark (benchmarks/submissions.py): 6 concurrent clients x 5
submissions on loopback while a writer holds the DuckDB database; every acknowledged receipt's rows are in
the store exactly once after the drain, the replays are answered with the first receipt, the refused
submissions store nothing."""

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
    with inbox_location(backend, tmp_path / "db.duckdb"):  # LEAF_LIVE_INBOX for the bench, service, drain
        r = bench.run(clients=6, per_client=5, max_seconds=90, workdir=tmp_path)
    assert r["errors"] == []
    assert r["writer_held_db"] and r["writer_writes"] > 0  # the writer wrote while the service took load
    assert r["sent"] == 30 and r["acknowledged"] == 30
    assert r["replays_same_receipt"] == 6 and r["refused_statuses"] == [422]
    assert r["stored_receipts"] == 30 and r["stored_rows"] == 30 and r["exact"]
    assert 0 < r["p50_ms"] <= r["p95_ms"]


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
