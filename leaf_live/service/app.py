"""The submission service (issue 21 item 2): an ASGI app (FastAPI; ``leaf-live serve`` runs it on uvicorn).

Endpoints (every error is one line of JSON: ``{"error": {"status", "field", "reason"[, "row"]}}``):

* ``GET /rounds``: the open rounds (:func:`leaf_live.service.rounds.list_rounds` at the server's clock);
* ``GET /rounds/{round_id}``: a round's frozen bundle (:func:`leaf_live.service.rounds.bundle_json`);
* ``GET /receipts/pubkey``: the receipts' public key (PEM);
* ``POST /submissions`` with ``Authorization: Bearer <token>`` and ``{"round_id", "model_id", "rows"}``:
  checked by :func:`leaf_live.service.intake.accept`, stored in the inbox with its signed receipt in one
  transaction, answered ``201`` with the receipt (``200`` with the same receipt for a replay of the same
  content). ``401`` no or a wrong token, ``403`` another team's model id, ``404`` an unknown round, ``409``
  a row another submission of the model holds, ``413`` a body over ``max_body`` bytes or over ``max_rows``
  rows, ``422`` a row the track's checks refuse, ``429`` over the per-token rate, or (any endpoint with a
  token) over ``auth_fail_burst`` wrong tokens from the client's address (refilled at ``auth_fail_per_s``);
* ``POST /endpoints`` with the token and ``{"model_id", "url"}``: register (or replace) the team's agent
  endpoint for one of its model ids (``422`` field ``url`` for a URL that
  :func:`leaf_live.service.agents.check_url` refuses or whose endpoint does not echo the ownership challenge,
  :func:`leaf_live.service.agents.verify_owner`); ``GET /endpoints``: the team's endpoints (URLs
  without query).

While it runs, a scheduler thread looks every ``agent_tick_s`` seconds for due agent-endpoint calls and makes
them on a thread pool (:func:`leaf_live.service.agents.run_due`): each answer lands in the inbox as a signed
submission or an invalid call, like a posted one.

The service reads the DuckDB store (windows, tasks, releases) only read-only and only when no writer holds
it (neither DuckDB's lock nor the leaf-live writer lock, which a run holds between its steps,
:func:`writer_active`), at start and then every ``refresh_s`` seconds; each read is kept in the inbox
(:func:`leaf_live.service.rounds.publish_inputs`), as every leaf-live writer keeps its own when it takes and
releases the database (:func:`leaf_live.commands.participation.writing`). While a writer holds the store the
service starts from, and refreshes to, the latest of those copies without touching the DuckDB file
(:func:`start_inputs`), and it writes only the inbox, so a long ``leaf-live run`` holding the database never
blocks a start or a submission.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from leaf_live.core import storage
from leaf_live.service import agents as A
from leaf_live.service import rounds as R
from leaf_live.service.agents import DEADLINE_S, MAX_ATTEMPTS
from leaf_live.service.inbox import DuplicateRows, Inbox
from leaf_live.service.intake import MAX_ROWS, Refused, accept, check_owner
from leaf_live.service.receipts import public_pem, receipt_of

MAX_BODY = 1 << 20  # bytes per request body
RATE_PER_S = 2.0  # sustained submissions per second per token
BURST = 40  # submissions a token may send at once
AUTH_FAIL_PER_S = 0.5  # sustained wrong-token requests per second per client address
AUTH_FAIL_BURST = 10  # wrong-token requests a client address may send at once


@dataclass
class ServiceConfig:
    db: Path
    inbox: Inbox
    key: object  # Ed25519PrivateKey
    max_body: int = MAX_BODY
    max_rows: int = MAX_ROWS
    rate_per_s: float = RATE_PER_S
    burst: int = BURST
    auth_fail_per_s: float = AUTH_FAIL_PER_S
    auth_fail_burst: int = AUTH_FAIL_BURST
    refresh_s: float = 300.0
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    agent_tick_s: float = 60.0  # how often due agent-endpoint calls are looked for (0: never)
    agent_deadline_s: float = DEADLINE_S
    agent_attempts: int = MAX_ATTEMPTS
    agent_workers: int = 16  # agent calls in flight at once
    allow_loopback_endpoints: bool = False  # tests only: http and loopback endpoints


class RateLimiter:
    """A token bucket per team: ``burst`` at once, refilled at ``rate_per_s``; thread-safe."""

    def __init__(self, rate_per_s: float, burst: int) -> None:
        self.rate, self.burst = rate_per_s, burst
        self._b: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, team: str) -> bool:
        now = time.monotonic()
        with self._lock:
            level, t = self._b.get(team, (float(self.burst), now))
            level = min(float(self.burst), level + (now - t) * self.rate)
            if level < 1.0:
                self._b[team] = (level, now)
                return False
            self._b[team] = (level - 1.0, now)
            return True

    def exhausted(self, key: str) -> bool:
        """True when ``key``'s bucket holds under one token now (nothing consumed)."""
        now = time.monotonic()
        with self._lock:
            level, t = self._b.get(key, (float(self.burst), now))
            return min(float(self.burst), level + (now - t) * self.rate) < 1.0


