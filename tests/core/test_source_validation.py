"""Sources validated before any write (issue 17): the one row validation of every CSV source
(``leaf_live.core.sources.csv_rows``: short rows, empty required values, documented missing-value markers),
the stored-facts guard (``check_facts_kept``: a reload never drops or rewrites a stored first release without
a revision marker) and the keep-unanswered replace (an empty answer never replaces stored rows), each
through the product's own source and asset paths: a truncated calendar file and an empty day."""

from __future__ import annotations

import gzip
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from leaf_live.core import storage
from leaf_live.core.sources import (
    SourceError,
    _hours_expected,
    check_facts_kept,
    csv_rows,
    incomplete_days,
    parse_number,
)
from leaf_live.macro.sources.fed_nowcasts import parse_fred_stleni_csv
from leaf_live.macro.sources.fred import parse_fredgraph_csv
from leaf_live.macro.sources.fred_md import parse_vintage_csv

LIVE_CAL = "macro/livemacroeval/field_releases_live.csv"


# ---------------------------------------------------------------------------------------------
# the row validation
# ---------------------------------------------------------------------------------------------


def test_a_row_with_fewer_fields_than_its_header_names_file_row_and_field():
    text = "id,when,A,C\nx,2026-01-01,1.5,1.4\ny,2026-02-01\n"
    rows = csv_rows(text, file="cal.csv", required=("id", "when", "A", "C"))
    assert next(rows)[0] == 1
    with pytest.raises(SourceError) as err:
        next(rows)
    e = err.value
    assert (e.file, e.row, e.field) == ("cal.csv", 2, "A")
    assert str(e).startswith("file cal.csv, row 2 (line 3), field A=None: row has 2 of the header's 4 fields")
    assert "A, C missing" in str(e)


def test_an_empty_value_the_source_never_leaves_empty_is_refused():
    text = "id,when,A\nx,2026-01-01,1\n,2026-02-01,2\n"
    with pytest.raises(SourceError, match=r"file f.csv, row 2 \(line 3\), field id='': empty value"):
        list(csv_rows(text, file="f.csv", required=("id",), non_empty=("id", "when")))
    # the same file is fine where the field may be empty
    assert len(list(csv_rows(text, file="f.csv", required=("id",)))) == 2


def test_missing_value_markers_are_null_and_counted_never_a_refusal():
    text = "DATE,V,W\n2026-01-01,.,1\n2026-04-01, . ,.\n2026-07-01,2.5,\n"
    missing: dict[str, int] = {}
    rows = list(csv_rows(text, file="f.csv", required=("DATE", "V"), missing=missing))
    assert [r["V"] for _, r in rows] == ["", "", "2.5"] and missing == {"V": 2, "W": 1}
    assert parse_number(".", file="f", row=1, field="V") is None
    with pytest.raises(SourceError, match="value is required but the missing-value marker '.'"):
        parse_number(".", file="f", row=1, field="V", required=True)
    with pytest.raises(SourceError, match="not a number"):
        parse_number("..", file="f", row=1, field="V")


def test_the_st_louis_fed_and_fred_md_parsers_take_a_dot_as_missing_and_count_it():
    text = "observation_date,STLENI\n2025-01-01,2.1\n2025-04-01,.\n2025-07-01,1.8\n2025-10-01, . \n"
    missing: dict[str, int] = {}
    f = parse_fred_stleni_csv(
        text, file="STLENI.csv", as_of=datetime(2025, 8, 1, tzinfo=UTC), missing=missing
    )
    assert f.height == 2 and sorted(f["value"].to_list()) == [1.8, 2.1] and missing == {"STLENI": 2}
    # an empty cell is a null too, but no marker; a date is never missing
    md = "sasdate,AAA,BBB,CCC\nTransform:,5,2,1\n1/1/2000,1.5,.,\n2/1/2000,.,2,.\n3/1/2000,.,.,4\n"
    missing = {}
    levels, tcodes = parse_vintage_csv(md, "md", file="md.csv", missing=missing)
    assert levels["AAA"].to_list() == [1.5, None, None] and levels["BBB"].to_list() == [None, 2.0, None]
    assert levels["CCC"].to_list() == [None, None, 4.0]
    assert tcodes == {"AAA": 5, "BBB": 2, "CCC": 1}
    assert missing == {"AAA": 2, "BBB": 2, "CCC": 1} and sum(missing.values()) == md.count(",.")
    missing = {}
    parse_vintage_csv(md, "md", file="md.csv", columns=["BBB"], missing=missing)
    assert missing == {"BBB": 2}  # only the series kept are counted
    graph = "observation_date,PAYEMS\n2025-08-01,.\n2025-09-01,159659\n2025-10-01,\n2025-11-01,.\n"
    missing = {}
    frame = parse_fredgraph_csv(graph, "PAYEMS.csv", "PAYEMS", missing=missing)
    assert frame["value"].to_list() == [None, 159659.0, None, None] and missing == {"PAYEMS": 2}
    with pytest.raises(SourceError, match=r"row 1 \(line 2\), field observation_date='': not a date"):
        parse_fredgraph_csv("observation_date,PAYEMS\n.,1\n", "PAYEMS.csv", "PAYEMS")


