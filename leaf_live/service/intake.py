"""One submission through the service (issue 21 items 2, 3, 5): who may write which model, which round it
answers, the track's own checks, and the board it may enter.

Validation is the one path of ``leaf-live submit``: the JSON rows become a
:class:`leaf_live.core.submissions.SubmissionFile` (:func:`leaf_live.core.submissions.rows_submission`) and go
through :func:`leaf_live.macro.submissions.check_macro_submission` /
:func:`leaf_live.event.submissions.check_event_submission` with ``now`` = the server's ``received_at``, then
the same forecaster-contract step as a file. On top, the service checks only what a file does not carry: the
team owns the model id (``external/<team>/<name>``), and every row belongs to the round (a macro round's
indicator and period; an event round's cutoff). The board is
:func:`leaf_live.core.participation.board_of` (``received_at`` strictly before the round's due time).

Rows are stored under the producer :data:`leaf_live.core.participation.SERVICE_PRODUCER`, one slice per
submission (``partition_key`` = ``<model_id>[/<run>]#<receipt_id>``), so no submission replaces another and
a CLI file of the same model never replaces service rows.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from leaf_live.core.participation import SERVICE_PRODUCER, board_of, content_hash
from leaf_live.core.submissions import RowProblem, SubmissionError, check_model_id, rows_submission
from leaf_live.service.inbox import Accepted
from leaf_live.service.rounds import RoundError, RoundInputs, find_round

MAX_ROWS = 2000  # rows per submission


@dataclass
class Refused(Exception):
    """A refused submission: HTTP ``status``, the ``field`` and the ``reason`` (one line); nothing stored."""

    status: int
    field: str
    reason: str
    row: int | None = None

    def body(self) -> dict:
        out = {"error": {"status": self.status, "field": self.field, "reason": self.reason}}
        if self.row is not None:
            out["error"]["row"] = self.row
        return out


def receipt_id(team: str, digest: str) -> str:
    """The receipt id: 32 hex of sha256(team || content hash), the same for a replay of the same content."""
    return hashlib.sha256(f"{team}\n{digest}".encode()).hexdigest()[:32]


def check_owner(team: str, model_id) -> None:
    """``model_id`` must be ``external/<team>/<name>`` with ``<name>`` by the submission rules
    (:func:`leaf_live.core.submissions.check_model_id`). :class:`Refused` 422 for a malformed id, 403 for
    another team's."""
    if not isinstance(model_id, str):
        raise Refused(422, "model_id", "missing: give external/<team>/<name>")
    prefix = f"external/{team}/"
    if not model_id.startswith(prefix):
        raise Refused(403, "model_id", f"{model_id!r}: team {team!r} may write only {prefix}<name>")
    try:
        check_model_id("external/" + model_id[len(prefix) :])
    except ValueError as exc:
        raise Refused(422, "model_id", str(exc).split(": ", 1)[-1]) from None


def _first(exc: SubmissionError) -> Refused:
    p = exc.problems[0] if exc.problems else RowProblem(0, "rows", "", str(exc))
    rows = sorted({q.row for q in exc.problems if q.row > 0})
    more = f" ({len(rows)} of {exc.n_rows} rows rejected; first shown)" if len(rows) > 1 else ""
    return Refused(422, p.field, f"{p.reason}{more}", p.row or None)


