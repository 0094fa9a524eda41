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

from leaf_live.core.pit import require_columns, require_tz_aware
from leaf_live.macro.nowcasts import build_nowcasts

ISSUE_LEAD = timedelta(minutes=1)
DEFAULT_SOURCE = "investing"


def consensus_nowcasts(
    releases: pl.DataFrame,
    *,
    issue_lead: timedelta = ISSUE_LEAD,
    partition_key: str | None = None,
) -> pl.DataFrame:
    """Turn release rows into ``consensus/<source>`` nowcasts.

    ``releases`` holds ``indicator_id, reference_period, release_at`` (tz-aware), ``consensus`` (reporting
    unit, NULL allowed) and optionally ``consensus_source`` (default ``investing``) -- e.g. the ``releases``
    table. ``partition_key`` defaults to the model_id. ``raw_response_id`` = ``<indicator_id>@<release_at
    ISO>`` (the release the value came from). Raises :class:`ValueError` for a missing column, a naive
    ``release_at`` or a non-positive ``issue_lead``.
    """
    require_columns(releases, ("indicator_id", "reference_period", "release_at", "consensus"), "releases")
    require_tz_aware(releases, "release_at", "releases")
    if issue_lead <= timedelta(0):
        raise ValueError(f"issue_lead={issue_lead}: must be positive (the row must precede the release)")
    src = (
        pl.col("consensus_source").fill_null(DEFAULT_SOURCE)
        if "consensus_source" in releases.columns
        else pl.lit(DEFAULT_SOURCE)
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
    f = f.with_columns(
        (pl.lit(partition_key) if partition_key else pl.col("model_id")).alias("partition_key")
    )
    return build_nowcasts(f)


class ConsensusForecaster:
    """The consensus of one calendar source as a forecaster (the forecaster contract,
    :mod:`leaf_live.core.forecaster`): ``forecast(windows)`` = :func:`consensus_nowcasts` of the first
    releases of the windows' (indicator, reference period), in ``releases`` order, for this source only."""

    def __init__(
        self, releases: pl.DataFrame, source: str = DEFAULT_SOURCE, *, issue_lead: timedelta = ISSUE_LEAD
    ):
        self.source = source
        self.model_id = f"consensus/{source}"
        self._releases = releases
        self._issue_lead = issue_lead

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        require_columns(tasks, ("indicator_id", "reference_period"), "tasks")
        rel = self._releases.join(
            tasks.select("indicator_id", "reference_period"),
            on=["indicator_id", "reference_period"],
            how="semi",
            maintain_order="left",
        )
        out = consensus_nowcasts(rel, issue_lead=self._issue_lead)
        return out.filter(pl.col("model_id") == self.model_id)


def consensus_forecasters(releases: pl.DataFrame) -> list[ConsensusForecaster]:
    """One :class:`ConsensusForecaster` per consensus source present in ``releases`` (sorted by source)."""
    if "consensus_source" not in releases.columns:
        return [ConsensusForecaster(releases)]
    sources = releases.filter(pl.col("consensus").is_not_null())["consensus_source"].fill_null(DEFAULT_SOURCE)
    return [ConsensusForecaster(releases, s) for s in sorted(sources.unique().to_list())]
