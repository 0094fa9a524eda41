"""Federal Reserve regional-bank nowcasts as comparator models (LiveMacroEval Sec. 3.5, App. H Table 8).

Each series is a step function of publication time: one ``nowcasts`` row per published value, ``issued_at``
= when it became public (``available_at`` = ``issued_at``); the value at time t is the latest row with
``available_at <= t`` (:func:`leaf_live.macro.nowcasts.latest_as_of`). Two implementations of one client
interface (:class:`FedNowcastsClient`): :class:`FedNowcastsSnapshot` (the files below) and
:class:`FedNowcastsLive` (the banks' own files, :data:`DEFAULT_URLS`).

| model_id            | target (indicator)                | snapshot file(s) (under ``LEAF_LIVE_SNAPSHOT``)
|
|---------------------|-----------------------------------|--------------------------------------------------------------------------|
| ``fed/gdpnow``      | real GDP QoQ SAAR %               |
``macro/fev_macro_rmmomin/panels/atlantafedgdpnow.csv`` (2014-05..2026-02),
``livemacroeval/.../fed/gdp-atlantafed-2026q1.csv`` |
| ``fed/nyfed-staff`` | real GDP QoQ SAAR %               |
``livemacroeval/.../fed/gdp-newyorkfed-2026q1.csv`` (weekly, Fridays)     |
| ``fed/stlouis-eni`` | real GDP QoQ SAAR %               | ``livemacroeval/.../fed/gdp-stlouisfed.csv`` (FRED
STLENI, no vintage)    |
| ``fed/cleveland-cpi``| CPI YoY %                        |
``livemacroeval/.../fed/cpi-Year-Over-YearPercentChange-2026-3.csv``,
``macro/cleveland_fed_nowcast/historical_nowcasts.csv`` (2013-08..2022-12) |
| ``fed/chicago-churn``| unemployment rate %              | ``livemacroeval/.../fed/unemp-mar.csv`` (release
times in ET)            |

Publication times (the files give dates only, except Chicago). ``issued_at`` must never precede real
availability, so dates are stamped at a conservative time of day in America/New_York
(:data:`PUBLICATION_TIME_ET`): GDPNow and the Cleveland Fed post on update days after the morning's data,
at a clock time neither file records -> 17:00 ET (end of the business day); the NY Fed Staff Nowcast is
updated on Fridays with data available up to 10 a.m. and posted late morning -> 12:00 ET. The Chicago Fed
file carries ``release_datetime_et`` (used as is). The St. Louis file (FRED ``observation_date, STLENI``)
has no publication date at all: it needs an explicit ``as_of``. The live client stamps a value with
``min(date at the publication time, fetch time)``: a value seen at fetch time was public by then.

Only the catalog's reporting transformation is imported: Cleveland's CPI YoY (not core, not PCE YoY: the
catalog's PCE price index is MoM), Chicago's median unemployment-rate forecast.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
import polars as pl

from leaf_live.core.pit import ET, UTC, check_month, localize
from leaf_live.core.sources import SourceError, csv_rows, http_get, parse_number, require_header
from leaf_live.core.storage import empty_frame
from leaf_live.macro.nowcasts import build_nowcasts

GDPNOW = "fed/gdpnow"
NYFED = "fed/nyfed-staff"
STLOUIS = "fed/stlouis-eni"
CLEVELAND = "fed/cleveland-cpi"
CHICAGO = "fed/chicago-churn"
MODEL_IDS = (GDPNOW, NYFED, STLOUIS, CLEVELAND, CHICAGO)
INDICATOR_OF = {
    GDPNOW: "real_gdp_advance",
    NYFED: "real_gdp_advance",
    STLOUIS: "real_gdp_advance",
    CLEVELAND: "cpi",
    CHICAGO: "unemployment_rate",
}

PUBLICATION_TIME_ET: dict[str, time] = {GDPNOW: time(17, 0), NYFED: time(12, 0), CLEVELAND: time(17, 0)}

FED_DIR = "livemacroeval/Results/polymarket_return/fed"
SNAPSHOT_FILES: dict[str, tuple[str, ...]] = {
    GDPNOW: ("macro/fev_macro_rmmomin/panels/atlantafedgdpnow.csv", f"{FED_DIR}/gdp-atlantafed-2026q1.csv"),
    NYFED: (f"{FED_DIR}/gdp-newyorkfed-2026q1.csv",),
    STLOUIS: (f"{FED_DIR}/gdp-stlouisfed.csv",),
    CLEVELAND: (
        "macro/cleveland_fed_nowcast/historical_nowcasts.csv",
        f"{FED_DIR}/cpi-Year-Over-YearPercentChange-2026-3.csv",
    ),
    CHICAGO: (f"{FED_DIR}/unemp-mar.csv",),
}

# Live URLs as best known (public pages of each bank); the live client takes overrides (the settings
# ``LEAF_LIVE_*_URL`` reach it through the ``fed_nowcasts`` resource).
DEFAULT_URLS: dict[str, str] = {
    GDPNOW: (
        "https://www.atlantafed.org/-/media/Project/Atlanta/FRBA/Documents/cqer/researchcq/gdpnow/"
        "GDPTrackingModelDataAndForecasts.xlsx"
    ),
    CLEVELAND: "https://www.clevelandfed.org/-/media/files/webcharts/inflationnowcasting/nowcast_year.json",
    NYFED: (
        "https://www.newyorkfed.org/medialibrary/Research/Interactives/Data/NowCast/Downloads/"
        "New_York_Fed_Staff_Nowcast_data.csv"
    ),
    STLOUIS: "https://fred.stlouisfed.org/graph/fredgraph.csv?id=STLENI",
    CHICAGO: (
        "https://www.chicagofed.org/-/media/publications/chicago-fed-labor-market-indicators/"
        "chi-labor-market-indicators.xlsx"
    ),
}
# The Cleveland Fed CDN refuses generic scripted user agents.
_HEADERS = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) leaf-live/0.1", "Accept": "*/*"}


@dataclass(frozen=True)
class _Row:
    model_id: str
    reference_period: date
    issued_at: datetime
    value: float
    source_variable: str
    ref: str  # file#row or URL#row, kept as raw_response_id


# ------------------------------------------------------------------------------------------------
# small parsers
# ------------------------------------------------------------------------------------------------


def _rows(text: str, file: str, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = header
    require_header(header, required, file=file)
    return [
        (i, {k: (v or "").strip() for k, v in r.items() if k is not None})
        for i, r in enumerate(reader, start=1)
    ]


def _date(text: str, fmts: tuple[str, ...], *, file: str, row: int, field: str) -> date:
    for fmt in fmts:
        try:
            return datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    raise SourceError(f"not a date in format(s) {fmts}", file=file, row=row, field=field, value=text)


def _stamp(day: date, model_id: str, fetched_at: datetime | None = None) -> datetime:
    """Publication instant of a date-stamped value (conservative ET clock time), capped at the fetch time."""
    t = datetime.combine(day, PUBLICATION_TIME_ET[model_id], tzinfo=ET).astimezone(UTC)
    return min(t, fetched_at.astimezone(UTC)) if fetched_at is not None else t


def _quarter_start_from_end(d: date, *, file: str, row: int, field: str) -> date:
    if d.month not in (3, 6, 9, 12) or (d + timedelta(days=1)).day != 1:
        raise SourceError(
            "expected a quarter-end date (last day of Mar/Jun/Sep/Dec)",
            file=file,
            row=row,
            field=field,
            value=d.isoformat(),
        )
    return date(d.year, d.month - 2, 1)


def _quarter_label(label: str, *, file: str, field: str) -> date:
    m = re.fullmatch(r"(\d{4}):?Q([1-4])", label.strip())
    if not m:
        raise SourceError("expected a quarter label YYYYQn", file=file, row=0, field=field, value=label)
    return date(int(m.group(1)), 3 * int(m.group(2)) - 2, 1)


def _frame(rows: Iterable[_Row], partition_key: str | None) -> pl.DataFrame:
    rows = list(rows)
    if not rows:
        return empty_frame("nowcasts")
    f = pl.DataFrame(
        {
            "partition_key": [partition_key or r.model_id for r in rows],
            "model_id": [r.model_id for r in rows],
            "indicator_id": [INDICATOR_OF[r.model_id] for r in rows],
            "reference_period": [r.reference_period for r in rows],
            "issued_at": [r.issued_at for r in rows],
            "value": [r.value for r in rows],
            "source_variable": [r.source_variable for r in rows],
            "raw_response_id": [r.ref for r in rows],
        },
        schema_overrides={"issued_at": pl.Datetime("us", "UTC")},
    )
    return build_nowcasts(f)


# ------------------------------------------------------------------------------------------------
# snapshot formats
# ------------------------------------------------------------------------------------------------


def parse_gdpnow_csv(text: str, *, file: str, partition_key: str | None = None) -> pl.DataFrame:
    """GDPNow CSV (``Forecast Date`` M/D/YY, ``Quarter being forecasted`` quarter-end M/D/YY, ``GDP Nowcast``
    %, optional ``Publication Date of Advance Estimate``); UTF-8 BOM and CRLF tolerated. One row per
    forecast date, ``issued_at`` = forecast date 17:00 ET. Raises :class:`SourceError` (file/row/field)."""
    rows = []
    for i, r in _rows(text, file, ("Forecast Date", "Quarter being forecasted", "GDP Nowcast")):
        d = _date(
            r["Forecast Date"], ("%m/%d/%y", "%m/%d/%Y", "%Y-%m-%d"), file=file, row=i, field="Forecast Date"
        )
        q = _date(
            r["Quarter being forecasted"],
            ("%m/%d/%y", "%m/%d/%Y", "%Y-%m-%d"),
            file=file,
            row=i,
            field="Quarter being forecasted",
        )
        v = parse_number(r["GDP Nowcast"], file=file, row=i, field="GDP Nowcast")
        if v is None:
            continue
        ref = _quarter_start_from_end(q, file=file, row=i, field="Quarter being forecasted")
        rows.append(_Row(GDPNOW, ref, _stamp(d, GDPNOW), v, "GDP Nowcast", f"{file}#{i}"))
    return _frame(rows, partition_key)


def parse_nyfed_csv(
    text: str, *, file: str, fetched_at: datetime | None = None, partition_key: str | None = None
) -> pl.DataFrame:
    """NY Fed Staff Nowcast CSV: ``Forecast Date`` (D-Mon-YY) and one column per target quarter (``2026Q1``);
    empty cells skipped; ``issued_at`` = forecast date 12:00 ET (capped at ``fetched_at``)."""
    first = next(csv.reader(io.StringIO(text.lstrip("\ufeff"))), [])
    reader_rows = _rows(text, file, ("Forecast Date",))
    quarters = {
        c.strip(): _quarter_label(c, file=file, field=c)
        for c in first
        if c.strip() and c.strip() != "Forecast Date"
    }
    rows = []
    for i, r in reader_rows:
        d = _date(
            r["Forecast Date"],
            ("%d-%b-%y", "%d-%b-%Y", "%Y-%m-%d", "%m/%d/%y"),
            file=file,
            row=i,
            field="Forecast Date",
        )
        for col, ref in quarters.items():
            v = parse_number(r.get(col, ""), file=file, row=i, field=col)
            if v is not None:
                rows.append(_Row(NYFED, ref, _stamp(d, NYFED, fetched_at), v, col, f"{file}#{i}"))
    return _frame(rows, partition_key)


def parse_fred_stleni_csv(
    text: str,
    *,
    file: str,
    as_of: datetime,
    partition_key: str | None = None,
    missing: dict[str, int] | None = None,
) -> pl.DataFrame:
    """FRED graph CSV of the St. Louis Fed Economic News Index real GDP nowcast (``observation_date``,
    ``STLENI``; older FRED files name the first column ``DATE``). ``observation_date`` is the reference
    quarter's first day. FRED gives no publication date, so every value is stamped ``as_of`` (tz-aware: the
    download time, or a documented vintage). An empty value or FRED's missing-value marker ``"."`` is no row,
    never a refusal of the file; the markers (rows checked by :func:`~leaf_live.core.sources.csv_rows`) are
    added to ``missing`` (a dict, optional) under ``"STLENI"``. Raises :class:`SourceError`;
    :class:`ValueError` for a naive ``as_of``."""
    if as_of is None or as_of.tzinfo is None:
        raise ValueError(
            f"as_of={as_of!r}: FRED STLENI rows carry no publication time; pass a tz-aware as_of"
        )
    date_col = "observation_date" if "observation_date" in text.split("\n", 1)[0] else "DATE"
    rows, marks = [], {}
    for i, r in csv_rows(text, file=file, required=(date_col, "STLENI"), missing=marks):
        d = _date(r[date_col].strip(), ("%Y-%m-%d", "%m/%d/%y", "%m/%d/%Y"), file=file, row=i, field=date_col)
        if d.day != 1 or d.month not in (1, 4, 7, 10):
            raise SourceError(
                "expected the first day of a quarter", file=file, row=i, field=date_col, value=r[date_col]
            )
        v = parse_number(r["STLENI"], file=file, row=i, field="STLENI")
        if v is not None:
            rows.append(_Row(STLOUIS, d, as_of.astimezone(UTC), v, "STLENI", f"{file}#{i}"))
    if missing is not None and marks.get("STLENI"):
        missing["STLENI"] = missing.get("STLENI", 0) + marks["STLENI"]
    return _frame(rows, partition_key)


def _cleveland_year(target: date, mm: int, *, file: str, row: int, label: str) -> int:
    # labels run from the target month into the following months (until the CPI release)
    ahead = (mm - target.month) % 12
    if ahead > 3:
        raise SourceError(
            f"label month is not within 3 months after the target month {target:%Y-%m}",
            file=file,
            row=row,
            field="Label",
            value=label,
        )
    return target.year + (1 if mm < target.month else 0)


def parse_cleveland_chart_csv(
    text: str, *, file: str, target: date | None = None, partition_key: str | None = None
) -> pl.DataFrame:
    """Cleveland Fed inflation-nowcast chart export for one target month (``Label`` MM/DD, ``CPI Inflation``,
    ``Core CPI Inflation``, ``PCE Inflation``, ``Core PCE Inflation``; YoY %). The target month comes from
    ``target`` or the file name (``...-2026-3.csv``). Only ``CPI Inflation`` is imported (catalog CPI = YoY);
    a blank cell means the CPI was already released. ``issued_at`` = label date 17:00 ET."""
    if target is None:
        m = re.search(r"(\d{4})-(\d{1,2})\.csv$", file)
        if not m:
            raise SourceError(
                "cannot tell the target month: pass target= or name the file ...-YYYY-M.csv", file=file
            )
        target = date(int(m.group(1)), int(m.group(2)), 1)
    rows = []
    for i, r in _rows(text, file, ("Label", "CPI Inflation")):
        lm = re.fullmatch(r"(\d{2})/(\d{2})", r["Label"])
        if not lm:
            raise SourceError("expected a label MM/DD", file=file, row=i, field="Label", value=r["Label"])
        mm, dd = int(lm.group(1)), int(lm.group(2))
        year = _cleveland_year(target, mm, file=file, row=i, label=r["Label"])
        try:
            day = date(year, mm, dd)
        except ValueError:
            raise SourceError(
                "not a calendar date", file=file, row=i, field="Label", value=r["Label"]
            ) from None
        v = parse_number(r["CPI Inflation"], file=file, row=i, field="CPI Inflation")
        if v is not None:
            rows.append(
                _Row(CLEVELAND, target, _stamp(day, CLEVELAND), v, "CPI Inflation (YoY)", f"{file}#{i}")
            )
    return _frame(rows, partition_key)


def parse_cleveland_history_csv(text: str, *, file: str, partition_key: str | None = None) -> pl.DataFrame:
    """Cleveland Fed nowcast history (``historical_nowcasts.csv``: ``date`` nowcast day, ``year-month``
    target month 'YYYY-M', ``CPI Inflation`` YoY %); ``issued_at`` = date 17:00 ET."""
    rows = []
    for i, r in _rows(text, file, ("date", "year-month", "CPI Inflation")):
        day = _date(r["date"], ("%Y-%m-%d",), file=file, row=i, field="date")
        tm = re.fullmatch(r"(\d{4})-(\d{1,2})", r["year-month"])
        if not tm or not 1 <= int(tm.group(2)) <= 12:
            raise SourceError(
                "expected a target month YYYY-M", file=file, row=i, field="year-month", value=r["year-month"]
            )
        target = date(int(tm.group(1)), int(tm.group(2)), 1)
        if day < target:
            raise SourceError(
                f"nowcast day before its target month {target:%Y-%m}",
                file=file,
                row=i,
                field="date",
                value=r["date"],
            )
        v = parse_number(r["CPI Inflation"], file=file, row=i, field="CPI Inflation")
        if v is not None:
            rows.append(
                _Row(CLEVELAND, target, _stamp(day, CLEVELAND), v, "CPI Inflation (YoY)", f"{file}#{i}")
            )
    return _frame(rows, partition_key)


def parse_chicago_csv(text: str, *, file: str, partition_key: str | None = None) -> pl.DataFrame:
    """Chicago Fed real-time unemployment-rate nowcast (``target_month`` YYYY-MM, ``release_type``
    advance/final, ``release_datetime_et`` 'YYYY-MM-DD HH:MM' America/New_York,
    ``unemployment_rate_nowcast`` %); ``issued_at`` = the release time in UTC."""
    rows = []
    need = ("target_month", "release_type", "release_datetime_et", "unemployment_rate_nowcast")
    for i, r in _rows(text, file, need):
        try:
            year, month = map(int, check_month(r["target_month"], "target_month").split("-"))
        except ValueError:
            raise SourceError(
                "expected YYYY-MM", file=file, row=i, field="target_month", value=r["target_month"]
            ) from None
        try:
            local = datetime.strptime(r["release_datetime_et"], "%Y-%m-%d %H:%M")
        except ValueError:
            raise SourceError(
                "expected YYYY-MM-DD HH:MM (ET)",
                file=file,
                row=i,
                field="release_datetime_et",
                value=r["release_datetime_et"],
            ) from None
        v = parse_number(r["unemployment_rate_nowcast"], file=file, row=i, field="unemployment_rate_nowcast")
        if v is not None:
            at = localize(
                local, ET, file=file, row=i, field="release_datetime_et", value=r["release_datetime_et"]
            )
            rows.append(
                _Row(
                    CHICAGO,
                    date(year, month, 1),
                    at,
                    v,
                    f"unemployment_rate_nowcast ({r['release_type']})",
                    f"{file}#{i}",
                )
            )
    return _frame(rows, partition_key)


# ------------------------------------------------------------------------------------------------
# live formats (workbooks, JSON)
# ------------------------------------------------------------------------------------------------


def _excel_day(cell: Any, *, file: str, row: int, field: str) -> date:
    if isinstance(cell, datetime):
        return cell.date()
    if isinstance(cell, date):
        return cell
    if isinstance(cell, (int, float)) and 20000 < cell < 80000:  # Excel serial day (1900 system)
        return date(1899, 12, 30) + timedelta(days=int(cell))
    if isinstance(cell, str):
        return _date(cell, ("%m/%d/%y", "%m/%d/%Y", "%Y-%m-%d"), file=file, row=row, field=field)
    raise SourceError("expected a date cell", file=file, row=row, field=field, value=cell)


def _workbook(content: bytes, file: str):
    import openpyxl

    try:
        return openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile/KeyError/... for a non-workbook body
        raise SourceError(f"not an .xlsx workbook: {type(exc).__name__}: {exc}", file=file) from None


def parse_gdpnow_workbook(
    content: bytes,
    *,
    file: str,
    fetched_at: datetime | None = None,
    sheet: str = "TrackingArchives",
    partition_key: str | None = None,
) -> pl.DataFrame:
    """GDPNow tracking workbook (``GDPTrackingModelDataAndForecasts.xlsx``): sheet ``sheet`` whose header row
    holds ``Forecast Date``, ``Quarter being forecasted`` and ``GDP Nowcast`` (one row per model run).
    Rows are 1-based sheet rows in errors. ``issued_at`` = forecast date 17:00 ET, capped at ``fetched_at``.
    """
    wb = _workbook(content, file)
    if sheet not in wb.sheetnames:
        raise SourceError(f"workbook has no sheet {sheet!r}; sheets: {wb.sheetnames}", file=file)
    grid = list(wb[sheet].iter_rows(values_only=True))
    need = ("Forecast Date", "Quarter being forecasted", "GDP Nowcast")
    hdr_i = next(
        (
            k
            for k, row in enumerate(grid[:20])
            if all(n in [str(c).strip() if c else "" for c in row] for n in need)
        ),
        None,
    )
    if hdr_i is None:
        raise SourceError(f"sheet {sheet!r}: no header row with {list(need)} in the first 20 rows", file=file)
    hdr = [str(c).strip() if c is not None else "" for c in grid[hdr_i]]
    col = {n: hdr.index(n) for n in need}
    rows = []
    for k, row in enumerate(grid[hdr_i + 1 :], start=hdr_i + 2):
        if not row or row[col["Forecast Date"]] in (None, ""):
            continue
        d = _excel_day(row[col["Forecast Date"]], file=file, row=k, field="Forecast Date")
        q = _excel_day(
            row[col["Quarter being forecasted"]], file=file, row=k, field="Quarter being forecasted"
        )
        cell = row[col["GDP Nowcast"]]
        if cell in (None, ""):
            continue
        v = parse_number(str(cell), file=file, row=k, field="GDP Nowcast")
        ref = _quarter_start_from_end(q, file=file, row=k, field="Quarter being forecasted")
        rows.append(_Row(GDPNOW, ref, _stamp(d, GDPNOW, fetched_at), v, "GDP Nowcast", f"{file}#{sheet}!{k}"))
    return _frame(rows, partition_key)


def parse_chicago_workbook(
    content: bytes, *, file: str, as_of: datetime, partition_key: str | None = None
) -> pl.DataFrame:
    """Chicago Fed Labor Market Indicators workbook (``chi-labor-market-indicators.xlsx``): the sheet whose
    header holds ``date`` and ``forecast50a`` (``2. Chicago Fed Real-Time UR ...``). ``date`` is the BLS
    reference week's end, so the reference period is its month; the value is the median forecast of the
    latest release of that month's nowcast (``forecast50r`` revised > ``forecast50f`` final >
    ``forecast50a`` advance). The workbook has no release times: rows are stamped ``as_of`` (tz-aware fetch
    time). Raises :class:`SourceError`; :class:`ValueError` for a naive ``as_of``."""
    if as_of is None or as_of.tzinfo is None:
        raise ValueError(f"as_of={as_of!r}: the workbook has no release times; pass a tz-aware as_of")
    wb = _workbook(content, file)
    for ws in wb.worksheets:
        grid = list(ws.iter_rows(values_only=True))
        hdr_i = next((k for k, row in enumerate(grid[:10]) if row and "forecast50a" in row), None)
        if hdr_i is not None:
            break
    else:
        raise SourceError(
            "no sheet with a 'forecast50a' header (Chicago Fed real-time UR forecast)", file=file
        )
    hdr = [str(c).strip() if c is not None else "" for c in grid[hdr_i]]
    if "date" not in hdr:
        raise SourceError(
            "real-time UR forecast sheet has no 'date' column",
            file=file,
            row=hdr_i + 1,
            field="header",
            value=hdr,
        )
    rows = []
    for k, row in enumerate(grid[hdr_i + 1 :], start=hdr_i + 2):
        cell = row[hdr.index("date")] if row else None
        if cell in (None, ""):
            continue
        d = _excel_day(cell, file=file, row=k, field="date")
        for name in ("forecast50r", "forecast50f", "forecast50a"):
            if name in hdr and row[hdr.index(name)] not in (None, ""):
                v = parse_number(str(row[hdr.index(name)]), file=file, row=k, field=name)
                rows.append(
                    _Row(
                        CHICAGO,
                        date(d.year, d.month, 1),
                        as_of.astimezone(UTC),
                        v,
                        name,
                        f"{file}#{ws.title}!{k}",
                    )
                )
                break
    return _frame(rows, partition_key)


def parse_cleveland_json(
    text: str, *, file: str, fetched_at: datetime | None = None, partition_key: str | None = None
) -> pl.DataFrame:
    """Cleveland Fed ``nowcast_year.json`` (FusionCharts data behind the inflation-nowcasting page): a list of
    charts, one per target month, ``chart.subcaption`` 'YYYY-M', ``categories[0].category[i].label`` 'MM/DD'
    aligned with ``dataset[j].data[i].value`` per series. Only the ``CPI Inflation`` series (YoY %) is
    imported; empty values (no nowcast that day, or already released) are skipped. ``issued_at`` = label date
    17:00 ET capped at ``fetched_at``. Rows in errors are 1-based chart numbers."""
    try:
        charts = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"not JSON: {exc}", file=file) from None
    if not isinstance(charts, list):
        raise SourceError(
            "expected a JSON list of charts", file=file, field="root", value=type(charts).__name__
        )
    rows = []
    for n, ch in enumerate(charts, start=1):
        try:
            sub = ch["chart"]["subcaption"]
            labels = [c.get("label") for c in ch["categories"][0]["category"]]
            datasets = ch["dataset"]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise SourceError(
                "chart lacks chart.subcaption / categories[0].category / dataset",
                file=file,
                row=n,
                field="chart",
                value=str(ch)[:80],
            ) from None
        m = re.fullmatch(r"(\d{4})-(\d{1,2})", str(sub).strip())
        if not m:
            raise SourceError(
                "expected subcaption YYYY-M", file=file, row=n, field="chart.subcaption", value=sub
            )
        target = date(int(m.group(1)), int(m.group(2)), 1)
        cpi = [d for d in datasets if isinstance(d, dict) and d.get("seriesname") == "CPI Inflation"]
        if not cpi:
            continue
        data = cpi[0].get("data") or []
        for lab, point in zip(labels, data):
            value = (point or {}).get("value", "")
            if value in ("", None) or not isinstance(lab, str):
                continue
            lm = re.fullmatch(r"(\d{2})/(\d{2})", lab.strip())
            if not lm:
                continue  # vertical release-marker categories carry no date label
            mm, dd = int(lm.group(1)), int(lm.group(2))
            day = date(_cleveland_year(target, mm, file=file, row=n, label=lab), mm, dd)
            v = parse_number(str(value), file=file, row=n, field=f"CPI Inflation[{lab}]")
            rows.append(
                _Row(
                    CLEVELAND,
                    target,
                    _stamp(day, CLEVELAND, fetched_at),
                    v,
                    "CPI Inflation (YoY)",
                    f"{file}#{sub}:{lab}",
                )
            )
    return _frame(rows, partition_key)


# ------------------------------------------------------------------------------------------------
# transports
# ------------------------------------------------------------------------------------------------


def _read(snapshot_dir: Path, rel: str) -> tuple[str, str]:
    p = snapshot_dir / rel
    if not p.is_file():
        raise SourceError("snapshot file does not exist", file=str(p))
    return p.read_text(encoding="utf-8-sig"), rel


DEFAULT_SNAPSHOT_MODELS = (GDPNOW, NYFED, CLEVELAND, CHICAGO)


@runtime_checkable
class FedNowcastsClient(Protocol):
    """Fed regional-bank nowcast series as ``nowcasts`` rows (:class:`FedNowcastsSnapshot` or
    :class:`FedNowcastsLive`). ``current_only``: True when a call returns only what the services publish now
    (the caller keeps earlier stored publications, so the step function of publication time only grows);
    False when the source is the complete record."""

    current_only: bool

    def nowcasts(self, missing: dict[str, int] | None = None) -> pl.DataFrame:
        """Every configured Fed series (partition_key = model_id, ``producer`` NULL); ``missing`` (a dict,
        optional) gets the missing-value marker (``"."``) cells per series read (St. Louis ``STLENI``)."""
        ...


class FedNowcastsSnapshot:
    """All Fed comparator series of ``models`` from the snapshot files (:data:`SNAPSHOT_FILES`).

    St. Louis (``fed/stlouis-eni``) is read only when ``stlouis_as_of`` is given (its FRED file has no
    publication date; its one row is the 2025Q4 value). Duplicate (model, period, issued_at) rows across
    files must agree, else :class:`SourceError`; an unknown model raises :class:`ValueError`.
    """

    transport = "snapshot"
    current_only = False

    def __init__(
        self,
        snapshot_dir: str | Path,
        *,
        models: Iterable[str] = DEFAULT_SNAPSHOT_MODELS,
        stlouis_as_of: datetime | None = None,
    ) -> None:
        self.snapshot_dir = Path(snapshot_dir)
        self.models = list(models)
        if stlouis_as_of is not None and STLOUIS not in self.models:
            self.models.append(STLOUIS)
        unknown = [m for m in self.models if m not in MODEL_IDS]
        if unknown:
            raise ValueError(f"unknown Fed model {unknown[0]!r}; expected one of {MODEL_IDS}")
        self.stlouis_as_of = stlouis_as_of

    def nowcasts(self, missing: dict[str, int] | None = None) -> pl.DataFrame:
        frames = []
        for model in self.models:
            for rel in SNAPSHOT_FILES[model]:
                text, name = _read(self.snapshot_dir, rel)
                if model == GDPNOW:
                    frames.append(parse_gdpnow_csv(text, file=name))
                elif model == NYFED:
                    frames.append(parse_nyfed_csv(text, file=name))
                elif model == STLOUIS:
                    if self.stlouis_as_of is None:
                        raise ValueError(
                            "fed/stlouis-eni needs stlouis_as_of (its file has no publication date)"
                        )
                    frames.append(
                        parse_fred_stleni_csv(text, file=name, as_of=self.stlouis_as_of, missing=missing)
                    )
                elif model == CLEVELAND:
                    parse = parse_cleveland_history_csv if "historical" in rel else parse_cleveland_chart_csv
                    frames.append(parse(text, file=name))
                else:
                    frames.append(parse_chicago_csv(text, file=name))
        out = pl.concat(frames, how="vertical") if frames else empty_frame("nowcasts")
        return _dedupe(out)


def _dedupe(frame: pl.DataFrame) -> pl.DataFrame:
    keys = ["model_id", "indicator_id", "reference_period", "issued_at"]
    clash = (
        frame.group_by(keys)
        .agg(pl.col("value").n_unique().alias("n"), pl.col("raw_response_id"))
        .filter(pl.col("n") > 1)
    )
    if clash.height:
        r = clash.row(0, named=True)
        raise SourceError(
            f"{r['model_id']} {r['reference_period']} published twice at {r['issued_at']} with "
            f"different values ({r['raw_response_id']})",
            file=str(r["raw_response_id"][0]),
        )
    return frame.unique(subset=keys, keep="first", maintain_order=True).sort(
        "model_id", "issued_at", "reference_period"
    )


class FedNowcastsLive:
    """Each Fed series of ``models`` downloaded from its service (``urls`` override :data:`DEFAULT_URLS` per
    model) and parsed with the same rules as the snapshots. ``clock`` (default: now, UTC) gives the fetch
    time that caps publication stamps and stamps the undated St. Louis and Chicago values; ``http`` an
    existing client (default: one per call with a browser user agent). :meth:`nowcasts` raises
    :class:`SourceError` naming the URL on HTTP or format errors."""

    transport = "live"
    current_only = True

    def __init__(
        self,
        *,
        models: Iterable[str] = MODEL_IDS,
        urls: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.models = list(models)
        unknown = [m for m in self.models if m not in MODEL_IDS]
        if unknown:
            raise ValueError(f"unknown Fed model {unknown[0]!r}; expected one of {MODEL_IDS}")
        self.urls = {**DEFAULT_URLS, **{k: v for k, v in (urls or {}).items() if v}}
        self._clock = clock or (lambda: datetime.now(UTC))
        self._http = http

    def nowcasts(self, missing: dict[str, int] | None = None) -> pl.DataFrame:
        fetched = self._clock().astimezone(UTC)
        frames = []
        for model in self.models:
            url = self.urls[model]
            resp = http_get(url, client=self._http, headers=_HEADERS, what=f"{model} nowcasts")
            if model == GDPNOW:
                frames.append(parse_gdpnow_workbook(resp.content, file=url, fetched_at=fetched))
            elif model == CLEVELAND:
                frames.append(parse_cleveland_json(resp.text, file=url, fetched_at=fetched))
            elif model == NYFED:
                frames.append(parse_nyfed_csv(resp.text, file=url, fetched_at=fetched))
            elif model == STLOUIS:
                frames.append(parse_fred_stleni_csv(resp.text, file=url, as_of=fetched, missing=missing))
            else:
                frames.append(parse_chicago_workbook(resp.content, file=url, as_of=fetched))
        out = pl.concat(frames, how="vertical") if frames else empty_frame("nowcasts")
        return _dedupe(out)
