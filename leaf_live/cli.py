"""The ``leaf-live`` command.

``leaf-live run [--snapshot DIR] [--db PATH] [--start YYYY-MM] [--end YYYY-MM] [--fit-cutoff YYYY-MM]
[--backtest-start YYYY-MM] [--backtest-end YYYY-MM] [--boot-draws N]``
    runs the event track's three jobs (``sensors/event.py``), then the main job (``leaf_live_main``, ending
    with the figures and the site, which read both tracks) in-process for every release month the sources
    cover, recorded in the project's Dagster instance (``dagster_home/``, or ``DAGSTER_HOME``) so the run
    shows in the UI, and prints a summary, the asset-check results and the two leaderboards (historical
    backtest, live window). A failed blocking check is named and stops the run before anything downstream of
    it. It then writes the paper's remaining analyses (App. E, F, G, Q, R) beside the paper's figures to
    ``macro_analyses.md`` next to the database and prints its path, and the path of the leaderboard site the
    job wrote (``site/`` next to the database: ``index.html``, ``macro.html``, ``event.html``,
    ``figures/*.png``).
``leaf-live report [--db PATH] [--out FILE]``
    writes that report again from the stored analysis tables (read-only).
``leaf-live tables``
    prints every table an analyst can query (name, grain, columns, units) as Markdown.
``leaf-live sql "SELECT ..."``
    runs a query on a read-only connection (safe while nothing writes).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import leaf_live.event  # noqa: F401  (registers the event tables, after the macro ones: README order)
import leaf_live.macro  # noqa: F401  (registers the macro tables)
from leaf_live.commands import event_models, participation, scores, sql, status, submit
from leaf_live.commands.common import CommandError
from leaf_live.commands.run_checks import check_run_args, check_sigma_history
from leaf_live.commands.run_report import execute_run, report_failures
from leaf_live.core import storage
from leaf_live.core.settings import SettingsError, get_settings
from leaf_live.core.site import site_dir
from leaf_live.core.submissions import SubmissionError
from leaf_live.process import prepare_process


def cmd_run(args: argparse.Namespace) -> int:
    from leaf_live.run_progress import RunProgress

    clock = RunProgress()  # stage clock from here; the display starts with the run
    clock.stage_started("load definitions")
    import leaf_live.definitions  # noqa: F401  (timed as the "load definitions" stage)

    event_plan = check_event_args(args)  # event-track flags, checked before anything runs
    models_plan = event_models.check_args(args)  # --event-models flags, likewise
    plan = check_run_args(args)  # every flag, path and span checked before any work: one line each
    db = plan.db
    storage.connect(db).close()  # a file built by another schema version stops here, in one line
    check_span_exact(db, event_plan)  # a narrower rerun never removes what it was not asked to rebuild
    # one leaf-live writer per database for the whole run; the service reads its rounds from the inbox
    with participation.writing(db):
        check_sigma_history(db, plan.start, plan.end)  # a span the scores cannot be built from: one line
        return _run(args, clock, plan, event_plan, models_plan)


def _run(args: argparse.Namespace, clock, plan, event_plan, models_plan=None) -> int:
    from assets.macro_scoring import scoring_run_config
    from leaf_live.definitions import MAIN_JOB, build_definitions
    from resources.instance import instance_for

    resources, db, start, end = plan.resources, plan.db, plan.start, plan.end
    print(f"leaf-live run: release months {start} .. {end} -> {db}", flush=True)
    arima_span = f"{args.arima_from or args.backtest_start or '2018-01'} .. {args.arima_to or end}"
    print(
        f"auto-ARIMA nowcasts for release months {arima_span}: a 52-order AIC grid per distinct history, each"
        " series fitted as one chain over its vintages (under 2 minutes on 2 cores for the default span;"
        " --arima-from/--arima-to narrow it)",
        flush=True,
    )
    # the event track first: the main job ends with the figures and the site, which read both tracks' tables
    clock.stage_finished("load definitions")
    clock.stage_started("event track")
    event_ok = run_event_track(event_plan, resources)
    clock.stage_finished("event track", failed=not event_ok)
    if not event_ok:
        return 1
    if models_plan is not None:  # real models on the event track: planned, costed, then run or refused
        clock.stage_started("event models")
        code = event_models.run_event_models(db, resources, models_plan)
        clock.stage_finished("event models", failed=code != 0)
        if code:
            return code
    clock.stage_started("macro job definitions")
    run_config = scoring_run_config(
        fit_cutoff=args.fit_cutoff,
        backtest_start=args.backtest_start,
        backtest_end=args.backtest_end,
        boot_draws=args.boot_draws,
    )
    # Dagster logs every partition's materialization at DEBUG; the CLI prints its own summary.
    run_config["loggers"] = {"console": {"config": {"log_level": "WARNING"}}}
    arima_from = args.arima_from or args.backtest_start
    if arima_from is not None or args.arima_to is not None:
        span = {"first_month": arima_from or "2018-01", "last_month": args.arima_to}
        run_config.setdefault("ops", {})["arima_nowcasts"] = {"config": span}
    # One in-process run of the main job, recorded in the project's Dagster instance under its name. dbt's
    # log lines (dagster-dbt echoes them to stdout) stay in the run's compute logs, not in this summary.
    job = build_definitions(resources).resolve_job_def(MAIN_JOB)
    clock.stage_finished("macro job definitions")
    result = execute_run(
        job,
        clock=clock,
        run_config=run_config,
        instance=instance_for(db),
        tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
    )
    checks = result.get_asset_check_evaluations()
    failed = [e for e in checks if not e.passed]
    if report_failures(result):
        done = {ev.asset_key for ev in result.get_asset_materialization_events()}
        skipped = sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys if k not in done)
        if skipped:
            print(f"not materialized: {', '.join(skipped)}", file=sys.stderr)
        print(stage_summary(clock), file=sys.stderr)
        print("leaf-live run: FAILED", file=sys.stderr)  # the last line, as for every other failure
        return 1
    clock.stage_started("summary and report")
    print(summary(db))
    print(f"asset checks: {len(checks) - len(failed)} passed, {len(failed)} failed")
    print()
    print(leaderboards(db))
    print()
    print(event_boards(db, event_plan.boot_draws))
    out = write_analysis_report(db)
    print(
        "\nPaper's remaining analyses (App. E, F, G, Q, R) and the LEAF analyses (Tables 2, 9, 12, §3.2,"
        f" Fig. 6; each ran or says why not) beside the papers' figures: {out}"
    )
    print(f"Leaderboard site (open in a browser; figures in its figures/): {site_dir(db) / 'index.html'}")
    clock.stage_finished("summary and report")
    print()
    print(stage_summary(clock))
    return 0


# ---------------------------------------------------------------------------------------------
# event track (LEAF): flags, the runs of its three jobs, its boards
# ---------------------------------------------------------------------------------------------

EVENT_TABLES = (
    "leaf_targets",
    "market_prices",
    "weather_hourly",
    "electricity_load",
    "prediction_markets",
    "market_price_path",
    "forecast_tasks",
    "task_outcomes",
    "leaf_forecasts",
    "leaf_scores",
    "event_rankings",
)
# the metrics the printed board shows (leaf_scores holds every metric)
EVENT_BOARD_METRICS = ("accuracy", "mape", "mae_z", "mse_z", "brier", "crps")
EVENT_DAB_DRAWS = 500  # the difficulty adjustment refits the fixed effects on every draw


@dataclass(frozen=True)
class EventPlan:
    """What the event part of ``leaf-live run`` does: the task spans, the statsforecast models and workers,
    the foundation models, the board's bootstrap draws."""

    spans: object  # leaf_live.event.pipeline.Spans
    statistical: tuple[str, ...]
    n_jobs: int
    tsfm: tuple[str, ...]
    boot_draws: int
    replace_wider: bool = False  # --replace-wider: the run may remove stored tasks its spans no longer build

    def span_config(self) -> dict:
        s = self.spans
        return {
            "markets_start": s.markets[0].isoformat(),
            "markets_end": s.markets[1].isoformat(),
            "mid_cap_start": s.mid_cap_months[0].isoformat(),
            "mid_cap_end": s.mid_cap_months[1].isoformat(),
            "weather_start": s.weather[0].isoformat(),
            "weather_end": s.weather[1].isoformat(),
            "electricity_start": s.electricity[0].isoformat(),
            "electricity_end": s.electricity[1].isoformat(),
            "case_days": [d.isoformat() for d in s.case_days],
            "replace_wider": self.replace_wider,
        }


