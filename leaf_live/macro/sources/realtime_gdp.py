"""Real-time vintages of US real GDP: the Philadelphia Fed's Real-Time Data Set for Macroeconomists (RTDSM,
Croushore and Stark 2001), variable ``ROUTPUT`` (real GNP/GDP, billions of real dollars, SAAR; base year
varies across vintages), quarterly vintages since 1965Q4. The LiveMacroEval auto-ARIMA baseline (App. I) fits
real GDP on "the vintage preceding the target month"; the FRED-QD snapshot holds one vintage, so these are its
GDP vintages.

File format (both transports; the Philadelphia Fed's workbook ``ROUTPUTQvQd.xlsx``): one sheet; column
``DATE`` = observation quarter ``YYYY:Qn``; one column per vintage ``ROUTPUTyyQn`` (two-digit year: 65-99 =
19xx, 00-64 = 20xx); cells are numbers or ``#N/A`` (not yet observed in that vintage).

Vintage dates (the Philadelphia Fed: "new vintages are added shortly after the 15th day of the middle month of
each quarter"; each vintage holds the data as they stood on that day): vintage ``yyQn`` is labelled with the
middle month of quarter n (Q1 -> February, ..., Q4 -> November) and ``available_at`` = the end of that 15th
day, New York time (the next day 00:00 ET, in UTC).

Two implementations of one client interface (:class:`RealTimeGdpClient`):

:class:`RealTimeGdpSnapshot` (files under the snapshot directory, ``macro/PROVENANCE.md`` section 3)
    * ``macro/philly_fed_rtdsm_DSE3101/ROUTPUTQvQd.xlsx``: vintages 1965Q4 .. 2024Q1;
    * after the last vintage, **approximate vintages** from ``macro/fev_macro_rmmomin/panels/
      gdpc1_releases_first_second_third.csv`` (ALFRED's first, second and third releases of GDPC1 with their
      dates, and each release's level of the previous quarter): one vintage per release date after the last
      RTDSM vintage that adds or revises a quarter after the last RTDSM quarter, labelled with the release
      month, ``available_at`` = the release date 08:30 ET. Its history is the last RTDSM vintage up to that
      vintage's last quarter, then, quarter by quarter, the growth each quarter had in its latest release
      known on that date (release level / that release's level of the previous quarter). Revisions of quarters
      up to the last RTDSM quarter (e.g. the September 2024 and 2025 annual revisions) are therefore not in
      these vintages (``approximate`` = True). The panel's ``latest`` columns (as of 2026-03-13) are never
      used.
:class:`RealTimeGdpLive`
    The Philadelphia Fed's published workbook at ``{base_url}/ROUTPUTQvQd.xlsx`` (:data:`DEFAULT_BASE_URL`),
    which holds every vintage up to the current quarter (no panel needed).

Both return the same long frame (:meth:`RealTimeGdpClient.vintages`). Errors:
:class:`~leaf_live.core.sources.SourceError` naming the file (or URL), row, field and value.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from typing import Protocol, runtime_checkable

import polars as pl

from leaf_live.core.pit import ET, UTC, label_for_month
from leaf_live.core.sources import HttpFiles, SnapshotFiles, SourceError, cached_parse, csv_rows, parse_number

SERIES = "ROUTPUT"
SOURCE_RTDSM = "philly-rtdsm"
SOURCE_RELEASES = "gdp-releases"
WORKBOOK = "ROUTPUTQvQd.xlsx"
SNAPSHOT_WORKBOOK = f"macro/philly_fed_rtdsm_DSE3101/{WORKBOOK}"
SNAPSHOT_PANEL = "macro/fev_macro_rmmomin/panels/gdpc1_releases_first_second_third.csv"
DEFAULT_BASE_URL = (
    "https://www.philadelphiafed.org/-/media/frbp/assets/surveys-and-data/real-time-data/data-files/xlsx"
)
RELEASE_TIME_ET = time(8, 30)  # BEA's GDP releases
STAGES = ("first", "second", "third")

_VINTAGE = re.compile(rf"{SERIES}(\d{{2}})Q([1-4])")
_QUARTER = re.compile(r"(\d{4}):Q([1-4])")

COLUMNS = {
    "source": pl.Utf8,
    "series_id": pl.Utf8,
    "vintage": pl.Utf8,
    "reference_period": pl.Date,
    "value": pl.Float64,
    "available_at": pl.Datetime("us", "UTC"),
    "approximate": pl.Boolean,
}


def vintage_label(column: str, *, file: str = WORKBOOK) -> tuple[str, datetime]:
    """``(label, available_at)`` of an RTDSM vintage column (``'ROUTPUT24Q1'`` -> ``('2024-02', 2024-02-16
    05:00 UTC)``: the quarter's middle month; the end of its 15th day in New York). Raises
    :class:`SourceError`."""
    m = _VINTAGE.fullmatch(column.strip())
    if m is None:
        raise SourceError(
            f"not a vintage column {SERIES}yyQn", file=file, row=0, field="header", value=column
        )
    yy, q = int(m.group(1)), int(m.group(2))
    year = 1900 + yy if yy >= 65 else 2000 + yy
    month = 3 * q - 1
    day_after = datetime(year, month, 15, tzinfo=ET) + timedelta(days=1)
    return label_for_month(year, month), day_after.astimezone(UTC)


def _quarter(text: object, *, file: str, row: int) -> date:
    m = _QUARTER.fullmatch(str(text or "").strip())
    if m is None:
        raise SourceError("not a quarter YYYY:Qn", file=file, row=row, field="DATE", value=text)
    return date(int(m.group(1)), 3 * int(m.group(2)) - 2, 1)


def parse_workbook(raw: bytes, *, file: str) -> pl.DataFrame:
    """Every observation of every vintage in an RTDSM ``ROUTPUTQvQd.xlsx`` workbook (format in the module
    docstring) as the long frame of :data:`COLUMNS` (``source`` = 'philly-rtdsm', ``series_id`` = 'ROUTPUT',
    ``approximate`` False), ``#N/A`` and empty cells left out. Raises :class:`SourceError` for an unreadable
    workbook, a bad header, quarter or number."""
    import openpyxl

    try:
        wb = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile / KeyError / InvalidFileException
        raise SourceError(f"cannot read workbook: {type(exc).__name__}: {exc}", file=file) from None
    try:
        rows = wb[wb.sheetnames[0]].iter_rows(values_only=True)
        header = [str(h).strip() if h is not None else "" for h in next(rows, ())]
        if not header or header[0] != "DATE":
            raise SourceError(
                "first column must be DATE",
                file=file,
                row=0,
                field="header",
                value=header[0] if header else "",
            )
        vintages = [vintage_label(h, file=file) for h in header[1:]]
        out: dict[str, list] = {c: [] for c in COLUMNS}
        for i, r in enumerate(rows, start=1):
            if r is None or all(c is None for c in r):
                continue
            period = _quarter(r[0], file=file, row=i)
            for (label, avail), cell, name in zip(vintages, r[1:], header[1:]):
                if cell is None or (isinstance(cell, str) and cell.strip() in ("", "#N/A")):
                    continue
                if isinstance(cell, str):
                    value = parse_number(cell, file=file, row=i, field=name, required=True)
                else:
                    value = float(cell)
                    if not math.isfinite(value):
                        raise SourceError("number is not finite", file=file, row=i, field=name, value=cell)
                out["vintage"].append(label)
                out["reference_period"].append(period)
                out["value"].append(value)
                out["available_at"].append(avail)
    finally:
        wb.close()
    n = len(out["vintage"])
    out.update(source=[SOURCE_RTDSM] * n, series_id=[SERIES] * n, approximate=[False] * n)
    return pl.DataFrame(out, schema=COLUMNS)


def _release_at(text: str, *, file: str, row: int, field: str) -> datetime:
    try:
        d = date.fromisoformat(text.strip())
    except ValueError:
        raise SourceError("not a date YYYY-MM-DD", file=file, row=row, field=field, value=text) from None
    return datetime.combine(d, RELEASE_TIME_ET, tzinfo=ET).astimezone(UTC)


def parse_release_panel(text: str, *, file: str) -> list[dict]:
    """The first/second/third releases of real GDP from the ALFRED panel CSV (``observation_date``,
    ``{stage}_release_date``, ``{stage}_release``, ``alfred_prev_level_{stage}`` for stage
    first/second/third): one dict per release with a previous-quarter level, ``{period, stage, release_at
    (UTC, 08:30 ET), level, prev_level}``. Raises :class:`SourceError` naming row, field and value."""
    need = (
        "observation_date",
        *(f"{s}_{c}" for s in STAGES for c in ("release_date", "release")),
        *(f"alfred_prev_level_{s}" for s in STAGES),
    )
    out = []
    for i, r in csv_rows(text, file=file, required=need):
        try:
            period = date.fromisoformat(r["observation_date"].strip())
        except ValueError:
            raise SourceError(
                "not a date YYYY-MM-DD",
                file=file,
                row=i,
                field="observation_date",
                value=r["observation_date"],
            ) from None
        if period.day != 1 or period.month not in (1, 4, 7, 10):
            raise SourceError(
                "observation_date is not the first day of a quarter",
                file=file,
                row=i,
                field="observation_date",
                value=r["observation_date"],
            )
        for s in STAGES:
            when = (r[f"{s}_release_date"] or "").strip()
            level = parse_number(r[f"{s}_release"], file=file, row=i, field=f"{s}_release")
            prev = parse_number(r[f"alfred_prev_level_{s}"], file=file, row=i, field=f"alfred_prev_level_{s}")
            if not when or level is None or prev is None:
                continue  # not released yet, or no previous quarter in that release
            if level <= 0 or prev <= 0:
                raise SourceError(
                    "GDP level must be positive", file=file, row=i, field=f"{s}_release", value=level
                )
            out.append(
                {
                    "period": period,
                    "stage": s,
                    "level": level,
                    "prev_level": prev,
                    "release_at": _release_at(when, file=file, row=i, field=f"{s}_release_date"),
                }
            )
    return out


def extend_with_releases(base: pl.DataFrame, releases: Iterable[dict]) -> pl.DataFrame:
    """Approximate vintages after the last vintage of ``base`` (an RTDSM long frame) from first/second/third
    releases (:func:`parse_release_panel`): the module docstring's rule. Returns the new vintages as the long
    frame of :data:`COLUMNS` (``source`` 'gdp-releases', ``approximate`` True); empty when ``base`` is."""
    if base.height == 0:
        return pl.DataFrame(schema=COLUMNS)
    last = base.sort("available_at", "vintage").row(-1, named=True)
    label0, at0 = last["vintage"], last["available_at"]
    anchor = base.filter(pl.col("vintage") == label0).sort("reference_period")
    q0 = anchor["reference_period"][-1]
    after = sorted(
        (r for r in releases if r["period"] > q0 and r["release_at"] > at0), key=lambda r: r["release_at"]
    )
    out: dict[str, list] = {c: [] for c in COLUMNS}
    for k, rel in enumerate(after):
        at = rel["release_at"]
        if k + 1 < len(after) and after[k + 1]["release_at"] == at:
            continue  # one vintage per release day: the last release of that day closes it
        latest: dict[date, dict] = {}
        for r in after[: k + 1]:
            latest[r["period"]] = r  # releases are in time order: the last one of each quarter wins
        periods, values = list(anchor["reference_period"]), list(anchor["value"])
        q = q0
        while True:
            y, m = (q.year, q.month + 3) if q.month < 10 else (q.year + 1, 1)
            q = date(y, m, 1)
            r = latest.get(q)
            if r is None:
                break
            periods.append(q)
            values.append(values[-1] * r["level"] / r["prev_level"])
        if len(periods) == anchor.height:
            continue
        label = label_for_month(at.astimezone(ET).year, at.astimezone(ET).month)
        n = len(periods)
        out["vintage"] += [label] * n
        out["reference_period"] += periods
        out["value"] += values
        out["available_at"] += [at] * n
    n = len(out["vintage"])
    out.update(source=[SOURCE_RELEASES] * n, series_id=[SERIES] * n, approximate=[True] * n)
    return pl.DataFrame(out, schema=COLUMNS)


# ------------------------------------------------------------------------------------------------
# the client interface and its two implementations
# ------------------------------------------------------------------------------------------------


@runtime_checkable
class RealTimeGdpClient(Protocol):
    """Real-time vintages of real GDP, from the recorded files (:class:`RealTimeGdpSnapshot`) or the
    Philadelphia Fed (:class:`RealTimeGdpLive`)."""

    def vintages(self) -> pl.DataFrame:
        """Every vintage's observations, long: :data:`COLUMNS` (``source``, ``series_id`` 'ROUTPUT',
        ``vintage`` YYYY-MM, ``reference_period`` quarter start, ``value`` billions of real dollars SAAR,
        ``available_at`` UTC, ``approximate``), sorted by vintage and period."""
        ...


class RealTimeGdpSnapshot:
    """The recorded RTDSM workbook (vintages to 2024Q1) extended by approximate vintages from the recorded
    first/second/third-release panel (module docstring); parsed files are cached by path, modification time
    and size. Raises :class:`ValueError` when ``snapshot_dir`` is not a directory."""

    def __init__(self, snapshot_dir: str | os.PathLike) -> None:
        self.files = SnapshotFiles(snapshot_dir)

    def rtdsm(self) -> pl.DataFrame:
        """The RTDSM vintages of the recorded workbook alone (the long frame)."""
        name = self.files.name(SNAPSHOT_WORKBOOK)
        path = self.files.path(SNAPSHOT_WORKBOOK)
        if not path.is_file():
            raise SourceError("file not found", file=name)
        return cached_parse("rtdsm-routput", path, lambda p: parse_workbook(p.read_bytes(), file=name))

    def vintages(self) -> pl.DataFrame:
        base = self.rtdsm()
        panel = self.files.parsed(
            "gdp-release-panel", SNAPSHOT_PANEL, lambda text, name: parse_release_panel(text, file=name)
        )
        return pl.concat([base, extend_with_releases(base, panel)]).sort(
            "vintage", "available_at", "reference_period"
        )


class RealTimeGdpLive:
    """The Philadelphia Fed's workbook at ``{base_url}/ROUTPUTQvQd.xlsx`` (default :data:`DEFAULT_BASE_URL`;
    tests point it at a loopback server), fetched once per client."""

    def __init__(self, base_url: str = DEFAULT_BASE_URL) -> None:
        self.base_url = base_url.rstrip("/")
        self.files = HttpFiles(self.base_url)
        self._frame: pl.DataFrame | None = None

    def vintages(self) -> pl.DataFrame:
        if self._frame is None:
            raw = self.files.read_bytes(WORKBOOK)
            self._frame = parse_workbook(raw, file=self.files.name(WORKBOOK)).sort(
                "vintage", "available_at", "reference_period"
            )
        return self._frame


__all__ = [
    "COLUMNS",
    "DEFAULT_BASE_URL",
    "RealTimeGdpClient",
    "RealTimeGdpLive",
    "RealTimeGdpSnapshot",
    "SERIES",
    "SOURCE_RELEASES",
    "SOURCE_RTDSM",
    "extend_with_releases",
    "parse_release_panel",
    "parse_workbook",
    "vintage_label",
]
