"""The blocking point-in-time check on the events component of the frozen bundles (issue 16)."""

from __future__ import annotations

import duckdb

from assets.event_agents import EVENT_AGENT_CHECKS, EVENT_BUNDLE_LEAKS_SQL, event_bundles_point_in_time


def test_event_bundle_check_refuses_an_event_stored_after_the_cutoff_or_not_stored():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE event_bundles (task_id VARCHAR, cutoff TIMESTAMPTZ, events JSON)")
    con.execute("CREATE TABLE fact_checked_events (event_id VARCHAR, available_at TIMESTAMPTZ)")
    con.execute(
        "INSERT INTO fact_checked_events VALUES ('e1', '2026-01-01 10:00+00'), ('e2', '2026-01-02 10:00+00')"
    )
    con.execute(
        "INSERT INTO event_bundles VALUES"
        ' (\'t_ok\', \'2026-01-02 10:00+00\', \'[{"event_id": "e1"}, {"event_id": "e2"}]\'),'
        ' (\'t_late\', \'2026-01-01 12:00+00\', \'[{"event_id": "e1"}, {"event_id": "e2"}]\'),'
        " ('t_ghost', '2026-01-03 00:00+00', '[{\"event_id\": \"e9\"}]'),"
        " ('t_none', '2026-01-03 00:00+00', '[]')"
    )
    rows = sorted(con.execute(EVENT_BUNDLE_LEAKS_SQL).fetchall(), key=lambda r: r[0])
    # e2 stored a day after t_late's cutoff; e9 is in no stored table; t_ok's e2 is stored at the cutoff
    assert [(r[0], r[1], r[2] is None) for r in rows] == [("t_ghost", "e9", True), ("t_late", "e2", False)]
    assert event_bundles_point_in_time in EVENT_AGENT_CHECKS
    spec = next(iter(event_bundles_point_in_time.check_specs))
    assert spec.blocking and spec.asset_key.to_user_string() == "event_bundles"
