"""External macro nowcasts (``external/<name>``) from a CSV or Parquet file, checked row by row and turned
into ``nowcasts`` rows through the forecaster contract (issue 12 item 5; DESIGN.md principle 5).

File schema (one row per nowcast; :data:`REQUIRED` columns, :data:`OPTIONAL` ones may be present):

| column | meaning |
|---|---|
| ``indicator_id`` | catalog id (``cpi``, ``nonfarm_payrolls``, ... ``leaf-live tables``:
``indicator_catalog``) |
| ``reference_period`` | ``YYYY-MM-DD``, first day of the reference month (of the quarter for
``real_gdp_advance``) |
| ``issued_at`` | when the nowcast was made, ISO 8601 with an offset (``2026-03-25T04:00:00Z``); stored in UTC
|
| ``value`` | the nowcast in the catalog's reporting unit (Table 2: CPI YoY %, payrolls thousands MoM change,
...) |
| ``unit`` | the reporting unit as the catalog spells it (``percent``, ``index``, ``thousand persons``,
``thousand units, SAAR``; the LLM parser's aliases are accepted) |
| ``answered_at`` | optional: when the answer existed (ISO 8601 with an offset), at or after ``issued_at``;
LiveBetting bets on a nowcast only from this time (default: ``issued_at``) |
| ``run`` | optional run label (``[A-Za-z0-9._-]``, at most 64): one series per (run, indicator, reference
period), like the recorded runs, one file each; rows of a run are stored under ``partition_key`` =
``<model_id>/<run>``, rows without one under ``<model_id>`` |
| ``rationale`` | optional text (a percent value that is 1/100 of the percentage its rationale states is
refused) |

Rules (every failing row is named with its reason, and nothing is stored):

* the indicator is in the catalog and the period is a first day of its frequency;
* the (indicator, reference period) has a nowcast window in the store (a release stored or scheduled), and
  ``issued_at`` is strictly before the window's close, the scheduled release (LiveMacroEval §3.4: a nowcast
  issued at or after its release is never scored, so a submission cannot contain one); ``issued_at`` is not
  later than the submission itself;
* ``value`` is a finite number, the unit matches, and the value lies within the catalog guardrail (a value
  that fits only after rescaling is named: thousands vs persons, fraction vs percent, ...): the same checks
  as an LLM answer (:func:`leaf_live.macro.agents.parsing.check_reported_value`);
* for indicators counted in thousands, a value far outside its own series' spread that fits after a factor of
  10 or 1000 is a unit slip (:func:`leaf_live.macro.sources.recorded_nowcasts.unit_slip_reason`, the same
  rule as the recorded runs);
* one row per (run, indicator_id, reference_period, issued_at); two runs issuing at the same instant are two
  rows (the scorer's tie rule treats them as one forecast, as it does the recorded runs).

Every accepted row is valid; ``available_at = issued_at`` (the submitter's issue time, as for the recorded
runs: the store cannot verify it, which the README says); ``raw_response_id`` = ``submission:<sha256 of the
file, 16 hex>``.
"""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import polars as pl

from leaf_live.core.pit import require_columns
from leaf_live.core.submissions import (
    PRODUCER,
    RowChecker,
    SubmissionFile,
    optional,
    parse_date,
    parse_number,
    parse_text,
    parse_timestamp,
)
from leaf_live.macro.agents.parsing import check_reported_value
from leaf_live.macro.catalog import INDICATOR_IDS, get_indicator
from leaf_live.macro.forecasters.published import PublishedNowcasts
from leaf_live.macro.nowcasts import build_nowcasts, forecast_nowcasts
from leaf_live.macro.sources.recorded_nowcasts import SLIP_CHECK_UNITS, unit_slip_reason
from leaf_live.macro.windows import WindowError, target_month

