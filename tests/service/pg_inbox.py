"""A PostgreSQL database of its own for the inbox tests (the production profile's inbox, issue 21 item 2).

The server is the one deploy/production/services.sh starts (``DAGSTER_PG_HOST``/``PORT``/``USERNAME``/
``PASSWORD``/``DB``, the same variables as tests/deploy/test_production_profile.py). Unreachable: the test
skips, unless ``LEAF_LIVE_PROD_TESTS=1`` (or ``CI=true``) demands it, then it fails. Each use creates a fresh
database and drops it afterwards; the URL carries no password (libpq reads ``PGPASSWORD``, set here).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from required import unavailable

PG_VARS = (
    "DAGSTER_PG_HOST",
    "DAGSTER_PG_PORT",
    "DAGSTER_PG_USERNAME",
    "DAGSTER_PG_PASSWORD",
    "DAGSTER_PG_DB",
)


def _admin():
    import psycopg2

    e = os.environ
    con = psycopg2.connect(
        host=e["DAGSTER_PG_HOST"],
        port=int(e["DAGSTER_PG_PORT"]),
        user=e["DAGSTER_PG_USERNAME"],
        password=e["DAGSTER_PG_PASSWORD"],
        dbname=e["DAGSTER_PG_DB"],
        connect_timeout=5,
    )
    con.autocommit = True
    return con


def _require_pg() -> None:
    missing = [v for v in PG_VARS if not os.environ.get(v)]
    problem = f"{', '.join(missing)} unset" if missing else None
    if problem is None:
        try:
            _admin().close()
        except Exception as exc:  # any reason the server cannot be used
            problem = f"PostgreSQL unreachable: {str(exc).strip().splitlines()[0]}"
    if problem:
        msg = (
            f"the PostgreSQL inbox needs a server ({problem}); start it with "
            "`bash deploy/production/services.sh start && . /tmp/leaf_live_services/env`"
        )
        unavailable(msg, "LEAF_LIVE_PROD_TESTS")


@contextmanager
def pg_inbox_url() -> Iterator[str]:
    """A ``postgresql://`` URL of a fresh, empty database (dropped at the end); ``PGPASSWORD`` is set while
    it is in use. Skips or fails as the module doc says."""
    _require_pg()
    e = os.environ
    name = f"leaf_live_inbox_test_{uuid.uuid4().hex[:12]}"
    admin = _admin()
    try:
        admin.cursor().execute(f"CREATE DATABASE {name}")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PGPASSWORD", e["DAGSTER_PG_PASSWORD"])
            yield f"postgresql://{e['DAGSTER_PG_USERNAME']}@{e['DAGSTER_PG_HOST']}:{e['DAGSTER_PG_PORT']}/{name}"
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        admin.close()


@contextmanager
def inbox_location(backend: str, db) -> Iterator[str]:
    """``LEAF_LIVE_INBOX`` for ``backend``: ``sqlite`` = the embedded file beside ``db`` (the setting unset),
    ``postgres`` = a fresh PostgreSQL database (the setting set while in use)."""
    from leaf_live.service.inbox import inbox_path

    if backend == "sqlite":
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("LEAF_LIVE_INBOX", raising=False)
            yield str(inbox_path(db))
        return
    with pg_inbox_url() as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEAF_LIVE_INBOX", url)
        yield url
