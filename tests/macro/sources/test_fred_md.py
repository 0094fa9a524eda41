"""FRED-MD / FRED-QD vintages (LiveMacroEval App. I data): the real snapshot archive and stand-alone vintages,
the preceding-vintage rule, parse errors, and the live transport against a loopback server that serves the
publisher's own file format."""

from __future__ import annotations

import tarfile
from datetime import UTC, date, datetime

import polars as pl
import pytest

from leaf_live.core.sources import SourceError
from leaf_live.macro.sources import fred_md
from leaf_live.macro.sources.fred_md import FredMdLive, FredMdSnapshot, parse_vintage_csv

ARCHIVE_VINTAGES = ["2010-01", "2015-09", "2015-12", "2023-11", "2024-03"]


@pytest.fixture(scope="module")
def archive(snapshot_dir):
    # one pass over the xz stream for every archive vintage the tests use
    return FredMdSnapshot(snapshot_dir).load_vintages(ARCHIVE_VINTAGES, "md")


def _raw_member(snapshot_dir, vintage: str) -> str:
    with tarfile.open(snapshot_dir / fred_md.ARCHIVE) as tf:
        return tf.extractfile(f"fred-md_vintages/{vintage}.csv").read().decode()


def _row(levels: pl.DataFrame, d: date) -> dict:
    rows = levels.filter(pl.col("date") == d)
    assert rows.height == 1
    return rows.row(0, named=True)


def test_snapshot_lists_every_archive_month_and_the_approximate_vintages(snapshot_dir):
    md = FredMdSnapshot(snapshot_dir).list_vintages("md")
    # PROVENANCE section 3: 296 monthly vintages 1999-08 .. 2024-03, every month, plus ~2025-03 and ~2025-12
    assert len(md) == 296 + 2
    assert md[0] == "1999-08" and md[295] == "2024-03" and md[-2:] == ["2025-03", "2025-12"]
    months = [int(v[:4]) * 12 + int(v[5:]) for v in md[:296]]
    assert months == list(range(months[0], months[0] + 296))
    assert FredMdSnapshot(snapshot_dir).list_vintages("qd") == ["2025-03"]


def test_vintage_2024_03_values_and_tcodes(archive):
    levels, tcodes = archive["2024-03"]
    # tcodes (line 2 of the file): CPI second log difference, unemployment first difference
    assert (
        tcodes["CPIAUCSL"] == 6 and tcodes["UNRATE"] == 2 and tcodes["PAYEMS"] == 5 and tcodes["HOUST"] == 4
    )
    assert levels.columns[0] == "date" and levels.schema["date"] == pl.Date
    assert all(levels.schema[c] == pl.Float64 for c in levels.columns[1:])
    assert len(tcodes) == levels.width - 1 == 126
    # the file lists 2/1/2024 before 1/1/2024; the frame is sorted with unique month starts
    assert levels["date"].is_sorted() and levels["date"].n_unique() == levels.height == 782
    assert levels["date"][0] == date(1959, 1, 1) and levels["date"][-1] == date(2024, 2, 1)
    # values read by hand from the line "1/1/2024,19382.046,..." of fred-md_vintages/2024-03.csv
    jan = _row(levels, date(2024, 1, 1))
    assert (jan["CPIAUCSL"], jan["UNRATE"], jan["PAYEMS"], jan["INDPRO"], jan["HOUST"]) == (
        309.685,
        3.7,
        157533.0,
        102.2251,
        1374.0,
    )
    feb = _row(levels, date(2024, 2, 1))
    assert feb["CMRMTSPLx"] is None  # ragged edge: an empty cell is a missing value, not 0


def test_layout_variants_in_the_archive(archive, snapshot_dir):
    # 2023-11 writes two-digit years (1/1/59 ... 10/1/23)
    lv, _ = archive["2023-11"]
    assert lv["date"][0] == date(1959, 1, 1) and lv["date"][-1] == date(2023, 10, 1)
    assert lv["date"].is_sorted() and lv["date"].n_unique() == lv.height
    # 2015-09 has 13 all-empty separator rows: they are skipped, every data row keeps a date
    raw = _raw_member(snapshot_dir, "2015-09")
    blank = sum(1 for line in raw.splitlines()[2:] if not line.replace(",", "").strip())
    assert blank == 13
    lv, tc = archive["2015-09"]
    assert lv["date"].null_count() == 0 and lv.height == len(raw.splitlines()) - 2 - blank
    # PPI was PPIFGS before the 2016-03 rename to WPSFD49207; the ISM columns were still there
    lv, tc = archive["2015-12"]
    assert "PPIFGS" in tc and "WPSFD49207" not in tc and "NAPM" in tc
    lv, tc = archive["2010-01"]
    assert "NAPM" not in tc and tc["CPIAUCSL"] == 6


