"""Hourly electricity load of the three LEAF areas (App. C.2.4: Grid Status API, 5-minute readings averaged
to hourly means).

One interface, two transports (:class:`LoadSource`), rows of ``electricity_load`` (MW, UTC hours):

* :class:`SnapshotLoad` reads the EIA-930 files cleaned by Ruggles et al. (``leaf/electricity/
  eia930_cleaned_2018-2020/<SUBREGION>.csv.gz``: NYIS-ZONJ = NYISO Zone J / New York City, ISNE-4008 =
  ISO-NE NEMA / Boston, CISO-PGAE = CAISO PG&E / San Francisco). ``date_time`` is UTC and, as in EIA-930,
  labels the hour by its END: the row stamped 01:00 covers 00:00-01:00 UTC. ``load_mw`` is the cleaned
  (anomaly-screened, imputed) demand; the raw demand and the screening category are kept.
* :class:`LiveLoad` calls gridstatus (``<ISO>().get_load(date)``, 5-minute readings with ``Interval Start``
  and zone columns) and averages each UTC hour's readings (:func:`hourly_means`).

``available_at`` of an hourly value: the end of its hour (``interval_end``).
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
from leaf_live.event.catalog import Target

# When a UTC day's load is at the provider, counted from the day's end: the ISOs publish 5-minute load in near
# real time (gridstatus); two hours covers late intervals. An operating assumption, not a measured figure.
PUBLICATION_LAG = timedelta(hours=2)


EIA_DIR = "leaf/electricity/eia930_cleaned_2018-2020"
EIA_COLUMNS = ("date_time", "raw demand (MW)", "category", "cleaned demand (MW)")


class LoadSource(Protocol):
    """Hourly load of ``areas`` for hours starting on UTC dates ``[start, end]`` as ``electricity_load``
    rows."""

    def hourly_load(self, areas: Sequence[Target], start: date, end: date) -> pl.DataFrame: ...


def parse_eia930(text: str, *, area: str, file: str) -> pl.DataFrame:
    """Parse one cleaned EIA-930 CSV (hour-ending UTC) into load rows.

    Raises :class:`SourceError` naming file, data row, field and value for a missing column, a bad
    timestamp, a cleaned demand that is empty, not a number or negative, or a repeated hour."""
    raw = pl.read_csv(io.StringIO(text), infer_schema=False)
    missing = [c for c in EIA_COLUMNS if c not in raw.columns]
    if missing:
        raise SourceError(
            f"missing column(s) {missing}; header has {raw.columns}",
            file=file,
            row=0,
            field="header",
            value=",".join(raw.columns),
        )
    end = (
        raw["date_time"].str.strip_chars().str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us")
    )
    if end.null_count():
        k = int(end.is_null().arg_max())
        raise SourceError(
            "expected YYYY-MM-DD HH:MM:SS (UTC, hour ending)",
            file=file,
            row=k + 1,
            field="date_time",
            value=raw["date_time"][k],
        )
    vals = {}
    for col, required in (("cleaned demand (MW)", True), ("raw demand (MW)", False)):
        s = raw[col].str.strip_chars()
        if not required:  # the cleaning flags a missing raw reading with the token MISSING (category MISSING)
            s = pl.when(s == "MISSING").then(None).otherwise(s)
            s = pl.select(s).to_series()
        v = s.cast(pl.Float64, strict=False)
        bad = (v.is_null() & s.is_not_null() & (s != "")) | v.is_nan() | v.is_infinite()
        if required:
            bad = bad | s.is_null() | (s == "") | (v < 0)
        if bad.any():
            k = int(bad.arg_max())
            why = (
                "value is required but empty"
                if not (s[k] or "")
                else ("negative load" if (v[k] or 0) < 0 else "not a number")
            )
            raise SourceError(why, file=file, row=k + 1, field=col, value=s[k])
        vals[col] = v
    f = pl.DataFrame(
        {
            "interval_end": end.dt.replace_time_zone("UTC"),
            "load_mw": vals["cleaned demand (MW)"],
            "raw_load_mw": vals["raw demand (MW)"],
            "quality": raw["category"],
            "source_row": pl.int_range(1, raw.height + 1, eager=True).cast(pl.Int32),
        }
    )
    dup = f.filter(pl.col("interval_end").is_duplicated())
    if dup.height:
        raise SourceError(
            "hour repeats",
            file=file,
            row=int(dup["source_row"][-1]),
            field="date_time",
            value=str(dup["interval_end"][-1]),
        )
    return f.select(
        pl.lit(area).alias("area"),
        (pl.col("interval_end") - pl.duration(hours=1)).alias("interval_start"),
        "interval_end",
        "load_mw",
        "raw_load_mw",
        "quality",
        pl.lit("eia930_cleaned").alias("source"),
        pl.lit(file).alias("source_file"),
        "source_row",
    ).sort("interval_start")


def to_electricity_load(rows: pl.DataFrame) -> pl.DataFrame:
    """Load rows -> ``electricity_load`` (adds ``partition_key`` = UTC date of interval_start and
    ``available_at`` = interval_end)."""
    if rows.height == 0:
        return empty_frame("electricity_load")
    f = rows.with_columns(
        pl.col("interval_start").dt.strftime("%Y-%m-%d").alias("partition_key"),
        pl.col("interval_end").alias("available_at"),
    )
    return conform("electricity_load", f.select(empty_frame("electricity_load").columns))


def _window(f: pl.DataFrame, start: date, end: date) -> pl.DataFrame:
    return f.filter(pl.col("interval_start").dt.date().is_between(start, end))


class SnapshotLoad:
    """Hourly load from the cleaned EIA-930 snapshot files (catalog ``source_ids['eia930']``)."""

    def __init__(self, snapshot_dir: str | Path) -> None:
        self.root = Path(snapshot_dir)

    def read_area(self, area: Target) -> pl.DataFrame:
        code = area.source_ids.get("eia930")
        if not code:
            raise KeyError(f"electricity area {area.target_id!r} has no EIA-930 subregion")
        path = self.root / EIA_DIR / f"{code}.csv.gz"
        name = display_path(path, self.root)
        return cached_parse(
            "leaf_eia930",
            path,
            lambda p: parse_eia930(
                gzip.decompress(p.read_bytes()).decode("utf-8-sig"), area=area.target_id, file=name
            ),
        )

    def hourly_load(self, areas: Sequence[Target], start: date, end: date) -> pl.DataFrame:
        return to_electricity_load(
            pl.concat([_window(self.read_area(a), start, end) for a in areas], how="vertical")
        )


def hourly_means(
    readings: pl.DataFrame, *, area: str, source_file: str, min_readings: int = 1
) -> pl.DataFrame:
    """Average 5-minute load readings to hourly means (App. C.2.4: "each hourly value represents the mean
    of all observations within that hour").

    ``readings`` has ``interval_start`` (tz-aware) and ``load_mw``; each reading belongs to the UTC hour its
    interval starts in. Hours with fewer than ``min_readings`` readings are dropped; ``quality`` records the
    count (``n=12`` for a complete hour)."""
    if readings.height == 0:
        return pl.DataFrame(
            schema={
                "area": pl.Utf8,
                "interval_start": pl.Datetime("us", "UTC"),
                "interval_end": pl.Datetime("us", "UTC"),
                "load_mw": pl.Float64,
                "raw_load_mw": pl.Float64,
                "quality": pl.Utf8,
                "source": pl.Utf8,
                "source_file": pl.Utf8,
                "source_row": pl.Int32,
            }
        )
    f = readings.with_columns(
        pl.col("interval_start").dt.convert_time_zone("UTC").dt.truncate("1h").alias("hour")
    )
    g = f.group_by("hour").agg(
        pl.col("load_mw").mean().alias("load_mw"), pl.col("load_mw").count().alias("n")
    )
    g = g.filter(pl.col("n") >= min_readings).sort("hour")
    return g.select(
        pl.lit(area).alias("area"),
        pl.col("hour").cast(pl.Datetime("us", "UTC")).alias("interval_start"),
        (pl.col("hour") + pl.duration(hours=1)).cast(pl.Datetime("us", "UTC")).alias("interval_end"),
        "load_mw",
        pl.lit(None, dtype=pl.Float64).alias("raw_load_mw"),
        ("n=" + pl.col("n").cast(pl.Utf8)).alias("quality"),
        pl.lit("gridstatus").alias("source"),
        pl.lit(source_file).alias("source_file"),
        pl.lit(0, dtype=pl.Int32).alias("source_row"),
    )


def readings_from_gridstatus(pdf: Any, *, zone_column: str, file: str) -> pl.DataFrame:
    """Convert a gridstatus ``get_load`` pandas frame (``Interval Start`` tz-aware, one column per zone or
    ``Load``) to (interval_start UTC, load_mw) readings. Raises :class:`SourceError` for a missing column."""
    cols = list(pdf.columns)
    if "Interval Start" not in cols or zone_column not in cols:
        raise SourceError(
            f"gridstatus frame lacks 'Interval Start' or {zone_column!r}; has {cols}",
            file=file,
            field="columns",
            value=zone_column,
        )
    f = pl.from_pandas(pdf[["Interval Start", zone_column]].reset_index(drop=True))
    return f.select(
        pl.col("Interval Start")
        .dt.convert_time_zone("UTC")
        .cast(pl.Datetime("us", "UTC"))
        .alias("interval_start"),
        pl.col(zone_column).cast(pl.Float64).alias("load_mw"),
    ).drop_nulls()


class LiveLoad:
    """5-minute zonal load from gridstatus, averaged to hourly means.

    ``iso_factory(name) -> ISO object`` defaults to ``getattr(gridstatus, name)()``; the area's
    ``source_ids`` give the ISO class and the zone column of its ``get_load`` frame."""

    def __init__(self, iso_factory: Callable[[str], Any] | None = None) -> None:
        if iso_factory is None:
            import gridstatus

            iso_factory = lambda name: getattr(gridstatus, name)()  # noqa: E731
        self.iso_factory = iso_factory

    def hourly_load(self, areas: Sequence[Target], start: date, end: date) -> pl.DataFrame:
        frames = []
        for a in areas:
            iso_name, zone = a.source_ids["gridstatus_iso"], a.source_ids["gridstatus_zone"]
            pdf = self.iso_factory(iso_name).get_load(
                start.isoformat(), end=(end + timedelta(days=1)).isoformat()
            )
            src = f"gridstatus:{iso_name}.get_load"
            frames.append(
                hourly_means(
                    readings_from_gridstatus(pdf, zone_column=zone, file=src),
                    area=a.target_id,
                    source_file=src,
                )
            )
        return to_electricity_load(_window(pl.concat(frames, how="vertical"), start, end))
