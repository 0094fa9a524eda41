"""One writer, whatever the spelling (issue 17): the writer lock and DuckDB's connection are taken on the
database's real path, so a symlink, a relative path, ``./x/../db`` and the absolute path are one database with
one lock; a connection whose set-up failed is closed; the wait for another process's lock is bounded and
ends in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from datetime import UTC, date, datetime

import duckdb
import polars as pl
import pytest

from leaf_live.core import storage
from resources import LeafLiveDB


def _spellings(tmp_path, monkeypatch) -> tuple:
    """The same file as an absolute path, a symlink, a path through ``..`` and a relative path."""
    real = tmp_path / "data" / "leaf.duckdb"
    real.parent.mkdir()
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    dotted = tmp_path / "sub" / ".." / "data" / "." / "leaf.duckdb"
    monkeypatch.chdir(tmp_path / "sub")
    relative = os.path.join("..", "data", "leaf.duckdb")
    return real, link, dotted, relative


def test_real_path_is_one_spelling(tmp_path, monkeypatch):
    real, *others = _spellings(tmp_path, monkeypatch)
    assert {storage.real_path(p) for p in (real, *others)} == {real.resolve()}
    with pytest.raises(storage.StorageError, match="database path is empty"):
        storage.real_path("")


def test_writer_lock_is_one_lock_for_every_spelling(tmp_path, monkeypatch):
    real, link, dotted, relative = _spellings(tmp_path, monkeypatch)
    for first in (real, link, dotted, relative):
        with storage.writer_lock(first):
            for second in (real, link, dotted, relative):
                with pytest.raises(storage.DatabaseLockedError, match=rf"PID {os.getpid()} \("):
                    with storage.writer_lock(second):
                        pass
    # one lock file, beside the real file; none beside the symlink
    assert (real.parent / "leaf.duckdb.lock").exists() and not (tmp_path / "link.duckdb.lock").exists()


def test_two_spellings_share_one_database_in_one_process(tmp_path, monkeypatch):
    """Two connections through two spellings are one DuckDB database (the process's cache is keyed by the
    real path): a row written through the symlink is read through the relative path at once, and the data
    of both lands in the one file."""
    real, link, _, relative = _spellings(tmp_path, monkeypatch)
    a = storage.connect(link)
    b = storage.connect(relative)
    try:
        rows = storage.conform(
            "surprise_scales",
            pl.DataFrame(
                {
                    "indicator_id": ["cpi_yoy"],
                    "n_releases": [10],
                    "mean_surprise": [0.0],
                    "sigma": [0.25],
                    "window_start": [date(2010, 1, 1)],
                    "window_end": [date(2025, 10, 31)],
                    "available_at": [datetime(2025, 11, 1, tzinfo=UTC)],
                }
            ),
        )
        storage.replace_partition(a, "surprise_scales", rows)
        assert b.execute("SELECT sigma FROM surprise_scales").fetchall() == [(0.25,)]
    finally:
        a.close()
        b.close()
    con = duckdb.connect(str(real), read_only=True)
    assert con.execute("SELECT count(*) FROM surprise_scales").fetchone()[0] == 1
    con.close()


def test_a_failed_connection_is_closed_so_the_process_can_reopen(tmp_path):
    db = tmp_path / "old.duckdb"
    storage.connect(db).close()
    con = duckdb.connect(str(db))
    con.execute(
        f"UPDATE {storage.META_TABLE} SET schema_version = 'aaaaaaaaaaaa' WHERE table_name = 'releases'"
    )
    con.close()
    for _ in range(3):
        with pytest.raises(storage.SchemaVersionError):
            storage.connect(db)
    # a read-only connection would raise "different configuration" if a read-write one were still open
    duckdb.connect(str(db), read_only=True).close()
    # the resource closes its connection when the step's block raises
    res = LeafLiveDB(database=str(tmp_path / "fresh.duckdb"))
    with pytest.raises(RuntimeError, match="step failed"):
        with res.get_connection() as c:
            c.execute("SELECT 1")
            raise RuntimeError("step failed")
    duckdb.connect(str(tmp_path / "fresh.duckdb"), read_only=True).close()


HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    con.close()
    """
)