def test_standalone_vintages(snapshot_dir):
    lv, tc = FredMdSnapshot(snapshot_dir).load_vintage("2025-12", "md")
    # tcodes come from the separate fred_md_transforms.csv (last code is quoted: "1")
    assert tc["CPIAUCSL"] == 6 and tc["UNRATE"] == 2 and len(tc) == lv.width - 1
    assert lv["date"][-1] == date(2025, 11, 1)
    oct25 = _row(lv, date(2025, 10, 1))
    assert oct25["CPIAUCSL"] is None and oct25["UNRATE"] is None  # never published (2025 shutdown)
    assert _row(lv, date(2025, 11, 1))["UNRATE"] == 4.6
    qd, qtc = FredMdSnapshot(snapshot_dir).load_vintage("2025-03", "qd")
    # FRED-QD dates quarters by their last month (12/1/2024 = 2024Q4); we store the quarter's first day
    assert qd["date"][0] == date(1959, 1, 1) and qd["date"][-1] == date(2024, 10, 1)
    assert qtc["GDPC1"] == 5 and _row(qd, date(2024, 10, 1))["GDPC1"] == 23542.349
    assert qd.height == 264


def test_preceding_vintage_rule(snapshot_dir):
    snap = FredMdSnapshot(snapshot_dir)
    assert snap.vintage_preceding(date(2024, 3, 1), "md") == "2024-02"
    assert snap.vintage_preceding(date(2018, 1, 1), "md") == "2017-12"
    # beyond the archive: the nearest EARLIER vintage, never a later one, with the gap reported
    c = snap.resolve_preceding_vintage(date(2026, 3, 1), "md")
    assert (c.wanted, c.vintage, c.gap_months) == ("2026-02", "2025-12", 2)
    c = snap.resolve_preceding_vintage(date(2025, 3, 1), "md")
    assert (c.wanted, c.vintage, c.gap_months) == ("2025-02", "2024-03", 11)
    assert snap.resolve_preceding_vintage(date(2025, 4, 1), "md").vintage == "2025-03"
    with pytest.raises(
        SourceError, match=r"no FRED-MD vintage at or before 1999-07.*earliest available is 1999-08"
    ):
        snap.vintage_preceding(date(1999, 8, 1), "md")
    with pytest.raises(SourceError, match=r"no FRED-QD vintage at or before 2025-02"):
        snap.vintage_preceding(date(2025, 3, 1), "qd")
    # live: the publisher is assumed to have the wanted vintage
    assert FredMdLive().resolve_preceding_vintage(date(2026, 3, 1), "md").gap_months == 0
    with pytest.raises(ValueError, match="kind="):
        snap.vintage_preceding(date(2024, 3, 1), "monthly")


def test_missing_vintage_and_bad_labels(snapshot_dir, tmp_path):
    with pytest.raises(
        SourceError,
        match=r"FRED-MD vintage 1998-01 is not in the snapshot; available: 1999-08 \.\.\. 2025-12",
    ):
        FredMdSnapshot(snapshot_dir).load_vintage("1998-01", "md")
    with pytest.raises(ValueError, match=r"vintage='2024-13'"):
        FredMdSnapshot(snapshot_dir).load_vintage("2024-13", "md")
    with pytest.raises(ValueError, match=r"snapshot_dir=.*nope: directory does not exist"):
        FredMdSnapshot(tmp_path / "nope")


HEAD = "sasdate,AAA,BBB\nTransform:,5,2\n"


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            HEAD + "1/1/2000,1.5,2\n2/1/2000,1.6x,3\n",
            r"file f\.csv, row 3 \(line 4\), field AAA='1\.6x': not a number",
        ),
        (
            HEAD + "1/1/2000,1.5,2\n13/1/2000,1,1\n",
            r"row 3 \(line 4\), field sasdate='13/1/2000': not a calendar date",
        ),
        (
            HEAD + "1/1/2000,1.5,2\n1/15/2000,1,1\n",
            r"field sasdate='1/15/2000': observation date is not the first of a month",
        ),
        (
            HEAD + "1/1/2000,1.5,2\n01/01/2000,1,1\n",
            r"row 3 \(line 4\), field sasdate='2000-01-01': duplicate observation date \(also row 2\)",
        ),
        (HEAD + "1/1/2000,1.5,2\n,1,1\n", r"field sasdate='': row has values but no date"),
        (HEAD + "1/1/2000,1.5,2,9\n", r"row 2 \(line 3\), field row='9': row has 4 fields, header has 3"),
        (
            "sasdate,AAA,BBB\nTransform:,5,8\n1/1/2000,1,2\n",
            r"row 1 \(line 2\), field BBB='8': transform code must be an integer 1-7",
        ),
        ("sasdate,AAA,BBB\n1/1/2000,1,2\n", r"no 'Transform:' row"),
        (
            "date,AAA\nTransform:,5\n",
            r"row 0 \(line 1\), field header='date': header must start with 'sasdate'",
        ),
        (HEAD + "1/1/2000,inf,2\n", r"field AAA='inf': number is not finite"),
    ],
)
def test_parse_errors_name_file_row_and_field(text, pattern):
    with pytest.raises(SourceError, match=pattern):
        parse_vintage_csv(text, "md", file="f.csv")


