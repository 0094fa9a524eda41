"""The macro board on the real snapshot (session main run): per-event losses reproduce every stored score in
SQL (own events and the greedy common set), the coverage-robust ranking agrees with each model's own-event
evidence (a model whose own-event interval lies below the consensus is never ranked above it), its effects
equal an independent SQL / statsmodels computation on the same rows, a small new forecaster moves no one, and
the stored board (dbt mart macro_board) is what `leaf-live scores` prints."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from leaf_live.cli import main
from leaf_live.core import storage
from leaf_live.macro.scoring import board as MB


@pytest.fixture(scope="module")
def con(main_run):
    c = storage.connect_read_only(main_run["db"])
    yield c
    c.close()


def q(con, sql: str, params=None) -> pl.DataFrame:
    return pl.from_arrow(con.sql(sql, params=params).to_arrow_table())


KEYS = "partition_key, model_id, fit_id, horizon, scope, target"


def test_event_losses_reproduce_every_stored_own_event_score_in_sql(con):
    d = q(
        con,
        f"""
        WITH l AS (
            SELECT {KEYS}, count(*) AS n, sum(weight * loss_consensus) AS c, sum(weight * loss) AS m
            FROM livemacro_event_losses GROUP BY ALL
        )
        SELECT s.score, s.ss_cons, s.ss_model, s.n_events_own, l.n, (l.c - l.m) / (l.c + l.m) AS sql_score,
               l.c, l.m
        FROM livemacro_scores s JOIN l USING ({KEYS})
        """,
    )
    n_scored = q(con, "SELECT count(*) AS n FROM livemacro_scores WHERE score IS NOT NULL")["n"][0]
    assert d.height == n_scored > 100  # every stored score has its losses
    assert (d["n"] == d["n_events_own"]).all()
    assert float((d["score"] - d["sql_score"]).abs().max()) < 1e-12
    assert float(((d["ss_cons"] - d["c"]).abs() / d["c"]).max()) < 1e-12
    # the consensus's loss is the consensus's own loss: its score is exactly 0
    z = q(
        con,
        "SELECT max(abs(loss - loss_consensus)) AS d FROM livemacro_event_losses"
        " WHERE model_id LIKE 'consensus/%'",
    )
    assert z["d"][0] == 0.0


def test_event_losses_reproduce_the_common_set_scores_in_sql(con):
    d = q(
        con,
        f"""
        WITH cmp AS (
            SELECT {KEYS}, n_models_common, n_events_common, common_score
            FROM livemacro_scores WHERE n_events_common IS NOT NULL
        ),
        ev AS (
            SELECT l.partition_key, l.fit_id, l.horizon, l.scope, l.target, l.event_at
            FROM livemacro_event_losses l JOIN cmp USING ({KEYS})
            GROUP BY ALL HAVING count(*) = max(cmp.n_models_common)
        ),
        sc AS (
            SELECT l.partition_key, l.model_id, l.fit_id, l.horizon, l.scope, l.target, count(*) AS n,
                   (sum(l.loss_consensus) - sum(l.loss)) / (sum(l.loss_consensus) + sum(l.loss)) AS s
            FROM livemacro_event_losses l
            JOIN ev USING (partition_key, fit_id, horizon, scope, target, event_at)
            GROUP BY ALL
        )
        SELECT cmp.*, sc.n, sc.s FROM cmp JOIN sc USING ({KEYS})
        """,
    )
    n_cmp = q(con, "SELECT count(*) AS n FROM livemacro_scores WHERE n_events_common IS NOT NULL")["n"][0]
    assert d.height == n_cmp > 10
    assert (d["n"] == d["n_events_common"]).all()
    assert float((d["common_score"] - d["s"]).abs().max()) < 1e-12


def test_ranking_effects_equal_an_independent_computation_on_the_same_rows(con):
    # reference estimator: effect = the model's mean excess loss over the consensus on its own events (SQL)
    d = q(
        con,
        """
        WITH x AS (
            SELECT partition_key, fit_id, horizon, scope, target, model_id,
                   sum(weight * (loss - loss_consensus)) / sum(weight) AS excess
            FROM livemacro_event_losses GROUP BY ALL
        )
        SELECT r.effect, x.excess FROM livemacro_rankings r
        JOIN x USING (partition_key, fit_id, horizon, scope, target, model_id)
        WHERE r.estimator = 'reference' AND r.event_window = 'full' AND r.ranked
        """,
    )
    assert d.height > 20
    assert float((d["effect"] - d["excess"]).abs().max()) < 1e-12
    # ForecastBench's all-model estimator on the backtest board: statsmodels OLS with event and model dummies
    rk = q(
        con,
        "SELECT model_id, effect, reference_model_id FROM livemacro_rankings WHERE partition_key = 'backtest'"
        " AND estimator = 'all' AND event_window = 'full' AND ranked",
    )
    ref = rk["reference_model_id"][0]
    ranked = rk["model_id"].to_list()
    rows = q(
        con,
        "SELECT model_id, event_at, loss FROM livemacro_event_losses WHERE partition_key = 'backtest' AND"
        " horizon = 'terminal' AND scope = 'overall' AND target = 'return'",
    ).filter(pl.col("model_id").is_in(ranked))
    events = sorted(set(rows["event_at"].to_list()))
    others = sorted(set(ranked) - {ref})
    X = np.zeros((rows.height, len(events) + len(others)))
    ei = {e: i for i, e in enumerate(events)}
    for i, (m, e) in enumerate(zip(rows["model_id"], rows["event_at"])):
        X[i, ei[e]] = 1.0
        if m != ref:
            X[i, len(events) + others.index(m)] = 1.0
    res = sm.OLS(rows["loss"].to_numpy(), X).fit()
    got = dict(rk.select("model_id", "effect").rows())
    for j, m in enumerate(others):
        assert got[m] == pytest.approx(res.params[len(events) + j], abs=1e-8 * max(1.0, abs(got[m])))


def test_the_headline_agrees_with_each_models_own_event_evidence(con):
    """Acceptance (issue 16): a model whose own-event score interval lies entirely below the consensus (0) is
    never ranked above the consensus, on any board of the stored macro board."""
    b = q(con, "SELECT * FROM macro_board WHERE event_window = 'full'")
    assert b.height > 0
    keys = ["leaderboard", "fit_id", "horizon", "scope", "target"]
    checked = 0
    for _, g in b.group_by(keys):
        cons = g.filter(pl.col("model_id") == pl.col("reference_model_id"))
        assert cons.height == 1 and cons["score"][0] == 0.0
        below = g.filter(pl.col("ranked") & (pl.col("own_ci90_hi") < 0))
        for r in below.iter_rows(named=True):
            assert r["rank"] > cons["rank"][0], (r["model_id"], r["leaderboard"], r["scope"], r["target"])
            checked += 1
        ranked = g.filter(pl.col("ranked")).sort("rank")
        assert ranked["rank"].to_list()[0] == 1
        assert ranked["p_rank1"].sum() == pytest.approx(1.0)
        unranked = g.filter(~pl.col("ranked"))
        assert (unranked["n_events"] < unranked["min_events"]).all() and unranked[
            "rank"
        ].null_count() == unranked.height
        # never a common-set rank where the common set cannot rank every ranked model
        assert (
            g.filter(~pl.col("common_view_ok"))["common_rank"].null_count()
            == g.filter(~pl.col("common_view_ok")).height
        )
    assert checked > 0
    arima = b.filter(
        (pl.col("model_id") == "baseline/auto-arima")
        & (pl.col("leaderboard") == "backtest")
        & (pl.col("scope") == "overall")
        & (pl.col("target") == "return")
    )
    assert arima.height == 1 and arima["rank"][0] != 1


def test_own_scores_on_the_board_equal_the_stored_scores_and_ex_covid_drops_2020(con):
    d = q(
        con,
        "SELECT b.own_score, s.score, b.n_events, s.n_events_own FROM macro_board b JOIN livemacro_scores s"
        " ON s.partition_key = b.leaderboard AND s.fit_id = b.fit_id AND s.horizon = b.horizon AND"
        " s.scope = b.scope AND s.target = b.target AND s.model_id = b.model_id"
        " WHERE b.event_window = 'full'",
    )
    assert d.height > 0 and float((d["own_score"] - d["score"]).abs().max()) < 1e-12
    assert (d["n_events"] == d["n_events_own"]).all()
    n = q(
        con,
        "SELECT event_window, max(n_events_board) AS n FROM macro_board WHERE leaderboard = 'backtest' AND"
        " scope = 'overall' AND target = 'return' GROUP BY ALL",
    )
    n = dict(n.rows())
    covid = q(
        con,
        "SELECT count(DISTINCT event_at) AS n FROM livemacro_event_losses WHERE partition_key = 'backtest'"
        " AND scope = 'overall' AND target = 'return' AND covid",
    )["n"][0]
    assert covid > 0 and n["full"] - n["ex_covid"] == covid


def test_the_board_carries_both_own_intervals_and_labels_the_live_arima(con):
    d = q(
        con,
        "SELECT b.own_ci90_lo, s.combined_ci90_lo, b.own_beta_ci90_lo, s.boot_ci90_lo, b.own_beta_ci90_hi,"
        " s.boot_ci90_hi FROM macro_board b JOIN livemacro_scores s ON s.partition_key = b.leaderboard AND"
        " s.fit_id = b.fit_id AND s.horizon = b.horizon AND s.scope = b.scope AND s.target = b.target AND"
        " s.model_id = b.model_id WHERE b.event_window = 'full' AND s.boot_ci90_lo IS NOT NULL",
    )
    assert d.height > 0
    assert (d["own_beta_ci90_lo"] == d["boot_ci90_lo"]).all() and (
        d["own_beta_ci90_hi"] == d["boot_ci90_hi"]
    ).all()
    # only the auto-ARIMA is labelled, on every board of a mode, with counts over that mode's scored releases
    p = q(
        con,
        "SELECT DISTINCT leaderboard, model_id, forecast_provenance FROM macro_board"
        " WHERE forecast_provenance IS NOT NULL ORDER BY leaderboard",
    )
    assert p["leaderboard"].to_list() == ["backtest", "live"] and set(p["model_id"]) == {
        "baseline/auto-arima"
    }
    n_rows = q(
        con,
        "SELECT count(*) FILTER (WHERE forecast_provenance IS NULL) AS n FROM macro_board"
        " WHERE model_id = 'baseline/auto-arima'",
    )["n"][0]
    assert n_rows == 0
    for mode, text in zip(p["leaderboard"], p["forecast_provenance"]):
        m = re.fullmatch(r"(\d+)/(\d+) older vintage, h (\d+)-(\d+) \((\d+) at 4\+\)", text)
        n_scored = q(
            con,
            "SELECT value FROM score_decompositions WHERE partition_key = ? AND decomposition ="
            " 'relative_error' AND metric = 'n_field_events' AND model_id = 'baseline/auto-arima'",
            [mode],
        )["value"][0]
        assert m and int(m[2]) == n_scored and 0 < int(m[1]) <= int(m[2]) and int(m[3]) <= int(m[4]), text
    # the default run: the live auto-ARIMA fits 5 of its 8 scored releases on an older vintage (h up to 7)
    assert p["forecast_provenance"].to_list()[1] == "5/8 older vintage, h 2-7 (5 at 4+)"


def test_a_small_new_forecaster_moves_no_other_headline_score(con):
    live = q(
        con,
        "SELECT * FROM livemacro_event_losses WHERE partition_key = 'live' AND horizon = 'terminal' AND"
        " scope = 'overall' AND target = 'return' AND fit_name = 'full'",
    )
    at = live["available_at"].max()
    base = MB.rankings_frame(live, partition_key="live", available_at=at, n_boot=50)
    # 9 of the consensus's events (it answers every event): one below the board's minimum (MB.MIN_EVENTS)
    ev = live.filter(pl.col("model_id") == "consensus/investing").sort("event_at").head(MB.MIN_EVENTS - 1)
    new = pl.concat(
        [live, ev.with_columns(pl.lit("external/tiny").alias("model_id"), pl.lit(0.0).alias("loss"))]
    )
    after = MB.rankings_frame(new, partition_key="live", available_at=at, n_boot=50)
    k = ["event_window", "estimator", "model_id"]
    j = base.join(after, on=k, suffix="_new")
    assert j.height == base.height
    assert (j["n_events"] == j["n_events_new"]).all()
    ref = j.filter(pl.col("estimator") == "reference")
    assert ((ref["score"] - ref["score_new"]).abs().fill_null(0) == 0).all()
    tiny = after.filter(pl.col("model_id") == "external/tiny")
    assert (
        tiny.height >= 1 and not tiny["ranked"].any() and tiny["n_events"].to_list()[0] == MB.MIN_EVENTS - 1
    )


def test_leaf_live_scores_prints_the_stored_board_and_json_gives_its_rows(main_run, con, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["scores", "--db", str(main_run["db"])]) == 0
    out = capsys.readouterr().out
    assert "LiveMacro Score: higher is better; range [-1, 1]" in out
    assert "Historical backtest | LiveMacro Score | fit backtest | terminal | overall | all events" in out
    assert "ex-COVID" in out and "P(rank 1)" in out and "Answered-at rule" in out
    assert max(len(x) for x in out.splitlines()) <= 100
    assert main(["scores", "--db", str(main_run["db"]), "--format", "json", "--mode", "backtest"]) == 0
    rows = json.loads(capsys.readouterr().out)
    want = q(
        con,
        "SELECT count(*) AS n FROM macro_board WHERE leaderboard = 'backtest' AND fit_name = 'backtest' AND"
        " horizon = 'terminal' AND scope = 'overall' AND target = 'return'",
    )["n"][0]
    assert len(rows) == want > 0 and {"rank", "score", "ci90_lo", "p_rank1", "n_events"} <= set(rows[0])
    assert main(["scores", "--db", str(main_run["db"]), "--format", "csv", "--window", "ex_covid"]) == 0
    csv = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(csv["event_window"]) == {"ex_covid"}
