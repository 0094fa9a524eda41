"""The service starts and takes submissions while a writer holds the DuckDB store (issue 21 item 2: "an
inbox that the long-running DuckDB writer cannot block"): the round inputs come from the copy the writer kept
in the inbox when it took the store (:func:`leaf_live.commands.participation.writing`), and the service
never opens the held file (the writer opens a connection per step with no wait and never fails one)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from pg_inbox import inbox_location
from store_fixture import OPEN, free_port, hold_store, make_store, start_service, writer_counts

from leaf_live.service import rounds as R
from leaf_live.service.app import refreshed_inputs, start_inputs, writer_active
from leaf_live.service.inbox import open_inbox


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_service_starts_and_accepts_while_a_writer_holds_the_store(tmp_path, backend):
    db = tmp_path / "db.duckdb"
    info = make_store(db)
    with inbox_location(backend, db) as where:
        inbox = open_inbox(where)
        token = inbox.add_team("acme")
        assert inbox.round_inputs() is None  # nothing kept yet: only the writer's copy can feed the start
        before = datetime.now(UTC)
        writer = hold_store(db, tmp_path / "stop")
        try:
            assert writer_active(db)
            kept_at = inbox.round_inputs_read_at()
            assert kept_at is not None and before <= kept_at <= datetime.now(UTC)  # kept by the writer
            port = free_port()
            service = start_service(db, port)
            try:
                url = f"http://127.0.0.1:{port}"
                health = httpx.get(url + "/health").json()
                assert datetime.fromisoformat(health["rounds_read_at"]) == kept_at
                rounds = httpx.get(url + "/rounds").json()["rounds"]
                # both due two days ahead: by due time, then id
                assert [r["round_id"] for r in rounds] == [
                    f"event/{info['cutoff']:%Y-%m-%dT%H:%M:%SZ}",
                    f"macro/{OPEN[0]}/{OPEN[1].isoformat()}",
                ]
                row = {
                    "indicator_id": OPEN[0],
                    "reference_period": OPEN[1].isoformat(),
                    "issued_at": info["now"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "value": 2.9,
                    "unit": "percent",
                }
                body = {"round_id": f"macro/cpi/{OPEN[1]}", "model_id": "external/acme/m", "rows": [row]}
                r = httpx.post(
                    url + "/submissions",
                    content=json.dumps(body),
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert r.status_code == 201, r.text
                assert r.json()["board"] == "live"
                assert [x["receipt_id"] for x in inbox.receipts()] == [r.json()["receipt_id"]]
                assert writer.poll() is None and writer_active(db)  # the writer held the store throughout
            finally:
                service.kill()
                service.wait()
        finally:
            (tmp_path / "stop").touch()
            counts = writer_counts(writer)
        # the writer opened a connection per step the whole time and the service never made one fail
        assert counts["steps"] > 0 and counts["failed_opens"] == 0
        # released: the writer kept its final read too
        assert inbox.round_inputs_read_at() > kept_at


def test_kept_inputs_round_trip_and_refresh_only_to_a_later_read(tmp_path):
    """The inbox copy is the store's frames exactly (dtypes included); a refresh while a writer holds the
    store takes the copy only when it was read later than what the service holds."""
    from leaf_live.core import storage
    from leaf_live.service.inbox import inbox_path

    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = open_inbox(inbox_path(db))
    first, at1 = start_inputs(db, inbox)  # no writer: a fresh read, kept
    kept, at = R.published_inputs(inbox)
    assert at == at1
    for name in R.INPUT_FRAMES:
        assert getattr(kept, name).equals(getattr(first, name))
        assert getattr(kept, name).schema == getattr(first, name).schema
    assert first.windows.height == 2 and first.tasks.height == 1 and first.releases.height == 1
    # an older read never replaces a newer one
    assert not R.publish_inputs(inbox, first, at1 - timedelta(seconds=1))
    assert inbox.round_inputs_read_at() == at1
    with storage.writer_lock(db):
        # held, nothing newer kept: the service keeps what it has and does not open the file
        same, same_at = refreshed_inputs(db, inbox, first, at1)
        assert same is first and same_at == at1
        fewer = R.RoundInputs(first.windows.head(1), first.releases, first.tasks)
        later = at1 + timedelta(seconds=5)
        assert R.publish_inputs(inbox, fewer, later)
        got, got_at = refreshed_inputs(db, inbox, first, at1)
        assert got_at == later and got.windows.height == 1
        # a start while held: the kept copy, without waiting for the file
        start, start_at = start_inputs(db, inbox)
        assert start_at == later and start.windows.height == 1
