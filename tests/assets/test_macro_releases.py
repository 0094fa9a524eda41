"""The foundation graph through Dagster: the main job on the real snapshot, idempotent rematerialization,
a malformed partition that fails loudly and keeps its previous rows, definitions that validate."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.macro_releases import MACRO_RELEASE_ASSETS
from leaf_live.core import storage
from leaf_live.definitions import defs
from resources import default_resources

ROOT = Path(__file__).resolve().parents[2]
PANEL = "livemacroeval/Results/market_surprise_capture_score/step_15_2_historical_preprocessing"
PARTITIONED = [a for a in MACRO_RELEASE_ASSETS if a.partitions_def is not None]


@pytest.fixture(scope="module")
def built_db(main_run) -> Path:
    return main_run["db"]


def _counts(db: Path, table: str) -> dict[str, int]:
    con = storage.connect_read_only(db)
    try:
        return dict(con.execute(f"SELECT partition_key, count(*) FROM {table} GROUP BY 1").fetchall())
    finally:
        con.close()


def _materialize(db: Path, snapshot: Path, key: str, raise_on_error: bool = True):
    return materialize(
        PARTITIONED,
        resources=default_resources(db=db, snapshot=snapshot),
        instance=DagsterInstance.ephemeral(),
        partition_key=key,
        raise_on_error=raise_on_error,
    )


def test_main_job_covers_the_whole_release_history(built_db, snapshot_dir):
    con = storage.connect_read_only(built_db)  # analysts can open it read-only once nothing writes
    try:
        lo, hi = con.execute("SELECT min(partition_key), max(partition_key) FROM releases").fetchone()
        assert (lo, hi) == ("2010-01", "2026-05")
        n_hist = con.execute(
            "SELECT count(*) FROM releases WHERE release_at < TIMESTAMPTZ '2025-11-01 00:00:00+00'"
        ).fetchone()[0]
        panel = pl.read_csv(snapshot_dir / PANEL / "field_releases.csv")
        assert n_hist == panel.height == 2733
        usable = con.execute(
            "SELECT count(*) FROM surprise_events WHERE window_status = 'usable' "
            "AND release_at < TIMESTAMPTZ '2025-11-01 00:00:00+00'"
        ).fetchone()[0]
        assert usable == 2163
        # sigma for CPI in the reporting unit (percent) equals the released sigma_by_field value.
        sigma = con.execute("SELECT sigma FROM surprise_scales WHERE indicator_id = 'cpi'").fetchone()[0]
        assert sigma == pytest.approx(0.12863829426228138, rel=1e-12)
        # Payrolls are stored in thousands: the panel's persons / 1000.
        a = con.execute(
            "SELECT actual FROM releases WHERE indicator_id = 'nonfarm_payrolls' "
            "AND release_at = TIMESTAMPTZ '2020-06-05 12:30:00+00'"
        ).fetchone()[0]
        assert a == pytest.approx(2509.0)
        # Every month from 2010-01 to 2026-05 holds releases (197 months).
        assert con.execute("SELECT count(DISTINCT partition_key) FROM releases").fetchone()[0] == 197
    finally:
        con.close()


def test_rematerializing_a_partition_twice_keeps_counts(built_db, snapshot_dir, tmp_path):
    built_db = Path(shutil.copy(built_db, tmp_path / "copy.duckdb"))
    tables = ["release_calendar", "releases", "announcement_returns", "surprise_events"]
    before = {t: _counts(built_db, t) for t in tables}
    for _ in range(2):
        assert _materialize(built_db, snapshot_dir, "2020-06").success
    after = {t: _counts(built_db, t) for t in tables}
    assert after == before
    assert before["releases"]["2020-06"] > 0


def _corrupted_snapshot(snapshot_dir: Path, tmp_path: Path, edit) -> tuple[Path, Path, int]:
    snap = tmp_path / "snapshot"
    for rel in (PANEL, "livemacroeval/Results/ground_truth/data", "livemacroeval/Results/data_sp500futures"):
        shutil.copytree(snapshot_dir / rel, snap / rel)
    target = snap / PANEL / "field_releases.csv"
    lines = target.read_text().splitlines(keepends=True)
    row = next(i for i, ln in enumerate(lines) if ln.startswith("cpi,2015-03-24"))
    lines[row] = edit(lines[row])
    target.write_text("".join(lines))
    return snap, target, row


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda ln: ln.replace(",0.0,-0.1,", ",0.0x,-0.1,", 1), "A"),
        (lambda ln: ln.replace("cpi,", "cpi_core,", 1), "field_id"),
        (lambda ln: ln.replace("2015-03-24 08:30:00", "2015-03-08 02:30:00", 1), "release_datetime_et"),
    ],
    ids=["unparseable-value", "unknown-indicator", "nonexistent-local-time"],
)
def test_malformed_partition_fails_and_keeps_previous_rows(tmp_path, built_db, snapshot_dir, edit, field):
    db = tmp_path / "db.duckdb"
    shutil.copy(built_db, db)
    before = {t: _counts(db, t) for t in ("release_calendar", "releases", "surprise_events")}
    snap, target, row = _corrupted_snapshot(snapshot_dir, tmp_path, edit)
    result = _materialize(db, snap, "2015-03", raise_on_error=False)
    assert not result.success
    msg = "\n".join(
        e.step_failure_data.error.to_string()
        for e in result.all_events
        if e.is_step_failure and e.step_failure_data
    )
    assert str(target.name) in msg and f"row {row}" in msg and field in msg, msg
    assert {t: _counts(db, t) for t in before} == before


def test_every_asset_has_a_description_and_definitions_validate():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        spec = graph.get(key)
        assert spec.description, f"asset {key.to_user_string()} has no description"
    out = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
