"""``leaf-live status`` on a copy of the session's main run: what is materialized (partitions against the
months the run covered), what is stale (an asset never materialized; a stored model without a score), the next
scheduled releases and the open nowcast windows at a given time, cross-checked against the stored tables."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from leaf_live.cli import main
from leaf_live.core import storage

AT = "2026-05-01T00:00:00Z"


@pytest.fixture(scope="module")
def store(main_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("status")
    return {
        "db": Path(shutil.copy(main_run["db"], base / "store.duckdb")),
        "home": Path(shutil.copytree(main_run["dagster_home"], base / "dagster_home")),
        "dir": base,
    }


@pytest.fixture()
def status(store, monkeypatch, capsys, snapshot_dir):
    monkeypatch.setenv("DAGSTER_HOME", str(store["home"]))
    monkeypatch.setenv("LEAF_LIVE_SNAPSHOT", str(snapshot_dir))

    def run(*argv):
        rc = main(["status", "--db", str(store["db"]), *argv])
        out = capsys.readouterr()
        assert (rc, out.err) == (0, ""), out.err
        return out.out

    return run


def boxes(text: str) -> list[list[list[str]]]:
    """The box-drawn tables of ``text``: each a list of rows of cell texts, the header first (polars' ``---``
    and dtype rows dropped)."""
    tables, cur = [], None
    for line in text.splitlines():
        if line.startswith("│"):
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append([c.strip() for c in line.strip().strip("│").split("┆")])
        elif not line.startswith(("┌", "╞", "├", "└")):
            cur = None
    return [[t[0], *t[3:]] for t in tables]


def section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = next(k for k, x in enumerate(lines) if x.startswith(title))
    end = next(
        (k for k in range(start + 1, len(lines)) if lines[k] and not lines[k].startswith(" ")), len(lines)
    )
    return lines[start:end]


def test_status_reports_materialized_stale_and_next_releases(store, status):
    out = status("--as-of", AT, "--releases", "3")
    assert (
        out.splitlines()[0]
        == f"leaf-live status: {store['db']} (Dagster instance {store['home']}) at 2026-05-01 00:00:00 UTC"
    )
    runs = section(out, "Latest runs")
    assert any("leaf_live_main" in x and "SUCCESS" in x for x in runs[1:]), runs

    con = storage.connect_read_only(store["db"])  # TimeZone UTC, as every stored timestamp
    try:
        first, last = con.execute("SELECT min(partition_key), max(partition_key) FROM releases").fetchall()[0]
        months = (int(last[:4]) - int(first[:4])) * 12 + int(last[5:]) - int(first[5:]) + 1
        at = datetime(2026, 5, 1, tzinfo=UTC)
        cal = pl.from_arrow(con.sql("SELECT release_at, indicator_id FROM release_calendar").to_arrow_table())
        windows = pl.from_arrow(con.sql("SELECT * FROM nowcast_windows").to_arrow_table())
        counts = dict(
            con.execute(
                "SELECT 'releases', count(*) FROM releases UNION ALL "
                "SELECT 'nowcasts', count(*) FROM nowcasts"
            ).fetchall()
        )
    finally:
        con.close()
    assert (first, last) == ("2010-01", "2026-05")  # the run covered every release month of the snapshot: 197

    assets, upcoming, open_windows = boxes(out)
    head, rows = assets[0], {r[0]: dict(zip(assets[0], r)) for r in assets[1:]}
    assert head == ["asset", "group", "partitions", "last_materialized", "run", "rows"]
    for monthly in ("release_calendar", "releases", "nowcast_windows", "surprise_events"):
        have, exist = rows[monthly]["partitions"].split(" / ")
        assert int(have) == months == 197 and int(exist) >= months, (monthly, rows[monthly])
    assert int(rows["releases"]["rows"]) == counts["releases"]
    assert (
        int(rows["recorded_nowcasts"]["rows"]) == counts["nowcasts"]
    )  # rows of the (shared) table it writes
    assert rows["livemacro_scores"]["partitions"] == "-" and rows["livemacro_scores"][
        "last_materialized"
    ].endswith("UTC")
    assert rows["llm_nowcasts"]["last_materialized"] == "-"  # the hourly LLM job never ran offline

    stale = section(out, "Stale")
    assert "  llm_nowcasts: never materialized" in stale
    assert not [x for x in stale if "before its upstream" in x], stale  # one fresh run: nothing out of date

    # the next three scheduled releases after AT: (release_at, indicator) pairs of the stored calendar
    nxt = cal.filter(pl.col("release_at") > at).unique().sort(["release_at", "indicator_id"]).head(3)
    assert upcoming[0] == ["release_at", "indicator_id", "period", "consensus", "sources"]
    assert [(r[0], r[1]) for r in upcoming[1:]] == [(f"{t:%Y-%m-%d %H:%M:%S} UTC", i) for t, i in nxt.rows()]
    assert upcoming[1][:3] == [
        "2026-05-01 14:00:00 UTC",
        "ism_manufacturing",
        "2026-04",
    ]  # ISM: 10:00 ET, 1st day
    # the windows open at AT: opened at or before it, closing after it
    want = windows.filter((pl.col("opens_at") <= at) & (pl.col("closes_at") > at))
    assert f"Nowcast windows open at 2026-05-01 00:00 UTC: {want.height}" in out and want.height > 0
    assert sorted((r[0], r[1]) for r in open_windows[1:]) == sorted(
        (i, f"{p:%Y-%m-%d}") for i, p in want.select("indicator_id", "reference_period").rows()
    )


def test_a_model_stored_without_scores_is_stale(store, status, capsys):
    sub = store["dir"] / "late.csv"
    sub.write_text(
        "indicator_id,reference_period,issued_at,value,unit\n"
        "cpi,2026-03-01,2026-04-01T00:00:00Z,2.7,percent\n"
    )
    assert main(["submit", str(sub), "--model", "external/late", "--db", str(store["db"]), "--no-score"]) == 0
    capsys.readouterr()
    stale = section(status("--as-of", AT), "Stale")
    assert (
        "  model without a score: external/late (nowcasts: not in livemacro_scores): run `leaf-live rescore`"
        in stale
    )


def test_after_the_last_stored_release_it_says_so(status):
    out = status("--as-of", "2027-01-01T00:00:00Z")
    assert "  none stored (the stored calendar ends " in out
    assert "Nowcast windows open at 2027-01-01 00:00 UTC: 0" in out


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--as-of", "2026-05-01"], "--as-of '2026-05-01': "),
        (["--releases", "-1"], "--releases -1: expected a count >= 0"),
        (["--snapshot", "/nonexistent/snap"], "--snapshot /nonexistent/snap: not a directory"),
    ],
)
def test_bad_flags_are_one_line(store, capsys, argv, line):
    assert main(["status", "--db", str(store["db"]), *argv]) == 1
    got = capsys.readouterr()
    assert got.out == "" and got.err.startswith(f"leaf-live status: {line}") and got.err.count("\n") == 1