def _error(status: int, field: str, reason: str, row: int | None = None) -> JSONResponse:
    return JSONResponse(Refused(status, field, reason, row).body(), status_code=status)


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def create_app(cfg: ServiceConfig) -> FastAPI:
    """The app on ``cfg`` (module doc). Raises :class:`leaf_live.core.storage.StorageError` when the database
    cannot be read at start."""
    inputs0, read_at = start_inputs(cfg.db, cfg.inbox)
    state = {"inputs": inputs0, "read_at": read_at, "loaded": time.monotonic()}
    limiter = RateLimiter(cfg.rate_per_s, cfg.burst)
    # wrong tokens per client address: a guesser is slowed before any token is checked
    failed_auth = RateLimiter(cfg.auth_fail_per_s, cfg.auth_fail_burst)
    lock = threading.Lock()
    stop = threading.Event()

    def logged(fut) -> None:
        exc = fut.exception()
        if exc is not None:
            print(f"leaf-live serve: an agent call failed: {type(exc).__name__}: {exc}", flush=True)

    def scheduler() -> None:
        try:
            A.recover_interrupted(inputs(), cfg.inbox, cfg.clock())  # calls cut short by a stop
        except Exception as exc:
            print(f"leaf-live serve: interrupted agent calls: {type(exc).__name__}: {exc}", flush=True)
        with ThreadPoolExecutor(cfg.agent_workers, thread_name_prefix="agent-call") as pool:
            while not stop.wait(cfg.agent_tick_s):
                try:
                    futures = A.run_due(
                        inputs(),
                        cfg.inbox,
                        cfg.key,
                        cfg.clock(),
                        pool=pool,
                        deadline_s=cfg.agent_deadline_s,
                        max_attempts=cfg.agent_attempts,
                        allow_loopback=cfg.allow_loopback_endpoints,
                        clock=cfg.clock,
                    )
                    for f in futures:
                        f.add_done_callback(logged)
                except Exception as exc:  # keep calling next tick; the service keeps answering
                    print(f"leaf-live serve: agent calls: {type(exc).__name__}: {exc}", flush=True)

    @asynccontextmanager
    async def lifespan(_app):
        t = None
        if cfg.agent_tick_s > 0:
            t = threading.Thread(target=scheduler, name="agent-scheduler", daemon=True)
            t.start()
        yield
        stop.set()

    app = FastAPI(title="leaf_live submissions", docs_url=None, redoc_url=None, lifespan=lifespan)

    async def team_of(request: Request) -> str | JSONResponse:
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return _error(401, "authorization", "missing: send Authorization: Bearer <token>")
        client = request.client.host if request.client else "?"
        if failed_auth.exhausted(client):
            return _error(
                429,
                "authorization",
                f"too many wrong tokens from {client}: at most {cfg.auth_fail_burst} at once, "
                f"{cfg.auth_fail_per_s:g}/s",
            )
        team = await run_in_threadpool(cfg.inbox.authenticate, auth[7:].strip())
        if team is None:
            failed_auth.allow(client)
            return _error(401, "authorization", "unknown or wrong token")
        return team

    def inputs() -> R.RoundInputs:
        if time.monotonic() - state["loaded"] > cfg.refresh_s and lock.acquire(blocking=False):
            try:
                state["inputs"], state["read_at"] = refreshed_inputs(
                    cfg.db, cfg.inbox, state["inputs"], state["read_at"]
                )
            finally:
                state["loaded"] = time.monotonic()
                lock.release()
        return state["inputs"]

    @app.get("/health")
    def health() -> dict:
        return {"ok": True, "time": _iso(cfg.clock()), "rounds_read_at": _iso(state["read_at"])}

    @app.get("/rounds")
    def rounds() -> dict:
        at = cfg.clock()
        frame = R.list_rounds(inputs(), at)
        return {"as_of": _iso(at), "rounds": R.rows_json(frame)}

    @app.get("/rounds/{round_id:path}")
    def one_round(round_id: str):
        at = cfg.clock()
        try:
            meta, frames = R.round_bundle(inputs(), round_id, at)
        except R.RoundError as exc:
            return _error(404, "round_id", str(exc))
        return R.bundle_json(meta, frames)

    @app.get("/receipts/pubkey")
    def pubkey() -> PlainTextResponse:
        return PlainTextResponse(public_pem(cfg.key))

    @app.post("/submissions")
    async def submit(request: Request):
        team = await team_of(request)
        if isinstance(team, JSONResponse):
            return team
        if not limiter.allow(team):
            return _error(
                429, "authorization", f"rate limit: at most {cfg.burst} at once, {cfg.rate_per_s:g}/s"
            )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cfg.max_body:
            return _error(413, "body", f"{declared} bytes: at most {cfg.max_body}")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > cfg.max_body:
                return _error(413, "body", f"over {cfg.max_body} bytes")
        # the server's clock once the LAST byte has arrived: a body held open past the due time (headers
        # sent early, the forecast after the outcome) is received when it is complete, never earlier
        received_at = cfg.clock()
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, "body", f"not JSON ({exc.msg if hasattr(exc, 'msg') else exc})")
        try:  # JSON may escape a lone surrogate (\ud800) that no UTF-8 text, hash or table can hold
            json.dumps(payload, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            return _error(400, "body", f"text holds a lone surrogate ({exc.object[exc.start : exc.end]!a})")
        return await run_in_threadpool(_accept_and_sign, cfg, inputs(), team, payload, received_at)

    @app.post("/endpoints")
    async def register(request: Request):
        team = await team_of(request)
        if isinstance(team, JSONResponse):
            return team
        body = await request.body()
        if len(body) > 10_000:
            return _error(413, "body", f"{len(body)} bytes: at most 10000")
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "body", 'not JSON: send {"model_id", "url"}')
        if not isinstance(payload, dict) or set(payload) != {"model_id", "url"}:
            return _error(422, "body", 'expected exactly {"model_id", "url"}')
        return await run_in_threadpool(_register, cfg, team, payload)

    @app.get("/endpoints")
    async def endpoints(request: Request):
        team = await team_of(request)
        if isinstance(team, JSONResponse):
            return team
        es = await run_in_threadpool(cfg.inbox.endpoints, team)
        return {"endpoints": [{"model_id": e.model_id, "url": A.safe_url(e.url), "host": e.host} for e in es]}

    return app


