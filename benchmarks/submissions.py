"""Load on the submission service while a writer holds the DuckDB database (issue 21 "What it must show").

Starts ``leaf-live serve`` on 127.0.0.1 over a small store (tests/service/store_fixture.py), then a child
process that holds the database the way ``leaf-live run`` does (the writer lock and a read-write DuckDB
connection, writing every 50 ms), then ``--clients`` concurrent clients (one team each) that each send
``--per-client`` submissions of one cpi nowcast to the open round, plus one replay of their first
submission and one refused submission (a value outside the guardrail). When the load is done the writer
stops, the inbox is drained into the store (``leaf-live inbox drain``) and the store is checked: the
service rows are exactly the rows of the acknowledged receipts, each once (the replay is no second row, the
refused submission no row). Prints p50 / p95 latency and throughput of the accepted submissions.

Bounded: loopback only; every request times out after 30 s and the whole load after ``--max-seconds``
(default 120); the service and the writer are stopped at the end in every case.

    .venv/bin/python benchmarks/submissions.py [--clients 50] [--per-client 20]

With ``--store data/leaf_live.duckdb --round macro/cpi/2026-03-01 --writer '.venv/bin/leaf-live rescore --db
{db}'`` the load goes to a copy of a full store while a real ``leaf-live rescore`` (Dagster runs of the
scoring jobs) holds that copy; a round closed at today's clock takes the load as retrospective submissions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "service"))  # the small store and the service starter of the tests

import duckdb  # noqa: E402
import httpx  # noqa: E402
from store_fixture import OPEN, free_port, make_store, start_service  # noqa: E402

from leaf_live.core.settings import get_settings  # noqa: E402
from leaf_live.service.app import writer_active  # noqa: E402
from leaf_live.service.inbox import inbox_location, open_inbox  # noqa: E402

ROUND = f"macro/{OPEN[0]}/{OPEN[1].isoformat()}"

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from leaf_live.core import storage
    db, stop = Path(sys.argv[1]), Path(sys.argv[2])
    with storage.writer_lock(db):
        con = storage.connect(db)
        con.execute("CREATE TABLE IF NOT EXISTS bench_writer (t TIMESTAMPTZ)")
        print("holding", flush=True)
        while not stop.exists():
            con.execute("INSERT INTO bench_writer VALUES (now())")
            time.sleep(0.05)
        con.close()
    """
)


@dataclass
class Target:
    """The macro round the clients submit to: its id, indicator, period, unit, a valid value, one the
    guardrail refuses, and the latest issue hour (the clients go back one hour per submission)."""

    round_id: str
    indicator_id: str
    period: str
    unit: str
    value: float
    bad: float
    last_hour: datetime
    first_hour: datetime


