"""The report step of the main job on the real snapshot (the session's ``leaf-live run``): the figures and the
site exist next to the database and show the stored tables; each figure is attached to its materialization in
the Dagster instance; a real headless browser (Debian's chromium) renders the site from a loopback server and
its leaderboard tables hold the stored scores exactly.

Figure content is read back from matplotlib's artists of the figure redrawn from the database, and the PNG the
run wrote is byte-identical to that redrawing (so the file shows exactly those artists)."""

from __future__ import annotations

import base64
import re

import numpy as np
import polars as pl
import pytest
from browser import dump_dom, read_dom, require_chromium, serve
from conftest import MAIN_RUN_ARGS, ROOT
from dagster import AssetKey, DagsterInstance
from matplotlib.collections import PathCollection
from PIL import Image

from assets.common import table_writers
from assets.reports import FIGURES_DIR, MANIFEST, TABLES_READ, build_figures, read_inputs
from leaf_live.core import storage
from leaf_live.core.figures import save_png
from leaf_live.core.site import site_dir
from leaf_live.definitions import ALL_ASSETS, MAIN_JOB, defs
from leaf_live.event import figures as event_figures
from leaf_live.macro import figures as macro_figures

FIGURES = (
    "macro_score_by_model",
    "macro_score_by_theme",
    "macro_livebetting_cumulative",
    "macro_nowcast_paths",
    "event_accuracy_with_without_events",
    "event_brier_by_cutoff",
    "event_reliability",
)


def test_the_report_step_follows_every_writer_of_what_it_reads_and_runs_in_the_main_job():
    graph = defs.resolve_asset_graph()
    writers = table_writers([a for a in ALL_ASSETS if AssetKey("report_figures") not in a.keys])
    want = {k for t in TABLES_READ for k in writers.get(t, [])} | {
        AssetKey("leaderboard"),
        AssetKey("event_board"),
    }  # the dbt marts it reads
    assert set(graph.get(AssetKey("report_figures")).parent_keys) == want
    assert {AssetKey("livemacro_scores"), AssetKey("livebetting_bets"), AssetKey("recorded_nowcasts")} <= want
    assert set(graph.get(AssetKey("leaderboard_site")).parent_keys) == {AssetKey("report_figures")}
    job = defs.resolve_job_def(MAIN_JOB)
    assert {AssetKey("report_figures"), AssetKey("leaderboard_site")} <= set(
        job.asset_layer.executable_asset_keys
    )
    step = next(a for a in ALL_ASSETS if AssetKey("report_figures") in a.keys)
    assert step.node_def.pool == "duckdb"  # it opens the database: one DuckDB step at a time


@pytest.fixture(scope="module")
def report(main_run) -> dict:
    con = storage.connect_read_only(main_run["db"])
    try:
        inputs = read_inputs(con)
    finally:
        con.close()
    return {"inputs": inputs, "site": site_dir(main_run["db"]), **main_run}


def test_leaf_live_run_writes_the_site_and_every_figure_and_prints_where(report):
    site = report["site"]
    assert (
        f"Leaderboard site (open in a browser; figures in its figures/): {site / 'index.html'}"
        in report["out"]
    )
    for page in ("index.html", "macro.html", "event.html", "site.css", "site.js"):
        assert (site / page).is_file(), page
    for name in FIGURES:
        with Image.open(site / FIGURES_DIR / f"{name}.png") as im:
            assert im.format == "PNG" and im.width >= 600 and im.height >= 200
    manifest = __import__("json").loads((site / FIGURES_DIR / MANIFEST).read_text())
    assert [m["name"] for m in manifest] == list(FIGURES)
    drawn = {m["name"]: m for m in manifest}
    for name in FIGURES[:4]:  # the macro figures draw real rows from the snapshot's store
        assert not drawn[name]["empty"] and drawn[name]["rows_drawn"] > 0, name


def test_the_readme_figure_is_the_runs_figure(report):
    """README shows docs/macro_score_by_model.png: it must be the figure this run writes (same arguments as
    the README's regeneration command), pixel for pixel."""
    readme = (ROOT / "README.md").read_text()
    assert "](docs/macro_score_by_model.png)" in readme and " ".join(MAIN_RUN_ARGS) in readme
    regenerate = (
        "regenerate it: README, 'Leaderboard site and figures' (leaf-live run "
        f"{' '.join(MAIN_RUN_ARGS)}, then copy site/figures/macro_score_by_model.png to docs/)"
    )
    with (
        Image.open(ROOT / "docs" / "macro_score_by_model.png") as doc,
        Image.open(report["site"] / FIGURES_DIR / "macro_score_by_model.png") as run,
    ):
        assert doc.size == run.size, regenerate
        assert np.array_equal(np.asarray(doc.convert("RGB")), np.asarray(run.convert("RGB"))), regenerate