def test_the_wait_for_another_process_is_bounded_and_one_line(tmp_path, monkeypatch):
    real, link, _, _ = _spellings(tmp_path, monkeypatch)
    storage.connect(real).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(link), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        t0 = time.monotonic()
        with pytest.raises(storage.DatabaseLockedError) as err:
            storage.connect(real, wait_s=0.6)
        waited = time.monotonic() - t0
        msg = str(err.value)
        assert 0.5 <= waited < 3.0, waited
        assert "\n" not in msg and f"PID {holder.pid}" in msg and "waited 0.6 s" in msg and str(real) in msg
        assert err.value.pid == holder.pid
        # the resource (what every step uses) waits its bounded time and fails the same way
        t0 = time.monotonic()
        with pytest.raises(storage.DatabaseLockedError, match=rf"PID {holder.pid} .*waited 0.4 s"):
            with LeafLiveDB(database=str(link), connect_wait_s=0.4).get_connection():
                pass
        assert time.monotonic() - t0 < 3.0
        # and a read-only reader too
        with pytest.raises(storage.DatabaseLockedError, match="is being written by another process"):
            storage.connect_read_only(real, wait_s=0.2)
    finally:
        holder.kill()
        holder.wait()
    # once the holder is gone, a waiting writer gets the file
    storage.connect(link, wait_s=5).close()


def test_a_waiting_writer_gets_the_file_when_the_holder_finishes(tmp_path):
    db = tmp_path / "w.duckdb"
    storage.connect(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), "1.0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        con = storage.connect(db, wait_s=20)  # retried with backoff until the holder closes
        con.close()
    finally:
        holder.kill()
        holder.wait()


def test_a_slow_sql_reader_releases_the_file_before_it_prints(tmp_path, monkeypatch):
    """``leaf-live sql ... | less``: the result is in memory and the read-only connection closed before the
    first byte is written, so a writer can open the file while the reader's output waits."""
    from leaf_live.cli import main

    db = tmp_path / "r.duckdb"
    storage.connect(db).close()
    opened = []

    class SlowPager:
        def write(self, text: str) -> int:
            con = storage.connect(db)  # read-write: refused if the reader still held the file
            con.close()
            opened.append(len(text))
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", SlowPager())
    assert main(["sql", "SELECT 42 AS answer", "--db", str(db)]) == 0
    assert opened and sum(opened) > 0


def test_a_replace_that_would_remove_rows_it_was_not_asked_for_is_refused(tmp_path):
    """Span-exact (issue 17): a slice marked ``refuse_removal`` fails before any write when its partitions
    hold stored rows the new data lacks; the same rows again, or more, are fine."""
    from tests.core.test_storage import _returns

    con = storage.connect(tmp_path / "s.duckdb")
    try:
        both = pl.concat([_returns("2024-03", 3), _returns("2024-04", 2)])
        storage.replace_partitions(
            con, [storage.Slice("announcement_returns", both, {"partition_key": ["2024-03", "2024-04"]})]
        )
        narrower = _returns("2024-03", 1)  # asked for one day of March, replacing both months
        sl = storage.Slice(
            "announcement_returns", narrower, {"partition_key": ["2024-03", "2024-04"]}, refuse_removal=True
        )
        with pytest.raises(storage.WiderReplaceError) as err:
            storage.replace_partitions(con, [sl])
        msg = str(err.value)
        assert (
            "would remove 4 stored rows in 2 partitions 2024-03 .. 2024-04" in msg
            and "nothing written" in msg
        )
        assert con.execute("SELECT count(*) FROM announcement_returns").fetchone()[0] == 5
        # the same rows (a plain rerun) pass, and without the guard the narrower replace removes
        same = storage.Slice(
            "announcement_returns", both, {"partition_key": ["2024-03", "2024-04"]}, refuse_removal=True
        )
        assert storage.replace_partitions(con, [same]) == [5]
        storage.replace_partitions(
            con, [storage.Slice("announcement_returns", narrower, {"partition_key": ["2024-03"]})]
        )
        assert con.execute("SELECT count(*) FROM announcement_returns").fetchone()[0] == 3
    finally:
        con.close()


