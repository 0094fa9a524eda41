"""Secrets never stored, never logged (issue 17): a local provider that echoes the caller's keys back in every
field it has (answer content and rationale, reasoning text, citation URLs and titles, an error body, header
text) runs through the product's LLM path (the ``llm_nowcasts`` asset, Dagster, litellm, the wire formats);
afterwards no text column of any stored table and no log (pytest's captured records, the Dagster event log
with its materialization metadata) holds any of the keys.

The keys are shaped so that only the exact-value rule can catch some of them (the environment variables'
values, registered by ``resources.secrets``), and others only by their provider/cloud shape."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from dagster import DagsterInstance, materialize
from dagster._serdes import serialize_value
from llm_wire_server import WireReply, WireRequest, anthropic_error, reply_ok, wire_server  # noqa: F401

from assets.macro_nowcasts import llm_nowcasts
from leaf_live.core import storage
from leaf_live.macro.catalog import get_indicator, indicators_in_group
from resources import default_resources
from resources.secrets import register_environment_secrets
from tests.assets.test_macro_nowcasts_llm import _windows

# environment secrets with no provider shape: only their exact values identify them
ENV_SECRETS = {
    "OPENAI_API_KEY": "echo-me-Plain-openai-value-4711",
    "ANTHROPIC_API_KEY": "echo-me-Plain-anthropic-value-0815",
    "AWS_SECRET_ACCESS_KEY": "Qz7/bare+secret/NoPrefix/forty/chars9XY",
    "LEAF_TEST_DB_PASSWORD": "correct horse battery staple",
    "MY_SERVICE_TOKEN": "tok-plain-123-abc",
}
# secrets that are in no environment variable: only their shape identifies them
SHAPED = {
    "openai_short": "sk-Ab12Cd34Ef",
    "anthropic": "sk-ant-api03-q8Wm2Xn4Yb6Zc-Vd9Ue1Tf3Sg5Rh7Pi0Oj",
    "google": "AIzaSyD3x9k2L7mQ8rT4vW1yZ5bC6nH0jF",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "slack": "xoxb-123456789012-abcdefABCDEF",
    "bearer": "abcDEF123ghiJKL456mno",
}
MODELS = "openai/gpt-5-search-api@single,anthropic/claude-sonnet-4-5@single"


def _echo(req: WireRequest) -> WireReply:
    """Everything this server knows, echoed: the request's own key header and every secret, in each field."""
    sent = " ".join(f"{k}: {v}" for k, v in req.headers.items() if k in ("authorization", "x-api-key"))
    shaped = [
        v for k, v in SHAPED.items() if k != "bearer"
    ]  # a bare random token has no shape: only in a header
    bearer = SHAPED["bearer"]
    leak = " | ".join(
        [sent, *ENV_SECRETS.values(), *shaped, f"Authorization: Bearer {bearer}", f"bearer {bearer}"]
    )
    if req.api == "anthropic":  # the second model: refused, the error body echoing everything
        return anthropic_error(401, "authentication_error", f"invalid x-api-key {leak}")
    body = {
        i: {
            "value": round((g.lo + g.hi) / 2 if g.lo > 0 else 1.5, 1),
            "unit": get_indicator(i).unit,
            "rationale": f"my key is {leak}",
            "sources": [f"https://example.com/data?api_key={ENV_SECRETS['OPENAI_API_KEY']}"],
        }
        for i, g in ((i, get_indicator(i).guardrail) for i in indicators_in_group(req.group))
    }
    reply = reply_ok(
        req,
        json.dumps(body),
        annotations=[{"url": f"https://example.com/?token={SHAPED['github']}", "title": f"leak {leak}"}],
    )
    msg = reply.body["choices"][0]["message"]
    msg["reasoning_content"] = f"thinking about {leak}"
    reply.body["system_fingerprint"] = leak
    return reply


def _every_secret() -> list[str]:
    return [*ENV_SECRETS.values(), *SHAPED.values()]


def test_echoing_provider_leaves_no_key_in_any_table_or_log(tmp_path, wire_server, monkeypatch, caplog):
    for k, v in ENV_SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("LEAF_LIVE_LLM_MODELS", MODELS)
    monkeypatch.setenv("LEAF_LIVE_LLM_API_BASE", wire_server.url)
    monkeypatch.setenv("LEAF_LIVE_LLM_RPM", "6000")
    monkeypatch.setenv("LEAF_LIVE_LLM_MAX_ATTEMPTS", "1")
    wire_server.reset(_echo)
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    db = tmp_path / "echo.duckdb"
    with storage.open_db(db) as con:
        win = _windows(hour)
        storage.replace_partition(con, "nowcast_windows", win, {"partition_key": win["partition_key"][0]})
    try:
        with DagsterInstance.ephemeral() as instance, caplog.at_level(logging.DEBUG):
            result = materialize(
                [llm_nowcasts],
                resources=default_resources(db=db),
                instance=instance,
                partition_key=f"{hour:%Y-%m-%d-%H:%M}",
            )
            assert result.success
            records = instance.get_records_for_run(result.run_id).records
            event_text = "\n".join(serialize_value(r.event_log_entry) for r in records)
        # the server did receive the keys and did echo them (the test would prove nothing otherwise)
        assert {r.api for r in wire_server.requests} == {"openai", "anthropic"}
        assert any(
            ENV_SECRETS["OPENAI_API_KEY"] in r.headers.get("authorization", "") for r in wire_server.requests
        )

        con = storage.connect_read_only(db)
        try:
            calls = storage.read_table(con, "llm_calls")
            nowcasts = storage.read_table(con, "nowcasts")
            stored = []
            for name, _ in storage.table_summary(con):
                for c in storage.get_table(name).columns:
                    if c.type in ("VARCHAR", "JSON"):
                        stored += [
                            (name, c.name, v)
                            for (v,) in con.execute(
                                f'SELECT "{c.name}" FROM "{name}" WHERE "{c.name}" IS NOT NULL'
                            ).fetchall()
                        ]
        finally:
            con.close()
        # the product path stored what it should: both models' calls, the openai answers with rationale
        assert set(calls["status"]) == {"ok", "failed"} and calls.height == 4
        assert nowcasts.filter(nowcasts["rationale"].is_not_null()).height >= 16
        assert any("***" in (v or "") for v in nowcasts["rationale"].to_list())
        assert all("authentication_error" in e or "401" in e for e in calls["error"].drop_nulls().to_list())

        logs = caplog.text + "\n" + event_text
        for secret in _every_secret():
            leaked = [(t, c) for t, c, v in stored if secret in v]
            assert not leaked, f"{secret!r} stored in {leaked[:3]}"
            assert secret not in logs, f"{secret!r} in a log"
    finally:
        register_environment_secrets({})