def _register(cfg: ServiceConfig, team: str, payload: dict):
    try:
        check_owner(team, payload["model_id"])
    except Refused as r:
        return JSONResponse(r.body(), status_code=r.status)
    try:
        A.check_url(payload["url"], allow_loopback=cfg.allow_loopback_endpoints)
        A.verify_owner(payload["url"], team, payload["model_id"], allow_loopback=cfg.allow_loopback_endpoints)
    except A.EndpointError as exc:
        return _error(422, "url", str(exc))
    host = urlsplit(payload["url"]).hostname
    cfg.inbox.set_endpoint(team, payload["model_id"], payload["url"], host)
    return JSONResponse(
        {"model_id": payload["model_id"], "url": A.safe_url(payload["url"]), "host": host}, status_code=201
    )


def _accept_and_sign(cfg: ServiceConfig, inputs: R.RoundInputs, team: str, payload, received_at: datetime):
    try:
        sub = accept(inputs, team, payload, received_at, max_rows=cfg.max_rows)
    except Refused as r:
        return JSONResponse(r.body(), status_code=r.status)
    old = cfg.inbox.receipt_for(team, sub.content_hash)
    if old is not None:
        return JSONResponse(old, status_code=200)
    receipt = receipt_of(cfg.key, sub)
    try:
        cfg.inbox.put(sub, receipt)
    except DuplicateRows as exc:
        again = cfg.inbox.receipt_for(team, sub.content_hash)
        if again is not None:  # a concurrent replay won the race
            return JSONResponse(again, status_code=200)
        return _error(409, "rows", f"{exc}: one forecast per key and model")
    except Exception as exc:  # the unique (team, content_hash) of a concurrent replay
        again = cfg.inbox.receipt_for(team, sub.content_hash)
        if again is not None:
            return JSONResponse(again, status_code=200)
        raise exc
    return JSONResponse(receipt, status_code=201)


