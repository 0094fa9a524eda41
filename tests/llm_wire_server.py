"""A local LLM provider for tests and benchmarks: a threaded HTTP server on 127.0.0.1 that answers
``POST .../chat/completions`` in OpenAI's Chat Completions wire format, ``POST .../v1/messages`` in
Anthropic's Messages wire format and ``POST .../models/<model>:generateContent`` in the Gemini API format.
What it answers is decided by a ``responder`` function the test sets; every request is recorded (path,
headers, JSON body, arrival time) so tests can check what litellm sent.

Only loopback: the server binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_GROUP = re.compile(r"Variable group: (\w+)")
_ROLE = re.compile(r"Team role: (\w+)")


@dataclass
class WireRequest:
    path: str
    api: str  # openai | anthropic | gemini
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float  # time.monotonic()

    @property
    def model(self) -> str:
        if self.api == "gemini":  # the model is in the path: .../models/<model>:generateContent
            return self.path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        return str(self.body.get("model", ""))

    def text(self) -> str:
        """All message text of the request (system + messages, both wire formats)."""
        parts: list[str] = []
        if self.api == "gemini":
            for c in [self.body.get("system_instruction") or {}, *self.body.get("contents", [])]:
                parts.extend(p.get("text", "") for p in c.get("parts", []) if isinstance(p, dict))
            return "\n".join(parts)
        system = self.body.get("system")
        if isinstance(system, str):
            parts.append(system)
        elif isinstance(system, list):
            parts.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for m in self.body.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, list):
                parts.extend(b.get("text", "") for b in c if isinstance(b, dict))
        return "\n".join(parts)

    @property
    def group(self) -> str | None:
        m = _GROUP.search(self.text())
        return m.group(1) if m else None

    @property
    def role(self) -> str:
        m = _ROLE.search(self.text())
        return m.group(1).lower() if m else "single"


@dataclass
class WireReply:
    status: int = 200
    body: Any = None  # dict -> JSON; str/bytes sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Responder = Callable[[WireRequest], WireReply]


# ---------------------------------------------------------------------------------------------
# Real wire formats
# ---------------------------------------------------------------------------------------------


def openai_chat_completion(
    content: str | None,
    *,
    model: str,
    finish_reason: str = "stop",
    annotations: Sequence[Mapping[str, str]] = (),
    refusal: str | None = None,
    prompt_tokens: int = 1000,
    completion_tokens: int = 200,
) -> dict[str, Any]:
    """A Chat Completions response body as api.openai.com returns it (search models add
    ``url_citation`` annotations with character offsets into the content)."""
    anns = []
    for i, a in enumerate(annotations):
        anns.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "start_index": i,
                    "end_index": i + 1,
                    "title": a.get("title", ""),
                    "url": a["url"],
                },
            }
        )
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal, "annotations": anns},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": None,
    }


def anthropic_message(
    text: str,
    *,
    model: str,
    stop_reason: str = "end_turn",
    search_results: Sequence[Mapping[str, str]] = (),
    cited_spans: Sequence[tuple[str, Mapping[str, str]]] = (),
    input_tokens: int = 1000,
    output_tokens: int = 200,
    stop_details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response body as api.anthropic.com returns it with the web-search server tool:
    ``server_tool_use`` and ``web_search_tool_result`` blocks, then the answer as text blocks. As the API
    does, a cited span becomes its own text block carrying ``web_search_result_location`` citations, so
    the concatenated text blocks equal ``text`` exactly. ``usage.server_tool_use`` counts the searches."""
    blocks: list[dict[str, Any]] = []
    n_search = 0
    if search_results:
        n_search = 1
        tool_id = f"srvtoolu_{uuid.uuid4().hex[:20]}"
        blocks.append(
            {
                "type": "server_tool_use",
                "id": tool_id,
                "name": "web_search",
                "input": {"query": "latest US macro release"},
            }
        )
        blocks.append(
            {
                "type": "web_search_tool_result",
                "tool_use_id": tool_id,
                "content": [
                    {
                        "type": "web_search_result",
                        "url": r["url"],
                        "title": r.get("title", ""),
                        "encrypted_content": "EqgfCioIARgBIiQ3YTAw",
                        "page_age": "April 10, 2026",
                    }
                    for r in search_results
                ],
            }
        )
    rest = text
    for span, cit in cited_spans:
        i = rest.index(span)
        if i:
            blocks.append({"type": "text", "text": rest[:i]})
        blocks.append(
            {
                "type": "text",
                "text": span,
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": cit["url"],
                        "title": cit.get("title", ""),
                        "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0",
                        "cited_text": cit.get("cited_text", span),
                    }
                ],
            }
        )
        rest = rest[i + len(span) :]
    if rest or not blocks:
        blocks.append({"type": "text", "text": rest})
    body: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "server_tool_use": {"web_search_requests": n_search},
            "service_tier": "standard",
        },
    }
    if stop_details is not None:
        body["stop_details"] = dict(stop_details)
    return body


def gemini_generate_content(
    text: str,
    *,
    model: str,
    finish_reason: str = "STOP",
    grounding: Sequence[Mapping[str, str]] = (),
    prompt_tokens: int = 1000,
    completion_tokens: int = 200,
) -> dict[str, Any]:
    """A Gemini API ``generateContent`` response body; with Google Search grounding it carries
    ``groundingMetadata`` (search queries, web chunks and the supports linking answer segments to them)."""
    cand: dict[str, Any] = {
        "content": {"parts": [{"text": text}], "role": "model"},
        "finishReason": finish_reason,
        "index": 0,
    }
    if grounding:
        cand["groundingMetadata"] = {
            "webSearchQueries": ["latest US macro release"],
            "groundingChunks": [{"web": {"uri": g["url"], "title": g.get("title", "")}} for g in grounding],
            "groundingSupports": [
                {
                    "segment": {"startIndex": 0, "endIndex": min(len(text), 10), "text": text[:10]},
                    "groundingChunkIndices": list(range(len(grounding))),
                    "confidenceScores": [0.9] * len(grounding),
                }
            ],
        }
    return {
        "candidates": [cand],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": completion_tokens,
            "totalTokenCount": prompt_tokens + completion_tokens,
        },
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:22],
    }


