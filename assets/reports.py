"""Report figures and the static leaderboard site, the last stage of the main job.

Wiring only: both assets read the stored tables and the dbt marts ``leaderboard`` and ``event_board`` (the
event track's board) through the ``db`` resource and hand frames to the science
(:mod:`leaf_live.macro.figures`, :mod:`leaf_live.event.figures`, :mod:`leaf_live.macro.site`,
:mod:`leaf_live.event.site`, :mod:`leaf_live.core.site`).

* ``report_figures`` writes the PNG figures to ``site/figures/`` next to the DuckDB file, plus a manifest
  (``figures.json``: name, title, caption, rows drawn), and attaches each figure to its materialization: the
  image inline (Markdown with a ``data:image/png;base64`` URI, which the Dagster UI renders: its Markdown
  sanitizer admits ``data:`` image sources) and its file path.
* ``leaderboard_site`` writes ``site/index.html``, ``macro.html``, ``event.html`` (tabs per board and per
month),
  ``site.css`` and ``site.js`` with the figures embedded, and records the index path and the rows of each
  table.

One op materializes both (the event bootstrap statistics they share are computed once); it is built by
:func:`build_report_assets` from the assets it follows: it depends on every asset that writes a table it reads
(:func:`assets.common.table_writers`) and on the dbt marts, so a sensor or a backfill that refreshes scores
refreshes the figures and the site after them.
"""

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from pydantic import Field

from assets.common import DUCKDB_POOL, table_writers
from leaf_live.core import storage
from leaf_live.core.figures import Plot, new_figure, note, png_base64, save_png
from leaf_live.core.site import FigureBlock, Page, Tab, TableBlock, TextBlock, render_site, site_dir
from leaf_live.event import figures as event_figures
from leaf_live.event.board import read_board
from leaf_live.event.site import event_page
from leaf_live.macro import figures as macro_figures
from leaf_live.macro.figures import PATH_TARGETS, board_rows
from leaf_live.macro.site import macro_page, score_columns
from resources import LeafLiveDB

GROUP = "reports"
FIGURES_DIR = "figures"
MANIFEST = "figures.json"
SITE_TITLE = "leaf_live"
LEADERBOARD_MART = AssetKey("leaderboard")  # dbt model dbt_project/models/marts/leaderboard.sql
EVENT_BOARD_MART = AssetKey("event_board")  # dbt model dbt_project/models/event/event_board.sql
# Tables the report stages read (besides the marts): their writers are the stages' upstream assets.
TABLES_READ = (
    "releases",
    "nowcasts",
    "livemacro_scores",
    "score_decompositions",
    "relative_errors",
    "livebetting_scores",
    "livebetting_bets",
    "post_release_paths",
    "market_beta_fits",
    "forecast_tasks",
    "task_outcomes",
    "leaf_forecasts",
    "leaf_scores",
)


class ReportConfig(Config):
    boot_draws: int = Field(
        default=2000,
        ge=1,
        description=(
            "bootstrap draws of the event-track intervals on the "
            "figures and the site (95% over tasks / questions; seed 0 like the printed event board)"
        ),
    )
    month_tabs: int = Field(
        default=24,
        ge=0,
        description="most recent cutoff months the event page gets a tab for (0 = every month)",
    )


@dataclass
class ReportInputs:
    """The frames the figures and pages are drawn from (empty frames for tables or the mart not present)."""

    board: pl.DataFrame
    decompositions: pl.DataFrame
    betting: pl.DataFrame
    bets: pl.DataFrame
    releases: pl.DataFrame
    nowcasts: pl.DataFrame
    paths: pl.DataFrame
    rel_errors: pl.DataFrame
    scores: pl.DataFrame
    forecasts: pl.DataFrame
    outcomes: pl.DataFrame
    tasks: pl.DataFrame
    rankings: pl.DataFrame  # event_board (dbt): the stored event boards (issue 16)


