"""Import nowcasts recorded elsewhere: the LiveMacroEval runner's long CSV format.

Format (``LiveMacro/backend/storage.py`` of XinyueZhao777/LiveMacroEval): one row per (run, variable),
``timestamp_local, target_month, release_month, job_id, model, variable, value, parsed_ok, parsed_notes``
(+ ``raw_model_output, citations`` in the full ``data/`` tables). Each hourly call answers every variable of
one prompt group in several transformations (``cpi_index``, ``cpi_mom``, ``cpi_yoy``, ...); only the variable
that *is* the catalog's reporting transformation (LiveMacroEval Table 2) is imported, in the reporting unit.
Other transformations are skipped (no conversion is exact without the previous release).

Time zone of ``timestamp_local`` (established, see :data:`RECORDED_TZ`): America/New_York wall clock, the
*scheduled* start of the hourly run. Evidence: the runner's ``config.py`` sets ``LOCAL_TZ =
ZoneInfo("America/New_York")`` and ``forecasting.py`` writes ``now_local.strftime("%Y-%m-%d %H:%M:%S")`` of
the scheduled time; ``jobs.json`` start times carry -05:00 before and -04:00 after 2026-03-08 (US DST); the
2026-02 file has no 02:00 row on 2026-03-08 (the spring-forward gap) while the alternating serverA/serverB
hour parity is unbroken; and recorded values snap to the released number exactly from the release hour in
ET (ISM manufacturing 52.7 from 2026-05-01 10:00 for a 10:00 ET release, unemployment 4.3 from 2026-04-03
10:00 for an 08:30 ET release) -- read as UTC they would know the number hours before it existed.

Guardrails (same as the LLM parser): the catalog's scale guardrail in the reporting unit
(:class:`leaf_live.macro.catalog.Guardrail`), and for count/level indicators in thousands a unit-slip check
within the run (see :func:`unit_slip_reason`). Bad values become invalid rows with a reason; nothing is fixed.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from leaf_live.core.pit import ET, check_month, quarter_start
from leaf_live.core.sources import SourceError, require_header
from leaf_live.core.storage import empty_frame
from leaf_live.macro.catalog import get_indicator
from leaf_live.macro.nowcasts import build_nowcasts
from leaf_live.macro.windows import mark_after_release

RECORDED_TZ = ET  # established above: the runner's wall clock is America/New_York

# When a recorded answer existed. The runner stamps each row with its run's *scheduled* start and records no
# completion time, so the answer of the run scheduled at h may have arrived any time after h. Conservative
# rule: it counts as existing from the next scheduled run (h + the job's interval, 3,600 s for every job of
# LiveMacro/config/jobs.json); a run still in flight after that overlaps the next one on the other server,
# which the alternating serverA/serverB schedule allows but the files cannot show. LiveBetting bets on a
# recorded answer only from ``answered_at`` (nowcasts.answered_at).
RECORDED_ANSWER_LAG = timedelta(hours=1)

# Where the released outlier-cleaned GPT-5 tables live under the snapshot directory.
LIVEMACROEVAL_GPT5_DIR = (
    "livemacroeval/Results/remove_outlier_and_plot/processed_final_analysis_data/model_gpt-5-search-api"
)

# LiveMacroEval model name -> our model_id (provider/model@design). Extend with the ``model_ids`` argument.
DEFAULT_MODEL_IDS: dict[str, str] = {"gpt-5-search-api": "openai/gpt-5-search-api@single"}

REQUIRED_COLUMNS = (
    "timestamp_local",
    "target_month",
    "release_month",
    "job_id",
    "model",
    "variable",
    "value",
    "parsed_ok",
    "parsed_notes",
)

# Every variable the LiveMacroEval prompt asks for (``LiveMacro/backend/variables.py``; the same 47 names are
# indexed in ``variable_prediction_ranges.csv``), mapped to (indicator_id or None, transformation, unit).
# Exactly one variable per indicator is its reporting transformation (LiveMacroEval Table 2 /
# field_mapping.csv, all "identity" in the model's own unit: payrolls and housing levels are thousands, as the
# catalog).
REPORTING_VARIABLES: dict[str, str] = {
    "real_gdp_qoq": "real_gdp_advance",
    "industrial_production_mom": "industrial_production",
    "durable_goods_mom": "durable_goods",
    "ism_manufacturing_index": "ism_manufacturing",
    "cpi_yoy": "cpi",
    "ppi_mom": "ppi",
    "pce_price_index_mom": "pce_price_index",
    "nonfarm_payrolls_change": "nonfarm_payrolls",
    "unemployment_rate": "unemployment_rate",
    "real_pce_mom": "real_pce",
    "retail_sales_mom": "retail_sales",
    "housing_starts_level": "housing_starts",
    "building_permits_level": "building_permits",
    "existing_home_sales_level": "existing_home_sales",
    "new_home_sales_level": "new_home_sales",
    "ism_services_index": "ism_services",
}
# Other transformations the runner records; skipped on import (not the reporting transformation).
NON_REPORTING_VARIABLES: frozenset[str] = frozenset(
    {
        "real_gdp_level",
        "real_gdp_yoy",
        "industrial_production_index",
        "industrial_production_yoy",
        "durable_goods_level",
        "durable_goods_yoy",
        "ism_manufacturing_mom",
        "cpi_index",
        "cpi_mom",
        "ppi_index",
        "ppi_yoy",
        "pce_price_index_level",
        "pce_price_index_yoy",
        "nonfarm_payrolls_level",
        "unemployment_rate_mom",
        "retail_sales_level",
        "retail_sales_yoy",
        "real_pce_level",
        "real_pce_yoy",
        "real_dpi_level",
        "real_dpi_mom",
        "real_dpi_yoy",
        "housing_starts_mom",
        "housing_starts_yoy",
        "building_permits_mom",
        "building_permits_yoy",
        "existing_home_sales_mom",
        "existing_home_sales_yoy",
        "new_home_sales_mom",
        "new_home_sales_yoy",
        "ism_services_mom",
    }
)

# Indicators counted in thousands (persons / units SAAR): a misplaced factor of 10 or 1000 (raw counts,
# millions, a dropped digit) still passes their wide order-of-magnitude guardrail. The LiveMacroEval authors
# re-titled the housing levels "thousands of units ... to reduce unit error" (variables.py) for this reason.
SLIP_CHECK_UNITS = ("thousand persons", "thousand units, SAAR")
SLIP_FACTORS = (10.0, 1000.0)
SLIP_MIN_RUN = 20  # quartiles of fewer answers are too noisy to call a value a slip

_JOB_MONTH_RE = re.compile(r"^(\d{4}-\d{2})_")


@dataclass(frozen=True)
class ImportSummary:
    """Counts of one file's rows: imported (valid + invalid) and skipped non-reporting variables."""

    file: str
    rows: int
    imported: int
    valid: int
    skipped_non_reporting: int


