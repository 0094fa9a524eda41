"""Daily OHLCV bars of stocks and commodity futures (LEAF §3.3: Yahoo Finance via yfinance).

One interface, two transports (:class:`DailyPriceSource`):

* :class:`SnapshotDailyPrices` reads yfinance-style CSVs under ``leaf/stocks/<folder>/<TICKER>.csv[.gz]``
  and ``leaf/commodities/<folder>/<SYMBOL>.csv[.gz]``. Variants handled (each folder's PROVENANCE.md):
  a one-row header (``Date``/``timestamp`` + Open/High/Low/Close[/Adj Close]/Volume|Vol in any order and
  case, extra columns such as Dividends ignored); the 3-row MultiIndex header of ``DataFrame.to_csv`` on a
  ``yf.download`` result (``Price,...`` / ``Ticker,...`` / ``Date,,,``); the 2-row variant whose second row
  is the ticker row (``,ZW=F,ZW=F,...``); dates as ``YYYY-MM-DD`` or as timestamps with a UTC offset
  (``2021-07-29 04:00:00+00:00``, ``2018-01-02 00:00:00-05:00``), which mean the US session date: the
  instant converted to America/New_York. A row without a close (an unfinished session) is skipped.
* :class:`LiveDailyPrices` calls ``yfinance.download`` (auto-adjusted) and converts its frame with the same
  column rules (:func:`frame_from_yfinance`).

Price basis: where a file has ``Adj Close`` the close is the adjusted close (split- and dividend-adjusted,
like the ``auto_adjust=True`` files) and open/high/low are scaled by Adj Close / Close.

Precedence (snapshot): when several folders hold a symbol, the folders are ranked by download date (the
newest date their files reach), newest first (:data:`STOCK_FOLDERS`, :data:`COMMODITY_FOLDERS`). The series
is every row of the first folder; each next folder only extends it backwards (dates before the earliest
date already present), its prices multiplied by the ratio of the two folders' closes on the earliest
already-present date that both hold, so the series is continuous on the newest adjustment basis. A folder
that shares no date with the series built so far is not used (its basis cannot be matched).

``available_at`` (the close is knowable): 16:00 America/New_York on the session date for stocks (regular
close; half-days close earlier, so this errs late), 17:00 America/New_York for futures (``=F``: the CME
Globex daily close/maintenance break).
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from leaf_live.core.sources import SourceError, cached_parse, display_path
from leaf_live.core.storage import conform, empty_frame

# When a UTC day's bars are at the provider, counted from the day's end (next 00:00 UTC, already after the
# 16:00/17:00 New York close): yfinance serves the day's bar minutes after the close; an hour covers late
# settlement prices of the futures. An operating assumption, not a measured figure.
PUBLICATION_LAG = timedelta(hours=1)


# Newest download first (last date the folder's files reach, PROVENANCE.md).
STOCK_FOLDERS = (
    "stocks/yfinance_watchlist63_2024-12_2026-08",  # to 2026-08-21
    "stocks/yfinance_us_2025-08_2026-08",  # to 2026-08-20
    "stocks/yfinance_close_midcaps40_to_2026-08",  # to 2026-08-03: the 40 App. C.2.1 mid caps, Close only
    "stocks/yfinance_nasdaq100plus_to_2026-05",  # to 2026-05-08
    "stocks/yfinance_us_longhist_to_2025-10-08",
    "stocks/yfinance_midcaps_to_2025-04",
    "stocks/yfinance_2000_2024-03",
)
COMMODITY_FOLDERS = (
    "commodities/slow-turtle-research",  # to 2026-07-13
    "commodities/backtesting-quant-engine",  # to 2026-03-30
    "commodities/blank-app_2025-09_2026-03",  # to 2026-03-06
    "commodities/storage_data_fy_2000_2026-02",  # to 2026-02-23
    "commodities/bayes_excersice_2000_2026-01",  # to 2026-01-13
    "commodities/stockmaster",  # to 2025-08-22
    "commodities/ishwarb13_2010_2022",
)
LEAF_DIR = "leaf"
NY = "America/New_York"
STOCK_CLOSE_HOUR = 16
FUTURES_CLOSE_HOUR = 17

_DATE_NAMES = ("date", "timestamp", "datetime")
_FIELD_NAMES = {
    "open": "open",
    "high": "high",
    "low": "low",
    "close": "close",
    "adj close": "adj_close",
    "volume": "volume",
    "vol": "volume",
}
_BAR_COLUMNS = (
    "symbol",
    "session_date",
    "open",
    "high",
    "low",
    "close",
    "raw_close",
    "volume",
    "source",
    "source_file",
    "source_row",
)


class DailyPriceSource(Protocol):
    """Daily bars for ``symbols`` with session dates in ``[start, end]`` as ``market_prices`` rows (without
    ``partition_key``, which :func:`to_market_prices` adds)."""

    def daily_bars(self, symbols: Sequence[str], start: date, end: date) -> pl.DataFrame: ...


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")


def _header_layout(lines: list[str], name: str) -> tuple[list[str], int]:
    """Column names (lower case) and the number of header lines of a yfinance CSV text."""
    if not lines:
        raise SourceError("empty file", file=name, row=0, field="header", value="")
    first = [c.strip() for c in lines[0].split(",")]
    low = [c.lower() for c in first]
    if low[0] == "price":  # MultiIndex export: Price / Ticker / Date rows
        if (
            len(lines) < 3
            or not lines[1].lower().startswith("ticker,")
            or not lines[2].lower().startswith("date")
        ):
            raise SourceError(
                "3-row yfinance header expected (Price / Ticker / Date rows)",
                file=name,
                row=0,
                field="header",
                value=" | ".join(lines[:3]),
            )
        return ["date", *low[1:]], 3
    if low[0] not in _DATE_NAMES:
        raise SourceError(
            f"first column must be one of {_DATE_NAMES} (or 'Price' for a 3-row header)",
            file=name,
            row=0,
            field="header",
            value=lines[0],
        )
    n = 1
    if len(lines) > 1 and lines[1].startswith(","):  # second MultiIndex row (",ZW=F,ZW=F,...")
        n = 2
    return ["date", *low[1:]], n


def parse_daily_csv(text: str, *, symbol: str, file: str, source: str) -> pl.DataFrame:
    """Parse one yfinance-style daily CSV text into bar rows (columns :data:`_BAR_COLUMNS`).

    Raises :class:`SourceError` naming the file, 1-based data row (after the header lines), field and value
    for a missing close column, an unparseable date or number, a non-positive stock close, or a session
    date that repeats.
    """
    lines = text.splitlines()
    cols, n_header = _header_layout(lines, file)
    fields = {}
    for i, c in enumerate(cols[1:], start=1):
        if c in _FIELD_NAMES:
            fields[_FIELD_NAMES[c]] = i
    if "close" not in fields:
        raise SourceError(
            f"no Close column; header has {cols}", file=file, row=0, field="header", value=lines[0]
        )
    body = "\n".join(lines[n_header:])
    if not body.strip():
        return pl.DataFrame(schema={c: t for c, t in _bar_schema().items()})
    raw = pl.read_csv(
        io.StringIO(body), has_header=False, infer_schema=False, new_columns=None, truncate_ragged_lines=False
    )
    raw = raw.rename({raw.columns[i]: f"c{i}" for i in range(raw.width)})
    raw = raw.with_row_index("source_row", offset=1)
    if raw.width - 1 != len(cols):
        raise SourceError(
            f"rows have {raw.width - 1} fields, header has {len(cols)}",
            file=file,
            row=1,
            field="row",
            value=lines[n_header][:80],
        )
    header_note = f" ({n_header} header lines)" if n_header > 1 else ""

    def num(i: int | None, fname: str) -> pl.Series:
        if i is None:
            return pl.Series(fname, [None] * raw.height, dtype=pl.Float64)
        s = raw[f"c{i}"].str.strip_chars()
        v = s.cast(pl.Float64, strict=False)
        bad = v.is_null() & s.is_not_null() & (s != "")
        if bad.any():
            k = int(bad.arg_max())
            raise SourceError(
                "not a number" + header_note,
                file=file,
                row=int(raw["source_row"][k]),
                field=fname,
                value=s[k],
            )
        if v.is_nan().any() or v.is_infinite().any():
            k = int((v.is_nan() | v.is_infinite()).arg_max())
            raise SourceError(
                "number is not finite" + header_note,
                file=file,
                row=int(raw["source_row"][k]),
                field=fname,
                value=s[k],
            )
        return v.alias(fname)

    dates = raw["c0"].str.strip_chars()
    plain = dates.str.to_date("%Y-%m-%d", strict=False)
    stamped = dates.str.to_datetime("%Y-%m-%d %H:%M:%S%:z", strict=False, time_unit="us")
    session = pl.select(pl.coalesce(plain, stamped.dt.convert_time_zone(NY).dt.date())).to_series()
    if session.null_count():
        k = int(session.is_null().arg_max())
        raise SourceError(
            "expected YYYY-MM-DD or a timestamp with UTC offset" + header_note,
            file=file,
            row=int(raw["source_row"][k]),
            field=cols[0] if cols[0] != "date" else "Date",
            value=dates[k],
        )
    close = num(fields["close"], "Close")
    adj = num(fields.get("adj_close"), "Adj Close")
    o, h, lo = num(fields.get("open"), "Open"), num(fields.get("high"), "High"), num(fields.get("low"), "Low")
    vol = num(fields.get("volume"), "Volume")
    f = pl.DataFrame(
        {
            "session_date": session,
            "close_file": close,
            "adj": adj,
            "open": o,
            "high": h,
            "low": lo,
            "volume": vol,
            "source_row": raw["source_row"].cast(pl.Int32),
        }
    )
    f = f.filter(pl.col("close_file").is_not_null())  # unfinished session rows carry volume only
    ratio = (
        pl.when(pl.col("adj").is_not_null() & (pl.col("close_file") != 0))
        .then(pl.col("adj") / pl.col("close_file"))
        .otherwise(1.0)
    )
    f = f.with_columns(
        pl.coalesce("adj", "close_file").alias("raw_close"),
        (pl.col("open") * ratio).alias("open"),
        (pl.col("high") * ratio).alias("high"),
        (pl.col("low") * ratio).alias("low"),
    )
    if not symbol.endswith("=F"):
        bad = f.filter(pl.col("raw_close") <= 0)
        if bad.height:
            raise SourceError(
                "stock close must be positive" + header_note,
                file=file,
                row=int(bad["source_row"][0]),
                field="Close",
                value=bad["raw_close"][0],
            )
    dup = f.filter(pl.col("session_date").is_duplicated())
    if dup.height:
        raise SourceError(
            "session date repeats" + header_note,
            file=file,
            row=int(dup["source_row"][-1]),
            field="Date",
            value=str(dup["session_date"][0]),
        )
    return f.select(
        pl.lit(symbol).alias("symbol"),
        "session_date",
        "open",
        "high",
        "low",
        pl.col("raw_close").alias("close"),
        "raw_close",
        "volume",
        pl.lit(source).alias("source"),
        pl.lit(file).alias("source_file"),
        "source_row",
    ).sort("session_date")


def _bar_schema() -> dict[str, pl.DataType]:
    return {
        "symbol": pl.Utf8,
        "session_date": pl.Date,
        "open": pl.Float64,
        "high": pl.Float64,
        "low": pl.Float64,
        "close": pl.Float64,
        "raw_close": pl.Float64,
        "volume": pl.Float64,
        "source": pl.Utf8,
        "source_file": pl.Utf8,
        "source_row": pl.Int32,
    }


def splice(series: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Join one symbol's per-folder bar frames, highest precedence first (see the module doc).

    Each lower-precedence frame contributes only dates before the earliest date already present, scaled by
    ``close_new(d) / close_old(d)`` at the earliest already-present date ``d`` both frames hold; a frame
    sharing no date with the series so far is dropped. ``raw_close`` stays as the file gave it."""
    out: pl.DataFrame | None = None
    for f in series:
        if f.height == 0:
            continue
        if out is None:
            out = f
            continue
        first = out["session_date"].min()
        common = out.join(f.select("session_date", pl.col("close").alias("c_old")), on="session_date").sort(
            "session_date"
        )
        if common.height == 0:
            continue
        factor = float(common["close"][0] / common["c_old"][0]) if common["c_old"][0] else 1.0
        older = f.filter(pl.col("session_date") < first).with_columns(
            [(pl.col(c) * factor).alias(c) for c in ("open", "high", "low", "close")]
        )
        out = pl.concat([older, out], how="vertical")
    return out if out is not None else pl.DataFrame(schema=_bar_schema())


