"""Agent endpoints (issue 21 item 4): a team registers an HTTPS endpoint for one of its model ids; the service
calls it with each open round's bundle and keeps the answer with its request and completion times, as LLM
calls are kept (one ``llm_calls`` row, :class:`leaf_live.core.llm.CallRecord`, role :data:`ROLE`).

When a call is due (:func:`due_calls`, at the service's clock ``at``):

* a **macro round** (an open nowcast window) at every full hour of the window
  (``opens_at <= hour < closes_at``): ``slot`` = the hour, the answer's ``issued_at`` (LiveMacroEval
  Sec. 3.4 issues nowcasts hourly);
* an **event round** (an upcoming cutoff) once, from ``cutoff - deadline`` on (so an answer within the
  deadline is received before the cutoff), ``slot`` = ``cutoff - deadline``, the answer's ``issued_at``.

Each (model id, round, slot) is called at most once (its ``call_id`` is claimed in the inbox before the call).

The request is ``POST <url>`` with the JSON body ``{"call_id", "slot", "deadline_at", "round": <the round's
bundle, GET /rounds/{id}>}``; the answer is ``200`` with ``{"rows": [...]}`` in the round's submission schema
(docs/submitting.md) without ``issued_at`` (the service sets it to ``slot``; macro rows also get
``answered_at`` = the completion time, and ``indicator_id`` / ``reference_period`` of the round when left
out). The rows go through the one validation path (:func:`leaf_live.service.intake.accept`, ``received_at`` =
the completion time), so a valid answer is an ordinary service submission with a signed receipt, on the live
board when completed strictly before the round's due time.

Limits: one deadline per call (default :data:`DEADLINE_S`, 1 h) covers every attempt; up to
:data:`MAX_ATTEMPTS` attempts, retried only when no answer came (connection error, timeout) or the answer was
``429`` / ``5xx``; redirects are not followed; the answer body is read up to :data:`MAX_ANSWER` bytes. An
answer that is not ``200``, not JSON, not ``{"rows": [...]}``, or refused by the track's checks, and a call
with no answer by its deadline, is **invalid**: its call record and one invalid forecast row per target
(``valid = false``, ``invalid_reason``) are kept.

Outbound calls go only to the registered URL's host, after resolving it and checking every address
(:func:`check_url`): ``https`` only, and private, loopback, link-local, multicast, reserved and unspecified
addresses are refused; the connection goes to the checked address (the host name kept for TLS and ``Host``),
so a DNS answer cannot change between the check and the call. ``allow_loopback=True`` (tests only; ``leaf-live
serve --test-allow-loopback-endpoints``) additionally allows ``http`` and loopback addresses.

Registration also proves the team runs the endpoint (:func:`verify_owner`: a random challenge the endpoint
must echo) before it is stored.
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import json
import socket
import ssl
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import polars as pl

from leaf_live.core.llm import CallRecord, llm_calls_frame, messages_json, prompt_hash
from leaf_live.core.participation import SERVICE_PRODUCER
from leaf_live.core.storage import conform, polars_schema
from leaf_live.service import rounds as R
from leaf_live.service.inbox import DuplicateRows
from leaf_live.service.intake import Refused, accept
from leaf_live.service.receipts import receipt_of

ROLE = "agent"  # llm_calls.role of an agent-endpoint call
DEADLINE_S = 3600.0  # per call, every attempt included
MAX_ATTEMPTS = 3
MAX_ANSWER = 1 << 20  # bytes of an answer body
BACKOFF_S = (1.0, 4.0)  # waits before the 2nd and 3rd attempt (cut short by the deadline)


class EndpointError(ValueError):
    """A URL that may not be registered or called; the message names the URL part and the reason."""


@dataclass(frozen=True)
class Endpoint:
    """A registered endpoint: the team, its model id (``external/<team>/<name>``), the URL and its host."""

    team: str
    model_id: str
    url: str
    host: str


def _refused_address(ip: ipaddress._BaseAddress, allow_loopback: bool) -> str | None:
    if allow_loopback and ip.is_loopback:
        return None
    for name in ("loopback", "link_local", "unspecified", "multicast", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    if not ip.is_global:
        return "not globally routable"
    return None


def safe_url(url: str) -> str:
    """The URL without user info, query and fragment (what is stored; a query may carry a team's secret)."""
    p = urlsplit(url)
    netloc = p.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if p.port:
        netloc += f":{p.port}"
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


def check_url(url: str, *, allow_loopback: bool = False, resolve: Callable = socket.getaddrinfo) -> list[str]:
    """Check ``url`` for registration and before every call (module doc); returns the checked addresses of
    its host (text). Raises :class:`EndpointError` naming the part and the reason: a scheme other than
    ``https`` (``http`` too with ``allow_loopback``), no host, user info, a host that does not resolve, or
    any resolved address that is private, loopback, link-local, multicast, reserved or unspecified."""
    if not isinstance(url, str) or len(url) > 2000:
        raise EndpointError("url: give an https URL of at most 2000 characters")
    try:
        p = urlsplit(url)
        port = p.port
    except ValueError as exc:
        raise EndpointError(f"url {url[:80]!r}: not a URL ({exc})") from None
    schemes = ("https", "http") if allow_loopback else ("https",)
    if p.scheme not in schemes:
        raise EndpointError(f"url {safe_url(url)!r}: scheme {p.scheme!r}; only https endpoints are called")
    if not p.hostname:
        raise EndpointError(f"url {url[:80]!r}: no host")
    if p.username or p.password:
        raise EndpointError(f"url {safe_url(url)!r}: user info in the URL is refused (send no secrets in it)")
    host = p.hostname
    try:
        infos = resolve(host, port or (443 if p.scheme == "https" else 80), proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise EndpointError(f"url host {host!r}: does not resolve ({exc})") from None
    addrs = sorted({info[4][0].split("%")[0] for info in infos})
    if not addrs:
        raise EndpointError(f"url host {host!r}: no address")
    for a in addrs:
        why = _refused_address(ipaddress.ip_address(a), allow_loopback)
        if why is not None:
            raise EndpointError(f"url host {host!r}: address {a} is {why}; only public addresses are called")
    return addrs


VERIFY_TIMEOUT_S = 10.0  # seconds the ownership check waits for the endpoint's answer


def verify_owner(
    url: str,
    team: str,
    model_id: str,
    *,
    allow_loopback: bool = False,
    timeout_s: float = VERIFY_TIMEOUT_S,
    verify: bool | ssl.SSLContext = True,
    nonce: str | None = None,
) -> str:
    """Proof at registration that whoever runs ``url`` agrees to answer for ``team``'s ``model_id`` (a
    verification of intent like W3C WebSub's ``hub.challenge`` or Slack's ``url_verification``): the service
    POSTs ``{"type": "leaf_live.endpoint_verification", "team", "model_id", "challenge": <32 hex>}`` to the
    URL (checked and pinned like a call, :func:`check_url`; no redirects) and the endpoint must answer ``200``
    with JSON ``{"challenge": <the same value>}`` within ``timeout_s``. A host the team does not control
    cannot echo a fresh random challenge it never sees. Returns the challenge; raises
    :class:`EndpointError` naming the URL and why the proof failed."""
    import secrets

    challenge = nonce or secrets.token_hex(16)
    addrs = check_url(url, allow_loopback=allow_loopback)
    pinned, headers, ext = _pinned(url, addrs[0])
    body = {
        "type": "leaf_live.endpoint_verification",
        "team": team,
        "model_id": model_id,
        "challenge": challenge,
    }
    shown = safe_url(url)
    try:
        with httpx.Client(
            timeout=httpx.Timeout(timeout_s), follow_redirects=False, trust_env=False, verify=verify
        ) as c:
            resp = c.post(
                pinned,
                content=json.dumps(body, sort_keys=True).encode(),
                headers={**headers, "Content-Type": "application/json", "User-Agent": "leaf-live-agents"},
                extensions=ext,
            )
            text = resp.content[:MAX_ANSWER]
    except httpx.TimeoutException:
        raise EndpointError(f"url {shown!r}: ownership check: no answer within {timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise EndpointError(
            f"url {shown!r}: ownership check: connection error ({type(exc).__name__})"
        ) from None
    if resp.status_code != 200:
        raise EndpointError(f"url {shown!r}: ownership check: http {resp.status_code}, expected 200")
    try:
        answer = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        answer = None
    if not isinstance(answer, dict) or answer.get("challenge") != challenge:
        raise EndpointError(
            f"url {shown!r}: ownership check: the answer does not echo the challenge "
            '(answer {"challenge": <the challenge sent>})'
        )
    return challenge


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def call_id(model_id: str, round_id: str, slot: datetime) -> str:
    """32 hex of sha256(model id, round id, slot): one call per (model, round, slot), the same after a
    restart."""
    return hashlib.sha256(f"{model_id}\n{round_id}\n{_iso(slot)}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class DueCall:
    endpoint: Endpoint
    round_id: str
    track: str
    slot: datetime
    due_at: datetime
    call_id: str


def due_calls(
    inputs: R.RoundInputs, endpoints: list[Endpoint], at: datetime, *, deadline_s: float = DEADLINE_S
) -> list[DueCall]:
    """The calls due at ``at`` (module doc), one per endpoint and open round; callers skip those already
    claimed. Raises :class:`leaf_live.service.rounds.RoundError` for a naive ``at``."""
    rounds = R.list_rounds(inputs, at)
    out = []
    hour = at.replace(minute=0, second=0, microsecond=0)
    for r in rounds.iter_rows(named=True):
        if r["track"] == "macro":
            slot = hour if hour >= r["opens_at"] else None
        else:
            start = r["due_at"] - timedelta(seconds=deadline_s)
            slot = start if at >= start else None
        if slot is None or slot >= r["due_at"]:
            continue
        for e in endpoints:
            out.append(
                DueCall(
                    e, r["round_id"], r["track"], slot, r["due_at"], call_id(e.model_id, r["round_id"], slot)
                )
            )
    return out


@dataclass
class CallOutcome:
    """One finished endpoint call: its ``llm_calls`` record, the answer's rows (None when there is no usable
    answer) and, when invalid, the reason."""

    record: CallRecord
    rows: list[dict] | None
    reason: str | None


def _pinned(url: str, addr: str) -> tuple[str, dict, dict]:
    """URL with the host replaced by the checked address; the Host header and the TLS server name keep the
    registered host."""
    p = urlsplit(url)
    ip = ipaddress.ip_address(addr)
    netloc = f"[{addr}]" if ip.version == 6 else addr
    if p.port:
        netloc += f":{p.port}"
    host_header = p.hostname + (f":{p.port}" if p.port else "")
    return (
        urlunsplit((p.scheme, netloc, p.path or "/", p.query, "")),
        {"Host": host_header},
        {"sni_hostname": p.hostname},
    )


def _retryable(status: int | None) -> bool:
    return status is None or status == 429 or status >= 500


def _call_record(
    call: DueCall,
    messages: list[dict],
    params: dict,
    requested_at: datetime,
    completed_at: datetime,
    **outcome,
) -> CallRecord:
    """The ``llm_calls`` record of one endpoint call: its identity (call id, ``agent:<round>@<slot>`` run,
    the team's model, ``endpoint/<host>``, the round's track), the request as sent, and ``outcome``'s fields
    (``status``, ``attempts``, ``latency_s``, ``response_json``, ``finish_reason``, ``error``)."""
    return CallRecord(
        call_id=call.call_id,
        run_id=f"agent:{call.round_id}@{_iso(call.slot)}",
        model_id=call.endpoint.model_id,
        model=f"endpoint/{call.endpoint.host}",
        role=ROLE,
        prompt_group=call.track,
        requested_at=requested_at,
        completed_at=completed_at,
        prompt_hash=prompt_hash(messages),
        request_messages=messages_json(messages),
        request_params=json.dumps(params, sort_keys=True),
        **outcome,
    )


def call_endpoint(
    call: DueCall,
    bundle: dict,
    *,
    deadline_s: float = DEADLINE_S,
    max_attempts: int = MAX_ATTEMPTS,
    allow_loopback: bool = False,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    backoff_s: tuple[float, ...] = BACKOFF_S,
    verify: bool | ssl.SSLContext = True,
) -> CallOutcome:
    """POST the round's bundle to the endpoint (module doc) and return the outcome; never raises for what the
    endpoint does (refused URL, no answer, a bad answer: an invalid outcome with its reason). ``clock`` is the
    service's clock (``requested_at`` / ``completed_at``); ``verify``: TLS verification (tests pass a context
    trusting their own certificate)."""
    e = call.endpoint
    deadline_at = clock() + timedelta(seconds=deadline_s)
    body = {
        "call_id": call.call_id,
        "slot": _iso(call.slot),
        "deadline_at": _iso(deadline_at),
        "round": bundle,
    }
    messages = [{"role": "bundle", "content": body}]
    params = {
        "method": "POST",
        "url": safe_url(e.url),
        "deadline_s": deadline_s,
        "max_attempts": max_attempts,
        "max_answer_bytes": MAX_ANSWER,
    }
    requested_at = clock()
    t0 = time.monotonic()
    attempts, status, text, error, rows, reason = 0, None, None, None, None, None
    payload = json.dumps(body, sort_keys=True).encode()
    while attempts < max_attempts:
        left = deadline_s - (time.monotonic() - t0)
        if left <= 0 or (attempts and left < 0.1 * deadline_s):
            break  # a retry starts only with a tenth of the deadline left
        attempts += 1
        status, text, error, reason = None, None, None, None
        try:
            if urlsplit(e.url).hostname != e.host:
                raise EndpointError(f"url host {urlsplit(e.url).hostname!r} is not the registered {e.host!r}")
            addrs = check_url(e.url, allow_loopback=allow_loopback)
            url, headers, ext = _pinned(e.url, addrs[(attempts - 1) % len(addrs)])  # next address on a retry
            with httpx.Client(
                timeout=httpx.Timeout(left), follow_redirects=False, trust_env=False, verify=verify
            ) as c:
                with c.stream(
                    "POST",
                    url,
                    content=payload,
                    headers={**headers, "Content-Type": "application/json", "User-Agent": "leaf-live-agents"},
                    extensions=ext,
                ) as resp:
                    status = resp.status_code
                    buf = b""
                    for chunk in resp.iter_bytes():
                        buf += chunk
                        if len(buf) > MAX_ANSWER:
                            raise EndpointError(f"answer over {MAX_ANSWER} bytes")
                        if time.monotonic() - t0 > deadline_s:
                            raise httpx.ReadTimeout("deadline passed while reading the answer")
                    text = buf.decode("utf-8", errors="replace")
        except EndpointError as exc:
            error, reason = f"EndpointError: {exc}", f"refused: {exc}"
            break
        except httpx.TimeoutException as exc:
            error = f"{type(exc).__name__} (timeout): {str(exc)[:200]}"
            reason = f"timeout: no answer within the {deadline_s:g} s deadline"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__} (connection error): {str(exc)[:200]}"
            reason = f"connection error: {type(exc).__name__}"
        if status is not None and not _retryable(status):
            break
        if status is not None and status < 300:
            break
        if status is not None:
            error, reason = f"HTTP {status}", f"http {status}: the endpoint did not answer 200"
        if attempts < max_attempts:
            wait = backoff_s[min(attempts - 1, len(backoff_s) - 1)] if backoff_s else 0.0
            time.sleep(max(0.0, min(wait, deadline_s - (time.monotonic() - t0))))
    completed_at = clock()
    if status is not None and error is None:
        if status != 200:
            reason = f"http {status}: the endpoint did not answer 200"
            error = None if status < 300 else f"HTTP {status} (not retried)"
        else:
            try:
                answer = json.loads(text)
            except json.JSONDecodeError as exc:
                answer, reason = None, f"answer: not JSON ({exc.msg} at character {exc.pos})"
            if reason is None:
                if not isinstance(answer, dict) or not isinstance(answer.get("rows"), list):
                    reason = 'answer: expected a JSON object {"rows": [...]}'
                elif not answer["rows"]:
                    reason = "answer: rows is empty"
                else:
                    rows = answer["rows"]
    if status is None and reason is None:
        reason = f"timeout: no answer within the {deadline_s:g} s deadline"
    rec = _call_record(
        call,
        messages,
        params,
        requested_at,
        completed_at,
        status="ok" if status is not None and status < 300 and error is None else "failed",
        attempts=max(attempts, 1),
        latency_s=time.monotonic() - t0,
        response_json=None if status is None else json.dumps({"http_status": status, "body": text}),
        finish_reason=None if status is None else "stop",
        error=error,
    )
    return CallOutcome(rec, rows, reason)


def answer_rows(call: DueCall, rows: list[dict], inputs: R.RoundInputs, answered_at: datetime) -> list[dict]:
    """The answer's rows as a submission: ``issued_at`` = the slot (an answer giving another is refused by
    the checks through :class:`Refused`), macro rows ``answered_at`` = completion and the round's target."""
    out = []
    rnd = R.find_round(inputs, call.round_id)
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            out.append(r)  # the one validation path names it
            continue
        r = dict(r)
        if "issued_at" in r and r["issued_at"] != _iso(call.slot):
            raise Refused(
                422, "issued_at", f"row {i}: issued_at is set by the service (the slot {_iso(call.slot)})", i
            )
        r["issued_at"] = _iso(call.slot)
        if call.track == "macro":
            r.setdefault("indicator_id", rnd.indicator_id)
            r.setdefault("reference_period", rnd.reference_period.isoformat())
            r.setdefault("answered_at", _iso(answered_at))
        out.append(r)
    return out


def invalid_rows(
    call: DueCall, inputs: R.RoundInputs, outcome: CallOutcome, reason: str
) -> tuple[str, pl.DataFrame]:
    """``(table, frame)``: one invalid forecast row per target of the round (macro: the window's nowcast at
    the slot; event: each task of the cutoff) with ``invalid_reason`` = ``reason``, producer
    :data:`SERVICE_PRODUCER`, slice ``<model_id>#<call_id>``."""
    rec = outcome.record
    pk = f"{call.endpoint.model_id}#{call.call_id}"
    rnd = R.find_round(inputs, call.round_id)
    common: dict[str, Any] = {
        "producer": SERVICE_PRODUCER,
        "partition_key": pk,
        "model_id": call.endpoint.model_id,
        "issued_at": call.slot,
        "valid": False,
        "invalid_reason": reason[:500],
        "available_at": rec.completed_at,
    }
    if call.track == "macro":
        table = "nowcasts"
        rows = [
            {
                **common,
                "indicator_id": rnd.indicator_id,
                "reference_period": rnd.reference_period,
                "answered_at": rec.completed_at,
                "after_release": call.slot >= rnd.due_at,
                "raw_response_id": rec.call_id,
                "prompt_hash": rec.prompt_hash,
            }
        ]
    else:
        table = "leaf_forecasts"
        tasks = inputs.tasks.filter(pl.col("cutoff") == rnd.cutoff)
        rows = [
            {**common, "task_id": t, "bundle_hash": h}
            for t, h in tasks.select("task_id", "bundle_hash").iter_rows()
        ]
    schema = polars_schema(table)
    frame = pl.DataFrame(rows).with_columns(
        pl.lit(None, dtype=s).alias(c) for c, s in schema.items() if c not in rows[0]
    )
    frame = frame.with_columns(pl.col(c).cast(schema[c]) for c in rows[0] if c in schema)
    if "call_id" in schema and table == "leaf_forecasts":
        frame = frame.with_columns(pl.lit(rec.call_id).alias("call_id"))
    return table, conform(table, frame.select(list(schema)))


def record_frame(outcome: CallOutcome) -> pl.DataFrame:
    """The call's ``llm_calls`` row (slice ``agent:<call_id>``)."""
    return llm_calls_frame([outcome.record], f"agent:{outcome.record.call_id}")


def _parquet(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


def run_call(
    call: DueCall,
    inputs: R.RoundInputs,
    inbox,
    key,
    *,
    deadline_s: float = DEADLINE_S,
    max_attempts: int = MAX_ATTEMPTS,
    allow_loopback: bool = False,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    backoff_s: tuple[float, ...] = BACKOFF_S,
    verify: bool | ssl.SSLContext = True,
) -> str:
    """Make one claimed call and keep its outcome in the inbox (:meth:`SqliteInbox.finish_call`): a valid
    answer as a service submission with its signed receipt (``received_at`` = completion), else invalid rows
    with the reason. Returns ``valid`` or ``invalid: <reason>``."""
    at = clock()
    meta, frames = R.round_bundle(inputs, call.round_id, at)
    outcome = call_endpoint(
        call,
        R.bundle_json(meta, frames),
        deadline_s=deadline_s,
        max_attempts=max_attempts,
        allow_loopback=allow_loopback,
        clock=clock,
        backoff_s=backoff_s,
        verify=verify,
    )
    rec = outcome.record
    reason = outcome.reason
    if reason is None:
        payload = {
            "round_id": call.round_id,
            "model_id": call.endpoint.model_id,
            "rows": None,
        }
        try:
            payload["rows"] = answer_rows(call, outcome.rows, inputs, rec.completed_at)
            sub = accept(inputs, call.endpoint.team, payload, rec.completed_at)
            receipt = receipt_of(key, sub)
            inbox.finish_call(
                call.call_id,
                completed_at=rec.completed_at,
                record=_parquet(record_frame(outcome)),
                reason=None,
                submission=(sub, receipt),
            )
            return "valid"
        except Refused as r:
            where = f" (row {r.row})" if r.row else ""
            reason = f"refused {r.field}{where}: {r.reason}"
        except DuplicateRows as exc:
            reason = f"refused rows: {exc}"
    table, frame = invalid_rows(call, inputs, outcome, reason)
    inbox.finish_call(
        call.call_id,
        completed_at=rec.completed_at,
        record=_parquet(record_frame(outcome)),
        reason=reason,
        table_name=table,
        invalid_rows=_parquet(frame),
    )
    return f"invalid: {reason}"


def recover_interrupted(inputs: R.RoundInputs, inbox, at: datetime) -> list[str]:
    """Calls claimed but never finished (the service stopped during them: a call is never repeated) are kept
    invalid with the reason ``interrupted: ...`` and a failed call record (requested at the claim, completed
    at ``at``), so every call made is accounted for. Run once when the service starts; returns their ids."""
    ends = {e.model_id: e for e in inbox.endpoints()}
    done = []
    for c in inbox.running_calls():
        e = ends.get(c["model_id"]) or Endpoint(c["team"], c["model_id"], "https://unregistered.invalid/", "")
        slot = datetime.fromisoformat(c["slot_at"]).astimezone(UTC)
        try:
            rnd = R.find_round(inputs, c["round_id"])
        except R.RoundError:
            continue  # the round is no longer in the store: nothing to attach the rows to
        call = DueCall(e, c["round_id"], c["track"], slot, rnd.due_at, c["call_id"])
        requested = datetime.fromisoformat(c["claimed_at"]).astimezone(UTC)
        reason = "interrupted: the service stopped during the call"
        messages = [{"role": "bundle", "content": {"call_id": call.call_id, "slot": _iso(slot)}}]
        rec = _call_record(
            call,
            messages,
            {"method": "POST", "url": safe_url(e.url)},
            requested,
            max(at, requested),
            status="failed",
            attempts=1,
            latency_s=max(0.0, (at - requested).total_seconds()),
            error=reason,
        )
        outcome = CallOutcome(rec, None, reason)
        table, frame = invalid_rows(call, inputs, outcome, reason)
        inbox.finish_call(
            call.call_id,
            completed_at=rec.completed_at,
            record=_parquet(record_frame(outcome)),
            reason=reason,
            table_name=table,
            invalid_rows=_parquet(frame),
        )
        done.append(call.call_id)
    return done


def run_due(
    inputs: R.RoundInputs,
    inbox,
    key,
    at: datetime,
    *,
    pool: ThreadPoolExecutor | None = None,
    **kw,
) -> list[Future | str]:
    """Claim and make every call due at ``at`` (:func:`due_calls`), each once; on ``pool`` when given (the
    service's scheduler: returns the futures), else one after another (returns their outcomes)."""
    calls = due_calls(inputs, inbox.endpoints(), at, deadline_s=kw.get("deadline_s", DEADLINE_S))
    out: list[Future | str] = []
    for c in calls:
        if not inbox.claim_call(c):
            continue
        if pool is not None:
            out.append(pool.submit(run_call, c, inputs, inbox, key, **kw))
        else:
            out.append(run_call(c, inputs, inbox, key, **kw))
    return out