def read_inputs(con) -> ReportInputs:
    """Read every input of the report stages: the ``leaderboard`` and ``event_board`` marts (empty when dbt
    has not built them), the macro score tables, the nowcasts of the Fig. 5 / 7 targets and the event scores,
    probability forecasts and their outcomes, and the tasks' cutoffs."""
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    board = (
        pl.from_arrow(con.sql("SELECT * FROM leaderboard").to_arrow_table())
        if "leaderboard" in present
        else pl.DataFrame()
    )
    targets = " OR ".join(
        f"(indicator_id = '{i}' AND reference_period = DATE '{p.isoformat()}')" for i, p in PATH_TARGETS
    )
    return ReportInputs(
        board=board,
        decompositions=storage.read_table(con, "score_decompositions", "decomposition = 'event_coverage'"),
        betting=storage.read_table(con, "livebetting_scores"),
        bets=storage.read_table(con, "livebetting_bets"),
        releases=storage.read_table(con, "releases"),
        nowcasts=storage.read_table(con, "nowcasts", f"valid AND ({targets})"),
        paths=storage.read_table(con, "post_release_paths", targets),
        rel_errors=storage.read_table(con, "relative_errors"),
        scores=storage.read_table(con, "leaf_scores"),
        forecasts=storage.read_table(con, "leaf_forecasts", "probability IS NOT NULL"),
        outcomes=storage.read_table(con, "task_outcomes", "outcome IS NOT NULL"),
        tasks=pl.from_arrow(con.sql("SELECT task_id, domain, cutoff FROM forecast_tasks").to_arrow_table()),
        rankings=read_board(con),
    )


def build_figures(x: ReportInputs, stats: event_figures.EventStats) -> list[Plot]:
    """Every report figure, in the order the site shows them."""
    return [
        (
            macro_figures.score_by_model(x.board)
            if x.board.height
            else _missing("macro_score_by_model", "leaderboard mart")
        ),
        (
            macro_figures.score_by_theme(x.board)
            if x.board.height
            else _missing("macro_score_by_theme", "leaderboard mart")
        ),
        macro_figures.livebetting_cumulative(x.bets, x.betting),
        macro_figures.nowcast_paths(x.nowcasts, x.releases, x.paths),
        event_figures.accuracy_with_without_events(stats),
        event_figures.brier_by_cutoff(stats),
        event_figures.reliability(x.forecasts, x.outcomes),
    ]


def _missing(name: str, what: str) -> Plot:
    fig, axes = new_figure(6, 2)
    note(axes[0, 0], f"nothing to draw: the {what} is not built")
    return Plot(name, name, f"The {what} is not built.", fig, pl.DataFrame(), empty=True)


def _figure_markdown(plot: Plot, path: Path) -> str:
    return f"**{plot.title}**\n\n![{plot.title}](data:image/png;base64,{png_base64(path)})\n\n{plot.caption}"


def _span(frame: pl.DataFrame, col: str) -> str:
    if frame.height == 0 or frame[col].min() is None:
        return "none stored"
    return f"{frame[col].min():%Y-%m-%d} .. {frame[col].max():%Y-%m-%d}"


def index_page(x: ReportInputs, figures: dict[str, FigureBlock], db_path: str) -> Page:
    """The overview: where each board is, the live window's overall LiveMacro Score and the event questions'
    Brier figure."""
    live = board_rows(x.board, leaderboard="live") if x.board.height else pl.DataFrame()
    blocks: list = [
        TextBlock(
            [],
            links=[
                (
                    "macro.html",
                    (
                        "Macro nowcasting (LiveMacroEval): the live-window and historical-backtest boards,"
                        " one tab per release month"
                    ),
                ),
                (
                    "event.html",
                    (
                        "Event-augmented forecasting (LEAF): the board over every stored task, the event"
                        " questions by cutoff, one tab per cutoff month"
                    ),
                ),
            ],
        )
    ]
    if live.height:
        cols = [c for c in score_columns() if c.key != "scope"]
        blocks.append(
            TableBlock(
                "index-macro-live",
                "Live window: LiveMacro Score, overall",
                cols,
                live.to_dicts(),
                "Terminal nowcast, full-sample β, rank on the common event set; see macro.html for "
                "the themes, the other targets and the backtest.",
                key=("model_id", "scope"),
            )
        )
    blocks += [figures[n] for n in ("macro_score_by_model", "event_brier_by_cutoff") if n in figures]
    return Page(
        "index",
        "Leaderboards",
        [Tab("overview", "Overview", blocks)],
        facts={
            "database": db_path,
            "releases": _span(x.releases, "release_at"),
            "event task cutoffs": _span(x.tasks, "cutoff"),
        },
    )