def _month(text: str, *, file: str, row: int, field: str) -> date:
    try:
        year, month = map(int, check_month((text or "").strip(), field).split("-"))
    except ValueError:
        raise SourceError("expected a month YYYY-MM", file=file, row=row, field=field, value=text) from None
    return date(year, month, 1)


def _reference_period(indicator_id: str, target: date) -> date:
    # LiveMacroEval target_month_to_ref_period: quarterly variables map a month to its quarter
    return quarter_start(target) if get_indicator(indicator_id).frequency == "quarterly" else target


def _citations_json(text: str | None) -> str | None:
    s = (text or "").strip()
    if not s:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            v = parse(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(v, (list, tuple)):
            return json.dumps([x if isinstance(x, (str, dict)) else str(x) for x in v])
    return json.dumps([s])


def unit_slip_reason(value: float, run_values: np.ndarray, unit: str) -> str | None:
    """Why ``value`` looks like a unit slip within its run, or None.

    A value is a suspected slip when it lies outside the run's far-out fences [Q1 - 3 IQR, Q3 + 3 IQR]
    (Tukey) while ``value / f`` or ``value * f`` for f in 10, 1000 lies inside the inner fences
    [Q1 - 1.5 IQR, Q3 + 1.5 IQR]. ``run_values`` are the guardrail-passing answers of the same model for the
    same indicator and reference period in the same file (the value included); runs shorter than
    ``SLIP_MIN_RUN`` are not checked.
    """
    if run_values.size < SLIP_MIN_RUN:
        return None
    q1, q3 = np.quantile(run_values, [0.25, 0.75])
    iqr = q3 - q1
    lo3, hi3 = q1 - 3 * iqr, q3 + 3 * iqr
    if lo3 <= value <= hi3:
        return None
    lo15, hi15 = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    for f in SLIP_FACTORS:
        for scaled, op in ((value / f, "/"), (value * f, "*")):
            if lo15 <= scaled <= hi15:
                return (
                    f"unit_slip: {value:g} {unit} lies outside this run's 3xIQR fences [{lo3:g}, {hi3:g}] "
                    f"(n={run_values.size}) while {value:g}{op}{f:g} = {scaled:g} lies inside its 1.5xIQR "
                    f"range [{lo15:g}, {hi15:g}]: suspected x{f:g} unit error"
                )
    return None


def read_recorded_csv(
    path: str | Path,
    *,
    windows: pl.DataFrame | None,
    model_ids: Mapping[str, str] | None = None,
    partition_key: str | None = None,
    display_name: str | None = None,
) -> tuple[pl.DataFrame, ImportSummary]:
    """Read one LiveMacroEval nowcast CSV into a ``nowcasts`` frame.

    * ``model_id`` = ``model_ids[model]`` (default :data:`DEFAULT_MODEL_IDS`:
      ``gpt-5-search-api`` -> ``openai/gpt-5-search-api@single``);
    * ``indicator_id`` from :data:`REPORTING_VARIABLES`; non-reporting transformations are skipped
      and counted; ``source_variable`` = the file's variable;
    * ``reference_period`` = ``target_month`` (its quarter's first month for real GDP);
    * ``issued_at`` = ``timestamp_local`` read as America/New_York, in UTC (``available_at`` = ``issued_at``);
      a fall-back (ambiguous) hour takes the earlier instant for its first occurrence of a variable and the
      later one otherwise (the later one when it occurs once: conservative);
    * ``answered_at`` = ``issued_at`` + :data:`RECORDED_ANSWER_LAG` (the run's completion is not recorded);
    * ``raw_response_id`` = ``job_id``; ``rationale``/``citations`` from ``raw_model_output``/``citations``
      when the file has them;
    * invalid rows (kept, ``value`` NULL, with ``invalid_reason``): ``parsed_ok`` false (reason = the
      ``parsed_notes``), empty/non-numeric/non-finite value, ``target_month`` differing from the job's
      month (``job_id`` prefix), the catalog guardrail, a suspected unit slip (:func:`unit_slip_reason`);
    * ``after_release`` from ``windows`` (:func:`leaf_live.macro.windows.mark_after_release`);
      pass ``windows=None`` explicitly to leave it False (then mark it before scoring);
    * ``partition_key`` default ``<model_id>/<file stem>`` (one file = one partition).

    Raises :class:`leaf_live.macro.sources.SourceError` naming file, 1-based data row, field and value for a
    missing column, an unknown model or variable, a malformed month, timestamp or ``parsed_ok``, or a
    wall-clock time that does not exist in New York (spring-forward gap). Returns (frame, summary).
    """
    path = Path(path)
    name = display_name or str(path)
    models = dict(DEFAULT_MODEL_IDS if model_ids is None else model_ids)
    try:
        raw = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
    except Exception as exc:  # polars raises several error types for malformed CSV
        raise SourceError(f"cannot read CSV: {exc}", file=name) from None
    require_header(raw.columns, REQUIRED_COLUMNS, file=name)
    stem_m = _JOB_MONTH_RE.match(path.stem)

    records: list[dict] = []
    skipped = 0
    for i, r in enumerate(raw.iter_rows(named=True), start=1):
        fields = _row_fields(r, i, name, models)
        if fields is None:  # a non-reporting transformation
            skipped += 1
            continue
        var, model_id, local, target, parsed = fields
        indicator_id = REPORTING_VARIABLES[var]
        job_id = (r["job_id"] or "").strip()
        job_m = _JOB_MONTH_RE.match(job_id) or stem_m
        job_month = job_m.group(1) if job_m else None
        value, reason = _answer(r, parsed, indicator_id, job_month, job_id or path.stem)
        records.append(
            {
                "_row": i,
                "_local": local,
                "model_id": model_id,
                "indicator_id": indicator_id,
                "reference_period": _reference_period(indicator_id, target),
                "value": value if reason is None else None,
                "_raw_value": value,
                "invalid_reason": reason,
                "source_variable": var,
                "raw_response_id": job_id or None,
                "rationale": r.get("raw_model_output") or None,
                "citations": _citations_json(r.get("citations")),
            }
        )
    summary_rows = raw.height
    if not records:
        summary = ImportSummary(name, summary_rows, 0, 0, skipped)
        return empty_frame("nowcasts"), summary

    frame = _records_frame(records, name, partition_key, path.stem)
    out = build_nowcasts(frame.drop("_row", "_local", "_raw_value"))
    if windows is not None:
        out = mark_after_release(out, windows)
    summary = ImportSummary(name, summary_rows, out.height, int(out.get_column("valid").sum()), skipped)
    return out, summary


def _row_fields(r: Mapping, i: int, name: str, models: Mapping[str, str]) -> tuple | None:
    """The checked fields of data row ``i`` of file ``name``: ``(variable, model_id, local timestamp, target
    month, parsed_ok)``, or None for a non-reporting transformation (skipped and counted). Raises
    :class:`SourceError` (file, row, field, value) for an unknown variable or model, a malformed timestamp,
    month or ``parsed_ok``."""
    var = (r["variable"] or "").strip()
    if var in NON_REPORTING_VARIABLES:
        return None
    if var not in REPORTING_VARIABLES:
        raise SourceError(
            "unknown LiveMacroEval variable (neither a reporting nor a known non-reporting transformation)",
            file=name,
            row=i,
            field="variable",
            value=r["variable"],
        )
    model = (r["model"] or "").strip()
    if model not in models:
        raise SourceError(
            f"no model_id mapping for this model; known: {sorted(models)}",
            file=name,
            row=i,
            field="model",
            value=r["model"],
        )
    ts_text = (r["timestamp_local"] or "").strip()
    try:
        local = datetime.strptime(ts_text, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise SourceError(
            "expected YYYY-MM-DD HH:MM:SS (America/New_York)",
            file=name,
            row=i,
            field="timestamp_local",
            value=r["timestamp_local"],
        ) from None
    target = _month(r["target_month"], file=name, row=i, field="target_month")
    _month(r["release_month"], file=name, row=i, field="release_month")
    ok_text = (r["parsed_ok"] or "").strip().lower()
    if ok_text not in ("true", "false"):
        raise SourceError("expected True or False", file=name, row=i, field="parsed_ok", value=r["parsed_ok"])
    return var, models[model], local, target, ok_text == "true"


def _answer(
    r: Mapping, parsed: bool, indicator_id: str, job_month: str | None, job_ref: str
) -> tuple[float | None, str | None]:
    """The row's answer and why it is invalid (None = valid), the first rule that fails in this order: the
    model's answer did not parse, the value is empty, non-numeric or not finite, ``target_month`` differs
    from the job's month ``job_month`` (``job_ref`` names the job), the catalog guardrail. The value is
    returned even when invalid (the unit-slip check reads it); None when it is not a finite number."""
    if not parsed:
        return None, f"parse_failed: {(r['parsed_notes'] or '').strip() or 'parsed_ok=False'}"
    vtext = (r["value"] or "").strip()
    try:
        value = float(vtext)
    except ValueError:
        return None, f"non_numeric: value {r['value']!r} is not a number"
    if not math.isfinite(value):
        return None, f"non_numeric: value {vtext!r} is not finite"
    if job_month is not None and r["target_month"].strip() != job_month:
        return value, (
            f"wrong_target: target_month {r['target_month'].strip()} differs from the job's target month "
            f"{job_month} ({job_ref})"
        )
    g = get_indicator(indicator_id).guardrail
    if not g.check(value):
        ind = get_indicator(indicator_id)
        return value, (
            f"guardrail: {value:g} outside [{g.lo:g}, {g.hi:g}] {ind.unit} (scale guardrail: {g.text})"
        )
    return value, None


def _records_frame(records: list[dict], name: str, partition_key: str | None, stem: str) -> pl.DataFrame:
    """The parsed rows as one frame: timestamps placed in UTC, suspected unit slips flagged, the partition
    (default ``<model_id>/<file stem>``, the stem alone for a file of several models), ``valid`` and
    ``answered_at``."""
    frame = pl.DataFrame(
        records,
        schema_overrides={
            "_local": pl.Datetime("us"),
            "value": pl.Float64,
            "_raw_value": pl.Float64,
            "invalid_reason": pl.Utf8,
            "rationale": pl.Utf8,
            "citations": pl.Utf8,
            "raw_response_id": pl.Utf8,
        },
    )
    frame = _place_in_utc(frame, name)
    frame = _flag_unit_slips(frame)
    pk = partition_key
    if pk is None:
        ids = frame.get_column("model_id").unique().to_list()
        pk = f"{ids[0]}/{stem}" if len(ids) == 1 else stem
    return frame.with_columns(
        pl.lit(pk).alias("partition_key"),
        pl.col("invalid_reason").is_null().alias("valid"),
        (pl.col("issued_at") + RECORDED_ANSWER_LAG).alias("answered_at"),
    )


def _place_in_utc(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    """Add ``issued_at``: the ET wall clock in UTC, resolving fall-back hours by order of appearance."""
    frame = frame.with_columns(
        pl.col("_row").cum_count().over("source_variable", "_local").alias("_nth"),
        pl.len().over("source_variable", "_local").alias("_n"),
    )
    frame = frame.with_columns(
        pl.when((pl.col("_n") > 1) & (pl.col("_nth") == 1))
        .then(pl.lit("earliest"))
        .otherwise(pl.lit("latest"))
        .alias("_amb")
    )
    frame = frame.with_columns(
        pl.col("_local")
        .dt.replace_time_zone(RECORDED_TZ.key, ambiguous=pl.col("_amb"), non_existent="null")
        .dt.convert_time_zone("UTC")
        .alias("issued_at")
    )
    bad = frame.filter(pl.col("issued_at").is_null())
    if bad.height:
        r = bad.row(0, named=True)
        raise SourceError(
            f"wall-clock time does not exist in {RECORDED_TZ.key} (daylight-saving gap); cannot place it"
            " in UTC",
            file=name,
            row=r["_row"],
            field="timestamp_local",
            value=f"{r['_local']:%Y-%m-%d %H:%M:%S}",
        )
    return frame.drop("_nth", "_n", "_amb")


def _flag_unit_slips(frame: pl.DataFrame) -> pl.DataFrame:
    reasons = frame.get_column("invalid_reason").to_list()
    values = frame.get_column("value").to_list()
    keys = ("model_id", "indicator_id", "reference_period")
    grouped = frame.with_row_index("_i").group_by(keys).agg(pl.col("_i"))
    for row in grouped.iter_rows(named=True):
        unit = get_indicator(row["indicator_id"]).unit
        if unit not in SLIP_CHECK_UNITS:
            continue
        idx = [j for j in row["_i"] if reasons[j] is None]
        run = np.array([values[j] for j in idx], dtype=float)
        for j in idx:
            why = unit_slip_reason(values[j], run, unit)
            if why is not None:
                reasons[j] = why
    return frame.with_columns(
        pl.Series("invalid_reason", reasons, dtype=pl.Utf8),
    ).with_columns(
        pl.when(pl.col("invalid_reason").is_null()).then(pl.col("value")).otherwise(None).alias("value")
    )


def recorded_files(directory: str | Path) -> list[Path]:
    """The LiveMacroEval nowcast CSVs (``YYYY-MM_<group>.csv``) in ``directory``, sorted. Raises
    :class:`SourceError` if the directory does not exist or holds none."""
    d = Path(directory)
    if not d.is_dir():
        raise SourceError("recorded-nowcast directory does not exist", file=str(d))
    files = sorted(p for p in d.glob("*.csv") if _JOB_MONTH_RE.match(p.name))
    if not files:
        raise SourceError("no YYYY-MM_<group>.csv nowcast files in directory", file=str(d))
    return files


class RecordedNowcastsSnapshot:
    """Nowcasts recorded elsewhere (snapshot only: there is no live service for past runs): every recorded
    GPT-5 file under ``snapshot_dir`` (:data:`LIVEMACROEVAL_GPT5_DIR`), or the given ``files``; ``model_ids``
    extends :data:`DEFAULT_MODEL_IDS`."""

    transport = "snapshot"

    def __init__(
        self,
        snapshot_dir: str | Path,
        *,
        files: Iterable[str | Path] | None = None,
        model_ids: Mapping[str, str] | None = None,
    ) -> None:
        self.snapshot_dir = Path(snapshot_dir)
        self.files = None if files is None else [Path(f) for f in files]
        self.model_ids = model_ids

    def load(self, windows: pl.DataFrame | None) -> tuple[pl.DataFrame, list[ImportSummary]]:
        """One ``nowcasts`` frame of every file, one partition per file (see :func:`read_recorded_csv`;
        ``after_release`` from ``windows``). File names in errors and summaries are relative to the snapshot
        directory. Raises :class:`SourceError`."""
        snap = self.snapshot_dir
        paths = self.files if self.files is not None else recorded_files(snap / LIVEMACROEVAL_GPT5_DIR)
        frames, summaries = [], []
        for p in paths:
            try:
                shown = str(p.resolve().relative_to(snap.resolve()))
            except ValueError:
                shown = str(p)
            f, s = read_recorded_csv(p, windows=windows, model_ids=self.model_ids, display_name=shown)
            frames.append(f)
            summaries.append(s)
        out = pl.concat(frames, how="vertical") if frames else empty_frame("nowcasts")
        return out, summaries
