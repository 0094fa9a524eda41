"""Moving accepted submissions from the inbox into the DuckDB store (what the Dagster sensor's asset runs,
``sensors/participation.py``).

Each submission is its own slice: its rows replace the slice ``(producer, partition_key)`` of the track's
forecast table and its provenance replaces its ``external_receipts`` row, both in one transaction
(:func:`leaf_live.core.storage.replace_partitions`); only then is it marked stored in the inbox. Storing the
same submission again (a crash before the inbox mark, a rerun of its partition) writes the same rows once.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import polars as pl

from leaf_live.core import storage
from leaf_live.core.participation import TABLE as RECEIPTS
from leaf_live.service.inbox import Inbox


def _ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


def receipt_row(sub: dict, source: str = "service") -> pl.DataFrame:
    """The ``external_receipts`` row of an inbox submission (:meth:`Inbox.load`); ``source`` = ``service``
    (posted) or ``agent`` (an agent endpoint's answer)."""
    received = _ts(sub["received_at"])
    frame = pl.DataFrame(
        [
            {
                "partition_key": sub["receipt_id"],
                "receipt_id": sub["receipt_id"],
                "source": source,
                "team": sub["team"],
                "model_id": sub["model_id"],
                "track": sub["track"],
                "round_id": sub["round_id"],
                "table_name": sub["table_name"],
                "producer": sub["producer"],
                "slice_key": sub["partition_key"],
                "content_hash": sub["content_hash"],
                "n_rows": sub["n_rows"],
                "received_at": received,
                "due_at": _ts(sub["due_at"]),
                "board": sub["board"],
                "available_at": received,
            }
        ]
    )
    return storage.conform(RECEIPTS, frame.select(storage.get_table(RECEIPTS).column_names))


def write_submission(con, sub: dict, frame: pl.DataFrame, source: str = "service") -> int:
    """Replace a submission's slice ``(producer, partition_key)`` of its table (``sub["table_name"]``) with
    ``frame`` and its ``external_receipts`` row (:func:`receipt_row`) in ONE transaction
    (``storage.replace_partitions``): a crash never leaves a receipt without its rows, nor rows without
    their receipt. Returns the rows written. Raises :class:`leaf_live.core.storage.StorageError`."""
    table = storage.get_table(sub["table_name"])
    where = {"producer": sub["producer"], "partition_key": sub["partition_key"]}
    where = {k: v for k, v in where.items() if k in table.partition_by}
    receipt = storage.Slice(RECEIPTS, receipt_row(sub, source), {"partition_key": sub["receipt_id"]})
    _, n = storage.replace_partitions(con, [receipt, storage.Slice(sub["table_name"], frame, where)])
    return n


def store_submission(con, inbox: Inbox, receipt_id: str) -> int:
    """Write one inbox submission into the store (module doc); returns its row count. Raises
    :class:`leaf_live.service.inbox.InboxError` for an unknown id and
    :class:`leaf_live.core.storage.StorageError` when its rows no longer fit the table."""
    sub = inbox.load(receipt_id)
    frame = pl.read_parquet(io.BytesIO(sub["rows"]))
    n = write_submission(con, sub, frame, inbox.source_of(receipt_id))
    inbox.mark_stored(receipt_id, datetime.now(UTC))
    return n


CALL_PREFIX = "agent-"  # dynamic partition key of an agent call: agent-<call_id>


def store_agent_call(con, inbox: Inbox, call_id: str) -> int:
    """Write one finished agent-endpoint call into the store: its ``llm_calls`` row (slice
    ``agent:<call_id>``) and, when its answer was invalid, the invalid forecast rows (slice ``(producer,
    <model_id>#<call_id>)``); a valid answer's rows are its submission's (:func:`store_submission`). Returns
    the rows written. Raises :class:`leaf_live.service.inbox.InboxError` for an unknown or unfinished call."""
    from leaf_live.service.inbox import InboxError

    call = inbox.load_call(call_id)
    if call["record"] is None:
        raise InboxError(f"agent call {call_id!r}: not finished ({call['status']})")
    slices = [
        storage.Slice(
            "llm_calls", pl.read_parquet(io.BytesIO(call["record"])), {"partition_key": f"agent:{call_id}"}
        )
    ]
    if call["invalid_rows"] is not None:
        frame = pl.read_parquet(io.BytesIO(call["invalid_rows"]))
        where = {"producer": frame["producer"][0], "partition_key": frame["partition_key"][0]}
        table = storage.get_table(call["table_name"])
        where = {k: v for k, v in where.items() if k in table.partition_by}
        slices.append(storage.Slice(call["table_name"], frame, where))
    n = sum(storage.replace_partitions(con, slices))  # the call and its invalid rows in one transaction
    inbox.mark_call_stored(call_id, datetime.now(UTC))
    return n


def drain(con, inbox: Inbox, limit: int = 1000) -> dict[str, int]:
    """Store every pending submission and finished agent call (oldest first): receipt id (or
    ``agent-<call_id>``) -> rows written."""
    out = {rid: store_submission(con, inbox, rid) for rid in inbox.pending(limit)}
    for cid in inbox.pending_calls(limit):
        out[CALL_PREFIX + cid] = store_agent_call(con, inbox, cid)
    return out
