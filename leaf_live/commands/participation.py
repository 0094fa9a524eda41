"""Live participation commands (issue 21): ``leaf-live rounds``, ``leaf-live rounds export ROUND DIR``,
``leaf-live teams add NAME``, ``leaf-live serve``, ``leaf-live receipts pubkey`` and
``leaf-live receipts verify FILE``; ``leaf-live inbox drain`` moves accepted submissions into the store
(what the Dagster sensor does in a running service). docs/submitting.md walks through them.

Files beside the database ``DB``: the inbox ``DB.inbox.sqlite`` (unless ``LEAF_LIVE_INBOX`` names another:
a PostgreSQL URL in the production profile) and the receipts' signing key ``DB.receipt_key.pem`` (created
at the first ``serve`` or ``receipts pubkey``, mode 0600; ``--key`` puts it elsewhere)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import leaf_live.core.participation  # noqa: F401  (registers external_receipts after the tracks' tables)
from leaf_live.commands.common import CommandError, db_path, read_only, render
from leaf_live.core.settings import get_settings, parse_clock, read_clock_file


@contextmanager
def writing(db: Path) -> Iterator[Path]:
    """Hold the leaf-live writer lock of ``db`` (:func:`leaf_live.core.storage.writer_lock`) and keep the
    store's round inputs in its inbox when the lock is taken and again when it is released
    (:func:`publish_rounds`), so a submission service started meanwhile finds its rounds without opening the
    held file. Raises what ``writer_lock`` raises."""
    from leaf_live.core import storage

    with storage.writer_lock(db) as p:
        publish_rounds(db)
        try:
            yield p
        finally:
            publish_rounds(db)


def publish_rounds(db: Path) -> bool:
    """Read the round inputs of ``db`` (the caller holds its writer lock) and keep them in its inbox
    (:func:`leaf_live.service.rounds.publish_inputs`) when the inbox exists (``LEAF_LIVE_INBOX`` set, or the
    file beside ``db``: a store without one has no service to serve). Never fails the writer: a store or inbox
    that cannot be read or written is one line on stderr, and False."""
    from leaf_live.core import storage
    from leaf_live.service.app import read_and_publish
    from leaf_live.service.inbox import inbox_location, open_inbox

    where = inbox_location(db, get_settings().inbox)
    if not str(where).startswith(("postgresql://", "postgres://")) and not Path(where).is_file():
        return False
    if not Path(db).is_file():
        return False
    try:
        read_and_publish(storage.real_path(db), open_inbox(where), wait_s=5.0)
        return True
    except Exception as exc:  # the rounds copy is a convenience for the service; the writer's work goes on
        print(f"leaf-live: round inputs not kept in the inbox: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def key_path(db: Path, arg: str | None) -> Path:
    return Path(arg) if arg else db.with_name(db.name + ".receipt_key.pem")


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "rounds", help="list the open rounds, or `rounds export ROUND DIR` to write one's bundle"
    )
    r.add_argument(
        "words", nargs="*", metavar="export ROUND DIR", help="export ROUND DIR: write JSON + Parquet"
    )
    r.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    r.add_argument("--at", help="instant, ISO 8601 with a zone (default LEAF_LIVE_CLOCK[_FILE] or now)")
    r.add_argument("--format", choices=("table", "json"), default="table")
    r.set_defaults(func=cmd_rounds)
    t = sub.add_parser(
        "teams",
        help="`teams add NAME`: register a team and print its token once; `teams endpoint NAME MODEL_ID URL`:"
        " register the team's agent endpoint for a model id",
    )
    t.add_argument("action", choices=("add", "endpoint"))
    t.add_argument("name", help="team name: 1-32 lower-case letters, digits or '-'")
    t.add_argument(
        "endpoint", nargs="*", metavar="MODEL_ID URL", help="endpoint: external/NAME/<name> https://..."
    )
    t.add_argument("--test-allow-loopback-endpoints", action="store_true", help=argparse.SUPPRESS)
    t.add_argument(
        "--db",
        help="DuckDB file (default LEAF_LIVE_DB): the inbox lives beside it unless LEAF_LIVE_INBOX is set",
    )
    t.set_defaults(func=cmd_teams)
    s = sub.add_parser("serve", help="run the submission service (FastAPI on uvicorn)")
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    s.add_argument("--key", help="Ed25519 signing key file (default DB.receipt_key.pem)")
    s.add_argument("--max-body", type=int, help="largest request body in bytes (default 1 MiB)")
    s.add_argument("--max-rows", type=int, help="most rows per submission (default 2000)")
    s.add_argument("--rate", type=float, help="submissions per second per token, sustained (default 2)")
    s.add_argument("--burst", type=int, help="submissions per token at once (default 40)")
    s.add_argument(
        "--agent-tick",
        type=float,
        help="seconds between looks for due agent-endpoint calls (default 60; 0: off)",
    )
    s.add_argument(
        "--agent-deadline",
        type=float,
        help="seconds per agent-endpoint call, retries included (default 3600)",
    )
    s.add_argument("--agent-attempts", type=int, help="attempts per agent-endpoint call (default 3)")
    # tests only: lets agent endpoints be http://127.0.0.1 (loopback); never in production
    s.add_argument("--test-allow-loopback-endpoints", action="store_true", help=argparse.SUPPRESS)
    s.set_defaults(func=cmd_serve)
    k = sub.add_parser("receipts", help="`receipts pubkey` prints the public key; `receipts verify FILE`")
    k.add_argument("action", choices=("pubkey", "verify"))
    k.add_argument("file", nargs="?", help="receipt JSON file (verify)")
    k.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB): locates the key")
    k.add_argument("--key", help="signing key file (default DB.receipt_key.pem)")
    k.add_argument("--pubkey", help="verify against this published public key (PEM file)")
    k.set_defaults(func=cmd_receipts)
    i = sub.add_parser("inbox", help="`inbox drain`: store the accepted submissions (the sensor's step)")
    i.add_argument("action", choices=("drain", "list"))
    i.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    i.set_defaults(func=cmd_inbox)


def _at(arg: str | None) -> datetime:
    if arg:
        t = parse_clock(arg, name="--at")
        return t
    s = get_settings()
    if s.clock_file is not None:
        return read_clock_file(s.clock_file)
    return s.clock or datetime.now(UTC)


def cmd_rounds(args: argparse.Namespace) -> int:
    from leaf_live.service import rounds as R

    db = db_path(args.db)
    at = _at(args.at)
    if args.words and (args.words[0] != "export" or len(args.words) != 3):
        raise CommandError(f"rounds {' '.join(args.words)}: expected `rounds` or `rounds export ROUND DIR`")
    con = read_only(db)
    try:
        inputs = R.load_inputs(con)
    finally:
        con.close()
    try:
        if not args.words:
            frame = R.list_rounds(inputs, at)
            if args.format == "json":
                print(json.dumps({"as_of": at.isoformat(), "rounds": R.rows_json(frame)}, indent=1))
            else:
                print(f"open rounds at {at:%Y-%m-%dT%H:%M:%SZ}: {frame.height}")
                print(render(frame, "table"))
            return 0
        _, round_id, out = args.words
        meta, frames = R.round_bundle(inputs, round_id, at)
    except R.RoundError as exc:
        raise CommandError(str(exc)) from None
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise CommandError(f"{out_dir}: not a directory")
    paths = R.export_round(meta, frames, out_dir)
    rows = ", ".join(f"{n} {f.height} rows" for n, f in frames.items())
    print(f"round {round_id} (due {meta['due_at']}): {rows} -> {', '.join(str(p) for p in paths)}")
    return 0


def _inbox(db: Path):
    from leaf_live.core.settings import get_settings
    from leaf_live.service.inbox import InboxError, inbox_location, open_inbox

    try:
        return open_inbox(inbox_location(db, get_settings().inbox))
    except (InboxError, OSError) as exc:
        raise CommandError(str(exc)) from None


def cmd_teams(args: argparse.Namespace) -> int:
    from leaf_live.service.inbox import InboxError

    db = db_path(args.db)
    if args.action == "endpoint":
        return _register_endpoint(db, args)
    if args.endpoint:
        raise CommandError(f"teams add {args.name}: unexpected {' '.join(args.endpoint)!r}")
    try:
        token = _inbox(db).add_team(args.name)
    except InboxError as exc:
        raise CommandError(str(exc)) from None
    print(token)
    print(
        f"team {args.name}: token above, shown once (only a salted hash is kept); model ids"
        f" external/{args.name}/<name>"
    )
    return 0


def _register_endpoint(db: Path, args: argparse.Namespace) -> int:
    from urllib.parse import urlsplit

    from leaf_live.service.agents import EndpointError, check_url, safe_url, verify_owner
    from leaf_live.service.intake import Refused, check_owner

    if len(args.endpoint) != 2:
        raise CommandError(
            f"teams endpoint {args.name}: give MODEL_ID URL (external/{args.name}/<name> https://...)"
        )
    model_id, url = args.endpoint
    inbox = _inbox(db)
    if args.name not in {e for e in inbox.teams()}:
        raise CommandError(f"team {args.name!r}: not registered (`leaf-live teams add {args.name}`)")
    try:
        check_owner(args.name, model_id)
        addrs = check_url(url, allow_loopback=args.test_allow_loopback_endpoints)
        verify_owner(url, args.name, model_id, allow_loopback=args.test_allow_loopback_endpoints)
    except Refused as r:
        raise CommandError(f"{r.field} {model_id!r}: {r.reason}") from None
    except EndpointError as exc:
        raise CommandError(str(exc)) from None
    inbox.set_endpoint(args.name, model_id, url, urlsplit(url).hostname)
    print(f"{model_id}: endpoint {safe_url(url)} ({', '.join(addrs)}) registered; `leaf-live serve` calls it")
    return 0


def _key(db: Path, arg: str | None):
    from leaf_live.service.receipts import ReceiptError, load_or_create_key

    try:
        return load_or_create_key(key_path(db, arg))
    except (ReceiptError, OSError) as exc:
        raise CommandError(str(exc)) from None


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from leaf_live.service.app import ServiceConfig, create_app

    db = db_path(args.db)
    if not db.is_file():
        raise CommandError(f"--db {db}: no database file (run `leaf-live run` first)")
    cfg = ServiceConfig(db=db, inbox=_inbox(db), key=_key(db, args.key))
    for name, attr in (
        ("max_body", "max_body"),
        ("max_rows", "max_rows"),
        ("rate", "rate_per_s"),
        ("burst", "burst"),
        ("agent_tick", "agent_tick_s"),
        ("agent_deadline", "agent_deadline_s"),
        ("agent_attempts", "agent_attempts"),
    ):
        v = getattr(args, name)
        if v is not None:
            if v < 0 or (v == 0 and name != "agent_tick"):
                raise CommandError(f"--{name.replace('_', '-')} {v}: must be positive")
            setattr(cfg, attr, v)
    cfg.allow_loopback_endpoints = args.test_allow_loopback_endpoints
    app = create_app(cfg)
    sock = _listen(args.host, args.port)  # bound before the "serving" line: a busy port is one error line
    print(f"leaf-live serve: http://{args.host}:{args.port} on {db} (inbox {cfg.inbox.location})", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (uvicorn serves on it); :class:`CommandError` naming the
    address and the reason (e.g. address already in use) when it cannot be bound."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CommandError(f"--host {host}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CommandError(f"--port {port}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def cmd_receipts(args: argparse.Namespace) -> int:
    from leaf_live.service.receipts import (
        ReceiptError,
        load_public_pem,
        public_pem,
        read_receipt,
        verify_receipt,
    )

    db = db_path(args.db)
    if args.action == "pubkey":
        print(public_pem(_key(db, args.key)), end="")
        return 0
    if not args.file:
        raise CommandError("receipts verify: give the receipt FILE")
    try:
        if args.pubkey:
            pub = load_public_pem(Path(args.pubkey).read_bytes())
        else:
            pub = _key(db, args.key).public_key()
        receipt = read_receipt(Path(args.file))
        verify_receipt(pub, receipt)
    except (ReceiptError, OSError) as exc:
        raise CommandError(f"{args.file}: {exc}") from None
    print(
        f"{args.file}: valid receipt {receipt['receipt_id']}: {receipt['model_id']} (team {receipt['team']}),"
        f" round {receipt['round_id']}, received {receipt['received_at']}, {receipt['n_rows']} rows,"
        f" board {receipt['board']}"
    )
    return 0


def cmd_inbox(args: argparse.Namespace) -> int:
    from leaf_live.core import storage
    from leaf_live.service.store import drain

    db = db_path(args.db)
    inbox = _inbox(db)
    if args.action == "list":
        for r in inbox.receipts():
            print(json.dumps(r, sort_keys=True))
        return 0
    with writing(db):
        con = storage.connect(db)
        try:
            done = drain(con, inbox)
        finally:
            con.close()
    calls = sum(1 for k in done if k.startswith("agent-"))
    print(
        f"stored {len(done) - calls} submissions and {calls} agent calls ({sum(done.values())} rows) from"
        f" {inbox.location} into {db}"
    )
    return 0
