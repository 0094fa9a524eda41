"""The clock of the living service: "now" for the sensors and schedules (``sensors/``).

:class:`ClockResource` answers the system time; with ``at`` set (``LEAF_LIVE_CLOCK``, or a test) it answers
that fixed instant, so a test advances a simulated clock by building the resource anew per tick. The snapshot
sources replay the recording at the same instant (``resources.sources.source_resources``), so on the
snapshot a release "appears" when the clock passes its ``available_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import ConfigurableResource
from pydantic import Field

from leaf_live.core.settings import Settings, parse_clock


class ClockResource(ConfigurableResource):
    """``now()``: the system time in UTC, or the fixed instant ``at``."""

    at: str | None = Field(
        default=None,
        description="fixed instant, ISO 8601 with a zone (LEAF_LIVE_CLOCK); unset = the system clock",
    )

    def now(self) -> datetime:
        """The current instant, tz-aware UTC. Raises ``SettingsError`` for a malformed ``at``."""
        fixed = parse_clock(self.at, name="clock.at")
        return fixed if fixed is not None else datetime.now(UTC)

    def simulated(self) -> datetime | None:
        """The fixed instant when the clock is simulated, else ``None``."""
        return parse_clock(self.at, name="clock.at")


def clock_resource(settings: Settings) -> ClockResource:
    """The clock of ``settings.clock`` (``LEAF_LIVE_CLOCK``): fixed when set, the system clock otherwise."""
    return ClockResource(at=settings.clock.isoformat() if settings.clock is not None else None)
