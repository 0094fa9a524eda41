"""``leaf-live scores [--track --scope --horizon --fit]`` on the session's main run (read-only): the per-model
rows (``--board common``) are the stored score rows (cross-checked against plain SQL on ``livemacro_scores``),
each carries its fit's name, the default shows one fit per mode (so the obvious query is not one row per fit),
and bad flags are one line. The stored ranked board (the default ``--board livemacro``) is tested in
tests/assets/test_macro_board.py."""

from __future__ import annotations

import io

import duckdb
import numpy as np
import polars as pl
import pytest

from leaf_live.cli import main
from leaf_live.core import storage

GPT5 = "openai/gpt-5-search-api@single"


@pytest.fixture()
def cli(main_run, capsys):
    def run(*argv):
        rc = main(["scores", "--db", str(main_run["db"]), *argv])
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def board(cli, *argv) -> pl.DataFrame:
    rc, out, err = cli("--format", "csv", *argv)
    assert (rc, err) == (0, ""), err
    return pl.read_csv(io.StringIO(out), infer_schema_length=None)


def sql(main_run, query: str, params=None) -> pl.DataFrame:
    con = duckdb.connect(str(main_run["db"]), read_only=True)
    try:
        return pl.from_arrow(con.sql(query, params=params).to_arrow_table())
    finally:
        con.close()


def test_every_score_table_carries_the_fit_name(main_run):
    con = storage.connect_read_only(main_run["db"])
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        with_fit = [
            t.name for t in storage.TABLES.values() if "fit_id" in t.column_names and t.name in present
        ]
        assert {"livemacro_scores", "score_decompositions", "market_beta_fits"} <= set(with_fit)
        for name in with_fit:
            if name == "market_betas":  # the fit's coefficients; market_beta_fits names each fit_id
                continue
            assert "fit_name" in storage.get_table(name).column_names, name
            n, named = con.execute(
                "SELECT count(*) FILTER (WHERE fit_id IS NOT NULL), "
                f"count(*) FILTER (WHERE fit_id IS NOT NULL AND fit_name IS NOT NULL) FROM {name}"
            ).fetchall()[0]
            assert n > 0 and named == n, name
    finally:
        con.close()


def test_the_default_board_is_one_fit_per_mode_and_holds_the_stored_scores(main_run, cli):
    b = board(cli, "--board", "common")
    assert b.columns[:6] == ["mode", "fit_name", "horizon", "target", "model_id", "scope"]
    assert b["fit_name"].null_count() == 0
    # the headline fit of each mode (the fit its Shapley decompositions use): one fit per mode, terminal
    # horizon
    assert sorted(b.select("mode", "fit_name").unique().rows()) == [
        ("backtest", "backtest"),
        ("live", "full"),
    ]
    assert set(b["horizon"]) == {"terminal"} and set(b["target"]) == {"return", "shock"}
    # the live window has two fits: the obvious SQL returns one row per fit, the board one row per model
    live_sql = sql(
        main_run,
        "SELECT model_id, fit_name, score FROM livemacro_scores WHERE partition_key = 'live' AND "
        "horizon = 'terminal' AND target = 'return' AND scope = 'overall' AND n_events_own > 0",
    )
    assert sorted(set(live_sql["fit_name"])) == ["full", "no_covid"]
    live = b.filter(
        (pl.col("mode") == "live") & (pl.col("target") == "return") & (pl.col("scope") == "overall")
    )
    assert live.height == live_sql.height // 2 and live["model_id"].n_unique() == live.height
    want = dict(live_sql.filter(pl.col("fit_name") == "full").select("model_id", "score").rows())
    assert dict(live.select("model_id", "score").rows()) == pytest.approx(want, rel=0, abs=1e-15)
    assert GPT5 in want
    # ranked on the common event set: rank 1, 2, ... with the common score falling
    ranked = live.filter(pl.col("common_rank").is_not_null()).sort("common_rank")
    assert ranked["common_rank"].to_list() == list(range(1, ranked.height + 1)) and ranked.height >= 2
    assert ranked["common_score"].to_list() == sorted(ranked["common_score"].to_list(), reverse=True)
    assert set(ranked["n_events_common"]) == {ranked["n_events_common"][0]}  # one common event set per board