def add_event_arguments(r: argparse.ArgumentParser) -> None:
    """The event-track flags of ``leaf-live run`` (defaults: the spans of
    ``leaf_live.event.pipeline.Spans``)."""
    r.add_argument(
        "--event-from",
        help=(
            "first cutoff-span day YYYY-MM-DD of the large caps, commodities and weather (default 2025-10-01)"
        ),
    )
    r.add_argument(
        "--event-to",
        help="last span day YYYY-MM-DD of the large caps, commodities and weather (default 2026-01-31)",
    )
    r.add_argument("--midcap-from", help="first month YYYY-MM of the mid caps' span (default 2024-10)")
    r.add_argument("--midcap-to", help="last month YYYY-MM of the mid caps' span (default 2026-03)")
    r.add_argument(
        "--load-from",
        help=(
            "first span day YYYY-MM-DD of the electricity load (default 2018-12-01: the "
            "EIA-930 files end 2020-09)"
        ),
    )
    r.add_argument("--load-to", help="last span day YYYY-MM-DD of the electricity load (default 2019-03-31)")
    r.add_argument(
        "--event-arima",
        action="store_true",
        help="add statsforecast AutoARIMA to the event baselines (about 5 minutes more on 2 cores)",
    )
    r.add_argument(
        "--event-jobs", type=int, help="statsforecast worker processes for the event baselines (default 1)"
    )
    r.add_argument(
        "--tsfm",
        action="append",
        default=[],
        metavar="KIND:MODEL",
        help=(
            "add a time-series foundation model, chronos:<path or hub name> or timesfm:<path or hub "
            "name> (pip install -e '.[tsfm]'; repeatable)"
        ),
    )
    r.add_argument(
        "--event-boot-draws", type=int, help="bootstrap draws of the event board's intervals (default 2000)"
    )
    r.add_argument(
        "--replace-wider",
        action="store_true",
        help=(
            "let a run whose spans are narrower than the stored ones remove the stored tasks of its day"
            " partitions that the new spans no longer build (without it such a run stops before any write)"
        ),
    )


