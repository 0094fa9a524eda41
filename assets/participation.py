"""The participation asset (issue 21; wiring only): one dynamic partition per accepted submission.

``external_submission`` partition ``<receipt_id>`` moves that submission from the inbox (beside the database,
or the ``db`` resource's ``inbox``: :func:`leaf_live.service.inbox.inbox_location`) into its track's forecast
table and ``external_receipts`` (:func:`leaf_live.service.store.store_submission`); partition
``agent-<call_id>`` stores a finished agent-endpoint call (its ``llm_calls`` row and, for an invalid answer,
its invalid forecast rows: :func:`leaf_live.service.store.store_agent_call`); rerunning a partition writes the
same rows once. A run may cover a range of partitions (a burst of submissions: one run of up to
``sensors.participation.BATCH`` partitions, each stored in turn on one connection, each its own
materialization). The sensor that adds the partitions and requests them, and the rescoring after them, is
``sensors/participation.py``.
"""

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DynamicPartitionsDefinition,
    MaterializeResult,
    asset,
)

from assets.common import DUCKDB_POOL, table_metadata
from leaf_live.service.inbox import inbox_location, open_inbox
from leaf_live.service.store import CALL_PREFIX, store_agent_call, store_submission
from resources import LeafLiveDB

SUBMISSIONS = DynamicPartitionsDefinition(name="submissions")


@asset(
    pool=DUCKDB_POOL,
    partitions_def=SUBMISSIONS,
    backfill_policy=BackfillPolicy.single_run(),  # a burst of submissions is one run, not one each
    group_name="participation",
    metadata=table_metadata("external_receipts"),
    description=(
        "One accepted service submission (partition = its receipt id) moved from the inbox into the track's"
        " forecast table (producer submission_service, its own slice) and external_receipts (received_at,"
        " due time, board live | retrospective)."
    ),
)
def external_submission(context: AssetExecutionContext, db: LeafLiveDB) -> MaterializeResult:
    inbox = open_inbox(inbox_location(db.database, db.inbox))
    keys = context.partition_keys
    metas = []
    with db.get_connection() as con:
        for key in keys:
            metas.append(_store_one(con, inbox, key))
    if len(metas) == 1:
        return MaterializeResult(metadata=metas[0])
    return MaterializeResult(
        metadata={
            "rows": sum(m["rows"] for m in metas),
            "submissions": sum(1 for k in keys if not k.startswith(CALL_PREFIX)),
            "agent_calls": sum(1 for k in keys if k.startswith(CALL_PREFIX)),
            "first": keys[0],
            "last": keys[-1],
        }
    )


def _store_one(con, inbox, key: str) -> dict:
    """Store the partition ``key`` (a receipt id, or ``agent-<call_id>``); its materialization metadata."""
    if key.startswith(CALL_PREFIX):  # an agent-endpoint call: its llm_calls row (+ invalid rows)
        cid = key[len(CALL_PREFIX) :]
        call = inbox.load_call(cid)
        n = store_agent_call(con, inbox, cid)
        return {
            "rows": n,
            "model_id": call["model_id"],
            "round_id": call["round_id"],
            "completed_at": call["completed_at"],
            "status": call["status"],
            "reason": call["reason"] or "",
        }
    sub = inbox.load(key)
    n = store_submission(con, inbox, key)
    return {
        "rows": n,
        "model_id": sub["model_id"],
        "round_id": sub["round_id"],
        "received_at": sub["received_at"],
        "board": sub["board"],
    }


PARTICIPATION_ASSETS = [external_submission]
