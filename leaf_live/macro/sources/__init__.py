"""Macro-track source connectors: each has a ``live`` transport (calls the service) and a ``snapshot``
transport (reads files in the service's own format), and both return the same typed polars frame.

Modules: :mod:`~leaf_live.macro.sources.releases` (release calendars: actual, consensus, timestamps; the
ForexFactory files), :mod:`~leaf_live.macro.sources.futures` (announcement-window E-mini S&P 500 prices),
:mod:`~leaf_live.macro.sources.fred` (FRED / ALFRED series), :mod:`~leaf_live.macro.sources.fred_md`
(FRED-MD/QD vintages), :mod:`~leaf_live.macro.sources.fed_nowcasts`,
:mod:`~leaf_live.macro.sources.polymarket`,
:mod:`~leaf_live.macro.sources.recorded_nowcasts`. Errors are :class:`leaf_live.core.sources.SourceError`.
"""
