"""The ``series_vintages`` stage: real-time vintages of the series the auto-ARIMA baseline fits (LiveMacroEval
App. I: "the FRED vintage immediately preceding the target month"), stored long, each vintage with the time it
was published, and the store the baseline reads them back from (:class:`VintageStore`).

What is stored (:data:`leaf_live.macro.schemas.SERIES_VINTAGES`), one row per observation of a vintage:

* ``fred-md`` / ``fred-qd``: the catalog's FRED-MD / FRED-QD columns (:func:`catalog_columns`, with renamed
columns
  such as PPIFGS, the pre-2016-03 name of WPSFD49207) from every vintage of the FRED-MD/QD client
  (:mod:`leaf_live.macro.sources.fred_md`), empty cells left out; ``available_at`` = the end of the vintage's
  month (00:00 New York on the first day of the next month): a vintage is posted during the month it is named
  for, so it is known by then at the latest;
* ``philly-rtdsm``: the Philadelphia Fed's real-time real GDP (``ROUTPUT``) vintages, and ``gdp-releases``:
the
  approximate vintages after the last one built from first/second/third releases
  (:mod:`leaf_live.macro.sources.realtime_gdp`: labels and ``available_at`` rules there). Their transform code
  is 5 (log first difference), FRED-QD's code for GDPC1, which they stand in for (:data:`ALIASES`).

Partitions: the release month the vintage is labelled with; the first release month also holds the vintages of
the :data:`LOOKBACK_MONTHS` months before it (the windows of the first release months fit on them).

Which vintage a history uses (:meth:`VintageStore.choose`): among the stored vintages of the series (or its
aliases) labelled at or before the wanted month and published by the time the nowcast is issued, the latest
label; on the same label, the latest published (a GDP release later in the same month), then the source order
of
:data:`SOURCE_PRIORITY`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

import numpy as np
import polars as pl

from leaf_live.core.pit import ET, UTC, check_month, month_index, month_of_index, require_columns
from leaf_live.core.pit import known_by as pit_known_by
from leaf_live.core.sources import SourceError
from leaf_live.macro.catalog import INDICATORS
from leaf_live.macro.sources import realtime_gdp
from leaf_live.macro.sources.fred_md import FredMdClient

LOOKBACK_MONTHS = 3  # a window of release month M fits on the vintage of M - 2 (target month M - 1)
# Renamed FRED-MD columns, and the real-time GDP series standing in for FRED-QD's GDPC1.
ALIASES: dict[str, tuple[str, ...]] = {"WPSFD49207": ("PPIFGS",), "GDPC1": (realtime_gdp.SERIES,)}
ROUTPUT_TCODE = 5
SOURCES = ("fred-md", "fred-qd", realtime_gdp.SOURCE_RTDSM, realtime_gdp.SOURCE_RELEASES)
# same label and publication time: the official vintage files first
SOURCE_PRIORITY = {"fred-md": 0, "fred-qd": 0, realtime_gdp.SOURCE_RTDSM: 1, realtime_gdp.SOURCE_RELEASES: 2}
SOURCE_TEXT = {
    "fred-md": "FRED-MD",
    "fred-qd": "FRED-QD",
    realtime_gdp.SOURCE_RTDSM: "Philadelphia Fed RTDSM",
    realtime_gdp.SOURCE_RELEASES: "GDP releases (approx. vintage)",
}
COLUMNS = (
    "partition_key",
    "source",
    "series_id",
    "vintage",
    "reference_period",
    "value",
    "tcode",
    "available_at",
)


def catalog_columns(kind: str) -> tuple[str, ...]:
    """The FRED-MD (``'md'``) or FRED-QD (``'qd'``) columns the catalog's auto-ARIMA histories read, with
    their renamed forms (ISM has no FRED column: its history is first releases)."""
    out: list[str] = []
    for ind in INDICATORS:
        if (
            ind.fred_md_column
            and ind.fred_md_tcode is not None
            and (ind.frequency == "quarterly") == (kind == "qd")
        ):
            for c in (ind.fred_md_column, *ALIASES.get(ind.fred_md_column, ())):
                if c not in out and c != realtime_gdp.SERIES:
                    out.append(c)
    return tuple(out)


def fred_available_at(vintage: str) -> datetime:
    """When a FRED-MD/QD vintage ``YYYY-MM`` was known at the latest: 00:00 New York on the first day of the
    next month, in UTC. Raises :class:`ValueError` for a bad label."""
    check_month(vintage, "vintage")
    nxt = month_of_index(month_index(vintage) + 1)
    return datetime(int(nxt[:4]), int(nxt[5:7]), 1, tzinfo=ET).astimezone(UTC)


def partition_for(vintage: str, first_month: str) -> str:
    """The partition (release month) a vintage is stored in: its own month, or ``first_month`` for the
    :data:`LOOKBACK_MONTHS` months before it."""
    return max(vintage, first_month)


def labels_for(keys: Sequence[str], first_month: str) -> list[str]:
    """The vintage months the partitions ``keys`` hold (:func:`partition_for` inverted)."""
    out = []
    for k in sorted(keys):
        if k == first_month:
            out.extend(month_of_index(month_index(k) - j) for j in range(LOOKBACK_MONTHS, 0, -1))
        out.append(k)
    return out


def _empty() -> pl.DataFrame:
    from leaf_live.core.storage import empty_frame

    return empty_frame("series_vintages")


def fred_vintage_rows(
    vintage: str, kind: str, levels: pl.DataFrame, tcodes: Mapping[str, int], first_month: str
) -> pl.DataFrame:
    """The ``series_vintages`` rows of one FRED-MD/QD vintage (``(levels, tcodes)`` as
    :meth:`~leaf_live.macro.sources.fred_md.FredMdClient.load_vintage` returns them): the catalog's columns,
    non-empty cells only. Raises :class:`ValueError` for a bad label or kind."""
    if kind not in ("md", "qd"):
        raise ValueError(f"kind={kind!r}: expected 'md' or 'qd'")
    cols = [c for c in catalog_columns(kind) if c in levels.columns]
    if not cols:
        return _empty()
    long = (
        levels.select("date", *cols)
        .unpivot(index="date", on=cols, variable_name="series_id", value_name="value")
        .filter(pl.col("value").is_not_null())
    )
    return long.select(
        pl.lit(partition_for(vintage, first_month)).alias("partition_key"),
        pl.lit(f"fred-{kind}").alias("source"),
        "series_id",
        pl.lit(vintage).alias("vintage"),
        pl.col("date").alias("reference_period"),
        "value",
        pl.col("series_id").replace_strict(dict(tcodes), return_dtype=pl.Int32).alias("tcode"),
        pl.lit(fred_available_at(vintage)).cast(pl.Datetime("us", "UTC")).alias("available_at"),
    )


@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_vintage_rows` read: vintages per source, the vintages listed but not readable
    (``{'fred-md 2026-05': 'reason'}``: a live vintage not published yet), which are left out, and the
    missing-value marker cells (``"."``, read as null and not stored) per vintage read and series
    (``{'fred-md 2025-12': {'CPIAUCSL': 1}}``; vintages without one are left out)."""

    vintages: dict[str, int]
    unavailable: dict[str, str]
    missing_values: dict[str, dict[str, int]] = field(default_factory=dict)


