"""The ``leaf-live`` command.

``leaf-live run [--snapshot DIR] [--db PATH] [--start YYYY-MM] [--end YYYY-MM] [--fit-cutoff YYYY-MM]
[--backtest-start YYYY-MM] [--backtest-end YYYY-MM] [--boot-draws N]``
    runs the main job (``leaf_live_main``) in-process for every release month the sources cover, recorded in
    the project's Dagster instance (``dagster_home/``, or ``DAGSTER_HOME``) so the run shows in the UI, and
    prints a summary, the asset-check results and the two leaderboards (historical backtest, live window).
    A failed blocking check is named and stops the run before anything downstream of it. It then writes the
    paper's remaining analyses (App. E, F, G, Q, R) beside the paper's figures to ``macro_analyses.md`` next
    to the database and prints its path, and the path of the leaderboard site the job wrote (``site/`` next to
    the database: ``index.html``, ``macro.html``, ``event.html``, ``figures/*.png``).
``leaf-live report [--db PATH] [--out FILE]``
    writes that report again from the stored analysis tables (read-only).
``leaf-live tables``
    prints every table an analyst can query (name, grain, columns, units) as Markdown.
``leaf-live sql "SELECT ..."``
    runs a query on a read-only connection (safe while nothing writes).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from pathlib import Path

import polars as pl

import leaf_live  # noqa: F401  (no-network switches)
import leaf_live.macro  # noqa: F401  (registers the macro tables)
import leaf_live.event  # noqa: F401  (registers the event tables, after the macro ones: README order)
from leaf_live.core import storage
from leaf_live.commands import scores, sql, status, submit
from leaf_live.commands.common import CommandError
from leaf_live.commands.run_checks import check_run_args
from leaf_live.core.settings import SettingsError, get_settings
from leaf_live.core.site import site_dir
from leaf_live.core.submissions import SubmissionError


# The project's Dagster instance (telemetry off, runs under dagster_home/storage): what
# `DAGSTER_HOME=$PWD/dagster_home dagster dev` shows.
PROJECT_DAGSTER_HOME = Path(__file__).resolve().parents[1] / "dagster_home"


def _instance():
    """``DAGSTER_HOME``'s instance when it is set, else the project's ``dagster_home/`` (so CLI runs appear in
    the UI); an ephemeral one (telemetry off) only when neither exists (e.g. a non-editable install)."""
    from dagster import DagsterInstance

    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    if (PROJECT_DAGSTER_HOME / "dagster.yaml").is_file():
        return DagsterInstance.from_config(str(PROJECT_DAGSTER_HOME))
    return DagsterInstance.ephemeral(settings={"telemetry": {"enabled": False}})


def cmd_run(args: argparse.Namespace) -> int:
    from assets.macro_scoring import scoring_run_config
    from leaf_live.definitions import MAIN_JOB, build_definitions

    plan = check_run_args(args)  # every flag, path and span checked before any work: one line each
    resources, db, start, end = plan.resources, plan.db, plan.start, plan.end
    storage.connect(db).close()  # a file built by another schema version stops here, in one line
    print(f"leaf-live run: release months {start} .. {end} -> {db}", flush=True)
    arima_span = f"{args.arima_from or args.backtest_start or '2018-01'} .. {args.arima_to or end}"
    print(f"auto-ARIMA nowcasts for release months {arima_span}: a 52-order AIC grid per distinct history, each "
          "series fitted as one chain over its vintages (under 2 minutes on 2 cores for the default span; "
          "--arima-from/--arima-to narrow it)", flush=True)
    t0 = time.monotonic()
    run_config = scoring_run_config(fit_cutoff=args.fit_cutoff, backtest_start=args.backtest_start,
                                    backtest_end=args.backtest_end, boot_draws=args.boot_draws)
    # Dagster logs every partition's materialization at DEBUG; the CLI prints its own summary.
    run_config["loggers"] = {"console": {"config": {"log_level": "WARNING"}}}
    arima_from = args.arima_from or args.backtest_start
    if arima_from is not None or args.arima_to is not None:
        span = {"first_month": arima_from or "2018-01", "last_month": args.arima_to}
        run_config.setdefault("ops", {})["arima_nowcasts"] = {"config": span}
    # One in-process run of the main job, recorded in the project's Dagster instance under its name. dbt's
    # log lines (dagster-dbt echoes them to stdout) stay in the run's compute logs, not in this summary.
    job = build_definitions(resources).resolve_job_def(MAIN_JOB)
    with contextlib.redirect_stdout(io.StringIO()):
        result = job.execute_in_process(
            run_config=run_config,
            instance=_instance(),
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
            raise_on_error=False,
        )
    checks = result.get_asset_check_evaluations()
    failed = [e for e in checks if not e.passed]
    for e in failed:
        meta = {k: getattr(v, "value", v) for k, v in e.metadata.items()}
        print(f"asset check FAILED: {e.asset_key.to_user_string()}:{e.check_name} {meta}", file=sys.stderr)
    if not result.success:
        for ev in result.all_events:
            if ev.is_step_failure and ev.step_failure_data.error:
                err = ev.step_failure_data.error
                if err.cls_name == "DagsterAssetCheckFailedError":
                    continue  # a blocking check: named above
                while err.cause is not None:  # Dagster wraps the asset's own exception
                    err = err.cause
                print(f"{ev.step_key}: {err.message.strip()}", file=sys.stderr)
        done = {ev.asset_key for ev in result.get_asset_materialization_events()}
        skipped = sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys if k not in done)
        if skipped:
            print(f"not materialized: {', '.join(skipped)}", file=sys.stderr)
        print("leaf-live run: FAILED", file=sys.stderr)
        return 1
    print(f"finished in {time.monotonic() - t0:.1f} s")
    print(summary(db))
    print(f"asset checks: {len(checks) - len(failed)} passed, {len(failed)} failed")
    print()
    print(leaderboards(db))
    out = write_analysis_report(db)
    print(f"\nPaper's remaining analyses (App. E, F, G, Q, R) beside the paper's figures: {out}")
    print(f"Leaderboard site (open in a browser; figures in its figures/): {site_dir(db) / 'index.html'}")
    return 0


ANALYSIS_TABLES = ("post_release_recovery", "post_release_paths", "copying_convergence", "copying_gap_bins",
                   "copying_comovement", "copying_event_time", "rationale_audit", "rationale_calculations",
                   "citation_domains", "cross_model_errors", "nowcast_path_summaries", "revision_attributions")


def analysis_report(db: str | Path) -> str:
    """The Markdown report of the analysis tables (``leaf_live.macro.analyses.report``), read-only."""
    from leaf_live.macro.analyses.report import render_report
    from leaf_live.macro.analyses.series import is_agent

    con = storage.connect_read_only(db)
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        tables = {t: storage.read_table(con, t) if t in present else storage.empty_frame(t) for t in ANALYSIS_TABLES}
        agents = [r[0] for r in con.execute("SELECT DISTINCT model_id FROM nowcasts ORDER BY 1").fetchall()
                  if is_agent(r[0])] if "nowcasts" in present else []
        releases = storage.read_table(con, "releases", "release_at >= '2025-11-01'") if "releases" in present else None
    finally:
        con.close()
    return render_report(tables, models_in_store=agents, releases=releases)


def write_analysis_report(db: str | Path, out: str | Path | None = None) -> Path:
    """Write :func:`analysis_report` to ``out`` (default ``macro_analyses.md`` next to the database)."""
    path = Path(out) if out is not None else Path(db).parent / "macro_analyses.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(analysis_report(db))
    return path


def cmd_report(args: argparse.Namespace) -> int:
    db = args.db or get_settings().db_path
    if not Path(db).is_file():
        raise SystemExit(f"leaf-live report: --db {db}: no database file (run `leaf-live run` first)")
    try:
        print(write_analysis_report(db, args.out))
    except OSError as exc:
        raise SystemExit(f"leaf-live report: --out {args.out}: {exc.strerror or exc}") from None
    return 0


def leaderboards(db: str | Path) -> str:
    """The backtest and live-window leaderboards (``leaf_live.macro.scoring.leaderboard``) read from the scoring
    tables through a read-only connection."""
    from leaf_live.macro.scoring.leaderboard import render_leaderboards

    con = storage.connect_read_only(db)
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "livemacro_scores" not in present:
            return "no scores yet"
        scores = storage.read_table(con, "livemacro_scores")
        decomps = storage.read_table(
            con, "score_decompositions",
            "decomposition IN ('shapley', 'relative_error', 'event_coverage', 'paired_bootstrap')")
        betting = storage.read_table(con, "livebetting_scores", "segment = 'total'")
        fits = pl.from_arrow(con.sql(
            "SELECT f.fit_name, b.* EXCLUDE (cov_row, cv_grid, cv_scores) FROM market_beta_fits f "
            "JOIN market_betas b ON b.fit_id = f.fit_id AND b.position = 0").to_arrow_table())
    finally:
        con.close()
    return render_leaderboards(scores, decomps, betting, fits)


def summary(db: str | Path) -> str:
    """Rows per table and the span of its main timestamp, read through a read-only connection."""
    con = storage.connect_read_only(db)
    try:
        lines = [f"{'table':<24} {'rows':>9}  span"]
        for name, n in storage.table_summary(con):
            cols = storage.get_table(name).column_names
            span = ""
            for col in ("release_at", "issued_at", "reference_period"):
                if col in cols and n:
                    lo, hi = con.execute(f'SELECT min("{col}"), max("{col}") FROM "{name}"').fetchone()
                    span = f"{col} {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}"
                    break
            lines.append(f"{name:<24} {n:>9}  {span}")
        return "\n".join(lines)
    finally:
        con.close()


def tables_markdown() -> str:
    """Markdown documentation of every registered table (name, grain, columns, units)."""
    out = []
    for t in storage.TABLES.values():
        part = f" Partitioned by `{', '.join(t.partition_by)}`." if t.partition_by else ""
        out.append(f"### `{t.name}`\n{t.doc}\n\nGrain: {t.grain}.{part}\n")
        out.append("| column | type | meaning (unit) |\n|---|---|---|")
        out.extend(f"| `{c.name}` | {c.type} | {c.doc} |" for c in t.columns)
        out.append("")
    return "\n".join(out)


def cmd_tables(args: argparse.Namespace) -> int:
    print(tables_markdown())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="leaf-live", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="materialize the main job for every release month the sources cover")
    r.add_argument("--snapshot", help="snapshot directory (default LEAF_LIVE_SNAPSHOT or ../shared/data)")
    r.add_argument("--db", help=f"DuckDB file (default LEAF_LIVE_DB or {get_settings().db_path})")
    r.add_argument("--start", help="first release month YYYY-MM (default: first month in the sources, >= 2010-01)")
    r.add_argument("--end", help="last release month YYYY-MM (default: last month in the sources)")
    r.add_argument("--fit-cutoff", help="last release month of the backtest beta fit (default 2017-12)")
    r.add_argument("--backtest-start", help="first release month the backtest scores (default 2018-01)")
    r.add_argument("--backtest-end", help="last release month the backtest scores (default 2025-10)")
    r.add_argument("--boot-draws", type=int, help="parametric/paired bootstrap draws (default 10000)")
    r.add_argument("--arima-from", help="first release month that gets auto-ARIMA nowcasts (default: the backtest "
                   "start; each distinct history costs a 52-order AIC grid)")
    r.add_argument("--arima-to", help="last release month that gets auto-ARIMA nowcasts (default: no bound)")
    r.set_defaults(func=cmd_run)
    rp = sub.add_parser("report", help="write the App. E/F/G/Q/R analyses report from the stored tables")
    rp.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    rp.add_argument("--out", help="Markdown file (default macro_analyses.md next to the database)")
    rp.set_defaults(func=cmd_report)
    t = sub.add_parser("tables", help="print the analyst-facing table documentation")
    t.set_defaults(func=cmd_tables)
    for module in (submit, status, scores, sql):
        module.add_parser(sub)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except SubmissionError as exc:  # every rejected row on its own line; nothing stored
        print("\n".join(f"leaf-live {args.cmd}: {line}" if k == 0 else f"  {line}" for k, line in enumerate(exc.lines())),
              file=sys.stderr)
        return 1
    except (CommandError, storage.StorageError, SettingsError) as exc:  # a bad flag, path, file or state: one line
        print(f"leaf-live {args.cmd}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
