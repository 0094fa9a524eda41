"""The inbox behind the same methods on both backends (issue 21 item 2): the embedded SQLite file and the
production profile's PostgreSQL (a fresh database per test, tests/service/pg_inbox.py). Tokens, one
transaction per submission, replay by content hash, duplicate row keys refused, stored marks, and
concurrent writers from several threads storing each submission exactly once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from pg_inbox import inbox_location

from leaf_live.service.inbox import Accepted, DuplicateRows, InboxError, open_inbox

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def inbox(request, tmp_path):
    with inbox_location(request.param, tmp_path / "db.duckdb") as where:
        yield open_inbox(where)


def _sub(n: int, keys, team: str = "acme", model: str = "external/acme/m1", hash_: str | None = None):
    return Accepted(
        receipt_id=f"r{n:05d}",
        team=team,
        model_id=model,
        track="macro",
        round_id="macro/cpi/2026-11-01",
        content_hash=hash_ or f"h{n:05d}",
        received_at=T0 + timedelta(seconds=n),
        due_at=T0 + timedelta(days=1),
        board="live",
        n_rows=len(keys),
        table_name="nowcasts",
        producer="submission_service",
        partition_key=f"p{n}",
        rows=bytes([n % 256]) * 7 + b"\x00\xff",  # binary content must come back byte for byte
        keys=list(keys),
    )


def _receipt(sub: Accepted) -> dict:
    return {"receipt_id": sub.receipt_id, "content_hash": sub.content_hash, "n_rows": sub.n_rows}


def test_tokens_add_and_verify(inbox):
    token = inbox.add_team("acme")
    other = inbox.add_team("beta-2")
    assert token.startswith("acme.") and len(token.split(".", 1)[1]) == 43  # token_urlsafe(32): 43 chars
    assert inbox.authenticate(token) == "acme" and inbox.authenticate(other) == "beta-2"
    assert inbox.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None  # one char off
    assert inbox.authenticate("beta-2." + token.split(".", 1)[1]) is None  # acme's secret, beta's name
    assert inbox.authenticate("nobody.x") is None and inbox.authenticate("no-dot") is None
    assert inbox.teams() == ["acme", "beta-2"]
    with pytest.raises(InboxError, match="exists already"):
        inbox.add_team("acme")
    with pytest.raises(InboxError, match="lower-case"):
        inbox.add_team("Acme")
    assert inbox.teams() == ["acme", "beta-2"]


def test_submission_replay_and_duplicate_rows_store_nothing_partial(inbox):
    a = _sub(1, ["k1", "k2", "k3"])
    inbox.put(a, _receipt(a))
    assert inbox.receipt_for("acme", "h00001") == _receipt(a)
    assert inbox.receipt_for("beta", "h00001") is None
    got = inbox.load("r00001")
    assert got["rows"] == a.rows and isinstance(got["rows"], bytes)
    assert (
        got["received_at"] == "2026-11-20T12:00:01+00:00" and got["n_rows"] == 3 and got["stored_at"] is None
    )
    # a replay of the same content (a concurrent one that passed receipt_for) is refused by the unique
    # (team, content_hash): nothing new
    with pytest.raises(Exception):  # noqa: B017 (sqlite3 / psycopg2 IntegrityError: the app re-reads)
        inbox.put(_sub(2, ["k9"], hash_="h00001"), {})
    # new content holding one key of the first: DuplicateRows naming key and holder, nothing stored
    with pytest.raises(DuplicateRows) as exc:
        inbox.put(_sub(3, ["k4", "k3"]), {})
    assert (exc.value.key, exc.value.receipt_id) == ("k3", "r00001")
    # another model may hold the same keys
    b = _sub(4, ["k1", "k2"], model="external/acme/m2")
    inbox.put(b, _receipt(b))
    assert [r["receipt_id"] for r in inbox.receipts()] == ["r00001", "r00004"]
    assert inbox.pending() == ["r00001", "r00004"]
    with pytest.raises(InboxError, match="not in the inbox"):
        inbox.load("r00003")
    # k4 was not kept by the refused submission: a later one may take it
    c = _sub(5, ["k4"])
    inbox.put(c, _receipt(c))
    assert inbox.pending() == ["r00001", "r00004", "r00005"]


def test_mark_stored_and_last_stored(inbox):
    for n in (1, 2, 3):
        s = _sub(n, [f"k{n}"])
        inbox.put(s, _receipt(s))
    inbox.mark_stored("r00002", T0 + timedelta(hours=1))
    inbox.mark_stored("r00001", T0 + timedelta(hours=2))
    assert inbox.pending() == ["r00003"] and inbox.pending(limit=0) == []
    assert inbox.last_stored() == {"macro": "2026-11-20T14:00:00+00:00"}
    assert inbox.load("r00002")["stored_at"] == "2026-11-20T13:00:00+00:00"
    assert inbox.source_of("r00001") == "service"


def test_endpoints_and_agent_calls(inbox):
    from leaf_live.service.agents import DueCall, Endpoint

    inbox.set_endpoint("acme", "external/acme/agent", "https://a.example/x", "a.example")
    inbox.set_endpoint("acme", "external/acme/agent", "https://b.example/y", "b.example")  # replaced
    ep = Endpoint("acme", "external/acme/agent", "https://b.example/y", "b.example")
    assert inbox.endpoints() == [ep] and inbox.endpoints("beta") == []
    call = DueCall(ep, "macro/cpi/2026-11-01", "macro", T0, T0 + timedelta(hours=1), "c1")
    assert inbox.claim_call(call) is True and inbox.claim_call(call) is False  # never made twice
    assert [c["call_id"] for c in inbox.running_calls()] == ["c1"]
    sub = _sub(7, ["k1"], model="external/acme/agent")
    inbox.finish_call(
        "c1",
        completed_at=T0 + timedelta(minutes=1),
        record=b"\x01rec",
        reason=None,
        table_name="nowcasts",
        submission=(sub, _receipt(sub)),
    )
    got = inbox.load_call("c1")
    assert got["status"] == "valid" and got["record"] == b"\x01rec" and got["receipt_id"] == "r00007"
    assert inbox.pending_calls() == ["c1"] and inbox.running_calls() == []
    assert inbox.source_of("r00007") == "agent"
    inbox.mark_call_stored("c1", T0)
    assert inbox.pending_calls() == []


def test_concurrent_submissions_store_each_exactly_once(inbox):
    """8 threads x 12 submissions: own keys (all stored), a replay of one shared content (stored once), and
    one contested key every thread claims with its own content (exactly one holder, the rest refused)."""
    n_threads, per = 8, 12
    out: dict[str, list] = {"ok": [], "dup": [], "replay": [], "err": []}
    lock = threading.Lock()
    start = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        start.wait()
        for i in range(per):
            n = 1 + t * per + i
            if i == 3:
                s = _sub(n, [f"shared-{t}"], hash_="same-content")  # one content, every thread
            elif i == 5:
                s = _sub(n, ["contested", f"t{t}-x"])  # one key, every thread
            else:
                s = _sub(n, [f"t{t}-{i}-a", f"t{t}-{i}-b"])
            try:
                inbox.put(s, _receipt(s))
                kind = "ok"
            except DuplicateRows:
                kind = "dup"
            except InboxError as e:
                kind, s = "err", e
            except Exception:  # the unique (team, content_hash): a replay lost the race
                kind = "replay"
            with lock:
                out[kind].append(s)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert out["err"] == []
    assert len(out["ok"]) == n_threads * (per - 2) + 2  # own ones, one "same-content", one "contested"
    assert len(out["dup"]) == n_threads - 1 and len(out["replay"]) == n_threads - 1
    stored = inbox.receipts()
    assert sorted(r["receipt_id"] for r in stored) == sorted(s.receipt_id for s in out["ok"])
    assert len({r["content_hash"] for r in stored}) == len(stored)
    assert len(inbox.pending(limit=10_000)) == n_threads * (per - 2) + 2


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sensor_and_asset_drain_the_configured_inbox(tmp_path, backend):
    """The Dagster side reads ``LEAF_LIVE_INBOX`` through the resource (``default_resources``: an ``EnvVar``,
    so a URL never shows in a run's config): the sensor partitions the pending submission, materializing it
    stores its rows once and marks it stored in that inbox, and the sensor then has nothing left."""
    import duckdb
    from dagster import DagsterInstance, EnvVar, SkipReason, build_sensor_context, materialize
    from store_fixture import OPEN, make_store

    from assets.participation import SUBMISSIONS, external_submission
    from leaf_live.core import storage
    from leaf_live.service.inbox import inbox_path
    from leaf_live.service.intake import accept
    from leaf_live.service.rounds import load_inputs
    from resources import default_resources
    from sensors.participation import pending_submissions

    db = tmp_path / "db.duckdb"
    info = make_store(db)
    with inbox_location(backend, db) as where:
        inbox = open_inbox(where)
        con = storage.connect_read_only(db)
        inputs = load_inputs(con)
        con.close()
        row = {
            "indicator_id": OPEN[0],
            "reference_period": OPEN[1].isoformat(),
            "issued_at": info["now"].strftime("%Y-%m-%dT%H:%M:%SZ"),
            "value": 2.9,
            "unit": "percent",
        }
        payload = {"round_id": "macro/cpi/2026-11-01", "model_id": "external/acme/m", "rows": [row]}
        sub = accept(inputs, "acme", payload, datetime.now(UTC))
        inbox.put(sub, {"receipt_id": sub.receipt_id})
        resources = {"db": default_resources(db=db)["db"]}
        assert resources["db"].inbox == (EnvVar("LEAF_LIVE_INBOX") if backend == "postgres" else "")
        with DagsterInstance.ephemeral() as instance:
            ctx = build_sensor_context(instance=instance, resources=resources)
            res = pending_submissions(ctx, db=ctx.resources.db)
            assert [r.partition_key for r in res.run_requests] == [sub.receipt_id]
            instance.add_dynamic_partitions(SUBMISSIONS.name, [sub.receipt_id])
            for _ in range(2):  # a rerun writes the same rows once
                assert materialize(
                    [external_submission],
                    partition_key=sub.receipt_id,
                    resources=resources,
                    instance=instance,
                ).success
            ctx = build_sensor_context(instance=instance, resources=resources)
            assert isinstance(pending_submissions(ctx, db=ctx.resources.db), SkipReason)
        assert inbox.pending() == [] and inbox.load(sub.receipt_id)["stored_at"] is not None
        assert inbox_path(db).exists() == (backend == "sqlite")
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = con.execute(
            "SELECT r.receipt_id, r.board, count(*) FROM nowcasts n JOIN external_receipts r ON r.slice_key ="
            " n.partition_key GROUP BY ALL"
        ).fetchall()
    finally:
        con.close()
    assert got == [(sub.receipt_id, "live", 1)]


def test_postgres_pool_reuses_connections_and_drops_dead_ones():
    """The PostgreSQL inbox keeps its connections (one backend serves many calls) and, after the server ended
    them (a restart), checks an idle one before reuse and opens a fresh one: no call fails."""
    from pg_inbox import _admin, pg_inbox_url

    with pg_inbox_url() as url:
        ib = open_inbox(url)
        token = ib.add_team("acme")
        pids = set()
        for _ in range(5):
            with ib._connection() as con:
                pids.add(con.execute("SELECT pg_backend_pid()").fetchone()[0])
        assert len(pids) == 1 and len(ib._d._idle) == 1
        db = url.rsplit("/", 1)[1]
        admin = _admin()
        try:
            cur = admin.cursor()
            cur.execute(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()) t",
                [db],
            )
            assert cur.fetchone()[0] == 1
        finally:
            admin.close()
        ib._d.CHECK_IDLE_S = 0.0  # as if idle past the check interval
        assert ib.authenticate(token) == "acme" and ib.teams() == ["acme"]
        with ib._connection() as con:
            assert con.execute("SELECT pg_backend_pid()").fetchone()[0] not in pids


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_cli_teams_add_uses_the_configured_inbox(tmp_path, backend, capsys):
    """``leaf-live teams add`` writes the inbox ``LEAF_LIVE_INBOX`` names (the file beside the database when
    unset); the printed token authenticates there."""
    import duckdb

    from leaf_live.cli import main
    from leaf_live.service.inbox import inbox_path

    db = tmp_path / "db.duckdb"
    duckdb.connect(str(db)).close()
    with inbox_location(backend, db) as where:
        assert main(["teams", "add", "acme", "--db", str(db)]) == 0
        token = next(w for w in capsys.readouterr().out.split() if w.startswith("acme."))
        assert open_inbox(where).authenticate(token) == "acme"
        assert inbox_path(db).exists() == (backend == "sqlite")


def test_cli_unreachable_postgres_inbox_is_one_line_without_the_password(tmp_path, monkeypatch, capsys):
    from leaf_live.cli import main

    db = tmp_path / "db.duckdb"
    monkeypatch.setenv("LEAF_LIVE_INBOX", "postgresql://u:hunter22@127.0.0.1:1/inbox")
    assert main(["teams", "add", "acme", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert "inbox postgresql://127.0.0.1:1/inbox: cannot connect" in err and "hunter22" not in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "db.duckdb.inbox.sqlite").exists()


def test_duplicate_key_found_past_the_first_lookup_chunk(inbox):
    """Row keys are looked up 500 at a time: a held key at position 1100 of 1200 is found, the first held one
    in the submission's order is named, and nothing of the refused submission is kept."""
    a = _sub(1, ["k1100", "k5"])
    inbox.put(a, _receipt(a))
    with pytest.raises(DuplicateRows) as exc:
        inbox.put(_sub(2, [f"k{i}" for i in range(6, 1200)] + ["k5"]), {})
    assert (exc.value.key, exc.value.receipt_id) == ("k1100", "r00001")
    b = _sub(
        3, [f"k{i}" for i in range(6, 1100)] + [f"k{i}" for i in range(1101, 2001)]
    )  # 1994 keys, none held
    inbox.put(b, _receipt(b))
    assert inbox.pending() == ["r00001", "r00003"] and inbox.load("r00003")["n_rows"] == 1994