def _flag_date(args: argparse.Namespace, flag: str, month: bool = False):
    """The date of a day (or month) flag, None when not given; a malformed value ends the command in one
    line."""
    from datetime import date

    value = getattr(args, flag)
    if value is None:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}" if month else r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        return date.fromisoformat(f"{value}-01" if month else value)
    except ValueError:
        kind = "a month YYYY-MM" if month else "a day YYYY-MM-DD"
        raise SystemExit(f"leaf-live run: --{flag.replace('_', '-')} {value!r}: expected {kind}") from None


def check_event_args(args: argparse.Namespace) -> EventPlan:
    """Validate the event flags up front; a bad value ends the command with one line naming the flag."""
    from datetime import date

    from assets.event_data import EVENT_DAYS
    from leaf_live.event.pipeline import DEFAULT_STATISTICAL, Spans, source_days

    default = Spans()
    spans = {}
    for name, lo, hi, month in (
        ("markets", "event_from", "event_to", False),
        ("weather", "event_from", "event_to", False),
        ("mid_cap_months", "midcap_from", "midcap_to", True),
        ("electricity", "load_from", "load_to", False),
    ):
        a = _flag_date(args, lo, month) or getattr(default, name)[0]
        b = _flag_date(args, hi, month) or getattr(default, name)[1]
        if b < a:
            raise SystemExit(
                f"leaf-live run: --{hi.replace('_', '-')} {getattr(args, hi) or b} is before "
                f"--{lo.replace('_', '-')} {getattr(args, lo) or a}"
            )
        spans[name] = (a, b)
    try:
        plan_spans = Spans(**spans)
    except ValueError as exc:
        raise SystemExit(f"leaf-live run: event spans: {exc}") from None
    first = date.fromisoformat(EVENT_DAYS.start.strftime("%Y-%m-%d"))
    today = date.today()
    for table, (a, b) in source_days(plan_spans).items():
        if a < first or b > today:
            raise SystemExit(
                f"leaf-live run: event spans need {table} for {a} .. {b}, outside the daily partitions "
                f"{first} .. {today}"
            )
    for flag in ("event_jobs", "event_boot_draws"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise SystemExit(
                f"leaf-live run: --{flag.replace('_', '-')} {value}: expected a positive integer"
            )
    for spec in args.tsfm:
        kind, _, model = spec.partition(":")
        if kind not in ("chronos", "timesfm") or not model:
            raise SystemExit(
                f"leaf-live run: --tsfm {spec!r}: expected chronos:<path or hub name> or "
                "timesfm:<path or hub name>"
            )
    statistical = (*DEFAULT_STATISTICAL, "AutoARIMA") if args.event_arima else DEFAULT_STATISTICAL
    return EventPlan(
        plan_spans,
        tuple(statistical),
        args.event_jobs or 1,
        tuple(args.tsfm),
        args.event_boot_draws or 2000,
        bool(getattr(args, "replace_wider", False)),
    )


# the task domains each cutoff family of ``leaf_live.event.pipeline.cutoff_days`` builds ("case:<day>": the
# recorded case's large caps)
FAMILY_DOMAINS = {
    "markets": ("large_cap", "commodity"),
    "mid_cap": ("mid_cap",),
    "weather": ("weather",),
    "electricity": ("electricity",),
}


def wider_than_asked(con, spans) -> list[tuple[str, str, str, int]]:
    """The stored tasks a run with ``spans`` would remove without being asked to: tasks in the day partitions
    the run replaces (:func:`event_day_runs`) whose domain no cutoff family of ``spans`` builds on that day
    (a narrower ``--event-from/--event-to`` inside the mid caps' wider day range). Returns (domain, first
    day, last day, tasks) per domain; empty when the run is span-exact."""
    from leaf_live.event.pipeline import cutoff_days

    fams = cutoff_days(spans)
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "forecast_tasks" not in present:
        return []
    lost: dict[str, list] = {}
    for (a, b), names in event_day_runs(spans):
        if "forecast_tasks" not in names:
            continue
        stored = con.execute(
            "SELECT partition_key, domain, count(*) FROM forecast_tasks WHERE partition_key BETWEEN ? AND ?"
            " AND regexp_full_match(partition_key, '\\d{4}-\\d{2}-\\d{2}') GROUP BY 1, 2 ORDER BY 1, 2",
            [a, b],
        ).fetchall()
        for day, domain, n in stored:
            built = any(
                lo.isoformat() <= day <= hi.isoformat()
                and domain in FAMILY_DOMAINS.get(fam, ("large_cap",) if fam.startswith("case:") else ())
                for fam, (lo, hi) in fams.items()
            )
            if not built:
                got = lost.setdefault(domain, [day, day, 0])
                got[0], got[1], got[2] = min(got[0], day), max(got[1], day), got[2] + n
    return [(d, lo, hi, n) for d, (lo, hi, n) in sorted(lost.items())]


def check_span_exact(db, plan: EventPlan) -> None:
    """Before any write: refuse (one line) a run whose day partitions would remove stored tasks its spans do
    not rebuild (:func:`wider_than_asked`), unless ``--replace-wider`` was given."""
    if plan.replace_wider or not Path(db).exists():
        return
    con = storage.connect_read_only(db)
    try:
        lost = wider_than_asked(con, plan.spans)
    finally:
        con.close()
    if lost:
        total = sum(n for *_, n in lost)
        parts = "; ".join(f"{d} {lo} .. {hi} ({n:,})" for d, lo, hi, n in lost)
        raise CommandError(
            f"the event spans are narrower than the day partitions this run replaces: {total:,} stored tasks"
            f" outside the spans would be removed ({parts}); give spans that cover them, or --replace-wider"
            " to remove them"
        )


def event_day_runs(spans) -> list[tuple[tuple[str, str], list[str]]]:
    """The daily runs of the event track: each source table over its own days and ``forecast_tasks`` over the
    cutoff days of its task families (``leaf_live.event.pipeline``), an asset's ranges merged where they
    overlap or touch, assets sharing a range run together, sources before tasks. Disjoint spans (the 2018-19
    load winter, the 2025-26 markets) are separate ranges, and no asset is materialized for days it does not
    need: each partition of a range is one materialization recorded in the Dagster instance. Returns
    ((first, last) day keys, asset names) per run."""
    from datetime import timedelta

    from leaf_live.event.pipeline import cutoff_days, source_days

    wanted = [(t, a, b) for t, (a, b) in source_days(spans).items()]
    wanted += [("forecast_tasks", a, b) for a, b in cutoff_days(spans).values()]
    merged: list[list] = []  # [name, first, last]
    for name, a, b in sorted(wanted):
        if merged and merged[-1][0] == name and a <= merged[-1][2] + timedelta(days=1):
            merged[-1][2] = max(merged[-1][2], b)
        else:
            merged.append([name, a, b])
    runs: dict[tuple, list[str]] = {}
    for name, a, b in merged:
        runs.setdefault((name == "forecast_tasks", a, b), []).append(name)
    return [((a.isoformat(), b.isoformat()), sorted(names)) for (_, a, b), names in sorted(runs.items())]


def event_runs(plan: EventPlan, questions: list[str]) -> list[tuple[str, str, dict, list[str] | None]]:
    """The event track's runs in order, each ``(label, job name, run tags, asset names or None = the whole
    job)``: the questions run over the registered ``questions`` partitions (or the target catalog alone when
    there is none), the daily runs of :func:`event_day_runs`, then the recorded events and bundles, the
    forecasts and scores, and the analyses. Nothing runs before its inputs."""
    from sensors.event import (
        event_analyses_job,
        event_days_job,
        event_questions_job,
        event_recorded_job,
        event_scores_job,
    )

    runs: list[tuple[str, str, dict, list[str] | None]] = []
    # the catalog first (every source asset reads it), in the questions run: nothing is older than its inputs
    if questions:
        runs.append(
            (
                f"{len(questions)} questions",
                event_questions_job.name,
                {
                    "dagster/asset_partition_range_start": questions[0],
                    "dagster/asset_partition_range_end": questions[-1],
                },
                None,
            )
        )
    else:
        runs.append(("the target catalog", event_questions_job.name, {}, ["leaf_targets"]))
    for (a, b), names in event_day_runs(plan.spans):
        runs.append(
            (
                f"days {a} .. {b}",
                event_days_job.name,
                {"dagster/asset_partition_range_start": a, "dagster/asset_partition_range_end": b},
                names,
            )
        )
    # the recorded SEER case and every task's with-events bundle, then the scores, then the analyses
    runs.append(("recorded events and bundles", event_recorded_job.name, {}, None))
    runs.append(("forecasts and scores", event_scores_job.name, {}, None))
    runs.append(("analyses", event_analyses_job.name, {}, None))
    return runs


def run_event_track(plan: EventPlan, resources: dict, instance=None) -> bool:
    """Materialize the event track from the configured sources with its three jobs (``sensors/event.py``), in
    the same Dagster instance as the macro run: the question partitions (registered from the source's question
    list), the daily runs of :func:`event_day_runs`, then the forecasts and scores behind the blocking task
    checks. Prints progress and the check tally; False (after printing why) if a run fails."""
    from dagster import AssetKey

    from assets.event_data import register_questions
    from leaf_live.definitions import build_definitions
    from resources.instance import instance_for

    t0 = time.monotonic()
    instance = instance or instance_for(resources["db"].database)
    defs = build_definitions(resources)
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    s = plan.spans
    print(
        f"event track: markets {s.markets[0]} .. {s.markets[1]}, mid caps {s.mid_cap_months[0]:%Y-%m} .. "
        f"{s.mid_cap_months[1]:%Y-%m}, weather {s.weather[0]} .. {s.weather[1]}, load {s.electricity[0]} .. "
        f"{s.electricity[1]}, resolved questions of every date",
        flush=True,
    )
    runs = event_runs(plan, register_questions(instance, resources["event_markets"]))
    ops = {
        "forecast_tasks": {"config": plan.span_config()},
        "leaf_forecasts": {
            "config": {"statistical": list(plan.statistical), "n_jobs": plan.n_jobs, "tsfm": list(plan.tsfm)}
        },
    }
    n_checks = n_failed = 0
    for label, job_name, tags, names in runs:
        t1 = time.monotonic()
        job = defs.resolve_job_def(job_name)
        keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
        selected = set(names) if names is not None else keys
        result = execute_run(
            job,
            run_config={**quiet, "ops": {k: v for k, v in ops.items() if k in selected}},
            instance=instance,
            tags=tags,
            asset_selection=[AssetKey(n) for n in names] if names is not None else None,
        )
        evals = result.get_asset_check_evaluations()
        n_checks += len(evals)
        n_failed += sum(not e.passed for e in evals)
        if report_failures(result):
            print(f"leaf-live run: event track FAILED in the {job_name} run of {label}", file=sys.stderr)
            return False
        print(
            f"  {job_name}, {label}: {', '.join(sorted(selected))} ({time.monotonic() - t1:.1f} s)",
            flush=True,
        )
    print(
        f"event track finished in {time.monotonic() - t0:.1f} s; event asset checks: {n_checks - n_failed}"
        f" passed, {n_failed} failed"
    )
    return True


def event_boards(db: str | Path, n_draws: int = 2000) -> str:
    """The event-track boards from the stored tables (read-only): task counts beside LEAF §4.1's, the stored
    coverage-robust boards (``event_board``, the dbt model over ``event_rankings``: the headline matrix
    models x domains and each domain's headline board, :func:`leaf_live.event.rankings.render_event_boards`)
    and, for the prediction-market questions, the Brier score per §4.1 cutoff with the ForecastBench
    difficulty-adjusted Brier and Brier Index (``n_draws`` bootstrap draws)."""
    from leaf_live.core.boards import terminal_width
    from leaf_live.event.board import read_board
    from leaf_live.event.rankings import render_event_boards

    con = storage.connect_read_only(db)
    try:
        scores = storage.read_table(con, "leaf_scores")
        rankings = read_board(con)
        count_lines = event_sample_counts(con)
        selective = storage.read_table(con, "selective_predictions")
    finally:
        con.close()
    if scores.height == 0:
        return "Event track (LEAF): no scores yet"
    lines = [
        "Event track (LEAF) tasks per domain and horizon (series tasks; mid caps and the large caps' 1/2-day "
        "horizons: trend tasks), LEAF §4.1 in brackets, and why a count differs:",
        *count_lines,
    ]
    lines += [
        "",
        "Event track (LEAF) leaderboard (stored event_board; `leaf-live scores --track event --scope D"
        " --horizon H` for every board):",
        render_event_boards(rankings.filter(pl.col("headline")), width=min(terminal_width(), 120))
        if rankings.height
        else "no event board stored (dbt did not build event_board)",
    ]
    if scores.filter(pl.col("metric") == "brier").height:
        lines += ["", format_event_brier(scores, n_draws)]
    lines += ["", format_selective_board(selective)]
    return "\n".join(lines)


def event_sample_counts(con) -> list[str]:
    """The count lines of :func:`leaf_live.event.pipeline.sample_count_report` from the stored tasks (tasks on
    a recorded case day outside the markets span are reported apart)."""
    from leaf_live.event import pipeline

    spans = pipeline.Spans()
    lo, hi = spans.markets
    case_days = [d.isoformat() for d in spans.case_days if not lo <= d <= hi]
    rows = con.execute(
        "SELECT domain, horizon, target_id, domain = 'large_cap' AND partition_key IN "
        "(SELECT unnest(?::VARCHAR[])) FROM forecast_tasks WHERE task_kind = 'series' OR "
        "(domain = 'large_cap' AND horizon IN ('1d', '2d') AND task_kind = 'trend5') OR "
        "(domain = 'mid_cap' AND task_kind = 'trend5')",
        [case_days],
    ).fetchall()
    counts = pl.DataFrame(
        rows,
        schema={"domain": pl.Utf8, "horizon": pl.Utf8, "target_id": pl.Utf8, "case": pl.Boolean},
        orient="row",
    )
    ev = con.execute(
        "SELECT count(DISTINCT target_id), count(*) FROM forecast_tasks WHERE domain = 'event'"
    ).fetchall()[0]
    q = storage.read_table(con, "prediction_markets")
    path = storage.read_table(con, "market_price_path")
    curated = pipeline.curated_questions(q, path).height if q.height else 0
    return pipeline.sample_count_report(counts, spans, questions=ev[0], curated=curated, event_tasks=ev[1])


def format_selective_board(picks: pl.DataFrame) -> str:
    """The selective-prediction board (recorded models that forecast only the stocks they pick): picks,
    candidates, precision of picks with its 95% Wilson interval, coverage."""
    from leaf_live.event.sources.recorded_events import selective_board

    head = "Selective-prediction board (recorded models that pick the stocks they forecast; 3-way calls):"
    if picks.height == 0:
        return head + "\n  not materialized: no selective_predictions rows (the recorded_events asset)"
    out = [head]
    for r in selective_board(picks).iter_rows(named=True):
        prec = "n/a" if r["precision"] is None else f"{r['precision']:.3f}"
        ci = "" if r["precision_lo"] is None else f" [{r['precision_lo']:.3f}, {r['precision_hi']:.3f}]"
        out.append(
            f"  {r['model_id']} on {r['case_name']}: {r['picks']} picks of {r['candidates']} stocks, "
            f"{r['correct']} correct; precision {prec}{ci}; coverage {r['coverage']:.3f}"
        )
    return "\n".join(out)


def format_event_brier(scores: pl.DataFrame, n_draws: int = 2000) -> str:
    """Brier of every event model per §4.1 cutoff (question-bootstrap interval, n questions) beside the
    difficulty-adjusted Brier and Brier Index (ForecastBench two-way fixed effects, always-0.5 = 0.25 / 50).
    """
    from leaf_live.event import catalog, scoring

    raw = scoring.brier_by_cutoff(scores, n_draws=n_draws)
    adj = scoring.difficulty_adjusted_brier(scores, n_draws=EVENT_DAB_DRAWS)
    adj_by = {(r["model_id"], r["cutoff"]): r for r in adj.iter_rows(named=True)}
    order = [f"{round(f * 100)}%" for f in catalog.EVENT_CUTOFF_FRACTIONS] + ["avg"]
    lines = [
        (
            "Event questions: Brier per cutoff (share of the time to resolution left, LEAF §4.1); 95%"
            " intervals resample questions; 'avg' = mean over questions of their mean over cutoffs, its"
            " adjusted columns pool every (question, cutoff); adjusted = ForecastBench difficulty adjustment"
            f" ({EVENT_DAB_DRAWS} draws)"
        ),
        (
            f"  {'cutoff':6} {'model':22} {'brier':>7} {'95% interval':>18} {'n':>5}   {'adj. brier':>10} "
            f"{'95% interval':>18}   {'index':>6} {'95% interval':>14}"
        ),
    ]
    for cut in order:
        g = raw.filter(pl.col("cutoff") == cut).sort("brier")
        for r in g.iter_rows(named=True):
            a = adj_by.get((r["model_id"], "all" if cut == "avg" else cut))
            adj_txt = (
                f"{a['adj_brier']:10.4f} [{a['adj_ci_lo']:.4f}, {a['adj_ci_hi']:.4f}]  "
                f" {a['brier_index']:6.1f} [{a['index_ci_lo']:.1f}, {a['index_ci_hi']:.1f}]"
                if a
                else ""
            )
            lines.append(
                f"  {cut:6} {r['model_id']:22} {r['brier']:7.4f} [{r['ci_lo']:.4f}, {r['ci_hi']:.4f}] "
                f"{r['n']:5d}   {adj_txt}"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# run plumbing: progress display and stage clock
# ---------------------------------------------------------------------------------------------

_PROCESS_START = time.monotonic()


def stage_summary(clock) -> str:
    """Where the minutes went: wall and CPU time per stage since the command started (Python start-up and
    imports before it included in the total)."""
    from leaf_live.run_progress import cpu_seconds, stage_table

    wall = time.monotonic() - _PROCESS_START
    return (
        "time per stage (CPU includes worker"
        f" processes):\n{stage_table(clock.stages, total_wall=wall, total_cpu=cpu_seconds())}"
    )


ANALYSIS_TABLES = (
    "post_release_recovery",
    "post_release_paths",
    "copying_convergence",
    "copying_gap_bins",
    "copying_comovement",
    "copying_event_time",
    "rationale_audit",
    "rationale_calculations",
    "citation_domains",
    "cross_model_errors",
    "nowcast_path_summaries",
    "revision_attributions",
)


def analysis_report(db: str | Path) -> str:
    """The Markdown report of the analysis tables (``leaf_live.macro.analyses.report``), read-only."""
    from leaf_live.macro.analyses.report import render_report
    from leaf_live.macro.analyses.series import is_agent

    con = storage.connect_read_only(db)
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        tables = {
            t: storage.read_table(con, t) if t in present else storage.empty_frame(t) for t in ANALYSIS_TABLES
        }
        agents = (
            [
                r[0]
                for r in con.execute("SELECT DISTINCT model_id FROM nowcasts ORDER BY 1").fetchall()
                if is_agent(r[0])
            ]
            if "nowcasts" in present
            else []
        )
        releases = (
            storage.read_table(con, "releases", "release_at >= '2025-11-01'")
            if "releases" in present
            else None
        )
        event = event_analysis_report(con, present)
    finally:
        con.close()
    return render_report(tables, models_in_store=agents, releases=releases) + "\n\n" + event


def event_analysis_report(con, present: set[str]) -> str:
    """The LEAF analyses part of the report (``leaf_live.event.analyses.render_report``): each analysis's
    rows, or ``not materialized: <reason>`` from ``event_analysis_status``."""
    from leaf_live.event import analyses

    tables = {t: storage.read_table(con, t) if t in present else None for t in analyses.REPORT_SECTIONS}
    status = storage.read_table(con, "event_analysis_status") if "event_analysis_status" in present else None
    return analyses.render_report(tables, status)


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
    """The backtest and live-window leaderboards (``leaf_live.macro.scoring.leaderboard``) read from the
    scoring tables through a read-only connection."""
    from leaf_live.macro.scoring.leaderboard import render_leaderboards

    con = storage.connect_read_only(db)
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "livemacro_scores" not in present:
            return "no scores yet"
        scores = storage.read_table(con, "livemacro_scores")
        decomps = storage.read_table(
            con,
            "score_decompositions",
            "decomposition IN ('shapley', 'relative_error', 'event_coverage', 'paired_bootstrap')",
        )
        betting = storage.read_table(con, "livebetting_scores", "segment = 'total'")
        fits = pl.from_arrow(
            con.sql(
                "SELECT f.fit_name, b.* EXCLUDE (cov_row, cv_grid, cv_scores) FROM market_beta_fits f "
                "JOIN market_betas b ON b.fit_id = f.fit_id AND b.position = 0"
            ).to_arrow_table()
        )
        # the stored macro board (dbt mart macro_board), when dbt has built it
        board = (
            pl.from_arrow(con.sql("SELECT * FROM macro_board").to_arrow_table())
            if "macro_board" in present
            else None
        )
    finally:
        con.close()
    return render_leaderboards(scores, decomps, betting, fits, board=board, width=110)


def summary(db: str | Path) -> str:
    """Rows per table and the span of its main timestamp, read through a read-only connection."""
    con = storage.connect_read_only(db)
    try:
        lines = [f"{'table':<24} {'rows':>9}  span"]
        for name, n in storage.table_summary(con):
            cols = storage.get_table(name).column_names
            span = ""
            for col in (
                "release_at",
                "issued_at",
                "reference_period",
                "session_date",
                "ts",
                "interval_start",
                "cutoff",
                "observed_at",
            ):
                if col in cols and n:
                    lo, hi = con.execute(f'SELECT min("{col}"), max("{col}") FROM "{name}"').fetchone()
                    span = f"{col} {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}"
                    break
            lines.append(f"{name:<24} {n:>9}  {span}")
        return "\n".join(lines)
    finally:
        con.close()


TABLES_DOC = "docs/tables.md"


def tables_markdown() -> str:
    """Markdown documentation of every registered table (name, grain, columns, units): the whole of
    ``docs/tables.md``, which ``leaf-live tables > docs/tables.md`` regenerates (``tests/test_readme.py``
    fails when it is stale)."""
    out = [
        "# Tables",
        "",
        "Generated from the schema registry (`leaf_live/core/storage.py` and each track's `schemas.py`) by "
        "`leaf-live tables > docs/tables.md`; a test fails when this file is out of date. How to open the "
        "store and query it: [operations.md](operations.md#querying-the-tables).",
        "",
    ]
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


SHOWN_REJECTIONS = 50  # rejected rows printed per refused submission; the rest counted


def main(argv: list[str] | None = None) -> int:
    prepare_process()  # the entry point: environment defaults and log redaction, once
    from resources.secrets import register_environment_secrets

    register_environment_secrets()  # the environment's secret values never reach a stored row or a log
    p = argparse.ArgumentParser(
        prog="leaf-live", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="materialize the main job for every release month the sources cover")
    r.add_argument("--snapshot", help="snapshot directory (default LEAF_LIVE_SNAPSHOT or ../shared/data)")
    try:
        default_db = get_settings().db_path
    except SettingsError as exc:  # a bad LEAF_LIVE_* variable: one line before any command
        print(f"leaf-live: {exc}", file=sys.stderr)
        return 1
    r.add_argument("--db", help=f"DuckDB file (default LEAF_LIVE_DB or {default_db})")
    r.add_argument(
        "--start", help="first release month YYYY-MM (default: first month in the sources, >= 2010-01)"
    )
    r.add_argument("--end", help="last release month YYYY-MM (default: last month in the sources)")
    r.add_argument("--fit-cutoff", help="last release month of the backtest beta fit (default 2017-12)")
    r.add_argument("--backtest-start", help="first release month the backtest scores (default 2018-01)")
    r.add_argument("--backtest-end", help="last release month the backtest scores (default 2025-10)")
    r.add_argument("--boot-draws", type=int, help="parametric/paired bootstrap draws (default 10000)")
    r.add_argument(
        "--arima-from",
        help=(
            "first release month that gets auto-ARIMA nowcasts (default: the backtest "
            "start; each distinct history costs a 52-order AIC grid)"
        ),
    )
    r.add_argument("--arima-to", help="last release month that gets auto-ARIMA nowcasts (default: no bound)")
    add_event_arguments(r)
    event_models.add_arguments(r)
    r.set_defaults(func=cmd_run)
    rp = sub.add_parser(
        "report", help="write the App. E/F/G/Q/R and LEAF analyses report from the stored tables"
    )
    rp.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    rp.add_argument("--out", help="Markdown file (default macro_analyses.md next to the database)")
    rp.set_defaults(func=cmd_report)
    t = sub.add_parser("tables", help="print the analyst-facing table documentation")
    t.set_defaults(func=cmd_tables)
    for module in (submit, status, scores, sql, participation):
        module.add_parser(sub)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except (
        SubmissionError
    ) as exc:  # the rejected rows, one a line (the first SHOWN_REJECTIONS); nothing stored
        lines = list(exc.lines())
        shown = lines[: SHOWN_REJECTIONS + 1]  # the message and the first rows
        if len(lines) > len(shown):
            shown.append(f"... and {len(lines) - len(shown):,} more rejected rows")
        print(
            "\n".join(
                f"leaf-live {args.cmd}: {line}" if k == 0 else f"  {line}" for k, line in enumerate(shown)
            ),
            file=sys.stderr,
        )
        return 1
    except (
        CommandError,
        storage.StorageError,
        SettingsError,
    ) as exc:  # a bad flag, path, file or state: one line
        print(f"leaf-live {args.cmd}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"leaf-live {args.cmd}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback: the cause in one line (LEAF_LIVE_DEBUG=1 re-raises)
        if os.environ.get("LEAF_LIVE_DEBUG"):
            raise
        from leaf_live.core.redaction import redact

        text = " ".join(str(exc).split())[:500] or "no message"
        hint = "(LEAF_LIVE_DEBUG=1 shows the traceback)"
        print(f"leaf-live {args.cmd}: {type(exc).__name__}: {redact(text)} {hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