def close_available_at(symbol_col: str = "symbol", date_col: str = "session_date") -> pl.Expr:
    """``available_at`` of a daily bar: 16:00 (stocks) or 17:00 (``=F`` futures) New York on the session date,
    UTC."""
    hour = (
        pl.when(pl.col(symbol_col).str.ends_with("=F")).then(FUTURES_CLOSE_HOUR).otherwise(STOCK_CLOSE_HOUR)
    )
    return (
        (pl.col(date_col).cast(pl.Datetime("us")) + pl.duration(hours=hour))
        .dt.replace_time_zone(NY)
        .dt.convert_time_zone("UTC")
    )


def to_market_prices(bars: pl.DataFrame) -> pl.DataFrame:
    """Bar rows -> ``market_prices`` rows (adds ``partition_key`` = session date and ``available_at``)."""
    if bars.height == 0:
        return empty_frame("market_prices")
    f = bars.with_columns(
        pl.col("session_date").dt.strftime("%Y-%m-%d").alias("partition_key"),
        close_available_at().alias("available_at"),
    )
    return conform("market_prices", f.select(empty_frame("market_prices").columns))


# ------------------------------------------------------------------------------------------------
# transports
# ------------------------------------------------------------------------------------------------


class SnapshotDailyPrices:
    """Daily bars from the yfinance-style snapshot CSVs (precedence and splice rule in the module doc)."""

    def __init__(
        self,
        snapshot_dir: str | Path,
        stock_folders: Sequence[str] = STOCK_FOLDERS,
        commodity_folders: Sequence[str] = COMMODITY_FOLDERS,
    ) -> None:
        self.root = Path(snapshot_dir)
        self.stock_folders = tuple(stock_folders)
        self.commodity_folders = tuple(commodity_folders)

    def files_for(self, symbol: str) -> list[tuple[str, Path]]:
        """(folder, path) of every snapshot file holding ``symbol``, highest precedence first."""
        folders = self.commodity_folders if symbol.endswith("=F") else self.stock_folders
        out = []
        for folder in folders:
            for ext in (".csv.gz", ".csv"):
                p = self.root / LEAF_DIR / folder / f"{symbol}{ext}"
                if p.is_file():
                    out.append((folder, p))
                    break
        return out

    def read_file(self, folder: str, path: Path, symbol: str) -> pl.DataFrame:
        name = display_path(path, self.root)
        return cached_parse(
            "leaf_daily_csv",
            path,
            lambda p: parse_daily_csv(
                _read_text(p), symbol=symbol, file=name, source=folder.split("/", 1)[1]
            ),
        )

    def daily_bars(self, symbols: Sequence[str], start: date, end: date) -> pl.DataFrame:
        frames = []
        for s in symbols:
            parts = [self.read_file(folder, path, s) for folder, path in self.files_for(s)]
            f = splice(parts)
            frames.append(f.filter(pl.col("session_date").is_between(start, end)))
        out = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=_bar_schema())
        return out.sort("symbol", "session_date")