def test_flags_select_boards(main_run, cli):
    every = board(cli, "--board", "common", "--fit", "all", "--mode", "live", "--scope", "overall")
    assert sorted(set(every["fit_name"])) == ["full", "no_covid"]
    one = board(
        cli,
        "--board",
        "common",
        "--fit",
        "no_covid",
        "--horizon",
        "median_1d",
        "--scope",
        "labor_market",
        "--target",
        "shock",
        "--model",
        GPT5,
    )
    assert one.height == 1
    row = one.row(0, named=True)
    assert (row["mode"], row["fit_name"], row["horizon"], row["scope"], row["target"]) == (
        "live",
        "no_covid",
        "median_1d",
        "labor_market",
        "shock",
    )
    want = sql(
        main_run,
        "SELECT score, n_events_own FROM livemacro_scores WHERE model_id = ? AND fit_name = 'no_covid' "
        "AND horizon = 'median_1d' AND scope = 'labor_market' AND target = 'shock'",
        [GPT5],
    )
    assert want.height == 1
    assert (row["score"], row["n_events_own"]) == (
        pytest.approx(want["score"][0], abs=1e-15),
        want["n_events_own"][0],
    )
    bet = board(cli, "--board", "betting")
    total = sql(main_run, "SELECT count(*) AS n FROM livebetting_scores WHERE segment = 'total'")["n"][0]
    assert bet.height == total > 0 and set(bet["hours"]) == {"window", "common"}


def test_markdown_to_a_file_says_how_many_rows(main_run, cli, tmp_path):
    out = tmp_path / "board.md"
    rc, text, err = cli(
        "--board", "common", "--format", "markdown", "--output", str(out), "--mode", "backtest"
    )
    n = sql(
        main_run,
        "SELECT count(*) AS n FROM livemacro_scores WHERE partition_key = 'backtest' AND "
        "horizon = 'terminal' AND n_events_own > 0",
    )["n"][0]
    assert (rc, err, text) == (0, "", f"{n} rows -> {out}\n")
    lines = out.read_text().splitlines()
    assert lines[-1] == f"({n} rows)" and len([x for x in lines if x.startswith("| backtest ")]) == n


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--fit", "nope"],
            "--fit nope: not on the stored boards; stored: backtest, full, no_covid (or all)",
        ),
        (
            ["--horizon", "2d"],
            "--horizon 2d: not on the stored boards; stored: median_1d, median_3d, median_7d, terminal",
        ),
        (
            ["--scope", "weather"],
            (
                "--scope weather: not on the stored boards; stored: demand_inflation, housing, "
                "labor_market, overall, supply_production"
            ),
        ),
        (["--metric", "brier"], "--metric applies to the event track only"),
        (["--track", "event", "--fit", "full"], "--fit applies to the macro track only"),
        (["--board", "betting", "--scope", "overall"], "--scope does not apply to --board betting"),
        (["--format", "parquet"], "--format parquet writes a file: give --output FILE"),
    ],
)
def test_bad_flags_are_one_line(cli, argv, line):
    rc, out, err = cli(*argv)
    assert (rc, out, err) == (1, "", f"leaf-live scores: {line}\n")


def test_unknown_model_and_empty_store_are_one_line(cli, tmp_path, capsys):
    rc, out, err = cli("--model", "external/nobody")
    assert (
        rc == 1
        and out == ""
        and err.startswith(
            "leaf-live scores: --model external/nobody: no score on these boards (scored models: "
        )
        and err.count("\n") == 1
    )
    empty = tmp_path / "empty.duckdb"
    storage.connect(empty).close()
    for argv, line in (
        (["--db", str(empty)], "no macro board stored yet: run `leaf-live run`"),
        (["--db", str(empty), "--track", "event"], "no event-track scores stored yet"),
    ):
        assert main(["scores", *argv]) == 1
        got = capsys.readouterr()
        assert (got.out, got.err) == ("", f"leaf-live scores: {line}\n")


# ------------------------------------------------------------------------------------------------
# the event track (issue 16): the stored event_rankings, and a partial submission on a copy of the run
# ------------------------------------------------------------------------------------------------

COLS = "f.task_id, strftime(f.issued_at, '%Y-%m-%dT%H:%M:%SZ') AS issued_at"
FROM = "FROM leaf_forecasts f JOIN forecast_tasks t USING (task_id) WHERE f.valid AND "
PARTIAL = f"""
SELECT * FROM (SELECT {COLS}, NULL AS point, NULL AS quantiles, f.predicted_class, NULL AS probability,
  f.bundle_hash {FROM}
  f.model_id = 'baseline/hist-mean' AND t.domain = 'large_cap' AND t.task_kind = 'trend3' AND t.horizon = '1d'
  AND t.partition_key < '2026-03-01' ORDER BY f.task_id LIMIT 40)
UNION ALL
SELECT * FROM (SELECT {COLS}, CAST(f.point AS VARCHAR), f.quantiles, NULL, NULL, f.bundle_hash {FROM}
  f.model_id = 'baseline/hist-mean' AND t.domain = 'large_cap' AND t.task_kind = 'series' AND t.horizon = '3d'
  AND t.partition_key < '2026-03-01' ORDER BY f.task_id LIMIT 40)
UNION ALL
SELECT * FROM (SELECT {COLS}, NULL, NULL, NULL, f.probability * 0.9, f.bundle_hash {FROM}
  f.model_id = 'market/polymarket' AND t.horizon = '10%' ORDER BY f.task_id LIMIT 40)
"""


