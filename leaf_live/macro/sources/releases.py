"""Release calendar source: every scheduled release row (release timestamp, reference period, actual A,
consensus C, consensus source) as each calendar reported it, before the first-release rule.

One client interface (:class:`ReleaseCalendarClient`), two implementations: :class:`ReleaseCalendarSnapshot`
reads every source from the snapshot directory; :class:`ReleaseCalendarLive` reads the live-window calendar
from an export file or URL and the archives from a directory or a base URL serving them. Sources
(``sources=``):

``livemacroeval_panel``
    The LiveMacroEval historical releases 2010-01 -> 2025-10 (Investing.com calendar: first-release actual A
    and consensus C, US Eastern times): ``field_releases.csv`` UNION ``dropped_revisions.csv`` (the later
    estimates the source's first-release rule removed, so that
    :func:`leaf_live.macro.scoring.surprises.first_releases` applies the rule itself). Folder
    ``livemacroeval/Results/market_surprise_capture_score/ step_15_2_historical_preprocessing/`` of the
    snapshot.
``livemacroeval_live``
    The live-window releases 2025-11 -> 2026-05 (``livemacroeval/Results/ground_truth/data/
    field_releases_live.csv``; some C empty; catch-up releases of an older reference period are stamped one
    minute early, 08:29 / 09:59). With ``calendar_file=`` (path or http(s) URL) the rows come from that
    export instead; the live client requires it because consensus has no free live API.
``forexfactory``
    ForexFactory calendars 2010 -> 2023 (``macro/calendar_forexfactory_spoluan/*.csv``): an optional
    second consensus source. Times are fixed UTC+8, values carry K/M/B/% suffixes.

Units: every value is converted to the indicator's reporting unit (catalog; LiveMacroEval App. D Table 2):
the panel stores payrolls in persons and housing in units, so it is divided by ``Indicator.panel_scale``.

Reference periods (LiveMacroEval App. K.1; the source pipeline's rule, reproduced): the period is parsed from
the event text when present (``GDP (QoQ)  (Q2)``, ``CPI (YoY)  (Oct)``; the year is the latest one not after
the release), ``period_source='event_text'``. Otherwise it is the release month minus
``Indicator.reference_lag_months``, labelled ``YYYY-MM`` (so GDP released 2013-12-20 is labelled 2013-11),
stepped back one month at a time while a LATER release of the same indicator in the same source carries that
label in its event text (an unlabelled 10:00 durable-goods revision early in the month belongs to the period
released the month before, not to the one whose advance release is still to come), ``period_source=
'release_lag'``. Where a file carries its own ``ref_period`` column the computed label must equal it.

Times: release times are US Eastern wall-clock times, placed with ``zoneinfo`` America/New_York and stored in
UTC; ``partition_key`` is the release month in New York (``YYYY-MM``); ``available_at = release_at``.

Errors: a malformed row (unparseable value, unknown indicator or field_id, timestamp that is not a time or
cannot be placed in its time zone, missing column) raises :class:`~leaf_live.macro.sources.SourceError` naming
the file, the 1-based data row, the field and its value.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Protocol, runtime_checkable

import polars as pl

from leaf_live.core import storage
from leaf_live.core.pit import (
    ET,
    MONTH_NUMBER,
    UTC,
    label_for_month,
    localize,
    parse_naive_datetime,
    reference_period,
    shift_month,
)
from leaf_live.core.sources import (
    FileStore,
    HttpFiles,
    SnapshotFiles,
    SourceError,
    cached_parse,
    csv_rows,
    display_path,
    http_get_text,
    is_url,
    parse_number,
)
from leaf_live.macro.catalog import INDICATORS, UnknownIndicatorError, get_indicator

PANEL_DIR = "livemacroeval/Results/market_surprise_capture_score/step_15_2_historical_preprocessing"
PANEL_FILES = (f"{PANEL_DIR}/field_releases.csv", f"{PANEL_DIR}/dropped_revisions.csv")
PANEL_REVISIONS_FILE = f"{PANEL_DIR}/dropped_revisions.csv"
LIVE_FILE = "livemacroeval/Results/ground_truth/data/field_releases_live.csv"
FOREXFACTORY_DIR = "macro/calendar_forexfactory_spoluan"

SOURCES = ("livemacroeval_panel", "livemacroeval_live", "forexfactory")
DEFAULT_SOURCES = ("livemacroeval_panel", "livemacroeval_live")
FOREXFACTORY_YEARS = tuple(range(2010, 2024))  # the archive's files, named by year

FOREXFACTORY_TZ = timezone(timedelta(hours=8))  # the 2010-2023 files are in fixed UTC+8 (PROVENANCE.md)
_LIVE_HELP = (
    "consensus forecasts have no free live API: pass calendar_file= (a path or http(s) URL of a calendar "
    "export in the LiveMacroEval field_releases format: field_id, release_datetime_et (US Eastern), event, "
    "A, C[, ref_period])"
)

_PERIOD_RX = re.compile(r"\(\s*(Q[1-4]|" + "|".join(MONTH_NUMBER) + r")\s*\)\s*$")


@dataclass(frozen=True)
class _Row:
    """One calendar row after parsing, before period labelling."""

    source: str
    indicator_id: str
    local: datetime  # naive New York wall clock
    release_at: datetime  # UTC
    event: str
    text_label: str | None  # label parsed from the event text (or a ForexFactory "<Mon> Data" time)
    actual: float | None  # reporting unit
    consensus: float | None  # reporting unit
    consensus_source: str | None
    file: str
    row: int
    given_label: str | None = None  # the file's own ref_period column, checked against ours
    marked_revision: bool = False
    label: str | None = None
    period_source: str | None = None


# ------------------------------------------------------------------------------------------------
# the client interface and its two implementations
# ------------------------------------------------------------------------------------------------


@runtime_checkable
class ReleaseCalendarClient(Protocol):
    """Scheduled release rows of the configured calendar ``sources`` (:class:`ReleaseCalendarSnapshot` or
    :class:`ReleaseCalendarLive`)."""

    sources: tuple[str, ...]

    def calendar(self, months: Iterable[str] | None = None) -> pl.DataFrame:
        """``release_calendar`` rows; ``months`` keeps only these release months (``YYYY-MM``)."""
        ...


class _Calendar:
    """Reads every calendar source: the archives (LiveMacroEval panel and live file, ForexFactory) through a
    :class:`~leaf_live.core.sources.FileStore`, the live-window calendar from ``calendar_file`` when given."""

    def __init__(
        self,
        archive: FileStore | None,
        *,
        sources: Sequence[str],
        calendar_file: str | os.PathLike | None,
        consensus_source: str,
        archive_years: Iterable[int] | None = None,
        known_at: datetime | None = None,
    ) -> None:
        unknown = [s for s in sources if s not in SOURCES]
        if unknown:
            raise ValueError(f"sources: unknown calendar source(s) {unknown}; expected any of {SOURCES}")
        self.sources = tuple(dict.fromkeys(sources))
        self.archive = archive
        self.calendar_file = calendar_file
        self.consensus_source = consensus_source
        self._years = archive_years
        self.known_at = known_at

    def _need_archive(self, source: str) -> FileStore:
        if self.archive is None:
            raise ValueError(
                f"source {source!r} reads recorded files (a fixed archive, no live service), but no archive "
                f"directory or URL is configured (set LEAF_LIVE_SNAPSHOT or leave {source!r} out of sources)"
            )
        return self.archive

    def calendar(self, months: Iterable[str] | None = None) -> pl.DataFrame:
        """Load the release calendar from the configured sources.

        Returns a frame with exactly the columns of ``schemas.RELEASE_CALENDAR`` (``storage.conform`` passes),
        one row per (source, indicator_id, release_at, period_label), sorted by release_at, indicator_id,
        source. ``actual`` / ``consensus`` are in the catalog reporting unit; ``release_at`` /
        ``available_at`` UTC. ``months`` keeps only these release months (``partition_key`` values,
        ``YYYY-MM``; ``None`` = all); period labels are assigned on the whole file first, so filtering never
        changes a label.

        Raises :class:`SourceError` for a malformed source row or an unusable response (names file/URL, row,
        field, value) and :class:`ValueError` for an archive source without an archive.
        """
        frames = []
        for source in self.sources:
            if source == "livemacroeval_panel":
                frames.append(
                    read_livemacroeval_panel(
                        self._need_archive(source), consensus_source=self.consensus_source
                    )
                )
            elif source == "livemacroeval_live":
                if self.calendar_file is not None:
                    snap = self.archive.root if isinstance(self.archive, SnapshotFiles) else None
                    frames.append(
                        read_calendar_file(
                            self.calendar_file, snapshot_dir=snap, consensus_source=self.consensus_source
                        )
                    )
                else:
                    frames.append(
                        read_livemacroeval_live(
                            self._need_archive(source), consensus_source=self.consensus_source
                        )
                    )
            elif source == "forexfactory":
                frames.append(read_forexfactory(self._need_archive(source), years=self._years))
        out = pl.concat(frames, how="vertical") if frames else storage.empty_frame("release_calendar")
        if months is not None:
            out = out.filter(pl.col("partition_key").is_in(list(months)))
        if self.known_at is not None:
            out = calendar_known_at(out, self.known_at)
        return out.sort(["release_at", "indicator_id", "source", "period_label"])


class ReleaseCalendarSnapshot(_Calendar):
    """The recorded calendars under ``snapshot_dir`` (module docstring). ``calendar_file`` (path or http(s)
    URL of a calendar export) replaces the recorded live file. ``consensus_source``: who produced C in the
    LiveMacroEval files (default Investing.com). ``known_at`` (tz-aware) replays the recording as the calendar
    showed it at that instant (:func:`calendar_known_at`: a release "appears" once the clock passes its
    ``available_at``); ``None`` shows every recorded value. Raises :class:`ValueError` for an unknown source
    or a missing directory."""

    transport = "snapshot"

    def __init__(
        self,
        snapshot_dir: str | os.PathLike,
        *,
        sources: Sequence[str] = DEFAULT_SOURCES,
        calendar_file: str | os.PathLike | None = None,
        consensus_source: str = "investing",
        known_at: datetime | None = None,
    ) -> None:
        super().__init__(
            SnapshotFiles(snapshot_dir),
            sources=sources,
            calendar_file=calendar_file,
            consensus_source=consensus_source,
            known_at=known_at,
        )


class ReleaseCalendarLive(_Calendar):
    """The live calendar: ``calendar_file``, a path or http(s) URL of a calendar export in the LiveMacroEval
    field_releases format, read as source ``livemacroeval_live`` (consensus forecasts have no free live API,
    so it is required when that source is configured). The archive sources (panel, ForexFactory) are fixed
    historical files: from ``archive_dir`` or from ``archive_url``, a base URL serving them in the snapshot's
    layout (over HTTP the ForexFactory files are named by year, 2010-2023). Raises :class:`ValueError` for an
    unknown source or a missing ``calendar_file``."""

    transport = "live"

    def __init__(
        self,
        calendar_file: str | os.PathLike | None,
        *,
        sources: Sequence[str] = DEFAULT_SOURCES,
        archive_dir: str | os.PathLike | None = None,
        archive_url: str | None = None,
        consensus_source: str = "investing",
    ) -> None:
        if calendar_file is None and "livemacroeval_live" in sources:
            raise ValueError(f"live calendar: {_LIVE_HELP}")
        archive: FileStore | None = None
        if archive_url:
            archive = HttpFiles(archive_url)
        elif archive_dir is not None and Path(archive_dir).is_dir():
            archive = SnapshotFiles(archive_dir)
        super().__init__(
            archive,
            sources=sources,
            calendar_file=calendar_file,
            consensus_source=consensus_source,
            archive_years=FOREXFACTORY_YEARS if archive_url else None,
        )


def calendar_known_at(calendar: pl.DataFrame, at: datetime) -> pl.DataFrame:
    """``release_calendar`` rows as the calendar showed them at ``at`` (tz-aware): every scheduled row stays
    (the schedule and the consensus are published ahead), but ``actual`` is empty where ``available_at > at``
    -- the live calendar's "empty A = scheduled, not yet released" (:func:`read_calendar_file`). Same columns
    and order. Raises :class:`ValueError` for a naive ``at``."""
    if at.tzinfo is None:
        raise ValueError(f"known_at={at!r}: give a time zone (UTC)")
    return calendar.with_columns(
        pl.when(pl.col("available_at") <= at.astimezone(UTC))
        .then(pl.col("actual"))
        .otherwise(None)
        .alias("actual")
    )


# ------------------------------------------------------------------------------------------------
# LiveMacroEval field_releases format
# ------------------------------------------------------------------------------------------------


def read_livemacroeval_panel(archive: FileStore, *, consensus_source: str = "investing") -> pl.DataFrame:
    """The LiveMacroEval historical panel: ``field_releases.csv`` UNION ``dropped_revisions.csv``.

    Rows of ``dropped_revisions.csv`` carry ``marked_revision=True``: the source lists them as later estimates
    (a few of their earlier releases are not in the released files, e.g. real PCE 2014-03-28 revises the
    2014-03-03 release, which had no consensus). Returns a ``release_calendar`` frame (source
    ``livemacroeval_panel``). Raises :class:`SourceError`.
    """
    rows: list[_Row] = []
    for rel in PANEL_FILES:
        rows.extend(
            archive.parsed(
                f"livemacroeval:{consensus_source}",
                rel,
                lambda text, name, rev=(rel == PANEL_REVISIONS_FILE): _parse_livemacroeval(
                    text, name, "livemacroeval_panel", consensus_source, marked_revision=rev
                ),
            )
        )
    return _frame(_assign_labels(rows))


def read_livemacroeval_live(archive: FileStore, *, consensus_source: str = "investing") -> pl.DataFrame:
    """The LiveMacroEval live-window releases (``field_releases_live.csv``) as a ``release_calendar`` frame
    (source ``livemacroeval_live``). Raises :class:`SourceError`."""
    rows = archive.parsed(
        f"livemacroeval:{consensus_source}",
        LIVE_FILE,
        lambda text, name: _parse_livemacroeval(text, name, "livemacroeval_live", consensus_source),
    )
    return _frame(_assign_labels(rows))


def read_calendar_file(
    calendar_file: str | os.PathLike,
    *,
    snapshot_dir: Path | None = None,
    consensus_source: str = "investing",
    source: str = "livemacroeval_live",
) -> pl.DataFrame:
    """Read a calendar export in the LiveMacroEval field_releases format from a path or an http(s) URL.

    Columns: ``field_id`` (catalog id), ``release_datetime_et`` (US Eastern ``YYYY-MM-DD HH:MM[:SS]``),
    ``event`` (calendar label; a trailing ``(Mon)``/``(Qn)`` names the reference period), ``A`` and ``C``
    (or ``actual`` and ``forecast``) in the panel's units (payrolls in persons, housing in units), optional
    ``ref_period`` (checked) and ``raw_surprise`` (checked to equal A - C). Empty A = scheduled, not yet
    released; empty C = no consensus. A path inside ``snapshot_dir`` is named relative to it. Returns a
    ``release_calendar`` frame. Raises :class:`SourceError`.
    """
    if is_url(calendar_file):
        url = str(calendar_file)
        text = http_get_text(url, what="calendar export")
        rows = _parse_livemacroeval(text, url, source, consensus_source)
    else:
        path = Path(calendar_file)
        label = display_path(path, snapshot_dir)
        rows = cached_parse(
            f"calendar:{source}:{consensus_source}",
            path,
            lambda p: _parse_livemacroeval(_read_text(p, label), label, source, consensus_source),
        )
    return _frame(_assign_labels(rows))


def _read_text(path: Path, label: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError("file not found", file=label) from None


def _parse_livemacroeval(
    text: str, file: str, source: str, consensus_source: str, *, marked_revision: bool = False
) -> list[_Row]:
    header = text.lstrip("\ufeff").split("\n", 1)[0]
    cols = [c.strip() for c in header.split(",")]
    a_col = "actual" if "actual" in cols and "A" not in cols else "A"
    c_col = "forecast" if "forecast" in cols and "C" not in cols else "C"
    out: list[_Row] = []
    for i, r in csv_rows(
        text,
        file=file,
        required=("field_id", "release_datetime_et", "event", a_col, c_col),
        non_empty=("field_id", "release_datetime_et", "event"),  # a calendar row always names its release
    ):
        fid = (r["field_id"] or "").strip()
        try:
            ind = get_indicator(fid)
        except UnknownIndicatorError as exc:
            raise SourceError(str(exc), file=file, row=i, field="field_id", value=r["field_id"]) from None
        raw_time = r["release_datetime_et"]
        local = parse_naive_datetime(raw_time, file=file, row=i, field="release_datetime_et")
        release_at = localize(local, ET, file=file, row=i, field="release_datetime_et", value=raw_time)
        a = parse_number(r[a_col], file=file, row=i, field=a_col)
        c = parse_number(r[c_col], file=file, row=i, field=c_col)
        if "raw_surprise" in r and a is not None and c is not None:
            rs = parse_number(r["raw_surprise"], file=file, row=i, field="raw_surprise")
            if rs is not None and abs(rs - (a - c)) > 1e-9 * max(1.0, abs(a), abs(c)):
                raise SourceError(
                    f"raw_surprise is not {a_col} - {c_col} = {a - c!r}",
                    file=file,
                    row=i,
                    field="raw_surprise",
                    value=r["raw_surprise"],
                )
        event = (r["event"] or "").strip()
        given = (r.get("ref_period") or "").strip() or None
        out.append(
            _Row(
                source=source,
                indicator_id=ind.id,
                local=local,
                release_at=release_at,
                event=event,
                text_label=_label_from_text(event, local, ind.frequency),
                actual=None if a is None else a / ind.panel_scale,
                consensus=None if c is None else c / ind.panel_scale,
                consensus_source=consensus_source if c is not None else None,
                file=file,
                row=i,
                given_label=given,
                marked_revision=marked_revision,
            )
        )
    return out


def _label_from_text(event: str, local: datetime, frequency: str) -> str | None:
    """Reference-period label from a trailing ``(Mon)`` / ``(Qn)`` in the event text; the year is the latest
    one whose period starts no later than the release month (a December figure released in January belongs
    to the previous year)."""
    m = _PERIOD_RX.search(event)
    if not m:
        return None
    return _resolve_period(m.group(1), local)


def _resolve_period(token: str, local: datetime) -> str:
    if token.startswith("Q"):
        q = int(token[1])
        start_month = 3 * q - 2
        year = local.year if start_month <= local.month else local.year - 1
        return f"{year:04d}-Q{q}"
    month = MONTH_NUMBER[token]
    year = local.year if month <= local.month else local.year - 1
    return label_for_month(year, month)


def _assign_labels(rows: Iterable[_Row]) -> list[_Row]:
    """Give every row its period label (event text, else the release-lag rule; see the module docstring)."""
    rows = list(rows)
    # later event-text claims per (source, indicator, label): the release times carrying that label
    claims: dict[tuple[str, str, str], list[datetime]] = defaultdict(list)
    for r in rows:
        if r.text_label is not None:
            claims[(r.source, r.indicator_id, r.text_label)].append(r.release_at)
    out = []
    for r in rows:
        if r.text_label is not None:
            label, how = r.text_label, "event_text"
        else:
            lag = get_indicator(r.indicator_id).reference_lag_months
            y, m = shift_month(r.local.year, r.local.month, -lag)
            while any(
                t > r.release_at for t in claims.get((r.source, r.indicator_id, label_for_month(y, m)), ())
            ):
                y, m = shift_month(y, m, -1)
            label, how = label_for_month(y, m), "release_lag"
        if r.given_label is not None and r.given_label != label:
            raise SourceError(
                f"reference period disagrees with the event text / release-lag rule, which gives {label!r}",
                file=r.file,
                row=r.row,
                field="ref_period",
                value=r.given_label,
            )
        out.append(replace(r, label=label, period_source=how))
    return out


def _frame(rows: list[_Row]) -> pl.DataFrame:
    freq = {i.id: i.frequency for i in INDICATORS}
    data = {
        "partition_key": [f"{r.local.year:04d}-{r.local.month:02d}" for r in rows],
        "source": [r.source for r in rows],
        "indicator_id": [r.indicator_id for r in rows],
        "release_at": [r.release_at for r in rows],
        "release_time_et": [f"{r.local.hour:02d}:{r.local.minute:02d}" for r in rows],
        "period_label": [r.label for r in rows],
        "period_source": [r.period_source for r in rows],
        "reference_period": [reference_period(r.label, freq[r.indicator_id]) for r in rows],
        "actual": [r.actual for r in rows],
        "consensus": [r.consensus for r in rows],
        "consensus_source": [r.consensus_source for r in rows],
        "event": [r.event for r in rows],
        "source_file": [r.file for r in rows],
        "source_row": [r.row for r in rows],
        "marked_revision": [r.marked_revision for r in rows],
        "available_at": [r.release_at for r in rows],
    }
    schema = storage.polars_schema("release_calendar")
    frame = pl.DataFrame(
        {k: pl.Series(k, v, dtype=schema[k]) for k, v in data.items() if k in schema}, schema=schema
    )
    seen: dict[tuple[str, str, datetime, str | None], _Row] = {}
    for r in rows:
        key = (r.source, r.indicator_id, r.release_at, r.label)
        if key in seen:
            first = seen[key]
            raise SourceError(
                f"second row for the same release ({r.indicator_id} at {r.local:%Y-%m-%d %H:%M} ET, period "
                f"{r.label}); the first is {first.file} row {first.row}",
                file=r.file,
                row=r.row,
                field="release_datetime_et",
                value=f"{r.local:%Y-%m-%d %H:%M:%S}",
            )
        seen[key] = r
    return frame


# ------------------------------------------------------------------------------------------------
# ForexFactory
# ------------------------------------------------------------------------------------------------

_FF_EVENTS = {name: ind.id for ind in INDICATORS for name in ind.forexfactory_events}
_FF_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(am|pm)$")
_FF_DATA = re.compile(r"^(" + "|".join(MONTH_NUMBER) + r") Data$")
_FF_VALUE = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*([KMBT%]?)$")
_FF_MULT = {"": 1, "%": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def read_forexfactory(archive: FileStore, *, years: Iterable[int] | None = None) -> pl.DataFrame:
    """ForexFactory calendar rows of the catalog's USD events (``Indicator.forexfactory_events``) from
    ``macro/calendar_forexfactory_spoluan/forex_factory_calendar_YYYY.csv`` (every year the archive lists, or
    the given ``years``).

    Times are fixed UTC+8 (subtract 8 h for UTC; the US events keep US daylight saving). Values such as
    ``252K``, ``0.8%``, ``1.03M`` are multiplied out and divided by ``Indicator.panel_scale`` (payrolls and
    housing in thousands). ``consensus_source='forexfactory'``. ForexFactory event names carry no reference
    period, so labels follow the release-lag rule, except the shutdown catch-up rows whose Time field reads
    ``<Mon> Data``: they take that month and, like the LiveMacroEval live file, the release time of the
    same day's timed row minus one minute per older period (so each release keeps its own timestamp).
    Rows with time ``All Day`` / ``Tentative`` have no release time and are left out. Raises
    :class:`SourceError`.
    """
    if years is None:
        files = archive.list(FOREXFACTORY_DIR, "forex_factory_calendar_*.csv")
    else:
        files = [f"{FOREXFACTORY_DIR}/forex_factory_calendar_{int(y)}.csv" for y in sorted(set(years))]
    if not files:
        raise SourceError(
            "no ForexFactory calendar files (forex_factory_calendar_YYYY.csv)",
            file=archive.name(FOREXFACTORY_DIR),
        )
    rows: list[_Row] = []
    for f in files:
        rows.extend(archive.parsed("forexfactory", f, _parse_forexfactory))
    # consecutive year files overlap by a few days (a calendar week spans New Year): keep one copy
    seen: dict[tuple[str, datetime, str], _Row] = {}
    unique: list[_Row] = []
    for r in rows:
        key = (r.indicator_id, r.release_at, r.event)
        prev = seen.get(key)
        if prev is None:
            seen[key] = r
            unique.append(r)
        elif (prev.actual, prev.consensus) != (r.actual, r.consensus):
            raise SourceError(
                f"same release as {prev.file} row {prev.row} but different values "
                f"(actual/forecast {prev.actual}/{prev.consensus} vs {r.actual}/{r.consensus})",
                file=r.file,
                row=r.row,
                field="Actual",
                value=r.actual,
            )
    return _frame(_assign_labels(unique))


def _ff_value(text: str, scale: float, *, file: str, row: int, field: str) -> float | None:
    s = (text or "").strip().replace(",", "")
    if not s:
        return None
    m = _FF_VALUE.match(s)
    if not m:
        raise SourceError(
            "not a ForexFactory number (digits with an optional K/M/B/T/% suffix)",
            file=file,
            row=row,
            field=field,
            value=text,
        )
    try:
        v = Decimal(m.group(1)) * _FF_MULT[m.group(2)] / Decimal(repr(scale))
    except InvalidOperation:
        raise SourceError("not a number", file=file, row=row, field=field, value=text) from None
    return float(v)


def _parse_forexfactory(text: str, file: str) -> list[_Row]:
    timed: dict[tuple[str, str], datetime] = {}  # (Date, Event) -> UTC release time of the timed row
    pending: list[tuple[int, dict[str, str], str]] = []  # "<Mon> Data" rows: (row, data, month token)
    out: list[_Row] = []
    required = ("Date", "Time", "Currency", "Event", "Actual", "Forecast")
    m = re.search(r"(\d{4})\D*$", file)
    year = int(m.group(1)) if m else None
    latest: datetime | None = None
    for i, r in csv_rows(text, file=file, required=required):
        if (r["Currency"] or "").strip() != "USD":
            continue
        name = (r["Event"] or "").strip()
        if name not in _FF_EVENTS:
            continue
        tm = (r["Time"] or "").strip()
        clock = _FF_CLOCK.match(tm)
        data = _FF_DATA.match(tm)
        if not (clock or data):
            continue  # "All Day", "Tentative", ...: no release time, nothing to place
        day = _ff_date(r["Date"], year, file=file, row=i)
        if latest is not None and (latest - day).days > 180:
            # scraper quirk: the first days of the next year, at the end of the file, carry this year
            day = day.replace(year=day.year + 1)
        latest = day if latest is None or day > latest else latest
        r = dict(r, Date=f"{day:%Y-%m-%d}")
        if clock:
            hour = int(clock.group(1)) % 12 + (12 if clock.group(3) == "pm" else 0)
            minute = int(clock.group(2))
            if int(clock.group(1)) > 12 or minute > 59:
                raise SourceError("not a clock time", file=file, row=i, field="Time", value=r["Time"])
            utc = day.replace(hour=hour, minute=minute, tzinfo=FOREXFACTORY_TZ).astimezone(UTC)
            timed[((r["Date"] or "").strip(), name)] = utc
            out.append(_ff_row(i, r, name, utc, None, file))
        else:
            pending.append((i, r, data.group(1)))
    # catch-up rows: newest period one minute before the timed row, older ones a minute earlier each
    by_key: dict[tuple[str, str], list[tuple[int, dict[str, str], str]]] = defaultdict(list)
    for i, r, tok in pending:
        by_key[((r["Date"] or "").strip(), (r["Event"] or "").strip())].append((i, r, tok))
    for key, items in by_key.items():
        if key not in timed:
            i, r, _ = items[0]
            raise SourceError(
                f"'<Mon> Data' row has no timed {key[1]!r} row on the same date to take its time from",
                file=file,
                row=i,
                field="Time",
                value=r["Time"],
            )
        anchor = timed[key]
        local_anchor = anchor.astimezone(ET).replace(tzinfo=None)
        labelled = sorted(items, key=lambda it: _resolve_period(it[2], local_anchor), reverse=True)
        for k, (i, r, tok) in enumerate(labelled, start=1):
            out.append(_ff_row(i, r, key[1], anchor - timedelta(minutes=k), tok, file))
    return out


def _ff_date(text: str, year: int | None, *, file: str, row: int) -> datetime:
    """ForexFactory ``Date``: ``YYYY-MM-DD``, or ``Wed Feb 29`` (leap days in the scraped files; year from the
    file name)."""
    s = (text or "").strip()
    try:
        return datetime.strptime(s, "%Y-%m-%d")
    except ValueError:
        pass
    m = re.fullmatch(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) (\d{1,2})", s)
    if m and year is not None and m.group(1) in MONTH_NUMBER:
        try:
            return datetime(year, MONTH_NUMBER[m.group(1)], int(m.group(2)))
        except ValueError:
            pass
    raise SourceError("not a date (YYYY-MM-DD or 'Dow Mon DD')", file=file, row=row, field="Date", value=text)


def _ff_row(i: int, r: dict[str, str], name: str, utc: datetime, month_token: str | None, file: str) -> _Row:
    ind = get_indicator(_FF_EVENTS[name])
    local = utc.astimezone(ET).replace(tzinfo=None)
    a = _ff_value(r["Actual"], ind.panel_scale, file=file, row=i, field="Actual")
    c = _ff_value(r["Forecast"], ind.panel_scale, file=file, row=i, field="Forecast")
    return _Row(
        source="forexfactory",
        indicator_id=ind.id,
        local=local,
        release_at=utc,
        event=name if month_token is None else f"{name}  ({month_token})",
        text_label=None if month_token is None else _resolve_period(month_token, local),
        actual=a,
        consensus=c,
        consensus_source="forexfactory" if c is not None else None,
        file=file,
        row=i,
    )
