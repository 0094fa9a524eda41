"""The stored event board: the dbt model ``event_board`` (``dbt_project/models/event/event_board.sql``, built
by the dagster-dbt asset ``dbt_event_marts`` after ``event_rankings``), the one table the event track's faces
read (``leaf-live scores --track event``, the run summary, the site's event page; issue 16 item 7).

One row per (domain, task kind, horizon, metric, model): the coverage-robust ranking of
:mod:`leaf_live.event.rankings` (rank, skill score, 90% interval, P(rank 1), n, the common-set view) with
the reference's mean loss, each model's excess loss and its plain metric on its own tasks recomputed in SQL
from ``leaf_scores``; the dbt tests check those reproduce the stored score, effect and n. The printed boards
take these rows as they are (:func:`leaf_live.event.rankings.render_event_boards`).
"""

from __future__ import annotations

import duckdb
import polars as pl

BOARD = "event_board"
KEY = ("domain", "task_kind", "horizon", "metric", "model_id")


def board_present(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether dbt has built :data:`BOARD` in the database of ``con``."""
    return bool(
        con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [BOARD]
        ).fetchall()[0][0]
    )


def read_board(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every row of the stored :data:`BOARD` (columns as in ``dbt_project/models/event/schema.yml``), in key
    order; an empty frame when dbt has not built it."""
    if not board_present(con):
        return pl.DataFrame()
    return pl.from_arrow(con.sql(f"SELECT * FROM {BOARD} ORDER BY {', '.join(KEY)}").to_arrow_table())
