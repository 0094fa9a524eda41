"""The clock of the living service: "now" for the sensors and schedules (``sensors/``).

:class:`ClockResource` answers the system time; with ``at`` set (``LEAF_LIVE_CLOCK``, or a test) it answers
that fixed instant, so a test advances a simulated clock by building the resource anew per tick; with ``file``
set (``LEAF_LIVE_CLOCK_FILE``) it reads the instant from that file at every call, so an operator advances a
running service's simulated clock by rewriting the file, without restarting anything. The snapshot
sources replay the recording at the same instant (``resources.sources.source_resources``), so on the
snapshot a release "appears" when the clock passes its ``available_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import ConfigurableResource
from pydantic import Field

from leaf_live.core.settings import Settings, parse_clock, read_clock_file


class ClockResource(ConfigurableResource):
    """``now()``: the system time in UTC, the fixed instant ``at``, or the instant in ``file`` (per call)."""

    at: str | None = Field(
        default=None,
        description="fixed instant, ISO 8601 with a zone (LEAF_LIVE_CLOCK); unset = the system clock",
    )
    file: str | None = Field(
        default=None,
        description="file holding the simulated instant, read at every call (LEAF_LIVE_CLOCK_FILE)",
    )

    def now(self) -> datetime:
        """The current instant, tz-aware UTC. Raises ``SettingsError`` for a malformed ``at`` or file."""
        fixed = self.simulated()
        return fixed if fixed is not None else datetime.now(UTC)

    def simulated(self) -> datetime | None:
        """The simulated instant (``file`` read now, else ``at``), or ``None`` on the system clock."""
        return simulated_instant(self.at, self.file, name="clock.at")


def simulated_instant(at: str | None, file: str | None, name: str) -> datetime | None:
    """The simulated instant of a clock-driven resource: the clock file's content read now when ``file`` is
    set, else the fixed ``at``, else ``None``. Raises ``SettingsError`` naming the field or file."""
    if file is not None:
        return read_clock_file(file)
    return parse_clock(at, name=name)


def clock_resource(settings: Settings) -> ClockResource:
    """The clock of ``settings``: the clock file (``LEAF_LIVE_CLOCK_FILE``, read per call), the fixed instant
    (``LEAF_LIVE_CLOCK``), or the system clock."""
    return ClockResource(
        at=settings.clock.isoformat() if settings.clock is not None else None,
        file=str(settings.clock_file) if settings.clock_file is not None else None,
    )
