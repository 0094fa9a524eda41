"""FRED / ALFRED series (Federal Reserve Bank of St. Louis): actuals and their vintages.

One client interface (:class:`FredClient`), two implementations:

:class:`FredLive`
    Keyless by default: ``{graph_url}/graph/fredgraph.csv?id=<ID>`` (the CSV behind FRED's "Download" button;
    latest vintage). With an API key (the ``fred`` resource passes ``FRED_API_KEY``) the FRED API
    ``{api_url}/series/observations`` serves ALFRED vintages: a series as it was known on a
    ``vintage_date`` (``realtime_start = realtime_end = vintage_date``), or, via
    :meth:`FredLive.first_release`, every observation's first release (``output_type=4``) with the date
    it was first published. The key is sent only to the API and never appears in errors or rows.
:class:`FredSnapshot`
    fredgraph-style CSVs under ``macro/fred_series/<folder>/<ID>.csv`` of the snapshot; the folders use
    slightly different headers (``date,value``, ``date,<ID>``, ``observation_date,<ID>``), all accepted, as is
    FRED's ``.`` for a missing value. Snapshots hold one (recent) vintage, no release dates.

Values are in the series' own units (FRED levels, e.g. PAYEMS in thousands of persons); transforming them
into an indicator's reporting unit is the caller's job.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

import polars as pl

from leaf_live.core.sources import (
    MISSING_MARKERS,
    SourceError,
    cached_parse,
    csv_rows,
    display_path,
    http_get_text,
    parse_number,
    redact,
)

GRAPH_URL = "https://fred.stlouisfed.org"
API_URL = "https://api.stlouisfed.org/fred"
SNAPSHOT_DIR = "macro/fred_series"
SERIES_SCHEMA = {"date": pl.Date, "value": pl.Float64}
FIRST_RELEASE_SCHEMA = {"date": pl.Date, "value": pl.Float64, "realtime_start": pl.Date}
_DATE_COLUMNS = ("date", "DATE", "observation_date")
Missing = dict[str, int] | None  # out: missing-value marker cells ("."), per series id


@runtime_checkable
class FredClient(Protocol):
    """FRED / ALFRED series (:class:`FredSnapshot` or :class:`FredLive`)."""

    def series(
        self,
        series_id: str,
        *,
        vintage_date: date | None = None,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        """One series as ``[date, value]`` (see :meth:`FredLive.series`)."""
        ...

    def first_release(
        self,
        series_id: str,
        *,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        """Every observation's first release with the day it was published (ALFRED)."""
        ...


def _window(frame: pl.DataFrame, start: date | None, end: date | None) -> pl.DataFrame:
    if start is not None:
        frame = frame.filter(pl.col("date") >= start)
    if end is not None:
        frame = frame.filter(pl.col("date") <= end)
    return frame


