"""Release-time validation (leaf_live.macro.release_times): every release time against its catalog slot on the
real calendar, the inherited mis-stamps flagged, the catch-up releases recognised, and an unlisted split
report detected."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from leaf_live.macro.release_times import KNOWN_MISSTAMPS, release_time_deviations
from leaf_live.macro.scoring import surprises as S
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot


@pytest.fixture(scope="module")
def releases(snapshot_dir):
    return S.first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar())


def test_deviations_on_the_real_calendar(releases):
    d = release_time_deviations(releases)
    kinds = dict(d.group_by("kind").len().iter_rows())
    # 39 releases off their slot: the 4 listed mis-stamps, 13 catch-up minutes, 22 other times (BEA at 10:00
    # ...)
    assert d.height == 39 and kinds == {"known_misstamp": 4, "catch_up_minute": 13, "other_time": 22}
    known = d.filter(pl.col("kind") == "known_misstamp").select("indicator_id", "release_et").rows()
    assert known == [
        ("nonfarm_payrolls", "2020-03-06 07:30"),
        ("pce_price_index", "2021-03-26 09:30"),
        ("real_pce", "2021-03-26 09:30"),
        ("unemployment_rate", "2022-12-02 07:30"),
    ]
    jan9 = d.filter(pl.col("release_et").str.starts_with("2026-01-09"))
    assert jan9.select("indicator_id", "kind").rows() == [
        ("building_permits", "catch_up_minute"),
        ("housing_starts", "catch_up_minute"),
    ]
    # a release exactly at its slot is never listed
    cpi = releases.filter(pl.col("indicator_id") == "cpi")
    assert d.filter(pl.col("indicator_id") == "cpi").height == 0 and cpi.height > 150


def test_an_unlisted_split_report_is_detected(releases):
    # without the list, the two Employment Situation mis-stamps show up as split reports; PCE 09:30 (both
    # fields stamped alike) as an other time, which only the list explains
    d = release_time_deviations(releases, known=())
    split = d.filter(pl.col("kind") == "split_report").select("indicator_id", "release_et").rows()
    assert split == [("nonfarm_payrolls", "2020-03-06 07:30"), ("unemployment_rate", "2022-12-02 07:30")]
    assert d.filter(pl.col("release_et") == "2021-03-26 09:30")["kind"].to_list() == [
        "other_time",
        "other_time",
    ]
    assert len(KNOWN_MISSTAMPS) == 4 and all(k.evidence for k in KNOWN_MISSTAMPS)
    # a constructed one: unemployment rate stamped 08:31 next to payrolls at 08:30
    t = lambda s: datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    made = pl.DataFrame(
        {
            "indicator_id": ["nonfarm_payrolls", "unemployment_rate"],
            "release_at": [t("2026-03-06 13:30"), t("2026-03-06 13:31")],
        }
    )
    assert release_time_deviations(made)["kind"].to_list() == ["split_report"]
