"""FRED-MD / FRED-QD vintages (McCracken and Ng 2016, 2021): raw monthly / quarterly macro panels, one file
per vintage, with the canonical transform code (tcode) of every series. LiveMacroEval App. I fits its
auto-ARIMA baseline on "the FRED vintage immediately preceding the target month" and takes the differencing
order from the tcode.

File format (both transports; the publisher's CSV):

* line 1: header ``sasdate,RPI,W875RX1,...``;
* FRED-MD: line 2 ``Transform:,5,5,...``; FRED-QD: line 2 ``factors,0,1,...`` and line 3 ``transform,5,...``
  (the snapshot's ≈2025-12 FRED-MD vintage keeps the tcode row in a separate file with the same layout);
* data rows ``M/D/YYYY`` (older files ``MM/DD/YYYY``; one vintage, 2023-11, uses two-digit years ``M/D/YY``,
  read as 1959-2058), not always in date order; empty cells and ``"."`` are missing values (the markers
  counted per series, never a refusal of the file); rows whose cells are all
  empty are ignored. FRED-QD dates the quarter by its last month (``3/1/1959`` = 1959Q1).

Two implementations of one client interface (:class:`FredMdClient`):

:class:`FredMdSnapshot` (files under the snapshot directory, see ``macro/PROVENANCE.md`` section 3)
    * ``macro/fred_md/vintages_1999-08_to_2024-03_DSE3101/fred-md_vintages_1999-08_2024-03.tar.xz``: the
      official monthly vintages 1999-08 ... 2024-03 (296 files ``fred-md_vintages/YYYY-MM.csv``), read member
      by member with :mod:`tarfile` (nothing is extracted to disk);
    * ``macro/fred_md/vintage_2025-03_approx_scharaner/FRED_MD_Data.csv.gz`` and
      ``macro/fred_qd/vintage_2025-03_approx_scharaner/FRED_QD_Data.csv.gz``: listed as vintage ``2025-03``
      (approximate: the MD file ends 2025-02, the QD file 2024Q4);
    * ``macro/fred_md/vintage_2025-12_approx_Nakamoto911_mrs/fred_md.csv.gz`` + ``fred_md_transforms.csv``:
      listed as vintage ``2025-12`` (approximate; ends 2025-11; October 2025 CPI and unemployment were never
      published because of the federal shutdown, so those cells are empty).
    Parsed vintages are cached in-process, keyed by file path, modification time and size.
:class:`FredMdLive`
    The St. Louis Fed download area (base URL :data:`DEFAULT_BASE_URL`, overridable with ``base_url=``; the
    setting ``LEAF_LIVE_FRED_MD_BASE_URL`` reaches it through the ``fred_md`` resource). A vintage ``YYYY-MM``
    is tried at ``{base}/monthly/YYYY-MM-md.csv`` (naming used since 2025) and then
    ``{base}/monthly/YYYY-MM.csv`` (earlier naming); FRED-QD at ``{base}/quarterly/YYYY-MM-qd.csv`` then
    ``{base}/quarterly/YYYY-MM.csv``; the vintage ``current`` at ``{base}/{monthly|quarterly}/current.csv``.
    Immutable vintages are cached in-process.

Errors: :class:`~leaf_live.macro.sources.SourceError` naming the file (archive member or URL), the 1-based
data row (header excluded; the text line is given too), the field (column) and the value.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import tarfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

from leaf_live.core.pit import check_month, month_index, month_of_index
from leaf_live.core.sources import MISSING_MARKERS, SourceError, http_get_text

KINDS = ("md", "qd")
DEFAULT_BASE_URL = "https://www.stlouisfed.org/-/media/project/frbstl/stlouisfed/research/fred-md"
_FREQ_DIR = {"md": "monthly", "qd": "quarterly"}
# First vintage the publisher lists (FRED-MD archive page); FRED-QD vintages start later.
FIRST_LIVE_VINTAGE = {"md": "1999-08", "qd": "2018-05"}

ARCHIVE = "macro/fred_md/vintages_1999-08_to_2024-03_DSE3101/fred-md_vintages_1999-08_2024-03.tar.xz"
_ARCHIVE_MEMBER = re.compile(r"(?:^|/)(\d{4}-\d{2})\.csv$")
Columns = Sequence[str] | None  # series to keep (None: every column)
Missing = dict[str, int] | None  # out: missing-value marker cells per series
MissingBy = dict[str, dict[str, int]] | None  # out: the same per vintage


@dataclass(frozen=True)
class _SingleFile:
    path: str
    transforms: str | None = None  # separate tcode file (header + ``Transform:`` row)


# Stand-alone vintage files of the snapshot (approximate vintages; PROVENANCE.md section 3).
SINGLE_FILES: dict[tuple[str, str], _SingleFile] = {
    ("md", "2025-03"): _SingleFile("macro/fred_md/vintage_2025-03_approx_scharaner/FRED_MD_Data.csv.gz"),
    ("qd", "2025-03"): _SingleFile("macro/fred_qd/vintage_2025-03_approx_scharaner/FRED_QD_Data.csv.gz"),
    ("md", "2025-12"): _SingleFile(
        "macro/fred_md/vintage_2025-12_approx_Nakamoto911_mrs/fred_md.csv.gz",
        transforms="macro/fred_md/vintage_2025-12_approx_Nakamoto911_mrs/fred_md_transforms.csv",
    ),
}


# ------------------------------------------------------------------------------------------------
# vintage labels
# ------------------------------------------------------------------------------------------------


def check_vintage(vintage: str) -> str:
    """Return ``vintage`` if it is ``YYYY-MM`` (month 01-12) or ``current``; else raise :class:`ValueError`
    naming the value."""
    if vintage == "current":
        return vintage
    try:
        return check_month(vintage, "vintage")
    except ValueError:
        raise ValueError(f"vintage={vintage!r}: expected 'YYYY-MM' (e.g. '2024-03') or 'current'") from None


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: expected one of {KINDS} (FRED-MD monthly, FRED-QD quarterly)")
    return kind


def wanted_vintage(target_month: date) -> str:
    """The vintage App. I fits on for ``target_month``: the one published in the month before it (target
    2024-03 -> vintage 2024-02, whose last observation is normally 2024-01)."""
    if not isinstance(target_month, date):
        raise ValueError(f"target_month={target_month!r}: expected a datetime.date")
    return month_of_index(month_index(target_month) - 1)


@dataclass(frozen=True)
class VintageChoice:
    """The vintage App. I asks for and the one used.

    ``wanted``: the month before the target month; ``vintage``: the latest available vintage not after
    ``wanted`` (equal when the snapshot has it); ``gap_months``: ``wanted - vintage`` in months (0 = exact).
    """

    wanted: str
    vintage: str
    gap_months: int


# ------------------------------------------------------------------------------------------------
# the client interface and its two implementations
# ------------------------------------------------------------------------------------------------


@runtime_checkable
class FredMdClient(Protocol):
    """FRED-MD / FRED-QD vintages, from the recorded files (:class:`FredMdSnapshot`) or the publisher
    (:class:`FredMdLive`). ``kind`` is ``'md'`` (monthly) or ``'qd'`` (quarterly)."""

    def list_vintages(self, kind: str = "md") -> list[str]:
        """Vintages available, as sorted ``YYYY-MM`` labels."""
        ...

    def load_vintage(
        self, vintage: str, kind: str = "md", columns: Columns = None, missing: Missing = None
    ) -> tuple[pl.DataFrame, dict[str, int]]:
        """``(levels, tcodes)`` of one vintage (see :class:`FredMdSnapshot.load_vintage`)."""
        ...

    def load_vintages(
        self, vintages: list[str], kind: str = "md", columns: Columns = None, missing: MissingBy = None
    ) -> dict[str, tuple[pl.DataFrame, dict[str, int]]]:
        """``{vintage: (levels, tcodes)}`` for several vintages."""
        ...

    def resolve_preceding_vintage(self, target_month: date, kind: str = "md") -> VintageChoice:
        """The vintage to fit on for ``target_month`` (App. I) and how far it is from the one wanted."""
        ...


class _FredMd:
    """What both implementations share: several vintages, the preceding-vintage rule."""

    def load_vintage(
        self, vintage: str, kind: str = "md", columns: Columns = None, missing: Missing = None
    ) -> tuple[pl.DataFrame, dict[str, int]]:
        raise NotImplementedError

    def list_vintages(self, kind: str = "md") -> list[str]:
        raise NotImplementedError

    def load_vintages(
        self, vintages: list[str], kind: str = "md", columns: Columns = None, missing: MissingBy = None
    ) -> dict[str, tuple[pl.DataFrame, dict[str, int]]]:
        """Load several vintages: ``{vintage: (levels, tcodes)}`` as :meth:`load_vintage` returns them;
        ``missing`` (a dict, optional) receives ``{vintage: {series: missing-value marker cells}}``.
        Raises what :meth:`load_vintage` raises."""
        _check_kind(kind)
        out = {}
        for v in (check_vintage(v) for v in dict.fromkeys(vintages)):
            counts: dict[str, int] = {}
            out[v] = self.load_vintage(v, kind, columns, counts)
            if missing is not None:
                missing[v] = counts
        return out

    def vintage_preceding(self, target_month: date, kind: str = "md") -> str:
        """The vintage label to fit on for ``target_month`` (App. I): :meth:`resolve_preceding_vintage`'s
        ``vintage``; raises the same errors."""
        return self.resolve_preceding_vintage(target_month, kind).vintage

    def resolve_preceding_vintage(self, target_month: date, kind: str = "md") -> VintageChoice:
        """Pick the vintage for a target month (LiveMacroEval App. I: "the FRED vintage immediately preceding
        the target month"): :func:`wanted_vintage` if available, otherwise the nearest EARLIER vintage, never
        a later one (a later vintage would leak data published after the window opened); the gap is reported
        in ``gap_months`` (e.g. target 2026-03 -> wanted 2026-02 -> the snapshot's 2025-12, gap 2). Raises
        :class:`~leaf_live.core.sources.SourceError` when no vintage at or before ``wanted`` exists,
        :class:`ValueError` for bad arguments."""
        _check_kind(kind)
        wanted = wanted_vintage(target_month)
        available = self.list_vintages(kind)
        have = [v for v in available if v <= wanted]
        if not have:
            raise SourceError(
                f"no FRED-{kind.upper()} vintage at or before {wanted} (the one preceding target month "
                f"{target_month:%Y-%m}) in the {self.transport}; earliest available is "
                f"{available[0] if available else 'none'}",
                file=self.where,
            )
        used = have[-1]
        return VintageChoice(wanted, used, month_index(wanted) - month_index(used))


class FredMdSnapshot(_FredMd):
    """The recorded vintages under ``snapshot_dir`` (module docstring: the 1999-08 .. 2024-03 archive, read
    member by member without extracting, and the approximate 2025-03 / 2025-12 vintages). Parsed vintages
    are cached in-process, keyed by file path, modification time and size. Raises :class:`ValueError` when
    ``snapshot_dir`` is not a directory."""

    transport = "snapshot"

    def __init__(self, snapshot_dir: str | os.PathLike) -> None:
        snap = Path(snapshot_dir)
        if not snap.is_dir():
            raise ValueError(f"snapshot_dir={snap!s}: directory does not exist (set LEAF_LIVE_SNAPSHOT)")
        self.snapshot_dir = snap
        self.where = str(snap)

    def list_vintages(self, kind: str = "md") -> list[str]:
        """The members of the vintage archive (FRED-MD only) plus the stand-alone approximate vintages
        (:data:`SINGLE_FILES`) whose files exist, sorted."""
        _check_kind(kind)
        snap = self.snapshot_dir
        out = set()
        if kind == "md" and (snap / ARCHIVE).is_file():
            out.update(_archive_index(snap / ARCHIVE))
        for (k, v), f in SINGLE_FILES.items():
            if k == kind and (snap / f.path).is_file():
                out.add(v)
        return sorted(out)

    def load_vintage(
        self, vintage: str, kind: str = "md", columns: Columns = None, missing: Missing = None
    ) -> tuple[pl.DataFrame, dict[str, int]]:
        """Load one FRED-MD (``kind='md'``) or FRED-QD (``kind='qd'``) vintage (only the series ``columns``
        that it has, when given: parsing a vintage's ~130 columns costs most of the time). ``missing`` (a
        dict, optional) is updated with the number of missing-value marker cells (``"."``) per series, as
        :func:`parse_vintage_csv` counts them (also on a cache hit).

        Returns ``(levels, tcodes)``:

        * ``levels``: one row per observation period, sorted; column ``date`` (``pl.Date``, first day of the
          month, or of the quarter for FRED-QD) then one ``Float64`` column per series in file order, raw
          (untransformed) values in the publisher's units, NULL where the file cell is empty or ``"."``;
        * ``tcodes``: McCracken-Ng transform code (1-7) per series column.

        Raises :class:`~leaf_live.core.sources.SourceError` (file, row, field, value) for an unreadable
        vintage, a malformed date, a duplicate date, a non-numeric cell or a bad tcode, and when the vintage
        is not in the snapshot (listing the ones that are); :class:`ValueError` for a bad ``vintage`` or
        ``kind``. The returned frame and dict are shared cache entries: do not mutate.
        """
        check_vintage(vintage)
        _check_kind(kind)
        snap = self.snapshot_dir
        single = SINGLE_FILES.get((kind, vintage))
        if single is not None and (snap / single.path).is_file():
            return _counted(_load_single(snap, single, kind, columns), missing)
        if kind == "md" and (snap / ARCHIVE).is_file():
            members = _archive_index(snap / ARCHIVE)
            if vintage in members:
                return _counted(_load_member(snap / ARCHIVE, members[vintage], columns), missing)
        have = self.list_vintages(kind)
        raise SourceError(
            f"FRED-{kind.upper()} vintage {vintage} is not in the snapshot; available: "
            f"{have[0] if have else '-'} ... {have[-1] if have else '-'} ({len(have)} vintages)",
            file=ARCHIVE if kind == "md" else SINGLE_FILES[("qd", "2025-03")].path,
        )

    def load_vintages(
        self, vintages: list[str], kind: str = "md", columns: Columns = None, missing: MissingBy = None
    ) -> dict[str, tuple[pl.DataFrame, dict[str, int]]]:
        """Several vintages; the archive members are read in one pass over the xz stream (a backtest needing
        80 vintages costs one decompression instead of 80). ``missing`` as in :meth:`_FredMd.load_vintages`.
        Raises what :meth:`load_vintage` raises."""
        _check_kind(kind)
        wanted = [check_vintage(v) for v in dict.fromkeys(vintages)]
        snap = self.snapshot_dir
        out: dict[str, tuple[pl.DataFrame, dict[str, int]]] = {}
        if kind == "md" and (snap / ARCHIVE).is_file():
            members = _archive_index(snap / ARCHIVE)
            from_archive = {}
            for v in wanted:
                single = SINGLE_FILES.get((kind, v))
                if v in members and not (single is not None and (snap / single.path).is_file()):
                    from_archive[v] = members[v]
            if from_archive:
                parsed = _load_members(snap / ARCHIVE, list(from_archive.values()), columns)
                for v, m in from_archive.items():
                    counts: dict[str, int] = {}
                    out[v] = _counted(parsed[m], counts)
                    if missing is not None:
                        missing[v] = counts
        for v in wanted:
            if v not in out:
                counts = {}
                out[v] = self.load_vintage(v, kind, columns, counts)
                if missing is not None:
                    missing[v] = counts
        return out


class FredMdLive(_FredMd):
    """The St. Louis Fed download area at ``base_url`` (default :data:`DEFAULT_BASE_URL`; tests point it at a
    loopback server). A vintage ``YYYY-MM`` is tried at ``{base}/monthly/YYYY-MM-md.csv`` (naming used since
    2025) and then ``{base}/monthly/YYYY-MM.csv``; FRED-QD at ``{base}/quarterly/...-qd.csv`` then
    ``.../YYYY-MM.csv``; ``current`` at ``{base}/{monthly|quarterly}/current.csv``. Immutable vintages are
    cached in-process. The publisher has no machine-readable index, so :meth:`list_vintages` is the calendar
    of monthly vintages from :data:`FIRST_LIVE_VINTAGE` through ``today``'s UTC month (a month the publisher
    skipped fails later in :meth:`load_vintage` with the URLs tried)."""

    transport = "live"

    def __init__(
        self, base_url: str = DEFAULT_BASE_URL, *, today: Callable[[], datetime] | None = None
    ) -> None:
        self.base_url = base_url or DEFAULT_BASE_URL
        self.where = self.base_url
        self._today = today or (lambda: datetime.now(UTC))

    def list_vintages(self, kind: str = "md") -> list[str]:
        _check_kind(kind)
        last = month_index(self._today().date())
        return [month_of_index(k) for k in range(month_index(FIRST_LIVE_VINTAGE[kind]), last + 1)]

    def load_vintage(
        self, vintage: str, kind: str = "md", columns: Columns = None, missing: Missing = None
    ) -> tuple[pl.DataFrame, dict[str, int]]:
        """One vintage as :meth:`FredMdSnapshot.load_vintage` returns it (``missing`` counted the same way),
        downloaded. Raises :class:`~leaf_live.core.sources.SourceError` naming every URL tried and its HTTP
        status, or the URL, row, field and value of a malformed file."""
        check_vintage(vintage)
        _check_kind(kind)
        return _counted(_load_live(vintage, kind, self.base_url, columns), missing)

    def resolve_preceding_vintage(self, target_month: date, kind: str = "md") -> VintageChoice:
        """The publisher keeps every vintage: the wanted one itself (gap 0)."""
        _check_kind(kind)
        wanted = wanted_vintage(target_month)
        return VintageChoice(wanted, wanted, 0)


# ------------------------------------------------------------------------------------------------
# parsing (shared by both transports)
# ------------------------------------------------------------------------------------------------

_DATE_FORMATS = (
    re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})"),  # M/D/YYYY, MM/DD/YYYY
    re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2})"),  # M/D/YY (vintage 2023-11)
)
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")


def _parse_date(text: str, *, file: str, row: int) -> date:
    s = text.strip()
    m = _ISO.fullmatch(s)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        for k, rx in enumerate(_DATE_FORMATS):
            m = rx.fullmatch(s)
            if m:
                mo, d, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
                if k == 1:  # FRED-MD starts in 1959: 59-99 -> 19xx, 00-58 -> 20xx
                    y += 1900 if y >= 59 else 2000
                break
        else:
            raise SourceError("not a date (M/D/YYYY)", file=file, row=row, field="sasdate", value=text)
    try:
        out = date(y, mo, d)
    except ValueError:
        raise SourceError("not a calendar date", file=file, row=row, field="sasdate", value=text) from None
    if out.day != 1:
        raise SourceError(
            "observation date is not the first of a month", file=file, row=row, field="sasdate", value=text
        )
    return out


def _parse_tcodes(header: list[str], cells: list[str], *, file: str, row: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, cell in zip(header[1:], cells[1:]):
        s = cell.strip().strip('"')
        try:
            v = float(s)
        except ValueError:
            raise SourceError(
                "transform code is not a number", file=file, row=row, field=name, value=cell
            ) from None
        if v != int(v) or not 1 <= int(v) <= 7:
            raise SourceError(
                "transform code must be an integer 1-7", file=file, row=row, field=name, value=cell
            )
        out[name] = int(v)
    missing = [c for c in header[1:] if c not in out]
    if missing:
        raise SourceError(
            f"transform row has no code for {len(missing)} column(s), first {missing[0]!r}",
            file=file,
            row=row,
            field=missing[0],
            value="",
        )
    return out


def parse_vintage_csv(
    text: str,
    kind: str,
    *,
    file: str,
    transforms_text: str | None = None,
    transforms_file: str | None = None,
    columns: Columns = None,
    missing: Missing = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Parse the text of one FRED-MD / FRED-QD vintage CSV (format in the module docstring); ``columns``: keep
    only these series (those the file has; every cell of the date column and the tcode row is still checked).
    A cell holding a documented missing-value marker (``"."``,
    :data:`~leaf_live.core.sources.MISSING_MARKERS`) is NULL like an empty one, never a refusal of the file;
    ``missing`` (a dict, optional) is updated with the number of such cells per kept series (series without
    one are left out).

    ``file`` names the source in error messages. ``transforms_text`` supplies the tcode row when the vintage
    file has none (header line + ``Transform:`` line, as in the snapshot's ≈2025-12 vintage). Returns
    ``(levels, tcodes)`` as :func:`load_vintage`. Raises :class:`~leaf_live.macro.sources.SourceError`.
    """
    _check_kind(kind)
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows or not rows[0] or rows[0][0].strip().lower() != "sasdate":
        first = rows[0][0] if rows and rows[0] else ""
        raise SourceError("header must start with 'sasdate'", file=file, row=0, field="header", value=first)
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise SourceError("duplicate column in header", file=file, row=0, field="header", value=dup)
    ncol = len(header)
    tcodes: dict[str, int] | None = None
    dates: list[date] = []
    cells: list[list[str]] = []
    where: list[int] = []
    for i, r in enumerate(rows[1:], start=1):
        first = r[0].strip().lower() if r else ""
        if first.startswith("transform"):
            tcodes = _parse_tcodes(header, r, file=file, row=i)
            continue
        if first.startswith("factors"):  # FRED-QD factor-group flags
            continue
        if not any(c.strip() for c in r):
            continue  # blank / all-empty separator rows occur in 2015-2023 vintages
        if len(r) > ncol:
            raise SourceError(
                f"row has {len(r)} fields, header has {ncol}",
                file=file,
                row=i,
                field="row",
                value=",".join(r[ncol:])[:80],
            )
        if not r[0].strip():
            raise SourceError("row has values but no date", file=file, row=i, field="sasdate", value=r[0])
        dates.append(_parse_date(r[0], file=file, row=i))
        cells.append(r[1:] + [""] * (ncol - len(r)))
        where.append(i)
    if tcodes is None and transforms_text is not None:
        tfile = transforms_file or f"{file} (transforms)"
        trows = list(csv.reader(io.StringIO(transforms_text.lstrip("\ufeff"))))
        if len(trows) < 2 or not trows[1] or not trows[1][0].strip().lower().startswith("transform"):
            raise SourceError(
                "expected a header line and a 'Transform:' line",
                file=tfile,
                row=1,
                field="sasdate",
                value=trows[1][0] if len(trows) > 1 and trows[1] else "",
            )
        theader = [h.strip() for h in trows[0]]
        if theader != header:
            diff = next((a, b) for a, b in zip(theader + [""] * ncol, header + [""] * len(theader)) if a != b)
            raise SourceError(
                f"transforms header differs from the data header (data has {diff[1]!r})",
                file=tfile,
                row=0,
                field="header",
                value=diff[0],
            )
        tcodes = _parse_tcodes(header, trows[1], file=tfile, row=1)
    if tcodes is None:
        raise SourceError(
            "no 'Transform:' row (tcodes) found",
            file=file,
            row=1,
            field="sasdate",
            value=rows[1][0] if len(rows) > 1 and rows[1] else "",
        )
    if not dates:
        raise SourceError("vintage has no data rows", file=file)
    if kind == "qd":
        months = {d.month for d in dates}
        if months <= {3, 6, 9, 12}:
            dates = [date(d.year, d.month - 2, 1) for d in dates]
        elif not months <= {1, 4, 7, 10}:
            k = next(j for j, d in enumerate(dates) if d.month not in (3, 6, 9, 12))
            raise SourceError(
                "FRED-QD dates must all be the last (or all the first) month of a quarter",
                file=file,
                row=where[k],
                field="sasdate",
                value=f"{dates[k]:%m/%d/%Y}",
            )
    seen: dict[date, int] = {}
    for d, i in zip(dates, where):
        if d in seen:
            raise SourceError(
                f"duplicate observation date (also row {seen[d]})",
                file=file,
                row=i,
                field="sasdate",
                value=f"{d:%Y-%m-%d}",
            )
        seen[d] = i
    data = {"date": pl.Series("date", dates, dtype=pl.Date)}
    keep = None if columns is None else set(columns)
    for j, name in enumerate(header[1:]):
        if keep is not None and name not in keep:
            continue
        col = [c[j].strip() for c in cells]
        markers = sum(v in MISSING_MARKERS for v in col)
        if markers:  # "." is a missing value: null, counted
            col = ["" if v in MISSING_MARKERS else v for v in col]
            if missing is not None:
                missing[name] = missing.get(name, 0) + markers
        try:
            arr = np.array([float(v) if v else np.nan for v in col], dtype=np.float64)
        except ValueError:
            k = next(k for k, v in enumerate(col) if v and not _is_float(v))
            raise SourceError("not a number", file=file, row=where[k], field=name, value=col[k]) from None
        bad = ~np.isfinite(arr) & ~np.isnan(arr)
        if bad.any():
            k = int(np.argmax(bad))
            raise SourceError("number is not finite", file=file, row=where[k], field=name, value=col[k])
        data[name] = pl.Series(name, arr, dtype=pl.Float64, nan_to_null=True)
    levels = pl.DataFrame(data).sort("date")
    return levels, tcodes


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------------------------------------
# snapshot transport
# ------------------------------------------------------------------------------------------------

_lock = threading.Lock()
_index_cache: dict[tuple[str, int, int], dict[str, str]] = {}
# (levels, tcodes, missing-value marker cells per series)
_parsed: OrderedDict[tuple, tuple[pl.DataFrame, dict[str, int], dict[str, int]]] = OrderedDict()
_PARSED_MAX = 48  # a vintage is ~1 MB of floats; a backtest walks vintages in order


def _stat_key(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _cache_get(key: tuple):
    with _lock:
        hit = _parsed.get(key)
        if hit is not None:
            _parsed.move_to_end(key)
        return hit


def _cache_put(key: tuple, value) -> None:
    with _lock:
        _parsed[key] = value
        _parsed.move_to_end(key)
        while len(_parsed) > _PARSED_MAX:
            _parsed.popitem(last=False)


def _parse_counted(text: str, kind: str, **kw) -> tuple[pl.DataFrame, dict[str, int], dict[str, int]]:
    """:func:`parse_vintage_csv` with its missing-value counts kept: the form the cache holds."""
    counts: dict[str, int] = {}
    levels, tcodes = parse_vintage_csv(text, kind, missing=counts, **kw)
    return levels, tcodes, counts


def _counted(
    parsed: tuple[pl.DataFrame, dict[str, int], dict[str, int]], missing: Missing
) -> tuple[pl.DataFrame, dict[str, int]]:
    """``(levels, tcodes)`` of a cached parse; its counts added to ``missing`` when one is given."""
    levels, tcodes, counts = parsed
    if missing is not None:
        for k, n in counts.items():
            missing[k] = missing.get(k, 0) + n
    return levels, tcodes


def clear_cache() -> None:
    """Forget parsed vintages and archive indexes (tests, or after replacing snapshot files)."""
    with _lock:
        _parsed.clear()
        _index_cache.clear()


def _archive_index(path: Path) -> dict[str, str]:
    """vintage label -> member name of the tar.xz archive (cached by path, mtime and size)."""
    key = _stat_key(path)
    with _lock:
        hit = _index_cache.get(key)
    if hit is not None:
        return hit
    out: dict[str, str] = {}
    try:
        with tarfile.open(path, "r:*") as tf:
            for m in tf.getmembers():
                mm = _ARCHIVE_MEMBER.search(m.name)
                if m.isfile() and mm:
                    out[mm.group(1)] = m.name
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(
            f"cannot read vintage archive: {type(exc).__name__}: {exc}", file=str(path)
        ) from None
    with _lock:
        _index_cache[key] = out
    return out


def _load_member(
    path: Path, member: str, columns: Columns = None
) -> tuple[pl.DataFrame, dict[str, int], dict[str, int]]:
    return _load_members(path, [member], columns)[member]


def _columns_key(columns: Columns) -> tuple:
    return ("all",) if columns is None else tuple(sorted(set(columns)))


def _load_members(
    path: Path, members: list[str], columns: Columns = None
) -> dict[str, tuple[pl.DataFrame, dict[str, int], dict[str, int]]]:
    """Parse archive members, reading the xz stream once for all that are not cached yet (an xz tar is
    not seekable: each separate read decompresses from the start, ~0.5-1 s)."""
    stat = _stat_key(path)
    out: dict[str, tuple[pl.DataFrame, dict[str, int], dict[str, int]]] = {}
    todo = set()
    for member in members:
        hit = _cache_get(("member", *stat, member, _columns_key(columns)))
        if hit is not None:
            out[member] = hit
        else:
            todo.add(member)
    if not todo:
        return out
    try:
        with tarfile.open(path, "r:*") as tf:
            for m in tf:
                if m.name not in todo:
                    continue
                label = f"{ARCHIVE}::{m.name}"
                f = tf.extractfile(m)
                if f is None:
                    raise SourceError("archive member is not a regular file", file=label)
                value = _parse_counted(_decode(f.read(), label), "md", file=label, columns=columns)
                _cache_put(("member", *stat, m.name, _columns_key(columns)), value)
                out[m.name] = value
                todo.discard(m.name)
                if not todo:
                    break
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(f"cannot read vintage archive: {type(exc).__name__}: {exc}", file=ARCHIVE) from None
    if todo:
        raise SourceError(f"archive has no member {sorted(todo)[0]!r}", file=ARCHIVE)
    return out


def _read_text(path: Path, label: str) -> str:
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"cannot read file: {type(exc).__name__}: {exc}", file=label) from None
    return _decode(raw, label)


def _decode(raw: bytes, label: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"file is not UTF-8 text (byte {exc.start})", file=label) from None


def _load_single(
    snap: Path, single: _SingleFile, kind: str, columns: Columns = None
) -> tuple[pl.DataFrame, dict[str, int], dict[str, int]]:
    path = snap / single.path
    tpath = snap / single.transforms if single.transforms else None
    key = ("single", *_stat_key(path), *(_stat_key(tpath) if tpath else ()), _columns_key(columns))
    hit = _cache_get(key)
    if hit is not None:
        return hit
    ttext = _read_text(tpath, single.transforms) if tpath is not None else None
    value = _parse_counted(
        _read_text(path, single.path),
        kind,
        file=single.path,
        transforms_text=ttext,
        transforms_file=single.transforms,
        columns=columns,
    )
    _cache_put(key, value)
    return value


# ------------------------------------------------------------------------------------------------
# live transport
# ------------------------------------------------------------------------------------------------


def vintage_urls(vintage: str, kind: str = "md", base_url: str = DEFAULT_BASE_URL) -> list[str]:
    """Candidate download URLs for a vintage, in the order tried (see :class:`FredMdLive`)."""
    check_vintage(vintage)
    _check_kind(kind)
    base = base_url.rstrip("/")
    folder = f"{base}/{_FREQ_DIR[kind]}"
    if vintage == "current":
        return [f"{folder}/current.csv"]
    return [f"{folder}/{vintage}-{kind}.csv", f"{folder}/{vintage}.csv"]


def _load_live(
    vintage: str, kind: str, base_url: str, columns: Columns = None
) -> tuple[pl.DataFrame, dict[str, int], dict[str, int]]:
    urls = vintage_urls(vintage, kind, base_url)
    key = ("live", tuple(urls), _columns_key(columns))
    if vintage != "current":  # "current" changes every month: never cached
        hit = _cache_get(key)
        if hit is not None:
            return hit
    errors = []
    for url in urls:
        try:
            text = http_get_text(url, what=f"FRED-{kind.upper()} vintage {vintage}")
        except SourceError as exc:
            errors.append(str(exc))
            continue
        value = _parse_counted(text, kind, file=url, columns=columns)
        if vintage != "current":
            _cache_put(key, value)
        return value
    raise SourceError(
        f"FRED-{kind.upper()} vintage {vintage} could not be downloaded; tried: " + " | ".join(errors),
        file=urls[0],
    )


__all__ = [
    "ARCHIVE",
    "DEFAULT_BASE_URL",
    "KINDS",
    "SINGLE_FILES",
    "FredMdClient",
    "FredMdLive",
    "FredMdSnapshot",
    "VintageChoice",
    "check_vintage",
    "clear_cache",
    "parse_vintage_csv",
    "vintage_urls",
    "wanted_vintage",
]
