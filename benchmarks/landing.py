"""Release-to-board latency (issue 19 item 7): one release landing replayed on a warm database under a
simulated clock, against a full warm rerun of ``leaf-live run`` on the same database.

Steps, on a copy of a warm database (one ``leaf-live run`` already stored; ``--db``, or built first with
``leaf-live run --arima-from 2025-10 --arima-to 2025-11`` when not given, that build's time not counted):

1. rewind (not timed): February 2026 rematerialized with the release calendar replayed at 2026-02-10 00:00
   UTC, as ``tests/sensors/test_release_landed_runs.py`` does, so retail sales (2026-02-10 13:30 UTC) has
   not landed yet;
2. landing (timed): the release-landed sensor's tick at 2026-02-10 14:00 UTC (the observation) and the run it
   requests, ``macro_release_landed`` on 2026-02 (calendar, releases, windows, returns, surprises,
   nowcasts, scores, analyses, dbt marts, report figures, site), executed in-process as the daemon would;
3. warm rerun (timed): ``python -m leaf_live.cli run --db COPY`` with the same ARIMA span, in a subprocess.

Prints, for each, wall seconds and CPU seconds (this process plus its children: dbt runs in a subprocess),
the ratio landing / rerun, and the load average before and after (the machine is shared; the ratio is the
robust number). Usage: ``python benchmarks/landing.py [--db WARM.duckdb] [--boot-draws N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MONTH = "2026-02"
REWIND_AT = datetime(2026, 2, 10, 0, tzinfo=UTC)
TICK_AT = datetime(2026, 2, 10, 14, tzinfo=UTC)  # first hourly tick after retail sales' 13:30 UTC
ARIMA = ["--arima-from", "2025-10", "--arima-to", "2025-11"]


def cpu_s() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def cli(db: Path, home: Path, boot_draws: int) -> tuple[float, float]:
    """(wall s, CPU s) of ``leaf-live run --db db`` in a subprocess recording in the instance ``home``."""
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    argv = [
        sys.executable,
        "-m",
        "leaf_live.cli",
        "run",
        "--db",
        str(db),
        *ARIMA,
        "--boot-draws",
        str(boot_draws),
    ]
    c0, t0 = cpu_s(), time.monotonic()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0, cpu_s() - c0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", type=Path, help="a warm database (one full run stored); built first when omitted")
    p.add_argument("--boot-draws", type=int, default=200, help="bootstrap draws of the scores (both runs)")
    args = p.parse_args(argv)

    from leaf_live.process import prepare_process

    prepare_process()
    from dagster import DagsterInstance, RunRequest, build_sensor_context

    from leaf_live.core.settings import get_settings
    from leaf_live.definitions import build_definitions
    from resources import default_resources
    from sensors.macro import LANDING_JOB, RELEASES_TAG, landing_run_config

    work = Path(tempfile.mkdtemp(prefix="leaf_live_landing_"))
    home = work / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    db = work / "warm.duckdb"
    if args.db:
        shutil.copy(args.db, db)
    else:
        wall, _ = cli(db, home, args.boot_draws)
        print(f"built the warm database in {wall:.0f} s (not counted)", flush=True)
    snapshot = get_settings().require_snapshot()

    def res_at(at: datetime) -> dict:
        s = replace(get_settings(), snapshot_dir=snapshot, transport="snapshot", clock=at)
        return default_resources(db=db, settings=s)

    instance = DagsterInstance.ephemeral()

    def execute(defs, request) -> None:
        config = request.run_config
        config["ops"]["macro_scores"]["config"]["boot_draws"] = args.boot_draws
        result = defs.resolve_job_def(LANDING_JOB).execute_in_process(
            run_config=config,
            partition_key=request.partition_key,
            instance=instance,
            tags=request.tags,
            raise_on_error=False,
        )
        if not result.success:
            raise SystemExit(
                f"{LANDING_JOB} failed: {[e.message for e in result.all_events if e.is_failure]}"
            )

    execute(
        build_definitions(res_at(REWIND_AT)),
        RunRequest(partition_key=MONTH, run_config=landing_run_config([MONTH])),
    )

    load0 = os.getloadavg()
    c0, t0 = cpu_s(), time.monotonic()
    res = res_at(TICK_AT)
    defs = build_definitions(res)
    repo = defs.get_repository_def()
    tick = repo.get_sensor_def("release_landed_sensor").evaluate_tick(
        build_sensor_context(
            instance=instance, repository_def=repo, resources={k: res[k] for k in ("clock", "calendar", "db")}
        )
    )
    if len(tick.run_requests) != 1:
        raise SystemExit(f"expected one landing request at {TICK_AT}, got {len(tick.run_requests)}")
    landed = tick.run_requests[0].tags[RELEASES_TAG]
    execute(defs, tick.run_requests[0])
    land_wall, land_cpu = time.monotonic() - t0, cpu_s() - c0
    load1 = os.getloadavg()

    rerun_wall, rerun_cpu = cli(db, home, args.boot_draws)
    load2 = os.getloadavg()

    print(f"landing {landed} on {MONTH} (tick {TICK_AT:%Y-%m-%d %H:%M} UTC, boot draws {args.boot_draws})")
    print(f"{'':28s}{'wall s':>10s}{'CPU s':>10s}")
    print(f"{'landing -> scores/marts/site':28s}{land_wall:10.1f}{land_cpu:10.1f}")
    print(f"{'warm full rerun':28s}{rerun_wall:10.1f}{rerun_cpu:10.1f}")
    print(f"{'ratio landing / rerun':28s}{land_wall / rerun_wall:10.3f}{land_cpu / rerun_cpu:10.3f}")
    print(
        f"load average (1/5/15 min) at start {load0}, after landing {load1}, after rerun {load2};"
        f" {os.cpu_count()} CPUs"
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
