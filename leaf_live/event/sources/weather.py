"""Hourly weather per city (LEAF App. C.2.3; the paper uses Meteostat, we add Open-Meteo as a second
provider).

One interface, two transports (:class:`WeatherSource`), rows of ``weather_hourly`` (degC, UTC hour starts):

* :class:`SnapshotWeather` reads the Open-Meteo CSVs under ``leaf/weather``:
  - ``openmeteo_nyc_hourly_2023-10_2026-08.csv.gz`` (the climate-cache archive: one Open-Meteo forecast-API
    response per local day, ``past_days=1``): ``time`` in America/New_York wall clock, temperature and dew
    point in degF, wind in mph. Open-Meteo applies ONE UTC offset to a whole response (the offset valid
    when the request ran; open-meteo/open-meteo#261, #1255) and returns 24 rows for every local day, so each
    local day is placed with a single offset: New York's offset at that day's local noon. On the
    spring-forward day this maps 00:00 to 04:00 UTC, the same instant as the previous day's 23:00 (EST):
    the later day's row is kept. On the fall-back day the hour 04:00 UTC has no row.
  - ``openmeteo_greendcc_2020-2024/<City>_<region>_hourly.csv.gz`` (HewlettPackard/green-dcc, Open-Meteo
    historical API, degC, km/h, one response per year): all of a file is at ONE fixed offset,
    :data:`GREENDCC_OFFSETS_H`. New York's is UTC-4 all year: its winter hours match the NYC archive's best
    one hour later than the local-time label (test_event_sources checks the alignment); the other regions
    are taken to have been downloaded the same day (their daylight-time offsets).
* :class:`LiveWeather` asks Meteostat (``meteostat.hourly`` at the catalog point, UTC) and, for hours it
  lacks, the Open-Meteo archive API (``/v1/archive``, ``timezone=GMT``, degC, km/h) at a configurable base
  URL.

``available_at`` of an hourly value: the end of its hour (ts + 1 h).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core.sources import SourceError, cached_parse, display_path, http_get_text
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event.catalog import Target

# When a UTC day's hours are at the provider, counted from the day's end: Meteostat's hourly station data
# arrive within hours, Open-Meteo's archive fills the rest later; six hours is an operating assumption (a
# day re-requested later replaces its partition), not a measured figure.
PUBLICATION_LAG = timedelta(hours=6)


WEATHER_DIR = "leaf/weather"
NYC_ARCHIVE = "openmeteo_nyc_hourly_2023-10_2026-08.csv.gz"
GREENDCC_DIR = "openmeteo_greendcc_2020-2024"
# green-dcc file prefix -> (catalog city or None when the city is not a LEAF target, fixed UTC offset, hours)
GREENDCC_OFFSETS_H: dict[str, tuple[str | None, int]] = {
    "NewYork_US-NY-NYIS": ("new_york", -4),
    "Philadelphia_US-MIDA-PJM": (None, -4),
    "Dallas_US-TEX-ERCO": (None, -5),
    "SanJose_US-CAL-CISO": (None, -7),
}
OPEN_METEO_ARCHIVE_URL = "https://archive-api.open-meteo.com"
_ROW_COLS = (
    "city",
    "ts",
    "temperature_c",
    "relative_humidity",
    "wind_speed_kmh",
    "source",
    "source_file",
    "source_row",
)


class WeatherSource(Protocol):
    """Hourly weather of ``cities`` for UTC dates ``[start, end]`` as ``weather_hourly`` rows."""

    def hourly(self, cities: Sequence[Target], start: date, end: date) -> pl.DataFrame: ...


def f_to_c(f: pl.Expr) -> pl.Expr:
    return (f - 32.0) * 5.0 / 9.0


def _read(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8-sig")


def _strict_numbers(
    raw: pl.DataFrame, cols: dict[str, str], file: str, required: Sequence[str]
) -> pl.DataFrame:
    """Cast the named string columns to Float64; a non-empty unparseable cell or an empty required cell raises
    :class:`SourceError` with file, data row, field and value."""
    out = {}
    for src, dst in cols.items():
        s = raw[src].str.strip_chars()
        v = s.cast(pl.Float64, strict=False)
        bad = (v.is_null() & s.is_not_null() & (s != "")) | v.is_nan() | v.is_infinite()
        if src in required:
            bad = bad | s.is_null() | (s == "")
        if bad.any():
            k = int(bad.arg_max())
            raise SourceError(
                "not a number" if (s[k] or "") else "value is required but empty",
                file=file,
                row=k + 1,
                field=src,
                value=s[k],
            )
        out[dst] = v
    return pl.DataFrame(out)


def _parse_times(raw: pl.DataFrame, file: str) -> pl.Series:
    t = raw["time"].str.strip_chars().str.to_datetime("%Y-%m-%dT%H:%M", strict=False, time_unit="us")
    if t.null_count():
        k = int(t.is_null().arg_max())
        raise SourceError(
            "expected an ISO hour YYYY-MM-DDTHH:MM", file=file, row=k + 1, field="time", value=raw["time"][k]
        )
    return t


def _read_hourly(text: str, file: str, numbers: dict[str, str]) -> pl.DataFrame:
    """An Open-Meteo hourly CSV as (local, source_row, <numbers renamed>): checks the header, parses the ISO
    hours and the numbers (the first one required), refuses a repeated hour. Raises :class:`SourceError`."""
    raw = pl.read_csv(io.StringIO(text), infer_schema=False)
    missing = [c for c in ("time", *numbers) if c not in raw.columns]
    if missing:
        raise SourceError(
            f"missing column(s) {missing}; header has {raw.columns}",
            file=file,
            row=0,
            field="header",
            value=",".join(raw.columns),
        )
    local = _parse_times(raw, file)
    nums = _strict_numbers(raw, numbers, file, required=(next(iter(numbers)),))
    f = pl.DataFrame(
        {"local": local, "source_row": pl.int_range(1, raw.height + 1, eager=True).cast(pl.Int32)}
    ).hstack(nums)
    dup = f.filter(pl.col("local").is_duplicated())
    if dup.height:
        raise SourceError(
            "hour repeats",
            file=file,
            row=int(dup["source_row"][-1]),
            field="time",
            value=str(dup["local"][-1]),
        )
    return f


def parse_nyc_archive(
    text: str, *, file: str, city: str = "new_york", tz: str = "America/New_York"
) -> pl.DataFrame:
    """Parse the climate-cache NYC Open-Meteo archive (degF, mph, local wall clock) into weather rows.

    Placement rule in the module doc (one offset per local day: the zone's offset at local noon). Raises
    :class:`SourceError` (file, row, field, value) for a missing column, a bad time or number, an empty
    temperature, or a repeated local hour."""
    f = _read_hourly(
        text, file, {"temperature_2m": "t_f", "relativehumidity_2m": "rh", "windspeed_10m": "w_mph"}
    )
    zone = ZoneInfo(tz)
    days = f["local"].dt.date().unique().to_list()
    offset = {
        d: int(datetime(d.year, d.month, d.day, 12, tzinfo=zone).utcoffset().total_seconds() // 60)
        for d in days
    }
    f = f.with_columns(
        pl.col("local").dt.date().replace_strict(offset, return_dtype=pl.Int64).alias("off_min")
    )
    f = f.with_columns(
        (pl.col("local") - pl.duration(minutes=pl.col("off_min"))).dt.replace_time_zone("UTC").alias("ts")
    )
    f = f.sort("ts", "local").unique(
        "ts", keep="last", maintain_order=True
    )  # spring-forward collision: later day wins
    return f.select(
        pl.lit(city).alias("city"),
        "ts",
        f_to_c(pl.col("t_f")).alias("temperature_c"),
        pl.col("rh").alias("relative_humidity"),
        (pl.col("w_mph") * 1.609344).alias("wind_speed_kmh"),
        pl.lit("openmeteo_nyc_archive").alias("source"),
        pl.lit(file).alias("source_file"),
        "source_row",
    )


def parse_greendcc(text: str, *, file: str, city: str, offset_hours: int) -> pl.DataFrame:
    """Parse a green-dcc Open-Meteo historical CSV (degC, km/h, one fixed UTC offset) into weather rows.

    Raises :class:`SourceError` (file, row, field, value) for a missing column, a bad time or number, an empty
    temperature or a repeated hour."""
    f = _read_hourly(text, file, {"temperature_2m": "t", "relative_humidity_2m": "rh", "windspeed_10m": "w"})
    return f.select(
        pl.lit(city).alias("city"),
        (pl.col("local") - pl.duration(hours=offset_hours)).dt.replace_time_zone("UTC").alias("ts"),
        pl.col("t").alias("temperature_c"),
        pl.col("rh").alias("relative_humidity"),
        pl.col("w").alias("wind_speed_kmh"),
        pl.lit("openmeteo_greendcc").alias("source"),
        pl.lit(file).alias("source_file"),
        "source_row",
    )


def to_weather_hourly(rows: pl.DataFrame) -> pl.DataFrame:
    """Weather rows -> ``weather_hourly`` (adds ``partition_key`` = UTC date of ts, ``available_at`` = ts + 1
    h)."""
    if rows.height == 0:
        return empty_frame("weather_hourly")
    f = rows.with_columns(
        pl.col("ts").dt.strftime("%Y-%m-%d").alias("partition_key"),
        (pl.col("ts") + pl.duration(hours=1)).alias("available_at"),
    )
    return conform("weather_hourly", f.select(empty_frame("weather_hourly").columns))


def _window(f: pl.DataFrame, start: date, end: date) -> pl.DataFrame:
    return f.filter(pl.col("ts").dt.date().is_between(start, end))


class SnapshotWeather:
    """Hourly weather from the Open-Meteo snapshot files. For a city in several files the NYC archive
    (2023-10 on, finer wall-clock handling) wins over green-dcc for the hours both hold."""

    def __init__(self, snapshot_dir: str | Path) -> None:
        self.root = Path(snapshot_dir)

    def _files(self) -> list[tuple[str, Path, Callable[[str, str], pl.DataFrame]]]:
        d = self.root / WEATHER_DIR
        out: list[tuple[str, Path, Callable[[str, str], pl.DataFrame]]] = []
        nyc = d / NYC_ARCHIVE
        if nyc.is_file():
            out.append(("new_york", nyc, lambda text, name: parse_nyc_archive(text, file=name)))
        for prefix, (city, off) in GREENDCC_OFFSETS_H.items():
            p = d / GREENDCC_DIR / f"{prefix}_hourly.csv.gz"
            if p.is_file():
                out.append(
                    (
                        city or prefix,
                        p,
                        lambda text, name, c=city or prefix, o=off: parse_greendcc(
                            text, file=name, city=c, offset_hours=o
                        ),
                    )
                )
        return out

    def read_all(self) -> pl.DataFrame:
        """Every snapshot file parsed (non-catalog green-dcc regions keep their file prefix as city)."""
        frames = []
        for _, path, parse in self._files():
            name = display_path(path, self.root)
            frames.append(cached_parse("leaf_weather", path, lambda p, f=parse, n=name: f(_read(p), n)))
        f = pl.concat(frames, how="vertical")
        return f.unique(["city", "ts"], keep="first", maintain_order=True).sort("city", "ts")

    def hourly(self, cities: Sequence[Target], start: date, end: date) -> pl.DataFrame:
        ids = [c.target_id for c in cities]
        return to_weather_hourly(_window(self.read_all().filter(pl.col("city").is_in(ids)), start, end))


def parse_open_meteo_json(text: str, *, city: str, url: str) -> pl.DataFrame:
    """Parse an Open-Meteo ``/v1/archive`` (or ``/v1/forecast``) JSON response requested with
    ``timezone=GMT``, ``temperature_unit=celsius``, ``wind_speed_unit=kmh``. Raises :class:`SourceError`
    naming the URL and field for an error response, another time zone or unit, or unequal array lengths."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"not JSON: {exc}", file=url) from None
    if d.get("error"):
        raise SourceError(
            f"Open-Meteo error: {d.get('reason')}", file=url, field="error", value=d.get("reason")
        )
    if d.get("utc_offset_seconds", 0) != 0:
        raise SourceError(
            "expected timezone=GMT (utc_offset_seconds 0)",
            file=url,
            field="utc_offset_seconds",
            value=d.get("utc_offset_seconds"),
        )
    units = d.get("hourly_units", {})
    if units.get("temperature_2m") not in ("°C", None):
        raise SourceError(
            "expected degC", file=url, field="hourly_units.temperature_2m", value=units.get("temperature_2m")
        )
    h = d.get("hourly") or {}
    times = h.get("time") or []
    cols = {
        k: h.get(k) or [None] * len(times)
        for k in ("temperature_2m", "relative_humidity_2m", "wind_speed_10m")
    }
    for k, v in cols.items():
        if len(v) != len(times):
            raise SourceError(
                f"hourly.{k} has {len(v)} values for {len(times)} times",
                file=url,
                field=f"hourly.{k}",
                value=len(v),
            )
    f = pl.DataFrame(
        {"time": times, **cols},
        schema={
            "time": pl.Utf8,
            "temperature_2m": pl.Float64,
            "relative_humidity_2m": pl.Float64,
            "wind_speed_10m": pl.Float64,
        },
    )
    f = f.filter(pl.col("temperature_2m").is_not_null())
    return f.select(
        pl.lit(city).alias("city"),
        pl.col("time")
        .str.to_datetime("%Y-%m-%dT%H:%M", time_unit="us")
        .dt.replace_time_zone("UTC")
        .alias("ts"),
        pl.col("temperature_2m").alias("temperature_c"),
        pl.col("relative_humidity_2m").alias("relative_humidity"),
        pl.col("wind_speed_10m").alias("wind_speed_kmh"),
        pl.lit("openmeteo").alias("source"),
        pl.lit(url).alias("source_file"),
        pl.lit(0, dtype=pl.Int32).alias("source_row"),
    )


def frame_from_meteostat(pdf: Any, *, city: str) -> pl.DataFrame:
    """Convert a ``meteostat.hourly(...).fetch()`` pandas frame (index ``time`` UTC, columns ``temp`` degC,
    ``rhum`` %, ``wspd`` km/h) to weather rows."""
    if pdf is None or len(pdf) == 0:
        return pl.DataFrame(
            schema={
                c: t
                for c, t in zip(
                    _ROW_COLS,
                    (
                        pl.Utf8,
                        pl.Datetime("us", "UTC"),
                        pl.Float64,
                        pl.Float64,
                        pl.Float64,
                        pl.Utf8,
                        pl.Utf8,
                        pl.Int32,
                    ),
                )
            }
        )
    p = pdf.reset_index()
    time_col = "time" if "time" in p.columns else p.columns[0]
    f = pl.from_pandas(p[[time_col, *[c for c in ("temp", "rhum", "wspd") if c in p.columns]]])
    for c in ("temp", "rhum", "wspd"):
        if c not in f.columns:
            f = f.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    ts = pl.col(time_col).cast(pl.Datetime("us"))
    ts = (
        ts.dt.replace_time_zone("UTC")
        if f.schema[time_col].time_zone is None
        else ts.dt.convert_time_zone("UTC")
    )  # type: ignore[union-attr]
    return f.filter(pl.col("temp").is_not_null()).select(
        pl.lit(city).alias("city"),
        ts.alias("ts"),
        pl.col("temp").cast(pl.Float64).alias("temperature_c"),
        pl.col("rhum").cast(pl.Float64).alias("relative_humidity"),
        pl.col("wspd").cast(pl.Float64).alias("wind_speed_kmh"),
        pl.lit("meteostat").alias("source"),
        pl.lit("meteostat.hourly").alias("source_file"),
        pl.lit(0, dtype=pl.Int32).alias("source_row"),
    )


class LiveWeather:
    """Meteostat first, Open-Meteo archive for the hours Meteostat lacks.

    ``meteostat_fetch(lat, lon, start, end) -> pandas frame`` defaults to the meteostat library;
    ``open_meteo_base_url`` points at the Open-Meteo archive service (a loopback server in tests).
    ``use_meteostat=False`` asks Open-Meteo only."""

    def __init__(
        self,
        open_meteo_base_url: str = OPEN_METEO_ARCHIVE_URL,
        *,
        use_meteostat: bool = True,
        meteostat_fetch: Callable[[float, float, datetime, datetime], Any] | None = None,
    ) -> None:
        self.base = open_meteo_base_url.rstrip("/")
        self.use_meteostat = use_meteostat
        self.meteostat_fetch = meteostat_fetch or _meteostat_hourly

    def open_meteo(self, city: Target, start: date, end: date) -> pl.DataFrame:
        url = f"{self.base}/v1/archive"
        params = {
            "latitude": city.latitude,
            "longitude": city.longitude,
            "start_date": start.isoformat(),
            "end_date": end.isoformat(),
            "hourly": "temperature_2m,relative_humidity_2m,wind_speed_10m",
            "timezone": "GMT",
            "temperature_unit": "celsius",
            "wind_speed_unit": "kmh",
        }
        return parse_open_meteo_json(
            http_get_text(url, params=params, what="Open-Meteo archive"), city=city.target_id, url=url
        )

    def hourly(self, cities: Sequence[Target], start: date, end: date) -> pl.DataFrame:
        frames = []
        for c in cities:
            parts = []
            if self.use_meteostat:
                t0 = datetime(start.year, start.month, start.day)
                t1 = datetime(end.year, end.month, end.day, 23)
                parts.append(
                    frame_from_meteostat(
                        self.meteostat_fetch(c.latitude, c.longitude, t0, t1), city=c.target_id
                    )
                )
            parts.append(self.open_meteo(c, start, end))
            frames.append(
                pl.concat(parts, how="vertical").unique(["city", "ts"], keep="first", maintain_order=True)
            )
        return to_weather_hourly(_window(pl.concat(frames, how="vertical"), start, end))


def _meteostat_hourly(lat: float, lon: float, start: datetime, end: datetime) -> Any:
    import meteostat as ms

    return ms.hourly(ms.Point(lat, lon), start, end).fetch()
