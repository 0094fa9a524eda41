"""Crash consistency of every step that writes several tables (issue 17: "a test kills (-9) the run at each
multi-table step and shows the rerun equals a clean run"). The event-tasks step has its own test
(``test_crash_consistency.py``); this module covers the others, one case per step.

Each case runs the step's own write function (the one its asset or command calls) on frames generated in the
tables' real schemas (:func:`frame`): version ``v`` of a case puts ``v`` into every value, and rows with the
same index share their string values across tables, so a partner row (an event and its merge, a score and
its bets) is the row with the same index. A child python process writes versions 1 and 2 in turn into a store
holding version 0; the parent kills it with SIGKILL after a seeded random delay, several times, and after
each kill the store must equal a clean write of one version into a fresh file (all tables the same version,
every row with its partner); after the last kill a rerun (version 3) must equal a clean run of version 3."""

from __future__ import annotations

import multiprocessing
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from leaf_live.core import storage

ROWS = 500  # rows per table and version
KILLS = 3


def _value(dtype: pl.DataType, version: int, i: int, sql_type: str = ""):
    """Row ``i``'s value of a column of ``dtype`` (DuckDB type ``sql_type``) in version ``version`` (strings
    equal across tables)."""
    if dtype == pl.String:
        return f'{{"id": "v{version}-{i}"}}' if sql_type == "JSON" else f"v{version}-{i}"
    if dtype == pl.Boolean:
        return i % 2 == 0
    if dtype.is_float():
        return version + i / 1024
    if dtype.is_integer():
        return i
    if isinstance(dtype, pl.Datetime):
        return datetime(2025, 12, 1, tzinfo=UTC) + timedelta(minutes=i, seconds=version)
    if dtype == pl.Date:
        return date(2020, 1, 1) + timedelta(days=i + version)
    if isinstance(dtype, pl.List):
        return [_value(dtype.inner, version, i), _value(dtype.inner, version, i + 1)]
    raise AssertionError(f"no generated value for dtype {dtype}")


def frame(table: str, version: int, fixed: dict | None = None, rows: int = ROWS) -> pl.DataFrame:
    """``rows`` rows of ``table`` in its real schema; ``fixed`` maps columns to a value or a list of values
    taken in turn (partition columns, ids that tie the table to another)."""
    fixed = fixed or {}
    cols = {}
    spec = storage.get_table(table)
    for name, dtype in storage.polars_schema(table).items():
        want = fixed.get(name)
        if want is None:
            sql_type = spec.column(name).type
            cols[name] = [_value(dtype, version, i, sql_type) for i in range(rows)]
        elif isinstance(want, list):
            cols[name] = [want[i % len(want)] for i in range(rows)]
        else:
            cols[name] = [want] * rows
    return pl.DataFrame(cols, schema=storage.polars_schema(table))


@dataclass(frozen=True)
class Case:
    """One multi-table step: ``build(version)`` makes its inputs, ``write(con, inputs)`` is the step's
    write path (in ``module``); ``where`` restricts what a table's state reads (frozen rows no version
    owns); ``ignore`` drops columns the step stamps with the wall clock."""

    tables: tuple[str, ...]
    build: Callable[[int], object]
    write: Callable[[object, object], object]
    where: dict[str, str] = field(default_factory=dict)
    ignore: dict[str, tuple[str, ...]] = field(default_factory=dict)
    module: str = "assets.common"  # the write path's module, imported by the child before it is killed


# --- macro track ---------------------------------------------------------------------------------------


def _mode_scores(v):
    from assets.macro_scoring import MODE_TABLES

    names = ("scores", "decompositions", "relative_errors", "event_losses", "rankings")
    return SimpleNamespace(
        **{n: frame(t, v, {"partition_key": "full"}) for n, t in zip(names, MODE_TABLES, strict=True)}
    )


def _write_mode_scores(con, res):
    from assets.macro_scoring import write_mode_scores

    write_mode_scores(con, res, "full")


MARKETS = ["m-a", "m-b", "m-c"]


def _market_scores(v):
    return (
        frame("livebetting_scores", v, {"partition_key": MARKETS}),
        frame("livebetting_bets", v, {"partition_key": MARKETS}),
    )