def _redraw(report, name: str):
    stats = event_figures.event_statistics(report["inputs"].scores, n_draws=2000)
    return next(p for p in build_figures(report["inputs"], stats) if p.name == name)


def test_score_by_model_draws_the_stored_live_and_backtest_scores(report, tmp_path):
    board = report["inputs"].board
    plot = _redraw(report, "macro_score_by_model")
    # the PNG the run wrote is this figure
    assert (
        save_png(plot, tmp_path / "f.png").read_bytes()
        == (report["site"] / FIGURES_DIR / f"{plot.name}.png").read_bytes()
    )
    for ax, mode, fit in zip(plot.figure.axes, ("live", "backtest"), ("full", "backtest")):
        rows = board.filter(
            (pl.col("leaderboard") == mode)
            & (pl.col("fit_name") == fit)
            & (pl.col("scope") == "overall")
            & (pl.col("target") == "return")
            & (pl.col("horizon") == "terminal")
        )
        rows = rows.sort(["rank", "score"], descending=[False, True], nulls_last=True)
        compared = rows.filter(pl.col("common_score").is_not_null())
        assert compared.height >= 2 and compared["rank"].to_list() == sorted(compared["rank"].to_list())
        bars = ax.containers[0]
        # compared models: the common-set score, filled; the others: their own-event score, hatched outline
        want = [
            r["common_score"] if r["common_score"] is not None else r["score"]
            for r in rows.iter_rows(named=True)
        ]
        assert [b.get_width() for b in bars] == want
        assert [b.get_fill() and b.get_hatch() is None for b in bars][: compared.height] == [
            True
        ] * compared.height
        assert all(b.get_hatch() == "///" for b in list(bars)[compared.height :])
        labels = [t.get_text().split(" (")[0] for t in ax.get_yticklabels()]
        assert labels == rows["model_id"].to_list()
        whiskers = sorted(
            (float(s[0][0]), float(s[1][0])) for c in ax.containers[1:] for s in c.lines[2][0].get_segments()
        )
        ci = compared.filter(pl.col("common_ci90_lo").is_not_null())
        want_ci = sorted(zip(ci["common_ci90_lo"].to_list(), ci["common_ci90_hi"].to_list()))
        assert (
            len(whiskers) == len(want_ci) > 0
        )  # whisker ends are v -/+ (v - lo, hi - v): equal up to rounding
        assert np.allclose(np.array(whiskers), np.array(want_ci), rtol=0, atol=1e-15)
        assert (
            f"fit '{fit}'" in ax.get_title()
            and f"common event set of {compared['n_events_common'][0]} events" in ax.get_title()
        )
    live = plot.data.filter(pl.col("board") == "live")
    assert {"openai/gpt-5-search-api@single", "consensus/investing", "fed/gdpnow"} <= set(live["model_id"])
    assert live.filter(pl.col("model_id") == "consensus/investing")["value"][0] == 0.0
    assert (
        "beta draws x event resamples" in plot.caption.replace("β", "beta")
        and "common event set" in plot.caption
    )


def test_score_by_theme_has_a_panel_per_theme_with_its_stored_rows(report):
    plot = _redraw(report, "macro_score_by_theme")
    board = report["inputs"].board
    titles = [ax.get_title().split("\n")[0] for ax in plot.figure.axes]
    assert titles == ["Supply and Production", "Demand and Inflation", "Labor Market", "Housing"]
    for ax, theme in zip(plot.figure.axes, macro_figures.THEMES):
        rows = macro_figures.board_rows(board, leaderboard="live", scopes=(theme,))
        assert [b.get_width() for b in ax.containers[0]] == macro_figures.drawn_scores(rows)[
            "value"
        ].to_list()
        # compared on the theme's common set: filled; not compared (fewer shared events than the minimum):
        # hatched
        compared = rows["common_score"].is_not_null().to_list()
        assert [b.get_hatch() is None for b in ax.containers[0]] == compared
        n_common = rows["n_events_common"].drop_nulls()
        assert ax.get_title().split("\n")[1] == (
            f"filled: common event set of {n_common[0]} events, 90% β × events; "
            "hatched: not compared, own events"
            if any(compared)
            else "no common event set: own events, hatched"
        )
        own = board.filter(
            (pl.col("leaderboard") == "live")
            & (pl.col("fit_name") == "full")
            & (pl.col("scope") == theme)
            & (pl.col("target") == "return")
            & (pl.col("horizon") == "terminal")
            & ((pl.col("n_events_own") > 0) | (pl.col("model_id") == "consensus/investing"))
        )
        assert sorted(rows["model_id"]) == sorted(own["model_id"])