def test_event_boards_are_the_stored_rankings_and_a_partial_submission_moves_no_one(
    main_run, tmp_path, monkeypatch, capsys
):
    """``leaf-live scores --track event`` prints the stored event_board (event_rankings' rows, dbt); on a copy
    of the run, a 120-row partial event submission (``leaf-live submit``, rescored through Dagster) leaves
    every other model's score, interval and n on every board as it was, and appears only in its own rows."""
    import shutil

    db = shutil.copy(main_run["db"], tmp_path / "copy.duckdb")
    monkeypatch.setenv("DAGSTER_HOME", str(shutil.copytree(main_run["dagster_home"], tmp_path / "home")))

    def run(*argv):
        rc = main(list(argv))
        got = capsys.readouterr()
        assert rc == 0, got.err
        return got.out

    def rows() -> pl.DataFrame:
        return pl.read_csv(
            io.StringIO(run("scores", "--db", str(db), "--track", "event", "--format", "csv")),
            infer_schema_length=None,
        )

    before = rows()
    stored = sql(main_run, "SELECT * FROM event_rankings")
    assert before.height == stored.height > 0
    text = run("scores", "--db", str(db), "--track", "event")
    assert text.startswith("Event track headline") and "P(rank 1)" in text
    csv = tmp_path / "partial.csv"
    run("sql", PARTIAL, "--db", str(db), "--format", "csv", "--output", str(csv))
    assert pl.read_csv(csv).height == 120
    out = run("submit", str(csv), "--track", "event", "--model", "external/drift", "--db", str(db))
    assert "rescored the event track" in out
    after = rows()
    keys = ["domain", "task_kind", "horizon", "metric", "model_id"]
    cols = [*keys, "n_tasks", "score", "ci90_lo", "ci90_hi", "own_value"]
    new = after.filter(pl.col("model_id").str.starts_with("external/drift"))
    assert new.height > 0 and set(new["model_id"]) == {"external/drift@retrospective"}
    old = after.filter(~pl.col("model_id").str.starts_with("external/drift"))
    assert same_rows(old, before, keys, ["n_tasks"], cols[len(keys) + 1 :])
    b = after.filter(
        pl.col("domain") == "large_cap", pl.col("task_kind") == "trend3", pl.col("horizon") == "1d"
    )
    assert dict(zip(b["model_id"], b["n_tasks"]))["external/drift@retrospective"] == 40
    assert {n for m, n in zip(b["model_id"], b["n_tasks"]) if not m.startswith("external/")} == {1050}
    # the site (rebuilt by the rescore job) shows the same rows for everyone else, and the new model's own
    from browser import read_dom

    from leaf_live.core.site import site_dir

    dom = read_dom((site_dir(db) / "event.html").read_text())
    site = pl.DataFrame(
        [
            {
                **{k: c[k].value for k in keys},
                "n_tasks": int(c["n_tasks"].value),
                "score": float(c["score"].value) if c["score"].value else float("nan"),
            }
            for c in dom.rows("event-board")
        ]
    )
    mine = pl.col("model_id").str.starts_with("external/drift")
    # everyone else's rows on the rebuilt site are the stored rows from before the submission
    assert same_rows(
        site.filter(~mine), before.select(*keys, "n_tasks", "score"), keys, ["n_tasks"], ["score"]
    )
    assert site.filter(mine).height == new.height


def same_rows(a: pl.DataFrame, b: pl.DataFrame, keys: list[str], exact: list[str], floats: list[str]) -> bool:
    """``a`` and ``b`` hold the same keys, equal ``exact`` columns and ``floats`` equal to 1e-12 (relative):
    adding a model to a panel can move the last bit of a bootstrap percentile (the matrix products' column
    order), never more."""
    a, b = a.sort(keys), b.sort(keys)
    if a.select(keys + exact).rows() != b.select(keys + exact).rows():
        return False
    for c in floats:
        x, y = a[c].to_numpy().astype(float), b[c].to_numpy().astype(float)
        if not np.allclose(x, y, rtol=1e-12, atol=1e-15, equal_nan=True):
            return False
    return True
