"""The release-landed sensor's requests executed: the stored releases and the live scores follow the simulated
clock release by release (issue 12, "What it must show": the scores updating after each landing).

Starts from a copy of the session's main run (every recorded release stored), rewound to the clock's start:
the February 2026 release stage is rematerialized with the calendar replayed at 2026-02-10 00:00 UTC, so the
month holds only the two ISM releases known then. The clock then advances hour by hour to 2026-02-11 14:00
(retail sales on the 10th, payrolls and the unemployment rate on the 11th), and finally to the month's end;
every request is executed in-process in one Dagster instance against the copy, as the daemon would launch it.
The executed steps are the requested job's path from the calendar to the scores (release_calendar, releases,
nowcast_windows, announcement_returns, surprise_events, macro_scores) with few bootstrap draws; the job's
other downstream assets (analyses, ARIMA, dbt marts) are exercised by their own tests.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from dagster import AssetKey, DagsterInstance, RunRequest, build_sensor_context

from leaf_live.core import storage
from leaf_live.core.settings import get_settings
from leaf_live.definitions import build_definitions
from resources import default_resources
from sensors.macro import LANDING_JOB, RELEASES_TAG, landing_run_config

MONTH = "2026-02"
STEPS = [
    AssetKey(k)
    for k in (
        "release_calendar",
        "releases",
        "nowcast_windows",
        "announcement_returns",
        "surprise_events",
        "livemacro_scores",
        "livemacro_event_losses",  # the macro_scores multi-asset's outputs go together
        "livemacro_rankings",
        "score_decompositions",
        "relative_errors",
    )
]
START = datetime(2026, 2, 10, 0, tzinfo=UTC)
HOURS = 38  # through 2026-02-11 14:00 UTC


def resources_at(snapshot_dir, db, at: datetime) -> dict:
    s = replace(get_settings(), snapshot_dir=snapshot_dir, transport="snapshot", clock=at)
    return default_resources(db=db, settings=s)


def execute(defs, request, instance) -> None:
    job = defs.resolve_job_def(LANDING_JOB)
    config = request.run_config
    config["ops"]["macro_scores"]["config"]["boot_draws"] = 50  # intervals are not what this test checks
    result = job.execute_in_process(
        run_config=config,
        partition_key=request.partition_key,
        instance=instance,
        asset_selection=STEPS,
        tags=request.tags,
        raise_on_error=False,
    )
    assert result.success, [e.message for e in result.all_events if e.is_failure]


def live_board(db) -> dict:
    """(n_releases, n_events) of the live overall return board (full fit, terminal horizon), every live point
    score, and February's stored releases and usable timestamp groups."""
    con = storage.connect_read_only(db)
    try:
        scores = {
            r[:5]: None if r[5] is None else round(r[5], 10)
            for r in con.execute(
                "SELECT model_id, fit_name, horizon, scope, target, score FROM livemacro_scores "
                "WHERE partition_key = 'live'"
            ).fetchall()
        }
        n_rel, n_ev = con.execute(
            "SELECT max(n_releases), max(n_events) FROM livemacro_scores WHERE partition_key = 'live' AND "
            "fit_name = 'full' AND horizon = 'terminal' AND scope = 'overall' AND target = 'return'"
        ).fetchone()
        feb = [
            f"{i}@{t:%Y-%m-%dT%H:%MZ}"
            for i, t in con.execute(
                "SELECT indicator_id, release_at FROM releases WHERE partition_key = ? ORDER BY 2, 1", [MONTH]
            ).fetchall()
        ]
        usable = con.execute(
            "SELECT count(*) FROM announcement_returns WHERE partition_key = ? AND window_status = 'usable'",
            [MONTH],
        ).fetchone()[0]
    finally:
        con.close()
    return {"n_releases": n_rel, "n_events": n_ev, "feb": feb, "usable_feb": usable, "scores": scores}