def _snapshot_with(snapshot: Path, root: Path, replaced: dict[str, str]) -> Path:
    """A snapshot directory of links to ``snapshot`` in which the files ``replaced`` (relative path ->
    text, gzipped when the name ends in .gz) are real files."""

    def link(src: Path, dst: Path, rel: Path) -> None:
        dst.mkdir(parents=True, exist_ok=True)
        inside = {
            Path(k).parts[len(rel.parts)] for k in replaced if Path(k).parts[: len(rel.parts)] == rel.parts
        }
        for entry in src.iterdir():
            if entry.name in inside and entry.is_dir():
                link(entry, dst / entry.name, rel / entry.name)
            elif entry.name not in inside:
                (dst / entry.name).symlink_to(entry)
        for k, text in replaced.items():
            if Path(k).parent == rel:
                data = text.encode()
                (dst / Path(k).name).write_bytes(gzip.compress(data) if k.endswith(".gz") else data)

    link(snapshot, root, Path())
    return root


def test_dot_cells_of_a_fred_md_vintage_are_counted_in_the_assets_metadata(tmp_path, snapshot_dir):
    from assets.macro_nowcasts import series_vintages
    from leaf_live.macro import series_vintages as SV
    from leaf_live.macro.sources import fred_md
    from resources import default_resources

    rel = "macro/fred_md/vintage_2025-12_approx_Nakamoto911_mrs/fred_md.csv.gz"
    text = gzip.decompress((snapshot_dir / rel).read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cpi, houst = header.index("CPIAUCSL"), header.index("HOUST")
    assert "CPIAUCSL" in SV.catalog_columns("md") and "HOUST" in SV.catalog_columns("md")
    changed, dots = 0, []
    for i in range(len(lines) - 40, len(lines) - 30):  # ten rows of the recent history
        cells = lines[i].rstrip("\n").split(",")
        for j in (cpi, houst) if i % 2 else (cpi,):
            if cells[j]:
                cells[j], changed = ".", changed + 1
                dots.append((cells[0], header[j]))
        lines[i] = ",".join(cells) + "\n"
    assert changed == 15
    snap = _snapshot_with(snapshot_dir, tmp_path / "snap", {rel: "".join(lines)})
    fred_md.clear_cache()
    db = tmp_path / "v.duckdb"
    res = materialize(
        [series_vintages],
        resources=default_resources(db=db, snapshot=snap),
        instance=DagsterInstance.ephemeral(),
        partition_key="2025-12",
    )
    assert res.success  # never a refusal of the file
    meta = res.asset_materializations_for_node("series_vintages")[0].metadata
    assert meta["missing_values"].value == 15
    assert meta["missing_values_by_vintage"].value == "{'fred-md 2025-12': 15}"
    stored = _stored(db, "series_vintages", "source = 'fred-md' AND vintage = '2025-12'")
    # the dotted cells are not stored; the same cells are stored from the unmodified file
    original = fred_md.parse_vintage_csv(
        text,
        "md",
        file=rel,
        transforms_text=(
            snapshot_dir / "macro/fred_md/vintage_2025-12_approx_Nakamoto911_mrs/fred_md_transforms.csv"
        ).read_text(),
    )[0]
    n_orig = sum(original[c].is_not_null().sum() for c in SV.catalog_columns("md") if c in original.columns)
    assert stored.height == n_orig - 15
    fred_md.clear_cache()


# ---------------------------------------------------------------------------------------------
# the stored-facts guard
# ---------------------------------------------------------------------------------------------


def _cal(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema=[
            "source",
            "indicator_id",
            "period_label",
            "actual",
            "marked_revision",
            "source_file",
            "source_row",
        ],
        orient="row",
    )


KEY = ("source", "indicator_id", "period_label")


def test_a_stored_first_release_may_not_vanish_or_change_without_a_revision_marker():
    stored = _cal(
        [
            ("live", "cpi", "2026-01", 2.9, False, "cal.csv", 7),
            ("live", "ppi", "2026-01", None, False, "cal.csv", 8),
        ]
    )
    same = _cal([("live", "cpi", "2026-01", 2.9 + 1e-12, False, "new.csv", 3)])
    assert check_facts_kept(stored, same, key=KEY, value="actual", marker="marked_revision") == 1
    # removed: named by the stored row's file and row
    with pytest.raises(SourceError) as err:
        check_facts_kept(
            stored, _cal([]), key=KEY, value="actual", marker="marked_revision", what="stored release"
        )
    assert (err.value.file, err.value.row, err.value.field, err.value.value) == ("cal.csv", 7, "actual", 2.9)
    assert (
        "stored release source=live, indicator_id=cpi, period_label=2026-01 (actual=2.9) is missing"
        in str(err.value)
    )
    # changed: named by the incoming row
    changed = _cal([("live", "cpi", "2026-01", 3.1, False, "new.csv", 3)])
    with pytest.raises(SourceError) as err:
        check_facts_kept(stored, changed, key=KEY, value="actual", marker="marked_revision")
    assert (err.value.file, err.value.row, err.value.value) == ("new.csv", 3, 3.1) and "was 2.9" in str(
        err.value
    )
    # a revision marker allows the change; an unreleased (NULL) stored row is no fact
    marked = _cal([("live", "cpi", "2026-01", 3.1, True, "new.csv", 3)])
    assert check_facts_kept(stored, marked, key=KEY, value="actual", marker="marked_revision") == 1


# ---------------------------------------------------------------------------------------------
# through the product: a truncated calendar file, an empty day
# ---------------------------------------------------------------------------------------------


def _calendar_run(snapshot: Path, db: Path, calendar_file: Path, months: tuple[str, str]):
    from assets.macro_releases import indicator_catalog, release_calendar
    from resources import LeafLiveDB
    from resources.sources import ReleaseCalendarSnapshotResource

    return materialize(
        [indicator_catalog, release_calendar],
        selection=[release_calendar.key],
        resources={
            "db": LeafLiveDB(database=str(db)),
            "calendar": ReleaseCalendarSnapshotResource(
                snapshot_dir=str(snapshot),
                calendar_sources=["livemacroeval_live"],
                calendar_file=str(calendar_file),
            ),
        },
        instance=DagsterInstance.ephemeral(),
        tags={
            "dagster/asset_partition_range_start": months[0],
            "dagster/asset_partition_range_end": months[1],
        },
        raise_on_error=False,
    )


def _error(result) -> str:
    for ev in result.all_events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            while err.cause is not None:
                err = err.cause
            return err.message.strip()
    return ""


def _stored(db: Path, table: str, where: str = "") -> pl.DataFrame:
    con = storage.connect_read_only(db)
    try:
        return storage.read_table(con, table, where).sort(storage.get_table(table).column_names[:4])
    finally:
        con.close()


def test_a_truncated_calendar_file_fails_naming_file_row_field_and_keeps_the_stored_releases(
    tmp_path, snapshot_dir
):
    full = (snapshot_dir / LIVE_CAL).read_text()  # the recorded data is required: missing fails
    lines = full.splitlines(keepends=True)
    cal = tmp_path / "field_releases_live.csv"
    cal.write_text(full)
    db = tmp_path / "cal.duckdb"
    assert _calendar_run(snapshot_dir, db, cal, ("2026-02", "2026-03")).success
    before = _stored(db, "release_calendar")
    assert before.height > 20 and before["actual"].is_not_null().sum() > 19

    # 1. the download stopped inside a row of 2026-03: its trailing fields are gone
    cut = next(i for i, ln in enumerate(lines) if ln.split(",")[1].startswith("2026-03"))
    cal.write_text("".join(lines[: cut + 1]).rstrip("\n").rsplit(",", 3)[0] + "\n")
    result = _calendar_run(snapshot_dir, db, cal, ("2026-02", "2026-03"))
    msg = _error(result)
    assert not result.success
    assert (
        f"file {cal}, row {cut} (line {cut + 1}), field A=None: row has 4 of the header's 7 fields" in msg
    ), msg
    assert "truncated?" in msg
    assert _stored(db, "release_calendar").equals(before)

    # 2. the file ends cleanly after three 2026-03 rows: the month's other stored releases would be removed
    march = [i for i, ln in enumerate(lines) if ln.split(",")[1].startswith("2026-03")]
    assert len(march) > 5
    cal.write_text("".join(lines[: march[3]]))
    result = _calendar_run(snapshot_dir, db, cal, ("2026-02", "2026-03"))
    msg = _error(result)
    assert not result.success and "is missing from the new data and no marked_revision" in msg, msg
    assert f"file {cal}, row " in msg and "field actual=" in msg
    assert _stored(db, "release_calendar").equals(before)

    # 3. a month the calendar answers nothing for keeps its rows; the answered month is replaced
    months = {ln.split(",")[1][:7] for ln in lines[1:]}
    assert "2026-04" in months
    keep = [ln for ln in lines[1:] if not ln.split(",")[1].startswith("2026-03")]
    cal.write_text(lines[0] + "".join(keep))
    assert _calendar_run(snapshot_dir, db, cal, ("2026-02", "2026-03")).success
    assert _stored(db, "release_calendar").equals(before)


def _weather_snapshot(snapshot: Path, root: Path, drop_local_days: tuple[str, ...] = ()) -> Path:
    src = snapshot / "leaf/weather/openmeteo_nyc_hourly_2023-10_2026-08.csv.gz"
    dst = root / "leaf/weather/openmeteo_nyc_hourly_2023-10_2026-08.csv.gz"
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = gzip.decompress(src.read_bytes()).decode()
    if drop_local_days:
        text = "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith(drop_local_days))
    dst.write_bytes(gzip.compress(text.encode()))
    return root


def _weather_run(db: Path, snapshot: Path, days: tuple[str, str]):
    from assets.event_data import leaf_targets, weather_hourly
    from resources import LeafLiveDB
    from resources.sources import WeatherSnapshotResource

    return materialize(
        [leaf_targets, weather_hourly],
        selection=[weather_hourly.key],
        resources={
            "db": LeafLiveDB(database=str(db)),
            "weather": WeatherSnapshotResource(snapshot_dir=str(snapshot)),
        },
        instance=DagsterInstance.ephemeral(),
        tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[1]},
        raise_on_error=False,
    )


