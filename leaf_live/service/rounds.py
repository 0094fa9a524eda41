"""Open rounds (issue 21 item 1): what an outside team may forecast now, by when, and from what.

* a **macro round** is one open nowcast window (:func:`leaf_live.macro.windows.open_windows`: ``opens_at <=
  at < closes_at``), id ``macro/<indicator_id>/<reference_period>``, due at the window's close (the scheduled
  release, LiveMacroEval Sec. 3.4); its bundle is the window, the indicator's catalog unit and the look-back
  of stored first releases knowable at ``at`` (``available_at <= at``);
* an **event round** is one upcoming task cutoff (``cutoff > at``) of the stored ``forecast_tasks``, id
  ``event/<cutoff YYYY-MM-DDTHH:MM:SSZ>``, due at the cutoff; its bundle is each task with its frozen input
  bundle (series look-back, fact-checked events, market price with its age, as the task builder froze them)
  and ``bundle_hash``.

The rules are the stored windows and tasks: nothing here recomputes a window or a bundle.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from leaf_live.macro.catalog import get_indicator
from leaf_live.macro.windows import open_windows

LOOKBACK = 24  # first releases of the indicator in a macro round's bundle
TASK_LIGHT = ("task_id", "domain", "target_id", "task_kind", "horizon", "horizon_steps", "frequency")
TASK_COLUMNS = (*TASK_LIGHT, "cutoff", "target_times", "last_value", "bundle", "bundle_hash")


class RoundError(ValueError):
    """An unknown or malformed round id; the message names it."""


@dataclass
class RoundInputs:
    """What rounds are built from: the stored ``nowcast_windows``, ``releases`` (indicator_id,
    reference_period, release_at, actual, available_at) and ``forecast_tasks`` (:data:`TASK_COLUMNS`)."""

    windows: pl.DataFrame
    releases: pl.DataFrame
    tasks: pl.DataFrame


def _frame(con, sql: str, params: list | None = None) -> pl.DataFrame:
    return pl.from_arrow(con.sql(sql, params=params).to_arrow_table())


def load_inputs(con) -> RoundInputs:
    """Read the round inputs from a DuckDB connection (read-only is enough)."""
    return RoundInputs(
        windows=_frame(con, "SELECT * FROM nowcast_windows ORDER BY closes_at, indicator_id"),
        releases=_frame(
            con,
            "SELECT indicator_id, reference_period, release_at, actual, available_at FROM releases"
            " ORDER BY indicator_id, reference_period",
        ),
        tasks=_frame(con, f"SELECT {', '.join(TASK_COLUMNS)} FROM forecast_tasks ORDER BY cutoff, task_id"),
    )


INPUT_FRAMES = ("windows", "releases", "tasks")


def publish_inputs(inbox, inputs: RoundInputs, read_at: datetime) -> bool:
    """Keep ``inputs`` (read from the store at ``read_at``, tz-aware) in the inbox
    (:meth:`leaf_live.service.inbox.SqlInbox.put_round_inputs`, one Parquet file per frame), so a service that
    starts while a writer holds the DuckDB file reads its rounds from there; True when kept (False: the inbox
    holds a later read)."""
    blobs = {}
    for name in INPUT_FRAMES:
        buf = io.BytesIO()
        getattr(inputs, name).write_parquet(buf)
        blobs[name] = buf.getvalue()
    return inbox.put_round_inputs(blobs, read_at)


def published_inputs(inbox) -> tuple[RoundInputs, datetime] | None:
    """The round inputs last kept in the inbox with the time they were read from the store, or None."""
    got = inbox.round_inputs()
    if got is None:
        return None
    blobs, read_at = got
    return RoundInputs(**{n: pl.read_parquet(io.BytesIO(blobs[n])) for n in INPUT_FRAMES}), read_at


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def macro_round_id(indicator_id: str, reference_period: date) -> str:
    return f"macro/{indicator_id}/{reference_period.isoformat()}"


def event_round_id(cutoff: datetime) -> str:
    return f"event/{_iso(cutoff)}"


def list_rounds(inputs: RoundInputs, at: datetime) -> pl.DataFrame:
    """Every open round at ``at`` (tz-aware): ``round_id, track, opens_at, due_at, n_targets``, by due time.
    Macro: the open windows; event: the distinct upcoming cutoffs (``n_targets`` = its tasks)."""
    if at.tzinfo is None:
        raise RoundError(f"at={at!r}: give a time zone (UTC)")
    rows: list[dict[str, Any]] = []
    for w in open_windows(inputs.windows, at).iter_rows(named=True):
        rows.append(
            {
                "round_id": macro_round_id(w["indicator_id"], w["reference_period"]),
                "track": "macro",
                "opens_at": w["opens_at"],
                "due_at": w["closes_at"],
                "n_targets": 1,
            }
        )
    up = inputs.tasks.filter(pl.col("cutoff") > at).group_by("cutoff").agg(pl.len().alias("n"))
    for cutoff, n in up.sort("cutoff").iter_rows():
        rows.append(
            {
                "round_id": event_round_id(cutoff),
                "track": "event",
                "opens_at": None,
                "due_at": cutoff,
                "n_targets": n,
            }
        )
    schema = {
        "round_id": pl.Utf8,
        "track": pl.Utf8,
        "opens_at": pl.Datetime("us", "UTC"),
        "due_at": pl.Datetime("us", "UTC"),
        "n_targets": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema).sort("due_at", "round_id")


@dataclass
class Round:
    """One round: ``round_id``, ``track``, ``due_at`` and (macro) the window key or (event) the cutoff."""

    round_id: str
    track: str
    due_at: datetime
    opens_at: datetime | None = None
    indicator_id: str | None = None
    reference_period: date | None = None
    cutoff: datetime | None = None


def find_round(inputs: RoundInputs, round_id: str) -> Round:
    """The round ``round_id`` (open or closed: a closed round still takes late, retrospective submissions).
    Raises :class:`RoundError` naming the id for a malformed or unknown one."""
    parts = round_id.split("/") if isinstance(round_id, str) else []
    if len(parts) == 3 and parts[0] == "macro":
        try:
            period = date.fromisoformat(parts[2])
        except ValueError:
            raise RoundError(f"round {round_id!r}: reference period {parts[2]!r} is not YYYY-MM-DD") from None
        w = inputs.windows.filter(
            (pl.col("indicator_id") == parts[1]) & (pl.col("reference_period") == period)
        )
        if w.height == 0:
            raise RoundError(f"round {round_id!r}: no nowcast window of {parts[1]} for {period} in the store")
        r = w.row(0, named=True)
        return Round(round_id, "macro", r["closes_at"], r["opens_at"], parts[1], period)
    if len(parts) == 2 and parts[0] == "event":
        try:
            cutoff = datetime.fromisoformat(parts[1])
        except ValueError:
            raise RoundError(f"round {round_id!r}: cutoff {parts[1]!r} is not an ISO 8601 time") from None
        if cutoff.tzinfo is None:
            raise RoundError(f"round {round_id!r}: cutoff without a time zone (end it with Z)")
        if inputs.tasks.filter(pl.col("cutoff") == cutoff).height == 0:
            raise RoundError(f"round {round_id!r}: no forecast task has this cutoff in the store")
        return Round(round_id, "event", cutoff.astimezone(UTC), cutoff=cutoff.astimezone(UTC))
    raise RoundError(
        f"round {round_id!r}: expected macro/<indicator_id>/<YYYY-MM-DD> or event/<YYYY-MM-DDTHH:MM:SSZ>"
    )


def round_bundle(inputs: RoundInputs, round_id: str, at: datetime) -> tuple[dict, dict[str, pl.DataFrame]]:
    """The frozen inputs of a round as ``(meta, frames)``: ``meta`` JSON-able (round id, track, due time, what
    to submit), ``frames`` the tables (macro: ``window``, ``lookback``; event: ``tasks`` with each task's
    frozen ``bundle`` text and ``bundle_hash``). Macro look-back rows are those knowable at ``at``
    (``available_at <= at``), at most :data:`LOOKBACK`. Raises :class:`RoundError`."""
    r = find_round(inputs, round_id)
    meta: dict[str, Any] = {
        "round_id": r.round_id,
        "track": r.track,
        "due_at": _iso(r.due_at),
        "as_of": _iso(at),
    }
    if r.track == "macro":
        ind = get_indicator(r.indicator_id)
        window = inputs.windows.filter(
            (pl.col("indicator_id") == r.indicator_id) & (pl.col("reference_period") == r.reference_period)
        )
        lookback = (
            inputs.releases.filter(
                (pl.col("indicator_id") == r.indicator_id) & (pl.col("available_at") <= at)
            )
            .sort("reference_period")
            .tail(LOOKBACK)
        )
        meta.update(
            {
                "opens_at": _iso(r.opens_at),
                "indicator_id": r.indicator_id,
                "reference_period": r.reference_period.isoformat(),
                "unit": ind.unit,
                "submission_columns": ["indicator_id", "reference_period", "issued_at", "value", "unit"],
                "submit_before": "issued_at and received strictly before due_at (the scheduled release)",
            }
        )
        return meta, {"window": window, "lookback": lookback}
    tasks = inputs.tasks.filter(pl.col("cutoff") == r.cutoff)
    meta.update(
        {
            "cutoff": _iso(r.cutoff),
            "n_tasks": tasks.height,
            "submission_columns": [
                "task_id",
                "issued_at",
                "point|predicted_class|probability",
                "[quantiles]",
            ],
            "submit_before": "issued_at at or before the cutoff, received strictly before it",
        }
    )
    return meta, {"tasks": tasks}


def rows_json(frame: pl.DataFrame) -> list[dict]:
    out = []
    for row in frame.iter_rows(named=True):
        d = {}
        for k, v in row.items():
            if isinstance(v, datetime):
                v = _iso(v)
            elif isinstance(v, date):
                v = v.isoformat()
            elif isinstance(v, list):
                v = [_iso(x) if isinstance(x, datetime) else x for x in v]
            elif k == "bundle" and isinstance(v, str):
                v = json.loads(v)
            d[k] = v
        out.append(d)
    return out


def bundle_json(meta: dict, frames: dict[str, pl.DataFrame]) -> dict:
    """The round as one JSON document: ``meta`` plus each frame as a list of row objects (event task
    bundles parsed from their frozen text; ``bundle_hash`` is the sha256 of that text)."""
    return {**meta, **{name: rows_json(f) for name, f in frames.items()}}


def export_round(meta: dict, frames: dict[str, pl.DataFrame], out_dir: Path) -> list[Path]:
    """Write ``round.json`` (:func:`bundle_json`) and one ``<name>.parquet`` per frame into ``out_dir``
    (created); returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "round.json"]
    paths[0].write_text(json.dumps(bundle_json(meta, frames), indent=1, sort_keys=True) + "\n")
    for name, f in frames.items():
        p = out_dir / f"{name}.parquet"
        f.write_parquet(p)
        paths.append(p)
    return paths
