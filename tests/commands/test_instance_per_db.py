"""One Dagster instance per DuckDB database (issue 19): a run recorded for one ``--db`` is not reported by
``leaf-live status`` on another; the default database keeps the project's instance; ``DAGSTER_HOME`` set
means that instance for every database."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import asset, materialize

import resources.instance as inst_mod
from leaf_live.cli import main
from leaf_live.core import storage
from resources.instance import instance_for, instance_home

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def homes(tmp_path, monkeypatch):
    """A stand-in for the project's dagster_home (so the test writes nothing into the project), no
    DAGSTER_HOME, the default database elsewhere, and two empty databases A and B."""
    project = tmp_path / "project_home"
    project.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", project / "dagster.yaml")
    monkeypatch.setattr(inst_mod, "PROJECT_DAGSTER_HOME", project)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("LEAF_LIVE_DB", str(tmp_path / "default.duckdb"))
    dbs = {}
    for name in ("a", "b"):
        dbs[name] = tmp_path / f"{name}.duckdb"
        con = storage.connect(dbs[name])
        storage.ensure_tables(con)
        con.close()
    return project, dbs


@asset
def probe_asset() -> int:
    return 1


def test_each_database_has_its_own_instance(homes, tmp_path, monkeypatch):
    project, dbs = homes
    assert instance_home(None) == project
    assert instance_home(tmp_path / "default.duckdb") == project
    assert instance_home(dbs["a"]) == tmp_path / "a.duckdb.dagster"
    assert instance_home(dbs["a"]) != instance_home(dbs["b"])
    # a relative spelling of the same file is the same instance
    monkeypatch.chdir(tmp_path)
    assert instance_home("a.duckdb") == tmp_path / "a.duckdb.dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "chosen"))
    assert instance_home(dbs["a"]) == instance_home(dbs["b"]) == tmp_path / "chosen"


def test_status_reports_only_the_database_it_is_pointed_at(homes, capsys, monkeypatch, snapshot_dir):
    _, dbs = homes
    monkeypatch.setenv("LEAF_LIVE_SNAPSHOT", str(snapshot_dir))
    a = instance_for(dbs["a"])
    assert materialize([probe_asset], instance=a).success
    assert (dbs["a"].parent / "a.duckdb.dagster" / "dagster.yaml").is_file()
    assert len(a.get_runs()) == 1 and len(instance_for(dbs["b"]).get_runs()) == 0
    capsys.readouterr()  # the probe run's own log lines

    def runs_of(db: Path) -> list[str]:
        rc = main(["status", "--db", str(db), "--as-of", "2026-05-01T00:00:00Z"])
        out = capsys.readouterr()
        assert (rc, out.err) == (0, ""), out.err
        lines = out.out.splitlines()
        i = next(k for k, line in enumerate(lines) if line.startswith("Latest runs"))
        return [lines[i], *[x for x in lines[i + 1 :] if x.startswith("  ")][: int(lines[i][13:-2])]]

    head_a, *rows_a = runs_of(dbs["a"])
    head_b, *rows_b = runs_of(dbs["b"])
    run_id = a.get_runs()[0].run_id
    assert head_a == "Latest runs (1):" and rows_a[0].split()[:3] == [
        run_id[:8],
        "__ephemeral_asset_job__",
        "SUCCESS",
    ]
    assert head_b == "Latest runs (0):" and rows_b == []
