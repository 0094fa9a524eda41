"""The inbox (issue 21 item 2): teams, their token hashes and the accepted submissions, kept apart from the
DuckDB store so the long-running DuckDB writer never blocks a submission.

The embedded default is one SQLite file next to the database (``<db>.inbox.sqlite``, WAL journal, a busy
timeout for concurrent writers); the production profile keeps it in PostgreSQL (``LEAF_LIVE_INBOX=
postgresql://user@host:port/db``, :func:`open_inbox`) behind the same methods (:class:`Inbox`). Both run the
same SQL (:class:`SqlInbox`); a small dialect (:class:`_Sqlite`, :class:`_Postgres`) holds the differences:
the connection, ``BLOB`` vs ``BYTEA``, ``?`` vs ``%s`` placeholders, and how a write transaction takes the
inbox's one write lock (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``pg_advisory_xact_lock``), so a check of the
row keys and the inserts after it are one atomic step on either backend.

Tokens are ``<team>.<secret>``: 32 random bytes (``secrets.token_urlsafe``), shown once; the inbox keeps a
per-token random salt and ``sha256(salt || secret)`` and compares with :func:`hmac.compare_digest` (a 256-bit
random secret needs no slow hash: there is nothing to guess). A submission is stored with its validated rows
(Parquet bytes), its signed receipt, and its row keys under a uniqueness constraint, all in one transaction:
a refused or failed one leaves nothing; a replay (same team, same content hash) finds the first receipt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

TEAM = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS teams (
  team TEXT PRIMARY KEY, salt BLOB NOT NULL, token_hash BLOB NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS submissions (
  receipt_id TEXT PRIMARY KEY, team TEXT NOT NULL, model_id TEXT NOT NULL, track TEXT NOT NULL,
  round_id TEXT NOT NULL, content_hash TEXT NOT NULL, received_at TEXT NOT NULL, due_at TEXT,
  board TEXT NOT NULL, n_rows INTEGER NOT NULL, table_name TEXT NOT NULL, producer TEXT NOT NULL,
  partition_key TEXT NOT NULL, rows BLOB NOT NULL, receipt TEXT NOT NULL, stored_at TEXT,
  UNIQUE (team, content_hash));
CREATE TABLE IF NOT EXISTS submission_keys (
  track TEXT NOT NULL, model_id TEXT NOT NULL, row_key TEXT NOT NULL, receipt_id TEXT NOT NULL,
  PRIMARY KEY (track, model_id, row_key));
CREATE INDEX IF NOT EXISTS submissions_pending ON submissions (stored_at);
CREATE TABLE IF NOT EXISTS endpoints (
  model_id TEXT PRIMARY KEY, team TEXT NOT NULL, url TEXT NOT NULL, host TEXT NOT NULL,
  registered_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_calls (
  call_id TEXT PRIMARY KEY, team TEXT NOT NULL, model_id TEXT NOT NULL, round_id TEXT NOT NULL,
  track TEXT NOT NULL, slot_at TEXT NOT NULL, claimed_at TEXT NOT NULL, completed_at TEXT,
  status TEXT NOT NULL, reason TEXT, receipt_id TEXT, record BLOB, table_name TEXT, invalid_rows BLOB,
  stored_at TEXT);
CREATE INDEX IF NOT EXISTS agent_calls_pending ON agent_calls (stored_at, status);
CREATE TABLE IF NOT EXISTS round_inputs (
  id INTEGER PRIMARY KEY, read_at TEXT NOT NULL, windows BLOB NOT NULL, releases BLOB NOT NULL,
  tasks BLOB NOT NULL);
"""


class InboxError(ValueError):
    """A bad team name, a team that exists, or an inbox that cannot be opened; one line."""


class DuplicateRows(InboxError):
    """Another accepted submission of the model already holds one of these rows (``key``, ``receipt_id``)."""

    def __init__(self, key: str, receipt_id: str) -> None:
        super().__init__(f"row {key!r} already accepted in receipt {receipt_id}")
        self.key = key
        self.receipt_id = receipt_id


@dataclass
class Accepted:
    """A validated submission ready for the inbox (built by :mod:`leaf_live.service.intake`)."""

    receipt_id: str
    team: str
    model_id: str
    track: str
    round_id: str
    content_hash: str
    received_at: datetime
    due_at: datetime | None
    board: str
    n_rows: int
    table_name: str
    producer: str
    partition_key: str
    rows: bytes  # Parquet of the track-table rows
    keys: Sequence[str]