def vintage_plan(keys: Sequence[str], first_month: str, fred_md: FredMdClient) -> dict[str, list[str]]:
    """The FRED-MD (``'md'``) and FRED-QD (``'qd'``) vintages ``fred_md`` lists in the partitions ``keys``."""
    labels = set(labels_for(keys, first_month))
    return {kind: [v for v in fred_md.list_vintages(kind) if v in labels] for kind in ("md", "qd")}


def load_vintage_rows(
    keys: Sequence[str],
    first_month: str,
    *,
    fred_md: FredMdClient,
    gdp: realtime_gdp.RealTimeGdpClient | None = None,
    plan: Mapping[str, list[str]] | None = None,
    progress=None,
) -> tuple[pl.DataFrame, LoadReport]:
    """The ``series_vintages`` rows of the partitions ``keys`` (release months; ``first_month`` = the first
    release month, which also holds the lookback): every FRED-MD and FRED-QD vintage labelled in them that
    ``fred_md`` lists (``plan``, default :func:`vintage_plan`; the snapshot archive read in one pass), and the
    real-time GDP vintages of ``gdp``. ``progress(n)`` is called per FRED vintage read. Vintages that fail to
    load are left out and reported; their ``"."`` cells are counted (``report.missing_values``). Returns
    ``(rows, report)``; rows in the table's column order."""
    labels = set(labels_for(keys, first_month))
    frames, counts, bad, missing = [], {}, {}, {}
    plan = plan if plan is not None else vintage_plan(keys, first_month, fred_md)
    for kind, wanted in plan.items():
        loaded: dict = {}
        marks: dict[str, dict[str, int]] = {}
        try:
            loaded = fred_md.load_vintages(wanted, kind, catalog_columns(kind), marks)
        except SourceError:
            marks = {}
            for v in wanted:  # one at a time, to keep what can be read
                try:
                    marks[v] = {}
                    loaded[v] = fred_md.load_vintage(v, kind, catalog_columns(kind), marks[v])
                except SourceError as exc:
                    bad[f"fred-{kind} {v}"] = str(exc)
        for v in wanted:
            if v in loaded:
                frames.append(fred_vintage_rows(v, kind, *loaded[v], first_month))
                counts[f"fred-{kind}"] = counts.get(f"fred-{kind}", 0) + 1
                if marks.get(v):
                    missing[f"fred-{kind} {v}"] = dict(sorted(marks[v].items()))
            if progress is not None:
                progress(1)
    if gdp is not None:
        g = gdp.vintages().filter(pl.col("vintage").is_in(sorted(labels)))
        if g.height:
            frames.append(
                g.select(
                    pl.col("vintage")
                    .map_elements(lambda v: partition_for(v, first_month), return_dtype=pl.Utf8)
                    .alias("partition_key"),
                    "source",
                    "series_id",
                    "vintage",
                    "reference_period",
                    "value",
                    pl.lit(ROUTPUT_TCODE, pl.Int32).alias("tcode"),
                    "available_at",
                )
            )
            for (src,), part in g.group_by("source"):
                counts[src] = part["vintage"].n_unique()
    rows = pl.concat([_empty(), *frames], how="vertical_relaxed") if frames else _empty()
    return rows, LoadReport(counts, bad, missing)


