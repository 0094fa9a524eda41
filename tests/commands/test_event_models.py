"""``leaf-live run --event-models``: the costed path to real models, end to end against the local wire server
(real HTTP, real litellm, the project's Dagster jobs) on two SEER stocks' tasks of the 2026-03-25 cutoff.

Identities tested: with the server answering the token counts the plan assumed, the printed estimate
equals the sum of the stored per-call costs and the plan's call count the stored call count (and
litellm's cost of the stored token counts equals the stored costs); a budget stop stores what finished
and a rerun makes only the missing calls, ending at the uninterrupted run's stored state; a provider
answering 500 for a while (and 429 once) mid-run loses nothing and the rerun makes exactly the failed
calls again; an estimate above --max-usd without --yes is refused in one line before any call."""

import hashlib
import json
import re
import shutil
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest
from llm_wire_server import WireRequest, openai_error, reply_ok, wire_server  # noqa: F401

from leaf_live import cli
from leaf_live.commands import event_models
from leaf_live.commands.common import CommandError
from leaf_live.core import storage
from leaf_live.core.llm import token_cost
from leaf_live.event import costs
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices
from leaf_live.event.sources.recorded_events import read_seer_case
from leaf_live.event.tasks import market_tasks
from resources import LLMResource, default_resources

GPT, CLAUDE = "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"
TICKERS = ("ADBE", "AAPL")
DAY = date(2026, 3, 25)
EVENTS_PER_WEEK = 2


@pytest.fixture(autouse=True)
def _provider_env(monkeypatch):
    for k, v in (
        ("OPENAI_API_KEY", "sk-test-local-0000000000"),
        ("ANTHROPIC_API_KEY", "sk-ant-test-local-0000000000"),
        ("NO_PROXY", "127.0.0.1,localhost"),
        ("no_proxy", "127.0.0.1,localhost"),
    ):
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("LEAF_LIVE_LLM_MODELS", raising=False)


@pytest.fixture(scope="module")
def tasks_db(tmp_path_factory, snapshot_dir) -> Path:
    """Two SEER stocks' prices around the case and their 6 tasks (trend3, trend5 at one session, series at
    three) of the 2026-03-25 cutoff, made by the task science."""
    case = read_seer_case(snapshot_dir)
    assert set(TICKERS) <= set(case.tickers)
    db = tmp_path_factory.mktemp("models") / "models.duckdb"
    prices = to_market_prices(
        SnapshotDailyPrices(snapshot_dir).daily_bars(TICKERS, date(2026, 2, 20), date(2026, 4, 10))
    )
    ts = market_tasks(
        prices,
        "large_cap",
        TICKERS,
        date(2026, 3, 5),
        date(2026, 4, 4),
        series_horizons=(3,),
        trend_horizons=(1,),
    )
    day = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date() == DAY
    tasks = ts.tasks.filter(day)
    outcomes = ts.outcomes.filter(pl.col("task_id").is_in(tasks["task_id"]))
    with storage.open_db(db) as con:
        storage.replace_partition(
            con, "market_prices", prices, {"partition_key": sorted(set(prices["partition_key"]))}
        )
        storage.replace_partition(con, "forecast_tasks", tasks, {"partition_key": [DAY.isoformat()]})
        storage.replace_partition(con, "task_outcomes", outcomes, {"partition_key": [DAY.isoformat()]})
    assert tasks.height == 6
    return db


def tokens(stage: str) -> dict:
    """The usage the plan assumed for a stage, in the reply's own wire format."""
    p, c = costs.TOKENS_PER_CALL[stage]
    return {"prompt_tokens": p, "completion_tokens": c}


def usage_kw(req: WireRequest, stage: str) -> dict:
    p, c = costs.TOKENS_PER_CALL[stage]
    return {"input_tokens": p, "output_tokens": c} if req.api == "anthropic" else tokens(stage)