def test_an_empty_day_never_replaces_the_stored_day(tmp_path, snapshot_dir):
    full = _weather_snapshot(snapshot_dir, tmp_path / "full")
    db = tmp_path / "w.duckdb"
    assert _weather_run(db, full, ("2025-12-10", "2025-12-11")).success
    before = _stored(db, "weather_hourly")
    per_day = dict(before.group_by("partition_key").len().iter_rows())
    assert per_day == {"2025-12-10": 24, "2025-12-11": 24}

    # the source now has nothing for 2025-12-10 (UTC; New York local days 12-09 and 12-10 removed) and
    # answers 2025-12-11 only from 05:00 UTC (00:00 local) on: the empty day keeps its 24 stored rows, the
    # partial day is not stored either (19 of 24 hours) and the run fails naming it
    empty = _weather_snapshot(snapshot_dir, tmp_path / "empty", drop_local_days=("2025-12-09", "2025-12-10"))
    result = _weather_run(db, empty, ("2025-12-10", "2025-12-11"))
    assert not result.success
    assert "weather_hourly 2025-12-11: 19 of 24 hourly rows (new_york 19 of 24)" in _error(result)
    assert _stored(db, "weather_hourly").equals(before)
    assert result.asset_materializations_for_node("weather_hourly") == []
    shutil.rmtree(tmp_path / "empty")