# ------------------------------------------------------------------------------------------------
# reading back
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VintagePick:
    """A stored vintage of one series: ``source``, ``series_id`` (as published), ``vintage`` label, when it
    was ``available_at``, and how far its label is from the ``wanted`` one (``gap_months``)."""

    source: str
    series_id: str
    vintage: str
    available_at: datetime
    wanted: str
    gap_months: int


class VintageStore:
    """``series_vintages`` rows (at least ``source, series_id, vintage, reference_period, value, tcode,
    available_at``) indexed by series, for building histories
    (:func:`~leaf_live.macro.forecasters.arima.histories .fred_history`). Raises :class:`ValueError` for
    missing columns or a vintage with two transform codes."""

    def __init__(self, rows: pl.DataFrame) -> None:
        need = ("source", "series_id", "vintage", "reference_period", "value", "tcode", "available_at")
        require_columns(rows, need, "series_vintages")
        rows = rows.select(need).sort("source", "series_id", "vintage", "reference_period")
        self._groups = rows.partition_by(
            ["source", "series_id", "vintage"], as_dict=True, maintain_order=True
        )
        index = rows.group_by("source", "series_id", "vintage").agg(
            pl.col("available_at").max(),
            pl.col("tcode").n_unique().alias("tcodes"),
            pl.col("tcode").unique().alias("tcode_values"),
        )
        bad = index.filter(pl.col("tcodes") > 1)
        if bad.height:
            src, sid, vin = bad.row(0)[:3]
            raise ValueError(
                f"series_vintages: {src} {sid} vintage {vin} has several tcodes "
                f"{sorted(bad['tcode_values'][0].to_list())}"
            )
        index = index.select(
            "source",
            "series_id",
            "vintage",
            "available_at",
            pl.col("source")
            .replace_strict(SOURCE_PRIORITY, default=9, return_dtype=pl.Int32)
            .alias("priority"),
        )
        # per series: the point-in-time index choose() filters with leaf_live.core.pit.known_by
        self._index = {
            sid: g.sort("vintage", "available_at", -pl.col("priority"))
            for (sid,), g in index.group_by("series_id")
        }
        self.height = rows.height

    @classmethod
    def empty(cls) -> VintageStore:
        return cls(_empty())

    def series(self) -> list[str]:
        """The series ids stored."""
        return sorted(self._index)

    def vintages(self, series_id: str) -> list[str]:
        """The vintage labels stored for ``series_id`` (any source), sorted."""
        g = self._index.get(series_id)
        return [] if g is None else sorted(set(g["vintage"]))

    def choose(
        self, columns: Iterable[str], wanted: str, known_by: datetime | None = None
    ) -> VintagePick | None:
        """The vintage a history uses (module docstring): of the series ``columns`` (a catalog column and its
        aliases), labelled at or before ``wanted`` and, when ``known_by`` is given (tz-aware; the filter is
        :func:`leaf_live.core.pit.known_by` on the vintages' ``available_at``), available by then; None when
        there is none. Raises :class:`ValueError` for a naive ``known_by``."""
        frames = [self._index[c] for c in dict.fromkeys(columns) if c in self._index]
        if not frames:
            return None
        cand = pl.concat(frames).filter(pl.col("vintage") <= wanted)
        if known_by is not None:
            cand = pit_known_by(cand, known_by)
        if cand.height == 0:
            return None
        best = cand.sort("vintage", "available_at", -pl.col("priority")).row(-1, named=True)
        return VintagePick(
            best["source"],
            best["series_id"],
            best["vintage"],
            best["available_at"],
            wanted,
            month_index(wanted) - month_index(best["vintage"]),
        )

    def observations(self, pick: VintagePick) -> tuple[list[date], np.ndarray, int]:
        """``(periods, values, tcode)`` of a picked vintage, in period order."""
        g = self._groups[(pick.source, pick.series_id, pick.vintage)]
        return g["reference_period"].to_list(), g["value"].to_numpy(), int(g["tcode"][0])

    def describe(self, columns: Iterable[str]) -> str:
        """'first .. last (n vintages)' of the stored vintages of ``columns``, for error messages."""
        labels = sorted({v for c in columns for v in self.vintages(c)})
        return f"{labels[0]} .. {labels[-1]} ({len(labels)} vintages)" if labels else "none stored"
