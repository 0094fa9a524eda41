"""``leaf-live scores [--track macro|event] [--mode M] [--fit NAME] [--horizon H] [--scope S] [--target T]
[--metric M] [--model ID ...] [--format table|csv|parquet|markdown] [--output FILE] [--db PATH]``: the leaderboards
as tables from the stored score tables (read-only).

* macro: ``livemacro_scores`` with the fit's name (``market_beta_fits``) on every row, one board per (mode, fit,
  horizon, target), scopes overall then the themes, models best first. Without ``--fit`` each mode shows its
  headline fit only (the fit its Shapley decompositions use: ``backtest`` for the backtest, ``full`` for the
  live window), so the obvious query does not return one row per fit; ``--fit all`` shows every fit. The
  default horizon is ``terminal``. A theme row of a model without one own nowcast in the theme (the consensus's 0
  by construction) is left out unless ``--all-rows``. ``--board betting`` prints the LiveBetting totals instead.
* event: ``leaf_scores`` as the LEAF leaderboard (``leaf_live.event.scoring.leaderboard``): per domain
  (``--scope``), task kind, horizon and metric, models compared on the tasks they all forecast, mean with a 95%
  bootstrap interval and the task count.

A filter value that is not on the stored boards is one line naming the stored values."""

from __future__ import annotations

import argparse

import polars as pl

from leaf_live.commands.common import (
    query_frame,
    FORMATS,
    READ_WAIT_S,
    CommandError,
    check_format,
    db_path,
    read_only,
    write_result,
)
from leaf_live.core import storage
from leaf_live.macro.catalog import THEMES

SCOPE_ORDER = ("overall", *THEMES)


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scores", help="print the leaderboards from the stored score tables (read-only)")
    s.add_argument("--track", choices=("macro", "event"), default="macro", help="macro (default) or event")
    s.add_argument("--board", choices=("livemacro", "betting"), default="livemacro",
                   help="macro: the LiveMacro Score family (default) or the LiveBetting totals")
    s.add_argument("--mode", help="macro: evaluation mode (backtest | live; default both)")
    s.add_argument("--fit", help="macro: market-beta fit name (full | no_covid | backtest | ...; default: each mode's "
                   "headline fit; 'all' = every fit)")
    s.add_argument("--horizon", help="macro: terminal (default) | median_1d | median_3d | median_7d; event: a task "
                   "horizon (1d, 7d, 3mo, 100%%, ...)")
    s.add_argument("--scope", help="macro: overall | supply_production | demand_inflation | labor_market | housing; "
                   "event: a domain (large_cap, mid_cap, commodity, weather, electricity, event)")
    s.add_argument("--target", help="macro: return (LiveMacro Score) | shock (consensus-relative); default both")
    s.add_argument("--metric", help="event: accuracy | mape | rmse | dlv | mae_z | mse_z | brier | crps | qloss | "
                   "cover80 | cover95 (default all)")
    s.add_argument("--all-rows", action="store_true", help="macro: keep theme rows of models without an own "
                   "nowcast in the theme (the consensus's 0)")
    s.add_argument("--model", action="append", help="only these model ids (repeatable); ranks still use every model")
    s.add_argument("--boot-draws", type=int, default=2000, help="event: bootstrap draws of the intervals (default 2000)")
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument("--format", choices=FORMATS, default="table", help="table (default), csv, parquet (needs "
                   "--output) or markdown")
    s.add_argument("--output", help="write to FILE instead of stdout")
    s.set_defaults(func=cmd_scores)


def _pick(frame: pl.DataFrame, col: str, value: str | None, flag: str) -> pl.DataFrame:
    if value is None:
        return frame
    stored = sorted(frame[col].drop_nulls().unique().to_list())
    if value not in stored:
        raise CommandError(f"--{flag} {value}: not on the stored boards; stored: {', '.join(map(str, stored)) or 'none'}")
    return frame.filter(pl.col(col) == value)


def _models(frame: pl.DataFrame, models: list[str] | None) -> pl.DataFrame:
    if not models:
        return frame
    stored = set(frame["model_id"].unique().to_list())
    missing = [m for m in models if m not in stored]
    if missing:
        raise CommandError(f"--model {missing[0]}: no score on these boards (scored models: {', '.join(sorted(stored))})")
    return frame.filter(pl.col("model_id").is_in(models))