def respond(req: WireRequest):
    """Retrieval: EVENTS_PER_WEEK new events in round 1 (dated by the documents shown), none after; checkers:
    both confirm the reference date; forecasts: the last close, Neutral. Each with the plan's token counts."""
    text = req.text()
    if "<document id=" in text:
        if "Events already identified" in text:
            return reply_ok(req, "[]", **usage_kw(req, "retrieval"))
        docs = re.findall(r'<document id="([0-9a-f]+)" published=', text)
        monday = date.fromisoformat(re.search(r"Interval: (\d{4}-\d\d-\d\d) to", text).group(1))
        evs = []
        for i in range(EVENTS_PER_WEEK):
            doc, day = docs[i], (monday + timedelta(days=i)).isoformat()
            words = " ".join(hashlib.sha256(f"{doc}{i}{k}".encode()).hexdigest()[:10] for k in range(6))
            evs.append(
                {
                    "date": day,
                    "description": f"Company disclosed {words} development.",
                    "causality": "c",
                    "sentiment": "Positive",
                    "impact_type": "Direct",
                    "sources": [doc],
                }
            )
        return reply_ok(req, json.dumps(evs), **usage_kw(req, "retrieval"))
    ref = re.search(r"Reference date: (\d{4}-\d\d-\d\d)", text)
    if ref:
        return reply_ok(
            req,
            f"<reasoning>filings</reasoning><factual>True</factual><date>{ref.group(1)}</date>",
            **usage_kw(req, "fact_check"),
        )
    stage = "forecast:ts" if "No events are available" in text else "forecast:events"
    if "exactly 3 plain numbers" in text:
        last = float(re.findall(r"(\d{4}-\d\d-\d\d), ([\d.]+)\n\nEvents", text)[-1][1])
        return reply_ok(
            req, f"<prediction>{last:.2f}, {last:.2f}, {last:.2f}</prediction>", **usage_kw(req, stage)
        )
    return reply_ok(req, "<prediction>Neutral</prediction>", **usage_kw(req, stage))


def plan(max_usd: float, yes: bool = True) -> event_models.ModelsPlan:
    args = cli_args(
        ["--event-models", f"{GPT},{CLAUDE}", "--max-usd", str(max_usd), "--events-per-week", "2"]
    )
    p = event_models.check_args(args)
    return p if not yes else event_models.ModelsPlan(**{**p.__dict__, "yes": True})


def cli_args(extra: list[str]):
    import argparse

    r = argparse.ArgumentParser()
    event_models.add_arguments(r)
    return r.parse_args(extra)


def resources(db: Path, snapshot_dir, server, concurrency: int = 16) -> dict:
    llm = LLMResource(
        api_base=server.url, rpm="60000", concurrency=str(concurrency), timeout_s="5", max_attempts="2"
    )
    return {**default_resources(db=db, snapshot=snapshot_dir), "llm": llm}


def stored(db: Path) -> dict:
    with storage.open_db(db) as con:
        calls = storage.read_table(con, "llm_calls")
        out = {
            "ok": calls.filter(pl.col("status") == "ok").height,
            "failed": calls.filter(pl.col("status") == "failed").height,
            "usd": float(calls["cost_usd"].sum() or 0.0),
            "by_role": dict(calls.filter(pl.col("status") == "ok").group_by("role").len().iter_rows()),
            "forecasts": con.execute(
                "SELECT count(*) FROM leaf_forecasts WHERE producer = 'leaf_llm_forecasts' AND valid"
            ).fetchone()[0],
            "kept": con.execute("SELECT count(*) FROM fact_checked_events WHERE kept").fetchone()[0],
        }
        # litellm's cost of the stored token counts, call by call
        out["usd_from_tokens"] = sum(
            token_cost(r["model"], r["prompt_tokens"], r["completion_tokens"])
            for r in calls.filter(pl.col("status") == "ok").iter_rows(named=True)
        )
    return out


def run(db, snapshot_dir, server, p, responder=respond, concurrency=16):
    server.reset(responder)
    lines: list[str] = []
    code = event_models.run_event_models(
        db, resources(db, snapshot_dir, server, concurrency), p, say=lines.append
    )
    return code, "\n".join(lines), len(server.requests)


def expected_calls() -> dict:
    # 2 weeks (03-09, 03-16: the look-back weeks ended by 03-25) x 2 stocks = 4 retrievals x 3 rounds; 4 x 2
    # events x 2 checkers; 6 tasks x 3 trials x (ts, events) x 2 models
    return {"retriever": 12, "checker": 16, "forecaster": 72}