class Inbox(Protocol):
    location: str  # the file path or the URL without its user info (for messages)

    def add_team(self, team: str) -> str: ...
    def authenticate(self, token: str) -> str | None: ...
    def teams(self) -> list[str]: ...
    def receipt_for(self, team: str, content_hash: str) -> dict | None: ...
    def put(self, sub: Accepted, receipt: dict) -> None:
        """Store an accepted submission, its receipt and its row keys in one transaction. Raises
        :class:`DuplicateRows` (nothing stored) when another submission of the model holds one of its keys;
        a concurrent replay of the same content stores nothing new (the caller re-reads the receipt)."""

    def pending(self, limit: int = 1000) -> list[str]: ...
    def load(self, receipt_id: str) -> dict: ...
    def mark_stored(self, receipt_id: str, at: datetime) -> None: ...
    def receipts(self) -> list[dict]: ...
    def last_stored(self) -> dict[str, str]: ...
    def set_endpoint(self, team: str, model_id: str, url: str, host: str) -> None: ...
    def endpoints(self, team: str | None = None) -> list: ...
    def claim_call(self, call) -> bool: ...
    def finish_call(self, call_id: str, **kw) -> None: ...
    def pending_calls(self, limit: int = 1000) -> list[str]: ...
    def running_calls(self) -> list[dict]: ...
    def load_call(self, call_id: str) -> dict: ...
    def mark_call_stored(self, call_id: str, at: datetime) -> None: ...
    def source_of(self, receipt_id: str) -> str: ...
    def put_round_inputs(self, frames: dict[str, bytes], read_at: datetime) -> bool: ...
    def round_inputs(self) -> tuple[dict[str, bytes], datetime] | None: ...
    def round_inputs_read_at(self) -> datetime | None: ...


def inbox_path(db: str | Path) -> Path:
    """The embedded inbox of the database ``db``: ``<db>.inbox.sqlite`` beside it."""
    p = Path(db)
    return p.with_name(p.name + ".inbox.sqlite")


def open_inbox(location: str | Path) -> Inbox:
    """The inbox at ``location``: a ``postgresql://`` (or ``postgres://``) URL opens :class:`PostgresInbox`
    (the production profile; a password is best kept out of the URL, in ``PGPASSWORD`` or ``~/.pgpass``,
    which libpq reads), anything else is a SQLite file path (the embedded default). Raises
    :class:`InboxError` (one line, no password) when the server cannot be reached."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresInbox(text)
    return SqliteInbox(Path(location))


def inbox_location(db: str | Path, inbox: str | None = None) -> str | Path:
    """Where the inbox of the database ``db`` lives: ``inbox`` when given (the ``LEAF_LIVE_INBOX`` setting: a
    PostgreSQL URL or a SQLite file), else the embedded file beside ``db`` (:func:`inbox_path`)."""
    return inbox if inbox else inbox_path(db)


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).isoformat()


def _row(names: Sequence[str], row: Sequence) -> dict:
    """A result row as a dict; PostgreSQL's ``BYTEA`` (a memoryview) as bytes, like SQLite's ``BLOB``."""
    return {n: bytes(v) if isinstance(v, memoryview) else v for n, v in zip(names, row)}


class _Con:
    """One connection in autocommit mode with one ``execute`` for both backends (``?`` placeholders; a
    cursor back); ``close`` hands it back to its dialect (SQLite: closed; PostgreSQL: kept for reuse).
    :meth:`SqlInbox._write` makes a ``with`` block one transaction holding the inbox's write lock."""

    def __init__(self, raw, dialect) -> None:
        self._raw = raw
        self._d = dialect

    def execute(self, sql: str, params: Sequence = ()):
        return self._d.execute(self._raw, sql, params)

    def executemany(self, sql: str, seq) -> None:
        self._d.executemany(self._raw, sql, seq)

    def close(self) -> None:
        self._d.release(self._raw)


