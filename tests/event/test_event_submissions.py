"""External event-track forecasts through ``leaf-live submit --track event`` (issue 12 item 5): a file
forecasting stored tasks of each kind is stored as the model's leaf_forecasts rows with each task's
bundle_hash; a hostile file is refused with every bad row named and nothing stored."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from leaf_live.cli import main
from leaf_live.core import storage

CUTOFF = datetime(2026, 3, 2, tzinfo=UTC)
TASKS = [  # (task_id, domain, kind, horizon, steps, frequency, last_value)
    ("weather/nyc/series/3h/2026-03-02", "weather", "series", "3h", 3, "hour", 10.0),
    ("large_cap/aapl/series/2d/2026-03-02", "large_cap", "series", "2d", 2, "session", 200.0),
    ("large_cap/aapl/trend3/1d/2026-03-02", "large_cap", "trend3", "1d", 1, "session", 200.0),
    ("event/q1/event/100%/2026-03-02", "event", "event", "100%", 1, "event", 0.4),
]
W, S, T, E = (t[0] for t in TASKS)
HEADER = "task_id,issued_at,point,quantiles,predicted_class,probability,bundle_hash"


def bundle_hash(task_id: str) -> str:
    return hashlib.sha256(task_id.encode()).hexdigest()


@pytest.fixture()
def db(tmp_path):
    rows = []
    for tid, domain, kind, horizon, steps, freq, last in TASKS:
        step = timedelta(hours=1) if freq == "hour" else timedelta(days=1)
        bundle = json.dumps({"series": [[CUTOFF.isoformat(), last]], "meta": {"task": tid}})
        rows.append(
            {
                "partition_key": "2026-03-02",
                "task_id": tid,
                "domain": domain,
                "target_id": tid.split("/")[1],
                "task_kind": kind,
                "horizon": horizon,
                "horizon_steps": steps,
                "frequency": freq,
                "cutoff": CUTOFF,
                "target_times": [CUTOFF + step * (k + 1) for k in range(steps)],
                "last_value": last,
                "bundle": bundle,
                "bundle_hash": bundle_hash(tid),
                "max_input_available_at": CUTOFF,
                "last_value_age_days": None,
                "available_at": CUTOFF,
            }
        )
    frame = pl.DataFrame(rows, schema=storage.polars_schema("forecast_tasks"))
    path = tmp_path / "store.duckdb"
    con = storage.connect(path)
    storage.replace_partition(
        con, "forecast_tasks", storage.conform("forecast_tasks", frame), {"partition_key": "2026-03-02"}
    )
    con.close()
    return path


def submit(capsys, db, path, model="external/ev"):
    rc = main(["submit", str(path), "--track", "event", "--model", model, "--db", str(db), "--no-score"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def stored(db) -> pl.DataFrame:
    con = storage.connect_read_only(db)
    try:
        return storage.read_table(con, "leaf_forecasts").sort("task_id")
    finally:
        con.close()


def test_a_forecast_of_each_task_kind_is_stored_with_its_tasks_bundle(db, tmp_path, capsys):
    q = {"0.025": [190, 188], "0.1": [195, 194], "0.9": [206, 208], "0.975": [210, 212]}
    path = tmp_path / "ev.csv"
    pl.DataFrame(
        {
            "task_id": [W, S, T, E],
            "issued_at": [
                "2026-03-01T23:00:00Z",
                "2026-03-01T19:00:00-05:00",
                "2026-03-01T12:00:00Z",
                "2026-03-01T12:00:00Z",
            ],
            "point": ["[10.5, 11.0, 11.25]", "[201.0, 202.5]", None, None],
            "quantiles": [None, json.dumps(q), None, None],
            "predicted_class": [None, None, "up", None],
            "probability": [None, None, None, "0.35"],
            "bundle_hash": [None, bundle_hash(S), None, None],
        }
    ).write_csv(path)
    rc, out, err = submit(capsys, db, path)
    assert (rc, err) == (0, ""), err
    assert "4 task forecasts in leaf_forecasts stored as external/ev" in out
    got = stored(db)
    assert got["model_id"].to_list() == ["external/ev"] * 4 and got["valid"].all()
    by = {r["task_id"]: r for r in got.iter_rows(named=True)}
    assert by[W]["point"] == [10.5, 11.0, 11.25] and by[W]["quantiles"] is None
    assert by[S]["point"] == [201.0, 202.5] and json.loads(by[S]["quantiles"]) == {
        k: [float(x) for x in v] for k, v in q.items()
    }
    assert by[S]["issued_at"] == CUTOFF  # 19:00 at UTC-5 is the cutoff itself: allowed
    assert by[T]["predicted_class"] == "Up" and by[E]["probability"] == 0.35
    assert {r["task_id"]: r["bundle_hash"] for r in by.values()} == {t: bundle_hash(t) for t in (W, S, T, E)}
    # submitting again replaces the model's rows
    rc, out, _ = submit(capsys, db, path)
    assert rc == 0 and "replaced 4 rows" in out and stored(db).height == 4


BAD = [  # (task_id, issued_at, point, quantiles, class, probability, bundle_hash) -> column, reason
    (("nope/x", "2026-03-01T12:00:00Z", "", "", "", "0.5", ""), "task_id", "unknown task"),
    (
        (W, "2026-03-02T01:00:00Z", "[10, 10, 10]", "", "", "", ""),
        "issued_at",
        "issued after the task's cutoff",
    ),
    ((W, "2031-01-01T00:00:00Z", "[10, 10, 10]", "", "", "", ""), "issued_at", "in the future"),
    ((W, "2026-03-01T12:00:00", "[10, 10, 10]", "", "", "", ""), "issued_at", "without a time zone"),
    (
        (W, "2026-03-01T12:00:00Z", "[10, 11]", "", "", "", ""),
        "point",
        "2 values, the task forecasts 3 target times",
    ),
    ((W, "2026-03-01T12:00:00Z", "[75, 76, 77]", "", "", "", ""), "point", "(Fahrenheit?)"),
    ((S, "2026-03-01T12:00:00Z", "[20100, 20200]", "", "", "", ""), "point", "cents for dollars?"),
    (
        (S, "2026-03-01T12:00:00Z", "[201, 202]", '{"0.1": [203, 200], "0.9": [206, 208]}', "", "", ""),
        "quantiles",
        "quantiles cross at step 0",
    ),
    ((S, "2026-03-01T12:00:00Z", "[201, nan]", "", "", "", ""), "point", "not a JSON array of numbers"),
    ((T, "2026-03-01T12:00:00Z", "", "", "Sideways", "", ""), "predicted_class", "not a trend3 class"),
    (
        (T, "2026-03-01T12:00:00Z", "", "", "", "", ""),
        "predicted_class",
        "empty: a trend3 task needs predicted_class",
    ),
    (
        (E, "2026-03-01T12:00:00Z", "", "", "", "35", ""),
        "probability",
        "(a percentage? give P(YES) as a fraction)",
    ),
    (
        (E, "2026-03-01T12:00:00Z", "[0.3]", "", "", "0.3", ""),
        "point",
        "a event task takes probability, not point",
    ),
    ((E, "2026-03-01T12:00:00Z", "", "", "", "0.3", "abc"), "bundle_hash", "not the task's bundle_hash"),
]


def test_a_hostile_file_is_refused_row_by_row_and_nothing_is_stored(db, tmp_path, capsys):
    good = tmp_path / "good.csv"
    pl.DataFrame({"task_id": [E], "issued_at": ["2026-03-01T00:00:00Z"], "probability": ["0.2"]}).write_csv(
        good
    )
    assert submit(capsys, db, good, model="external/kept")[0] == 0
    before = stored(db)
    path = tmp_path / "hostile.csv"
    pl.DataFrame([cells for cells, _, _ in BAD], schema=HEADER.split(","), orient="row").write_csv(path)
    rc, out, err = submit(capsys, db, path)
    assert rc == 1 and out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == f"leaf-live submit: {path}: {len(BAD)} of {len(BAD)} rows rejected, nothing stored"
    for row, (_cells, col, why) in enumerate(BAD, start=1):
        mine = [x for x in lines[1:] if x.startswith(f"  row {row} (line {row + 1}): {col}=")]
        assert mine and any(why in x for x in mine), (row, col, why, lines)
    # several rows forecast the same task: each repeat is named as a duplicate too
    assert any(x.startswith("  row 3 (line 4): task_id=") and "duplicate key" in x for x in lines)
    assert stored(db).equals(before)  # nothing stored, the earlier model's rows intact
