"""Text leaderboards from the scoring tables (LiveMacroEval §4.2-4.4, App. J, K.3, L, N, S.1).

Pure functions over frames read from ``livemacro_scores``, ``score_decompositions``, ``livebetting_scores`` and
``market_beta_fits`` (joined to the first ``market_betas`` row of each fit): :func:`leaderboard_rows` selects
and orders one table, :func:`render_leaderboards` prints the historical backtest and the live window.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

from leaf_live.macro.catalog import THEMES

SCOPE_ORDER = ("overall", *THEMES)
MODE_TITLES = {"backtest": "Historical backtest", "live": "Live window"}
LEADERBOARD_COLUMNS = ("model_id", "scope", "score", "boot_ci90_lo", "boot_ci90_hi", "lmd", "n_events", "n_events_own")


def headline_fit(scores: pl.DataFrame, decompositions: pl.DataFrame, partition_key: str) -> str | None:
    """The fit a partition's decompositions use (the mode's headline fit); else its first fit_id."""
    d = decompositions.filter((pl.col("partition_key") == partition_key) & pl.col("fit_id").is_not_null()
                              & (pl.col("decomposition") == "shapley"))
    if d.height:
        return d["fit_id"][0]
    s = scores.filter(pl.col("partition_key") == partition_key).sort("fit_id")
    return s["fit_id"][0] if s.height else None


def leaderboard_rows(
    scores: pl.DataFrame,
    *,
    partition_key: str,
    fit_id: str,
    target: str,
    horizon: str = "terminal",
    scopes: Sequence[str] = SCOPE_ORDER,
    hide_unnowcast_themes: bool = True,
) -> pl.DataFrame:
    """One leaderboard: ``livemacro_scores`` rows of a partition, fit, target and horizon, columns
    :data:`LEADERBOARD_COLUMNS`, ordered by scope (overall, then the themes) and score (best first, NULL
    last), ties by model_id. ``hide_unnowcast_themes`` drops theme rows of a (non-consensus) model without a
    single own nowcast in the theme: they are the consensus's 0 by construction, not the model's."""
    order = {s: k for k, s in enumerate(scopes)}
    f = scores.filter(
        (pl.col("partition_key") == partition_key) & (pl.col("fit_id") == fit_id) & (pl.col("target") == target)
        & (pl.col("horizon") == horizon) & pl.col("scope").is_in(list(scopes))
    )
    if hide_unnowcast_themes:
        f = f.filter((pl.col("scope") == "overall") | (pl.col("n_events_own") > 0)
                     | pl.col("model_id").str.starts_with("consensus/"))
    return (
        f.with_columns(pl.col("scope").replace_strict(order, return_dtype=pl.Int32).alias("_o"))
        .sort(["_o", "score", "model_id"], descending=[False, True, False], nulls_last=True)
        .select(LEADERBOARD_COLUMNS)
    )


def _num(x: float | None, fmt: str = "+.4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _table(header: Sequence[str], rows: list[Sequence[str]], align: str) -> str:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _score_table(rows: pl.DataFrame, rel_err: dict[str, float] | None = None) -> str:
    header = ["model", "scope", "score", "90% CI", "LMD", "n events", "own"]
    align = "llrrrrr"
    if rel_err is not None:
        header.append("rel. err.")
        align += "r"
    out = []
    for r in rows.iter_rows(named=True):
        ci = f"[{_num(r['boot_ci90_lo'])}, {_num(r['boot_ci90_hi'])}]" if r["boot_ci90_lo"] is not None else "n/a"
        cells = [r["model_id"], r["scope"], _num(r["score"]), ci, _num(r["lmd"], ".3f"), str(r["n_events"]),
                 str(r["n_events_own"]) if r["n_events_own"] is not None else "n/a"]
        if rel_err is not None:
            v = rel_err.get(r["model_id"]) if r["scope"] == "overall" else None
            cells.append("" if v is None else f"{v:.3f}")
        out.append(cells)
    return _table(header, out, align)


def _fit_line(fits: pl.DataFrame, fit_id: str) -> str:
    f = fits.filter(pl.col("fit_id") == fit_id)
    if f.height == 0:
        return f"beta fit {fit_id}"
    r = f.row(0, named=True)
    names = ", ".join(sorted(set(f["fit_name"].to_list())))
    return (f"beta fit '{names}' {fit_id}: lambda = {r['lambda']:.4g} ({r['lambda_source']}), {r['n_events']:,} events "
            f"{r['window_start']:%Y-%m-%d} .. {r['window_end']:%Y-%m-%d}"
            + (f", {r['n_covid_dropped']} COVID-window events dropped" if r["covid_excluded"] else ""))


def _coverage_line(decompositions: pl.DataFrame, partition_key: str) -> str:
    c = decompositions.filter((pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "event_coverage"))
    v = {m: int(x) for m, x in zip(c["metric"], c["value"])}
    if not v:
        return "event coverage: not recorded"
    return (f"{v['n_release_timestamps']:,} release timestamps ({v['n_releases']:,} releases); "
            f"{v['n_releases_no_consensus']} releases without a consensus carry no surprise "
            f"({v['n_timestamps_no_consensus']} timestamps form no event); {v['n_events']:,} events, "
            f"{v['n_events_no_usable_window']} without a usable announcement window (no r_g: not scored); "
            f"{v['n_events_scored']:,} events scored")


def _rel_err(decompositions: pl.DataFrame, partition_key: str) -> dict[str, float]:
    d = decompositions.filter((pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "relative_error")
                              & (pl.col("metric") == "mean_abs_rel_error"))
    return dict(zip(d["model_id"], d["value"]))


def _span(scores: pl.DataFrame, partition_key: str) -> str:
    s = scores.filter((pl.col("partition_key") == partition_key) & (pl.col("scope") == "overall"))
    lo, hi = s["window_start"].min(), s["window_end"].max()
    return f"events {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}" if lo is not None else "no events"


def _robustness(scores: pl.DataFrame, fits: pl.DataFrame, partition_key: str, head: str) -> str:
    """Table 10 layout: overall LiveMacro Score per model under each fit of the partition."""
    s = scores.filter((pl.col("partition_key") == partition_key) & (pl.col("scope") == "overall")
                      & (pl.col("target") == "return") & (pl.col("horizon") == "terminal"))
    others = sorted(set(s["fit_id"].to_list()) - {head})
    if not others:
        return ""
    name = {r["fit_id"]: r["fit_name"] for r in fits.iter_rows(named=True)}
    header = ["model", name.get(head, head)] + [name.get(o, o) for o in others] + ["delta"]
    rows = []
    by = {(r["model_id"], r["fit_id"]): r["score"] for r in s.iter_rows(named=True)}
    for m in sorted(set(s["model_id"].to_list())):
        base = by.get((m, head))
        vals = [by.get((m, o)) for o in others]
        d = vals[0] - base if (vals and vals[0] is not None and base is not None) else None
        rows.append([m, _num(base), *(_num(v) for v in vals), _num(d)])
    return "Robustness (K.3, Table 10): LiveMacro Score under each fit\n" + _table(header, rows, "l" + "r" * (len(header) - 1))


def _betting_table(betting: pl.DataFrame) -> str:
    t = betting.filter(pl.col("segment") == "total").sort("market_id", "final_return", "model_id",
                                                          descending=[False, True, False], nulls_last=True)
    rows = []
    for r in t.iter_rows(named=True):
        excl = f"{r['n_no_nowcast']}/{r['n_no_bucket']}/{r['n_missing_price']}/{r['n_zero_price']}"
        rows.append([r["market_id"], r["model_id"], r["winning_bucket"], str(r["n_bets"]), str(r["n_wins"]),
                     "n/a" if r["final_return"] is None else f"{100 * r['final_return']:+.1f}%", excl])
    header = ["market", "model", "winning bucket", "bets", "wins", "return", "excluded hours (no nowcast/no bucket/missing/zero price)"]
    return _table(header, rows, "lllrrrr")


def render_leaderboards(
    scores: pl.DataFrame,
    decompositions: pl.DataFrame,
    betting: pl.DataFrame,
    fits: pl.DataFrame,
    *,
    partitions: Sequence[str] = ("backtest", "live"),
) -> str:
    """The two leaderboards as text.

    ``scores``: ``livemacro_scores`` rows; ``decompositions``: ``score_decompositions`` rows (at least the
    ``shapley``, ``relative_error`` and ``event_coverage`` ones); ``betting``: ``livebetting_scores`` rows;
    ``fits``: ``market_beta_fits`` joined to one ``market_betas`` row per fit (``fit_name``, ``fit_id``,
    ``lambda``, ``lambda_source``, ``n_events``, ``window_start``, ``window_end``, ``covid_excluded``,
    ``n_covid_dropped``). Per partition: the headline fit, the event coverage, the LiveMacro Score (target
    r_g) and the consensus-relative score (target Q_g) with 90% bootstrap intervals, LMD, events scored and
    events with the model's own nowcast; the live window adds the relative error (Table 16), the fit
    robustness table and the LiveBetting returns.
    """
    out = []
    for pk in partitions:
        title = MODE_TITLES.get(pk, pk)
        head = headline_fit(scores, decompositions, pk)
        if head is None:
            out.append(f"== {title} ({pk}): no scores ==")
            continue
        out.append(f"== {title} ({pk}): {_span(scores, pk)} ==")
        out.append(_fit_line(fits, head))
        out.append(_coverage_line(decompositions, pk))
        out.append("Models without their own nowcast for a release take the consensus there (S_hat = 0); 'own' = "
                   "events with the model's own nowcast. A zero predicted return never counts as a hit in the LMD.")
        rel = _rel_err(decompositions, pk) if pk == "live" else None
        order = (("shock", "Consensus-relative score (target Q_g, S.1)"), ("return", "LiveMacro Score (target r_g, Eq. 8)"))
        if pk != "live":
            order = order[::-1]
        for target, label in order:
            rows = leaderboard_rows(scores, partition_key=pk, fit_id=head, target=target)
            if rows.height:
                out.append(f"\n{label}, terminal nowcast, 90% parametric-bootstrap CI:")
                out.append(_score_table(rows, rel))
        rob = _robustness(scores, fits, pk, head)
        if rob:
            out.append("\n" + rob)
        if pk == "live":
            out.append("\nLiveBetting (App. L, Eq. 13): $1 on the nowcast's bucket every hour strictly before the release")
            out.append(_betting_table(betting) if betting.height else "no prediction-market prices stored")
        out.append("")
    return "\n".join(out)
