"""The dbt project (``dbt_project/``, dbt-duckdb views and leaderboard marts over the DuckDB file) as a
dagster-dbt ``DbtProject`` and CLI resource, and the build step that keeps its manifest current.

No network: dbt's anonymous usage statistics are off (``dbt_project.yml`` flag, ``DO_NOT_TRACK`` set by
``leaf_live``, and dagster-dbt's ``DBT_SEND_ANONYMOUS_USAGE_STATS=false``), and :class:`LeafLiveDbt` takes the
dbt version from the installed package instead of running ``dbt --version`` (which asks PyPI for the
latest release on every dagster-dbt invocation).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import sys
from functools import cached_property
from pathlib import Path

from dagster_dbt import DbtCliResource, DbtProject
from packaging import version

DBT_DIR = Path(__file__).resolve().parents[1] / "dbt_project"
# `dbt parse` renders the profile but opens no database: a fixed file name keeps the manifest (and the
# relation names the UI shows, leaf_live.main.<model>) independent of LEAF_LIVE_DB.
PARSE_VARS = {"leaf_live_db": "leaf_live.duckdb"}
DBT_PROJECT = DbtProject(project_dir=DBT_DIR)
_STAMP = "leaf_live_manifest.sha256"  # fingerprint of the sources the manifest was parsed from


class LeafLiveDbt(DbtCliResource):
    """dagster-dbt's dbt CLI resource, run offline (see module docstring)."""

    @cached_property
    def _cli_version(self) -> version.Version:
        return version.parse(importlib.metadata.version("dbt-core"))


def dbt_resource() -> LeafLiveDbt:
    """The dbt CLI of this environment (the ``dbt`` next to the running interpreter, not whatever is on
    PATH) on :data:`DBT_PROJECT`."""
    return LeafLiveDbt(project_dir=DBT_PROJECT, dbt_executable=str(Path(sys.executable).parent / "dbt"))


def _fingerprint(project: DbtProject) -> str:
    h = hashlib.sha256()
    for pkg in ("dbt-core", "dbt-duckdb", "dagster-dbt"):
        h.update(f"{pkg}=={importlib.metadata.version(pkg)}\n".encode())
    h.update(json.dumps(PARSE_VARS, sort_keys=True).encode())
    skip = {project.target_path.parts[0], "logs", "dbt_packages"}
    for p in sorted(project.project_dir.rglob("*")):
        rel = p.relative_to(project.project_dir)
        if p.is_file() and rel.parts[0] not in skip:
            h.update(f"\n{rel}\n".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def prepare_dbt_project(project: DbtProject = DBT_PROJECT) -> Path:
    """Make ``project``'s ``manifest.json`` current: run ``dbt parse`` (offline, no database opened) when the
    manifest is missing or was parsed from other project files / package versions. Runs when the Dagster
    definitions load (``leaf-live run``, ``dagster dev``, ``dagster definitions validate``, tests), so a fresh
    clone needs no separate step; a file lock serialises concurrent loads. Returns the manifest path; raises
    dagster-dbt's ``DagsterDbtCliRuntimeError`` with dbt's message if the project does not parse."""
    target = project.project_dir / project.target_path
    target.mkdir(parents=True, exist_ok=True)
    stamp = target / _STAMP
    fp = _fingerprint(project)
    if project.manifest_path.exists() and stamp.exists() and stamp.read_text() == fp:
        return project.manifest_path
    with open(target / ".prepare.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (project.manifest_path.exists() and stamp.exists() and stamp.read_text() == fp):
            stamp.unlink(missing_ok=True)
            dbt = LeafLiveDbt(project_dir=project, dbt_executable=str(Path(sys.executable).parent / "dbt"))
            dbt.cli(
                ["parse", "--quiet", "--vars", json.dumps(PARSE_VARS)], target_path=project.target_path
            ).wait()
            stamp.write_text(fp)
    return project.manifest_path