REQUIRED = ("indicator_id", "reference_period", "issued_at", "value", "unit")
OPTIONAL = ("answered_at", "run", "rationale")
_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_macro_submission(
    sub: SubmissionFile, model_id: str, windows: pl.DataFrame, *, now: datetime
) -> pl.DataFrame:
    """The ``nowcasts`` rows (producer NULL, ``partition_key`` = ``model_id`` or ``model_id/run``) of a read
    submission file, or
    :class:`leaf_live.core.submissions.SubmissionError` listing every rejected row (module doc for the rules).

    ``windows``: the store's ``nowcast_windows`` (``indicator_id, reference_period, closes_at``); ``now``: the
    submission time (tz-aware UTC)."""
    require_columns(windows, ("indicator_id", "reference_period", "closes_at"), "nowcast_windows")
    closes = {
        (r[0], r[1]): r[2]
        for r in windows.select("indicator_id", "reference_period", "closes_at").iter_rows()
    }
    chk = RowChecker(typed=sub.format == "json")
    good: dict[int, dict] = {}
    keys: dict[int, tuple] = {}
    shown: dict[int, str] = {}
    for i, r in enumerate(sub.rows, start=1):
        iid = chk.cell(i, "indicator_id", r.get("indicator_id"), parse_text)
        if iid is not None and iid not in INDICATOR_IDS:
            chk.reject(
                i, "indicator_id", iid, f"unknown indicator; expected one of {', '.join(INDICATOR_IDS)}"
            )
            iid = None
        period = chk.cell(i, "reference_period", r.get("reference_period"), parse_date)
        if iid is not None and period is not None:
            try:
                target_month(iid, period)
            except WindowError as exc:
                chk.reject(i, "reference_period", r.get("reference_period"), str(exc).split(": ", 1)[-1])
                period = None
        issued = chk.cell(i, "issued_at", r.get("issued_at"), parse_timestamp)
        if issued is not None and issued > now:
            chk.reject(
                i,
                "issued_at",
                r.get("issued_at"),
                f"in the future: after the submission time {now:%Y-%m-%dT%H:%M:%SZ}",
            )
            issued = None
        answered = None
        if optional(r.get("answered_at")):
            answered = chk.cell(i, "answered_at", r.get("answered_at"), parse_timestamp)
            if answered is not None and issued is not None and answered < issued:
                chk.reject(
                    i,
                    "answered_at",
                    r.get("answered_at"),
                    "before issued_at: an answer cannot exist before it was asked for",
                )
            elif answered is not None and answered > now:
                chk.reject(
                    i,
                    "answered_at",
                    r.get("answered_at"),
                    f"in the future: after the submission time {now:%Y-%m-%dT%H:%M:%SZ}",
                )
        value = chk.cell(i, "value", r.get("value"), parse_number)
        run = None
        if optional(r.get("run")):
            run = chk.cell(i, "run", r.get("run"), parse_text)
            if run is not None and not _RUN.fullmatch(run):
                chk.reject(i, "run", run, "a run label is 1-64 letters, digits, '.', '_' or '-'")
        rationale = r.get("rationale") if optional(r.get("rationale")) else None
        if rationale is not None and not isinstance(rationale, str):
            chk.reject(i, "rationale", rationale, "not text")
            rationale = None
        unit = r.get("unit")
        if iid is not None and value is not None:
            given = unit.strip() if isinstance(unit, str) and unit.strip() else None
            res = check_reported_value(iid, value, given, rationale)
            if not res.valid:
                field = (
                    "unit" if res.invalid_reason.split(":")[0] in ("missing_unit", "wrong_unit") else "value"
                )
                chk.reject(i, field, unit if field == "unit" else r.get("value"), res.invalid_reason)
                value = None
        if iid is not None and period is not None:
            close = closes.get((iid, period))
            if close is None:
                chk.reject(
                    i,
                    "reference_period",
                    r.get("reference_period"),
                    f"unknown target: no release window of {iid} for {period} in the store (a release that is"
                    " neither stored nor scheduled cannot be scored)",
                )
            elif issued is not None and issued >= close:
                chk.reject(
                    i,
                    "issued_at",
                    r.get("issued_at"),
                    f"issued at or after the release of {iid} {period} at {close:%Y-%m-%dT%H:%M:%SZ}: never"
                    " scored",
                )
                issued = None
        if iid is not None and period is not None and issued is not None:
            keys[i] = (run, iid, period, issued)
            shown[i] = f"{iid} {period} {issued:%Y-%m-%dT%H:%M:%SZ}" + (f" run {run}" if run else "")
        if None not in (iid, period, issued, value):
            good[i] = {
                "partition_key": model_id if run is None else f"{model_id}/{run}",
                "indicator_id": iid,
                "reference_period": period,
                "issued_at": issued,
                "answered_at": answered or issued,
                "value": value,
                "rationale": rationale,
            }
    chk.duplicates(keys, "run, indicator_id, reference_period, issued_at", shown)
    _unit_slips(chk, good, sub)
    chk.raise_if_any(sub)
    rows = [good[i] for i in sorted(good)]
    frame = pl.DataFrame(
        rows,
        schema={
            "partition_key": pl.Utf8,
            "indicator_id": pl.Utf8,
            "reference_period": pl.Date,
            "issued_at": pl.Datetime("us", "UTC"),
            "answered_at": pl.Datetime("us", "UTC"),
            "value": pl.Float64,
            "rationale": pl.Utf8,
        },
    )
    return build_nowcasts(
        frame.with_columns(
            pl.lit(model_id).alias("model_id"),
            pl.lit(True).alias("valid"),
            pl.lit(f"submission:{sub.sha256[:16]}").alias("raw_response_id"),
        )
    )


def _unit_slips(chk: RowChecker, good: dict[int, dict], sub: SubmissionFile) -> None:
    series: dict[tuple, list[int]] = {}
    for i, g in good.items():
        if get_indicator(g["indicator_id"]).unit in SLIP_CHECK_UNITS:
            series.setdefault((g["partition_key"], g["indicator_id"], g["reference_period"]), []).append(i)
    for (_, iid, _), rows in series.items():
        run = np.array([good[i]["value"] for i in rows], dtype=float)
        for i in rows:
            why = unit_slip_reason(good[i]["value"], run, get_indicator(iid).unit)
            if why is not None:
                chk.reject(i, "value", sub.rows[i - 1].get("value"), why)
                del good[i]


def submitted_nowcasts(model_id: str, rows: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """The checked rows through the forecaster contract (:class:`leaf_live.macro.forecasters.published.
    PublishedNowcasts` via :func:`leaf_live.macro.nowcasts.forecast_nowcasts`), stamped with the submissions'
    producer slice and ``after_release`` from the windows: what the writer stores as ``(producer,
    partition_key) = ('external_submissions', model_id)``."""
    return forecast_nowcasts([PublishedNowcasts(model_id, rows)], windows, producer=PRODUCER)