def test_the_plan_and_its_prices():
    assert costs.retrieval_weeks(DAY, 14, date(2025, 9, 29)) == [date(2026, 3, 9), date(2026, 3, 16)]
    assert costs.retrieval_weeks(date(2026, 3, 22), 14, date(2025, 9, 29)) == [
        date(2026, 3, 9),
        date(2026, 3, 16),
    ]  # a Sunday cutoff: its own week has ended
    lines = costs.plan_calls(
        retrievals=4, tasks=6, retriever="a", checkers=("a", "b"), forecasters=["a", "b"], events_per_week=2
    )
    assert [(x.stage, x.model, x.calls) for x in lines] == [
        ("retrieval", "a", 12),
        ("fact_check", "a", 8),
        ("fact_check", "b", 8),
        ("forecast:ts", "a", 18),
        ("forecast:events", "a", 18),
        ("forecast:ts", "b", 18),
        ("forecast:events", "b", 18),
    ]
    priced = costs.estimate_usd(lines, {"a": (1e-6, 2e-6), "b": (3e-6, 0.0)})
    # retrieval: 12 x (15,000 x 1e-6 + 2,900 x 2e-6) = 12 x 0.0208
    assert priced[0][1] == pytest.approx(0.2496)
    assert priced[2][1] == pytest.approx(8 * 700 * 3e-6)
    with pytest.raises(KeyError, match="b: no price"):
        costs.estimate_usd(lines, {"a": (1e-6, 2e-6)})


def test_estimate_equals_stored_cost_and_a_rerun_calls_nothing(tasks_db, snapshot_dir, wire_server, tmp_path):
    db = Path(shutil.copy(tasks_db, tmp_path / "full.duckdb"))
    p = plan(max_usd=10.0, yes=False)
    with storage.open_db(db) as con:
        work = event_models.plan_work(con, p)
    assert work.retrieval_keys == (
        "2026-03-09|AAPL",
        "2026-03-09|ADBE",
        "2026-03-16|AAPL",
        "2026-03-16|ADBE",
    )
    assert work.calls == 100 and work.usd < 10.0
    code, out, requests = run(db, snapshot_dir, wire_server, p)
    assert code == 0, out
    assert requests == 100
    got = stored(db)
    assert got["ok"] == work.calls and got["failed"] == 0
    assert got["by_role"] == expected_calls()
    assert got["usd"] == pytest.approx(work.usd, rel=1e-9)  # the printed estimate = the stored per-call costs
    assert got["usd_from_tokens"] == pytest.approx(got["usd"], rel=1e-9)
    assert f"{work.usd:>10.4f}" in out.splitlines()[-2] or f"{work.usd:.4f}" in out
    assert got["kept"] == 8 and got["forecasts"] == 24  # 6 tasks x (ts, events) x 2 models, all valid
    with storage.open_db(db) as con:
        ctx = con.execute("SELECT context FROM leaf_forecasts WHERE model_id LIKE '%:events'").fetchall()
    assert ctx and all(json.loads(c)["events"] for (c,) in ctx)  # the retrieved, kept events reached them
    # the same command again: every request is answered from the stored calls, nothing is paid twice
    code, out, requests = run(db, snapshot_dir, wire_server, p)
    assert code == 0 and requests == 0
    assert "100 of these calls are stored already" in out
    assert stored(db) == got


def test_the_budget_stops_the_run_and_a_rerun_resumes(tasks_db, snapshot_dir, wire_server, tmp_path):
    db = Path(shutil.copy(tasks_db, tmp_path / "budget.duckdb"))
    per_retrieval = token_cost(GPT, *costs.TOKENS_PER_CALL["retrieval"])
    budget = 2.5 * per_retrieval  # spent after the 3rd call, one at a time
    code, out, requests = run(db, snapshot_dir, wire_server, plan(budget), concurrency=1)
    assert code == event_models.EXIT_BUDGET
    got = stored(db)
    assert requests == 3 and got["ok"] == 3 and got["usd"] == pytest.approx(3 * per_retrieval)
    assert got["usd"] >= budget
    # the first retrieval finished and is stored; its fact-checks were not made (stored as failed, not called)
    with storage.open_db(db) as con:
        errs = con.execute(
            "SELECT DISTINCT attempts, error FROM llm_calls WHERE status = 'failed'"
        ).fetchall()
        assert con.execute("SELECT count(*) FROM retrieved_events WHERE valid").fetchone()[0] == 2
    assert len(errs) == 1 and errs[0][0] == 0 and errs[0][1].startswith("not called: budget reached")
    # rerun with room: only the 97 calls not stored are made; the end state is the uninterrupted run's
    code, out, requests = run(db, snapshot_dir, wire_server, plan(10.0))
    assert code == 0 and requests == 97
    got = stored(db)
    assert got["ok"] == 100 and got["failed"] == 0 and got["by_role"] == expected_calls()
    with storage.open_db(db) as con:
        work = event_models.plan_work(con, plan(10.0))
    assert got["usd"] == pytest.approx(work.usd, rel=1e-9) and got["forecasts"] == 24


