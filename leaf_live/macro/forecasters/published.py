"""Models whose nowcasts were published elsewhere, as forecasters: each Fed regional-bank nowcast
(``fed/gdpnow``, ``fed/nyfed-staff``, ...; LiveMacroEval §3.5, App. H) and each recorded run
(``openai/gpt-5-search-api@single``; the LiveMacroEval CSV runs). Their rows come from a source client
(:mod:`leaf_live.macro.sources.fed_nowcasts`, :mod:`leaf_live.macro.sources.recorded_nowcasts`); the
forecaster contract (:mod:`leaf_live.core.forecaster`) makes them rows of the one ``nowcasts`` table like
every other model.
"""

from __future__ import annotations

import polars as pl

from leaf_live.core.pit import require_columns


class PublishedNowcasts:
    """One model's published nowcast series (``rows``: ``nowcasts`` rows, any models; this one keeps
    ``model_id``'s, in their order). ``forecast(windows)`` returns them all: a value published for a period
    whose release is not scheduled yet has no window, and keeps ``after_release`` False until it has one."""

    def __init__(self, model_id: str, rows: pl.DataFrame) -> None:
        require_columns(rows, ("model_id",), "published nowcasts")
        self.model_id = model_id
        self._rows = rows.filter(pl.col("model_id") == model_id)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        return self._rows


def published_forecasters(rows: pl.DataFrame) -> list[PublishedNowcasts]:
    """One :class:`PublishedNowcasts` per model in ``rows``, sorted by model_id."""
    require_columns(rows, ("model_id",), "published nowcasts")
    return [PublishedNowcasts(m, rows) for m in sorted(rows["model_id"].unique().to_list())]
