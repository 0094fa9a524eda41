"""Announcement-window index-futures prices: the E-mini S&P 500 (ES) front-month 1-minute close 5 minutes
before and 30 minutes after each release timestamp (LiveMacroEval §3.6, App. K Eq. 4).

One client interface (:class:`WindowPricesClient`), two implementations:

:class:`FuturesSnapshot`
    The LiveMacroEval panel's own window closes: ``start_bar_close`` / ``end_bar_close`` of
    ``field_releases_valid.csv`` (one row per distinct release timestamp 2010-01 -> 2025-10; source
    ``livemacroeval_panel``), plus, for timestamps the panel does not have, the valid rows of
    ``Results/data_sp500futures/event_window_coverage.csv`` (2015-01 -> 2026-05, incl. the live window;
    source ``livemacroeval_coverage``). A release timestamp in neither file has no prices and is simply not
    returned (:func:`leaf_live.macro.scoring.surprises.announcement_returns` marks it ``no_prices``). The raw
    FirstRateData bars are licensed and not redistributed.
:class:`FuturesLive`
    A pluggable :class:`IntradayBarProvider` (default :class:`YFinanceBars` on ``ES=F``) asked for the
    1-minute close at T-5m and T+30m of each requested release timestamp; when that minute has no bar the
    previous minute's bar is used (the panel's ``offset_sec = -60`` convention).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable

import polars as pl

from leaf_live.core.pit import ET, UTC, as_utc_column, et_month_key, localize, parse_naive_datetime, to_utc
from leaf_live.core.sources import SourceError, cached_parse, csv_rows, display_path, parse_number
from leaf_live.macro.sources.releases import PANEL_DIR

PANEL_VALID_FILE = f"{PANEL_DIR}/field_releases_valid.csv"
COVERAGE_FILE = "livemacroeval/Results/data_sp500futures/event_window_coverage.csv"
BEFORE = timedelta(minutes=5)
AFTER = timedelta(minutes=30)
ONE_MINUTE = timedelta(minutes=1)

WINDOW_PRICE_SCHEMA: dict[str, pl.DataType] = {
    "partition_key": pl.Utf8,
    "release_at": pl.Datetime("us", "UTC"),
    "contract_code": pl.Utf8,
    "price_before": pl.Float64,
    "price_after": pl.Float64,
    "source": pl.Utf8,
    "available_at": pl.Datetime("us", "UTC"),
}


@runtime_checkable
class IntradayBarProvider(Protocol):
    """Source of 1-minute futures bars.

    ``close_at(symbol, ts)`` returns the close of the 1-minute bar that OPENS at ``ts`` (tz-aware; the
    convention of FirstRateData and Yahoo bars: the 09:55 bar covers 09:55:00-09:55:59), or ``None`` when
    there is no such bar (market closed, no trade that minute, outside the provider's history).
    ``name`` is stored as the ``source`` of the prices.
    """

    name: str

    def close_at(self, symbol: str, ts: datetime) -> float | None: ...


@runtime_checkable
class WindowPricesClient(Protocol):
    """Announcement-window ES prices per release timestamp (:class:`FuturesSnapshot` or
    :class:`FuturesLive`)."""

    def window_prices(
        self, release_times: Iterable[datetime] | pl.Series | pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """The window prices of ``release_times`` (see :class:`FuturesSnapshot.window_prices`)."""
        ...


class FuturesSnapshot:
    """The recorded window closes under ``snapshot_dir`` (module docstring): the panel's, plus, when
    ``include_coverage``, the coverage file's for timestamps the panel does not cover (the live window
    2025-11 -> 2026-05). Raises :class:`ValueError` when ``snapshot_dir`` is not a directory."""

    transport = "snapshot"

    def __init__(self, snapshot_dir: str | Path, *, include_coverage: bool = True) -> None:
        if snapshot_dir is None or not Path(snapshot_dir).is_dir():
            raise ValueError(f"snapshot_dir={snapshot_dir!s} does not exist (set LEAF_LIVE_SNAPSHOT)")
        self.snapshot_dir = Path(snapshot_dir)
        self.include_coverage = include_coverage

    def window_prices(
        self, release_times: Iterable[datetime] | pl.Series | pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """Announcement-window ES prices per release timestamp.

        ``release_times``: tz-aware datetimes, a Series, or a frame with ``release_at``; only these timestamps
        are returned (``None`` = every recorded one).

        Returns columns ``partition_key`` (release month in New York, ``YYYY-MM``), ``release_at`` (UTC),
        ``contract_code`` (e.g. ``H10`` = March 2010; NULL when the provider does not say), ``price_before``
        (close at T-5m) and ``price_after`` (close at T+30m) in index points, ``source``, ``available_at``
        (= release_at + 30 min, when the window closes). One row per timestamp that has both prices.

        Raises :class:`SourceError` for a malformed row, or two rows of one timestamp with different prices.
        """
        frame = _snapshot_prices(self.snapshot_dir, self.include_coverage)
        if release_times is not None:
            keep = pl.DataFrame(
                {"release_at": pl.Series(_as_times(release_times), dtype=pl.Datetime("us", "UTC"))}
            )
            frame = frame.join(keep, on="release_at", how="semi", maintain_order="left")
        return frame


class FuturesLive:
    """A pluggable :class:`IntradayBarProvider` (default :class:`YFinanceBars` on ``ES=F``) asked for the
    1-minute close at T-5m and T+30m of each requested release timestamp; when that minute has no bar the
    previous minute's bar is used (the panel's ``offset_sec = -60`` convention)."""

    transport = "live"

    def __init__(self, provider: IntradayBarProvider | None = None, *, symbol: str = "ES=F") -> None:
        self.provider = provider or YFinanceBars()
        self.symbol = symbol

    def window_prices(
        self, release_times: Iterable[datetime] | pl.Series | pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """Same frame as :meth:`FuturesSnapshot.window_prices`; ``release_times`` is required (a live provider
        has no list of releases). Raises :class:`ValueError` without it, :class:`SourceError` for a
        non-positive close."""
        if release_times is None:
            raise ValueError(
                "live window prices: pass release_times= (the release timestamps whose windows to price)"
            )
        return _live_prices(self.provider, _as_times(release_times), self.symbol)


def _as_times(release_times: Iterable[datetime] | pl.Series | pl.DataFrame) -> list[datetime]:
    if isinstance(release_times, pl.Series):
        release_times = release_times.to_frame("release_at")
    if isinstance(release_times, pl.DataFrame):
        release_times = as_utc_column(release_times, "release_at", "release_times")["release_at"].to_list()
    return sorted({to_utc(t) for t in release_times})


def _frame(rows: list[tuple[datetime, str | None, float, float, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "partition_key": [et_month_key(t) for t, *_ in rows],
            "release_at": [t for t, *_ in rows],
            "contract_code": [c for _, c, *_ in rows],
            "price_before": [b for _, _, b, _, _ in rows],
            "price_after": [a for *_, a, _ in rows],
            "source": [s for *_, s in rows],
            "available_at": [t + AFTER for t, *_ in rows],
        },
        schema=WINDOW_PRICE_SCHEMA,
    )


# ------------------------------------------------------------------------------------------------
# snapshot
# ------------------------------------------------------------------------------------------------


def _snapshot_prices(snapshot_dir: Path, include_coverage: bool) -> pl.DataFrame:
    path = snapshot_dir / PANEL_VALID_FILE
    panel = cached_parse(
        "window_prices:panel", path, lambda p: _parse_panel(p, display_path(p, snapshot_dir))
    )
    rows = list(panel)
    if include_coverage:
        have = {r[0] for r in rows}
        cpath = snapshot_dir / COVERAGE_FILE
        cov = cached_parse(
            "window_prices:coverage", cpath, lambda p: _parse_coverage(p, display_path(p, snapshot_dir))
        )
        rows.extend(r for r in cov if r[0] not in have)
    rows.sort(key=lambda r: r[0])
    return _frame(rows)


def _read(path: Path, file: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError("file not found", file=file) from None


def _window_row(r: dict[str, str], i: int, file: str) -> tuple[datetime, float, float]:
    """(release time UTC, close at T-5m, close at T+30m) of one window row; closes must be positive."""
    raw = r["release_datetime_et"]
    local = parse_naive_datetime(raw, file=file, row=i, field="release_datetime_et")
    at = localize(local, ET, file=file, row=i, field="release_datetime_et", value=raw)
    b = parse_number(r["start_bar_close"], file=file, row=i, field="start_bar_close", required=True)
    a = parse_number(r["end_bar_close"], file=file, row=i, field="end_bar_close", required=True)
    for name, v in (("start_bar_close", b), ("end_bar_close", a)):
        if v <= 0:
            raise SourceError("price must be positive", file=file, row=i, field=name, value=r[name])
    return at, b, a


def _parse_panel(path: Path, file: str) -> list[tuple[datetime, str | None, float, float, str]]:
    """One row per distinct release timestamp of field_releases_valid.csv; rows sharing a timestamp must
    carry the same window (the source computes one window per minute)."""
    by_time: dict[datetime, tuple[datetime, str | None, float, float, str, int]] = {}
    req = ("release_datetime_et", "contract_code", "start_bar_close", "end_bar_close")
    for i, r in csv_rows(_read(path, file), file=file, required=req):
        at, b, a = _window_row(r, i, file)
        code = (r["contract_code"] or "").strip() or None
        prev = by_time.get(at)
        if prev is not None and (prev[1], prev[2], prev[3]) != (code, b, a):
            raise SourceError(
                f"same release timestamp as row {prev[5]} but a different window "
                f"({prev[1]} {prev[2]} -> {prev[3]} vs {code} {b} -> {a})",
                file=file,
                row=i,
                field="start_bar_close",
                value=r["start_bar_close"],
            )
        by_time.setdefault(at, (at, code, b, a, "livemacroeval_panel", i))
    return [v[:5] for v in by_time.values()]


def _parse_coverage(path: Path, file: str) -> list[tuple[datetime, str | None, float, float, str]]:
    """Valid rows of event_window_coverage.csv (one row per release timestamp)."""
    out = []
    req = ("release_datetime_et", "contract_code", "start_bar_close", "end_bar_close", "valid")
    for i, r in csv_rows(_read(path, file), file=file, required=req):
        valid = (r["valid"] or "").strip()
        if valid not in ("True", "False"):
            raise SourceError("expected True or False", file=file, row=i, field="valid", value=r["valid"])
        if valid == "False":
            continue
        at, b, a = _window_row(r, i, file)
        out.append((at, (r["contract_code"] or "").strip() or None, b, a, "livemacroeval_coverage"))
    return out


# ------------------------------------------------------------------------------------------------
# live
# ------------------------------------------------------------------------------------------------


def _live_prices(provider: IntradayBarProvider, times: Sequence[datetime], symbol: str) -> pl.DataFrame:
    rows = []
    for t in times:
        before = _close_with_fallback(provider, symbol, t - BEFORE)
        after = _close_with_fallback(provider, symbol, t + AFTER)
        if before is None or after is None:
            continue  # no usable window: the science marks the timestamp no_prices
        contract = getattr(provider, "contract_at", None)
        code = contract(symbol, t) if callable(contract) else None
        rows.append((t, code, before, after, provider.name))
    return _frame(rows)


def _close_with_fallback(provider: IntradayBarProvider, symbol: str, ts: datetime) -> float | None:
    for at in (ts, ts - ONE_MINUTE):
        v = provider.close_at(symbol, at)
        if v is not None:
            v = float(v)
            if not math.isfinite(v) or v <= 0:
                raise SourceError(
                    f"provider {provider.name} returned a non-positive or non-finite close",
                    file=f"{provider.name}:{symbol}",
                    field=f"close@{at.isoformat()}",
                    value=v,
                )
            return v
    return None


class YFinanceBars:
    """1-minute bars from Yahoo Finance through ``yfinance`` (``ES=F`` = the continuous front-month E-mini).

    Yahoo keeps 1-minute bars for about the last 30 days only (and serves at most 7-8 days per request), so
    this provider can price recent releases (the live window as it happens), not history: older
    timestamps return ``None`` and stay ``no_prices``. Bars are fetched per New York trading day and
    cached in memory. ``contract_code`` is not known from a continuous symbol (NULL).
    """

    name = "yfinance"

    def __init__(self) -> None:
        self._days: dict[tuple[str, date], dict[datetime, float]] = {}
        self._lock = threading.Lock()

    def close_at(self, symbol: str, ts: datetime) -> float | None:
        ts = to_utc(ts).replace(second=0, microsecond=0)
        day = ts.astimezone(ET).date()
        with self._lock:
            bars = self._days.get((symbol, day))
        if bars is None:
            bars = self._fetch_day(symbol, day)
            with self._lock:
                self._days[(symbol, day)] = bars
        return bars.get(ts)

    @staticmethod
    def _fetch_day(symbol: str, day: date) -> dict[datetime, float]:
        import yfinance as yf  # imported lazily: heavy, and only the live client needs it

        hist = yf.Ticker(symbol).history(start=day, end=day + timedelta(days=1), interval="1m", prepost=True)
        return minute_closes(hist)


def minute_closes(history) -> dict[datetime, float]:
    """``{bar open time (UTC): close}`` from a yfinance ``history()`` frame (pandas, a DatetimeIndex of bar
    open times in the exchange's zone, a ``Close`` column). A naive index is read as America/New_York (the
    zone Yahoo reports CME equity futures in); missing or non-finite closes are left out."""
    if history is None or len(history) == 0:
        return {}
    out: dict[datetime, float] = {}
    for ts, close in zip(history.index, history["Close"]):
        if close is None or not math.isfinite(float(close)):
            continue
        py = ts.to_pydatetime()
        out[(py if py.tzinfo else py.replace(tzinfo=ET)).astimezone(UTC)] = float(close)
    return out
