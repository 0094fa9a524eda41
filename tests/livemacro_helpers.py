"""Test helpers shared by the macro nowcast tests (real snapshot files, read where they are)."""

from __future__ import annotations

from datetime import date

import polars as pl

from leaf_live.settings import get_settings

LIVE = "livemacroeval/Results/ground_truth/data/field_releases_live.csv"


def live_releases() -> pl.DataFrame:
    """(indicator_id, reference_period, release_at UTC) from the paper's live-window ground truth (ET times)."""
    path = get_settings().require_snapshot() / LIVE
    raw = pl.read_csv(path, infer_schema=False)
    q = raw.get_column("ref_period").str.extract(r"^(\d{4})-Q(\d)$", 2)
    y = raw.get_column("ref_period").str.slice(0, 4).cast(pl.Int32)
    m = pl.Series([3 * int(x) - 2 if x is not None else None for x in q]).fill_null(
        raw.get_column("ref_period").str.slice(5, 2).cast(pl.Int32, strict=False)
    )
    return pl.DataFrame(
        {
            "indicator_id": raw.get_column("field_id"),
            "reference_period": [date(a, b, 1) for a, b in zip(y, m)],
            "release_at": raw.get_column("release_datetime_et")
            .str.to_datetime("%Y-%m-%d %H:%M:%S")
            .dt.replace_time_zone("America/New_York")
            .dt.convert_time_zone("UTC"),
        }
    )