class _Sqlite:
    """The SQLite dialect: WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE`` as the write lock."""

    blob = "BLOB"
    integrity: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path = path
        self.timeout_s = timeout_s

    def connect(self):
        con = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")  # an issued receipt survives a crash of the service
        return con

    def release(self, raw) -> None:
        raw.close()

    def execute(self, raw, sql: str, params: Sequence):
        return raw.execute(sql, list(params))

    def executemany(self, raw, sql: str, seq) -> None:
        raw.executemany(sql, seq)

    def begin(self, con: _Con) -> None:
        con.execute("BEGIN IMMEDIATE")

    def schema(self, con: _Con) -> None:
        con._raw.executescript(_SCHEMA)


# the key of the transaction-level advisory lock every PostgreSQL write transaction takes (one writer at a
# time, as SQLite's BEGIN IMMEDIATE): the key check and the inserts after it cannot interleave
_PG_LOCK = 0x1EAF_2101


class _Postgres:
    """The PostgreSQL dialect (psycopg2): ``BYTEA``, ``%s`` placeholders, ``pg_advisory_xact_lock``.

    Connections are reused (a server round trip with password authentication costs more than the queries of
    a submission): up to ``POOL`` idle ones are kept per inbox and process; one handed back inside a
    transaction, or closed, is dropped; one idle longer than ``CHECK_IDLE_S`` is checked before reuse."""

    blob = "BYTEA"
    POOL = 32
    CHECK_IDLE_S = 1.0

    def __init__(self, url: str, timeout_s: float) -> None:
        import psycopg2
        import psycopg2.extensions

        self.url = url
        self.timeout_s = timeout_s
        self.integrity = (psycopg2.IntegrityError,)
        self._pg = psycopg2
        self._idle_status = psycopg2.extensions.TRANSACTION_STATUS_IDLE
        self._lock = threading.Lock()
        self._idle: list[tuple[object, float]] = []
        self._pid = os.getpid()

    def connect(self):
        with self._lock:
            if self._pid != os.getpid():  # a forked child never shares its parent's sockets
                self._idle, self._pid = [], os.getpid()
            while self._idle:
                con, since = self._idle.pop()
                if time.monotonic() - since < self.CHECK_IDLE_S or self._alive(con):
                    return con
        try:
            con = self._pg.connect(self.url, connect_timeout=max(1, int(self.timeout_s)))
        except self._pg.Error as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise InboxError(f"inbox {_redact(self.url)}: cannot connect ({first})") from None
        con.autocommit = True
        return con

    def _alive(self, con) -> bool:
        try:
            with con.cursor() as cur:
                cur.execute("SELECT 1")
            return True
        except self._pg.Error:
            con.close()
            return False

    def release(self, raw) -> None:
        ok = not raw.closed and raw.info.transaction_status == self._idle_status
        with self._lock:
            if ok and self._pid == os.getpid() and len(self._idle) < self.POOL:
                self._idle.append((raw, time.monotonic()))
                return
        raw.close()

    def execute(self, raw, sql: str, params: Sequence):
        cur = raw.cursor()
        cur.execute(sql.replace("?", "%s"), list(params))
        return cur

    def executemany(self, raw, sql: str, seq) -> None:
        from psycopg2.extras import execute_batch

        with raw.cursor() as cur:
            execute_batch(cur, sql.replace("?", "%s"), list(seq), page_size=500)

    def begin(self, con: _Con) -> None:
        con.execute("BEGIN")
        con.execute("SELECT pg_advisory_xact_lock(?)", [_PG_LOCK])

    def schema(self, con: _Con) -> None:
        con.execute("BEGIN")
        con.execute("SELECT pg_advisory_xact_lock(?)", [_PG_LOCK])  # concurrent first opens create once
        for stmt in _SCHEMA.replace("BLOB", self.blob).split(";"):
            if stmt.strip():
                con.execute(stmt)
        con.execute("COMMIT")


