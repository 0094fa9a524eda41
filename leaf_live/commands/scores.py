"""``leaf-live scores [--track macro|event] [--mode M] [--fit NAME] [--horizon H] [--scope S] [--target T]
[--window full|ex_covid] [--metric M] [--model ID ...] [--format table|csv|json|parquet|markdown]
[--output FILE] [--db PATH]``: the leaderboards from the stored board tables (read-only).

* macro (``--board livemacro``, the default): the stored board ``macro_board`` (dbt mart): per (mode, fit,
  horizon, scope, target, event window) the coverage-robust ranking (difficulty-adjusted LiveMacro Score,
  90% interval, P(rank 1), paired interval vs the consensus, n), each model's own-event score and its
  largest single-event share, and the common-set view when it may be a ranking. ``--format table`` (the
  default) prints each board at terminal width with its direction, range and units
  (:func:`leaf_live.macro.scoring.board.render_macro_boards`); ``csv`` / ``json`` give the raw rows.
  Without ``--fit`` each mode shows its headline fit only (``backtest`` for the backtest, ``full`` for the
  live window); ``--fit all`` shows every fit. Defaults: horizon ``terminal``, scope ``overall``, target
  ``return``, both windows. ``--board common`` is the former per-model rows of ``livemacro_scores``
  (own-event scores and the greedy common-set columns); ``--board betting`` the LiveBetting totals.
* event: the stored board ``event_board`` (dbt model over ``event_rankings``, ``leaf_live.event.board``): per
  domain (``--scope``), task kind, horizon and metric, the coverage-robust ranking (each model on its own
  tasks, difficulty-adjusted skill score against the last value / the market price, 90% cluster-bootstrap
  interval, P(rank 1), n) and the common-set view where it may be a ranking. ``--format table`` prints the
  headline matrix (models x domains) and, without ``--scope`` / ``--horizon`` / ``--metric``, each domain's
  headline board (every horizon pooled); with any of them every matching board; ``csv`` / ``json`` give the
  raw rows.

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
        choices=("livemacro", "common", "betting"),
        default="livemacro",
        help=(
            "macro: the stored LiveMacro board (default), the per-model livemacro_scores rows (common) or the"
            " LiveBetting totals"
        ),
    )
    s.add_argument("--window", help="macro: full | ex_covid (default both)")
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
            "horizon (1d, 7d, 3mo, 100%%, ...) or all (the pooled headline boards)"
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
    s.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    s.add_argument(
        "--format",
        choices=(*FORMATS, "json"),
        default="table",
        help="table (default), csv, json (raw rows), parquet (needs --output) or markdown",
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


def stored_macro_board(
    con,
    *,
    mode: str | None = None,
    fit: str | None = None,
    horizon: str | None = "terminal",
    scope: str | None = "overall",
    target: str | None = "return",
    window: str | None = None,
    models: list[str] | None = None,
) -> pl.DataFrame:
    """Rows of the stored ``macro_board`` (dbt mart) for the flags; ``fit`` None = each mode's headline fit
    (:data:`leaf_live.macro.scoring.board.HEADLINE_FITS`), ``'all'`` = every fit."""
    from leaf_live.macro.scoring.board import HEADLINE_FITS

    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "macro_board" not in present:
        raise CommandError("no macro board stored yet: run `leaf-live run`")
    b = query_frame(con, "SELECT * FROM macro_board")
    if b.height == 0:
        raise CommandError("no macro scores stored yet: run `leaf-live run`")
    b = _pick(b, "leaderboard", mode, "mode")
    if fit is None:
        b = b.filter(pl.col("fit_name") == pl.col("leaderboard").replace_strict(HEADLINE_FITS, default=None))
    elif fit != "all":
        names = sorted(b["fit_name"].drop_nulls().unique().to_list())
        if fit not in names:  # the same line as --board common's: 'all' is a value too
            raise CommandError(f"--fit {fit}: not on the stored boards; stored: {', '.join(names)} (or all)")
        b = b.filter(pl.col("fit_name") == fit)
    b = _pick(b, "horizon", horizon, "horizon")
    b = _pick(b, "scope", scope, "scope")
    b = _pick(b, "target", target, "target")
    b = _pick(b, "event_window", window, "window")
    b = _models(b, models)
    return b.sort(
        ["leaderboard", "fit_name", "horizon", "scope", "target", "event_window", "rank", "model_id"],
        nulls_last=True,
    )


def write_json(frame: pl.DataFrame, out) -> int:
    """Raw rows as a JSON array of objects (timestamps ISO 8601) to ``out`` or stdout; returns the rows."""
    import json
    import sys

    text = json.dumps(frame.to_dicts(), default=str, indent=1) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
    return frame.height


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
) -> pl.DataFrame:
    """Rows of the stored ``event_board`` (dbt model, :mod:`leaf_live.event.board`) for the flags, in board
    order (domain, task kind, horizon, metric, rank). Raises :class:`CommandError` when nothing is stored."""
    from leaf_live.event.board import read_board

    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    b = read_board(con)
    if b.height == 0:
        scored = "leaf_scores" in present and con.execute("SELECT count(*) FROM leaf_scores").fetchall()[0][0]
        raise CommandError(
            "no event board stored yet: run `leaf-live rescore --track event`"
            if scored
            else "no event-track scores stored yet"
        )
    b = _pick(b, "domain", scope, "scope")
    b = _pick(b, "horizon", horizon, "horizon")
    b = _pick(b, "metric", metric, "metric")
    b = _models(b, models)
    return b.sort(["domain", "task_kind", "horizon", "metric", "rank", "model_id"], nulls_last=True)


def cmd_scores(args: argparse.Namespace) -> int:
    out = check_format(args.format, args.output)
    if args.track == "event":
        for flag in ("mode", "fit", "target"):
            if getattr(args, flag) is not None:
                raise CommandError(f"--{flag} applies to the macro track only")
        if args.board != "livemacro":
            raise CommandError("--board applies to the macro track only")
        if args.window is not None:
            raise CommandError("--window applies to the macro track only")
    elif args.metric is not None:
        raise CommandError("--metric applies to the event track only")
    con = read_only(db_path(args.db), READ_WAIT_S)
    try:
        if args.track == "event":
            frame = event_board(
                con, scope=args.scope, horizon=args.horizon, metric=args.metric, models=args.model
            )
            if args.format == "table":
                from leaf_live.core.boards import terminal_width
                from leaf_live.event.rankings import render_event_boards

                drill = any(v is not None for v in (args.scope, args.horizon, args.metric))
                shown = frame if drill else frame.filter(pl.col("headline"))
                text = render_event_boards(shown, width=terminal_width()) + "\n"
                if not drill:
                    from leaf_live.core.boards import _wrap

                    hint = (
                        "(headline boards only: --scope DOMAIN, --horizon H or --metric M for every board,"
                        " e.g. --scope large_cap --horizon 3d; --format csv|json for the raw rows)"
                    )
                    text += "\n" + "\n".join(_wrap(hint, terminal_width())) + "\n"
                if out is None:
                    print(text, end="")
                else:
                    out.write_text(text)
                    print(f"{frame.height} row{'s' if frame.height != 1 else ''} -> {out}")
                return 0
        elif args.board == "betting":
            for flag in ("mode", "fit", "horizon", "scope", "target", "window"):
                if getattr(args, flag) is not None:
                    raise CommandError(f"--{flag} does not apply to --board betting")
            frame = betting_board(con, models=args.model)
        elif args.board == "livemacro":
            frame = stored_macro_board(
                con,
                mode=args.mode,
                fit=args.fit,
                horizon=args.horizon or "terminal",
                scope=args.scope or "overall",
                target=args.target or "return",
                window=args.window,
                models=args.model,
            )
            if args.format == "table":
                from leaf_live.core.boards import terminal_width
                from leaf_live.macro.scoring.board import render_macro_boards

                text = render_macro_boards(frame, width=terminal_width()) + "\n"
                if out is None:
                    print(text, end="")
                else:
                    out.write_text(text)
                    print(f"{frame.height} row{'s' if frame.height != 1 else ''} -> {out}")
                return 0
        else:
            if args.window is not None:
                raise CommandError("--window applies to --board livemacro only")
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
    n = write_json(frame, out) if args.format == "json" else write_result(frame, args.format, out)
    if out is not None:
        print(f"{n} row{'s' if n != 1 else ''} -> {out}")
    return 0