def _write_market_scores(con, frames):
    from assets.macro_scoring import write_market_scores

    write_market_scores(con, *frames, MARKETS)


def _fit(v):
    fit_id = f"fit-{v}"  # every version fits anew: a new fit_id, the registry names it
    betas = frame("market_betas", v, {"fit_id": fit_id})
    registry = frame("market_beta_fits", v, {"fit_name": "full", "fit_id": fit_id}, rows=1)
    return fit_id, betas, registry


def _write_fit(con, inputs):
    from assets.macro_scoring import write_fit

    fit_id, betas, registry = inputs
    write_fit(con, fit_id, betas, registry, "full")


MONTHS = ["2025-11", "2025-12", "2026-01"]
SERIES = ["s-a", "s-b"]


def _arima(v):
    nowcasts = frame("nowcasts", v, {"producer": "arima_nowcasts", "partition_key": MONTHS})
    fits = frame("arima_fits", v, {"series_id": SERIES})
    return nowcasts, fits


def _write_arima(con, inputs):
    """What ``arima_nowcasts`` writes: the nowcasts of its months and each series' fit-cache slice."""
    from assets.common import write_tables

    nowcasts, fits = inputs
    also = [
        storage.Slice("arima_fits", rows, {"series_id": s})
        for (s,), rows in fits.group_by("series_id", maintain_order=True)
    ]
    write_tables(con, {"nowcasts": nowcasts}, MONTHS, extra_where={"producer": "arima_nowcasts"}, also=also)


MODELS = ["model-a", "model-b"]


def _recovery(v):
    return {
        t: frame(t, v, {"partition_key": MODELS}) for t in ("post_release_recovery", "post_release_paths")
    }


def _copying(v):
    tables = ("copying_convergence", "copying_gap_bins", "copying_comovement", "copying_event_time")
    return {t: frame(t, v, {"partition_key": MODELS}) for t in tables}


def _replace_models(con, frames):
    from assets.macro_analyses import replace_models

    replace_models(con, frames)


def _file_submission(v):
    from leaf_live.commands.submit import PRODUCER

    nowcasts = frame("nowcasts", v, {"producer": PRODUCER, "partition_key": MODELS})
    return nowcasts, f"{v:064x}", datetime(2026, 1, 5, v, tzinfo=UTC)  # each version: its file's sha256


def _write_file_submission(con, inputs):
    from leaf_live.commands.submit import PRODUCER, write_file_submission

    nowcasts, sha256, now = inputs
    where = {"producer": PRODUCER, "partition_key": MODELS}
    write_file_submission(con, "macro", "nowcasts", where, "model-a", nowcasts, sha256, now)


# --- event track ---------------------------------------------------------------------------------------

QUESTIONS = ["q-1", "q-2", "q-3"]
WEEK = "2025-12-01"


def _markets(v):
    return {
        "prediction_markets": frame("prediction_markets", v, {"partition_key": QUESTIONS}),
        "market_price_path": frame("market_price_path", v, {"partition_key": QUESTIONS}),
    }


def _write_markets(con, frames):
    """What ``prediction_markets`` writes: the questions and their price paths of its keys."""
    from assets.common import write_tables

    write_tables(con, frames, QUESTIONS)


def _retrieval(v):
    return frame("retrieved_events", v, {"partition_key": WEEK}), frame(
        "event_merges", v, {"partition_key": WEEK}
    )


def _write_retrieval(con, inputs):
    from assets.event_agents import write_retrieval

    write_retrieval(con, WEEK, *inputs)


def _fact_checks(v):
    return (
        frame("fact_checks", v, {"partition_key": WEEK}),
        frame("fact_checked_events", v, {"partition_key": WEEK}),
    )


def _write_fact_checks(con, inputs):
    from assets.event_agents import write_fact_checks

    write_fact_checks(con, WEEK, *inputs)


DAY = "llm:2025-12-01"


def _llm_forecasts(v):
    from assets.event_agents import LLM_PRODUCER

    return (
        frame("leaf_forecast_trials", v, {"partition_key": DAY}),
        frame("leaf_forecasts", v, {"partition_key": DAY, "producer": LLM_PRODUCER}),
    )


def _write_llm_forecasts(con, inputs):
    from assets.event_agents import write_llm_forecasts

    write_llm_forecasts(con, DAY, *inputs)