def macro_board(con, *, mode: str | None = None, fit: str | None = None, horizon: str | None = "terminal",
                scope: str | None = None, target: str | None = None, models: list[str] | None = None,
                all_rows: bool = False) -> pl.DataFrame:
    """The LiveMacro boards (module doc) from ``livemacro_scores`` with ``fit_name``; filters as the flags.
    Theme rows of a (non-consensus) model without an own nowcast in the theme are left out unless ``all_rows``:
    they are the consensus's 0 by construction (as the printed leaderboards)."""
    s = query_frame(con,
        "WITH names AS (SELECT fit_id, string_agg(DISTINCT fit_name, '=' ORDER BY fit_name) AS fit_name "
        "FROM market_beta_fits GROUP BY fit_id), "
        "head AS (SELECT partition_key, min(fit_id) AS fit_id FROM score_decompositions WHERE decomposition = 'shapley' "
        "AND fit_id IS NOT NULL GROUP BY partition_key) "
        "SELECT s.partition_key AS mode, coalesce(n.fit_name, s.fit_id) AS fit_name, "
        "s.fit_id = h.fit_id AS headline, s.horizon, s.target, s.scope, s.model_id, s.score, "
        "s.boot_ci90_lo AS ci90_lo, s.boot_ci90_hi AS ci90_hi, s.lmd, s.n_events, s.n_events_own AS own, s.fit_id "
        "FROM livemacro_scores s LEFT JOIN names n USING (fit_id) LEFT JOIN head h USING (partition_key)")
    if s.height == 0:
        raise CommandError("no macro scores stored yet: run `leaf-live run`")
    s = _pick(s, "mode", mode, "mode")
    if fit is None:
        s = s.filter(pl.col("headline").fill_null(True))
    elif fit != "all":
        names = sorted({p for v in s["fit_name"].unique().to_list() for p in v.split("=")})
        if fit not in names:
            raise CommandError(f"--fit {fit}: not on the stored boards; stored: {', '.join(names)} (or all)")
        s = s.filter(pl.col("fit_name").str.split("=").list.contains(fit))
    s = _pick(s, "horizon", horizon, "horizon")
    s = _pick(s, "scope", scope, "scope")
    s = _pick(s, "target", target, "target")
    s = _models(s, models)
    if not all_rows:  # a theme without one own nowcast of the model is the consensus's 0, not the model's
        s = s.filter((pl.col("scope") == "overall") | (pl.col("own") > 0) | pl.col("model_id").str.starts_with("consensus/"))
    order = {v: k for k, v in enumerate(SCOPE_ORDER)}
    return (s.with_columns(pl.col("scope").replace_strict(order, default=len(order), return_dtype=pl.Int32).alias("_o"))
            .sort(["mode", "fit_name", "horizon", "target", "_o", "score", "model_id"],
                  descending=[False, False, False, False, False, True, False], nulls_last=True)
            .drop("_o", "headline", "fit_id"))


def betting_board(con, *, models: list[str] | None = None) -> pl.DataFrame:
    """LiveBetting totals per market and model (``livebetting_scores``, segment ``total``), best return first."""
    b = query_frame(con,
        "SELECT market_id, indicator_id, reference_period, model_id, winning_bucket, n_bets, n_wins, "
        "final_return, n_no_nowcast, n_no_bucket, n_missing_price, n_zero_price FROM livebetting_scores "
        "WHERE segment = 'total'")
    if b.height == 0:
        raise CommandError("no LiveBetting scores stored yet: run `leaf-live run`")
    return _models(b, models).sort(["market_id", "final_return", "model_id"], descending=[False, True, False],
                                   nulls_last=True)


def event_board(con, *, scope: str | None = None, horizon: str | None = None, metric: str | None = None,
                models: list[str] | None = None, n_draws: int = 2000) -> pl.DataFrame:
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
            frame = event_board(con, scope=args.scope, horizon=args.horizon, metric=args.metric, models=args.model,
                                n_draws=args.boot_draws)
        elif args.board == "betting":
            for flag in ("mode", "fit", "horizon", "scope", "target"):
                if getattr(args, flag) is not None:
                    raise CommandError(f"--{flag} does not apply to --board betting")
            frame = betting_board(con, models=args.model)
        else:
            frame = macro_board(con, mode=args.mode, fit=args.fit, horizon=args.horizon or "terminal",
                                scope=args.scope, target=args.target, models=args.model, all_rows=args.all_rows)
    finally:
        con.close()
    n = write_result(frame, args.format, out)
    if out is not None:
        print(f"{n} row{'s' if n != 1 else ''} -> {out}")
    return 0