def test_a_provider_failing_mid_run_loses_nothing_and_the_rerun_makes_only_the_failed_calls(
    tasks_db, snapshot_dir, wire_server, tmp_path
):
    db = Path(shutil.copy(tasks_db, tmp_path / "fail.duckdb"))
    seen_429 = []

    def flaky(req: WireRequest):
        text = req.text()
        if "Reference date:" in text and not seen_429:  # one 429, retried: the call succeeds
            seen_429.append(1)
            return openai_error(429, "rate limited", "rate_limit_error", {"retry-after": "0"})
        if "No events are available" in text and "Adobe" in text:  # down for ADBE's ts forecasts
            return openai_error(500, "internal error")
        return respond(req)

    code, out, requests = run(db, snapshot_dir, wire_server, plan(10.0), responder=flaky)
    assert code == 1
    got = stored(db)
    # ADBE's 3 tasks x 3 trials x 2 models ts forecasts failed after 2 attempts each; the rest is stored
    assert got["failed"] == 18 and got["ok"] == 82 and requests == 82 + 1 + 18 * 2
    with storage.open_db(db) as con:
        retried = "SELECT count(*) FROM llm_calls WHERE status = 'ok' AND attempts = 2"
        assert con.execute(retried).fetchone()[0] >= 1  # the 429 was retried and answered
        assert (
            con.execute(
                "SELECT count(*) FROM leaf_forecasts WHERE producer = 'leaf_llm_forecasts' AND NOT valid"
            ).fetchone()[0]
            == 6  # ADBE's 3 tasks x 2 models, ts: every trial failed
        )
    code, out, requests = run(db, snapshot_dir, wire_server, plan(10.0))
    assert code == 0 and requests == 18  # exactly the failed calls
    got = stored(db)
    assert got["ok"] == 100 and got["failed"] == 0 and got["forecasts"] == 24


def test_an_estimate_above_the_budget_without_yes_is_refused_before_any_call(
    tasks_db, snapshot_dir, wire_server, tmp_path
):
    db = Path(shutil.copy(tasks_db, tmp_path / "refused.duckdb"))
    with pytest.raises(CommandError) as exc:
        run(db, snapshot_dir, wire_server, plan(0.01, yes=False))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("the estimate ") and "above --max-usd 0.01: add --yes" in msg
    assert not wire_server.requests
    with storage.open_db(db) as con:
        assert con.execute("SELECT count(*) FROM llm_calls").fetchone()[0] == 0


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--max-usd", "2"], "leaf-live run: --max-usd needs --event-models"),
        (
            ["--event-models", GPT],
            f"leaf-live run: --event-models '{GPT}': the dual fact-check needs two different models",
        ),
        (
            ["--event-models", f"{GPT},{CLAUDE}", "--max-usd", "-1"],
            "leaf-live run: --max-usd -1.0: expected a positive number of USD",
        ),
        (
            ["--event-models", f"{GPT},{CLAUDE}", "--event-models-from", "2026-3-25"],
            "leaf-live run: --event-models-from '2026-3-25': expected a day YYYY-MM-DD",
        ),
    ],
)
def test_bad_flags_are_one_line_before_anything_runs(argv, line, tmp_path):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--db", str(tmp_path / "x.duckdb"), *argv])
    assert str(exc.value) == line
    assert not (tmp_path / "x.duckdb").exists()