def accept(
    inputs: RoundInputs, team: str, payload, received_at: datetime, *, max_rows: int = MAX_ROWS
) -> Accepted:
    """Check a ``POST /submissions`` body (``{"round_id", "model_id", "rows": [...]}``, rows in the track's
    file schema) from ``team`` received at ``received_at``; the :class:`Accepted` submission or
    :class:`Refused` (the first problem's field and reason, with its 1-based row)."""
    if not isinstance(payload, dict):
        raise Refused(400, "body", "not a JSON object with round_id, model_id and rows")
    unknown = sorted(set(payload) - {"round_id", "model_id", "rows"})
    if unknown:
        raise Refused(422, unknown[0], "unknown field; expected round_id, model_id, rows")
    model_id = payload.get("model_id")
    check_owner(team, model_id)
    round_id, rows = payload.get("round_id"), payload.get("rows")
    if not isinstance(round_id, str):
        raise Refused(422, "round_id", "missing: give a round id from GET /rounds")
    try:
        rnd = find_round(inputs, round_id)
    except RoundError as exc:
        raise Refused(404, "round_id", str(exc)) from None
    if not isinstance(rows, list) or not rows:
        raise Refused(422, "rows", "missing or empty: give a non-empty list of row objects")
    if len(rows) > max_rows:
        raise Refused(413, "rows", f"{len(rows)} rows: at most {max_rows} per submission")
    digest = content_hash(round_id, model_id, rows)
    rid = receipt_id(team, digest)
    name = f"submission {rid}"
    try:
        if rnd.track == "macro":
            from leaf_live.macro import submissions as track

            sub = rows_submission(name, rows, required=track.REQUIRED, optional=track.OPTIONAL, digest=digest)
            off = [
                RowProblem(
                    i, f, r.get(f), f"not this round's target ({rnd.indicator_id} {rnd.reference_period})"
                )
                for i, r in enumerate(sub.rows, 1)
                for f, want in (
                    ("indicator_id", rnd.indicator_id),
                    ("reference_period", str(rnd.reference_period)),
                )
                if str(r.get(f)).strip() != want
            ]
            if off:
                raise SubmissionError(name, off, n_rows=len(rows), csv_lines=False)
            checked = track.check_macro_submission(sub, model_id, inputs.windows, now=received_at)
            frame = track.submitted_nowcasts(model_id, checked, inputs.windows)
            # the one answered-at rule: the service can prove the answer existed from received_at only, so a
            # back-dated issued_at earns no betting hours or horizon credit before the server saw it
            frame = frame.with_columns(
                pl.max_horizontal(
                    pl.col("issued_at"),
                    pl.col("answered_at"),
                    pl.lit(received_at).cast(frame["issued_at"].dtype),
                ).alias("answered_at")
            )
            runs = frame["partition_key"].unique().to_list()
            if len(runs) > 1:
                raise Refused(422, "run", f"{len(runs)} run labels: one run per service submission")
            keys = [
                f"{pk}|{iid}|{per}|{t.isoformat()}"
                for pk, iid, per, t in frame.select(
                    "partition_key", "indicator_id", "reference_period", "issued_at"
                ).iter_rows()
            ]
            table = "nowcasts"
        else:
            from leaf_live.event import submissions as track

            sub = rows_submission(name, rows, required=track.REQUIRED, optional=track.OPTIONAL, digest=digest)
            tasks = inputs.tasks
            cut = dict(tasks.select("task_id", "cutoff").iter_rows())
            off = [
                RowProblem(
                    i,
                    "task_id",
                    r.get("task_id"),
                    f"not a task of this round (cutoff {rnd.due_at:%Y-%m-%dT%H:%M:%SZ})",
                )
                for i, r in enumerate(sub.rows, 1)
                if r.get("task_id") in cut and cut[r.get("task_id")] != rnd.cutoff
            ]
            if off:
                raise SubmissionError(name, off, n_rows=len(rows), csv_lines=False)
            checked = track.check_event_submission(sub, model_id, tasks, now=received_at)
            frame = track.submitted_forecasts(model_id, checked, tasks)
            keys = frame["task_id"].to_list()
            table = track.TABLE
    except SubmissionError as exc:
        raise _first(exc) from None
    base = frame["partition_key"][0] if rnd.track == "macro" else model_id
    pk = f"{base}#{rid}"
    frame = frame.with_columns(pl.lit(SERVICE_PRODUCER).alias("producer"), pl.lit(pk).alias("partition_key"))
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return Accepted(
        receipt_id=rid,
        team=team,
        model_id=model_id,
        track=rnd.track,
        round_id=round_id,
        content_hash=digest,
        received_at=received_at,
        due_at=rnd.due_at,
        board=board_of(received_at, rnd.due_at),
        n_rows=frame.height,
        table_name=table,
        producer=SERVICE_PRODUCER,
        partition_key=pk,
        rows=buf.getvalue(),
        keys=keys,
    )
