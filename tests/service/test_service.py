"""The submission service on loopback (issue 21 "What it must show"): the real app on uvicorn in a child
process (``leaf-live serve``), a small store (tests/service/store_fixture.py) and real HTTP calls; each test
on both inboxes (``LEAF_LIVE_INBOX`` unset: the SQLite file beside the database; set: a fresh PostgreSQL
database, tests/service/pg_inbox.py)."""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from datetime import UTC, datetime, timedelta

import duckdb
import httpx
import pytest
from pg_inbox import inbox_location
from store_fixture import CLOSED, OPEN, free_port, make_store, start_service

from leaf_live.cli import main
from leaf_live.core.participation import content_hash
from leaf_live.service.inbox import inbox_path, open_inbox
from leaf_live.service.receipts import ReceiptError, load_public_pem, verify_receipt

MACRO = "macro/cpi/2026-11-01"
LATE = "macro/nonfarm_payrolls/2026-10-01"


def _cpi(t: datetime, value: float = 2.9) -> dict:
    return {
        "indicator_id": OPEN[0],
        "reference_period": OPEN[1].isoformat(),
        "issued_at": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "value": value,
        "unit": "percent",
    }


BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="module", params=BACKENDS)
def service(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("service")
    db = d / "db.duckdb"
    info = make_store(db)
    with inbox_location(request.param, db) as where:  # the child and the CLI read LEAF_LIVE_INBOX
        inbox = open_inbox(where)
        tokens = {t: inbox.add_team(t) for t in ("acme", "beta")}
        port = free_port()
        proc = start_service(db, port)
        try:
            yield {
                "db": db,
                "url": f"http://127.0.0.1:{port}",
                "tokens": tokens,
                "inbox": inbox,
                "backend": request.param,
                **info,
            }
        finally:
            proc.kill()
            proc.wait()


def _post(svc, body, token: str | None = "acme", raw: bytes | None = None) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {svc['tokens'].get(token, token)}"}
    return httpx.post(
        svc["url"] + "/submissions", content=raw if raw is not None else json.dumps(body), headers=headers
    )


def _n_inbox(svc) -> int:
    return len(svc["inbox"].receipts())


def test_refused_requests_store_nothing(service):
    body = {"round_id": MACRO, "model_id": "external/acme/m1", "rows": [_cpi(service["now"])]}
    before = _n_inbox(service)
    cases = [
        (_post(service, body, token=None), 401, "authorization"),
        (_post(service, body, token="acme.wrongsecret"), 401, "authorization"),
        (_post(service, body, token="nobody.x"), 401, "authorization"),
        (_post(service, {**body, "model_id": "external/beta/m1"}), 403, "model_id"),
        (_post(service, {**body, "model_id": "external/acme/Bad Name"}), 422, "model_id"),
        (_post(service, {**body, "round_id": "macro/cpi/2019-01-01"}), 404, "round_id"),
        (_post(service, None, raw=b"{not json"), 400, "body"),
        # a lone surrogate escaped in JSON: no UTF-8 text can hold it (a 500 before the fix)
        (
            _post(
                service,
                None,
                raw=json.dumps({**body, "rows": [{**_cpi(service["now"]), "rationale": "\ud800"}]}).encode(),
            ),
            400,
            "body",
        ),
        (_post(service, None, raw=b"x" * (1 << 20 + 1)), 413, "body"),
        (_post(service, {**body, "rows": [_cpi(service["now"])] * 2001}), 413, "rows"),
        # one bad row among good ones: all refused, the bad one named
        (
            _post(
                service,
                {**body, "rows": [_cpi(service["now"]), _cpi(service["now"] - timedelta(hours=1), 95.0)]},
            ),
            422,
            "value",
        ),
        (
            _post(service, {**body, "rows": [{**_cpi(service["now"]), "indicator_id": "nonfarm_payrolls"}]}),
            422,
            "indicator_id",
        ),
        # JSON has a number type: a number sent as a string is refused, not read like a CSV cell
        (_post(service, {**body, "rows": [{**_cpi(service["now"]), "value": "2.9"}]}), 422, "value"),
        # a missing field is named (not CSV's file-level "header")
        (
            _post(
                service, {**body, "rows": [{k: v for k, v in _cpi(service["now"]).items() if k != "unit"}]}
            ),
            422,
            "unit",
        ),
        (_post(service, {**body, "rows": [{**_cpi(service["now"]), "colour": "red"}]}), 422, "colour"),
    ]
    for resp, status, field in cases:
        assert resp.status_code == status, resp.text
        text = resp.text
        assert "\n" not in text
        err = resp.json()["error"]
        assert err["field"] == field and err["status"] == status and err["reason"]
    assert _n_inbox(service) == before
    by_field = {c[2]: c[0].json()["error"]["reason"] for c in cases[-3:]}
    assert by_field["value"] == "a JSON string where a JSON number is expected"
    assert by_field["unit"].startswith("missing; every row needs it (indicator_id, ")
    assert by_field["colour"].startswith("unknown field; expected ")


def test_live_and_late_receipts_verify_and_replay_is_idempotent(service, tmp_path, capsys):
    now = datetime.now(UTC).replace(microsecond=0)
    rows = [_cpi(now - timedelta(hours=h), 2.9 + 0.1 * h) for h in range(3)]
    body = {"round_id": MACRO, "model_id": "external/acme/m-live", "rows": rows}
    t0 = datetime.now(UTC)
    r = _post(service, body)
    t1 = datetime.now(UTC)
    assert r.status_code == 201, r.text
    rec = r.json()
    assert rec["board"] == "live" and rec["n_rows"] == 3 and rec["team"] == "acme"
    assert rec["content_hash"] == content_hash(MACRO, "external/acme/m-live", rows)
    received = datetime.fromisoformat(rec["received_at"])
    assert t0 <= received <= t1  # the server's clock, not the submitter's
    # a replay: same receipt, 200, nothing new
    n = _n_inbox(service)
    again = _post(service, body)
    assert again.status_code == 200 and again.json() == rec and _n_inbox(service) == n
    # same rows under new content (one extra row): the repeated rows are refused, nothing stored
    dup = _post(service, {**body, "rows": [*rows, _cpi(now - timedelta(hours=5))]})
    assert dup.status_code == 409 and dup.json()["error"]["field"] == "rows" and _n_inbox(service) == n

    # back-dated issued_at (before the close) received after the window closed: only retrospective
    late_row = {
        "indicator_id": CLOSED[0],
        "reference_period": CLOSED[1].isoformat(),
        "issued_at": (service["closed_close"] - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "value": 150.0,
        "unit": "thousand persons",
    }
    late = _post(service, {"round_id": LATE, "model_id": "external/acme/m-late", "rows": [late_row]})
    assert late.status_code == 201, late.text
    assert late.json()["board"] == "retrospective"

    # the published key verifies both; any altered field fails
    pem = httpx.get(service["url"] + "/receipts/pubkey").text
    pub = load_public_pem(pem)
    for receipt in (rec, late.json()):
        verify_receipt(pub, receipt)
    for field, value in [
        ("board", "live"),
        ("received_at", "2026-01-01T00:00:00.000000Z"),
        ("n_rows", 4),
        ("model_id", "external/acme/other"),
        ("team", "beta"),
        ("round_id", LATE),
        ("content_hash", "0" * 64),
        ("receipt_id", "f" * 32),
        ("due_at", "2030-01-01T00:00:00.000000Z"),
        ("track", "event"),
    ]:
        bad = copy.deepcopy(late.json() if field == "board" else rec)
        assert bad[field] != value
        bad[field] = value
        with pytest.raises(ReceiptError, match="signature does not match"):
            verify_receipt(pub, bad)
    # the CLI checks a receipt file the same way
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(rec))
    bad.write_text(json.dumps({**rec, "board": "retrospective"}))
    keyfile = tmp_path / "pub.pem"
    keyfile.write_text(pem)
    assert main(["receipts", "verify", str(good), "--pubkey", str(keyfile)]) == 0
    assert main(["receipts", "verify", str(bad), "--pubkey", str(keyfile)]) == 1
    assert "signature does not match" in capsys.readouterr().err

    # the inbox moved into the store: the live rows count, the late one is retrospective
    assert main(["inbox", "drain", "--db", str(service["db"])]) == 0
    assert main(["inbox", "drain", "--db", str(service["db"])]) == 0  # again: nothing duplicated
    # the drain read and marked the same inbox the service wrote (on PostgreSQL, no SQLite file at all)
    assert service["inbox"].pending() == [] and _n_inbox(service) == 2
    assert inbox_path(service["db"]).exists() == (service["backend"] == "sqlite")
    con = duckdb.connect(str(service["db"]), read_only=True)
    try:
        got = con.execute(
            "SELECT n.model_id, count(*), any_value(r.board), any_value(r.receipt_id) FROM nowcasts n JOIN"
            " external_receipts r ON r.producer = n.producer AND r.slice_key = n.partition_key GROUP BY 1"
            " ORDER BY 1"
        ).fetchall()
        # the one answered-at rule: the rows issued 0-2 h before they reached the server count from its
        # received_at (a back-dated issued_at earns no betting hours or horizon credit)
        answered = con.execute(
            "SELECT DISTINCT answered_at FROM nowcasts WHERE model_id = 'external/acme/m-live'"
        ).fetchall()
    finally:
        con.close()
    assert got == [
        ("external/acme/m-late", 1, "retrospective", late.json()["receipt_id"]),
        ("external/acme/m-live", 3, "live", rec["receipt_id"]),
    ]
    assert [a.astimezone(UTC) for (a,) in answered] == [received]


def test_event_round_submission(service):
    tid = service["task_id"]
    body = {
        "round_id": f"event/{service['cutoff']:%Y-%m-%dT%H:%M:%SZ}",
        "model_id": "external/beta/ev",
        "rows": [
            {"task_id": tid, "issued_at": service["now"].strftime("%Y-%m-%dT%H:%M:%SZ"), "probability": 0.55}
        ],
    }
    bundle = httpx.get(service["url"] + "/rounds/" + body["round_id"]).json()
    assert [t["task_id"] for t in bundle["tasks"]] == [tid]
    assert bundle["tasks"][0]["bundle"]["meta"]["price"] == 0.4
    r = _post(service, body, token="beta")
    assert r.status_code == 201 and r.json()["board"] == "live" and r.json()["n_rows"] == 1
    pct = _post(
        service,
        {**body, "model_id": "external/beta/ev2", "rows": [{**body["rows"][0], "probability": 55}]},
        "beta",
    )
    assert pct.status_code == 422 and pct.json()["error"]["field"] == "probability"
    assert "percentage" in pct.json()["error"]["reason"]
    # a replay: the same receipt (200), nothing new in the inbox
    n = _n_inbox(service)
    again = _post(service, body, token="beta")
    assert again.status_code == 200 and again.json() == r.json() and _n_inbox(service) == n
    # the same task under new content (another probability): refused, one forecast per task and model
    other = _post(service, {**body, "rows": [{**body["rows"][0], "probability": 0.6}]}, "beta")
    assert other.status_code == 409 and other.json()["error"]["field"] == "rows" and _n_inbox(service) == n
    # into the store through the inbox, twice: the row once, in the receipt's slice
    assert main(["inbox", "drain", "--db", str(service["db"])]) == 0
    assert main(["inbox", "drain", "--db", str(service["db"])]) == 0
    sql = (
        "SELECT f.task_id, f.probability, f.producer, r.receipt_id, r.board, r.n_rows FROM leaf_forecasts f"
        " JOIN external_receipts r ON r.producer = f.producer AND r.slice_key = f.partition_key"
        " WHERE f.model_id = 'external/beta/ev'"
    )
    con = duckdb.connect(str(service["db"]), read_only=True)
    try:
        got = con.execute(sql).fetchall()
        n_model = con.execute(
            "SELECT count(*) FROM leaf_forecasts WHERE model_id LIKE 'external/beta/ev%'"
        ).fetchone()[0]
    finally:
        con.close()
    assert got == [(tid, 0.55, "submission_service", r.json()["receipt_id"], "live", 1)]
    assert n_model == 1  # the refused percentage and the 409 stored nothing


@pytest.mark.parametrize("track", ["macro", "event"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_kill_mid_load_keeps_exactly_the_receipted_rows(tmp_path, backend, track):
    """kill -9 while 8 clients submit (to the macro round: one issue hour each; to the event round: one task
    each): after a restart and a drain, the store holds exactly the rows of every receipt the clients got
    (and of none they did not)."""
    with inbox_location(backend, tmp_path / "db.duckdb") as where:
        _kill_mid_load(tmp_path, open_inbox(where), track)


def _kill_mid_load(tmp_path, inbox, track: str) -> None:
    import threading

    db = tmp_path / "db.duckdb"
    info = make_store(db, n_tasks=200 if track == "event" else 1)
    event_round = f"event/{info['cutoff']:%Y-%m-%dT%H:%M:%SZ}"
    table = "nowcasts" if track == "macro" else "leaf_forecasts"
    tokens = [inbox.add_team(f"t{k}") for k in range(8)]
    port = free_port()
    proc = start_service(db, port)
    url = f"http://127.0.0.1:{port}/submissions"
    got: list[dict] = []
    lock = threading.Lock()
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)

    def client(k: int) -> None:
        with httpx.Client(timeout=5) as c:
            for j in range(200):
                if track == "macro":
                    rows = [_cpi(now - timedelta(hours=j), 2.0 + k / 10)]
                    body = {"round_id": MACRO, "model_id": f"external/t{k}/m", "rows": rows}
                else:
                    issued = info["now"].strftime("%Y-%m-%dT%H:%M:%SZ")
                    rows = [{"task_id": info["task_ids"][j], "issued_at": issued, "probability": k / 10}]
                    body = {"round_id": event_round, "model_id": f"external/t{k}/m", "rows": rows}
                try:
                    r = c.post(
                        url, content=json.dumps(body), headers={"Authorization": f"Bearer {tokens[k]}"}
                    )
                except httpx.HTTPError:
                    return
                if r.status_code == 201:
                    with lock:
                        got.append(r.json())

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(got) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for t in threads:
        t.join()
    proc = start_service(db, port)  # restart: the inbox is intact and the service answers again
    proc.kill()
    proc.wait()
    assert main(["inbox", "drain", "--db", str(db)]) == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        stored = con.execute(
            f"SELECT r.receipt_id, count(*) FROM {table} n JOIN external_receipts r"
            " ON r.producer = n.producer"
            " AND r.slice_key = n.partition_key GROUP BY 1"
        ).fetchall()
        total = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        tracks = con.execute("SELECT DISTINCT track FROM external_receipts").fetchall()
    finally:
        con.close()
    issued = {r["receipt_id"] for r in got}
    assert len(issued) >= 40
    assert issued <= {rid for rid, n in stored}  # every acknowledged receipt's rows are present
    assert all(n == 1 for _, n in stored) and total == len(stored)  # exactly once, nothing unreceipted
    # whatever was committed without its answer reaching the client still has a signed receipt in the inbox
    assert {rid for rid, _ in stored} == {r["receipt_id"] for r in inbox.receipts()}
    assert tracks == [(track,)]


def test_wrong_tokens_are_rate_limited_per_address_and_a_busy_port_is_one_line(tmp_path):
    """60 wrong tokens at once: the first AUTH_FAIL_BURST (10) are checked (401), the rest refused before
    any token is checked (429); a second ``serve`` on the same port exits non-zero with one line and no
    "serving" line (it used to print "serving", then uvicorn's bind error)."""
    # the embedded inbox for the service too: the module's PostgreSQL ``service`` fixture may still be set up
    # (module scope), its LEAF_LIVE_INBOX in the environment
    with inbox_location("sqlite", tmp_path / "db.duckdb"):
        _wrong_tokens(tmp_path)


def _wrong_tokens(tmp_path) -> None:
    import subprocess
    import sys

    from leaf_live.service.app import AUTH_FAIL_BURST

    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = open_inbox(inbox_path(db))
    token = inbox.add_team("acme")
    port = free_port()
    proc = start_service(db, port)
    try:
        url = f"http://127.0.0.1:{port}/submissions"
        with httpx.Client() as c:
            codes = [
                c.post(url, content="{}", headers={"Authorization": "Bearer acme.wrong"}).status_code
                for _ in range(60)
            ]
            assert codes == [401] * AUTH_FAIL_BURST + [429] * (60 - AUTH_FAIL_BURST)
            r = c.post(url, content="{}", headers={"Authorization": "Bearer acme.wrong"})
            assert r.json()["error"]["field"] == "authorization" and "too many wrong tokens" in r.text
            time.sleep(2.5)  # refilled at 0.5/s: one more wrong token is checked again
            assert c.post(url, content="{}", headers={"Authorization": "Bearer x.y"}).status_code == 401
            # the right token was never the problem: after the refill it authenticates (422: empty body)
            time.sleep(2.5)
            assert c.post(url, content="{}", headers={"Authorization": f"Bearer {token}"}).status_code != 401
        busy = subprocess.run(
            [sys.executable, "-m", "leaf_live.cli", "serve", "--db", str(db), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        out = (busy.stdout + busy.stderr).strip().splitlines()
        assert busy.returncode != 0
        assert len(out) == 1 and "serving" not in out[0] and "http://" not in out[0], out
        assert f"--port {port}: cannot listen on 127.0.0.1:{port}: Address already in use" in out[0]
    finally:
        proc.kill()
        proc.wait()
