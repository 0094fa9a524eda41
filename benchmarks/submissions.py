"""Load on the submission service while a writer holds the DuckDB database (issue 21 "What it must show").

Over a small store (tests/service/store_fixture.py) a child process first takes the database the way
``leaf-live run`` does (the leaf-live writer lock for the whole command, through
:func:`leaf_live.commands.participation.writing`, and a read-write DuckDB connection per step, opened with no
wait), and while it holds it runs what the Dagster daemon runs for submissions: ``submissions_sensor``
evaluations and a real Dagster run of ``leaf_live_store_submission`` per requested partition
(tests/service/store_fixture.py ``WRITER``). Only then is ``leaf-live serve`` started on 127.0.0.1 (its
rounds come from the copy the writer kept in the inbox), and ``--clients`` concurrent clients (one team
each; the even ones on the open macro round, the odd ones on the event round) each send ``--per-client``
submissions, plus one replay of their first submission and one refused submission (a macro value outside the
guardrail, an event probability given as a percentage). When the load is done the writer keeps pumping until
the inbox is empty, then releases the database, and the store is checked: the service rows are exactly the
rows of the acknowledged receipts, each once (the replay is no second row, the refused submission no row),
and the writer never failed to open the database (the service never held it). Prints p50 / p95 latency and
throughput, the CPU seconds of the service and of the clients beside the wall time, and the load average.

Bounded: loopback only; every request times out after 30 s and the whole load after ``--max-seconds``
(default 120); the service and the writer are stopped at the end in every case.

    .venv/bin/python benchmarks/submissions.py [--clients 50] [--per-client 20]

With ``--store data/leaf_live.duckdb --round macro/cpi/2026-03-01 --writer '.venv/bin/leaf-live rescore --db
{db}'`` the load goes (macro only) to a copy of a full store while a real ``leaf-live rescore`` (Dagster runs
of the scoring jobs) holds that copy, and the sensor and asset move the inbox once it is done; a round closed
at today's clock takes the load as retrospective submissions.
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
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "service"))  # the small store and the service starter of the tests

import duckdb  # noqa: E402
import httpx  # noqa: E402
from store_fixture import (  # noqa: E402
    OPEN,
    free_port,
    hold_store,
    make_store,
    start_service,
    writer_counts,
)

from leaf_live.core.settings import get_settings  # noqa: E402
from leaf_live.service.app import writer_active  # noqa: E402
from leaf_live.service.inbox import inbox_location, open_inbox  # noqa: E402

ROUND = f"macro/{OPEN[0]}/{OPEN[1].isoformat()}"


@dataclass
class Target:
    """The macro round the even clients submit to: its id, indicator, period, unit, a valid value, one the
    guardrail refuses, and the latest issue hour (the clients go back one hour per submission)."""

    round_id: str
    indicator_id: str
    period: str
    unit: str
    value: float
    bad: float
    last_hour: datetime
    first_hour: datetime


@dataclass
class EventTarget:
    """The event round the odd clients submit to: its id, its ``event`` task ids (one per submission, one
    more for the refused one) and the issue time of the rows."""

    round_id: str
    task_ids: list[str]
    issued_at: datetime


def _inputs(db: Path):
    from leaf_live.core import storage
    from leaf_live.service.rounds import load_inputs

    con = storage.connect_read_only(db)
    try:
        return load_inputs(con)
    finally:
        con.close()


def _target(db: Path, round_id: str) -> Target:
    from leaf_live.macro.catalog import get_indicator
    from leaf_live.service.rounds import find_round

    inputs = _inputs(db)
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


def _event_target(db: Path, need: int) -> EventTarget:
    import polars as pl

    from leaf_live.service.rounds import event_round_id

    tasks = _inputs(db).tasks.filter(
        (pl.col("task_kind") == "event") & (pl.col("cutoff") > datetime.now(UTC))
    )
    if tasks.height == 0:
        raise RuntimeError("no upcoming event task in the store")
    cutoff = tasks["cutoff"].min()
    ids = sorted(tasks.filter(pl.col("cutoff") == cutoff)["task_id"].to_list())
    if len(ids) < need:
        raise RuntimeError(f"event round {event_round_id(cutoff)}: {len(ids)} event tasks, {need} needed")
    at = min(datetime.now(UTC), cutoff).replace(minute=0, second=0, microsecond=0)
    return EventTarget(event_round_id(cutoff), ids, at)


def _row(t: Target, hour: datetime, value: float) -> dict:
    return {
        "indicator_id": t.indicator_id,
        "reference_period": t.period,
        "issued_at": hour.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "value": value,
        "unit": t.unit,
    }


def _event_row(e: EventTarget, task_id: str, probability: float) -> dict:
    return {
        "task_id": task_id,
        "issued_at": e.issued_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "probability": probability,
    }


def _bodies(team: str, n: int, t: Target, e: EventTarget | None) -> tuple[list[dict], dict]:
    """The ``n`` submissions of a client and its refused one: macro (one issue hour each, going back from
    the last) or event (one task each)."""
    model = f"external/{team}/m"
    if e is None:
        good = [
            {
                "round_id": t.round_id,
                "model_id": model,
                "rows": [_row(t, t.last_hour - timedelta(hours=j), t.value)],
            }
            for j in range(n)
        ]
        bad = {**good[0], "rows": [_row(t, t.last_hour - timedelta(hours=n + 1), t.bad)]}
        return good, bad
    good = [
        {"round_id": e.round_id, "model_id": model, "rows": [_event_row(e, e.task_ids[j], 0.5 + j / (4 * n))]}
        for j in range(n)
    ]
    bad = {**good[0], "rows": [_event_row(e, e.task_ids[n], 55.0)]}  # a percentage: refused
    return good, bad


async def _client(url: str, team: str, token: str, bodies: list[dict], bad: dict, out: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30) as c:
        for j, body in enumerate(bodies):
            t0 = time.perf_counter()
            r = await c.post(url, content=json.dumps(body), headers=headers)
            out["latency"].append(time.perf_counter() - t0)
            if r.status_code == 201:
                out["receipts"].append(r.json())
            else:
                out["errors"].append(f"{team} #{j}: {r.status_code} {r.text[:200]}")
        replay = await c.post(url, content=json.dumps(bodies[0]), headers=headers)
        out["replays"].append(replay.status_code == 200 and replay.json() == out_first(out, team))
        refused = await c.post(url, content=json.dumps(bad), headers=headers)
        out["refused"].append(refused.status_code)


def out_first(out: dict, team: str) -> dict | None:
    mine = [r for r in out["receipts"] if r["team"] == team]
    return mine[0] if mine else None


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of the live process ``pid`` so far (Linux ``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stored(db: Path, models: list[str], bad_value: float) -> dict:
    """Per receipt id, the rows of the load's models stored in its slice (both tracks), the load's rows in
    no receipted slice, and the rows holding a refused value."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        per: dict[str, int] = {}
        loose = bad = 0
        refusals = (("nowcasts", "value = ?", [bad_value]), ("leaf_forecasts", "probability > 1", []))
        for table, refused, extra in refusals:
            mine = "n.model_id IN (SELECT unnest(?))"
            for rid, n in con.execute(
                f"SELECT r.receipt_id, count(*) FROM {table} n JOIN external_receipts r"
                f" ON r.producer = n.producer AND r.slice_key = n.partition_key WHERE {mine} GROUP BY 1",
                [models],
            ).fetchall():
                per[rid] = per.get(rid, 0) + n
            loose += con.execute(
                f"SELECT count(*) FROM {table} n WHERE {mine} AND NOT EXISTS (SELECT 1 FROM"
                " external_receipts r WHERE r.producer = n.producer AND r.slice_key = n.partition_key)",
                [models],
            ).fetchone()[0]
            bad += con.execute(
                f"SELECT count(*) FROM {table} n WHERE {mine} AND ({refused})", [models, *extra]
            ).fetchone()[0]
        total = sum(
            con.execute(
                f"SELECT count(*) FROM {t} WHERE model_id IN (SELECT unnest(?))", [models]
            ).fetchone()[0]
            for t in ("nowcasts", "leaf_forecasts")
        )
        writes = (
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'bench_writer'").fetchone()[
                0
            ]
            and con.execute("SELECT count(*) FROM bench_writer").fetchone()[0]
        )
    finally:
        con.close()
    return {"per_receipt": per, "loose": loose, "bad": bad, "total": total, "writes": writes}


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
    load's models are exactly the acknowledged receipts' rows, each once, none outside a receipted slice).
    ``store``: a copy of this store instead of the small one (``round_id`` a macro round of it; before its
    close at today's clock the rows are live, after it retrospective; macro clients only); ``writer_command``:
    the writer, e.g. ``.venv/bin/leaf-live rescore --db {db}`` (``{db}`` = the copy), instead of the synthetic
    one (the sensor and the asset then move the inbox after it). Raises :class:`RuntimeError` when the service
    does not start, the writer does not take the database, or the load passes ``max_seconds``."""
    tmp = tempfile.TemporaryDirectory() if workdir is None else None
    d = Path(tmp.name) if tmp else workdir
    db = d / "db.duckdb"
    if store is None:
        make_store(db, n_tasks=per_client + 1)
    else:
        shutil.copyfile(store, db)
    target = _target(db, round_id)
    if target.last_hour - timedelta(hours=per_client + 1) < target.first_hour:
        raise RuntimeError(f"round {round_id}: its window has fewer than {per_client + 2} issue hours")
    event = _event_target(db, per_client + 1) if store is None else None
    inbox = open_inbox(inbox_location(db, get_settings().inbox))  # LEAF_LIVE_INBOX, else beside db
    tokens = {f"t{k:02d}": inbox.add_team(f"t{k:02d}") for k in range(clients)}
    stop = d / "writer.stop"
    if writer_command is None:
        writer = hold_store(db, stop, pump=True)
    else:
        log = (d / "writer.log").open("w")
        writer = subprocess.Popen(
            shlex.split(writer_command.format(db=db)), stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 120
        while not writer_active(db) and time.monotonic() < deadline and writer.poll() is None:
            time.sleep(0.1)
    service = None
    counts: dict = {}
    try:
        held = writer_active(db)
        if not held:
            tail = (d / "writer.log").read_text()[-500:] if writer_command else ""
            raise RuntimeError(f"the writer did not take the database {tail}")
        port = free_port()
        t_start = time.perf_counter()
        service = start_service(db, port, "--agent-tick", "0")  # while the writer holds the database
        start_s = time.perf_counter() - t_start
        out: dict = {"latency": [], "receipts": [], "errors": [], "replays": [], "refused": []}
        url = f"http://127.0.0.1:{port}/submissions"
        plans = {
            team: _bodies(team, per_client, target, event if k % 2 and event is not None else None)
            for k, team in enumerate(tokens)
        }

        async def load() -> float:
            t0 = time.perf_counter()
            await asyncio.wait_for(
                asyncio.gather(*(_client(url, t, tok, *plans[t], out) for t, tok in tokens.items())),
                max_seconds,
            )
            return time.perf_counter() - t0

        load_before = os.getloadavg()
        service_cpu0, client_cpu0 = _cpu_s(service.pid), time.process_time()
        try:
            wall = asyncio.run(load())
        except TimeoutError:
            raise RuntimeError(f"the load passed {max_seconds} s") from None
        t_end = time.perf_counter()
        service_cpu, client_cpu = _cpu_s(service.pid) - service_cpu0, time.process_time() - client_cpu0
        load_after = os.getloadavg()
        writer_alive = writer.poll() is None and writer_active(db)
    finally:
        if service is not None:
            service.kill()
            service.wait()
        stop.touch()
        if writer_command is None:
            counts = writer_counts(writer, timeout=900)
        else:
            writer.wait(timeout=900)
    if writer_command is not None:  # the sensor and the asset move the inbox once the real writer is done
        (d / "pump.stop").touch()
        counts = writer_counts(hold_store(db, d / "pump.stop", pump=True), timeout=900)
    drain_s = time.perf_counter() - t_end
    models = [f"external/{t}/m" for t in tokens]
    got = _stored(db, models, target.bad)
    if tmp:
        tmp.cleanup()
    acked = {r["receipt_id"]: r["n_rows"] for r in out["receipts"]}
    lat = sorted(out["latency"])

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return {
        "clients": clients,
        "per_client": per_client,
        "tracks": sorted({r["track"] for r in out["receipts"]}),
        "sent": len(lat),
        "acknowledged": len(acked),
        "errors": out["errors"],
        "replays_same_receipt": sum(out["replays"]),
        "refused_statuses": sorted(set(out["refused"])),
        "p50_ms": 1000 * q(0.50),
        "p95_ms": 1000 * q(0.95),
        "throughput_per_s": len(lat) / wall,
        "wall_s": wall,
        "service_start_s": start_s,
        "service_cpu_s": service_cpu,
        "client_cpu_s": client_cpu,
        "load_avg_before": load_before,
        "load_avg_after": load_after,
        "cpus": os.cpu_count(),
        "writer_held_db": held and writer_alive,
        "writer": writer_command or "synthetic run (writer lock, a connection per step, sensor + asset runs)",
        "writer_counts": counts,
        "writer_writes": got["writes"],
        "drain_after_load_s": drain_s,
        "boards": sorted({r["board"] for r in out["receipts"]}),
        "stored_receipts": len(got["per_receipt"]),
        "stored_rows": got["total"],
        "exact": got["per_receipt"] == acked
        and got["total"] == sum(acked.values())
        and got["loose"] == 0
        and got["bad"] == 0,
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
    c = r["writer_counts"]
    print(
        f"{r['clients']} clients x {r['per_client']} submissions ({'+'.join(r['tracks'])}) on loopback while"
        f" a writer held the database (writer: {r['writer']}; held through the load: {r['writer_held_db']})"
    )
    print(
        f"service started in {r['service_start_s']:.1f} s with the database held; sent {r['sent']},"
        f" acknowledged {r['acknowledged']} in {r['wall_s']:.1f} s wall: {r['throughput_per_s']:.0f}"
        f" submissions/s, latency p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms"
    )
    print(
        f"CPU during the load: service {r['service_cpu_s']:.1f} s, clients {r['client_cpu_s']:.1f} s, beside"
        f" {r['wall_s']:.1f} s wall on {r['cpus']} CPUs; load average (1/5/15 min) before"
        f" {'/'.join(f'{x:.2f}' for x in r['load_avg_before'])}, after"
        f" {'/'.join(f'{x:.2f}' for x in r['load_avg_after'])}"
    )
    print(
        f"replays answered with the first receipt: {r['replays_same_receipt']}/{r['clients']}; refused bad"
        f" submissions: HTTP {r['refused_statuses']}; boards of the receipts: {r['boards']}"
    )
    print(
        f"writer: {c.get('steps')} steps ({r['writer_writes']} writes), {c.get('failed_opens')} failed opens;"
        f" sensor ticks {c.get('ticks')}, Dagster runs {c.get('runs')} ({c.get('runs_during_load')} during"
        f" the load, {c.get('failed_runs')} failed);"
        f" inbox emptied {r['drain_after_load_s']:.1f} s after the load"
    )
    print(
        f"store: {r['stored_receipts']} receipts, {r['stored_rows']} service rows; every acknowledged"
        f" receipt's rows exactly once and nothing else: {r['exact']}"
    )
    for e in r["errors"][:5]:
        print("error:", e)
    ok = r["exact"] and not r["errors"] and r["writer_held_db"]
    return 0 if ok and not c.get("failed_opens") and not c.get("failed_runs") else 1


if __name__ == "__main__":
    raise SystemExit(main())