def _recorded(v):
    from leaf_live.event.sources.recorded_events import CASE_NAME

    keys = ["2026-03-23|t-a", "2026-03-23|t-b"]
    return (
        frame("retrieved_events", v, {"partition_key": keys}),
        frame("fact_checked_events", v, {"partition_key": keys}),
        frame("recorded_case_checks", v, {"partition_key": CASE_NAME}),
        frame("selective_predictions", v, {"partition_key": CASE_NAME}),
        keys,
    )


def _write_recorded(con, inputs):
    from assets.event_agents import write_recorded_case

    write_recorded_case(con, *inputs)


def _filter_rates(v):
    from leaf_live.event.analyses import AnalysisStatus

    frames = {
        t: frame(t, v, {"partition_key": "all"}) for t in ("event_filter_rates", "event_retrieval_costs")
    }
    return frames, AnalysisStatus("event_filter_rates", "ran", f"version {v}", ROWS)


def _write_analysis(con, inputs):
    from assets.event_analyses import write_analysis

    write_analysis(con, *inputs)


def _submission(v):
    sub = {
        "receipt_id": "r-1",
        "team": "team-a",
        "model_id": "model-a",
        "track": "event",
        "round_id": f"round-{v}",
        "table_name": "leaf_forecasts",
        "producer": "service",
        "partition_key": "model-a#r-1",
        "content_hash": f"{v:064x}",
        "n_rows": ROWS,
        "received_at": "2026-01-05T10:00:00+00:00",
        "due_at": None,
        "board": "live",
    }
    return sub, frame("leaf_forecasts", v, {"producer": "service", "partition_key": "model-a#r-1"})


def _write_submission(con, inputs):
    from leaf_live.service.store import write_submission

    write_submission(con, *inputs)


CASES: dict[str, Case] = {
    "macro_scores": Case(
        (
            "livemacro_scores",
            "score_decompositions",
            "relative_errors",
            "livemacro_event_losses",
            "livemacro_rankings",
        ),
        _mode_scores,
        _write_mode_scores,
        module="assets.macro_scoring",
    ),
    "livebetting": Case(
        ("livebetting_scores", "livebetting_bets"),
        _market_scores,
        _write_market_scores,
        module="assets.macro_scoring",
    ),
    # older fits stay stored, frozen: the state is the registry and the betas of the fit it names
    "market_betas": Case(
        ("market_beta_fits", "market_betas"),
        _fit,
        _write_fit,
        where={"market_betas": "fit_id IN (SELECT fit_id FROM market_beta_fits)"},
        module="assets.macro_scoring",
    ),
    "arima_nowcasts": Case(("nowcasts", "arima_fits"), _arima, _write_arima),
    "post_release_recovery": Case(
        ("post_release_recovery", "post_release_paths"),
        _recovery,
        _replace_models,
        module="assets.macro_analyses",
    ),
    "copying_tests": Case(
        ("copying_convergence", "copying_gap_bins", "copying_comovement", "copying_event_time"),
        _copying,
        _replace_models,
        module="assets.macro_analyses",
    ),
    "submit_file": Case(
        ("nowcasts", "external_receipts"),
        _file_submission,
        _write_file_submission,
        module="leaf_live.commands.submit",
    ),
    "prediction_markets": Case(("prediction_markets", "market_price_path"), _markets, _write_markets),
    "event_retrieval": Case(
        ("retrieved_events", "event_merges"), _retrieval, _write_retrieval, module="assets.event_agents"
    ),
    "event_fact_check": Case(
        ("fact_checks", "fact_checked_events"), _fact_checks, _write_fact_checks, module="assets.event_agents"
    ),
    "leaf_llm_forecasts": Case(
        ("leaf_forecast_trials", "leaf_forecasts"),
        _llm_forecasts,
        _write_llm_forecasts,
        module="assets.event_agents",
    ),
    "recorded_events": Case(
        ("retrieved_events", "fact_checked_events", "recorded_case_checks", "selective_predictions"),
        _recorded,
        _write_recorded,
        module="assets.event_agents",
    ),
    "event_filter_rates": Case(
        ("event_filter_rates", "event_retrieval_costs", "event_analysis_status"),
        _filter_rates,
        _write_analysis,
        ignore={"event_analysis_status": ("available_at",)},  # stamped with the wall clock
        module="assets.event_analyses",
    ),
    "service_submission": Case(
        ("leaf_forecasts", "external_receipts"),
        _submission,
        _write_submission,
        module="leaf_live.service.store",
    ),
}


