"""The professional consensus as a comparator model (LiveMacroEval Sec. 3.5; App. K, S.1): one nowcast a
minute before each release, equal to the published consensus, in the reporting unit."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest
from livemacro_helpers import LIVE

from leaf_live.core.settings import get_settings
from leaf_live.core.storage import conform
from leaf_live.macro.catalog import get_indicator
from leaf_live.macro.forecasters.consensus import consensus_nowcasts
from leaf_live.macro.nowcasts import WRITER_COLUMNS


def snap():
    return get_settings().require_snapshot()


def live_releases_with_consensus() -> pl.DataFrame:
    raw = pl.read_csv(snap() / LIVE, infer_schema=False)
    scale = {i: get_indicator(i).panel_scale for i in raw.get_column("field_id").unique()}
    ref = raw.get_column("ref_period")
    return pl.DataFrame(
        {
            "indicator_id": raw.get_column("field_id"),
            "reference_period": [
                date(int(s[:4]), 3 * int(s[-1]) - 2 if "Q" in s else int(s[5:7]), 1) for s in ref
            ],
            "release_at": (
                raw.get_column("release_datetime_et")
                .str.to_datetime("%Y-%m-%d %H:%M:%S")
                .dt.replace_time_zone("America/New_York")
                .dt.convert_time_zone("UTC")
            ),
            # the calendar stores counts in raw units; the releases table holds the reporting unit
            "consensus": [
                float(c) / scale[f] if c else None
                for f, c in zip(raw.get_column("field_id"), raw.get_column("C"))
            ],
        }
    )


def test_consensus_is_one_nowcast_a_minute_before_each_release():
    rel = live_releases_with_consensus()
    out = consensus_nowcasts(rel)
    conform("nowcasts", out, deferred=WRITER_COLUMNS)
    assert out.height == 90  # 103 live releases, 13 without a published consensus
    assert set(out.get_column("model_id")) == {"consensus/investing"}
    cpi = out.filter(pl.col("indicator_id") == "cpi", pl.col("reference_period") == date(2026, 3, 1)).row(
        0, named=True
    )
    assert cpi["issued_at"] == datetime(2026, 4, 10, 12, 29, tzinfo=UTC) == cpi["available_at"]
    assert cpi["value"] == 3.4 and cpi["raw_response_id"] == "cpi@2026-04-10T12:30:00Z"
    nfp = out.filter(
        pl.col("indicator_id") == "nonfarm_payrolls", pl.col("reference_period") == date(2026, 3, 1)
    )
    assert nfp.get_column("value").to_list() == [65.0]  # 65,000 persons -> 65 thousand
    # zero-surprise identity the scorer relies on: value - C == 0 for every row, all before their release
    joined = out.join(rel, on=["indicator_id", "reference_period"])
    assert (joined.get_column("value") - joined.get_column("consensus")).abs().max() == 0.0
    assert (joined.get_column("issued_at") < joined.get_column("release_at")).all()
    ff = consensus_nowcasts(
        rel.head(3).with_columns(consensus_source=pl.lit("forexfactory")),
        issue_lead=timedelta(minutes=5),
        partition_key="2025-11",
    )
    assert set(ff.get_column("model_id")) == {"consensus/forexfactory"}
    assert set(ff.get_column("partition_key")) == {"2025-11"}
    assert (ff.get_column("issued_at") == rel.head(3).get_column("release_at") - timedelta(minutes=5)).all()
    with pytest.raises(ValueError, match="issue_lead"):
        consensus_nowcasts(rel, issue_lead=timedelta(0))
