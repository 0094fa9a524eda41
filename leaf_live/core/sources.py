"""Helpers shared by every source connector of both tracks: the one source error (file, row, field, value),
strict number parsing, CSV rows with their numbers, a parsed-file cache keyed by path and modification time,
HTTP download, and the two file stores a source client reads its service's files from.

The source-client pattern (DESIGN.md principle 4), the same for every source of both tracks:

* the science module of a source defines ONE client interface (a :class:`typing.Protocol`, e.g.
  ``leaf_live.macro.sources.fred_md.FredMdClient``) and two implementations: ``<Source>Snapshot`` reads the
  recorded files of the service under a snapshot directory, ``<Source>Live`` calls the service (base URLs
  are constructor arguments, so tests point them at a loopback server). Both return the same typed frames;
  science functions take a client, never a transport name;
* where the live service serves the very files a snapshot records, both implementations read through a
  :class:`FileStore` (:class:`SnapshotFiles` for a directory, :class:`HttpFiles` for a base URL);
* ``resources/sources.py`` wraps each implementation in a Dagster resource, and
``resources.default_resources``
  chooses snapshot or live for every source in one place.

Time placement and calendar helpers are in :mod:`leaf_live.core.pit`."""

from __future__ import annotations

import csv
import io
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import httpx

from leaf_live.core.redaction import redact

T = TypeVar("T")


class SourceError(ValueError):
    """A source row or response cannot be used.

    The message names the file (or URL), the 1-based data row (header excluded; the file line is given too),
    the field and the offending value, so the bad input can be found and fixed. The attributes carry the
    same information for programs.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
        value: object = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.value = value
        where = []
        if file is not None:
            where.append(f"file {file}")
        if row is not None:
            # data rows are 1-based after the header, so the text line is row + 1
            where.append(f"row {row} (line {row + 1})")
        if field is not None:
            where.append(f"field {field}={value!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


# ------------------------------------------------------------------------------------------------
# numbers
# ------------------------------------------------------------------------------------------------


# Documented missing-value markers: FRED, ALFRED and the St. Louis Fed's files write "." for an observation
# that does not exist (https://fred.stlouisfed.org/docs/api/fred/series_observations.html). A marker is a
# null, counted by :func:`csv_rows`, never a refusal of the file.
MISSING_MARKERS: frozenset[str] = frozenset({"."})


def is_missing(text: str | None, markers: frozenset[str] | tuple[str, ...] = MISSING_MARKERS) -> bool:
    """True for an empty value or a documented missing-value marker (``"."``)."""
    s = (text or "").strip()
    return not s or s in markers


def parse_number(
    text: str | None,
    *,
    file: str,
    row: int,
    field: str,
    required: bool = False,
    markers: frozenset[str] | tuple[str, ...] = MISSING_MARKERS,
) -> float | None:
    """Strict float parse: empty or a missing-value marker (``"."``, :data:`MISSING_MARKERS`) -> ``None`` (or
    an error if ``required``); anything else must be a finite number. Raises :class:`SourceError` naming
    file, row, field and value."""
    s = (text or "").strip()
    if not s or s in markers:
        if required:
            what = "empty" if not s else f"the missing-value marker {s!r}"
            raise SourceError(f"value is required but {what}", file=file, row=row, field=field, value=text)
        return None
    try:
        v = float(s)
    except ValueError:
        raise SourceError("not a number", file=file, row=row, field=field, value=text) from None
    if not math.isfinite(v):
        raise SourceError("number is not finite", file=file, row=row, field=field, value=text)
    return v


# ------------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------------


def display_path(path: Path, snapshot_dir: Path | None) -> str:
    """Path relative to the snapshot directory when inside it (stable across machines), else as given."""
    if snapshot_dir is not None:
        try:
            return str(Path(path).resolve().relative_to(Path(snapshot_dir).resolve()))
        except ValueError:
            pass
    return str(path)


def require_header(header: list[str], required: tuple[str, ...], *, file: str) -> None:
    """Raise :class:`SourceError` (file, row 0, field ``header``) when a source file's header lacks a required
    column: the source-file form of :func:`leaf_live.core.pit.require_columns`."""
    missing = [c for c in required if c not in header]
    if missing:
        raise SourceError(
            f"missing column(s) {missing}; header has {header}",
            file=file,
            row=0,
            field="header",
            value=",".join(header),
        )


def csv_rows(
    text: str,
    *,
    file: str,
    required: tuple[str, ...],
    non_empty: tuple[str, ...] = (),
    markers: frozenset[str] | tuple[str, ...] = MISSING_MARKERS,
    missing: dict[str, int] | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(data_row_number, row)`` for a CSV text with a header, 1-based, header excluded: the ONE row
    validation of every CSV source of both tracks, run on each row before the caller parses it (so a source
    fails before any write).

    Checks (each a :class:`SourceError` naming the file, the row and the field):

    * the header holds every ``required`` column;
    * a row has exactly the header's fields: more (surplus fields) or fewer (a truncated file whose last
      line lost its trailing fields would otherwise read as empty values, e.g. "scheduled, no actual");
    * a ``non_empty`` field (one the source never leaves empty: an id, a timestamp) has a value.

    Values equal to a documented missing-value marker (``markers``, default ``"."``) are returned as ``""``
    (the callers' null) and counted per field in ``missing`` when a dict is given; never a refusal.
    """
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = reader.fieldnames or []
    require_header(header, required, file=file)
    for i, row in enumerate(reader, start=1):
        if None in row:  # DictReader puts surplus fields under the key None
            raise SourceError(
                f"row has more fields than the header ({len(header)})",
                file=file,
                row=i,
                field="row",
                value=row[None],
            )
        short = [k for k in header if row.get(k) is None]  # DictReader fills absent trailing fields with None
        if short:
            raise SourceError(
                f"row has {len(header) - len(short)} of the header's {len(header)} fields (truncated?):"
                f" {', '.join(short)} missing",
                file=file,
                row=i,
                field=short[0],
                value=None,
            )
        for k in header:
            v = row[k]
            if v and v.strip() in markers:
                row[k] = ""
                if missing is not None:
                    missing[k] = missing.get(k, 0) + 1
        for k in non_empty:
            if k in row and not (row[k] or "").strip():
                raise SourceError(
                    "empty value in a field the source always fills", file=file, row=i, field=k, value=row[k]
                )
        yield i, row


