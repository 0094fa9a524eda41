"""``leaf-live status [--db PATH] [--as-of TIME] [--sources] [--releases N]``: what is materialized, what is
stale, and the next scheduled releases (read-only; nothing runs).

* **Runs**: the latest runs recorded in this database's Dagster instance
  (:func:`resources.instance.instance_for`: ``DAGSTER_HOME``, else one per database),
  with their status (a run in progress holds the database).
* **Assets**: for every asset of the definitions, the partitions materialized (of the partitions that exist
now)
  and the time of its latest materialization, from the instance; and the rows its tables hold now, from the
  database.
* **Stale**: an asset never materialized; an asset materialized before one of its upstream assets (its inputs
  changed since); a partitioned asset missing partitions its partitioned upstream has; a model with forecasts
  in the track's forecast table and no score (e.g. a submission stored with ``--no-score``); and release
  months the configured calendar sources list that ``release_calendar`` has not materialized (read from the
  snapshot when the transport is ``snapshot``, a fraction of a second; from the live services only with
  ``--sources``).
* **Next releases**: the scheduled releases after ``--as-of`` (default now) in the stored release calendar,
and
  the nowcast windows open at that time.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from leaf_live.commands.common import (
    READ_WAIT_S,
    CommandError,
    db_path,
    query_frame,
    read_only,
    render,
)
from leaf_live.core import storage
from leaf_live.core.settings import get_settings
from leaf_live.core.submissions import parse_timestamp
from leaf_live.macro.windows import open_windows

N_RUNS = 5


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("status", help="what is materialized, what is stale, the next scheduled releases")
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument(
        "--as-of", help="time for the next releases and open windows, ISO 8601 with an offset (default now)"
    )
    s.add_argument(
        "--sources",
        action="store_true",
        help=(
            "compare the calendar sources' release months with the "
            "materialized ones in live mode too (calls the services; in snapshot mode it is always done)"
        ),
    )
    s.add_argument("--snapshot", help="snapshot directory of the sources (default LEAF_LIVE_SNAPSHOT)")
    s.add_argument("--releases", type=int, default=10, help="how many upcoming releases to list (default 10)")
    s.set_defaults(func=cmd_status)


def _ts(t) -> str:
    return (
        "-"
        if t is None
        else (
            datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            if isinstance(t, (int, float))
            else f"{t:%Y-%m-%d %H:%M UTC}"
        )
    )


def asset_status(instance, defs) -> tuple[pl.DataFrame, list[str]]:
    """One row per asset (key, group, partitions materialized / existing, latest materialization, run id) and
    the stale lines of the asset graph (module doc)."""
    graph = defs.resolve_asset_graph()
    rows, last, parts = [], {}, {}
    keys = sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string())
    for key in keys:
        node = graph.get(key)
        ev = instance.get_latest_materialization_event(key)
        last[key] = ev.timestamp if ev is not None else None
        pdef = node.partitions_def
        if pdef is not None:
            have = set(instance.get_materialized_partitions(key))
            exist = pdef.get_partition_keys(dynamic_partitions_store=instance)
            parts[key] = (have, set(exist))
            shown = f"{len(have & set(exist))} / {len(exist)}"
        else:
            shown = "-"
        rows.append(
            {
                "asset": key.to_user_string(),
                "group": node.group_name,
                "partitions": shown,
                "last_materialized": _ts(last[key]),
                "run": ev.run_id[:8] if ev is not None else "-",
            }
        )
    stale: list[str] = []
    for key in keys:
        name = key.to_user_string()
        if last[key] is None:
            stale.append(f"{name}: never materialized")
            continue
        newer = sorted(
            p.to_user_string()
            for p in graph.get(key).parent_keys
            if p in last and last[p] is not None and last[p] > last[key]
        )
        if newer:
            stale.append(f"{name}: materialized {_ts(last[key])}, before its upstream {', '.join(newer)}")
        if key in parts:
            have = parts[key][0]
            for p in graph.get(key).parent_keys:
                if p in parts and graph.get(p).partitions_def == graph.get(key).partitions_def:
                    missing = sorted(parts[p][0] - have)
                    if missing:
                        stale.append(
                            f"{name}: {len(missing)} partitions materialized upstream in {p.to_user_string()}"
                            f" but not here ({missing[0]} .. {missing[-1]})"
                        )
    return pl.DataFrame(rows), stale


def table_rows(con) -> dict[str, int]:
    return dict(storage.table_summary(con))


def unscored_models(con) -> list[str]:
    """Models with valid forecasts in a track's forecast table and no row in its score table."""
    out = []
    for fc, sc, cond in (
        ("nowcasts", "livemacro_scores", "valid AND NOT after_release"),
        ("leaf_forecasts", "leaf_scores", "valid"),
    ):
        got = con.execute(
            f"SELECT DISTINCT model_id FROM {fc} WHERE {cond} AND model_id NOT IN "
            f"(SELECT DISTINCT model_id FROM {sc}) AND model_id || '@retrospective' NOT IN "
            f"(SELECT DISTINCT model_id FROM {sc}) ORDER BY 1"
        ).fetchall()
        out += [f"{m} ({fc}: not in {sc})" for (m,) in got]
    return out


