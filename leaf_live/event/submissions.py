"""External event-track forecasts (``external/<name>``) of stored ``forecast_tasks`` from a CSV or Parquet
file, checked row by row and turned into ``leaf_forecasts`` rows through the forecaster contract (issue 12
item 5; DESIGN.md principle 5).

File schema (one row per task; :data:`REQUIRED` columns, the :data:`OPTIONAL` ones each task kind needs):

| column | meaning |
|---|---|
| ``task_id`` | ``forecast_tasks.task_id`` (``domain/target/kind/horizon/cutoff``) |
| ``issued_at`` | when the forecast was made, ISO 8601 with an offset; at or before the task's cutoff |
| ``point`` | ``series`` tasks: one value per target time of the task (``forecast_tasks.target_times``), a
JSON array in CSV (``[101.2, 101.9]``) or a list of doubles in Parquet, in the target's unit
(``leaf_targets.unit``: USD, degC, MW, ...) |
| ``quantiles`` | ``series`` tasks, optional: a JSON object of levels ``0.025``, ``0.1``, ``0.9``, ``0.975``
to lists as long as ``point`` (the baselines' format) |
| ``predicted_class`` | ``trend3`` / ``trend5`` tasks: one of the task's classes (App. C.1: Down, Neutral, Up;
Strong Down ... Strong Up) |
| ``probability`` | ``event`` tasks: P(YES) in [0, 1] |
| ``bundle_hash`` | optional: the task's ``bundle_hash``, if the forecaster read the stored bundle (checked
when given) |

Rules (every failing row is named with its reason, and nothing is stored):

* the task exists in the store; one row per task;
* ``issued_at`` is not after the task's cutoff (the instant its frozen inputs end): a forecast issued later
  may have seen what it forecasts; nor later than the submission itself;
* the row carries exactly the fields of its task kind (a probability on a series task is refused, not
ignored);
* numbers are finite; a probability lies in [0, 1] (a percentage is named as such); a series point lies within
a
  factor of :data:`MAGNITUDE_FACTOR` of the task's last value for prices and load (the scale check of the
  macro guardrails for quantities without a catalog range: cents for dollars, kW for MW), and for temperatures
  within [-90, 60] degC and :data:`MAX_TEMP_JUMP_C` of the last value (a Fahrenheit answer); quantiles do not
  cross (0.025 <= 0.1 <= point <= 0.9 <= 0.975 at every step).

Accepted rows are valid, carry the task's ``bundle_hash`` (the scorer scores a forecast only against the
bundle its task froze) and ``available_at = issued_at``.
"""

from __future__ import annotations

import json
from datetime import datetime

import polars as pl

from leaf_live.core.forecaster import run_forecasters
from leaf_live.core.pit import require_columns
from leaf_live.core.storage import conform, empty_frame, polars_schema
from leaf_live.core.submissions import (
    PRODUCER,
    RowChecker,
    SubmissionFile,
    optional,
    parse_number,
    parse_number_list,
    parse_text,
    parse_timestamp,
)
from leaf_live.event.catalog import CLASSES_3, CLASSES_5

TABLE = "leaf_forecasts"
REQUIRED = ("task_id", "issued_at")
OPTIONAL = ("point", "quantiles", "predicted_class", "probability", "bundle_hash")
KIND_FIELDS = {
    "series": ("point", "quantiles"),
    "trend3": ("predicted_class",),
    "trend5": ("predicted_class",),
    "event": ("probability",),
}
KIND_REQUIRED = {
    "series": "point",
    "trend3": "predicted_class",
    "trend5": "predicted_class",
    "event": "probability",
}
QUANTILE_KEYS = ("0.025", "0.1", "0.9", "0.975")
MAGNITUDE_FACTOR = 5.0
MAX_TEMP_JUMP_C = 45.0
TEMP_RANGE_C = (-90.0, 60.0)


def _quantiles(v, n: int) -> dict[str, list[float]]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise ValueError(
                'not a JSON object of quantile lists (e.g. {"0.1": [...], "0.9": [...]})'
            ) from None
    if not isinstance(v, dict) or not v:
        raise ValueError("not a non-empty object of quantile levels")
    out: dict[str, list[float]] = {}
    for k, vals in v.items():
        try:
            level = float(k)
        except (TypeError, ValueError):
            level = None
        key = next((q for q in QUANTILE_KEYS if level is not None and float(q) == level), None)
        if key is None:
            raise ValueError(f"level {k!r}: expected one of {', '.join(QUANTILE_KEYS)}")
        if key in out:
            raise ValueError(f"level {k!r} given twice")
        try:
            xs = parse_number_list(vals)
        except ValueError as exc:
            raise ValueError(f"level {k}: {exc}") from None
        if len(xs) != n:
            raise ValueError(f"level {k}: {len(xs)} values, the point has {n}")
        out[key] = xs
    return dict(sorted(out.items(), key=lambda kv: float(kv[0])))


