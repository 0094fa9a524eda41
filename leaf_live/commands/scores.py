"""``leaf-live scores [--track macro|event] [--mode M] [--fit NAME] [--horizon H] [--scope S] [--target T]
[--metric M] [--model ID ...] [--format table|csv|parquet|markdown] [--output FILE] [--db PATH]``: the
leaderboards as tables from the stored score tables (read-only).

* macro: the boards ``leaf-live run`` prints (``leaf_live.macro.scoring.leaderboard.leaderboard_rows``: models
  ranked on their common event set, each with its own-coverage score and labelled intervals) from
  ``livemacro_scores``, one board per (mode, fit, horizon, target) with those as the first columns, the fit's
  name included. Without ``--fit`` each mode shows its headline fit only (the fit its Shapley decompositions
  use: ``backtest`` for the backtest, ``full`` for the live window), so the obvious query does not return one
  row per fit; ``--fit all`` shows every fit. The default horizon is ``terminal``. ``--board betting`` prints
  the LiveBetting totals instead.
* event: ``leaf_scores`` as the LEAF leaderboard (``leaf_live.event.scoring.leaderboard``): per domain
  (``--scope``), task kind, horizon and metric, models compared on the tasks they all forecast, mean with a
  95% bootstrap interval and the task count.

A filter value that is not on the stored boards is one line naming the stored values."""

from __future__ import annotations

import argparse

import polars as pl

from leaf_live.commands.common import (
    FORMATS,
    READ_WAIT_S,
    CommandError,
    check_format,
    db_path,
    query_frame,
    read_only,
    write_result,
)
from leaf_live.core import storage


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scores", help="print the leaderboards from the stored score tables (read-only)")
    s.add_argument("--track", choices=("macro", "event"), default="macro", help="macro (default) or event")
    s.add_argument(
        "--board",
        choices=("livemacro", "betting"),
        default="livemacro",
        help="macro: the LiveMacro Score family (default) or the LiveBetting totals",
    )
    s.add_argument("--mode", help="macro: evaluation mode (backtest | live; default both)")
    s.add_argument(
        "--fit",
        help=(
            "macro: market-beta fit name (full | no_covid | backtest | ...; default: each mode's "
            "headline fit; 'all' = every fit)"
        ),
    )
    s.add_argument(
        "--horizon",
        help=(
            "macro: terminal (default) | median_1d | median_3d | median_7d; event: a task "
            "horizon (1d, 7d, 3mo, 100%%, ...)"
        ),
    )
    s.add_argument(
        "--scope",
        help=(
            "macro: overall | supply_production | demand_inflation | labor_market | housing; "
            "event: a domain (large_cap, mid_cap, commodity, weather, electricity, event)"
        ),
    )
    s.add_argument(
        "--target", help="macro: return (LiveMacro Score) | shock (consensus-relative); default both"
    )
    s.add_argument(
        "--metric",
        help=(
            "event: accuracy | mape | rmse | dlv | mae_z | mse_z | brier | crps | qloss | "
            "cover80 | cover95 (default all)"
        ),
    )
    s.add_argument(
        "--model", action="append", help="only these model ids (repeatable); ranks still use every model"
    )
    s.add_argument(
        "--boot-draws", type=int, default=2000, help="event: bootstrap draws of the intervals (default 2000)"
    )
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default), csv, parquet (needs --output) or markdown",
    )
    s.add_argument("--output", help="write to FILE instead of stdout")
    s.set_defaults(func=cmd_scores)


def _pick(frame: pl.DataFrame, col: str, value: str | None, flag: str) -> pl.DataFrame:
    if value is None:
        return frame
    stored = sorted(frame[col].drop_nulls().unique().to_list())
    if value not in stored:
        raise CommandError(
            f"--{flag} {value}: not on the stored boards; stored: {', '.join(map(str, stored)) or 'none'}"
        )
    return frame.filter(pl.col(col) == value)


def _models(frame: pl.DataFrame, models: list[str] | None) -> pl.DataFrame:
    if not models:
        return frame
    stored = set(frame["model_id"].unique().to_list())
    missing = [m for m in models if m not in stored]
    if missing:
        raise CommandError(
            f"--model {missing[0]}: no score on these boards (scored models: {', '.join(sorted(stored))})"
        )
    return frame.filter(pl.col("model_id").is_in(models))


