"""``leaf-live scores [--track --scope --horizon --fit]`` on the session's main run (read-only): the boards
are the stored score rows (cross-checked against plain SQL on ``livemacro_scores``), each carries its fit's
name, the default shows one fit per mode (so the obvious query is not one row per fit), and bad flags are one
line."""

from __future__ import annotations

import io

import duckdb
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
    b = board(cli)
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
    every = board(cli, "--fit", "all", "--mode", "live", "--scope", "overall")
    assert sorted(set(every["fit_name"])) == ["full", "no_covid"]
    one = board(
        cli,
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
    rc, text, err = cli("--format", "markdown", "--output", str(out), "--mode", "backtest")
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
        (["--db", str(empty)], "no macro scores stored yet: run `leaf-live run`"),
        (["--db", str(empty), "--track", "event"], "no event-track scores stored yet"),
    ):
        assert main(["scores", *argv]) == 1
        got = capsys.readouterr()
        assert (got.out, got.err) == ("", f"leaf-live scores: {line}\n")
