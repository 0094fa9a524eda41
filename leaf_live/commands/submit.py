"""``leaf-live submit FILE --model external/NAME [--track macro|event] [--db PATH] [--no-score]`` and
``leaf-live rescore [--track macro] [--db PATH]``.

``submit`` stores forecasts made elsewhere (CSV or Parquet; the schema per track is in
``leaf_live.macro.submissions`` and ``leaf_live.event.submissions`` and the README) as the model's own
producer slice of the track's forecast table (producer ``external_submissions``; ``nowcasts`` partition
``<model>`` or ``<model>/<run>``, ``leaf_forecasts`` partition ``<model>``). Every row is checked first; a
file with any bad row is refused with each row named and nothing stored. An accepted file replaces the model's
previous submission in one transaction (submitting the same file twice leaves the same rows). Then it rescores
the track (the track's scoring job, ``sensors/scores.py``, in the project's Dagster instance, with the run
config of the scores' last materialization), so the model is on the same boards as every other; ``--no-score``
skips that and prints the command that does it (``leaf-live rescore``)."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from leaf_live.commands import participation
from leaf_live.commands.common import CommandError, check_writable_db, db_path, query_frame, read_only, render
from leaf_live.core import storage
from leaf_live.core.submissions import PRODUCER, check_model_id, file_format, read_submission

TRACKS = ("macro", "event")
TASK_COLUMNS = (
    "task_id",
    "domain",
    "task_kind",
    "horizon",
    "horizon_steps",
    "frequency",
    "cutoff",
    "target_times",
    "last_value",
    "bundle",
    "bundle_hash",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "submit", help="store forecasts made elsewhere (CSV or Parquet) as external/<name> and score them"
    )
    s.add_argument(
        "file", help="CSV (.csv) or Parquet (.parquet) file in the track's submission schema (README)"
    )
    s.add_argument(
        "--model", required=True, help="model id external/<name> (lower-case letters, digits, . _ -)"
    )
    s.add_argument(
        "--track",
        choices=TRACKS,
        default="macro",
        help="macro nowcasts (default) or event-track task forecasts",
    )
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument(
        "--no-score", action="store_true", help="store only; print the command that rescores the track"
    )
    s.set_defaults(func=cmd_submit)
    r = sub.add_parser("rescore", help="rescore every model of a track from the stored forecasts")
    r.add_argument("--track", choices=TRACKS, default="macro", help="macro (default) or event")
    r.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    r.set_defaults(func=cmd_rescore)


def cmd_submit(args: argparse.Namespace) -> int:
    try:
        model = check_model_id(args.model)
        fmt = file_format(args.file)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    path = Path(args.file)
    if not path.exists():
        raise CommandError(f"{path}: no such file")
    if not path.is_file():
        raise CommandError(f"{path}: not a file")
    db = check_writable_db(db_path(args.db))
    if args.track == "macro":
        from leaf_live.macro import submissions as track
    else:
        from leaf_live.event import submissions as track
    if not db.is_file():
        raise CommandError(f"--db {db}: no database file (run `leaf-live run` first)")
    with participation.writing(db):  # one leaf-live writer per database while storing and rescoring
        sub = read_submission(path, required=track.REQUIRED, optional=track.OPTIONAL)
        now = datetime.now(UTC)
        con = storage.connect(db)
        try:
            if args.track == "macro":
                written, replaced, slices = _store_macro(con, sub, model, now, db)
                what = f"nowcasts in {slices} run slice{'s' if slices != 1 else ''} of nowcasts"
            else:
                written, replaced = _store_event(con, sub, model, now, db)
                what = "task forecasts in leaf_forecasts"
        finally:
            con.close()
        print(
            f"leaf-live submit: {path} ({fmt}, sha256 {sub.sha256[:16]}): {written} {what} stored as {model} "
            f"(producer {PRODUCER}) in {db}; replaced {replaced} rows of its previous submission",
            flush=True,
        )
        if args.no_score:
            print(f"scores not updated: run `leaf-live rescore --track {args.track} --db {db}`")
            return 0
        if not rescore(args.track, db):
            return 1
        _print_model_board(args.track, db, model)
        return 0


def _store_macro(con, sub, model: str, now: datetime, db: Path) -> tuple[int, int, int]:
    from leaf_live.macro.submissions import check_macro_submission, submitted_nowcasts

    windows = storage.read_table(con, "nowcast_windows")
    if windows.height == 0:
        raise CommandError(f"{db} holds no nowcast windows (no release is stored): run `leaf-live run` first")
    rows = check_macro_submission(sub, model, windows, now=now)
    frame = submitted_nowcasts(model, rows, windows)
    old = dict(
        con.execute(
            "SELECT partition_key, count(*) FROM nowcasts WHERE producer = ? AND (partition_key = ? OR "
            "starts_with(partition_key, ?)) GROUP BY 1",
            [PRODUCER, model, model + "/"],
        ).fetchall()
    )
    keys = sorted(set(old) | set(frame["partition_key"].unique().to_list()))
    where = {"producer": PRODUCER, "partition_key": keys}
    written = write_file_submission(con, "macro", "nowcasts", where, model, frame, sub.sha256, now)
    return written, sum(old.values()), frame["partition_key"].n_unique()


def _store_event(con, sub, model: str, now: datetime, db: Path) -> tuple[int, int]:
    from leaf_live.event.submissions import TABLE, check_event_submission, submitted_forecasts

    cols = ", ".join(TASK_COLUMNS)
    tasks = query_frame(con, f"SELECT {cols} FROM forecast_tasks ORDER BY task_id")
    if tasks.height == 0:
        raise CommandError(f"{db} holds no event-track forecast tasks: materialize the event track first")
    rows = check_event_submission(sub, model, tasks, now=now)
    frame = submitted_forecasts(model, rows, tasks)
    sliced = "producer" in storage.get_table(TABLE).partition_by
    where = {"producer": PRODUCER, "partition_key": model} if sliced else {"partition_key": model}
    cond = " AND ".join(f'"{k}" = ?' for k in where)
    replaced = con.execute(f"SELECT count(*) FROM {TABLE} WHERE {cond}", list(where.values())).fetchall()[0][
        0
    ]
    written = write_file_submission(con, "event", TABLE, where, model, frame, sub.sha256, now)
    return written, replaced


def write_file_submission(
    con, track: str, table: str, where: dict, model: str, frame, sha256: str, now: datetime
) -> int:
    """Replace the slice ``where`` of ``table`` with a file submission's rows ``frame`` and its
    ``external_receipts`` (:func:`file_receipts_slice`) in ONE transaction
    (``storage.replace_partitions``): a killed ``submit`` leaves neither rows without their receipts nor
    receipts without their rows (issue 17). Returns the rows written to ``table``."""
    written, _ = storage.replace_partitions(
        con,
        [storage.Slice(table, frame, where), file_receipts_slice(track, table, model, frame, sha256, now)],
    )
    return written


def file_receipts_slice(
    track: str, table: str, model: str, frame, sha256: str, now: datetime
) -> storage.Slice:
    """The ``external_receipts`` slice of a file submission (issue 21), written with its rows in one
    transaction: one row per stored slice, board ``retrospective`` (a file's issue times are the submitter's
    own), receipt id ``file:<sha256 16 hex>``; it replaces the model's previous file rows (``partition_key``
    = ``file:<model>``)."""
    import polars as pl

    from leaf_live.core.participation import RETROSPECTIVE
    from leaf_live.core.participation import TABLE as RECEIPTS

    counts = frame.group_by("partition_key").len().sort("partition_key").rows()
    rows = pl.DataFrame(
        [
            {
                "partition_key": f"file:{model}",
                "receipt_id": f"file:{sha256[:16]}" + (f"#{k}" if len(counts) > 1 else ""),
                "source": "file",
                "team": None,
                "model_id": model,
                "track": track,
                "round_id": None,
                "table_name": table,
                "producer": PRODUCER,
                "slice_key": k,
                "content_hash": sha256,
                "n_rows": n,
                "received_at": now,
                "due_at": None,
                "board": RETROSPECTIVE,
                "available_at": now,
            }
            for k, n in counts
        ],
        schema=storage.polars_schema(RECEIPTS),
    )
    return storage.Slice(RECEIPTS, rows, {"partition_key": f"file:{model}"})


def _last_run_config(instance, job) -> dict:
    """Each op's config from the run that last materialized one of the job's assets (the settings the stored
    boards were scored with: modes, bootstrap draws, seed), so a rescore keeps them."""
    ops: dict = {}
    names = {n.name for n in job.graph.nodes}
    for key in sorted(job.asset_layer.executable_asset_keys, key=lambda k: k.to_user_string()):
        ev = instance.get_latest_materialization_event(key)
        run = instance.get_run_by_id(ev.run_id) if ev is not None else None
        for op, cfg in ((run.run_config or {}).get("ops", {}) if run is not None else {}).items():
            if op in names:
                ops.setdefault(op, cfg)
    return {"ops": ops} if ops else {}


def rescore(track: str, db: Path) -> bool:
    """Run the track's scoring job (``sensors.scores.SCORE_JOBS``) on ``db`` in the project's Dagster instance
    with the last scoring run config; print the run and its check tally; False (after printing why) on
    failure."""
    from leaf_live.commands.run_report import execute_run, report_failures
    from leaf_live.definitions import build_definitions
    from resources import default_resources
    from resources.instance import instance_for
    from sensors.scores import SCORE_JOBS

    if track not in SCORE_JOBS:
        raise CommandError(f"the {track} track has no scoring job in this build")
    t0 = time.monotonic()
    instance = instance_for(db)
    job = build_definitions(default_resources(db=db)).resolve_job_def(SCORE_JOBS[track].name)
    config = _last_run_config(instance, job)
    config["loggers"] = {"console": {"config": {"log_level": "WARNING"}}}
    result = execute_run(job, run_config=config, instance=instance, hide_stdout=True)
    checks = result.get_asset_check_evaluations()
    failed = [e for e in checks if not e.passed]
    if report_failures(result):
        print(f"leaf-live: rescoring the {track} track FAILED (run {result.run_id})", file=sys.stderr)
        return False
    print(
        f"rescored the {track} track: job {job.name}, run {result.run_id} in the Dagster instance,"
        f" {time.monotonic() - t0:.1f} s; asset checks: {len(checks) - len(failed)} passed, {len(failed)}"
        " failed",
        flush=True,
    )
    return True


def _print_model_board(track: str, db: Path, model: str) -> None:
    from leaf_live.commands.scores import event_board, macro_board
    from leaf_live.core.participation import RETRO_SUFFIX

    model = model + RETRO_SUFFIX  # a file's rows rank on the retrospective board (issue 21)
    con = read_only(db)
    try:
        if track == "macro":
            board = (
                macro_board(con, scope="overall", models=[model])
                if _scored(con, "livemacro_scores", model)
                else None
            )
        else:
            board = event_board(con, models=[model]) if _scored(con, "leaf_scores", model) else None
    finally:
        con.close()
    if board is None or board.height == 0:
        print(f"{model} has no score yet (none of its forecasts is on a scored board)")
        return
    what = (
        "overall scope, headline fits, terminal horizon" if track == "macro" else "every domain and horizon"
    )
    print(
        f"{model} on the {track} boards ({what}; `leaf-live scores --track {track} --model {model}` for all):"
    )
    if track == "event":
        from leaf_live.event.rankings import render_event_boards

        print(render_event_boards(board, headline=False))  # the stored event_board rows of the model
        return
    print(render(board, "table"))


def _scored(con, table: str, model: str) -> bool:
    return con.execute(f"SELECT count(*) FROM {table} WHERE model_id = ?", [model]).fetchall()[0][0] > 0


def cmd_rescore(args: argparse.Namespace) -> int:
    db = check_writable_db(db_path(args.db))
    if not db.is_file():
        raise CommandError(f"--db {db}: no database file (run `leaf-live run` first)")
    with participation.writing(db):
        return 0 if rescore(args.track, db) else 1