def test_livebetting_curves_are_the_stored_cumulative_returns(report):
    plot = _redraw(report, "macro_livebetting_cumulative")
    bets = report["inputs"].bets
    n_lines = 0
    for ax in plot.figure.axes:
        market = re.search(r"\(([^)]+)\); winning", ax.get_title()).group(1)
        for ln in ax.lines:
            model = ln.get_label()
            if model.startswith("_"):
                continue  # the release and zero lines
            b = bets.filter(
                (pl.col("market_id") == market)
                & (pl.col("model_id") == model)
                & pl.col("cum_return").is_not_null()
            ).sort("bet_at")
            assert np.allclose(ln.get_ydata(), 100 * b["cum_return"].to_numpy(), rtol=0, atol=1e-12)
            n_lines += 1
    assert n_lines == plot.data.height and {"gdp-q1-2026", "cpi-mar", "unemp-mar"} <= set(
        plot.data["market_id"]
    )


def test_nowcast_paths_mark_the_released_values_of_the_paper(report):
    plot = _redraw(report, "macro_nowcast_paths")
    nc = report["inputs"].nowcasts
    model = "openai/gpt-5-search-api@single"
    assert plot.data["model_id"].unique().to_list() == [model]
    # LiveMacroEval Fig. 7: March 2026 CPI released at 3.3%, unemployment 4.3%, 2026Q1 GDP advance 2.0%
    released = {"cpi": 3.3, "unemployment_rate": 4.3, "real_gdp_advance": 2.0}
    for ax, (ind, period) in zip(plot.figure.axes, macro_figures.PATH_TARGETS):
        hlines = {
            ln.get_label(): ln.get_ydata()[0]
            for ln in ax.lines
            if ln.get_label().startswith(("released", "consensus"))
        }
        assert hlines[f"released {released[ind]:g}"] == pytest.approx(released[ind])
        points = [c for c in ax.collections if isinstance(c, PathCollection)]
        n_drawn = sum(len(c.get_offsets()) for c in points)
        r = plot.data.filter(pl.col("indicator_id") == ind).row(0, named=True)
        want = nc.filter(
            (pl.col("model_id") == model)
            & (pl.col("indicator_id") == ind)
            & (pl.col("reference_period") == period)
            & (pl.col("issued_at") <= r["release_at"] + __import__("datetime").timedelta(days=5))
        )
        assert n_drawn == want.height == r["n_pre"] + r["n_post"] and r["n_pre"] > 100
        ys = np.sort(np.concatenate([np.asarray(c.get_offsets())[:, 1] for c in points]))
        assert np.array_equal(ys, np.sort(want["value"].to_numpy()))
        assert any(
            ln.get_label() == "GCV smoothing spline (App. E)" for ln in ax.lines
        )  # the stored App. E spline


def test_each_figure_is_attached_to_its_materialization(report):
    inst = DagsterInstance.from_config(str(report["dagster_home"]))
    try:
        ev = inst.get_latest_materialization_event(AssetKey("report_figures"))
        meta = ev.asset_materialization.metadata
        for name in FIGURES:
            png = report["site"] / FIGURES_DIR / f"{name}.png"
            assert meta[f"{name} file"].value == str(png)
            md = meta[name].value
            b64 = re.search(r"!\[[^\]]*\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", md).group(1)
            assert base64.b64decode(b64) == png.read_bytes()
        site = inst.get_latest_materialization_event(
            AssetKey("leaderboard_site")
        ).asset_materialization.metadata
        assert site["index"].value == str(report["site"] / "index.html")
        assert site["table rows"].value["macro-live-return"] > 0
    finally:
        inst.dispose()


def _live_board(board: pl.DataFrame, target: str = "return") -> pl.DataFrame:
    return macro_figures.board_rows(
        board, leaderboard="live", scopes=("overall", *macro_figures.THEMES), target=target
    )