def test_an_unanswered_partition_keeps_its_stored_rows(tmp_path):
    from tests.core.test_storage import _returns

    con = storage.connect(tmp_path / "k.duckdb")
    try:
        both = pl.concat([_returns("2024-03", 3), _returns("2024-04", 2)])
        keys = {"partition_key": ["2024-03", "2024-04"]}
        storage.replace_partitions(con, [storage.Slice("announcement_returns", both, keys)])
        # the source answers only March (one row): April keeps its two stored rows
        sl = storage.Slice("announcement_returns", _returns("2024-03", 1), keys, keep_unanswered=True)
        assert storage.replace_partitions(con, [sl]) == [1]
        got = dict(
            con.execute("SELECT partition_key, count(*) FROM announcement_returns GROUP BY 1").fetchall()
        )
        assert got == {"2024-03": 1, "2024-04": 2}
        # an empty answer replaces nothing
        empty = storage.Slice("announcement_returns", _returns("2024-03", 0), keys, keep_unanswered=True)
        assert storage.replace_partitions(con, [empty]) == [0]
        assert con.execute("SELECT count(*) FROM announcement_returns").fetchone()[0] == 3
    finally:
        con.close()


WRITER = textwrap.dedent(
    """
    import sys, time
    from leaf_live.core import storage
    with storage.writer_lock(sys.argv[1]):
        storage.record_writer_run("run-4f2a")
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def test_readers_are_told_a_run_is_in_progress_and_keep_working(tmp_path, monkeypatch, capsys):
    """``leaf-live sql`` and ``leaf-live scores`` while another process holds the writer lock (taken through
    a symlink, read through the real path): one stderr line naming the run's PID, start time and Dagster
    run, then exactly what they print without it. A lock left by a writer killed with -9 tells nothing."""
    from leaf_live.cli import main

    real, link, _, _ = _spellings(tmp_path, monkeypatch)
    storage.connect(real).close()
    commands = [
        ["sql", "SELECT 6 * 7 AS answer", "--db", str(real)],
        ["scores", "--db", str(real)],
        ["scores", "--track", "event", "--db", str(real)],
    ]

    def run_all() -> list[tuple[int, str, str]]:
        out = []
        for argv in commands:
            rc = main(argv)
            got = capsys.readouterr()
            out.append((rc, got.out, got.err))
        return out

    alone = run_all()
    assert alone[0][0] == 0 and "42" in alone[0][1] and alone[0][2] == ""
    assert storage.writer_holder(real) is None
    before = datetime.now(UTC).replace(microsecond=0)
    holder = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(link), "60"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        rec = storage.writer_holder(link)
        assert rec is not None and rec.pid == holder.pid and rec.run_id == "run-4f2a"
        started = datetime.strptime(rec.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert before <= started <= datetime.now(UTC)
        during = run_all()
        warning = (
            f"leaf-live: a run is in progress on {real} (PID {holder.pid} ({rec.command}), started"
            f" {rec.started_at}, Dagster run run-4f2a): tables may mix its new results with the previous"
            " run's until it finishes; reading anyway\n"
        )
        for (rc0, out0, err0), (rc, out, err) in zip(alone, during):
            assert (rc, out) == (rc0, out0) and err == warning + err0, err
        # killed with -9: the lock file keeps the record, but its process is gone
        holder.kill()
        holder.wait()
        assert (real.parent / "leaf.duckdb.lock").read_text().startswith(f"{holder.pid}\n")
        assert storage.writer_holder(real) is None and run_all() == alone
    finally:
        holder.kill()
        holder.wait()