def _redact(url: str) -> str:
    """``url`` without its user info (a password never reaches a message)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rsplit('@', 1)[-1]}"


class SqlInbox:
    """:class:`Inbox` on SQL (module doc): the same statements on SQLite and PostgreSQL. Each call takes its
    own connection (PostgreSQL: from the inbox's pool), so threads and processes may share the inbox; every
    write that must be atomic (a submission with its keys, an agent call's outcome with its submission) is one
    transaction under the write lock."""

    _d: _Sqlite | _Postgres
    location: str

    @contextmanager
    def _connection(self) -> Iterator[_Con]:
        con = _Con(self._d.connect(), self._d)
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def _write(self) -> Iterator[_Con]:
        with self._connection() as con:
            self._d.begin(con)
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def add_team(self, team: str) -> str:
        """Register ``team`` and return its token (shown once; only a salted hash is kept). Raises
        :class:`InboxError` for a bad name or an existing team."""
        if not isinstance(team, str) or not TEAM.fullmatch(team):
            raise InboxError(f"team {team!r}: 1-32 lower-case letters, digits or '-', starting with either")
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        digest = hashlib.sha256(salt + secret.encode()).digest()
        with self._connection() as con:
            try:
                con.execute(
                    "INSERT INTO teams VALUES (?, ?, ?, ?)", [team, salt, digest, _iso(datetime.now(UTC))]
                )
            except self._d.integrity:
                raise InboxError(
                    f"team {team!r} exists already (its token was shown when it was added)"
                ) from None
        return f"{team}.{secret}"

    def teams(self) -> list[str]:
        """The registered team names."""
        with self._connection() as con:
            return [r[0] for r in con.execute("SELECT team FROM teams ORDER BY team").fetchall()]

    def authenticate(self, token: str) -> str | None:
        """The team a token belongs to, or None (unknown team, wrong secret, malformed token)."""
        if not isinstance(token, str) or "." not in token:
            return None
        team, secret = token.split(".", 1)
        with self._connection() as con:
            row = con.execute("SELECT salt, token_hash FROM teams WHERE team = ?", [team]).fetchone()
        if row is None:
            hmac.compare_digest(b"\0" * 32, hashlib.sha256(secret.encode()).digest())  # same work either way
            return None
        salt, digest = bytes(row[0]), bytes(row[1])
        return team if hmac.compare_digest(digest, hashlib.sha256(salt + secret.encode()).digest()) else None

    def receipt_for(self, team: str, content_hash: str) -> dict | None:
        """The receipt of the team's earlier submission with this content hash (a replay), or None."""
        with self._connection() as con:
            row = con.execute(
                "SELECT receipt FROM submissions WHERE team = ? AND content_hash = ?", [team, content_hash]
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, sub: Accepted, receipt: dict) -> None:
        """Store an accepted submission, its receipt and its row keys in one transaction under the inbox's
        write lock. Raises :class:`DuplicateRows` (nothing stored) when another submission of the model holds
        one of its keys; a concurrent replay of the same content stores nothing new (the unique
        ``(team, content_hash)`` refuses it; the caller re-reads the receipt)."""
        with self._write() as con:
            _put(con, sub, receipt)

    def pending(self, limit: int = 1000) -> list[str]:
        """Receipt ids accepted but not yet moved into the store, oldest first."""
        with self._connection() as con:
            rows = con.execute(
                "SELECT receipt_id FROM submissions WHERE stored_at IS NULL ORDER BY received_at, receipt_id"
                " LIMIT ?",
                [limit],
            ).fetchall()
        return [r[0] for r in rows]

    def load(self, receipt_id: str) -> dict:
        """One submission as a dict of its columns (``rows`` = Parquet bytes, ``receipt`` parsed). Raises
        :class:`InboxError` for an unknown id."""
        with self._connection() as con:
            cur = con.execute("SELECT * FROM submissions WHERE receipt_id = ?", [receipt_id])
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        if row is None:
            raise InboxError(f"receipt {receipt_id!r}: not in the inbox")
        out = _row(names, row)
        out["receipt"] = json.loads(out["receipt"])
        return out

    def mark_stored(self, receipt_id: str, at: datetime) -> None:
        with self._connection() as con:
            con.execute("UPDATE submissions SET stored_at = ? WHERE receipt_id = ?", [_iso(at), receipt_id])

    def receipts(self) -> list[dict]:
        """Every issued receipt, oldest first."""
        with self._connection() as con:
            rows = con.execute("SELECT receipt FROM submissions ORDER BY received_at, receipt_id").fetchall()
        return [json.loads(r[0]) for r in rows]

    def last_stored(self) -> dict[str, str]:
        """Per track, the latest ``stored_at`` (ISO text) of a submission moved into the store."""
        with self._connection() as con:
            rows = con.execute(
                "SELECT track, max(stored_at) FROM submissions WHERE stored_at IS NOT NULL GROUP BY track"
            ).fetchall()
        return dict(rows)

    # agent endpoints (leaf_live.service.agents)

    def set_endpoint(self, team: str, model_id: str, url: str, host: str) -> None:
        """Register (or replace) the endpoint of ``model_id`` (the caller checked the URL and the owner)."""
        with self._connection() as con:
            con.execute(
                "INSERT INTO endpoints VALUES (?, ?, ?, ?, ?) ON CONFLICT (model_id) DO UPDATE SET"
                " url = excluded.url, host = excluded.host, registered_at = excluded.registered_at",
                [model_id, team, url, host, _iso(datetime.now(UTC))],
            )

    def endpoints(self, team: str | None = None) -> list:
        """The registered endpoints (:class:`leaf_live.service.agents.Endpoint`), of one team or all."""
        from leaf_live.service.agents import Endpoint

        sql = "SELECT team, model_id, url, host FROM endpoints"
        with self._connection() as con:
            rows = con.execute(
                sql + (" WHERE team = ?" if team else "") + " ORDER BY model_id", [team] if team else []
            ).fetchall()
        return [Endpoint(*r) for r in rows]

    def claim_call(self, call) -> bool:
        """Claim a due call (:class:`leaf_live.service.agents.DueCall`) before making it; False when it was
        claimed already (made, or running, or interrupted by a restart: a call is never made twice)."""
        with self._connection() as con:
            cur = con.execute(
                "INSERT INTO agent_calls (call_id, team, model_id, round_id, track, slot_at,"
                " claimed_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'running')"
                " ON CONFLICT (call_id) DO NOTHING",
                [
                    call.call_id,
                    call.endpoint.team,
                    call.endpoint.model_id,
                    call.round_id,
                    call.track,
                    _iso(call.slot),
                    _iso(datetime.now(UTC)),
                ],
            )
            return cur.rowcount == 1

    def finish_call(
        self,
        call_id: str,
        *,
        completed_at: datetime,
        record: bytes,
        reason: str | None,
        table_name: str | None = None,
        invalid_rows: bytes | None = None,
        submission: tuple[Accepted, dict] | None = None,
    ) -> None:
        """Keep a finished call: ``valid`` with its accepted ``submission`` (stored with it, in the same
        transaction) or ``invalid`` with its ``reason`` and invalid forecast rows. ``record``: the Parquet of
        its ``llm_calls`` row. Raises :class:`DuplicateRows` (nothing stored) as :meth:`put` does."""
        with self._write() as con:
            # one transaction: the submission and the call's outcome, or neither
            rid = None
            if submission is not None:
                _put(con, *submission)
                rid = submission[0].receipt_id
            con.execute(
                "UPDATE agent_calls SET completed_at = ?, status = ?, reason = ?, receipt_id = ?,"
                " record = ?, table_name = ?, invalid_rows = ? WHERE call_id = ?",
                [
                    _iso(completed_at),
                    "valid" if submission is not None else "invalid",
                    reason,
                    rid,
                    record,
                    table_name,
                    invalid_rows,
                    call_id,
                ],
            )

    def pending_calls(self, limit: int = 1000) -> list[str]:
        """Finished agent calls not yet moved into the store, oldest first."""
        with self._connection() as con:
            rows = con.execute(
                "SELECT call_id FROM agent_calls WHERE stored_at IS NULL AND status <> 'running'"
                " ORDER BY completed_at, call_id LIMIT ?",
                [limit],
            ).fetchall()
        return [r[0] for r in rows]

    def running_calls(self) -> list[dict]:
        """Claimed agent calls not finished (running now, or interrupted by a stop of the service)."""
        with self._connection() as con:
            cur = con.execute("SELECT * FROM agent_calls WHERE status = 'running' ORDER BY claimed_at")
            names = [d[0] for d in cur.description]
            return [_row(names, r) for r in cur.fetchall()]

    def load_call(self, call_id: str) -> dict:
        """One agent call as a dict of its columns. Raises :class:`InboxError` for an unknown id."""
        with self._connection() as con:
            cur = con.execute("SELECT * FROM agent_calls WHERE call_id = ?", [call_id])
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        if row is None:
            raise InboxError(f"agent call {call_id!r}: not in the inbox")
        return _row(names, row)

    def mark_call_stored(self, call_id: str, at: datetime) -> None:
        with self._connection() as con:
            con.execute("UPDATE agent_calls SET stored_at = ? WHERE call_id = ?", [_iso(at), call_id])

    def source_of(self, receipt_id: str) -> str:
        """``agent`` for a submission that is an agent endpoint's answer, else ``service``."""
        with self._connection() as con:
            hit = con.execute("SELECT 1 FROM agent_calls WHERE receipt_id = ?", [receipt_id]).fetchone()
        return "service" if hit is None else "agent"

    # the round inputs last read from the store (leaf_live.service.rounds.publish_inputs): what the service
    # starts from while a writer holds the DuckDB file

    def put_round_inputs(self, frames: dict[str, bytes], read_at: datetime) -> bool:
        """Keep ``frames`` (``windows``, ``releases``, ``tasks``: Parquet bytes) read from the store at
        ``read_at`` unless the inbox holds a later read; True when kept."""
        with self._write() as con:
            cur = con.execute(
                "INSERT INTO round_inputs VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " read_at = excluded.read_at, windows = excluded.windows, releases = excluded.releases,"
                " tasks = excluded.tasks WHERE excluded.read_at > round_inputs.read_at",
                # a fixed-width UTC text: later reads compare greater as text on both backends
                [
                    read_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
                    frames["windows"],
                    frames["releases"],
                    frames["tasks"],
                ],
            )
            return cur.rowcount == 1

    def round_inputs(self) -> tuple[dict[str, bytes], datetime] | None:
        """The latest kept round inputs as (``{"windows", "releases", "tasks"}`` Parquet bytes, read time),
        or None when none was kept."""
        with self._connection() as con:
            cur = con.execute("SELECT read_at, windows, releases, tasks FROM round_inputs WHERE id = 1")
            row = cur.fetchone()
        if row is None:
            return None
        out = _row(("read_at", "windows", "releases", "tasks"), row)
        return {k: out[k] for k in ("windows", "releases", "tasks")}, datetime.fromisoformat(out["read_at"])

    def round_inputs_read_at(self) -> datetime | None:
        """When the kept round inputs were read from the store (None: none kept)."""
        with self._connection() as con:
            row = con.execute("SELECT read_at FROM round_inputs WHERE id = 1").fetchone()
        return None if row is None else datetime.fromisoformat(row[0])


class SqliteInbox(SqlInbox):
    """:class:`Inbox` on one SQLite file (the embedded default)."""

    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.timeout_s = timeout_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._d = _Sqlite(self.path, timeout_s)
        with self._connection() as con:
            self._d.schema(con)


class PostgresInbox(SqlInbox):
    """:class:`Inbox` in a PostgreSQL database (the production profile), given by a libpq URL
    (``postgresql://user@host:port/db``). Raises :class:`InboxError` when it cannot connect."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url
        self.location = _redact(url)
        self.path = self.location  # what the CLI prints
        self.timeout_s = timeout_s
        self._d = _Postgres(url, timeout_s)
        with self._connection() as con:
            self._d.schema(con)


_KEY_CHUNK = 500  # row keys per lookup (under SQLite's and PostgreSQL's parameter limits)


def _put(con, sub: Accepted, receipt: dict) -> None:
    """The inserts of one submission (the caller holds the write transaction). Raises :class:`DuplicateRows`
    for the first of its keys (in ``sub.keys`` order) another receipt of the model holds."""
    keys = list(sub.keys)
    held: dict[str, str] = {}
    for i in range(0, len(keys), _KEY_CHUNK):
        part = keys[i : i + _KEY_CHUNK]
        held.update(
            con.execute(
                "SELECT row_key, receipt_id FROM submission_keys WHERE track = ? AND model_id = ? AND row_key"
                f" IN ({', '.join('?' * len(part))})",
                [sub.track, sub.model_id, *part],
            ).fetchall()
        )
    for k in keys:
        if k in held:
            raise DuplicateRows(k, held[k])
    con.execute(
        "INSERT INTO submissions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL)",
        [
            sub.receipt_id,
            sub.team,
            sub.model_id,
            sub.track,
            sub.round_id,
            sub.content_hash,
            _iso(sub.received_at),
            _iso(sub.due_at),
            sub.board,
            sub.n_rows,
            sub.table_name,
            sub.producer,
            sub.partition_key,
            sub.rows,
            json.dumps(receipt, sort_keys=True),
        ],
    )
    con.executemany(
        "INSERT INTO submission_keys VALUES (?, ?, ?, ?)",
        [[sub.track, sub.model_id, k, sub.receipt_id] for k in sub.keys],
    )