def test_a_partial_day_is_not_stored_and_not_materialized_and_whole_days_are(tmp_path, snapshot_dir):
    # five local hours of 2025-12-10 (10:00-14:00 New York = 15:00-19:00 UTC) are missing at the source
    hours = tuple(f"2025-12-10T{h:02d}:00" for h in range(10, 15))
    short = _weather_snapshot(snapshot_dir, tmp_path / "short", drop_local_days=hours)
    db = tmp_path / "w.duckdb"
    result = _weather_run(db, short, ("2025-12-09", "2025-12-11"))
    assert not result.success
    msg = _error(result)
    assert "Failure: 1 of 3 days incomplete at the source, not stored (stored rows kept" in msg, msg
    assert "weather_hourly 2025-12-10: 19 of 24 hourly rows (new_york 19 of 24)" in msg
    assert "48 rows of the whole days written" in msg
    stored = _stored(db, "weather_hourly")
    assert dict(stored.group_by("partition_key").len().iter_rows()) == {"2025-12-09": 24, "2025-12-11": 24}
    assert result.asset_materializations_for_node("weather_hourly") == []  # asked again (sensor backoff)

    # the source fills the day in: the same request now stores 72 rows and materializes the three days
    full = _weather_snapshot(snapshot_dir, tmp_path / "full")
    result = _weather_run(db, full, ("2025-12-09", "2025-12-11"))
    assert result.success
    assert sorted(m.partition for m in result.asset_materializations_for_node("weather_hourly")) == [
        "2025-12-09",
        "2025-12-10",
        "2025-12-11",
    ]
    assert _stored(db, "weather_hourly").height == 72


