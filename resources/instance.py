"""The Dagster instance a command records its runs in: one per DuckDB database, so ``leaf-live status --db X``
reports the runs and materializations of X only (issue 19 item 4).

* ``DAGSTER_HOME`` set: that instance for every database (the operator chose it, e.g. the production
  PostgreSQL instance of one deployment, which serves one database).
* the default database (``LEAF_LIVE_DB``, :func:`leaf_live.core.settings.get_settings`): the project's
  ``dagster_home/`` (what ``DAGSTER_HOME=$PWD/dagster_home dagster dev`` shows).
* any other database ``path/name.duckdb``: the project's ``dagster_home/dagster.yaml`` configuration with
  its storage in ``path/name.duckdb.dagster/`` beside the file (view it with
  ``DAGSTER_HOME=path/name.duckdb.dagster dagster dev`` after copying the yaml there, which this module does).
* neither a ``DAGSTER_HOME`` nor the project's ``dagster_home/dagster.yaml`` (a non-editable install): an
  ephemeral instance, telemetry off.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from leaf_live.core.settings import get_settings

__all__ = ["PROJECT_DAGSTER_HOME", "instance_for", "instance_home"]

# The project's Dagster instance (telemetry off, runs under dagster_home/storage).
PROJECT_DAGSTER_HOME = Path(__file__).resolve().parents[1] / "dagster_home"
# Suffix of the per-database instance directory beside a database file other than the default.
HOME_SUFFIX = ".dagster"


def instance_home(db: str | Path | None) -> Path | None:
    """The instance directory for the DuckDB file ``db`` (``None`` = the default database), by the rules in
    the module docstring; ``None`` when only an ephemeral instance is possible. Creates nothing."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"])
    if not (PROJECT_DAGSTER_HOME / "dagster.yaml").is_file():
        return None
    if db is None or str(db) == ":memory:":
        return PROJECT_DAGSTER_HOME
    path = Path(db).expanduser().resolve()
    if path == get_settings().db_path.expanduser().resolve():
        return PROJECT_DAGSTER_HOME
    return path.with_name(path.name + HOME_SUFFIX)


def instance_for(db: str | Path | None = None):
    """The Dagster instance recording runs on the DuckDB file ``db`` (:func:`instance_home`), opened with
    :func:`resources.event_log.pooled_instance` (the default SQLite event log written through pooled
    connections, in batches). A per-database home is created with a copy of the project's ``dagster.yaml``
    the first time. Raises what ``DagsterInstance.from_config`` raises."""
    from dagster import DagsterInstance

    from resources.event_log import pooled_instance

    home = instance_home(db)
    if home is None:
        return DagsterInstance.ephemeral(settings={"telemetry": {"enabled": False}})
    if home != PROJECT_DAGSTER_HOME and not os.environ.get("DAGSTER_HOME"):
        home.mkdir(parents=True, exist_ok=True)
        if not (home / "dagster.yaml").is_file():
            shutil.copyfile(PROJECT_DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")
    return pooled_instance(home)
