"""Which external rows count (DESIGN.md principle 8, issue 21 item 3): live-verified or retrospective.

A forecast from outside (``external/<name>``) counts on a *live* board only when the system itself saw it
before its outcome could be known: the submission service stamped its ``received_at`` strictly before the
round's due time (a macro window's close, the scheduled release, LiveMacroEval Sec. 3.4; an event task's
cutoff, LEAF Sec. 3.1) and signed a receipt for it. Everything else from outside - a file through
``leaf-live submit`` whose issue times are the submitter's own, a service submission received late with a
back-dated ``issued_at`` - is *retrospective*: stored, scored, and labelled so.

One side table, ``external_receipts``, carries per submission (one stored slice of a track's forecast table,
``producer`` + ``partition_key``) the receipt id, ``received_at``, the due time and the board; one predicate,
:func:`live_verified`, decides the board; :func:`label_boards` applies it to forecast rows for a scorer or a
board (an external row that is not live-verified is scored under ``<model_id>@retrospective``, so the two
never mix on one line of a board; ``@`` cannot occur in an external name, so the label is unambiguous).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

import polars as pl

from leaf_live.core.storage import AVAILABLE_AT, PARTITION_KEY, Table, col, register

LIVE = "live"
RETROSPECTIVE = "retrospective"
BOARDS = (LIVE, RETROSPECTIVE)
RETRO_SUFFIX = "@" + RETROSPECTIVE
EXTERNAL_PREFIX = "external/"
SERVICE_PRODUCER = "submission_service"  # the producer slice the service's submissions are stored under
TABLE = "external_receipts"

EXTERNAL_RECEIPTS = register(
    Table(
        name=TABLE,
        doc=(
            "Provenance of every external submission (issue 21): which stored slice of a track's forecast"
            " table it is, when the service received it, the round's due time, the signed receipt's id and"
            " the board its rows may enter (live = received strictly before the due time; retrospective ="
            " everything else, e.g. CLI file submissions and late service submissions)."
        ),
        grain="one row per submission (receipt_id)",
        columns=(
            PARTITION_KEY,  # = receipt_id
            col("receipt_id", "VARCHAR", "receipt id (32 hex) or file:<sha256 16 hex> for CLI files", False),
            col("source", "VARCHAR", "service | agent (an agent endpoint's answer) | file", False),
            col("team", "VARCHAR", "submitting team (NULL for CLI files)"),
            col("model_id", "VARCHAR", "external/<name>", False),
            col("track", "VARCHAR", "macro | event", False),
            col("round_id", "VARCHAR", "macro/<indicator>/<period> | event/<cutoff> (NULL for CLI files)"),
            col("table_name", "VARCHAR", "nowcasts | leaf_forecasts", False),
            col("producer", "VARCHAR", "producer slice of the forecast table holding the rows", False),
            col("slice_key", "VARCHAR", "partition_key of the forecast-table slice holding the rows", False),
            col("content_hash", "VARCHAR", "sha256 of the canonical submission content (hex)", False),
            col("n_rows", "INTEGER", "rows stored", False),
            col("received_at", "TIMESTAMPTZ", "server clock when the submission was received, UTC", False),
            col("due_at", "TIMESTAMPTZ", "round due time: window close / task cutoff, UTC (NULL for files)"),
            col("board", "VARCHAR", "live | retrospective (live_verified(received_at, due_at))", False),
            AVAILABLE_AT,  # = received_at
        ),
        partition_by=("partition_key",),
        primary_key=("receipt_id",),
    )
)


def live_verified(received_at: datetime | None, due_at: datetime | None) -> bool:
    """THE rule (principle 8): True iff the service's own ``received_at`` is strictly before ``due_at``
    (both tz-aware). Without either time (a CLI file has no service time; a round without a due time) the
    row is not live-verified. Raises :class:`ValueError` for a naive time."""
    if received_at is None or due_at is None:
        return False
    for name, t in (("received_at", received_at), ("due_at", due_at)):
        if t.tzinfo is None:
            raise ValueError(f"{name}={t!r}: naive time; give a time zone (UTC)")
    return received_at < due_at


def board_of(received_at: datetime | None, due_at: datetime | None) -> str:
    """``live`` or ``retrospective`` by :func:`live_verified`."""
    return LIVE if live_verified(received_at, due_at) else RETROSPECTIVE


def is_external(model_id: str) -> bool:
    return isinstance(model_id, str) and model_id.startswith(EXTERNAL_PREFIX)


def label_boards(rows: pl.DataFrame, receipts: pl.DataFrame | None) -> pl.DataFrame:
    """Forecast rows with each external row's ``model_id`` set to ``<model_id>@retrospective`` unless its
    slice (``producer``, ``partition_key``) has a ``live`` receipt in ``receipts`` (an
    ``external_receipts`` frame, or None = none stored). Rows of other models are unchanged; columns and row
    order are kept. What the scoring reads apply, so a headline board holds only live-verified external
    rows (and a model's retrospective rows rank on a separate, labelled line)."""
    if rows.height == 0 or "model_id" not in rows.columns:
        return rows
    live = (
        receipts.filter(pl.col("board") == LIVE)
        .select(pl.col("producer").alias("_p"), pl.col("slice_key").alias("_k"))
        .unique()
        if receipts is not None and receipts.height
        else pl.DataFrame(schema={"_p": pl.Utf8, "_k": pl.Utf8})
    )
    cols = rows.columns
    out = rows.with_row_index("_row").join(
        live.with_columns(pl.lit(True).alias("_live")),
        left_on=["producer", "partition_key"],
        right_on=["_p", "_k"],
        how="left",
    )
    ext = pl.col("model_id").str.starts_with(EXTERNAL_PREFIX)
    out = out.with_columns(
        pl.when(ext & pl.col("_live").is_null())
        .then(pl.col("model_id") + RETRO_SUFFIX)
        .otherwise(pl.col("model_id"))
        .alias("model_id")
    )
    return out.sort("_row").select(cols)


def read_receipts(con) -> pl.DataFrame | None:
    """The stored ``external_receipts`` rows (None when the database has no such table yet)."""
    if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [TABLE]).fetchall()[0][0]:
        return None
    return pl.from_arrow(con.sql(f"SELECT * FROM {TABLE}").to_arrow_table())


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no spaces, UTF-8): what hashes and signatures are computed over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def content_hash(round_id: str, model_id: str, rows: list[dict]) -> str:
    """sha256 hex of the canonical JSON of ``{"round_id", "model_id", "rows"}``: what a team can recompute
    from what it sent, and what the receipt signs."""
    return hashlib.sha256(
        canonical_json({"round_id": round_id, "model_id": model_id, "rows": rows})
    ).hexdigest()