def _magnitude(domain: str, last: float | None, xs: list[float]) -> str | None:
    """Why a path looks like the wrong unit or scale (module doc), or None."""
    if domain == "weather":
        lo, hi = TEMP_RANGE_C
        for x in xs:
            if not lo <= x <= hi:
                return f"wrong magnitude: {x:g} degC outside [{lo:g}, {hi:g}] (Fahrenheit?)"
            if last is not None and abs(x - last) > MAX_TEMP_JUMP_C:
                return (
                    f"wrong magnitude: {x:g} degC is {abs(x - last):g} degC from the last value {last:g}"
                    " (Fahrenheit?)"
                )
        return None
    if last is None or not last > 0:
        return None
    for x in xs:
        ratio = x / last
        if not 1 / MAGNITUDE_FACTOR <= ratio <= MAGNITUDE_FACTOR:
            hint = next(
                (
                    f" (x{f:g} off: {w})"
                    for f, w in ((100, "cents for dollars?"), (1000, "kilo/mega units?"))
                    if 1 / MAGNITUDE_FACTOR <= ratio / f <= MAGNITUDE_FACTOR
                    or 1 / MAGNITUDE_FACTOR <= ratio * f <= MAGNITUDE_FACTOR
                ),
                "",
            )
            return (
                f"wrong magnitude: {x:g} is {ratio:.3g} x the task's last value {last:g}, outside "
                f"[1/{MAGNITUDE_FACTOR:g}, {MAGNITUDE_FACTOR:g}]{hint}"
            )
    return None