def test_parse_small_files_exactly():
    lv, tc = parse_vintage_csv(HEAD + "2/1/2000,2.5,\n,,\n1/1/2000,1.5,2\n", "md", file="f.csv")
    assert tc == {"AAA": 5, "BBB": 2}
    assert lv.to_dicts() == [
        {"date": date(2000, 1, 1), "AAA": 1.5, "BBB": 2.0},
        {"date": date(2000, 2, 1), "AAA": 2.5, "BBB": None},
    ]
    qd = "sasdate,G\nfactors,1\ntransform,5\n3/1/2000,10\n6/1/2000,11\n"
    lv, tc = parse_vintage_csv(qd, "qd", file="q.csv")
    assert lv["date"].to_list() == [date(2000, 1, 1), date(2000, 4, 1)] and tc == {"G": 5}
    with pytest.raises(SourceError, match=r"field sasdate='05/01/2000': FRED-QD dates must all be"):
        parse_vintage_csv("sasdate,G\ntransform,5\n3/1/2000,10\n5/1/2000,11\n", "qd", file="q.csv")
    # separate transforms file must carry the same header
    with pytest.raises(SourceError, match=r"file t\.csv, row 0 \(line 1\), field header='ZZZ'"):
        parse_vintage_csv(
            "sasdate,AAA\n1/1/2000,1\n",
            "md",
            file="f.csv",
            transforms_text="sasdate,ZZZ\nTransform:,5\n",
            transforms_file="t.csv",
        )


# ------------------------------------------------------------------------------------------------
# live transport (loopback server serving the publisher's files)
# ------------------------------------------------------------------------------------------------


def test_live_client_reads_the_publisher_format(http_server, snapshot_dir, archive):
    fred_md.clear_cache()
    raw_2024 = _raw_member(snapshot_dir, "2024-03")
    raw_2010 = _raw_member(snapshot_dir, "2010-01")
    import gzip

    raw_qd = gzip.decompress(
        (snapshot_dir / fred_md.SINGLE_FILES[("qd", "2025-03")].path).read_bytes()
    ).decode()
    http_server.routes["/fred-md/monthly/2024-03-md.csv"] = lambda q: (200, "text/csv", raw_2024)
    http_server.routes["/fred-md/monthly/2010-01.csv"] = lambda q: (200, "text/csv", raw_2010)  # older naming
    http_server.routes["/fred-md/quarterly/2025-03-qd.csv"] = lambda q: (200, "text/csv", raw_qd)
    http_server.routes["/fred-md/monthly/current.csv"] = lambda q: (200, "text/csv", raw_2024)
    live_client = FredMdLive(f"{http_server.url}/fred-md")

    # the swap: the live client on a server serving the publisher's files gives the snapshot's tables
    live, tc = live_client.load_vintage("2024-03", "md")
    snap, stc = archive["2024-03"]
    assert live.equals(snap) and tc == stc
    assert http_server.requests[-1][0] == "/fred-md/monthly/2024-03-md.csv"

    # a vintage published under the pre-2025 name: the -md name 404s, the plain name is tried next
    live10, _ = live_client.load_vintage("2010-01", "md")
    assert live10.equals(archive["2010-01"][0])
    assert [p for p, _ in http_server.requests[-2:]] == [
        "/fred-md/monthly/2010-01-md.csv",
        "/fred-md/monthly/2010-01.csv",
    ]

    # FRED-QD equals the snapshot's stand-alone QD vintage
    qd, qtc = live_client.load_vintage("2025-03", "qd")
    sqd, sqtc = FredMdSnapshot(snapshot_dir).load_vintage("2025-03", "qd")
    assert qd.equals(sqd) and qtc == sqtc and qd["date"][-1] == date(2024, 10, 1) and qtc["GDPC1"] == 5

    # immutable vintages are cached; "current" is fetched every time
    n = len(http_server.requests)
    live_client.load_vintage("2024-03", "md")
    assert len(http_server.requests) == n
    live_client.load_vintage("current", "md")
    live_client.load_vintage("current", "md")
    assert len(http_server.requests) == n + 2

    with pytest.raises(
        SourceError,
        match=(
            r"vintage 2019-05 could not be downloaded; tried: .*2019-05-md\.csv.*HTTP"
            r" 404.*2019-05\.csv.*HTTP 404"
        ),
    ):
        live_client.load_vintage("2019-05", "md")

    # a malformed live file names the URL, row and field
    http_server.routes["/fred-md/monthly/2019-06-md.csv"] = lambda q: (
        200,
        "text/csv",
        HEAD + "1/1/2000,abc,1\n",
    )
    with pytest.raises(
        SourceError,
        match=(
            r"file http://127\.0\.0\.1:\d+/fred-md/monthly/2019-06-md\.csv, row 2 \(line 3\), field AAA='abc'"
        ),
    ):
        live_client.load_vintage("2019-06", "md")


def test_live_vintage_calendar():
    md = FredMdLive(today=lambda: datetime(2026, 5, 20, tzinfo=UTC)).list_vintages("md")
    assert md[0] == "1999-08" and md[-1] == "2026-05" and len(md) == 322 and md == sorted(md)
    assert fred_md.vintage_urls("2025-12", "md", "https://example.org/x/") == [
        "https://example.org/x/monthly/2025-12-md.csv",
        "https://example.org/x/monthly/2025-12.csv",
    ]
