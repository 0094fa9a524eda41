"""Helpers shared by every source connector of both tracks: the one source error (file, row, field, value),
strict number parsing, CSV rows with their numbers, a parsed-file cache keyed by path and modification time,
and HTTP text download. Time placement and calendar helpers are in :mod:`leaf_live.core.pit`."""

from __future__ import annotations

import csv
import io
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx


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


def parse_number(text: str | None, *, file: str, row: int, field: str, required: bool = False) -> float | None:
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


def csv_rows(text: str, *, file: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(data_row_number, row)`` for a CSV text with a header, 1-based, header excluded.

    Raises :class:`SourceError` when a required column is missing or a row has more fields than the header.
    """
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise SourceError(
            f"missing column(s) {missing}; header has {header}", file=file, row=0, field="header", value=",".join(header)
        )
    for i, row in enumerate(reader, start=1):
        if None in row:  # DictReader puts surplus fields under the key None
            raise SourceError(f"row has more fields than the header ({len(header)})", file=file, row=i,
                              field="row", value=row[None])
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


def redact(url: str) -> str:
    """Hide secrets (``api_key=...``) before a URL goes into an error message or a stored row."""
    return re.sub(r"(api_key=)[^&]+", r"\1***", url)


def http_get_text(url: str, *, params: dict[str, Any] | None = None, timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
                  what: str = "response") -> str:
    """GET ``url`` and return the body text. Raises :class:`SourceError` naming the (redacted) URL and the
    HTTP status or network error."""
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            resp = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise SourceError(f"request failed: {type(exc).__name__}: {exc}", file=redact(url)) from None
    shown = redact(str(resp.url))
    if resp.status_code != 200:
        body = resp.text[:300].replace("\n", " ")
        raise SourceError(f"HTTP {resp.status_code} for {what}: {body}", file=shown)
    return resp.text


def is_url(s: str | os.PathLike) -> bool:
    return isinstance(s, str) and s.startswith(("http://", "https://"))