def _target(db: Path, round_id: str) -> Target:
    from leaf_live.core import storage
    from leaf_live.macro.catalog import get_indicator
    from leaf_live.service.rounds import find_round, load_inputs

    con = storage.connect_read_only(db)
    try:
        inputs = load_inputs(con)
    finally:
        con.close()
    r = find_round(inputs, round_id)
    if r.track != "macro":
        raise RuntimeError(f"--round {round_id}: give a macro round")
    rel = inputs.releases.filter(inputs.releases["indicator_id"] == r.indicator_id)["actual"].drop_nulls()
    value = float(rel[-1]) if len(rel) else 2.5
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    last = min(now, r.due_at - timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
    return Target(
        round_id,
        r.indicator_id,
        r.reference_period.isoformat(),
        get_indicator(r.indicator_id).unit,
        value,
        abs(value) * 1000 + 1000,
        last,
        r.opens_at,
    )


def _row(t: Target, hour: datetime, value: float) -> dict:
    return {
        "indicator_id": t.indicator_id,
        "reference_period": t.period,
        "issued_at": hour.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "value": value,
        "unit": t.unit,
    }


async def _client(url: str, team: str, token: str, n: int, t: Target, out: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    now = t.last_hour
    async with httpx.AsyncClient(timeout=30) as c:
        first = None
        for j in range(n):
            body = {
                "round_id": t.round_id,
                "model_id": f"external/{team}/m",
                "rows": [_row(t, now - timedelta(hours=j), t.value)],
            }
            first = first or body
            t0 = time.perf_counter()
            r = await c.post(url, content=json.dumps(body), headers=headers)
            out["latency"].append(time.perf_counter() - t0)
            if r.status_code == 201:
                out["receipts"].append(r.json())
            else:
                out["errors"].append(f"{team} #{j}: {r.status_code} {r.text[:200]}")
        replay = await c.post(url, content=json.dumps(first), headers=headers)
        out["replays"].append(replay.status_code == 200 and replay.json() == out_first(out, team))
        bad = {**first, "rows": [_row(t, now - timedelta(hours=n + 1), t.bad)]}
        refused = await c.post(url, content=json.dumps(bad), headers=headers)
        out["refused"].append(refused.status_code)


def out_first(out: dict, team: str) -> dict | None:
    mine = [r for r in out["receipts"] if r["team"] == team]
    return mine[0] if mine else None


def _held(db: Path, duckdb_probe: bool = True) -> bool:
    """A writer holds ``db``: the leaf-live writer lock (``<db>.lock`` names a live PID; read, never taken,
    so the probe cannot make the writer fail) or (``duckdb_probe``, the synthetic writer only: a read-only
    open would make a real run's next step fail) a read-write DuckDB connection."""
    if writer_active(db):
        return True
    if not duckdb_probe:
        return False
    try:  # a read-write DuckDB connection elsewhere locks the file against every other process
        duckdb.connect(str(db), read_only=True).close()
        return False
    except duckdb.IOException:
        return True


def run(
    clients: int = 50,
    per_client: int = 20,
    max_seconds: float = 120.0,
    workdir: Path | None = None,
    store: Path | None = None,
    round_id: str = ROUND,
    writer_command: str | None = None,
) -> dict:
    """Run the load (module doc); returns the numbers and the store check (``exact``: the stored rows of the
    load's models are exactly the acknowledged receipts' rows, each once). ``store``: a copy of this store
    instead of the small one (``round_id`` a macro round of it; before its close at today's clock the rows
    are live, after it retrospective); ``writer_command``: the writer, e.g. ``.venv/bin/leaf-live rescore --db
    {db}`` (``{db}`` = the copy), instead of the synthetic one. Raises :class:`RuntimeError` when the service
    does not start, the writer does not take the database, or the load passes ``max_seconds``."""
    tmp = tempfile.TemporaryDirectory() if workdir is None else None
    d = Path(tmp.name) if tmp else workdir
    db = d / "db.duckdb"
    if store is None:
        make_store(db)
    else:
        shutil.copyfile(store, db)
    target = _target(db, round_id)
    if target.last_hour - timedelta(hours=per_client + 1) < target.first_hour:
        raise RuntimeError(f"round {round_id}: its window has fewer than {per_client + 2} issue hours")
    inbox = open_inbox(inbox_location(db, get_settings().inbox))  # LEAF_LIVE_INBOX, else beside db
    tokens = {f"t{k:02d}": inbox.add_team(f"t{k:02d}") for k in range(clients)}
    port = free_port()
    service = start_service(db, port, "--agent-tick", "0")
    stop = d / "writer.stop"
    if writer_command is None:
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(stop)],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    else:
        log = (d / "writer.log").open("w")
        writer = subprocess.Popen(
            shlex.split(writer_command.format(db=db)), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        if writer_command is None:
            if writer.stdout.readline().decode().strip() != "holding":
                raise RuntimeError("the writer did not take the database")
        else:
            deadline = time.monotonic() + 120
            while not _held(db, False) and time.monotonic() < deadline and writer.poll() is None:
                time.sleep(0.1)
        held = _held(db, writer_command is None)
        if not held:
            tail = (d / "writer.log").read_text()[-500:] if writer_command else ""
            raise RuntimeError(f"the writer did not take the database {tail}")
        out: dict = {"latency": [], "receipts": [], "errors": [], "replays": [], "refused": []}
        url = f"http://127.0.0.1:{port}/submissions"

        async def load() -> float:
            t0 = time.perf_counter()
            await asyncio.wait_for(
                asyncio.gather(*(_client(url, t, tok, per_client, target, out) for t, tok in tokens.items())),
                max_seconds,
            )
            return time.perf_counter() - t0

        try:
            wall = asyncio.run(load())
        except TimeoutError:
            raise RuntimeError(f"the load passed {max_seconds} s") from None
        writer_alive = writer.poll() is None and _held(db, writer_command is None)
    finally:
        stop.touch()
        writer.wait(timeout=60 if writer_command is None else 900)
        service.kill()
        service.wait()
    drained = subprocess.run(
        [sys.executable, "-m", "leaf_live.cli", "inbox", "drain", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    con = duckdb.connect(str(db), read_only=True)
    try:
        mine = "n.model_id IN (SELECT unnest(?))"
        models = [f"external/{t}/m" for t in tokens]
        stored = con.execute(
            "SELECT r.receipt_id, count(*), any_value(r.n_rows) FROM nowcasts n JOIN external_receipts r"
            f" ON r.producer = n.producer AND r.slice_key = n.partition_key WHERE {mine} GROUP BY 1",
            [models],
        ).fetchall()
        service_rows = con.execute(f"SELECT count(*) FROM nowcasts n WHERE {mine}", [models]).fetchone()[0]
        bad_rows = con.execute(
            f"SELECT count(*) FROM nowcasts n WHERE {mine} AND value = ?", [models, target.bad]
        ).fetchone()[0]
        writes = (
            con.execute("SELECT count(*) FROM bench_writer").fetchone()[0] if writer_command is None else None
        )
        boards = sorted({r["board"] for r in out["receipts"]})
    finally:
        con.close()
    if tmp:
        tmp.cleanup()
    acked = {r["receipt_id"]: r["n_rows"] for r in out["receipts"]}
    got = {rid: n for rid, n, _ in stored}
    lat = sorted(out["latency"])

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return {
        "clients": clients,
        "per_client": per_client,
        "sent": len(lat),
        "acknowledged": len(acked),
        "errors": out["errors"],
        "replays_same_receipt": sum(out["replays"]),
        "refused_statuses": sorted(set(out["refused"])),
        "p50_ms": 1000 * q(0.50),
        "p95_ms": 1000 * q(0.95),
        "throughput_per_s": len(lat) / wall,
        "wall_s": wall,
        "writer_held_db": held and writer_alive,
        "writer_writes": writes,
        "writer": writer_command or "synthetic (writer lock + read-write connection, a write every 50 ms)",
        "writer_rc": writer.returncode,
        "boards": boards,
        "drained": drained,
        "stored_receipts": len(got),
        "stored_rows": service_rows,
        "exact": got == acked and service_rows == sum(acked.values()) and bad_rows == 0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--per-client", type=int, default=20)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--store", type=Path, help="load a copy of this DuckDB store instead of the small one")
    ap.add_argument("--round", default=ROUND, help=f"macro round to submit to (default {ROUND})")
    ap.add_argument(
        "--writer", help="writer command, {db} = the copy (e.g. '.venv/bin/leaf-live rescore --db {db}')"
    )
    a = ap.parse_args(argv)
    r = run(a.clients, a.per_client, a.max_seconds, store=a.store, round_id=a.round, writer_command=a.writer)
    print(
        f"{r['clients']} clients x {r['per_client']} submissions on loopback while a writer held the database"
        f" (writer: {r['writer']}; {r['writer_writes']} writes; held through the load: {r['writer_held_db']};"
        f" writer exit {r['writer_rc']})"
    )
    print(
        f"sent {r['sent']}, acknowledged {r['acknowledged']} in {r['wall_s']:.1f} s:"
        f" {r['throughput_per_s']:.0f} submissions/s, latency p50 {r['p50_ms']:.1f} ms,"
        f" p95 {r['p95_ms']:.1f} ms"
    )
    print(
        f"replays answered with the first receipt: {r['replays_same_receipt']}/{r['clients']}; refused bad"
        f" submissions: HTTP {r['refused_statuses']}; boards of the receipts: {r['boards']}"
    )
    print(f"{r['drained']}")
    print(
        f"store: {r['stored_receipts']} receipts, {r['stored_rows']} service rows; every acknowledged"
        f" receipt's rows exactly once and nothing else: {r['exact']}"
    )
    for e in r["errors"][:5]:
        print("error:", e)
    return 0 if r["exact"] and not r["errors"] and r["writer_held_db"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
