"""Span-exact reruns (issue 17): a run replaces exactly the partitions it was asked for. A narrower event span
whose day partitions are wider than it (``--event-from/--event-to`` inside the mid caps' day range) would
remove stored tasks of other days: ``leaf-live run`` says so in one line before any write, and the
``forecast_tasks`` step refuses the removal itself (nothing written) unless ``--replace-wider`` is given."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.event_tasks import forecast_tasks
from leaf_live.cli import EventPlan, check_span_exact, event_day_runs, run_event_track, wider_than_asked
from leaf_live.commands.common import CommandError
from leaf_live.core import storage
from leaf_live.event.pipeline import Spans
from resources import default_resources

SPANS = Spans(
    markets=(date(2025, 11, 1), date(2025, 12, 31)),
    mid_cap_months=(date(2025, 6, 1), date(2025, 12, 1)),
    weather=(date(2025, 11, 1), date(2025, 12, 31)),
    electricity=(date(2019, 1, 1), date(2019, 1, 31)),
    case_days=(),
)
NARROW = replace(SPANS, markets=(date(2025, 12, 1), date(2025, 12, 24)))
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@pytest.fixture(scope="module")
def built(tmp_path_factory, snapshot_dir) -> Path:
    db = tmp_path_factory.mktemp("span") / "span.duckdb"
    plan = EventPlan(SPANS, statistical=(), n_jobs=1, tsfm=(), boot_draws=50)
    assert run_event_track(plan, default_resources(db=db, snapshot=snapshot_dir), DagsterInstance.ephemeral())
    return db


def _tasks(db: Path) -> pl.DataFrame:
    con = storage.connect_read_only(db)
    try:
        return storage.read_table(con, "forecast_tasks", "domain <> 'event'").sort("task_id")
    finally:
        con.close()


def test_a_narrower_rerun_is_refused_before_any_write(built, tmp_path):
    db = Path(shutil.copy(built, tmp_path / "copy.duckdb"))
    before = _tasks(db)
    # the narrower markets span lies inside the mid caps' task days: the run would rewrite 2025-09-01 ..
    # 2026-01-01, and every large-cap / commodity task of those days outside 12-01 .. 12-24 would go
    assert (("2025-09-01", "2026-01-01"), ["forecast_tasks"]) in event_day_runs(NARROW)
    outside = before.filter(
        pl.col("domain").is_in(["large_cap", "commodity"]),
        ~pl.col("partition_key").is_between(pl.lit("2025-12-01"), pl.lit("2025-12-24")),
    )
    con = storage.connect_read_only(db)
    try:
        lost = wider_than_asked(con, NARROW)
    finally:
        con.close()
    assert {d for d, *_ in lost} == {"large_cap", "commodity"}
    assert sum(n for *_, n in lost) == outside.height > 0
    plan = EventPlan(NARROW, statistical=(), n_jobs=1, tsfm=(), boot_draws=50)
    with pytest.raises(CommandError) as err:
        check_span_exact(db, plan)
    msg = str(err.value)
    assert "\n" not in msg and f"{outside.height:,} stored tasks outside the spans" in msg
    assert "--replace-wider" in msg
    # the same spans again, or --replace-wider, pass the pre-check
    check_span_exact(db, EventPlan(SPANS, statistical=(), n_jobs=1, tsfm=(), boot_draws=50))
    check_span_exact(db, replace(plan, replace_wider=True))
    assert _tasks(db).equals(before)


def test_the_tasks_step_itself_refuses_the_removal_and_the_flag_allows_it(built, tmp_path, snapshot_dir):
    db = Path(shutil.copy(built, tmp_path / "copy.duckdb"))
    before = _tasks(db)
    resources = default_resources(db=db, snapshot=snapshot_dir)
    tags = {
        "dagster/asset_partition_range_start": "2025-09-01",
        "dagster/asset_partition_range_end": "2026-01-01",
    }
    narrow = EventPlan(NARROW, statistical=(), n_jobs=1, tsfm=(), boot_draws=50)
    result = materialize(
        [forecast_tasks],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        tags=tags,
        run_config={"ops": {"forecast_tasks": {"config": narrow.span_config()}}, **QUIET},
        raise_on_error=False,
    )
    assert not result.success
    errors = [ev.step_failure_data.error for ev in result.all_events if ev.is_step_failure]
    err = errors[0]
    while err.cause is not None:
        err = err.cause
    assert (
        "WiderReplaceError" in err.cls_name
        and "would remove" in err.message
        and "nothing written" in err.message
    )
    assert _tasks(db).equals(before)
    # the wide spans again: the same tasks, nothing removed
    wide = EventPlan(SPANS, statistical=(), n_jobs=1, tsfm=(), boot_draws=50)
    assert materialize(
        [forecast_tasks],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        tags=tags,
        run_config={"ops": {"forecast_tasks": {"config": wide.span_config()}}, **QUIET},
    ).success
    assert _tasks(db).select("task_id", "bundle_hash").equals(before.select("task_id", "bundle_hash"))
    # --replace-wider: the narrower spans replace the days, the other days' market tasks go
    assert materialize(
        [forecast_tasks],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        tags=tags,
        run_config={
            "ops": {"forecast_tasks": {"config": replace(narrow, replace_wider=True).span_config()}},
            **QUIET,
        },
    ).success
    after = _tasks(db)
    markets = after.filter(pl.col("domain").is_in(["large_cap", "commodity"]))
    assert (
        markets.height
        and markets["partition_key"].is_between(pl.lit("2025-12-01"), pl.lit("2025-12-24")).all()
    )
