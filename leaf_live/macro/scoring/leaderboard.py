"""Text leaderboards from the scoring tables (LiveMacroEval §4.2-4.4, App. J, K.3, L, N, S.1-S.2).

Pure functions over frames read from ``livemacro_scores``, ``score_decompositions``, ``livebetting_scores``
and ``market_beta_fits`` (joined to the first ``market_betas`` row of each fit): :func:`leaderboard_rows`
selects and orders one board, :func:`render_leaderboards` prints the historical backtest and the live window.

What a board shows (docs/leaderboards.md): with the stored board (``macro_board``, given as ``board``) the
ranks are its coverage-robust ones (:func:`leaf_live.macro.scoring.board.render_macro_board`); without it the
former view: models ranked only on their common event set (the events every compared model nowcasts itself,
size printed); beside the rank, each model's own-coverage score
on all of its own events; every interval is labelled with the uncertainty it carries; a paired comparison
with fewer shared events than the minimum prints "too few shared events" instead of an interval.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import polars as pl

from leaf_live.macro.catalog import THEMES

SCOPE_ORDER = ("overall", *THEMES)
MODE_TITLES = {"backtest": "Historical backtest", "live": "Live window"}
LEADERBOARD_COLUMNS = (
    "model_id",
    "scope",
    "common_rank",
    "common_score",
    "common_ci90_lo",
    "common_ci90_hi",
    "common_lmd",
    "n_events_common",
    "n_models_common",
    "n_events",
    "n_events_own",
    "score",
    "combined_ci90_lo",
    "combined_ci90_hi",
    "boot_ci90_lo",
    "boot_ci90_hi",
    "lmd",
    "min_events",
)
TARGET_LABELS = {
    "return": "LiveMacro Score (target r_g, Eq. 8)",
    "shock": "Consensus-relative score (target Q_g, S.1)",
}


def headline_fit(scores: pl.DataFrame, decompositions: pl.DataFrame, partition_key: str) -> str | None:
    """The fit a partition's decompositions use (the mode's headline fit); else its first fit_id."""
    d = decompositions.filter(
        (pl.col("partition_key") == partition_key)
        & pl.col("fit_id").is_not_null()
        & (pl.col("decomposition") == "shapley")
    )
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
) -> pl.DataFrame:
    """One board: ``livemacro_scores`` rows of a partition, fit, target and horizon with at least one own
    event, columns :data:`LEADERBOARD_COLUMNS`, ordered by scope (overall, then the themes), then the compared
    models by ``common_rank`` (best first), then the models not compared by own-coverage score (best first,
    NULL last), ties by model_id. A model without an own event in a scope has no row there (it was not
    scored)."""
    order = {s: k for k, s in enumerate(scopes)}
    f = scores.filter(
        (pl.col("partition_key") == partition_key)
        & (pl.col("fit_id") == fit_id)
        & (pl.col("target") == target)
        & (pl.col("horizon") == horizon)
        & pl.col("scope").is_in(list(scopes))
        & (pl.col("n_events_own") > 0)
    )
    return (
        f.with_columns(
            pl.col("scope").replace_strict(order, return_dtype=pl.Int32).alias("_o"),
            pl.col("common_rank").is_null().alias("_nc"),
        )
        .sort(
            ["_o", "_nc", "common_rank", "score", "model_id"],
            descending=[False, False, False, True, False],
            nulls_last=True,
        )
        .select(LEADERBOARD_COLUMNS)
    )


def _num(x: float | None, fmt: str = "+.4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _ci(lo: float | None, hi: float | None, fmt: str = "+.4f") -> str:
    return f"[{_num(lo, fmt)}, {_num(hi, fmt)}]"


def _table(header: Sequence[str], rows: list[Sequence[str]], align: str) -> str:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _too_few(n: int, m: int | None) -> str:
    return f"too few events ({n} < {m})"


def _score_table(rows: pl.DataFrame, rel_err: dict[str, tuple[float, float | None]] | None = None) -> str:
    """One scope's board: the common-event ranking and each model's own-coverage score beside it."""
    header = [
        "rank",
        "model",
        "common score",
        "90% CI beta+events",
        "LMD",
        "own events",
        "own score",
        "90% CI beta+events",
        "90% CI beta only",
        "own LMD",
    ]
    align = "rllrrrrrrr"
    if rel_err is not None:
        header += ["rel. err. own", "rel. err. common"]
        align += "rr"
    out = []
    for r in rows.iter_rows(named=True):
        compared = r["common_rank"] is not None
        m = r["min_events"]
        if compared:
            cci = (
                _ci(r["common_ci90_lo"], r["common_ci90_hi"])
                if r["common_ci90_lo"] is not None
                else _too_few(r["n_events_common"], m)
            )
            common = [
                str(r["common_rank"]),
                r["model_id"],
                _num(r["common_score"]),
                cci,
                _num(r["common_lmd"], ".3f"),
            ]
        else:
            common = ["-", r["model_id"], "not compared", "", ""]
        own_ci = (
            _ci(r["combined_ci90_lo"], r["combined_ci90_hi"])
            if r["combined_ci90_lo"] is not None
            else _too_few(r["n_events_own"], m)
            if r["score"] is not None
            else "n/a"
        )
        cells = [
            *common,
            f"{r['n_events_own']}/{r['n_events']}",
            _num(r["score"]),
            own_ci,
            _ci(r["boot_ci90_lo"], r["boot_ci90_hi"]) if r["boot_ci90_lo"] is not None else "n/a",
            _num(r["lmd"], ".3f"),
        ]
        if rel_err is not None:
            own, com = rel_err.get(r["model_id"], (None, None)) if r["scope"] == "overall" else (None, None)
            cells += ["" if own is None else f"{own:.3f}", "" if com is None else f"{com:.3f}"]
        out.append(cells)
    return _table(header, out, align)


def _board(rows: pl.DataFrame, rel_err: dict[str, tuple[float, float | None]] | None) -> list[str]:
    out = []
    for scope in SCOPE_ORDER:
        s = rows.filter(pl.col("scope") == scope)
        if s.height == 0:
            continue
        if s.filter(~pl.col("model_id").str.starts_with("consensus/")).height == 0:
            continue
        comp = s.filter(pl.col("common_rank").is_not_null())
        if comp.height:
            n = comp["n_events_common"][0]
            head = (
                f"  {scope}: ranked on the common event set, {n} events where each of the {comp.height}"
                f" compared models has its own nowcast ({', '.join(comp['model_id'].to_list())})"
            )
        else:
            head = (
                f"  {scope}: no common event set of at least {s['min_events'][0]} events; own-coverage scores"
                " only"
            )
        out.append(head)
        out.append(_score_table(s, rel_err if scope == "overall" else None))
    return out


def _fit_line(fits: pl.DataFrame, fit_id: str) -> str:
    f = fits.filter(pl.col("fit_id") == fit_id)
    if f.height == 0:
        return f"beta fit {fit_id}"
    r = f.row(0, named=True)
    names = ", ".join(sorted(set(f["fit_name"].to_list())))
    sigma = r.get("sigma_rule")
    return (
        f"beta fit '{names}' {fit_id}: lambda = {r['lambda']:.4g} ({r['lambda_source']}), {r['n_events']:,}"
        f" events {r['window_start']:%Y-%m-%d} .. {r['window_end']:%Y-%m-%d}"
        + (f", {r['n_covid_dropped']} COVID-window events dropped" if r["covid_excluded"] else "")
        + (
            "; sigma_i from"
            + (
                " the fit window (point in time)"
                if sigma == "fit_window"
                else " surprise_scales 2010-01..2025-10"
            )
            if sigma
            else ""
        )
    )


def _coverage_line(decompositions: pl.DataFrame, partition_key: str) -> str:
    c = decompositions.filter(
        (pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "event_coverage")
    )
    v = {m: int(x) for m, x in zip(c["metric"], c["value"])}
    if not v:
        return "event coverage: not recorded"
    merged = v.get("n_timestamps_merged", 0)
    return (
        f"{v['n_release_timestamps']:,} release timestamps ({v['n_releases']:,} releases); "
        f"{v['n_releases_no_consensus']} releases without a consensus carry no surprise "
        f"({v['n_timestamps_no_consensus']} timestamps form no event); "
        f"{merged} joined an overlapping announcement window's event; {v['n_events']:,} scoring events, "
        f"{v['n_events_no_usable_window']} without a usable announcement window (no r_g: not scored); "
        f"{v['n_events_scored']:,} events scored"
    )


def _rel_err(decompositions: pl.DataFrame, partition_key: str) -> dict[str, tuple[float, float | None]]:
    """model -> (rel. err. on its own releases, on the common set's field-events or None)."""
    d = decompositions.filter(
        (pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "relative_error")
    )
    v = {(m, k): x for m, k, x in zip(d["model_id"], d["metric"], d["value"])}
    return {
        m: (x, v.get((m, "mean_abs_rel_error_common")))
        for (m, k), x in v.items()
        if k == "mean_abs_rel_error"
    }


def _rel_err_note(decompositions: pl.DataFrame, partition_key: str) -> str:
    d = decompositions.filter(
        (pl.col("partition_key") == partition_key)
        & (pl.col("decomposition") == "relative_error")
        & (pl.col("metric") == "n_field_events_common")
    )
    common = (
        f"'rel. err. common' = the same on the {int(d['value'][0])} field-events every compared model"
        f" nowcasts ({', '.join(sorted(d['model_id']))}): the column to compare"
        if d.height
        else "no common field-events: 'rel. err. common' is empty"
    )
    return (
        "rel. err. (App. J, Table 16; lower is better): mean |nowcast - actual| / s_i. 'rel. err. own' = on"
        f" the model's own releases (not comparable across models); {common}."
    )


def _rel_err_table(decompositions: pl.DataFrame, partition_key: str) -> str:
    """The relative error per model, on its own releases and on the common set, with its legend."""
    d = decompositions.filter(
        (pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "relative_error")
    )
    v = {(m, k): x for m, k, x in zip(d["model_id"], d["metric"], d["value"])}

    def cell(m: str, k: str, fmt: str) -> str:
        x = v.get((m, k))
        return "" if x is None else format(x, fmt)

    models = sorted(
        {m for m, k in v if k == "mean_abs_rel_error"},
        key=lambda m: (
            v.get((m, "mean_abs_rel_error_common")) is None,
            v.get((m, "mean_abs_rel_error_common"), 0),
            m,
        ),
    )
    rows = [
        [
            m,
            cell(m, "n_field_events", ".0f"),
            cell(m, "mean_abs_rel_error", ".3f"),
            cell(m, "n_field_events_common", ".0f"),
            cell(m, "mean_abs_rel_error_common", ".3f"),
        ]
        for m in models
    ]
    header = ["model", "own n", "rel. err. own", "common n", "rel. err. common"]
    return (
        "Relative error\n"
        + textwrap.fill(_rel_err_note(decompositions, partition_key), 110)
        + "\n"
        + _table(header, rows, "lrrrr")
    )


def _span(scores: pl.DataFrame, partition_key: str) -> str:
    s = scores.filter((pl.col("partition_key") == partition_key) & (pl.col("scope") == "overall"))
    lo, hi = s["window_start"].min(), s["window_end"].max()
    return f"events {lo:%Y-%m-%d} .. {hi:%Y-%m-%d}" if lo is not None else "no events"


def _robustness(scores: pl.DataFrame, fits: pl.DataFrame, partition_key: str, head: str) -> str:
    """Table 10 layout: own-coverage LiveMacro Score per model under each fit of the partition."""
    s = scores.filter(
        (pl.col("partition_key") == partition_key)
        & (pl.col("scope") == "overall")
        & (pl.col("target") == "return")
        & (pl.col("horizon") == "terminal")
    )
    others = sorted(set(s["fit_id"].to_list()) - {head})
    if not others:
        return ""
    name = {r["fit_id"]: r["fit_name"] for r in s.iter_rows(named=True)}
    header = ["model", "own events", name.get(head, head)] + [name.get(o, o) for o in others] + ["delta"]
    rows = []
    by = {(r["model_id"], r["fit_id"]): r for r in s.iter_rows(named=True)}
    for m in sorted(set(s["model_id"].to_list())):
        base = by.get((m, head))
        vals = [by.get((m, o)) for o in others]
        b = base["score"] if base else None
        d = (
            vals[0]["score"] - b
            if (vals and vals[0] and vals[0]["score"] is not None and b is not None)
            else None
        )
        rows.append(
            [
                m,
                str(base["n_events_own"]) if base else "",
                _num(b),
                *(_num(v["score"] if v else None) for v in vals),
                _num(d),
            ]
        )
    return "Robustness (K.3, Table 10): own-coverage LiveMacro Score under each fit\n" + _table(
        header, rows, "lr" + "r" * (len(header) - 2)
    )


def _horizons(scores: pl.DataFrame, partition_key: str, head: str) -> str:
    """K.3 horizons: each model's own-coverage LiveMacro Score at every horizon (the forecast standing then)
    and the K.3 sampling interval at the terminal horizon."""
    s = scores.filter(
        (pl.col("partition_key") == partition_key)
        & (pl.col("scope") == "overall")
        & (pl.col("target") == "return")
        & (pl.col("fit_id") == head)
    )
    hs = [h for h in ("terminal", "median_1d", "median_3d", "median_7d") if h in set(s["horizon"].to_list())]
    if len(hs) < 2:
        return ""
    by = {(r["model_id"], r["horizon"]): r for r in s.iter_rows(named=True)}
    rows = []
    for m in sorted(set(s["model_id"].to_list())):
        cells = [m]
        for h in hs:
            r = by.get((m, h))
            cells.append(
                "" if r is None or r["score"] is None else f"{_num(r['score'])} ({r['n_events_own']})"
            )
        t = by.get((m, "terminal"))
        cells.append(
            f"{_num(t['sampling_mean'])} {_ci(t['sampling_ci95_lo'], t['sampling_ci95_hi'])}"
            if t and t["sampling_mean"] is not None
            else ""
        )
        rows.append(cells)
    header = ["model", *hs, "K.3 sampling mean [95% t-CI]"]
    return (
        "Horizons (K.3): own-coverage LiveMacro Score (own events) of the forecast standing at each horizon;"
        " the sampling interval uses the forecast standing 0..k-1 hours before each release\n"
        + _table(header, rows, "l" + "r" * (len(header) - 1))
    )


def _paired(decompositions: pl.DataFrame, partition_key: str) -> str:
    d = decompositions.filter(
        (pl.col("partition_key") == partition_key) & (pl.col("decomposition") == "paired_bootstrap")
    )
    if d.height == 0:
        return ""
    rows = []
    keys = (
        d.select("model_id", "comparator_model_id", "target")
        .unique()
        .sort("target", "model_id", "comparator_model_id")
    )
    for a, b, t in keys.iter_rows():
        v = dict(
            d.filter(
                (pl.col("model_id") == a) & (pl.col("comparator_model_id") == b) & (pl.col("target") == t)
            )
            .select("metric", "value")
            .iter_rows()
        )
        n, m = int(v["n_events"]), int(v.get("min_events", 0))
        ci = _ci(v["ci95_lo"], v["ci95_hi"]) if "ci95_lo" in v else f"too few shared events ({n} < {m})"
        rows.append([f"{a} - {b}", t, str(n), _num(v["delta"]), ci])
    return (
        "Paired event bootstrap (S.2): score difference on the events both models nowcast themselves,"
        " terminal, overall\n"
        + _table(
            ["comparison", "target", "shared events", "delta", "95% CI (event resampling)"], rows, "llrrr"
        )
    )


def _betting_table(betting: pl.DataFrame, hours: str) -> str:
    t = betting.filter((pl.col("segment") == "total") & (pl.col("hours") == hours)).sort(
        "market_id", "final_return", "model_id", descending=[False, True, False], nulls_last=True
    )
    rows = []
    for r in t.iter_rows(named=True):
        excl = f"{r['n_no_nowcast']}/{r['n_no_bucket']}/{r['n_missing_price']}/{r['n_zero_price']}"
        rows.append(
            [
                r["market_id"],
                r["model_id"],
                r["winning_bucket"],
                str(r["n_hours"]),
                str(r["n_bets"]),
                str(r["n_wins"]),
                "n/a" if r["final_return"] is None else f"{100 * r['final_return']:+.1f}%",
                excl,
            ]
        )
    header = [
        "market",
        "model",
        "winning bucket",
        "hours",
        "bets",
        "wins",
        "return",
        "excluded hours (no answer yet/no bucket/missing/zero price)",
    ]
    return _table(header, rows, "lllrrrrr")


def render_leaderboards(
    scores: pl.DataFrame,
    decompositions: pl.DataFrame,
    betting: pl.DataFrame,
    fits: pl.DataFrame,
    *,
    partitions: Sequence[str] = ("backtest", "live"),
    board: pl.DataFrame | None = None,
    width: int | None = None,
) -> str:
    """The two leaderboards as text.

    ``board``: rows of the stored ``macro_board`` (dbt mart); when given, each target's headline is the
    stored coverage-robust board (overall scope, terminal horizon, the full and the ex-COVID windows,
    :func:`leaf_live.macro.scoring.board.render_macro_board` at ``width``) instead of the common-event rows.

    ``scores``: ``livemacro_scores`` rows; ``decompositions``: ``score_decompositions`` rows (at least the
    ``shapley``, ``relative_error``, ``event_coverage`` and ``paired_bootstrap`` ones); ``betting``:
    ``livebetting_scores`` rows (``segment = 'total'`` suffices); ``fits``: ``market_beta_fits`` joined to one
    ``market_betas`` row per fit (``fit_name``, ``fit_id``, ``lambda``, ``lambda_source``, ``n_events``,
    ``window_start``, ``window_end``, ``covid_excluded``, ``n_covid_dropped``, ``sigma_rule``). Per partition:
    the headline fit, the event coverage, per target and scope the common-event ranking with each model's
    own-coverage score beside it (labelled intervals), the paired comparisons; the live window adds the
    relative error (Table 16), the horizons, the fit robustness table and the LiveBetting returns (in-window
    hours and common hours).
    """
    out = []
    for pk in partitions:
        title = MODE_TITLES.get(pk, pk)
        head = headline_fit(scores, decompositions, pk)
        if head is None:
            out.append(f"== {title} ({pk}): no scores ==")
            continue
        s_pk = scores.filter((pl.col("partition_key") == pk) & (pl.col("fit_id") == head))
        min_ev = s_pk["min_events"].drop_nulls()
        min_ev = int(min_ev[0]) if min_ev.len() else None
        out.append(f"== {title} ({pk}): {_span(scores, pk)} ==")
        out.append(_fit_line(fits, head))
        out.append(_coverage_line(decompositions, pk))
        ranked_on = (
            "Ranks are the stored board's (macro_board): difficulty-adjusted scores, each model on its own"
            " events."
            if board is not None and board.filter(pl.col("leaderboard") == pk).height
            else "Models are ranked only on their common event set."
        )
        out.append(
            "Each model is scored on its own events (those where it has its own pre-release nowcast for a"
            " released field of the scope; a release of such an event it does not nowcast takes the"
            f" consensus, S_hat = 0); 'own events' = own/all events of the scope. {ranked_on} LMD ="
            " |Y|-weighted sign hit rate, 0.5 = coin flip (a zero predicted return counts half). Intervals:"
            " 'beta only' = parametric over V_beta (Eq. 12); 'beta+events' = beta draws on event resamples"
            f" (combined), given from {min_ev} events on."
        )
        rel = _rel_err(decompositions, pk) if pk == "live" else None
        order = ("shock", "return") if pk == "live" else ("return", "shock")
        stored = (
            board.filter(
                (pl.col("leaderboard") == pk)
                & (pl.col("fit_id") == head)
                & (pl.col("horizon") == "terminal")
                & (pl.col("scope") == "overall")
            )
            if board is not None
            else None
        )
        for target in order:
            if stored is not None and stored.height:
                from leaf_live.macro.scoring.board import render_macro_board

                for window in ("full", "ex_covid"):
                    g = stored.filter((pl.col("target") == target) & (pl.col("event_window") == window))
                    if g.height:
                        out.append("\n" + render_macro_board(g, width=width))
                continue
            rows = leaderboard_rows(scores, partition_key=pk, fit_id=head, target=target)
            if rows.height:
                out.append(f"\n{TARGET_LABELS[target]}, terminal nowcast:")
                out.extend(_board(rows, rel))
        if rel:
            out.append("\n" + _rel_err_table(decompositions, pk))
        paired = _paired(decompositions, pk)
        if paired:
            out.append("\n" + paired)
        if pk == "live":
            hz = _horizons(scores, pk, head)
            if hz:
                out.append("\n" + hz)
        rob = _robustness(scores, fits, pk, head)
        if rob:
            out.append("\n" + rob)
        if pk == "live":
            out.append(
                "\nLiveBetting (App. L, Eq. 13): $1 every price hour inside the prediction window (from its"
                " opening to the release) on the bucket of the latest answer that existed by then (recorded"
                " runs: from the next scheduled run; the consensus: from 00:00 ET on the release day)"
            )
            if betting.height:
                out.append("In-window hours (each model's own bets):")
                out.append(_betting_table(betting, "window"))
                common = betting.filter((pl.col("segment") == "total") & (pl.col("hours") == "common"))
                out.append(
                    "\nCommon hours (only the hours on which every compared model of the market bets):"
                )
                out.append(
                    _betting_table(betting, "common") if common.height else "no market has common hours"
                )
            else:
                out.append("no prediction-market prices stored")
        out.append("")
    return "\n".join(out)