def _same(cell_value: str, stored) -> bool:
    if stored is None:
        return cell_value == ""
    if isinstance(stored, float):
        return float(cell_value) == stored
    return cell_value == str(stored)


def test_a_headless_browser_shows_the_stored_scores(report):
    chromium = require_chromium()
    board = report["inputs"].board
    with serve(report["site"]) as server:
        macro = read_dom(dump_dom(chromium, server.url + "/macro.html"))
        backtest = read_dom(dump_dom(chromium, server.url + "/macro.html#backtest"))
        index = read_dom(dump_dom(chromium, server.url + "/index.html"))
        event_html = dump_dom(chromium, server.url + "/event.html")
        event = read_dom(event_html)
        requested = set(server.requests)
    # the tab script ran: one panel visible, chosen by the fragment
    assert macro.body.get("data-tabs") == "ready" and macro.body.get("data-active-tab") == "live"
    assert "hidden" not in macro.sections["live"] and all(
        "hidden" in s for k, s in macro.sections.items() if k != "live"
    )
    assert backtest.body.get("data-active-tab") == "backtest" and "hidden" in backtest.sections["live"]
    assert any(k.startswith("m-2026-") for k in macro.sections)  # a tab per live release month
    # the live board on the page = the stored rows, value for value, in the board's order
    for target in ("return", "shock"):
        rows = macro.rows(f"macro-live-{target}")
        stored = _live_board(board, target).to_dicts()
        assert len(rows) == len(stored) > 10
        for got, want in zip(rows, stored):
            for col in (
                "rank",
                "model_id",
                "scope",
                "common_score",
                "common_ci90_lo",
                "common_ci90_hi",
                "n_events_common",
                "n_events_own",
                "n_events",
                "score",
                "combined_ci90_lo",
                "combined_ci90_hi",
                "boot_ci90_lo",
                "boot_ci90_hi",
                "p_le_zero",
                "lmd",
                "n_releases",
            ):
                assert _same(got[col].value, want[col]), (target, want["model_id"], want["scope"], col)
            assert got["score"].text == format(want["score"], "+.4f")
    gpt5 = next(
        r
        for r in macro.rows("macro-live-return")
        if r["model_id"].value == "openai/gpt-5-search-api@single" and r["scope"].value == "overall"
    )
    assert int(gpt5["n_events_own"].value) > 0 and gpt5["boot_ci90_lo"].text.startswith(("-", "+"))
    # LiveBetting, every window hour and the common hours: the stored totals
    for hours in ("window", "common"):
        stored = report["inputs"].betting.filter((pl.col("segment") == "total") & (pl.col("hours") == hours))
        got = {
            (r["market_id"].value, r["model_id"].value): r for r in macro.rows(f"macro-live-betting-{hours}")
        }
        assert len(got) == stored.height > 0
        for r in stored.iter_rows(named=True):
            cell = got[(r["market_id"], r["model_id"])]
            assert (
                _same(cell["final_return"].value, r["final_return"])
                and int(cell["n_bets"].value) == r["n_bets"]
            )
    # the overview repeats the live overall rows
    overall = _live_board(board).filter(pl.col("scope") == "overall")
    assert [r["model_id"].value for r in index.rows("index-macro-live")] == overall["model_id"].to_list()
    assert [float(r["score"].value) for r in index.rows("index-macro-live")] == overall["score"].to_list()
    # the browser loaded the page's own figures and files, nothing else exists to load
    for name in FIGURES[:4]:
        assert f"/{FIGURES_DIR}/{name}.png" in requested
    assert {"/macro.html", "/site.css", "/site.js"} <= requested
    assert all(not re.match(r"(https?:)?//", u) for u in macro.images + macro.links + event.links)
    # the event page: the stored event scores' board, or the statement that none is stored
    scores = report["inputs"].scores
    if scores.height == 0:
        assert list(event.tables) == [] and "No event-track scores are stored yet" in event_html
    else:
        stored = report["inputs"].rankings  # the stored event_rankings (issue 16), not a recomputation
        rows = event.rows("event-board")
        assert len(rows) == stored.height > 0
        want = {
            (r["domain"], r["task_kind"], r["horizon"], r["metric"], r["model_id"]): r
            for r in stored.iter_rows(named=True)
        }
        for r in rows:
            w = want[tuple(r[c].value for c in ("domain", "task_kind", "horizon", "metric", "model_id"))]
            assert int(r["n_tasks"].value) == w["n_tasks"]
            assert (r["score"].value == "" and w["score"] is None) or float(r["score"].value) == w["score"]
