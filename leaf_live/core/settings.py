"""Process-wide settings read from the environment (one place, no Dagster imports).

| variable              | meaning                                                      | default                              |
|-----------------------|--------------------------------------------------------------|--------------------------------------|
| ``LEAF_LIVE_DB``       | DuckDB file the graph writes                                 | ``data/leaf_live.duckdb``            |
| ``LEAF_LIVE_SNAPSHOT`` | directory of recorded source files (service formats)         | ``../shared/data`` when it exists    |
| ``LEAF_LIVE_TRANSPORT``| ``snapshot`` (read files) or ``live`` (call the services)    | ``snapshot`` if a snapshot dir exists, else ``live`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DB = Path("data/leaf_live.duckdb")
DEFAULT_SNAPSHOT = Path("../shared/data")
TRANSPORTS = ("snapshot", "live")


class SettingsError(ValueError):
    """A setting has a value the project cannot use; the message names the variable and value."""


@dataclass(frozen=True)
class Settings:
    db_path: Path
    snapshot_dir: Path | None
    transport: str

    def require_snapshot(self) -> Path:
        """Return the snapshot directory or raise :class:`SettingsError` naming ``LEAF_LIVE_SNAPSHOT``."""
        if self.snapshot_dir is None or not self.snapshot_dir.is_dir():
            raise SettingsError(
                f"LEAF_LIVE_SNAPSHOT={self.snapshot_dir!s}: snapshot directory does not exist; "
                "set LEAF_LIVE_SNAPSHOT to the recorded data (e.g. ../shared/data) or use LEAF_LIVE_TRANSPORT=live"
            )
        return self.snapshot_dir


def get_settings() -> Settings:
    """Read the settings from the environment at call time (never cached, so tests can override)."""
    db = Path(os.environ.get("LEAF_LIVE_DB", str(DEFAULT_DB)))
    snap_env = os.environ.get("LEAF_LIVE_SNAPSHOT")
    if snap_env:
        snapshot: Path | None = Path(snap_env)
    else:
        snapshot = DEFAULT_SNAPSHOT if DEFAULT_SNAPSHOT.is_dir() else None
    transport = os.environ.get("LEAF_LIVE_TRANSPORT") or ("snapshot" if snapshot is not None else "live")
    if transport not in TRANSPORTS:
        raise SettingsError(f"LEAF_LIVE_TRANSPORT={transport!r}: expected one of {TRANSPORTS}")
    return Settings(db_path=db, snapshot_dir=snapshot, transport=transport)