def macro_board(
    con,
    *,
    mode: str | None = None,
    fit: str | None = None,
    horizon: str | None = "terminal",
    scope: str | None = None,
    target: str | None = None,
    models: list[str] | None = None,
) -> pl.DataFrame:
    """The LiveMacro boards (module doc): ``leaf_live.macro.scoring.leaderboard.leaderboard_rows`` per (mode,
    fit, horizon, target), with those four as the first columns (``fit_name`` from the score rows); filters as
    the flags; ``fit`` None = each mode's headline fit, ``'all'`` = every fit."""
    from leaf_live.macro.scoring.leaderboard import SCOPE_ORDER, headline_fit, leaderboard_rows

    s = storage.read_table(con, "livemacro_scores")
    if s.height == 0:
        raise CommandError("no macro scores stored yet: run `leaf-live run`")
    decomps = storage.read_table(con, "score_decompositions", "decomposition = 'shapley'")
    s = _pick(s, "partition_key", mode, "mode")
    if fit is not None and fit != "all":
        names = sorted(s["fit_name"].drop_nulls().unique().to_list())
        if fit not in names:
            raise CommandError(f"--fit {fit}: not on the stored boards; stored: {', '.join(names)} (or all)")
    s = _pick(s, "horizon", horizon, "horizon")
    s = _pick(s, "scope", scope, "scope")
    s = _pick(s, "target", target, "target")
    boards = []
    for (pk,), m in sorted(s.group_by("partition_key"), key=lambda kv: kv[0]):
        if fit is None:
            fit_ids = [headline_fit(s, decomps, pk)]
        elif fit == "all":
            fit_ids = sorted(m["fit_id"].unique().to_list())
        else:
            fit_ids = sorted(m.filter(pl.col("fit_name") == fit)["fit_id"].unique().to_list())
        for fid in fit_ids:
            f = m.filter(pl.col("fit_id") == fid)
            name = f["fit_name"].drop_nulls()
            for h in sorted(f["horizon"].unique().to_list()):
                for t in sorted(f["target"].unique().to_list()):
                    rows = leaderboard_rows(
                        s, partition_key=pk, fit_id=fid, target=t, horizon=h, scopes=SCOPE_ORDER
                    )
                    boards.append(
                        rows.select(
                            pl.lit(pk).alias("mode"),
                            pl.lit(name[0] if name.len() else fid).alias("fit_name"),
                            pl.lit(h).alias("horizon"),
                            pl.lit(t).alias("target"),
                            pl.all(),
                        )
                    )
    out = pl.concat(boards, how="vertical") if boards else pl.DataFrame()
    return _models(out, models) if out.height else out


def betting_board(con, *, models: list[str] | None = None) -> pl.DataFrame:
    """LiveBetting totals per market, hours (``window``: every hour of the prediction window; ``common``: the
    hours every compared model bets on) and model (``livebetting_scores``, segment ``total``), best return
    first.
    """
    b = query_frame(
        con,
        "SELECT market_id, indicator_id, reference_period, hours, model_id, winning_bucket, n_models_common,"
        " n_hours, n_bets, n_wins, final_return, n_no_nowcast, n_no_bucket, n_missing_price, n_zero_price"
        " FROM livebetting_scores WHERE segment = 'total'",
    )
    if b.height == 0:
        raise CommandError("no LiveBetting scores stored yet: run `leaf-live run`")
    return _models(b, models).sort(
        ["market_id", "hours", "final_return", "model_id"],
        descending=[False, True, True, False],
        nulls_last=True,
    )


def event_board(
    con,
    *,
    scope: str | None = None,
    horizon: str | None = None,
    metric: str | None = None,
    models: list[str] | None = None,
    n_draws: int = 2000,
) -> pl.DataFrame:
    """The LEAF leaderboard (``leaf_live.event.scoring.leaderboard``) of the stored ``leaf_scores``."""
    from leaf_live.event import scoring

    s = storage.read_table(con, "leaf_scores")
    if s.height == 0:
        raise CommandError("no event-track scores stored yet")
    s = _pick(s, "domain", scope, "scope")
    s = _pick(s, "horizon", horizon, "horizon")
    s = _pick(s, "metric", metric, "metric")
    board = scoring.leaderboard(s, n_draws=n_draws)
    return _models(board, models)


def cmd_scores(args: argparse.Namespace) -> int:
    out = check_format(args.format, args.output)
    if args.track == "event":
        for flag in ("mode", "fit", "target"):
            if getattr(args, flag) is not None:
                raise CommandError(f"--{flag} applies to the macro track only")
        if args.board != "livemacro":
            raise CommandError("--board applies to the macro track only")
        if args.boot_draws < 1:
            raise CommandError(f"--boot-draws {args.boot_draws}: expected a positive integer")
    elif args.metric is not None:
        raise CommandError("--metric applies to the event track only")
    con = read_only(db_path(args.db), READ_WAIT_S)
    try:
        if args.track == "event":
            frame = event_board(
                con,
                scope=args.scope,
                horizon=args.horizon,
                metric=args.metric,
                models=args.model,
                n_draws=args.boot_draws,
            )
        elif args.board == "betting":
            for flag in ("mode", "fit", "horizon", "scope", "target"):
                if getattr(args, flag) is not None:
                    raise CommandError(f"--{flag} does not apply to --board betting")
            frame = betting_board(con, models=args.model)
        else:
            frame = macro_board(
                con,
                mode=args.mode,
                fit=args.fit,
                horizon=args.horizon or "terminal",
                scope=args.scope,
                target=args.target,
                models=args.model,
            )
    finally:
        con.close()
    n = write_result(frame, args.format, out)
    if out is not None:
        print(f"{n} row{'s' if n != 1 else ''} -> {out}")
    return 0