def check_event_submission(
    sub: SubmissionFile, model_id: str, tasks: pl.DataFrame, *, now: datetime
) -> pl.DataFrame:
    """The ``leaf_forecasts`` rows (``partition_key`` = ``model_id``, producer left to the writer) of a read
    submission file, or :class:`leaf_live.core.submissions.SubmissionError` listing every rejected row (module
    doc for the rules). ``tasks``: the store's ``forecast_tasks`` (``task_id, domain, task_kind, cutoff,
    target_times, last_value, bundle_hash``); ``now``: the submission time (tz-aware UTC)."""
    require_columns(
        tasks,
        ("task_id", "domain", "task_kind", "cutoff", "target_times", "last_value", "bundle_hash"),
        "forecast_tasks",
    )
    by_id = {
        r["task_id"]: r
        for r in tasks.select(
            "task_id", "domain", "task_kind", "cutoff", "target_times", "last_value", "bundle_hash"
        ).iter_rows(named=True)
    }
    chk = RowChecker(typed=sub.format == "json")
    good: dict[int, dict] = {}
    keys: dict[int, tuple] = {}
    shown: dict[int, str] = {}
    for i, r in enumerate(sub.rows, start=1):
        tid = chk.cell(i, "task_id", r.get("task_id"), parse_text)
        task = by_id.get(tid) if tid is not None else None
        if tid is not None and task is None:
            chk.reject(i, "task_id", tid, "unknown task: not in the store's forecast_tasks")
        if tid is not None:
            keys[i], shown[i] = (tid,), tid
        issued = chk.cell(i, "issued_at", r.get("issued_at"), parse_timestamp)
        if issued is not None and issued > now:
            chk.reject(
                i,
                "issued_at",
                r.get("issued_at"),
                f"in the future: after the submission time {now:%Y-%m-%dT%H:%M:%SZ}",
            )
            issued = None
        if task is None:
            continue
        if issued is not None and issued > task["cutoff"]:
            chk.reject(
                i,
                "issued_at",
                r.get("issued_at"),
                f"issued after the task's cutoff {task['cutoff']:%Y-%m-%dT%H:%M:%SZ}: "
                "it may have seen what it forecasts",
            )
            issued = None
        kind = task["task_kind"]
        for field in OPTIONAL:
            if field != "bundle_hash" and optional(r.get(field)) and field not in KIND_FIELDS[kind]:
                chk.reject(
                    i,
                    field,
                    r.get(field),
                    f"a {kind} task takes {' and '.join(KIND_FIELDS[kind])}, not {field}",
                )
        need = KIND_REQUIRED[kind]
        row = {
            "task_id": tid,
            "issued_at": issued,
            "bundle_hash": task["bundle_hash"],
            "point": None,
            "quantiles": None,
            "predicted_class": None,
            "probability": None,
        }
        ok = issued is not None
        if optional(r.get("bundle_hash")) and str(r.get("bundle_hash")).strip() != task["bundle_hash"]:
            chk.reject(
                i,
                "bundle_hash",
                r.get("bundle_hash"),
                f"not the task's bundle_hash {task['bundle_hash'][:16]}...: forecast from other inputs",
            )
            ok = False
        if not optional(r.get(need)):
            chk.reject(i, need, r.get(need), f"empty: a {kind} task needs {need}")
            ok = False
        elif kind == "series":
            n = len(task["target_times"])
            point = chk.cell(i, "point", r.get("point"), parse_number_list)
            if point is not None and len(point) != n:
                chk.reject(
                    i, "point", r.get("point"), f"{len(point)} values, the task forecasts {n} target times"
                )
                point = None
            if point is not None:
                why = _magnitude(task["domain"], task["last_value"], point)
                if why:
                    chk.reject(i, "point", r.get("point"), why)
                    point = None
            q = None
            if point is not None and optional(r.get("quantiles")):
                q = chk.cell(i, "quantiles", r.get("quantiles"), lambda v: _quantiles(v, n))  # noqa: B023 (called in this iteration)
                if q is not None:
                    why = _crossing(q, point) or _magnitude(
                        task["domain"], task["last_value"], [x for v in q.values() for x in v]
                    )
                    if why:
                        chk.reject(i, "quantiles", r.get("quantiles"), why)
                        q = None
                ok = ok and q is not None
            ok = ok and point is not None
            row["point"] = point
            row["quantiles"] = json.dumps(q, sort_keys=True) if q else None
        elif kind in ("trend3", "trend5"):
            classes = CLASSES_3 if kind == "trend3" else CLASSES_5
            text = chk.cell(i, "predicted_class", r.get("predicted_class"), parse_text)
            canon = next(
                (c for c in classes if text is not None and c.lower() == " ".join(text.split()).lower()), None
            )
            if text is not None and canon is None:
                chk.reject(
                    i, "predicted_class", text, f"not a {kind} class; expected one of {', '.join(classes)}"
                )
            ok = ok and canon is not None
            row["predicted_class"] = canon
        else:
            p = chk.cell(i, "probability", r.get("probability"), parse_number)
            if p is not None and not 0 <= p <= 1:
                hint = " (a percentage? give P(YES) as a fraction)" if 1 < p <= 100 else ""
                chk.reject(
                    i, "probability", r.get("probability"), f"wrong magnitude: {p:g} outside [0, 1]{hint}"
                )
                p = None
            ok = ok and p is not None
            row["probability"] = p
        if ok:
            good[i] = row
    chk.duplicates(keys, "task_id", shown)
    chk.raise_if_any(sub)
    rows = [good[i] for i in sorted(good)]
    frame = pl.DataFrame(
        rows,
        schema={
            "task_id": pl.Utf8,
            "issued_at": pl.Datetime("us", "UTC"),
            "bundle_hash": pl.Utf8,
            "point": pl.List(pl.Float64),
            "quantiles": pl.Utf8,
            "predicted_class": pl.Utf8,
            "probability": pl.Float64,
        },
    )
    schema = polars_schema(TABLE)
    frame = frame.with_columns(
        pl.lit(model_id).alias("model_id"),
        pl.lit(model_id).alias("partition_key"),
        pl.lit(True).alias("valid"),
        pl.col("issued_at").alias("available_at"),
    )
    frame = frame.with_columns(
        pl.lit(None, dtype=schema[c]).alias(c) for c in schema if c not in frame.columns
    )
    return conform(TABLE, frame.select(list(schema)), deferred=("producer",) if "producer" in schema else ())


def _crossing(q: dict[str, list[float]], point: list[float]) -> str | None:
    levels = sorted([*((float(k), v) for k, v in q.items()), (0.5, point)])
    for step in range(len(point)):
        vals = [v[step] for _, v in levels]
        if any(a > b for a, b in zip(vals, vals[1:])):
            shown = ", ".join(f"{lv:g}: {v[step]:g}" for lv, v in levels)
            return f"quantiles cross at step {step} ({shown}): each level must be >= the one below"
    return None


class SubmittedForecasts:
    """The forecaster of a checked submission (:func:`check_event_submission` rows): ``forecast(tasks)``
    returns its rows for the tasks given, so the contract runner treats it like every other model."""

    def __init__(self, model_id: str, rows: pl.DataFrame) -> None:
        self.model_id = model_id
        self._rows = rows.filter(pl.col("model_id") == model_id)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return self._rows.filter(pl.col("task_id").is_in(tasks["task_id"].to_list()))


def submitted_forecasts(model_id: str, rows: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """The checked rows through the forecaster contract (:func:`leaf_live.core.forecaster.run_forecasters`),
    stamped with the submissions' producer slice where ``leaf_forecasts`` is sliced by producer."""
    cols = {"producer": PRODUCER} if "producer" in polars_schema(TABLE) else None
    out = run_forecasters([SubmittedForecasts(model_id, rows)], tasks, TABLE, columns=cols)
    return out if out.height else empty_frame(TABLE)
