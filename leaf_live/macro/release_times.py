"""Release-time validation: every release's clock time against its indicator's catalog release slot
(LiveMacroEval App. C), with the deviations classified.

A release stamped away from its slot is either a real schedule change (BEA's personal income release at
10:00 ET in holiday weeks), the live file's catch-up stamping (releases after the 2025 shutdown stamped one
minute before the slot, 08:29 / 09:14 / 09:59 ET, next to the regular release at the slot), or a mis-stamp
inherited from the source calendar. Two facts give a mis-stamp away: a sibling indicator of the *same report*
(payrolls and the unemployment rate come from one Employment Situation release) stamped at a different time
the same day, or a time no agency publishes at. The inherited mis-stamps we know of are listed in
:data:`KNOWN_MISSTAMPS` with the evidence; scoring does not move them (the paper's Table 9 fit used them as
stamped), it flags them. Releases whose announcement windows overlap are merged into one scoring event
(:func:`leaf_live.macro.scoring.surprises.overlapping_event_groups`), which takes care of the catch-up pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl

from leaf_live.core.pit import ET, require_columns
from leaf_live.macro.catalog import INDICATORS

#: Indicators published in one report, at one time (a split time on one day is a mis-stamp).
SAME_REPORT: tuple[tuple[str, ...], ...] = (
    ("nonfarm_payrolls", "unemployment_rate"),  # BLS Employment Situation
    ("pce_price_index", "real_pce"),  # BEA Personal Income and Outlays
    ("housing_starts", "building_permits"),  # Census New Residential Construction
)


@dataclass(frozen=True)
class KnownMisstamp:
    """An inherited mis-stamp: ``indicator_id`` stamped ``stamped_et`` (America/New_York wall clock) where the
    agency published at ``published_et``; ``evidence`` says how we know."""

    indicator_id: str
    stamped_et: str  # YYYY-MM-DD HH:MM
    published_et: str  # HH:MM
    evidence: str


KNOWN_MISSTAMPS: tuple[KnownMisstamp, ...] = (
    KnownMisstamp(
        "nonfarm_payrolls",
        "2020-03-06 07:30",
        "08:30",
        "the unemployment rate of the same Employment Situation report is stamped 08:30 ET; BLS publishes at"
        " 08:30",
    ),
    KnownMisstamp(
        "unemployment_rate",
        "2022-12-02 07:30",
        "08:30",
        "payrolls of the same Employment Situation report are stamped 08:30 ET; BLS publishes at 08:30",
    ),
    KnownMisstamp(
        "pce_price_index",
        "2021-03-26 09:30",
        "08:30",
        "BEA released Personal Income and Outlays, February 2021 at 08:30 ET; 09:30 is no BEA release time",
    ),
    KnownMisstamp(
        "real_pce",
        "2021-03-26 09:30",
        "08:30",
        "same report as the PCE price index of that day (Personal Income and Outlays, 08:30 ET)",
    ),
)

DEVIATION_KINDS = ("known_misstamp", "split_report", "catch_up_minute", "other_time")


def release_time_deviations(
    releases: pl.DataFrame, known: tuple[KnownMisstamp, ...] = KNOWN_MISSTAMPS
) -> pl.DataFrame:
    """Every release whose America/New_York clock time differs from its catalog slot, classified.

    ``releases``: ``indicator_id``, ``release_at`` (tz-aware), optionally ``reference_period``. Returns one
    row per deviating release: ``indicator_id``, ``release_at``, ``release_et`` (YYYY-MM-DD HH:MM),
    ``slot_et``, ``kind`` and ``note``. Kinds, in order of precedence: ``known_misstamp`` (listed in
    ``known``, default
    :data:`KNOWN_MISSTAMPS`; note = the evidence), ``catch_up_minute`` (one minute before the slot, or before
    another release of the same indicator or report that day: the live file's catch-up stamping of a second
    reference period), ``split_report`` (a sibling of the same report, :data:`SAME_REPORT`, is released that
    day but never at this time: an unlisted mis-stamp), ``other_time`` (a real schedule change or an
    unexplained time; listed for review). Raises ``ValueError`` for missing columns or naive times.
    """
    require_columns(releases, ["indicator_id", "release_at"], "releases")
    slots = pl.DataFrame(
        {
            "indicator_id": [i.id for i in INDICATORS],
            "slot_et": [i.release_time_et.strftime("%H:%M") for i in INDICATORS],
        }
    )
    et = pl.col("release_at").dt.convert_time_zone(ET.key)
    r = releases.select("indicator_id", "release_at").with_columns(
        et.dt.strftime("%Y-%m-%d %H:%M").alias("release_et"),
        et.dt.date().alias("_day"),
        et.dt.strftime("%H:%M").alias("_hm"),
    )
    r = r.join(slots, on="indicator_id", how="left")
    sib = {i: g for g in SAME_REPORT for i in g}
    times: dict[tuple, set[str]] = {}
    for i, d, hm in r.select("indicator_id", "_day", "_hm").iter_rows():
        times.setdefault((i, d), set()).add(hm)
    listed = {(k.indicator_id, k.stamped_et): k for k in known}

    def minutes(hm: str) -> int:
        t = datetime.strptime(hm, "%H:%M")
        return t.hour * 60 + t.minute

    rows = []
    for rec in (
        r.filter(pl.col("_hm") != pl.col("slot_et")).sort("release_at", "indicator_id").iter_rows(named=True)
    ):
        i, d, hm, slot = rec["indicator_id"], rec["_day"], rec["_hm"], rec["slot_et"]
        k = listed.get((i, rec["release_et"]))
        report = sib.get(i, (i,))
        later = {t for s in report for t in times.get((s, d), set())} | {slot}
        one_early = any(minutes(t) - minutes(hm) == 1 for t in later)
        split = [s for s in report if s != i and (s, d) in times and hm not in times[(s, d)]]
        if k is not None:
            kind, note = "known_misstamp", f"published {k.published_et} ET: {k.evidence}"
        elif one_early:
            kind, note = (
                "catch_up_minute",
                (
                    "one minute before the slot or another release of the report that day: "
                    "the live file's catch-up stamping"
                ),
            )
        elif split:
            kind, note = (
                "split_report",
                (
                    f"{split[0]} of the same report is released at "
                    f"{', '.join(sorted(times[(split[0], d)]))} ET that day, never at {hm}"
                ),
            )
        else:
            kind, note = "other_time", f"released {hm} ET, slot {slot} ET"
        rows.append(
            {
                "indicator_id": i,
                "release_at": rec["release_at"],
                "release_et": rec["release_et"],
                "slot_et": slot,
                "kind": kind,
                "note": note,
            }
        )
    schema = {
        "indicator_id": pl.Utf8,
        "release_at": releases.schema["release_at"],
        "release_et": pl.Utf8,
        "slot_et": pl.Utf8,
        "kind": pl.Utf8,
        "note": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)