def openai_tool_calls(calls: Sequence[tuple[str, Mapping[str, Any]]], *, model: str) -> dict[str, Any]:
    """A Chat Completions response asking for function calls: ``message.tool_calls`` with JSON-string
    arguments, ``finish_reason = "tool_calls"``, no content (as api.openai.com answers)."""
    body = openai_chat_completion(None, model=model, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(dict(args))},
        }
        for name, args in calls
    ]
    return body


def anthropic_tool_use(
    calls: Sequence[tuple[str, Mapping[str, Any]]], *, model: str, text: str = ""
) -> dict[str, Any]:
    """A Messages API response asking for client tools: ``tool_use`` blocks (object ``input``),
    ``stop_reason = "tool_use"``, optionally a text block before them."""
    body = anthropic_message(text, model=model, stop_reason="tool_use")
    blocks = [b for b in body["content"] if b.get("text")]
    blocks += [
        {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": dict(args)}
        for name, args in calls
    ]
    body["content"] = blocks
    return body


def gemini_function_calls(calls: Sequence[tuple[str, Mapping[str, Any]]], *, model: str) -> dict[str, Any]:
    """A Gemini ``generateContent`` response asking for function calls (``functionCall`` parts)."""
    body = gemini_generate_content("", model=model)
    body["candidates"][0]["content"]["parts"] = [
        {"functionCall": {"name": name, "args": dict(args)}} for name, args in calls
    ]
    return body


def tool_results(req: WireRequest) -> list[dict[str, Any]]:
    """The tool outputs a request carries back to the model, in any wire format, as ``{"id", "content"}``
    (OpenAI ``tool`` messages, Anthropic ``tool_result`` blocks, Gemini ``functionResponse`` parts, which the
    API also accepts in proto field spelling ``function_response``, as litellm sends them)."""
    out: list[dict[str, Any]] = []
    if req.api == "gemini":
        for c in req.body.get("contents", []):
            for p in c.get("parts", []):
                fr = p.get("functionResponse") or p.get("function_response") if isinstance(p, dict) else None
                if fr:
                    out.append({"id": fr.get("name"), "content": fr.get("response")})
        return out
    for m in req.body.get("messages", []):
        if req.api == "openai" and m.get("role") == "tool":
            out.append({"id": m.get("tool_call_id"), "content": m.get("content")})
        elif req.api == "anthropic" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c = b.get("content")
                    if isinstance(c, list):
                        c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
                    out.append({"id": b.get("tool_use_id"), "content": c})
    return out


def openai_error(
    status: int,
    message: str,
    type_: str = "server_error",
    headers: Mapping[str, str] | None = None,
    delay_s: float = 0.0,
) -> WireReply:
    return WireReply(
        status,
        {"error": {"message": message, "type": type_, "param": None, "code": None}},
        dict(headers or {}),
        delay_s,
    )


def anthropic_error(
    status: int, type_: str, message: str, headers: Mapping[str, str] | None = None
) -> WireReply:
    return WireReply(
        status, {"type": "error", "error": {"type": type_, "message": message}}, dict(headers or {})
    )


def reply_ok(req: WireRequest, content: str, **kw: Any) -> WireReply:
    """A 200 answer with ``content`` in the request's own wire format, echoing the requested model."""
    if req.api == "anthropic":
        return WireReply(200, anthropic_message(content, model=req.model, **kw))
    if req.api == "gemini":
        return WireReply(200, gemini_generate_content(content, model=req.model, **kw))
    return WireReply(200, openai_chat_completion(content, model=req.model, **kw))


# ---------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------


class WireServer:
    """Threaded HTTP/1.1 server on 127.0.0.1; ``url`` is the base to give litellm as ``api_base``."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder: Responder = responder or (lambda req: openai_error(500, "no responder set"))
        self.requests: list[WireRequest] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                if self.path.endswith("/chat/completions"):
                    api = "openai"
                elif self.path.endswith("/messages"):
                    api = "anthropic"
                elif ":generateContent" in self.path:
                    api = "gemini"
                else:
                    api = "unknown"
                req = WireRequest(
                    self.path, api, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic()
                )
                with server._lock:
                    server.requests.append(req)
                if api == "unknown":
                    reply = openai_error(404, f"no route {self.path}", "invalid_request_error")
                else:
                    try:
                        reply = server.responder(req)
                    except Exception as exc:  # a broken responder is a test bug: show it as a 500
                        reply = openai_error(500, f"responder raised {exc!r}")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body
                if isinstance(payload, (dict, list)):
                    data = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    data = payload.encode()
                else:
                    data = payload or b""
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self, responder: Responder | None = None) -> None:
        with self._lock:
            self.requests.clear()
        if responder is not None:
            self.responder = responder

    def requests_for(self, model: str) -> list[WireRequest]:
        with self._lock:
            return [r for r in self.requests if r.model == model]


@pytest.fixture(scope="module")
def wire_server() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy provider keys (litellm refuses to call without one) and no proxy for loopback."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-0000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-local-0000000000")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-local-0000000000000000")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("LEAF_LIVE_LLM_MODELS", raising=False)
