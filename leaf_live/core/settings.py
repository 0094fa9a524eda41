"""Process-wide settings read from the environment: the ONE place in ``leaf_live`` that reads it (no Dagster
imports). Everything else receives what it needs as arguments; the Dagster resources are built from these
settings in ``resources.default_resources`` (secrets travel as Dagster ``EnvVar``s, never as values).

| variable                         | meaning                                                          |
default                              |
|----------------------------------|------------------------------------------------------------------|--------------------------------------|
| ``LEAF_LIVE_DB``                  | DuckDB file the graph writes                                     |
``data/leaf_live.duckdb``            |
| ``LEAF_LIVE_SNAPSHOT``            | directory of recorded source files (service formats)             |
``../shared/data`` from the working directory or, when that does not exist, from the checkout root |
| ``LEAF_LIVE_TRANSPORT``           | ``snapshot`` (read files) or ``live`` (call the services): which
implementation every source resource gets | ``snapshot`` if a snapshot dir exists, else ``live`` |
| ``LEAF_LIVE_LLM_*``               | LLM models and call limits (:data:`LLM_VARIABLES`, parsed by
``leaf_live.core.llm.load_llm_config``) | no models |
| ``LEAF_LIVE_*_URL``               | live service URL overrides (:data:`URL_VARIABLES`)                | each
service's public URL            |
| ``FRED_API_KEY``                  | ALFRED vintages in live mode (secret: passed as a Dagster ``EnvVar``) |
unset                            |
| ``LEAF_LIVE_EXECUTOR``            | Dagster executor of the code location's jobs: ``in_process`` (embedded
profile) or ``celery`` (production profile, ``deploy/production``) | ``in_process`` |
| ``LEAF_LIVE_CELERY_CONFIG``       | the Celery executor/worker YAML shared by the run coordinator and
``dagster-celery worker start -y`` | ``deploy/production/celery.yaml`` of the checkout |
| ``LEAF_LIVE_SCHEDULES``           | ``on``: the living service's sensors and schedules start RUNNING when
the code location loads (``dagster dev`` with a daemon); ``off``: STOPPED (turn each on in the UI) | ``off`` |
| ``LEAF_LIVE_CLOCK``               | a fixed "now" (ISO 8601 with a zone, e.g. ``2026-02-11T14:00:00Z``) for
the sensors and schedules, and the instant the snapshot sources replay (a release appears once the clock
passes its ``available_at``); unset = the system clock | unset |
| ``LEAF_LIVE_CLOCK_FILE``          | a file holding that instant, read again at every sensor tick and every
run's resource build, so a simulated clock advances by rewriting the file (no restart of the daemon,
webserver or workers); not together with ``LEAF_LIVE_CLOCK`` | unset |
| ``LEAF_LIVE_INBOX``               | the submission service's inbox (``leaf_live.service.inbox.open_inbox``):
a ``postgresql://user@host:port/db`` URL (production profile; password in ``PGPASSWORD`` or ``~/.pgpass``) or
a SQLite file; read by ``serve``, ``teams``, ``inbox`` and the Dagster resource (as an ``EnvVar``) | the file
``<LEAF_LIVE_DB>.inbox.sqlite`` beside the database |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_DB = Path("data/leaf_live.duckdb")
DEFAULT_SNAPSHOT = Path("../shared/data")
# the same path from the checkout root, so a command run from another directory finds the recorded data too
CHECKOUT_SNAPSHOT = Path(__file__).resolve().parents[2] / DEFAULT_SNAPSHOT
TRANSPORTS = ("snapshot", "live")
EXECUTORS = ("in_process", "celery")
SWITCH_VALUES = {"on": True, "off": False}
# deploy/production/celery.yaml of this checkout (the code location runs from a checkout or an editable
# install)
DEFAULT_CELERY_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "production" / "celery.yaml"
LLM_VARIABLES = (
    "LEAF_LIVE_LLM_MODELS",
    "LEAF_LIVE_LLM_API_BASE",
    "LEAF_LIVE_LLM_RPM",
    "LEAF_LIVE_LLM_CONCURRENCY",
    "LEAF_LIVE_LLM_TIMEOUT_S",
    "LEAF_LIVE_LLM_MAX_ATTEMPTS",
    "LEAF_LIVE_LLM_MAX_TOKENS",
    "LEAF_LIVE_LLM_WEB_SEARCH",
)
URL_VARIABLES = (
    "LEAF_LIVE_FRED_MD_BASE_URL",
    "LEAF_LIVE_PHILLY_RTDSM_URL",
    "LEAF_LIVE_GDPNOW_URL",
    "LEAF_LIVE_NYFED_NOWCAST_URL",
    "LEAF_LIVE_CLEVELAND_NOWCAST_URL",
    "LEAF_LIVE_CHICAGO_CHURN_URL",
    "LEAF_LIVE_STLENI_URL",
    "LEAF_LIVE_OPEN_METEO_URL",
)
SECRET_VARIABLES = ("FRED_API_KEY",)


class SettingsError(ValueError):
    """A setting has a value the project cannot use; the message names the variable and value."""


@dataclass(frozen=True)
class Settings:
    """Resolved settings. ``llm``: the ``LEAF_LIVE_LLM_*`` variables that are set (name -> text); ``urls``:
    the ``LEAF_LIVE_*_URL`` overrides that are set; ``secrets_set``: names of secret variables that are set
    (their values are read by Dagster ``EnvVar`` resources only)."""

    db_path: Path
    snapshot_dir: Path | None
    transport: str
    llm: Mapping[str, str] = field(default_factory=dict)
    urls: Mapping[str, str] = field(default_factory=dict)
    secrets_set: frozenset[str] = frozenset()
    executor: str = "in_process"
    celery_config: Path = DEFAULT_CELERY_CONFIG
    transport_set: bool = (
        False  # LEAF_LIVE_TRANSPORT was given (else the transport follows the snapshot's presence)
    )
    snapshot_searched: str = ""  # where the default snapshot was looked for (for the error when none exists)
    schedules_on: bool = False
    clock: datetime | None = None
    clock_file: Path | None = None  # LEAF_LIVE_CLOCK_FILE: the instant is read from it at each use
    inbox: str | None = None  # LEAF_LIVE_INBOX (None: the SQLite file beside the database)

    def require_snapshot(self) -> Path:
        """Return the snapshot directory or raise :class:`SettingsError` naming ``LEAF_LIVE_SNAPSHOT``."""
        if self.snapshot_dir is None or not self.snapshot_dir.is_dir():
            raise SettingsError(
                f"LEAF_LIVE_SNAPSHOT={self.snapshot_dir!s}: snapshot directory does not exist; set"
                " LEAF_LIVE_SNAPSHOT to the recorded data (e.g. ../shared/data) or use"
                " LEAF_LIVE_TRANSPORT=live"
            )
        return self.snapshot_dir


def _set(names: tuple[str, ...]) -> dict[str, str]:
    return {n: os.environ[n] for n in names if os.environ.get(n, "").strip()}


def get_settings() -> Settings:
    """Read the settings from the environment at call time (never cached, so tests can override).
    Raises :class:`SettingsError` for an unknown ``LEAF_LIVE_TRANSPORT`` or ``LEAF_LIVE_EXECUTOR``."""
    db = Path(os.environ.get("LEAF_LIVE_DB", str(DEFAULT_DB)))
    snap_env = os.environ.get("LEAF_LIVE_SNAPSHOT")
    searched = ""
    if snap_env:
        snapshot: Path | None = Path(snap_env)
    else:
        snapshot = next((p for p in (DEFAULT_SNAPSHOT, CHECKOUT_SNAPSHOT) if p.is_dir()), None)
        searched = (
            f"{DEFAULT_SNAPSHOT} does not exist from the working directory {Path.cwd()} nor from the "
            f"checkout {CHECKOUT_SNAPSHOT.parents[2]}"
        )
    transport_env = os.environ.get("LEAF_LIVE_TRANSPORT")
    transport = transport_env or ("snapshot" if snapshot is not None else "live")
    if transport not in TRANSPORTS:
        raise SettingsError(f"LEAF_LIVE_TRANSPORT={transport!r}: expected one of {TRANSPORTS}")
    executor = os.environ.get("LEAF_LIVE_EXECUTOR") or "in_process"
    if executor not in EXECUTORS:
        raise SettingsError(f"LEAF_LIVE_EXECUTOR={executor!r}: expected one of {EXECUTORS}")
    celery_config = Path(os.environ.get("LEAF_LIVE_CELERY_CONFIG") or DEFAULT_CELERY_CONFIG)
    switch = (os.environ.get("LEAF_LIVE_SCHEDULES") or "off").strip().lower()
    if switch not in SWITCH_VALUES:
        raise SettingsError(f"LEAF_LIVE_SCHEDULES={switch!r}: expected 'on' or 'off'")
    clock_file = (os.environ.get("LEAF_LIVE_CLOCK_FILE") or "").strip() or None
    if clock_file is not None and (os.environ.get("LEAF_LIVE_CLOCK") or "").strip():
        raise SettingsError(
            f"LEAF_LIVE_CLOCK_FILE={clock_file!r}: set LEAF_LIVE_CLOCK or LEAF_LIVE_CLOCK_FILE, not both"
        )
    return Settings(
        db_path=db,
        snapshot_dir=snapshot,
        transport=transport,
        llm=_set(LLM_VARIABLES),
        urls=_set(URL_VARIABLES),
        secrets_set=frozenset(_set(SECRET_VARIABLES)),
        executor=executor,
        celery_config=celery_config,
        transport_set=bool(transport_env),
        snapshot_searched=searched,
        schedules_on=SWITCH_VALUES[switch],
        clock=parse_clock(os.environ.get("LEAF_LIVE_CLOCK") or None),
        clock_file=Path(clock_file) if clock_file is not None else None,
        inbox=(os.environ.get("LEAF_LIVE_INBOX") or "").strip() or None,
    )


def read_clock_file(path: str | Path) -> datetime:
    """The instant held by a clock file (``LEAF_LIVE_CLOCK_FILE``): one ISO 8601 instant with a zone, read
    now (callers read it at every use, so rewriting the file advances a simulated clock without a restart).
    Raises :class:`SettingsError` naming the file for a missing, unreadable, empty or malformed file."""
    name = f"LEAF_LIVE_CLOCK_FILE {path}"
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{name}: cannot read the clock file ({type(exc).__name__})") from None
    if not text:
        raise SettingsError(f"{name}: the clock file is empty; write an instant such as 2026-02-11T14:00:00Z")
    t = parse_clock(text, name=name)
    assert t is not None
    return t


def parse_clock(text: str | None, name: str = "LEAF_LIVE_CLOCK") -> datetime | None:
    """A fixed clock instant from ISO 8601 text with a zone (``2026-02-11T14:00:00Z``), as UTC; ``None`` for
    none. Raises :class:`SettingsError` naming ``name`` and the value for text that is not such an instant."""
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SettingsError(
            f"{name}={text!r}: expected an ISO 8601 instant such as 2026-02-11T14:00:00Z"
        ) from None
    if t.tzinfo is None:
        raise SettingsError(f"{name}={text!r}: give a time zone (e.g. Z for UTC)")
    return t.astimezone(UTC)
