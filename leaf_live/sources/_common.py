"""Helpers shared by the source readers: time-zone placement, strict number parsing, CSV rows with their
numbers, a parsed-file cache keyed by path and modification time, and HTTP text download."""

from __future__ import annotations

import csv
import io
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import httpx

from leaf_live.sources import SourceError

ET = ZoneInfo("America/New_York")
UTC = timezone.utc
T = TypeVar("T")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTH_NUMBER = {m: i + 1 for i, m in enumerate(_MONTHS)}


# ------------------------------------------------------------------------------------------------
# time
# ------------------------------------------------------------------------------------------------


def localize(local: datetime, tz: ZoneInfo, *, file: str, row: int, field: str, value: object) -> datetime:
    """Place a naive wall-clock time in ``tz`` and return it in UTC.

    Raises :class:`SourceError` when the wall-clock time does not exist (spring-forward gap, e.g.
    2021-03-14 02:30 in New York) or is ambiguous (fall-back hour): no single UTC instant is implied.
    """
    first = local.replace(tzinfo=tz, fold=0)
    second = local.replace(tzinfo=tz, fold=1)
    if first.utcoffset() != second.utcoffset():
        back = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
        kind = "does not exist (daylight-saving gap)" if back != local else "is ambiguous (daylight-saving overlap)"
        raise SourceError(
            f"local time {local:%Y-%m-%d %H:%M:%S} {kind} in time zone {tz.key}; cannot place it in UTC",
            file=file, row=row, field=field, value=value,
        )
    return first.astimezone(UTC)


def parse_naive_datetime(text: str, *, file: str, row: int, field: str) -> datetime:
    """Parse ``YYYY-MM-DD HH:MM[:SS]`` (naive wall clock). Raises :class:`SourceError`."""
    s = (text or "").strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"):
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    raise SourceError("not a timestamp of the form YYYY-MM-DD HH:MM[:SS]", file=file, row=row, field=field, value=text)


def shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    k = year * 12 + (month - 1) + delta
    return k // 12, k % 12 + 1


def label_for_month(year: int, month: int) -> str:
    return f"{year:04d}-{month:02d}"


def parse_period_label(label: str) -> tuple[int, int, bool]:
    """'YYYY-MM' -> (year, month, False); 'YYYY-Qn' -> (year, first month of quarter, True)."""
    m = re.fullmatch(r"(\d{4})-(\d{2})", label)
    if m:
        return int(m.group(1)), int(m.group(2)), False
    m = re.fullmatch(r"(\d{4})-Q([1-4])", label)
    if m:
        return int(m.group(1)), 3 * int(m.group(2)) - 2, True
    raise ValueError(f"period label {label!r} is neither YYYY-MM nor YYYY-Qn")


def reference_period(label: str, frequency: str) -> date:
    """First day of the period a label names.

    A quarterly indicator with a month label (the release-lag fallback, release month - 1) refers to the
    latest quarter complete by the end of that month: 2010-03 -> 2010Q1, but 2010-01 (a release in
    February 2010, the second estimate) -> 2009Q4.
    """
    year, month, is_quarter = parse_period_label(label)
    if frequency == "quarterly":
        if not is_quarter and month % 3 != 0:
            year, month = (year - 1, 12) if month < 3 else (year, month - month % 3)
        month = 3 * ((month - 1) // 3) + 1
    return date(year, month, 1)


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


def to_utc(dt: datetime) -> datetime:
    if dt.tzinfo is None:
        raise ValueError(f"timestamp {dt!r} has no time zone; pass tz-aware UTC times")
    return dt.astimezone(UTC)

