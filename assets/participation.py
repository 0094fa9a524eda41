"""The participation asset (issue 21; wiring only): one dynamic partition per accepted submission.

``external_submission`` partition ``<receipt_id>`` moves that submission from the inbox (beside the database,
or the ``db`` resource's ``inbox``: :func:`leaf_live.service.inbox.inbox_location`) into its track's forecast
table and ``external_receipts`` (:func:`leaf_live.service.store.store_submission`); partition
``agent-<call_id>`` stores a finished agent-endpoint call (its ``llm_calls`` row and, for an invalid answer,
its invalid forecast rows: :func:`leaf_live.service.store.store_agent_call`); rerunning a partition writes the
same rows once. The sensor that adds the partitions and requests them, and the rescoring after them, is
``sensors/participation.py``.
"""

from dagster import AssetExecutionContext, DynamicPartitionsDefinition, MaterializeResult, asset

from assets.common import DUCKDB_POOL, table_metadata
from leaf_live.service.inbox import inbox_location, open_inbox
from leaf_live.service.store import CALL_PREFIX, store_agent_call, store_submission
from resources import LeafLiveDB

SUBMISSIONS = DynamicPartitionsDefinition(name="submissions")


@asset(
    pool=DUCKDB_POOL,
    partitions_def=SUBMISSIONS,
    group_name="participation",
    metadata=table_metadata("external_receipts"),
    description=(
        "One accepted service submission (partition = its receipt id) moved from the inbox into the track's"
        " forecast table (producer submission_service, its own slice) and external_receipts (received_at,"
        " due time, board live | retrospective)."
    ),
)
def external_submission(context: AssetExecutionContext, db: LeafLiveDB) -> MaterializeResult:
    rid = context.partition_key
    inbox = open_inbox(inbox_location(db.database, db.inbox))
    if rid.startswith(CALL_PREFIX):  # an agent-endpoint call: its llm_calls row (+ invalid rows)
        cid = rid[len(CALL_PREFIX) :]
        call = inbox.load_call(cid)
        with db.get_connection() as con:
            n = store_agent_call(con, inbox, cid)
        return MaterializeResult(
            metadata={
                "rows": n,
                "model_id": call["model_id"],
                "round_id": call["round_id"],
                "completed_at": call["completed_at"],
                "status": call["status"],
                "reason": call["reason"] or "",
            }
        )
    sub = inbox.load(rid)
    with db.get_connection() as con:
        n = store_submission(con, inbox, rid)
    return MaterializeResult(
        metadata={
            "rows": n,
            "model_id": sub["model_id"],
            "round_id": sub["round_id"],
            "received_at": sub["received_at"],
            "board": sub["board"],
        }
    )


PARTICIPATION_ASSETS = [external_submission]