def frame_from_yfinance(pdf: Any, *, source_file: str) -> pl.DataFrame:
    """Convert a ``yfinance.download(..., group_by='column')`` pandas frame (columns ``(field, ticker)``,
    index = session dates) to bar rows. Raises :class:`SourceError` for a frame without Close."""
    import pandas as pd

    if pdf is None or len(pdf) == 0:
        return pl.DataFrame(schema=_bar_schema())
    if not isinstance(pdf.columns, pd.MultiIndex):
        raise SourceError(
            "expected (field, ticker) MultiIndex columns from yfinance.download", file=source_file
        )
    frames = []
    for ticker in dict.fromkeys(pdf.columns.get_level_values(1)):
        sub = pdf.xs(ticker, axis=1, level=1)
        buf = io.StringIO()
        sub.to_csv(buf, index_label="Date", date_format="%Y-%m-%d")
        frames.append(
            parse_daily_csv(
                buf.getvalue(), symbol=str(ticker), file=source_file, source="yfinance"
            ).with_columns(pl.lit(0, dtype=pl.Int32).alias("source_row"))
        )
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=_bar_schema())


class LiveDailyPrices:
    """Daily bars from Yahoo Finance through ``yfinance.download`` (auto-adjusted closes).

    ``download`` defaults to ``yfinance.download``; any callable with its signature can be passed (a caching
    wrapper, a session-configured client)."""

    def __init__(self, download: Callable[..., Any] | None = None) -> None:
        if download is None:
            import yfinance

            download = yfinance.download
        self.download = download

    def daily_bars(self, symbols: Sequence[str], start: date, end: date) -> pl.DataFrame:
        from datetime import timedelta

        pdf = self.download(
            list(symbols),
            start=start.isoformat(),
            end=(end + timedelta(days=1)).isoformat(),
            auto_adjust=True,
            group_by="column",
            progress=False,
            multi_level_index=True,
        )
        return (
            frame_from_yfinance(pdf, source_file="yfinance.download")
            .filter(pl.col("session_date").is_between(start, end))
            .sort("symbol", "session_date")
        )
