"""Source connectors: each has a ``live`` transport (calls the service) and a ``snapshot`` transport (reads
files in the service's own format from ``LEAF_LIVE_SNAPSHOT``), and both return the same typed polars frame.

Modules: :mod:`~leaf_live.sources.releases` (release calendar: actual, consensus, timestamps),
:mod:`~leaf_live.sources.forexfactory` (ForexFactory calendar files), :mod:`~leaf_live.sources.fred`
(FRED / ALFRED series), :mod:`~leaf_live.sources.futures` (announcement-window E-mini S&P 500 prices).
"""

from __future__ import annotations


class SourceError(ValueError):
    """A source row or response cannot be used.

    The message names the file (or URL), the 1-based data row (header excluded; the file line is given too),
    the field and the offending value, so the bad input can be found and fixed. The attributes carry the
    same information for programs.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
        value: object = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.value = value
        where = []
        if file is not None:
            where.append(f"file {file}")
        if row is not None:
            # data rows are 1-based after the header, so the text line is row + 1
            where.append(f"row {row} (line {row + 1})")
        if field is not None:
            where.append(f"field {field}={value!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


__all__ = ["SourceError"]