class FredSnapshot:
    """fredgraph-style CSVs under ``macro/fred_series/<folder>/<ID>.csv`` of ``snapshot_dir``: one recent
    vintage per file, no release dates. ``folder``: the sub-folder to read; default, per series, the folder
    whose file has the latest observation (the most recent vintage). Raises :class:`ValueError` when
    ``snapshot_dir`` is not a directory."""

    transport = "snapshot"

    def __init__(self, snapshot_dir: str | Path, *, folder: str | None = None) -> None:
        if snapshot_dir is None or not Path(snapshot_dir).is_dir():
            raise ValueError(f"snapshot_dir={snapshot_dir!s} does not exist (set LEAF_LIVE_SNAPSHOT)")
        self.snapshot_dir = Path(snapshot_dir)
        self.folder = folder

    def series(
        self,
        series_id: str,
        *,
        vintage_date: date | None = None,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        """``date`` (pl.Date), ``value`` (pl.Float64, NULL where FRED has ``.``), sorted by date; ``missing``
        (a dict, optional) gets ``{series_id: number of "." cells in the file read}``. Raises
        :class:`SourceError` (no file for the id; malformed CSV naming file, row, field, value) and
        :class:`ValueError` for a ``vintage_date`` (the snapshot holds one vintage)."""
        if vintage_date is not None:
            raise ValueError(
                "vintage_date: the fred_series snapshot holds one vintage; use the FRED-MD vintages "
                "(macro/fred_md) or the live client with FRED_API_KEY"
            )
        frame, marks = _snapshot_series(series_id, self.snapshot_dir, self.folder)
        _add(missing, series_id, marks)
        return _window(frame, observation_start, observation_end)

    def first_release(
        self,
        series_id: str,
        *,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        raise ValueError(
            f"first_release({series_id!r}): the fred_series snapshot has no release dates; use the "
            "live client with FRED_API_KEY (ALFRED)"
        )


class FredLive:
    """FRED over HTTP. Keyless: ``{graph_url}/graph/fredgraph.csv?id=<ID>`` (latest vintage). With ``api_key``
    the FRED API ``{api_url}/series/observations`` serves ALFRED vintages and first releases. The key is sent
    only to the API and never appears in errors or rows. Base URLs are arguments (tests point them at a
    local server)."""

    transport = "live"

    def __init__(
        self, *, api_key: str | None = None, graph_url: str = GRAPH_URL, api_url: str = API_URL
    ) -> None:
        self.api_key = api_key or None
        self.graph_url = graph_url
        self.api_url = api_url

    def series(
        self,
        series_id: str,
        *,
        vintage_date: date | None = None,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        """One FRED series as ``[date, value]``: ``date`` (pl.Date, observation period start), ``value``
        (pl.Float64, the series' units; NULL where FRED has ``.``), sorted by date, kept to the inclusive
        observation range. ``vintage_date``: the series as known on that day (ALFRED; needs the API key).
        ``missing`` (a dict, optional) gets ``{series_id: number of "." values in the answer}``.

        Raises :class:`SourceError` (HTTP error, malformed CSV/JSON naming the URL, row, field and value) and
        :class:`ValueError` for ``vintage_date`` without an API key."""
        if vintage_date is None:
            url = f"{self.graph_url.rstrip('/')}/graph/fredgraph.csv"
            params = {"id": series_id}
            if observation_start is not None:
                params["cosd"] = observation_start.isoformat()
            if observation_end is not None:
                params["coed"] = observation_end.isoformat()
            text = http_get_text(url, params=params, what=f"FRED series {series_id}")
            frame = parse_fredgraph_csv(text, f"{url}?id={series_id}", series_id, missing=missing)
        else:
            obs = _api_observations(
                series_id,
                self._key("vintage_date"),
                self.api_url,
                {
                    "realtime_start": vintage_date.isoformat(),
                    "realtime_end": vintage_date.isoformat(),
                },
                observation_start,
                observation_end,
                missing,
            )
            frame = obs.select("date", "value")
        return _window(frame, observation_start, observation_end)

    def first_release(
        self,
        series_id: str,
        *,
        observation_start: date | None = None,
        observation_end: date | None = None,
        missing: Missing = None,
    ) -> pl.DataFrame:
        """Every observation's FIRST release from ALFRED (FRED API ``output_type=4``, "initial release only"):
        ``date``, ``value`` (first-release value, series units) and ``realtime_start`` (the day it was first
        published), sorted by date; ``missing`` as in :meth:`series`. Raises like :meth:`series`."""
        obs = _api_observations(
            series_id,
            self._key("first_release"),
            self.api_url,
            {
                "realtime_start": "1776-07-04",
                "realtime_end": "9999-12-31",
                "output_type": "4",
            },
            observation_start,
            observation_end,
            missing,
        )
        return obs.select("date", "value", "realtime_start")

    def _key(self, what: str) -> str:
        if not self.api_key:
            raise ValueError(
                f"{what}: ALFRED vintages need a FRED API key (set FRED_API_KEY); the keyless "
                "fredgraph.csv download serves only the latest vintage"
            )
        return self.api_key


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


def _add(missing: Missing, series_id: str, n: int) -> None:
    if missing is not None and n:
        missing[series_id] = missing.get(series_id, 0) + n


def parse_fredgraph_csv(
    text: str, file: str, series_id: str | None = None, *, missing: Missing = None
) -> pl.DataFrame:
    """Parse a fredgraph-style CSV (``<date column>,<value column>``; date column ``date``, ``DATE`` or
    ``observation_date``; value column ``value`` or the series id) into ``[date, value]`` sorted by date.
    A value that is empty or FRED's missing-value marker ``"."`` is NULL, never a refusal of the file; the
    markers are counted by :func:`~leaf_live.core.sources.csv_rows` and added to ``missing`` (a dict,
    optional) under ``series_id`` (else the value column's name). Raises :class:`SourceError` naming file,
    row, field and value."""
    header = text.lstrip("\ufeff").split("\n", 1)[0].strip().split(",")
    if len(header) != 2 or header[0] not in _DATE_COLUMNS:
        raise SourceError(
            f"expected a two-column fredgraph header (<{'|'.join(_DATE_COLUMNS)}>,<value>)",
            file=file,
            row=0,
            field="header",
            value=",".join(header),
        )
    dcol, vcol = header
    if series_id is not None and vcol not in ("value", series_id):
        raise SourceError(
            f"value column is neither 'value' nor the series id {series_id!r}",
            file=file,
            row=0,
            field="header",
            value=vcol,
        )
    dates, values, marks = [], [], {}
    for i, r in csv_rows(text, file=file, required=(dcol, vcol), missing=marks):
        dates.append(_parse_date(r[dcol], file=file, row=i, field=dcol))
        values.append(parse_number(r[vcol], file=file, row=i, field=vcol))
    _add(missing, series_id or vcol, marks.get(vcol, 0))
    return pl.DataFrame({"date": dates, "value": values}, schema=SERIES_SCHEMA).sort("date")


def _parse_date(text: str | None, *, file: str, row: int, field: str) -> date:
    try:
        return datetime.strptime((text or "").strip(), "%Y-%m-%d").date()
    except ValueError:
        raise SourceError("not a date YYYY-MM-DD", file=file, row=row, field=field, value=text) from None


def _api_observations(
    series_id: str,
    key: str,
    api_url: str,
    extra: dict[str, str],
    start: date | None,
    end: date | None,
    missing: Missing = None,
) -> pl.DataFrame:
    url = f"{api_url.rstrip('/')}/series/observations"
    params = {"series_id": series_id, "api_key": key, "file_type": "json", **extra}
    if start is not None:
        params["observation_start"] = start.isoformat()
    if end is not None:
        params["observation_end"] = end.isoformat()
    shown = redact(f"{url}?series_id={series_id}&api_key={key}")
    text = http_get_text(url, params=params, what=f"FRED API observations of {series_id}")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"response is not JSON: {exc}", file=shown) from None
    if "error_message" in payload:
        raise SourceError(
            f"FRED API error {payload.get('error_code')}: {payload['error_message']}", file=shown
        )
    obs = payload.get("observations")
    if not isinstance(obs, list):
        raise SourceError(
            "response has no 'observations' list", file=shown, field="observations", value=type(obs).__name__
        )
    dates, values, starts = [], [], []
    for i, o in enumerate(obs, start=1):
        if not isinstance(o, dict):
            raise SourceError("observation is not an object", file=shown, row=i, field="observation", value=o)
        dates.append(_parse_date(o.get("date"), file=shown, row=i, field="date"))
        starts.append(_parse_date(o.get("realtime_start"), file=shown, row=i, field="realtime_start"))
        raw = str(o.get("value", "")).strip()
        _add(missing, series_id, int(raw in MISSING_MARKERS))
        values.append(parse_number(raw, file=shown, row=i, field="value"))
    return pl.DataFrame(
        {"date": dates, "value": values, "realtime_start": starts}, schema=FIRST_RELEASE_SCHEMA
    ).sort(["date", "realtime_start"])


def _snapshot_series(series_id: str, snapshot_dir: Path, folder: str | None) -> tuple[pl.DataFrame, int]:
    """The most recent snapshot file of ``series_id`` parsed, with its count of ``"."`` cells."""
    root = Path(snapshot_dir) / SNAPSHOT_DIR
    candidates = sorted(root.glob(f"{folder or '*'}/{series_id}.csv"))
    if not candidates:
        have = sorted({p.stem for p in root.glob("*/*.csv")})
        raise SourceError(
            f"no snapshot file for FRED series {series_id!r}"
            + (f" in folder {folder!r}" if folder else "")
            + f"; available: {have}",
            file=display_path(root, snapshot_dir),
        )

    def parse(p: Path) -> tuple[pl.DataFrame, int]:
        marks: dict[str, int] = {}
        text = p.read_text(encoding="utf-8")
        frame = parse_fredgraph_csv(text, display_path(p, snapshot_dir), series_id, missing=marks)
        return frame, marks.get(series_id, 0)

    parsed = [cached_parse("fredgraph-counted", p, parse) for p in candidates]
    # several folders may hold the id: the latest observation marks the most recent vintage
    return max(parsed, key=lambda fm: (fm[0]["date"].max() or date.min, fm[0].height))