_cache: dict[tuple[str, str], tuple[int, int, Any]] = {}
_cache_lock = threading.Lock()


def cached_parse(kind: str, path: Path, parse: Callable[[Path], T]) -> T:
    """Return ``parse(path)``, reusing the previous result while the file's mtime and size are unchanged.

    The assets call the loaders once per partition run; the snapshot files are immutable in practice.
    """
    st = os.stat(path)
    key = (kind, str(Path(path).resolve()))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
            return hit[2]
    value = parse(path)
    with _cache_lock:
        _cache[key] = (st.st_mtime_ns, st.st_size, value)
    return value


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


# ------------------------------------------------------------------------------------------------
# HTTP
# ------------------------------------------------------------------------------------------------

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


def http_get(
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    client: httpx.Client | None = None,
    what: str = "response",
) -> httpx.Response:
    """GET ``url`` (through ``client`` when given, else a new client following redirects) and return the 200
    response. Raises :class:`SourceError` naming the (redacted) URL and the HTTP status and body start, or the
    network error."""
    own = client is None
    c = client or httpx.Client(timeout=timeout, follow_redirects=True, headers=dict(headers or {}))
    try:
        resp = c.get(url, params=dict(params) if params else None)
    except httpx.HTTPError as exc:
        raise SourceError(redact(f"request failed: {type(exc).__name__}: {exc}"), file=redact(url)) from None
    finally:
        if own:
            c.close()
    if resp.status_code != 200:
        body = redact(resp.text[:300].replace("\n", " "))
        raise SourceError(f"HTTP {resp.status_code} for {what}: {body}", file=redact(str(resp.url)))
    return resp


def http_get_text(
    url: str,
    *,
    params: dict[str, Any] | None = None,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    what: str = "response",
) -> str:
    """GET ``url`` and return the body text (:func:`http_get`). Raises :class:`SourceError`."""
    return http_get(url, params=params, timeout=timeout, what=what).text