def writer_active(db: Path) -> bool:
    """A leaf-live writer (``run``, ``rescore``, ``submit``, ``inbox drain``) holds ``db``: its writer lock
    file (``<db>.lock``, :func:`leaf_live.core.storage.writer_lock`) names a live process. Read only, never
    taken, so the service cannot make a writer fail to start."""
    return storage.writer_holder(db) is not None


def _load(db: Path, wait_s: float) -> R.RoundInputs:
    con = storage.connect_read_only(db, wait_s=wait_s)
    try:
        return R.load_inputs(con)
    finally:
        con.close()


def read_and_publish(db: Path, inbox: Inbox, wait_s: float = 0.0) -> tuple[R.RoundInputs, datetime]:
    """Read the round inputs from the store read-only (retrying ``wait_s`` s while DuckDB's lock is held)
    and keep them in the inbox; returns them with the read time (UTC, taken before the read). Raises
    :class:`leaf_live.core.storage.StorageError` (:class:`~leaf_live.core.storage.DatabaseLockedError` when a
    process holds the file)."""
    read_at = datetime.now(UTC)
    inputs = _load(db, wait_s)
    R.publish_inputs(inbox, inputs, read_at)
    return inputs, read_at


def start_inputs(db: Path, inbox: Inbox) -> tuple[R.RoundInputs, datetime]:
    """The round inputs a service starts from, with the time they were read from the store: while a leaf-live
    writer holds ``db`` (:func:`writer_active`) the copy kept in the inbox, the DuckDB file untouched (a
    read-only open between a run's steps could fail its next one); otherwise a fresh read (kept in the inbox),
    falling back to the kept copy at once when DuckDB's lock is held. Only with no kept copy at all does it
    wait for the file (30 s). Raises :class:`leaf_live.core.storage.StorageError` when nothing can be read."""
    kept = R.published_inputs(inbox)
    if kept is not None and writer_active(db):
        return kept
    try:
        return read_and_publish(db, inbox, wait_s=0.0 if kept is not None else 30.0)
    except storage.DatabaseLockedError:
        if kept is None:
            raise
        return kept


def refreshed_inputs(
    db: Path, inbox: Inbox, inputs: R.RoundInputs, read_at: datetime
) -> tuple[R.RoundInputs, datetime]:
    """The newest round inputs available without waiting: a fresh read when no writer holds ``db``, else the
    inbox's kept copy when it was read after ``read_at``, else ``inputs`` unchanged."""
    if not writer_active(db):
        try:
            return read_and_publish(db, inbox)
        except storage.StorageError:
            pass  # DuckDB's lock is held (a step of a Dagster run): the inbox's copy, if newer
    try:
        at = inbox.round_inputs_read_at()
        if at is not None and at > read_at:
            kept = R.published_inputs(inbox)
            if kept is not None:
                return kept
    except Exception as exc:  # an unreachable inbox: keep serving the rounds already read
        print(f"leaf-live serve: kept round inputs: {type(exc).__name__}: {exc}", flush=True)
    return inputs, read_at
