"""Sustained throughput of the LLM call path against a configured requests-per-minute limit.

Goal (issue 4): with a local OpenAI-compatible server that answers every request after 200 ms, the
async fan-out (``LLMClient.fan_out``: bounded concurrency + shared RPM limiter + retries + records)
sustains >= 90% of the configured requests per minute. Reference: the straightforward implementation,
one call after another, which cannot exceed 60 / latency requests per minute (300 at 200 ms).

Every request is a real litellm call over HTTP on 127.0.0.1 with the App. D output-core prompt; every
answer is parsed, so the run also counts valid nowcasts.

    .venv/bin/python benchmarks/llm_fanout.py [--rpm 600] [--seconds 30] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the loopback wire server used by the tests

from llm_wire_server import WireReply, WireServer, openai_chat_completion  # noqa: E402

from leaf_live.core.llm import CallRequest, LLMClient, LLMConfig, ModelSpec  # noqa: E402
from leaf_live.macro.agents.parsing import parse_nowcast_answer  # noqa: E402
from leaf_live.macro.agents.prompts import nowcast_messages  # noqa: E402
from leaf_live.macro.catalog import get_indicator, indicators_in_group  # noqa: E402
from leaf_live.process import prepare_process  # noqa: E402

GROUP = "output_core"
VALUES = {
    "real_gdp_advance": 2.0,
    "industrial_production": 0.4,
    "durable_goods": -1.1,
    "ism_manufacturing": 52.7,
    "cpi": 3.3,
    "ppi": 0.5,
    "pce_price_index": 0.4,
    "nonfarm_payrolls": 178.0,
    "unemployment_rate": 4.3,
}
ANSWER = json.dumps(
    {i: {"value": VALUES[i], "unit": get_indicator(i).unit} for i in indicators_in_group(GROUP)}
)


async def fan_out(config: LLMConfig, n: int) -> tuple[float, list]:
    client = LLMClient(config)
    spec = ModelSpec.parse("openai/gpt-5-search-api@single")
    msgs = tuple(nowcast_messages(GROUP, date(2026, 3, 1), date(2026, 4, 1)))
    t0 = time.perf_counter()
    results = await client.fan_out([CallRequest(spec, msgs, prompt_group=GROUP) for _ in range(n)])
    return time.perf_counter() - t0, results


async def sequential(config: LLMConfig, n: int) -> tuple[float, list]:
    client = LLMClient(config)
    spec = ModelSpec.parse("openai/gpt-5-search-api@single")
    msgs = nowcast_messages(GROUP, date(2026, 3, 1), date(2026, 4, 1))
    t0 = time.perf_counter()
    results = [await client.complete(spec, msgs, prompt_group=GROUP) for _ in range(n)]
    return time.perf_counter() - t0, results


def arrival_rate(server: WireServer) -> float:
    """Requests per minute between the first and the last arrival at the server (steady state)."""
    t = sorted(r.received_at for r in server.requests)
    return (len(t) - 1) / (t[-1] - t[0]) * 60.0 if len(t) > 1 else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rpm", type=float, default=600.0)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the fan-out run")
    ap.add_argument("--latency", type=float, default=0.2, help="server answer delay, seconds")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument(
        "--reference-seconds", type=float, default=6.0, help="length of the sequential reference run"
    )
    args = ap.parse_args()

    os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark-000000")
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    server = WireServer(
        lambda req: WireReply(200, openai_chat_completion(ANSWER, model=req.model), delay_s=args.latency)
    )
    server.start()
    try:
        config = LLMConfig(
            api_base=server.url,
            rpm=args.rpm,
            max_concurrency=args.concurrency,
            timeout_s=10.0,
            max_attempts=3,
            backoff_base_s=0.1,
            backoff_max_s=1.0,
            max_tokens=2000,
        )
        n = max(2, int(round(args.rpm * args.seconds / 60.0)))
        asyncio.run(fan_out(config, 2))  # warm up litellm's client cache and imports
        server.reset()
        elapsed, results = asyncio.run(fan_out(config, n))
        steady = arrival_rate(server)
        ok = sum(r.ok for r in results)
        valid = sum(
            parse_nowcast_answer(r.content, GROUP, finish_reason=r.record.finish_reason).n_valid
            for r in results
            if r.ok
        )
        achieved = n / elapsed * 60.0

        server.reset()
        n_ref = max(2, int(round(args.reference_seconds / args.latency)))
        ref_elapsed, ref_results = asyncio.run(sequential(config, n_ref))
        ref_rpm = n_ref / ref_elapsed * 60.0
    finally:
        server.stop()

    ratio = achieved / args.rpm
    print(
        f"server latency {args.latency * 1000:.0f} ms, configured {args.rpm:.0f} rpm, "
        f"concurrency {args.concurrency}, {n} calls"
    )
    print(
        f"fan-out:    {n} calls in {elapsed:.2f} s -> {achieved:.1f} rpm "
        f"(steady-state arrivals {steady:.1f} rpm); ok {ok}/{n}, valid nowcasts {valid}/{9 * n}"
    )
    print(
        f"sequential: {n_ref} calls in {ref_elapsed:.2f} s -> {ref_rpm:.1f} rpm "
        f"(ok {sum(r.ok for r in ref_results)}/{n_ref})"
    )
    print(f"achieved/configured = {ratio:.3f}  (goal >= 0.90)")
    print(f"steady-state/configured = {steady / args.rpm:.3f}")
    print(f"fan-out/sequential = {achieved / ref_rpm:.2f}x")
    return 0 if ratio >= 0.9 and ok == n else 1


if __name__ == "__main__":
    prepare_process()  # an entry point: litellm's local cost map, the log redaction
    raise SystemExit(main())
