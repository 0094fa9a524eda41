"""Agent endpoints (issue 21 item 4) on loopback: endpoints served by the test (a real HTTP server in a
thread) are called at a simulated cutoff through the real call path; a good answer becomes a signed, live
service submission and is scored on the live board (Brier, LEAF Sec. 4.1); a slow one and a garbage one are
kept invalid with their reasons, with their ``llm_calls`` rows; a loopback URL without the test-only switch is
refused before any connection."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pg_inbox import inbox_location
from store_fixture import OPEN, make_store

from leaf_live.core import storage
from leaf_live.core.participation import label_boards, read_receipts
from leaf_live.event.scoring import score_forecasts
from leaf_live.service import agents as A
from leaf_live.service.inbox import SqliteInbox, inbox_path, open_inbox
from leaf_live.service.receipts import verify_receipt
from leaf_live.service.rounds import TASK_COLUMNS, load_inputs


class _Agent(BaseHTTPRequestHandler):
    hits: list[tuple[str, dict]] = []
    challenges: list[tuple[str, dict]] = []  # ownership checks at registration, not calls

    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        verifying = body.get("type") == "leaf_live.endpoint_verification"
        (_Agent.challenges if verifying else _Agent.hits).append((self.path, body))
        if verifying and self.path not in ("/garbage", "/missing"):
            echo = body["challenge"] if self.path != "/wrong-echo" else body["challenge"][::-1]
            out = json.dumps({"challenge": echo}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        rnd = body.get("round") or {}
        if self.path == "/slow":
            time.sleep(3.0)
        if self.path == "/missing" or (self.path == "/flaky" and len(_Agent.hits) == 1):
            code = 404 if self.path == "/missing" else 503
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/garbage":
            out = b"<html>I am not JSON</html>"
        elif rnd["track"] == "event":
            out = json.dumps({"rows": [{"task_id": t["task_id"], "probability": 0.7} for t in rnd["tasks"]]})
            out = out.encode()
        else:
            out = json.dumps({"rows": [{"value": 2.9, "unit": "percent", "rationale": "flat"}]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller gave up (the slow endpoint)


@pytest.fixture
def agent_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _Agent.hits = []
    _Agent.challenges = []
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_loopback_and_private_urls_are_refused_without_the_switch(agent_server):
    for url, why in [
        (agent_server + "/good", "scheme 'http'"),
        ("https://127.0.0.1/good", "127.0.0.1 is loopback"),
        ("https://localhost:8443/x", "is loopback"),
        ("https://169.254.169.254/latest", "is link-local"),
        ("https://10.1.2.3/x", "is private"),
        ("https://[::1]/x", "::1 is loopback"),
        ("https://0.0.0.0/x", "is unspecified"),
        ("https://user:pw@example.org/x", "user info"),
        ("ftp://example.org/x", "scheme 'ftp'"),
    ]:
        with pytest.raises(A.EndpointError, match=why):
            A.check_url(url)
    # the switch allows loopback (and http) only; private addresses stay refused
    assert A.check_url(agent_server + "/good", allow_loopback=True) == ["127.0.0.1"]
    with pytest.raises(A.EndpointError, match="is private"):
        A.check_url("http://10.1.2.3/x", allow_loopback=True)
    # a public name passes (resolver given: the test machine has no DNS)
    fake = lambda host, port, proto: [(2, 1, 6, "", ("93.184.215.14", port))]  # noqa: E731
    assert A.check_url("https://agent.example.org/f?key=s", resolve=fake) == ["93.184.215.14"]
    assert A.safe_url("https://u@agent.example.org:8443/f?key=secret#x") == "https://agent.example.org:8443/f"


@pytest.fixture(params=["sqlite", "postgres"])
def any_inbox(request, tmp_path):
    """The inbox of ``tmp_path/db.duckdb`` on each backend (``LEAF_LIVE_INBOX`` set for PostgreSQL, so a
    service child and the CLI use the same one)."""
    with inbox_location(request.param, tmp_path / "db.duckdb") as where:
        yield open_inbox(where)


def test_endpoints_called_at_a_simulated_cutoff(tmp_path, agent_server, any_inbox):
    db = tmp_path / "db.duckdb"
    info = make_store(db)
    inbox = any_inbox
    key = Ed25519PrivateKey.generate()
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    for name in ("good", "slow", "garbage"):
        url = f"{agent_server}/{name}"
        A.check_url(url, allow_loopback=True)
        inbox.set_endpoint("acme", f"external/acme/{name}", url, "127.0.0.1")
    # the simulated service clock: 30 minutes before the event cutoff, running at real speed
    sim0, m0 = info["cutoff"] - timedelta(minutes=30), time.monotonic()
    clock = lambda: sim0 + timedelta(seconds=time.monotonic() - m0)  # noqa: E731
    kw = {"deadline_s": 1.0, "max_attempts": 2, "allow_loopback": True, "clock": clock, "backoff_s": (0.0,)}
    # with a 1 s deadline an event call is due from 1 s before the cutoff: at sim0 only the macro round is
    assert [c.round_id for c in A.due_calls(inputs, inbox.endpoints(), sim0, deadline_s=1.0)] == [
        "macro/cpi/2026-11-01"
    ] * 3
    due = A.due_calls(inputs, inbox.endpoints(), sim0, deadline_s=3600.0)
    assert sorted({(c.round_id, c.slot) for c in due}) == [
        (f"event/{info['cutoff']:%Y-%m-%dT%H:%M:%SZ}", info["cutoff"] - timedelta(hours=1)),
        ("macro/cpi/2026-11-01", sim0.replace(minute=0)),
    ]
    outcomes = {}
    for c in due:
        assert inbox.claim_call(c)
        outcomes[(c.endpoint.model_id, c.track)] = A.run_call(c, inputs, inbox, key, **kw)
    # every due call claimed: nothing is called twice
    assert A.run_due(inputs, inbox, key, sim0, **{**kw, "deadline_s": 3600.0}) == []
    for track in ("macro", "event"):
        assert outcomes[("external/acme/good", track)] == "valid"
        assert (
            outcomes[("external/acme/slow", track)] == "invalid: timeout: no answer within the 1 s deadline"
        )
        assert outcomes[("external/acme/garbage", track)].startswith("invalid: answer: not JSON")
    assert sorted(p for p, _ in _Agent.hits) == ["/garbage"] * 2 + ["/good"] * 2 + ["/slow"] * 2
    sent = next(b for p, b in _Agent.hits if p == "/good" and b["round"]["track"] == "event")
    assert sent["round"]["tasks"][0]["bundle"]["meta"]["price"] == 0.4  # the frozen bundle, as GET /rounds

    # the good answers are signed service submissions on the live board
    receipts = inbox.receipts()
    assert sorted((r["model_id"], r["track"], r["board"]) for r in receipts) == [
        ("external/acme/good", "event", "live"),
        ("external/acme/good", "macro", "live"),
    ]
    for r in receipts:
        verify_receipt(key.public_key(), r)
    wcon = storage.connect(db)
    try:
        from leaf_live.service.store import drain

        done = drain(wcon, inbox)
        assert len(done) == 2 + 6  # 2 submissions, 6 calls
        assert drain(wcon, inbox) == {}
        calls = wcon.execute(
            "SELECT model_id, prompt_group, status, attempts, error IS NULL, requested_at < completed_at,"
            " latency_s, response_json FROM llm_calls WHERE role = 'agent' ORDER BY 1, 2"
        ).fetchall()
        nc = wcon.execute(
            "SELECT model_id, value, valid, invalid_reason, issued_at, answered_at, after_release"
            " FROM nowcasts ORDER BY 1"
        ).fetchall()
        lf = storage.read_table(wcon, "leaf_forecasts")
        src = wcon.execute("SELECT DISTINCT source, board FROM external_receipts").fetchall()
        tasks = storage.read_table(wcon, "forecast_tasks").select(TASK_COLUMNS)
        recs = read_receipts(wcon)
    finally:
        wcon.close()
    assert [(m, g, s, a, e, t) for m, g, s, a, e, t, _, _ in calls] == [
        ("external/acme/garbage", "event", "ok", 1, True, True),
        ("external/acme/garbage", "macro", "ok", 1, True, True),
        ("external/acme/good", "event", "ok", 1, True, True),
        ("external/acme/good", "macro", "ok", 1, True, True),
        ("external/acme/slow", "event", "failed", 1, False, True),  # the deadline ends the retries
        ("external/acme/slow", "macro", "failed", 1, False, True),
    ]
    assert all(0.95 <= lat < 2.5 for m, *_, lat, _ in calls if m.endswith("slow"))
    assert json.loads(calls[0][7]) == {"http_status": 200, "body": "<html>I am not JSON</html>"}
    slot = sim0.replace(minute=0)
    assert [(m, v, ok, why is None) for m, v, ok, why, *_ in nc] == [
        ("external/acme/garbage", None, False, False),
        ("external/acme/good", 2.9, True, True),
        ("external/acme/slow", None, False, False),
    ]
    assert nc[1][4] == slot and sim0 < nc[1][5] < sim0 + timedelta(seconds=5) and nc[1][6] is False
    assert nc[2][3] == "timeout: no answer within the 1 s deadline"
    assert src == [("agent", "live")]
    assert sorted(zip(lf["model_id"], lf["valid"], lf["probability"], strict=True)) == [
        ("external/acme/garbage", False, None),
        ("external/acme/good", True, 0.7),
        ("external/acme/slow", False, None),
    ]
    # scored on the live board: the labelled read of the scorer keeps the model id (no @retrospective)
    outcomes_frame = pl.DataFrame(
        {
            "task_id": [info["task_id"]],
            "actual": [None],
            "label": [None],
            "outcome": [1.0],
            "available_at": [info["cutoff"] + timedelta(days=5)],
        },
        schema_overrides={"actual": pl.List(pl.Float64), "label": pl.Utf8},
    )
    scores = score_forecasts(tasks, outcomes_frame, label_boards(lf.filter(pl.col("valid")), recs))
    assert scores.select("model_id", "metric", "value").rows() == [
        ("external/acme/good", "brier", pytest.approx(0.09))
    ]
    assert OPEN[0] == "cpi"


def test_a_loopback_endpoint_is_not_called_without_the_switch(tmp_path, agent_server):
    db = tmp_path / "db.duckdb"
    info = make_store(db)
    inbox = SqliteInbox(inbox_path(db))
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    inbox.set_endpoint("acme", "external/acme/good", agent_server + "/good", "127.0.0.1")  # slipped in
    at = datetime.now(UTC)
    out = A.run_due(inputs, inbox, Ed25519PrivateKey.generate(), at, deadline_s=1.0)
    assert out == [
        f"invalid: refused: url '{agent_server}/good': scheme 'http'; only https endpoints are called"
    ]
    assert _Agent.hits == []  # no connection was made
    assert info["now"] <= at


def test_serve_registers_and_calls_an_endpoint(tmp_path, agent_server, capsys, any_inbox):
    """The real service (``leaf-live serve`` with the test-only switch and a 0.5 s tick): a team registers its
    endpoint with its token, the scheduler calls it in the open cpi window's current hour, the answer is a
    signed live receipt, and the CLI drain stores it; the CLI refuses the loopback URL without the switch."""
    import httpx
    from store_fixture import free_port, start_service

    from leaf_live.cli import main

    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = any_inbox
    token = inbox.add_team("acme")
    assert (
        main(["teams", "endpoint", "acme", "external/acme/cli", agent_server + "/good", "--db", str(db)]) == 1
    )
    assert "scheme 'http'; only https endpoints are called" in capsys.readouterr().err
    port = free_port()
    proc = start_service(
        db, port, "--test-allow-loopback-endpoints", "--agent-tick", "0.5", "--agent-deadline", "5"
    )
    try:
        url = f"http://127.0.0.1:{port}/endpoints"
        auth = {"Authorization": f"Bearer {token}"}
        bad = httpx.post(
            url, json={"model_id": "external/beta/x", "url": agent_server + "/good"}, headers=auth
        )
        assert bad.status_code == 403 and bad.json()["error"]["field"] == "model_id"
        priv = httpx.post(url, json={"model_id": "external/acme/x", "url": "http://10.0.0.7/x"}, headers=auth)
        assert priv.status_code == 422 and "is private" in priv.json()["error"]["reason"]
        # the ownership check: an endpoint that does not echo the random challenge is not registered
        for path, why in (
            ("/garbage", "the answer does not echo the challenge"),
            ("/wrong-echo", "the answer does not echo the challenge"),
            ("/missing", "ownership check: http 404, expected 200"),
        ):
            no = httpx.post(
                url, json={"model_id": "external/acme/x", "url": agent_server + path}, headers=auth
            )
            assert no.status_code == 422 and no.json()["error"]["field"] == "url", no.text
            assert why in no.json()["error"]["reason"]
        assert httpx.get(url, headers=auth).json()["endpoints"] == []
        closed = free_port()  # nothing listens: refused, not stored
        no = httpx.post(
            url, json={"model_id": "external/acme/x", "url": f"http://127.0.0.1:{closed}/a"}, headers=auth
        )
        assert no.status_code == 422 and "ownership check: connection error" in no.json()["error"]["reason"]
        r = httpx.post(
            url, json={"model_id": "external/acme/good", "url": agent_server + "/good?k=s"}, headers=auth
        )
        assert r.status_code == 201, r.text
        assert r.json() == {
            "model_id": "external/acme/good",
            "url": agent_server + "/good",
            "host": "127.0.0.1",
        }
        assert httpx.get(url, headers=auth).json()["endpoints"] == [r.json()]
        (_, ch), (_, ch2) = _Agent.challenges[-2:]  # /missing's, then /good's: fresh random challenges
        assert {k: ch2[k] for k in ("type", "team", "model_id")} == {
            "type": "leaf_live.endpoint_verification",
            "team": "acme",
            "model_id": "external/acme/good",
        }
        assert re.fullmatch(r"[0-9a-f]{32}", ch2["challenge"]) and ch["challenge"] != ch2["challenge"]
        deadline = time.monotonic() + 30
        while not inbox.pending_calls() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    (cid,) = inbox.pending_calls()
    call = inbox.load_call(cid)
    assert call["status"] == "valid" and call["round_id"] == "macro/cpi/2026-11-01"
    (rec,) = inbox.receipts()
    assert rec["receipt_id"] == call["receipt_id"] and rec["board"] == "live"
    assert [p for p, _ in _Agent.hits] == [
        "/good?k=s"
    ]  # one call per slot, though the scheduler ticked often
    assert main(["inbox", "drain", "--db", str(db)]) == 0
    assert "stored 1 submissions and 1 agent calls" in capsys.readouterr().out
    con = storage.connect_read_only(db)
    try:
        (params,) = con.execute("SELECT request_params FROM llm_calls").fetchone()
        n = con.execute(
            "SELECT count(*) FROM nowcasts WHERE valid AND model_id = 'external/acme/good'"
        ).fetchone()
    finally:
        con.close()
    assert json.loads(params)["url"] == agent_server + "/good" and n == (1,)  # the query is not stored


def test_https_endpoint_is_called_on_the_checked_address_with_its_host_name(tmp_path):
    """The production path: https, the connection to the resolved and checked address, TLS verified against
    the registered host name (the certificate names only ``localhost``, not 127.0.0.1)."""
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    k = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(k.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(k, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    srv.socket = server_ctx.wrap_socket(srv.socket, server_side=True)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _Agent.hits = []
    _Agent.challenges = []
    try:
        db = tmp_path / "db.duckdb"
        make_store(db)
        inbox = SqliteInbox(inbox_path(db))
        con = storage.connect_read_only(db)
        inputs = load_inputs(con)
        con.close()
        url = f"https://localhost:{srv.server_address[1]}/good"
        assert A.check_url(url, allow_loopback=True) in (
            ["127.0.0.1"],
            ["127.0.0.1", "::1"],
            ["::1", "127.0.0.1"],
        )
        inbox.set_endpoint("acme", "external/acme/tls", url, "localhost")
        trust = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        key = Ed25519PrivateKey.generate()
        out = A.run_due(
            inputs, inbox, key, datetime.now(UTC), deadline_s=5.0, allow_loopback=True, verify=trust
        )
        assert out == ["valid"]
        assert [p for p, _ in _Agent.hits] == ["/good"]
        # without trusting the certificate the call fails verification: invalid, no answer stored as valid
        inbox.set_endpoint("acme", "external/acme/tls2", url, "localhost")
        out = A.run_due(
            inputs, inbox, key, datetime.now(UTC), deadline_s=5.0, max_attempts=1, allow_loopback=True
        )
        assert out == ["invalid: connection error: ConnectError"]
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_call_interrupted_by_a_stop_is_kept_invalid_not_repeated(tmp_path):
    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = SqliteInbox(inbox_path(db))
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    inbox.set_endpoint("acme", "external/acme/a", "https://agent.example.org/f", "agent.example.org")
    at = datetime.now(UTC)
    (c,) = A.due_calls(inputs, inbox.endpoints(), at, deadline_s=60)
    assert inbox.claim_call(c)  # ... and the service is killed during the call
    assert A.recover_interrupted(inputs, inbox, at + timedelta(minutes=5)) == [c.call_id]
    assert A.recover_interrupted(inputs, inbox, at + timedelta(minutes=6)) == []
    assert A.run_due(inputs, inbox, Ed25519PrivateKey.generate(), at, deadline_s=60) == []  # not repeated
    from leaf_live.service.store import drain

    wcon = storage.connect(db)
    try:
        assert drain(wcon, inbox) == {f"agent-{c.call_id}": 2}
        got = wcon.execute(
            "SELECT c.status, c.error, n.valid, n.invalid_reason, c.latency_s FROM llm_calls c"
            " JOIN nowcasts n ON n.raw_response_id = c.call_id"
        ).fetchall()
    finally:
        wcon.close()
    reason = "interrupted: the service stopped during the call"
    assert len(got) == 1 and got[0][:4] == ("failed", reason, False, reason) and got[0][4] >= 299


def test_retries_are_bounded_and_only_for_no_answer_or_5xx(tmp_path, agent_server):
    db = tmp_path / "db.duckdb"
    make_store(db)
    inbox = SqliteInbox(inbox_path(db))
    con = storage.connect_read_only(db)
    inputs = load_inputs(con)
    con.close()
    at = datetime.now(UTC)
    kw = {"deadline_s": 5.0, "allow_loopback": True, "backoff_s": (0.1,)}
    for name in ("flaky", "missing"):
        inbox.set_endpoint("acme", f"external/acme/{name}", f"{agent_server}/{name}", "127.0.0.1")
        calls = [
            c for c in A.due_calls(inputs, inbox.endpoints(), at, deadline_s=5.0) if name in c.endpoint.url
        ]
        assert inbox.claim_call(calls[0])
        out = A.call_endpoint(calls[0], {"round": "r"} | {"track": "macro"}, **kw)
        if name == "flaky":  # 503, then 200: a second attempt
            assert out.reason is None and out.record.attempts == 2 and out.record.status == "ok"
        else:  # 404 is an answer: not retried
            assert out.reason == "http 404: the endpoint did not answer 200" and out.record.attempts == 1
            assert out.record.status == "failed" and out.record.error == "HTTP 404 (not retried)"
    assert [p for p, _ in _Agent.hits] == ["/flaky", "/flaky", "/missing"]