def test_each_landing_is_requested_once_and_the_scores_follow(main_run, snapshot_dir, tmp_path):
    db = tmp_path / "living.duckdb"
    shutil.copy(main_run["db"], db)
    instance = DagsterInstance.ephemeral()
    full = live_board(db)
    defs = build_definitions(resources_at(snapshot_dir, db, START))
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def("release_landed_sensor")

    # rewind: February as known at the clock's start
    execute(defs, RunRequest(partition_key=MONTH, run_config=landing_run_config([MONTH])), instance)
    board = live_board(db)
    assert board["feb"] == ["ism_manufacturing@2026-02-02T15:00Z", "ism_services@2026-02-04T15:00Z"]
    assert (
        board["n_releases"] < full["n_releases"] and board["n_events"] < full["n_events"]
    )  # they left the board

    cursor, history, requested = None, [], []
    for h in range(HOURS + 1):
        at = START + timedelta(hours=h)
        res = resources_at(snapshot_dir, db, at)
        data = sensor.evaluate_tick(
            build_sensor_context(
                instance=instance,
                cursor=cursor,
                repository_def=repo,
                resources={k: res[k] for k in ("clock", "calendar", "db")},
            )
        )
        cursor = data.cursor
        for req in data.run_requests:
            requested.extend(req.tags[RELEASES_TAG].split(","))
            execute(build_definitions(res), req, instance)
            history.append((at, req.tags[RELEASES_TAG], live_board(db)))
    # retail sales at 13:30 UTC on the 10th, payrolls + unemployment at 13:30 on the 11th: two landings, each
    # requested once, at the first hourly tick after its time
    assert [(at, keys) for at, keys, _ in history] == [
        (datetime(2026, 2, 10, 14, tzinfo=UTC), "retail_sales@2026-02-10T13:30Z"),
        (
            datetime(2026, 2, 11, 14, tzinfo=UTC),
            "nonfarm_payrolls@2026-02-11T13:30Z,unemployment_rate@2026-02-11T13:30Z",
        ),
    ]
    assert len(requested) == len(set(requested)) == 3
    # the scores after each landing: one more stored release and event per landing (payrolls and the
    # unemployment rate share a timestamp: one event, two releases), each usable window in the board
    first, second = history[0][2], history[1][2]
    assert first["feb"][-1] == "retail_sales@2026-02-10T13:30Z" and len(first["feb"]) == 3
    assert (first["n_releases"] - board["n_releases"], first["n_events"] - board["n_events"]) == (1, 1)
    assert (second["n_releases"] - first["n_releases"], second["n_events"] - first["n_events"]) == (2, 1)
    assert second["usable_feb"] - board["usable_feb"] == 2
    # a restart from the stored cursor at the span's end: nothing requested again
    res = resources_at(snapshot_dir, db, START + timedelta(hours=HOURS))
    again = sensor.evaluate_tick(
        build_sensor_context(
            instance=instance,
            cursor=cursor,
            repository_def=repo,
            resources={k: res[k] for k in ("clock", "calendar", "db")},
        )
    )
    assert again.run_requests == [] and "no release landed" in again.skip_message
    # the month's end: the rest lands (one request), and the board is again exactly the full run's
    end = datetime(2026, 3, 1, 4, 59, tzinfo=UTC)
    res = resources_at(snapshot_dir, db, end)
    last = sensor.evaluate_tick(
        build_sensor_context(
            instance=instance,
            cursor=cursor,
            repository_def=repo,
            resources={k: res[k] for k in ("clock", "calendar", "db")},
        )
    )
    assert [r.partition_key for r in last.run_requests] == [MONTH]
    assert set(last.run_requests[0].tags[RELEASES_TAG].split(",")) == set(full["feb"]) - set(second["feb"])
    execute(build_definitions(res), last.run_requests[0], instance)
    assert live_board(db) == full  # same releases, events and point scores as the run that saw everything