def is_url(s: str | os.PathLike) -> bool:
    return isinstance(s, str) and s.startswith(("http://", "https://"))


# ------------------------------------------------------------------------------------------------
# file stores: a service's files under a snapshot directory or a base URL
# ------------------------------------------------------------------------------------------------


@runtime_checkable
class FileStore(Protocol):
    """Files of a source in the service's own format, addressed by a path relative to a root (``/``
    separated): a snapshot directory (:class:`SnapshotFiles`) or an HTTP base URL serving the same layout
    (:class:`HttpFiles`)."""

    def name(self, rel: str) -> str:
        """How rows and errors name the file: the relative path (snapshot) or the URL (live)."""
        ...

    def read_bytes(self, rel: str) -> bytes:
        """The file's bytes; raises :class:`SourceError` naming the file when it cannot be read."""
        ...

    def read_text(self, rel: str, encoding: str = "utf-8") -> str:
        """The file's text; raises :class:`SourceError` naming the file when it cannot be read or decoded."""
        ...

    def parsed(self, kind: str, rel: str, parse: Callable[[str, str], T]) -> T:
        """``parse(text, name)`` of the file, cached per store while the file is unchanged."""
        ...

    def list(self, folder: str, pattern: str) -> list[str]:
        """Relative paths of the files in ``folder`` matching the glob ``pattern``, sorted; raises
        :class:`SourceError` where the store cannot list (HTTP)."""
        ...


def _decode(raw: bytes, encoding: str, name: str) -> str:
    """Text with universal newlines (as :meth:`pathlib.Path.read_text`), so a file parses the same from disk
    and over HTTP."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(f"file is not {encoding} text (byte {exc.start})", file=name) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


class SnapshotFiles:
    """A :class:`FileStore` over a snapshot directory. Parsed files are cached by path, modification time and
    size (:func:`cached_parse`). Raises :class:`ValueError` naming the directory when it does not exist."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ValueError(f"snapshot directory {self.root!s} does not exist (set LEAF_LIVE_SNAPSHOT)")

    def path(self, rel: str) -> Path:
        return self.root / rel

    def name(self, rel: str) -> str:
        return display_path(self.path(rel), self.root)

    def read_bytes(self, rel: str) -> bytes:
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            raise SourceError("file not found", file=self.name(rel)) from None
        except OSError as exc:
            raise SourceError(f"cannot read file: {type(exc).__name__}: {exc}", file=self.name(rel)) from None

    def read_text(self, rel: str, encoding: str = "utf-8") -> str:
        return _decode(self.read_bytes(rel), encoding, self.name(rel))

    def parsed(self, kind: str, rel: str, parse: Callable[[str, str], T]) -> T:
        if not self.path(rel).is_file():
            raise SourceError("file not found", file=self.name(rel))
        return cached_parse(kind, self.path(rel), lambda p: parse(self.read_text(rel), self.name(rel)))

    def list(self, folder: str, pattern: str) -> list[str]:
        return sorted(
            str(p.relative_to(self.root)) for p in (self.root / folder).glob(pattern) if p.is_file()
        )


