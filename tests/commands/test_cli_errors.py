"""One-line CLI errors checked before any work starts (issue 12 item 6): each case asserts the exact line, the
exit status, and that no Dagster run was started."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leaf_live.cli import main
from leaf_live.core import settings as settings_mod
from leaf_live.core import storage
from tests.conftest import dagster_home

HOLD = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.readline()"
HOLD_BRIEFLY = (
    "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(1.5); "
    "c.close(); sys.stdin.readline()"
)


class Holder:
    """Another process holding the DuckDB file open for writing (as a running `leaf-live run` step does)."""

    def __init__(self, db: Path, code: str = HOLD) -> None:
        self.argv = [sys.executable, "-c", code, str(db)]
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    @property
    def command(self) -> str:
        text = " ".join(" ".join(self.argv).split())  # /proc/PID/cmdline, whitespace collapsed, cut at 160
        return text if len(text) <= 160 else text[:157] + "..."

    def close(self) -> None:
        self.proc.communicate("\n", timeout=30)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture()
def instance_home(tmp_path_factory):
    with dagster_home(tmp_path_factory) as home:
        yield home


def no_run_started() -> bool:
    from dagster import DagsterInstance

    return len(DagsterInstance.get().get_runs()) == 0


def test_run_db_errors_are_one_line(tmp_path, capsys, snapshot_dir, instance_home):
    snap = ["--snapshot", str(snapshot_dir)]
    rc, out, err = run_cli(capsys, "run", "--db", str(tmp_path), *snap)
    assert (rc, out, err) == (1, "", f"leaf-live run: --db {tmp_path}: is a directory, not a DuckDB file\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() == 0:
        target = Path("/sys") / "leaf_live.duckdb"  # root may write anywhere a normal directory is
        parent = Path("/sys")
    else:
        locked.chmod(0o500)
        target, parent = locked / "leaf_live.duckdb", locked
    rc, out, err = run_cli(capsys, "run", "--db", str(target), *snap)
    assert rc == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"leaf-live run: --db {target}: cannot create a file in {parent} (")
    assert not target.exists() and no_run_started()


def test_a_second_writer_is_told_which_process_holds_the_database(
    tmp_path, capsys, snapshot_dir, instance_home
):
    db = tmp_path / "store.duckdb"
    storage.connect(db).close()
    holder = Holder(db)
    try:
        rc, out, err = run_cli(capsys, "run", "--db", str(db), "--snapshot", str(snapshot_dir))
        assert (rc, out) == (1, "")
        assert (
            err
            == f"leaf-live run: {db} is held by another process, PID {holder.proc.pid} ({holder.command}): "
            "DuckDB allows one writing process at a time; try again when it finishes\n"
        )
        # a reader retries for --wait seconds, then says who writes
        t0 = time.monotonic()
        rc, out, err = run_cli(capsys, "sql", "SELECT 1", "--db", str(db), "--wait", "1")
        assert time.monotonic() - t0 >= 1.0
        assert (rc, out) == (1, "")
        assert (
            err == f"leaf-live sql: {db} is being written by another process, PID {holder.proc.pid} "
            f"({holder.command}); waited 1 s: try again when it finishes\n"
        )
    finally:
        holder.close()
    assert no_run_started()


def test_a_reader_waits_for_a_short_write_and_then_reads(tmp_path, capsys):
    db = tmp_path / "store.duckdb"
    storage.connect(db).close()
    holder = Holder(db, HOLD_BRIEFLY)  # releases the file 1.5 s after it is ready
    try:
        rc, out, err = run_cli(
            capsys, "sql", "SELECT 42 AS answer", "--db", str(db), "--format", "csv", "--wait", "20"
        )
        assert (rc, out, err) == (0, "answer\n42\n", "")
    finally:
        holder.close()


def test_snapshot_errors_never_switch_to_live(tmp_path, capsys, monkeypatch, instance_home):
    db = str(tmp_path / "store.duckdb")
    rc, out, err = run_cli(capsys, "run", "--db", db, "--snapshot", str(tmp_path / "nope"))
    assert (rc, out, err) == (1, "", f"leaf-live run: --snapshot {tmp_path / 'nope'}: not a directory\n")
    monkeypatch.setenv("LEAF_LIVE_SNAPSHOT", str(tmp_path / "gone"))
    monkeypatch.delenv("LEAF_LIVE_TRANSPORT", raising=False)
    rc, out, err = run_cli(capsys, "run", "--db", db)
    assert (rc, out, err) == (
        1,
        "",
        (
            f"leaf-live run: LEAF_LIVE_SNAPSHOT={tmp_path / 'gone'}: snapshot directory does "
            "not exist; set LEAF_LIVE_SNAPSHOT to the recorded data (e.g. ../shared/data) or "
            "use LEAF_LIVE_TRANSPORT=live\n"
        ),
    )
    # neither the working directory nor the checkout has ../shared/data: one line, not a silent live run
    monkeypatch.delenv("LEAF_LIVE_SNAPSHOT")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    fake = tmp_path / "checkout" / settings_mod.DEFAULT_SNAPSHOT
    monkeypatch.setattr(settings_mod, "CHECKOUT_SNAPSHOT", fake)
    rc, out, err = run_cli(capsys, "run", "--db", db)
    assert (rc, out, err) == (
        1,
        "",
        (
            "leaf-live run: no snapshot directory: ../shared/data does not exist from the "
            f"working directory {elsewhere} nor from the checkout {tmp_path / 'checkout'}; "
            "pass --snapshot DIR or set LEAF_LIVE_SNAPSHOT, or set LEAF_LIVE_TRANSPORT=live "
            "to read the live services\n"
        ),
    )
    assert not Path(db).exists() and no_run_started()


def test_from_another_directory_the_default_snapshot_is_the_checkouts(tmp_path, monkeypatch, snapshot_dir):
    # the checkout's default is ../shared/data beside the checkout root (this file's grandparent's parent)
    assert (
        settings_mod.CHECKOUT_SNAPSHOT == Path(__file__).resolve().parents[2] / settings_mod.DEFAULT_SNAPSHOT
    )
    # a checkout whose ../shared/data holds the recorded data (a clone may live anywhere, e.g. a worktree)
    root = tmp_path / "clone" / "leaf_live"
    root.mkdir(parents=True)
    (tmp_path / "clone" / "shared").mkdir()
    (tmp_path / "clone" / "shared" / "data").symlink_to(snapshot_dir, target_is_directory=True)
    monkeypatch.setattr(settings_mod, "CHECKOUT_SNAPSHOT", root / settings_mod.DEFAULT_SNAPSHOT)
    monkeypatch.delenv("LEAF_LIVE_SNAPSHOT", raising=False)
    monkeypatch.delenv("LEAF_LIVE_TRANSPORT", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = settings_mod.get_settings()
    assert s.transport == "snapshot" and not s.transport_set
    assert s.snapshot_dir == root / settings_mod.DEFAULT_SNAPSHOT
    assert s.snapshot_dir.resolve() == Path(snapshot_dir).resolve()


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--start", "2030-01"],
            "--start 2030-01 is after the last release month the calendar sources hold (2026-05)",
        ),
        (
            ["--end", "2009-06"],
            "--end 2009-06 is before the first release month the calendar sources hold (2010-01)",
        ),
        (["--start", "2020-05", "--end", "2020-01"], "--end 2020-01 is before --start 2020-05"),
        (
            ["--backtest-start", "2020-05", "--backtest-end", "2019-01"],
            "--backtest-end 2019-01 is before --backtest-start 2020-05",
        ),
        (
            ["--arima-from", "2021-01", "--arima-to", "2020-12"],
            "--arima-to 2020-12 is before --arima-from 2021-01",
        ),
        (["--start", "2020-5"], "--start '2020-5': expected a month YYYY-MM"),
        (["--start", "2009-12"], "--start 2009-12: release months start at 2010-01"),
        (["--boot-draws", "0"], "--boot-draws 0: expected a positive integer"),
        (
            ["--fit-cutoff", "2019-06"],
            (
                "--fit-cutoff 2019-06 is not before the backtest's first month 2018-01: the beta "
                "fit would see the releases the backtest scores (set --backtest-start after it)"
            ),
        ),
        (
            ["--backtest-start", "2030-01", "--backtest-end", "2030-02"],
            "--backtest-start 2030-01 is after the last release month the calendar sources hold (2026-05)",
        ),
        (
            ["--backtest-start", "2025-12"],
            "the backtest ends (2025-10) before it starts (2025-12): set --backtest-start/--backtest-end",
        ),
    ],
)
def test_run_span_errors_are_one_line(tmp_path, capsys, snapshot_dir, instance_home, argv, line):
    db = tmp_path / "store.duckdb"
    rc, out, err = run_cli(capsys, "run", "--db", str(db), "--snapshot", str(snapshot_dir), *argv)
    assert (rc, out, err) == (1, "", f"leaf-live run: {line}\n")
    assert not db.exists() and no_run_started()


def test_the_installed_command_answers_every_error_with_one_line(tmp_path, snapshot_dir):
    """The same errors from the real ``leaf-live`` executable in its own process (no test harness catching
    anything): exit status 1, nothing on stdout, exactly the one line on stderr, no traceback, no run
    recorded. The processes run side by side to keep the suite fast."""
    exe = Path(sys.executable).with_name("leaf-live")
    assert exe.is_file(), f"{exe}: the console script is missing (pip install -e .)"
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        (Path(__file__).resolve().parents[2] / "dagster_home" / "dagster.yaml").read_text()
    )
    db = tmp_path / "store.duckdb"
    con = storage.connect(db)
    con.execute("CREATE TABLE notes AS SELECT range AS k FROM range(3)")
    con.close()
    held = tmp_path / "held.duckdb"
    storage.connect(held).close()
    if os.geteuid() == 0:
        unwritable, parent = Path("/sys") / "leaf_live.duckdb", Path("/sys")
    else:
        parent = tmp_path / "locked"
        parent.mkdir()
        parent.chmod(0o500)
        unwritable = parent / "leaf_live.duckdb"
    env = {**os.environ, "DAGSTER_HOME": str(home), "LEAF_LIVE_SNAPSHOT": str(snapshot_dir)}
    env.pop("LEAF_LIVE_TRANSPORT", None)
    snap = ["--snapshot", str(snapshot_dir)]
    holder = Holder(held)
    pid, cmd = holder.proc.pid, holder.command
    cases = {  # name: (argv, extra environment, the exact line; a trailing '...' = a prefix)
        "db is a directory": (
            ["run", "--db", str(tmp_path), *snap],
            {},
            f"leaf-live run: --db {tmp_path}: is a directory, not a DuckDB file",
        ),
        "db unwritable": (
            ["run", "--db", str(unwritable), *snap],
            {},
            f"leaf-live run: --db {unwritable}: cannot create a file in {parent} (...",
        ),
        "snapshot flag missing": (
            ["run", "--db", str(db), "--snapshot", str(tmp_path / "nope")],
            {},
            f"leaf-live run: --snapshot {tmp_path / 'nope'}: not a directory",
        ),
        "snapshot setting missing": (
            ["run", "--db", str(db)],
            {"LEAF_LIVE_SNAPSHOT": str(tmp_path / "gone")},
            (
                f"leaf-live run: LEAF_LIVE_SNAPSHOT={tmp_path / 'gone'}: snapshot directory does not "
                "exist; set LEAF_LIVE_SNAPSHOT to the recorded data (e.g. ../shared/data) or use "
                "LEAF_LIVE_TRANSPORT=live"
            ),
        ),
        "start past the last partition": (
            ["run", "--db", str(db), *snap, "--start", "2030-01"],
            {},
            (
                "leaf-live run: --start 2030-01 is after the last release month the calendar "
                "sources hold (2026-05)"
            ),
        ),
        "inverted span": (
            ["run", "--db", str(db), *snap, "--start", "2020-05", "--end", "2020-01"],
            {},
            "leaf-live run: --end 2020-01 is before --start 2020-05",
        ),
        "sql syntax": (
            ["sql", "SELEC 1", "--db", str(db)],
            {},
            'leaf-live sql: Parser Error: syntax error at or near "SELEC"',
        ),
        "sql write refused": (
            ["sql", "DELETE FROM notes", "--db", str(db)],
            {},
            (
                'leaf-live sql: Invalid Input Error: Cannot execute statement of type "DELETE" on database '
                '"store" which is attached in read-only mode!'
            ),
        ),
        "second writer": (
            ["run", "--db", str(held), *snap],
            {},
            (
                f"leaf-live run: {held} is held by another process, PID {pid} ({cmd}): DuckDB allows one "
                "writing process at a time; try again when it finishes"
            ),
        ),
        "reader waits then says so": (
            ["sql", "SELECT 1", "--db", str(held), "--wait", "1"],
            {},
            (
                f"leaf-live sql: {held} is being written by another process, PID {pid} ({cmd}); "
                "waited 1 s: try again when it finishes"
            ),
        ),
    }
    try:
        procs = {
            name: subprocess.Popen(
                [str(exe), *argv],
                env={**env, **extra},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name, (argv, extra, _) in cases.items()
        }
        results = {name: (p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for name, p in procs.items()}
    finally:
        holder.close()
    for name, (rc, out, err) in results.items():
        line = cases[name][2]
        assert "Traceback" not in err, (name, err)
        assert (rc, out, err.count("\n")) == (1, "", 1), (name, rc, out, err)
        if line.endswith("..."):
            assert err.startswith(line[:-3]), (name, err)
        else:
            assert err == line + "\n", (name, err)
    from dagster import DagsterInstance

    assert DagsterInstance.from_config(str(home)).get_runs() == []  # every error came before any work
    assert not unwritable.exists()


# ---------------------------------------------------------------------------------------------
# issue 17: more inputs, one line each, never a traceback
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", [["sql", "SELECT 1"], ["status"], ["scores"], ["rescore"]])
def test_an_empty_db_flag_is_an_error_not_the_default_file(tmp_path, capsys, monkeypatch, cmd):
    monkeypatch.chdir(tmp_path)  # the default data/leaf_live.duckdb would be created here
    rc, out, err = run_cli(capsys, *cmd, "--db", "")
    assert rc == 1 and out == ""
    want = "--db '': empty path; give a DuckDB file (or leave --db out for LEAF_LIVE_DB)"
    assert err == f"leaf-live {cmd[0]}: {want}\n"
    assert not (tmp_path / "data").exists()


def test_a_span_the_surprise_scales_cannot_be_built_from_is_caught_before_the_run(
    tmp_path, capsys, snapshot_dir, instance_home
):
    db = tmp_path / "fresh.duckdb"
    rc, out, err = run_cli(
        capsys, "run", "--db", str(db), "--snapshot", str(snapshot_dir), "--start", "2025-11"
    )
    assert rc == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"leaf-live run: --start 2025-11 --end 2026-05: the surprise scales need the releases of 2010-01 .."
        f" 2025-10, and 190 of those months are neither stored in {db} nor in this run (first 2010-01)"
    )
    assert no_run_started()


def test_an_unexpected_error_is_one_line_with_its_cause(tmp_path, capsys):
    """A CSV cell over Python's csv field limit (128 KB) raised csv.Error through ``submit`` with a
    traceback; every unexpected exception is now one line naming its type and message."""
    db = tmp_path / "s.duckdb"
    storage.connect(db).close()
    big = tmp_path / "big.csv"
    big.write_text(
        "indicator_id,reference_period,issued_at,value,unit\n"
        f"cpi_yoy,2026-01-01,2026-01-10T00:00:00Z,{'1' * 200_000},percent\n"
    )
    rc, out, err = run_cli(capsys, "submit", str(big), "--model", "external/x", "--db", str(db), "--no-score")
    assert rc == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("leaf-live submit: ") and "field larger than field limit (131072)" in err


def test_a_refused_submission_prints_at_most_fifty_rejected_rows(capsys, monkeypatch):
    from leaf_live.cli import SHOWN_REJECTIONS
    from leaf_live.commands import submit as submit_cmd
    from leaf_live.core.submissions import RowProblem, SubmissionError

    problems = [RowProblem(i, "value", f"bad{i}", "not a number") for i in range(1, 5001)]

    def refuse(args):
        raise SubmissionError("many.csv", problems, n_rows=5000)

    monkeypatch.setattr(submit_cmd, "cmd_submit", refuse)
    rc = main(["submit", "many.csv", "--model", "external/x", "--db", "x.duckdb"])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert rc == 1 and lines[0] == "leaf-live submit: many.csv: 5000 of 5000 rows rejected, nothing stored"
    assert SHOWN_REJECTIONS == 50
    assert len(lines) == 52 and lines[-1] == "  ... and 4,950 more rejected rows"
    assert lines[50] == "  row 50 (line 51): value='bad50': not a number"