def _child(name: str, db: str, ready) -> None:
    """The killed writer: the case's versions 1 and 2 written in turn into ``db`` until SIGKILL."""
    _register()
    case = CASES[name]
    inputs = [case.build(v) for v in (1, 2)]
    con = storage.connect(db)
    ready.set()
    i = 0
    while True:
        case.write(con, inputs[i % 2])
        i += 1


_MODULES = sorted({c.module for c in CASES.values()})


def _context():
    """A forkserver that has imported the write paths once (Dagster's import takes seconds): each killed
    writer is a fresh process forked from it, so a kill lands in the writes, not in an import."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["leaf_live.event", "leaf_live.macro", "leaf_live.core.participation", *_MODULES]
    )
    return ctx


def _register() -> None:
    import leaf_live.core.participation  # noqa: F401  (registers the tables)
    import leaf_live.event  # noqa: F401
    import leaf_live.macro  # noqa: F401


def _write(path: Path, case: Case, version: int) -> None:
    con = storage.connect(path)
    try:
        case.write(con, case.build(version))
    finally:
        con.close()


def _state(path: Path, case: Case) -> dict[str, list]:
    """Every table of the case as sorted rows (less the ignored columns)."""
    con = storage.connect(path)
    try:
        out = {}
        for t in case.tables:
            cols = [f'"{c}"' for c in storage.get_table(t).column_names if c not in case.ignore.get(t, ())]
            where = f" WHERE {case.where[t]}" if t in case.where else ""
            sql = f'SELECT {", ".join(cols)} FROM "{t}"{where} ORDER BY ALL'
            out[t] = con.execute(sql).fetchall()
    finally:
        con.close()
    return out


def _clean(tmp_path: Path, case: Case, version: int) -> dict[str, list]:
    path = tmp_path / f"clean-{version}.duckdb"
    _write(path, case, version)
    return _state(path, case)


def test_generated_partners_share_their_strings_and_versions_differ():
    """A partner row is the one with the same index: row i of an event and of its merge share event_id, and
    the versions differ in it."""
    _register()
    ev, merges = _retrieval(1)
    assert ev["event_id"].to_list() == merges["event_id"].to_list()
    assert ev["event_id"][7] == "v1-7" and _retrieval(2)[0]["event_id"][7] == "v2-7"
    assert ev["partition_key"].unique().to_list() == [WEEK]


@pytest.mark.parametrize("name", sorted(CASES))
def test_kill_minus_9_mid_step_leaves_one_whole_version_and_rerun_equals_clean(name, tmp_path):
    _register()
    case = CASES[name]
    clean = {v: _clean(tmp_path, case, v) for v in (0, 1, 2, 3)}
    for v in (1, 2, 3):  # every table tells the versions apart
        for t in case.tables:
            assert clean[v][t] != clean[0][t] and clean[v][t], (t, v)
    db = tmp_path / "crash.duckdb"
    _write(db, case, 0)  # the "before" state
    ctx = _context()
    rng = random.Random(f"issue17:{name}")
    seen = []
    for _ in range(KILLS):
        ready = ctx.Event()
        child = ctx.Process(target=_child, args=(name, str(db), ready), daemon=True)
        child.start()
        try:
            assert ready.wait(120), f"{name}: the writer did not start (exit code {child.exitcode})"
            time.sleep(rng.uniform(0.05, 0.8))
        finally:
            child.kill()  # SIGKILL
            child.join()
        assert child.exitcode == -signal.SIGKILL
        got = _state(db, case)
        whole = [v for v in (0, 1, 2) if got == clean[v]]
        mixed = {t: [v for v in (0, 1, 2) if got[t] == clean[v][t]] for t in case.tables}
        assert len(whole) == 1, f"{name}: tables hold no single version after the kill: {mixed}"
        seen.append(whole[0])
    assert set(seen) - {0}, f"{name}: no write ever completed before a kill ({seen})"
    _write(db, case, 3)  # the rerun after the kills equals a clean run into a fresh file
    assert _state(db, case) == clean[3]
