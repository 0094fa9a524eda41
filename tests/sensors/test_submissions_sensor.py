"""The inbox -> store path in Dagster (issue 21): the sensor adds one dynamic partition per accepted
submission and requests it; materializing the partition stores its rows once; the rescore sensor requests the
track's scoring job once for what was stored."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
from dagster import DagsterInstance, Definitions, SkipReason, build_sensor_context, materialize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from store_fixture import OPEN, make_store  # noqa: E402

from assets.participation import SUBMISSIONS, external_submission  # noqa: E402
from leaf_live.core import storage  # noqa: E402
from leaf_live.service.inbox import SqliteInbox, inbox_path  # noqa: E402
from leaf_live.service.intake import accept  # noqa: E402
from leaf_live.service.rounds import load_inputs  # noqa: E402
from resources import LeafLiveDB  # noqa: E402
from sensors.participation import (  # noqa: E402
    RANGE_END,
    RANGE_START,
    RETRY_S,
    pending_submissions,
    rescore_stored,
    submission_store_job,
)


def test_sensor_partitions_store_and_rescore(tmp_path):
    db = tmp_path / "db.duckdb"
    info = make_store(db)
    inbox = SqliteInbox(inbox_path(db))
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    now = datetime.now(UTC)
    rids = []
    for k in range(2):
        row = {
            "indicator_id": OPEN[0],
            "reference_period": OPEN[1].isoformat(),
            "issued_at": (info["now"] - timedelta(hours=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "value": 2.9,
            "unit": "percent",
        }
        payload = {"round_id": "macro/cpi/2026-11-01", "model_id": "external/acme/m", "rows": [row]}
        sub = accept(inputs, "acme", payload, now)
        inbox.put(sub, {"receipt_id": sub.receipt_id})
        rids.append(sub.receipt_id)
    resources = {"db": LeafLiveDB(database=str(db))}
    with DagsterInstance.ephemeral() as instance:
        ctx = build_sensor_context(instance=instance, resources=resources)
        res = pending_submissions(ctx, db=resources["db"])
        added = res.dynamic_partitions_requests[0].partition_keys
        assert added == inbox.pending() and sorted(added) == sorted(rids)  # oldest first
        # the new partitions are one run over their range, not one run each
        (req,) = res.run_requests
        assert req.partition_key is None
        assert req.tags == {RANGE_START: added[0], RANGE_END: added[-1]}
        instance.add_dynamic_partitions(SUBMISSIONS.name, added)
        # while that run is in progress the next tick requests nothing again
        cursor = res.cursor
        res2 = pending_submissions(build_sensor_context(instance=instance, cursor=cursor), db=resources["db"])
        assert res2.run_requests == [] and res2.dynamic_partitions_requests == []
        # a key still waiting RETRY_S after its range was requested (its run failed) is requested alone
        stale = json.dumps({"ranged": {k: t - RETRY_S for k, t in json.loads(cursor)["ranged"].items()}})
        res3 = pending_submissions(build_sensor_context(instance=instance, cursor=stale), db=resources["db"])
        assert sorted(r.partition_key for r in res3.run_requests) == sorted(rids)
        assert sorted(r.run_key for r in res3.run_requests) == sorted(f"submission/{r}" for r in rids)
        assert json.loads(res3.cursor) == {"ranged": {}}
        # the range run itself: both partitions in one run, each its own materialization
        job = Definitions(
            assets=[external_submission], jobs=[submission_store_job], resources=resources
        ).resolve_job_def(submission_store_job.name)
        run = job.execute_in_process(instance=instance, tags=req.tags)
        assert run.success
        mats = run.get_asset_materialization_events()
        assert sorted(e.event_specific_data.materialization.partition for e in mats) == sorted(rids)
        for rid in [rids[0]]:  # again, alone: a rerun writes the same rows once
            assert materialize(
                [external_submission], partition_key=rid, resources=resources, instance=instance
            ).success
        assert isinstance(
            pending_submissions(build_sensor_context(instance=instance), db=resources["db"]), SkipReason
        )
        res = rescore_stored(build_sensor_context(instance=instance, cursor=None), db=resources["db"])
        assert [r.job_name for r in res.run_requests] == ["leaf_live_macro_scores"]
        again = rescore_stored(build_sensor_context(instance=instance, cursor=res.cursor), db=resources["db"])
        assert isinstance(again, SkipReason)
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = con.execute(
            "SELECT r.receipt_id, r.board, count(*) FROM nowcasts n JOIN external_receipts r ON r.slice_key ="
            " n.partition_key GROUP BY ALL ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    assert got == sorted((rid, "live", 1) for rid in rids)


def test_sensor_partitions_an_agent_call(tmp_path):
    """A finished agent-endpoint call (here refused before any connection: a loopback URL without the test
    switch) is its own partition ``agent-<call_id>``; materializing it stores its llm_calls row and its
    invalid nowcast row with the reason."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from leaf_live.service.agents import run_due

    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = SqliteInbox(inbox_path(db))
    inbox.set_endpoint("acme", "external/acme/a", "http://127.0.0.1:9/x", "127.0.0.1")
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    (out,) = run_due(inputs, inbox, Ed25519PrivateKey.generate(), datetime.now(UTC), deadline_s=1.0)
    assert out.startswith("invalid: refused: url")
    resources = {"db": LeafLiveDB(database=str(db))}
    with DagsterInstance.ephemeral() as instance:
        res = pending_submissions(
            build_sensor_context(instance=instance, resources=resources), db=resources["db"]
        )
        (key,) = [r.partition_key for r in res.run_requests]
        assert key == "agent-" + inbox.pending_calls()[0]
        instance.add_dynamic_partitions(SUBMISSIONS.name, [key])
        assert materialize(
            [external_submission], partition_key=key, resources=resources, instance=instance
        ).success
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT role, status, model_id FROM llm_calls").fetchall()
        rows = con.execute("SELECT model_id, valid, invalid_reason FROM nowcasts").fetchall()
    finally:
        con.close()
    assert calls == [("agent", "failed", "external/acme/a")]
    assert rows == [("external/acme/a", False, out.removeprefix("invalid: "))]
