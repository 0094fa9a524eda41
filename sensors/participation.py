"""Submissions into the store, then rescoring (issue 21; wiring only).

``submissions_sensor`` polls the inbox (beside the database, or where ``LEAF_LIVE_INBOX`` says: the
``db`` resource's ``inbox``) for accepted submissions not yet stored, adds
each one's receipt id (and each finished agent-endpoint call as ``agent-<call_id>``) as a dynamic partition
of ``external_submission`` (so every submission shows in the Dagster UI) and requests the new partitions once:
one run per :data:`BATCH` of them, a range of the partitions just added (run key = its first and last key),
so a burst of a thousand submissions is a few runs, not a thousand. A partition still waiting
:data:`RETRY_S` after its range was requested (its run failed) is requested alone, once (run key = its receipt
id); the cursor keeps when each waiting key's range was requested, so a range run still in progress is not
doubled. ``submissions_rescore_sensor`` then
requests the track's scoring job (``sensors/scores.py``) once for everything stored since its last request
(cursor: the latest ``stored_at`` per track), so a burst of submissions costs one rescore, not one each.
"""

from __future__ import annotations

import json
import time

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from assets.participation import SUBMISSIONS, external_submission  # the job's partitions: SUBMISSIONS
from leaf_live.service.inbox import inbox_location, open_inbox
from leaf_live.service.store import CALL_PREFIX
from resources import LeafLiveDB
from sensors.priority import priority_tags
from sensors.scores import SCORE_JOBS

SENSOR_INTERVAL_S = 30
BATCH = 200  # new partitions per run
RETRY_S = 600.0  # a waiting partition is requested alone this long after its range run was
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"

submission_store_job = define_asset_job(
    "leaf_live_store_submission",
    tags=priority_tags("leaf_live_store_submission"),
    selection=[external_submission],
    description=(
        "Moves accepted submissions (partition = receipt id; a run covers one or a range of them) from the"
        " inbox into the store."
    ),
)


def pending_submissions(context: SensorEvaluationContext, db: LeafLiveDB) -> SensorResult | SkipReason:
    inbox = open_inbox(inbox_location(db.database, db.inbox))
    pending = inbox.pending() + [CALL_PREFIX + c for c in inbox.pending_calls()]
    if not pending:
        return SkipReason("no accepted submission or finished agent call waits in the inbox")
    known = set(context.instance.get_dynamic_partitions(SUBMISSIONS.name))
    new = [r for r in pending if r not in known]
    now = time.time()
    ranged = json.loads(context.cursor).get("ranged", {}) if context.cursor else {}
    alone = [r for r in pending if r in known and now - ranged.get(r, 0.0) >= RETRY_S]
    waiting = set(pending)
    # still waiting, requested in a range not long ago; plus the new ones now
    ranged = {r: t for r, t in ranged.items() if r in waiting and r not in alone} | {r: now for r in new}
    # added in this order in one request, so each chunk of ``new`` is a contiguous range of the partitions
    ranges = [
        RunRequest(
            run_key=f"submissions/{part[0]}..{part[-1]}", tags={RANGE_START: part[0], RANGE_END: part[-1]}
        )
        if len(part) > 1
        else RunRequest(run_key=f"submission/{part[0]}", partition_key=part[0])
        for part in (new[i : i + BATCH] for i in range(0, len(new), BATCH))
    ]
    return SensorResult(
        run_requests=[RunRequest(run_key=f"submission/{r}", partition_key=r) for r in alone] + ranges,
        dynamic_partitions_requests=[SUBMISSIONS.build_add_request(new)] if new else [],
        cursor=json.dumps({"ranged": ranged}, sort_keys=True),
    )


def rescore_stored(context: SensorEvaluationContext, db: LeafLiveDB) -> SensorResult | SkipReason:
    last = open_inbox(inbox_location(db.database, db.inbox)).last_stored()
    seen = json.loads(context.cursor) if context.cursor else {}
    due = sorted(t for t, at in last.items() if t in SCORE_JOBS and at > seen.get(t, ""))
    if not due:
        return SkipReason("no submission stored since the last rescore")
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"rescore/{t}/{last[t]}", job_name=SCORE_JOBS[t].name, tags={"leaf_live/track": t}
            )
            for t in due
        ],
        cursor=json.dumps({**seen, **{t: last[t] for t in due}}, sort_keys=True),
    )


def build_participation_sensors(status: DefaultSensorStatus) -> list:
    return [
        sensor(
            name="submissions_sensor",
            job=submission_store_job,
            minimum_interval_seconds=SENSOR_INTERVAL_S,
            default_status=status,
            description=(
                "Adds each accepted submission in the inbox as a dynamic partition (its receipt id) of"
                " external_submission and requests it once."
            ),
        )(pending_submissions),
        sensor(
            name="submissions_rescore_sensor",
            jobs=list(SCORE_JOBS.values()),
            minimum_interval_seconds=SENSOR_INTERVAL_S,
            default_status=status,
            description=(
                "Requests the track's scoring job once for the submissions stored since its last request."
            ),
        )(rescore_stored),
    ]
