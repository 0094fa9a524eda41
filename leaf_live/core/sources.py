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


def parse_number(
    text: str | None, *, file: str, row: int, field: str, required: bool = False
) -> float | None:
    """Strict float parse: empty -> ``None`` (or an error if ``required``); anything else must be a finite
    number. Raises :class:`SourceError` naming file, row, field and value."""
    s = (text or "").strip()
    if not s:
        if required:
            raise SourceError("value is required but empty", file=file, row=row, field=field, value=text)
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


def csv_rows(text: str, *, file: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(data_row_number, row)`` for a CSV text with a header, 1-based, header excluded.

    Raises :class:`SourceError` when a required column is missing or a row has more fields than the header.
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
