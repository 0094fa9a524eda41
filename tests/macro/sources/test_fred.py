"""FRED / ALFRED source: snapshot CSV folders and the live wire formats served from 127.0.0.1."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from leaf_live.core.sources import SourceError
from leaf_live.macro.sources.fred import FredLive, FredSnapshot


def test_snapshot_folders_and_headers(snapshot_dir):
    # date,value (codex_macro_monitor): PAYEMS 1980-01 = 90,800 thousand persons
    payems = FredSnapshot(snapshot_dir).series("PAYEMS")
    assert payems.schema == {"date": pl.Date, "value": pl.Float64}
    assert payems.row(0) == (date(1980, 1, 1), 90800.0)
    # observation_date,PCEC96 (livemacroeval)
    pce = FredSnapshot(snapshot_dir).series("PCEC96")
    assert (
        pce.height == 230
        and pce.row(0) == (date(2007, 1, 1), 11181.0)
        and pce.row(-1) == (date(2026, 2, 1), 16698.9)
    )
    # date,UNRATE (thecoderstef, newest vintage) is preferred over the older codex file; both say 14.8 in
    # 2020-04
    unrate = FredSnapshot(snapshot_dir).series("UNRATE")
    assert unrate["date"].max() == date(2026, 6, 1) and unrate.height == 377
    old = FredSnapshot(snapshot_dir, folder="codex_macro_monitor").series("UNRATE")
    assert old.filter(pl.col("date") == date(2025, 10, 1))["value"].to_list() == [None]  # shutdown gap
    for f in (unrate, old):
        assert f.filter(pl.col("date") == date(2020, 4, 1))["value"].item() == 14.8
    window = FredSnapshot(snapshot_dir).series(
        "UNRATE", observation_start=date(2026, 1, 1), observation_end=date(2026, 3, 1)
    )
    assert window["date"].to_list() == [date(2026, 1, 1), date(2026, 2, 1), date(2026, 3, 1)]


def test_snapshot_errors(snapshot_dir, tmp_path):
    with pytest.raises(
        SourceError, match=r"no snapshot file for FRED series 'NOPE'.*available: \[.*'PAYEMS'"
    ):
        FredSnapshot(snapshot_dir).series("NOPE")
    bad = tmp_path / "macro" / "fred_series" / "mine"
    bad.mkdir(parents=True)
    (bad / "HOUST.csv").write_text("date,HOUST\n2024-01-01,1376\n2024-02-01,1.5k\n")
    with pytest.raises(
        SourceError, match=r"mine/HOUST.csv, row 2 \(line 3\), field HOUST='1.5k': not a number"
    ):
        FredSnapshot(tmp_path).series("HOUST")
    with pytest.raises(ValueError, match="one vintage"):
        FredSnapshot(tmp_path).series("HOUST", vintage_date=date(2024, 3, 1))


def test_live_fredgraph_keyless(http_server):
    # fredgraph.csv as FRED serves it today: observation_date header, empty cell for a missing value
    body = "observation_date,PAYEMS\n2025-08-01,159540\n2025-09-01,159659\n2025-10-01,\n2025-11-01,159592\n"
    http_server.routes["/graph/fredgraph.csv"] = lambda q: (200, "text/csv", body)
    got = FredLive(graph_url=http_server.url).series("PAYEMS", observation_start=date(2025, 9, 1))
    assert got.rows() == [
        (date(2025, 9, 1), 159659.0),
        (date(2025, 10, 1), None),
        (date(2025, 11, 1), 159592.0),
    ]
    assert http_server.requests == [("/graph/fredgraph.csv", {"id": ["PAYEMS"], "cosd": ["2025-09-01"]})]
    # the older DATE header and '.' for missing are accepted too
    http_server.routes["/graph/fredgraph.csv"] = lambda q: (
        200,
        "text/csv",
        "DATE,UNRATE\n2013-10-01,.\n2013-11-01,7.0\n",
    )
    missing: dict[str, int] = {}
    got = FredLive(graph_url=http_server.url).series("UNRATE", missing=missing)
    assert got.rows() == [(date(2013, 10, 1), None), (date(2013, 11, 1), 7.0)]
    assert missing == {"UNRATE": 1}  # the "." counted; the PAYEMS empty cell above is no marker


def test_live_fredgraph_errors(http_server):
    http_server.routes["/graph/fredgraph.csv"] = lambda q: (200, "text/html", "<html>Series not found</html>")
    with pytest.raises(SourceError, match=r"fredgraph.csv\?id=XX, row 0 \(line 1\), field header='<html>"):
        FredLive(graph_url=http_server.url).series("XX")
    with pytest.raises(SourceError, match=r"HTTP 404"):
        FredLive(graph_url=http_server.url + "/nothing").series("XX")


def _observations(q: dict) -> tuple[int, str, str]:
    if q.get("api_key") != ["k3y"]:
        return (
            400,
            "application/json",
            json.dumps(
                {
                    "error_code": 400,
                    "error_message": "Bad Request.  The value for variable api_key is not registered.",
                }
            ),
        )
    rt = q["realtime_start"][0]
    obs = {
        # PAYEMS as published on 2013-11-08 (vintage): October 2013 first print
        "2013-11-08": [("2013-09-01", "136256"), ("2013-10-01", "136460")],
    }
    if q.get("output_type") == ["4"]:
        rows = [
            {
                "realtime_start": "2013-11-08",
                "realtime_end": "2013-12-05",
                "date": "2013-10-01",
                "value": "136460",
            },
            {
                "realtime_start": "2013-12-06",
                "realtime_end": "2014-01-09",
                "date": "2013-11-01",
                "value": ".",
            },
        ]
    else:
        rows = [{"realtime_start": rt, "realtime_end": rt, "date": d, "value": v} for d, v in obs.get(rt, [])]
    payload = {
        "realtime_start": rt,
        "realtime_end": q["realtime_end"][0],
        "observation_start": "1776-07-04",
        "observation_end": "9999-12-31",
        "units": "lin",
        "output_type": int(q.get("output_type", ["1"])[0]),
        "file_type": "json",
        "order_by": "observation_date",
        "sort_order": "asc",
        "count": len(rows),
        "offset": 0,
        "limit": 100000,
        "observations": rows,
    }
    return 200, "application/json", json.dumps(payload)


def test_live_alfred_vintage_and_first_release(http_server):
    http_server.routes["/fred/series/observations"] = _observations
    live = FredLive(api_key="k3y", api_url=http_server.url + "/fred")
    vint = live.series("PAYEMS", vintage_date=date(2013, 11, 8))
    assert vint.rows() == [(date(2013, 9, 1), 136256.0), (date(2013, 10, 1), 136460.0)]
    path, q = http_server.requests[-1]
    assert path == "/fred/series/observations"
    assert q["series_id"] == ["PAYEMS"] and q["file_type"] == ["json"]
    assert q["realtime_start"] == q["realtime_end"] == ["2013-11-08"]
    missing: dict[str, int] = {}
    first = live.first_release("PAYEMS", missing=missing)
    assert missing == {"PAYEMS": 1}
    assert first.rows() == [
        (date(2013, 10, 1), 136460.0, date(2013, 11, 8)),
        (date(2013, 11, 1), None, date(2013, 12, 6)),
    ]
    assert http_server.requests[-1][1]["output_type"] == ["4"]


def test_live_alfred_key_handling(http_server):
    with pytest.raises(ValueError, match="set FRED_API_KEY"):
        FredLive().series("PAYEMS", vintage_date=date(2013, 11, 8))
    with pytest.raises(ValueError, match="no release dates"):
        FredSnapshot(Path(__file__).parent).first_release("PAYEMS")
    http_server.routes["/fred/series/observations"] = _observations
    with pytest.raises(SourceError) as err:
        FredLive(api_key="wrong-secret", api_url=http_server.url + "/fred").first_release("PAYEMS")
    msg = str(err.value)
    assert "HTTP 400" in msg and "api_key is not registered" in msg and "api_key=***" in msg
    assert "wrong-secret" not in msg
