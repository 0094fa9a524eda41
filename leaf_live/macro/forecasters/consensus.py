"""The professional consensus as a comparator model (LiveMacroEval Sec. 3.5; App. K, S.1).

The consensus C published with each release (Investing.com calendar in the released data; the paper's
headline uses Bloomberg ECOS, which is not redistributable) becomes one nowcast per release:

* ``model_id`` = ``consensus/<consensus_source>`` (``consensus/investing``, ``consensus/forexfactory``);
* ``value`` = C, in the reporting unit (the ``releases`` table already holds it so);
* ``issued_at`` = ``release_at - issue_lead`` (default one minute). The calendars show only the terminal
  consensus, not when it was last revised, so the row is placed at the last instant that is still strictly
  before the release: it is then the consensus' "latest nowcast before release" (App. L) and can never be
  mistaken for post-release information. A consequence worth knowing: as an hourly series it has one
  point, so it enters LiveBetting only for the final hour's bet (the paper's Bloomberg path, which moves
  through the window, is not available);
* the scorer treats the consensus as the zero-surprise forecaster: its model-implied surprise
  (value - C)/sigma_i is exactly 0, so Q-hat = 0 and its LiveMacro and consensus-relative scores are 0 by
  construction (App. K, S.1).

Releases without a consensus (C NULL, e.g. the post-shutdown catch-up releases) give no row.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from leaf_live.macro.forecasters.nowcast_frame import build_nowcasts

PRODUCER = "comparator_nowcasts"
ISSUE_LEAD = timedelta(minutes=1)


def consensus_nowcasts(
    releases: pl.DataFrame,
    *,
    issue_lead: timedelta = ISSUE_LEAD,
    partition_key: str | None = None,
) -> pl.DataFrame:
    """Turn release rows into ``consensus/<source>`` nowcasts (producer ``comparator_nowcasts``).

    ``releases`` holds ``indicator_id, reference_period, release_at`` (tz-aware), ``consensus`` (reporting
    unit, NULL allowed) and optionally ``consensus_source`` (default ``investing``) -- e.g. the ``releases``
    table. ``partition_key`` defaults to the model_id. ``raw_response_id`` = ``<indicator_id>@<release_at
    ISO>`` (the release the value came from). Raises :class:`ValueError` for a missing column, a naive
    ``release_at`` or a non-positive ``issue_lead``.
    """
    need = ("indicator_id", "reference_period", "release_at", "consensus")
    missing = [c for c in need if c not in releases.columns]
    if missing:
        raise ValueError(f"releases frame lacks column(s) {missing}; has {releases.columns}")
    dtype = releases.schema["release_at"]
    if not isinstance(dtype, pl.Datetime) or dtype.time_zone is None:
        raise ValueError(f"releases.release_at must be a tz-aware datetime, got {dtype}")
    if issue_lead <= timedelta(0):
        raise ValueError(f"issue_lead={issue_lead}: must be positive (the row must precede the release)")
    src = (
        pl.col("consensus_source").fill_null("investing")
        if "consensus_source" in releases.columns
        else pl.lit("investing")
    )
    rel = pl.col("release_at").dt.convert_time_zone("UTC")
    f = releases.filter(pl.col("consensus").is_not_null()).select(
        model_id=pl.lit("consensus/") + src,
        indicator_id=pl.col("indicator_id"),
        reference_period=pl.col("reference_period"),
        issued_at=rel - pl.duration(microseconds=int(issue_lead / timedelta(microseconds=1))),
        value=pl.col("consensus").cast(pl.Float64),
        source_variable=pl.lit("consensus"),
        raw_response_id=pl.col("indicator_id") + pl.lit("@") + rel.dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    f = f.with_columns((pl.lit(partition_key) if partition_key else pl.col("model_id")).alias("partition_key"))
    return build_nowcasts(f, producer=PRODUCER)