def next_releases(con, at: datetime, n: int) -> tuple[pl.DataFrame, pl.DataFrame, datetime | None]:
    """The first ``n`` scheduled releases after ``at`` (one row per indicator and release time, the calendar
    sources merged), the nowcast windows open at ``at``, and the last stored release time."""
    up = query_frame(
        con,
        "SELECT release_at, indicator_id, any_value(period_label ORDER BY source) AS period, "
        "any_value(consensus ORDER BY source) AS consensus, string_agg(DISTINCT source, ', ') AS sources "
        "FROM release_calendar WHERE release_at > ? GROUP BY ALL ORDER BY release_at, indicator_id LIMIT ?",
        params=[at, n],
    )
    open_ = (
        open_windows(storage.read_table(con, "nowcast_windows", "closes_at > ?", [at]), at)
        .select("indicator_id", "reference_period", "opens_at", "closes_at")
        .sort("closes_at", "indicator_id")
    )
    last = con.execute("SELECT max(release_at) FROM release_calendar").fetchall()[0][0]
    return up, open_, last


def source_gaps(snapshot: str | None, con) -> list[str]:
    """Release months the configured calendar sources list that ``release_calendar`` does not hold."""
    from resources import default_resources

    cal = default_resources(snapshot=snapshot)["calendar"].client().calendar()
    months = set(cal["partition_key"].unique().to_list()) if cal.height else set()
    have = {r[0] for r in con.execute("SELECT DISTINCT partition_key FROM release_calendar").fetchall()}
    missing = sorted(m for m in months - have if m >= "2010-01")
    if not missing:
        return []
    return [
        f"release_calendar: {len(missing)} release months in the sources not materialized "
        f"({missing[0]} .. {missing[-1]}): run `leaf-live run --start {missing[0]}`"
    ]


def cmd_status(args: argparse.Namespace) -> int:
    at = datetime.now(UTC)
    if args.as_of is not None:
        try:
            at = parse_timestamp(args.as_of)
        except ValueError as exc:
            raise CommandError(f"--as-of {args.as_of!r}: {exc}") from None
    if args.releases < 0:
        raise CommandError(f"--releases {args.releases}: expected a count >= 0")
    if args.snapshot is not None and not Path(args.snapshot).is_dir():
        raise CommandError(f"--snapshot {args.snapshot}: not a directory")
    check_sources = args.sources or args.snapshot is not None or get_settings().transport == "snapshot"
    db = db_path(args.db)
    con = read_only(db, READ_WAIT_S)
    try:
        counts = table_rows(con)
        unscored = unscored_models(con)
        up, open_, last = next_releases(con, at, args.releases)
        gaps = source_gaps(args.snapshot, con) if check_sources else []
    finally:
        con.close()

    from assets.common import table_writers
    from leaf_live.definitions import ALL_ASSETS, build_definitions
    from resources import default_resources
    from resources.instance import instance_for

    instance = instance_for(db)
    defs = build_definitions(default_resources(db=db))
    assets, stale = asset_status(instance, defs)
    writers = table_writers(ALL_ASSETS)
    rows_of = {
        k.to_user_string(): sum(counts.get(t, 0) for t, ks in writers.items() if k in ks)
        for ks in writers.values()
        for k in ks
    }
    assets = assets.with_columns(
        pl.col("asset").replace_strict(rows_of, default=None, return_dtype=pl.Int64).alias("rows")
    )
    runs = instance.get_runs(limit=N_RUNS)
    home = instance.root_directory if hasattr(instance, "root_directory") else "?"
    print(f"leaf-live status: {db} (Dagster instance {home}) at {at:%Y-%m-%d %H:%M:%S} UTC")
    print(f"\nLatest runs ({len(runs)}):")
    for r in runs:
        stats = instance.get_run_stats(r.run_id)
        print(f"  {r.run_id[:8]}  {r.job_name:28s} {r.status.value:10s} started {_ts(stats.start_time)}")
    print(
        "\nAssets (partitions materialized / partitions that exist now; rows = rows of the tables it writes):"
    )
    print(render(assets, "table"))
    stale += unscored and [f"model without a score: {m}: run `leaf-live rescore`" for m in unscored] or []
    stale += gaps
    print(f"\nStale ({len(stale)}):" if stale else "\nStale: nothing (every asset is newer than its inputs)")
    for line in stale:
        print(f"  {line}")
    print(f"\nNext scheduled releases after {at:%Y-%m-%d %H:%M} UTC (stored release calendar):")
    if up.height:
        print(render(up, "table"))
    else:
        print(
            f"  none stored (the stored calendar ends {_ts(last) if last else 'empty'}); the calendar sources"
            " add scheduled releases when `leaf-live run` reads them"
        )
    print(f"Nowcast windows open at {at:%Y-%m-%d %H:%M} UTC: {open_.height}")
    if open_.height:
        print(render(open_, "table"))
    return 0