def test_the_dst_fall_back_day_is_whole_with_23_utc_hours(tmp_path, snapshot_dir):
    # 2025-11-02: New York repeats 01:00; the source labels each local wall hour once, so the UTC day has 23
    db = tmp_path / "w.duckdb"
    result = _weather_run(
        db, _weather_snapshot(snapshot_dir, tmp_path / "full"), ("2025-11-02", "2025-11-02")
    )
    assert result.success
    assert _stored(db, "weather_hourly").height == 23
    assert _hours_expected("2025-11-02", "America/New_York") == 23
    assert _hours_expected("2025-03-09", "America/New_York") == 24  # spring forward: 23 local, 24 UTC
    assert _hours_expected("2025-11-02", None) == 24


def test_a_trading_day_needs_a_close_of_every_listed_ticker_of_its_open_exchange_groups():
    days = {
        "d1": ["A", "B", "CL=F"],
        "d2": ["A", "CL=F"],  # B (listed d1..d6) has no close while A has: incomplete
        "d3": ["CL=F"],  # the stock exchange's holiday: futures only
        "d4": ["A", "B"],  # the futures exchange's holiday
        "d5": ["A", "B", "CL=F"],
    }
    rows = pl.DataFrame(
        [(d, s) for d, syms in days.items() for s in syms], schema=["partition_key", "symbol"], orient="row"
    )
    groups = {"A": "stocks", "B": "stocks", "CL=F": "futures"}
    assert incomplete_days(rows, entity="symbol", groups=groups) == {
        "d2": "closes of 2 of 3 tickers (missing B)"
    }
    # one group for all: the futures holiday d4 looks like a missing close (2 of 3 closed: a session)
    assert incomplete_days(rows, entity="symbol")["d4"] == "closes of 2 of 3 tickers (missing CL=F)"
    ended = rows.filter(~((pl.col("symbol") == "B") & (pl.col("partition_key") != "d1")))
    assert incomplete_days(ended, entity="symbol", groups=groups) == {}  # B's series ended at d1
    # the answer's last day (the day just published) needs every ticker of the group's previous session
    late = pl.concat([rows, pl.DataFrame({"partition_key": ["d6"], "symbol": ["A"]})])
    assert incomplete_days(late, entity="symbol", groups=groups) == {
        "d2": "closes of 2 of 3 tickers (missing B)",
        "d6": "closes of 1 of 2 tickers (missing B)",
    }


def test_dot_cells_of_the_st_louis_fed_file_are_counted_by_the_client(tmp_path, snapshot_dir):
    from leaf_live.macro.sources.fed_nowcasts import FED_DIR, STLOUIS, FedNowcastsSnapshot

    rel = f"{FED_DIR}/gdp-stlouisfed.csv"
    recorded = (snapshot_dir / rel).read_text()
    text = recorded.rstrip("\n") + "\n1/1/26,.\n4/1/26, . \n"
    snap = _snapshot_with(snapshot_dir, tmp_path / "snap", {rel: text})
    as_of = datetime(2026, 4, 1, tzinfo=UTC)
    missing: dict[str, int] = {}
    got = FedNowcastsSnapshot(snap, models=[STLOUIS], stlouis_as_of=as_of).nowcasts(missing)
    want = FedNowcastsSnapshot(snapshot_dir, models=[STLOUIS], stlouis_as_of=as_of).nowcasts()
    assert missing == {"STLENI": 2} and got.height == want.height >= 1
    assert got["value"].to_list() == want["value"].to_list()