class HttpFiles:
    """A :class:`FileStore` over an HTTP base URL serving the snapshot's layout (``{base_url}/{rel}``); files
    are fetched once per store (one store per run) and named by their URL."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not is_url(base_url):
            raise ValueError(f"base_url={base_url!r}: expected an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._headers = dict(headers or {})
        self._cache: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def name(self, rel: str) -> str:
        return f"{self.base_url}/{rel.lstrip('/')}"

    def read_bytes(self, rel: str) -> bytes:
        return http_get(self.name(rel), timeout=self._timeout, headers=self._headers, what=rel).content

    def read_text(self, rel: str, encoding: str = "utf-8") -> str:
        return _decode(self.read_bytes(rel), encoding, self.name(rel))

    def parsed(self, kind: str, rel: str, parse: Callable[[str, str], T]) -> T:
        key = (kind, rel)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = parse(self.read_text(rel), self.name(rel))
        with self._lock:
            self._cache[key] = value
        return value

    def list(self, folder: str, pattern: str) -> list[str]:
        raise SourceError(f"cannot list {pattern} over HTTP; name the files to read", file=self.name(folder))


# ------------------------------------------------------------------------------------------------
# stored facts a reload must keep
# ------------------------------------------------------------------------------------------------


def check_facts_kept(
    stored: Any,
    incoming: Any,
    *,
    key: tuple[str, ...],
    value: str,
    marker: str | None = None,
    what: str = "stored fact",
    file_col: str = "source_file",
    row_col: str = "source_row",
) -> int:
    """Check, before a source's rows replace the stored ones, that no published fact is lost: every stored row
    with a ``value`` (and, when ``marker`` is given, not itself marked) must come back with the same ``key``
    and the same value (to 1e-9 relative), unless an incoming row of that key carries the revision
    ``marker``. A truncated or partial file that drops or rewrites a stored first release therefore fails
    before any write. ``stored`` and ``incoming``: polars frames with the ``key`` and ``value`` columns
    (``marker``, ``file_col`` and ``row_col`` where present). Returns the number of stored facts checked.

    Raises :class:`SourceError` naming the file and row (the incoming row for a changed value, the stored
    row's source file and row for a removed one), the field ``value`` and the stored value.
    """
    import polars as pl

    facts = stored.filter(pl.col(value).is_not_null())
    if marker is not None and marker in facts.columns:
        facts = facts.filter(~pl.col(marker).fill_null(False))
    if not facts.height:
        return 0
    inc = incoming.select(
        *key,
        pl.col(value).alias("_new"),
        (pl.col(marker).fill_null(False) if marker and marker in incoming.columns else pl.lit(False)).alias(
            "_marked"
        ),
        (pl.col(file_col) if file_col in incoming.columns else pl.lit(None, pl.Utf8)).alias("_file"),
        (pl.col(row_col) if row_col in incoming.columns else pl.lit(None, pl.Int64)).alias("_row"),
    )
    inc = inc.with_columns(pl.col(k).cast(facts.schema[k]) for k in key)  # an empty answer has no dtypes
    same = (pl.col("_new") - pl.col(value)).abs() <= 1e-9 * pl.max_horizontal(
        pl.lit(1.0), pl.col(value).abs()
    )
    joined = facts.join(inc, on=list(key), how="left")
    per_fact = joined.group_by(list(key)).agg(
        kept=(same.fill_null(False) | pl.col("_marked")).any(),
        new=pl.col("_new").drop_nulls().first(),
        new_file=pl.col("_file").filter(pl.col("_new").is_not_null()).first(),
        new_row=pl.col("_row").filter(pl.col("_new").is_not_null()).first(),
    )
    lost = facts.join(per_fact.filter(~pl.col("kept")), on=list(key), how="inner").sort(list(key))
    if not lost.height:
        return facts.height
    r = lost.row(0, named=True)
    ident = ", ".join(f"{k}={r[k]}" for k in key)
    extra = f" (and {lost.height - 1} more)" if lost.height > 1 else ""
    mark = f" and no {marker}" if marker else ""
    if r["new"] is not None:
        raise SourceError(
            f"the {what} {ident} was {r[value]!r}; the new data changes it to {r['new']!r}{mark}{extra};"
            " nothing written",
            file=r["new_file"] or r.get(file_col),
            row=r["new_row"],
            field=value,
            value=r["new"],
        )
    raise SourceError(
        f"the {what} {ident} ({value}={r[value]!r}) is missing from the new data{mark}{extra}: a truncated"
        " or partial file? nothing written",
        file=r.get(file_col),
        row=r.get(row_col),
        field=value,
        value=r[value],
    )


# whole days of daily sources
# ------------------------------------------------------------------------------------------------


def incomplete_days(
    rows: Any,
    *,
    entity: str,
    time_col: str | None = None,
    day_col: str = "partition_key",
    timezones: Mapping[str, str] | None = None,
    groups: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Days of a daily source's answer that are not complete by the source's own definition, each with a
    one-line reason (``"100 of 240 hourly rows (new_york 4 of 24)"``). A day no row answers is not listed (it
    is unanswered: its stored rows are kept, see ``assets.common.write_tables``).

    Two rules, chosen by ``time_col``:

    * hourly (``time_col`` = the hour's start, UTC; weather, electricity load): every entity with a row on
      the (UTC) day has every hour of it, 24, except where the source labels its hours in a local time zone
      (``timezones``: entity -> IANA zone): one row per local wall hour cannot hold the repeated hour of a
      DST fall-back (a local 25-hour day), so that UTC day expects 23;
    * daily (``time_col`` None; closing prices): every entity with a row both before and after the day in
      this answer (a listed ticker still trading; on the answer's last day of its group: every ticker of the
      group's previous session) has a row on the day, unless fewer than half of its
      exchange group's listed tickers (``groups``: entity -> group, e.g. stocks, grain futures, other
      futures) have one (the exchange's holiday or an irregular holiday session). A series that ended (a
      delisted ticker, a finished contract) is expected only up to its last row.

    ``rows``: polars frame with ``day_col`` (YYYY-MM-DD), ``entity`` (and ``time_col``). Returns
    ``{day: reason}`` sorted by day; empty when every answered day is whole.
    """
    import polars as pl

    if rows.height == 0:
        return {}
    out: dict[str, str] = {}
    if time_col is not None:
        counts = rows.group_by(day_col, entity).agg(pl.col(time_col).n_unique().alias("n"))
        for (day,), g in counts.sort(day_col, entity).group_by(day_col, maintain_order=True):
            want = {e: _hours_expected(day, (timezones or {}).get(e)) for e in g[entity]}
            short = [(e, n) for e, n in g.select(entity, "n").iter_rows() if n < want[e]]
            if short:
                detail = ", ".join(f"{e} {n} of {want[e]}" for e, n in short)
                out[day] = f"{int(g['n'].sum())} of {sum(want.values())} hourly rows ({detail})"
        return dict(sorted(out.items()))
    group_of = (lambda e: groups.get(e, "")) if groups else (lambda e: "")
    span = rows.group_by(entity).agg(
        pl.col(day_col).min().alias("first"), pl.col(day_col).max().alias("last")
    )
    have = rows.group_by(day_col).agg(pl.col(entity).unique().alias("have"))
    by_day = {d: set(h) for d, h in have.iter_rows()}
    sessions: dict[str, list[str]] = {}  # group -> its days with a row, ascending
    for d in sorted(by_day):
        for g in {group_of(e) for e in by_day[d]}:
            sessions.setdefault(g, []).append(d)
    final = {g: ds[-1] for g, ds in sessions.items()}

    def previous(e: str, day: str) -> set[str]:
        """Tickers of ``e``'s group with a row on the group's session before ``day``."""
        earlier = [d for d in sessions[group_of(e)] if d < day]
        return {x for x in by_day[earlier[-1]] if group_of(x) == group_of(e)} if earlier else set()

    for day, present in sorted(have.iter_rows()):
        present = set(present)
        listed: dict[str, set[str]] = {}
        for e, first, last in span.iter_rows():
            if first < day < last or (first < day and day == final[group_of(e)] and e in previous(e, day)):
                listed.setdefault(group_of(e), set()).add(e)
        # a group trades the day when at least half its listed tickers closed (else: its holiday)
        expected = {e for g in listed.values() if 2 * len(g & present) >= len(g) for e in g}
        missing = sorted(expected - present)
        if missing:
            n = len(expected | present)
            names = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            out[day] = f"closes of {n - len(missing)} of {n} tickers (missing {names})"
    return out


def _hours_expected(day: str, tz: str | None) -> int:
    """UTC hours of ``day`` a source with one row per wall hour of ``tz`` can fill (24; 23 on a fall-back)."""
    from datetime import UTC, datetime, timedelta
    from zoneinfo import ZoneInfo

    if tz is None:
        return 24
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    zone = ZoneInfo(tz)
    return sum(1 for h in range(24) if (start + timedelta(hours=h)).astimezone(zone).fold == 0)