def build_report_assets(upstream: Sequence[AssetsDefinition]) -> list[AssetsDefinition]:
    """The report step: one op materializing ``report_figures`` and then ``leaderboard_site`` (the event
    statistics both show are computed once), downstream of the assets in ``upstream`` that write a table of
    :data:`TABLES_READ` and of the ``leaderboard`` and ``event_board`` marts."""
    writers = table_writers(upstream)
    deps = sorted({k for t in TABLES_READ for k in writers.get(t, [])}, key=lambda k: k.to_user_string())
    deps += [LEADERBOARD_MART, EVENT_BOARD_MART]

    @multi_asset(
        pool=DUCKDB_POOL,
        name="reports",
        group_name=GROUP,
        specs=[
            AssetSpec(
                "report_figures",
                deps=deps,
                kinds={"matplotlib"},
                description=(
                    "PNG figures from the stored tables (LiveMacroEval Fig. 2, 3, 4, 5/7; LEAF trend accuracy"
                    " with and without events, Brier by cutoff (Fig. 3), reliability), written to"
                    " site/figures/ next to the database and shown inline in the materialization's metadata."
                ),
            ),
            AssetSpec(
                "leaderboard_site",
                deps=["report_figures"],
                kinds={"html"},
                description=(
                    "Static leaderboard site (index.html, macro.html, event.html with tabs per board and"
                    " month; plain HTML/CSS and a little JavaScript, no CDN) next to the database, every"
                    " number a stored value."
                ),
            ),
        ],
    )
    def reports(
        context: AssetExecutionContext, config: ReportConfig, db: LeafLiveDB
    ) -> Iterator[MaterializeResult]:
        t0 = time.monotonic()
        out = site_dir(db.database)
        with db.get_connection() as con:
            inputs = read_inputs(con)
        stats = event_figures.event_statistics(inputs.scores, n_draws=config.boot_draws)
        t_read = time.monotonic()
        meta: dict = {}
        figures: dict[str, FigureBlock] = {}
        manifest = []
        for plot in build_figures(inputs, stats):
            path = save_png(plot, out / FIGURES_DIR / f"{plot.name}.png")
            meta[plot.name] = MetadataValue.md(_figure_markdown(plot, path))
            meta[f"{plot.name} file"] = MetadataValue.path(str(path))
            figures[plot.name] = FigureBlock(f"{FIGURES_DIR}/{path.name}", plot.title, plot.caption)
            manifest.append(
                {
                    "name": plot.name,
                    "file": f"{FIGURES_DIR}/{path.name}",
                    "title": plot.title,
                    "caption": plot.caption,
                    "empty": plot.empty,
                    "rows_drawn": plot.data.height,
                }
            )
        (out / FIGURES_DIR / MANIFEST).write_text(json.dumps(manifest, indent=1))
        t_fig = time.monotonic()
        meta["figures"] = MetadataValue.json(manifest)
        meta["seconds"] = round(t_fig - t_read, 2)
        yield MaterializeResult(asset_key="report_figures", metadata=meta)

        macro = macro_page(
            inputs.board,
            inputs.decompositions,
            inputs.betting,
            inputs.releases,
            inputs.rel_errors,
            figures,
            facts={"releases": _span(inputs.releases, "release_at")},
        )
        event = event_page(
            inputs.scores,
            inputs.tasks,
            stats,
            figures,
            month_limit=config.month_tabs or None,
            facts={"task cutoffs": _span(inputs.tasks, "cutoff")},
            rankings=inputs.rankings,
        )
        index = index_page(inputs, figures, str(Path(db.database).resolve()))
        written = render_site(
            out, [macro, event], index, site_title=SITE_TITLE, generated_at=datetime.now(UTC)
        )
        tables = {
            b.id: len(b.rows)
            for p in (index, macro, event)
            for t in p.tabs
            for b in t.blocks
            if isinstance(b, TableBlock)
        }
        context.log.info(
            f"reports: inputs and event statistics {t_read - t0:.1f} s, figures {t_fig - t_read:.1f} s, "
            f"site {time.monotonic() - t_fig:.1f} s -> {out / 'index.html'}"
        )
        yield MaterializeResult(
            asset_key="leaderboard_site",
            metadata={
                "index": MetadataValue.path(str(out / "index.html")),
                "url": MetadataValue.url((out / "index.html").as_uri()),
                "pages": MetadataValue.json([p.name for p in written]),
                "tabs": MetadataValue.json({p.slug: [t.id for t in p.tabs] for p in (index, macro, event)}),
                "table rows": MetadataValue.json(tables),
                "seconds": MetadataValue.json(
                    {
                        "inputs and event statistics": round(t_read - t0, 2),
                        "figures": round(t_fig - t_read, 2),
                        "site": round(time.monotonic() - t_fig, 2),
                    }
                ),
            },
        )

    return [reports]
